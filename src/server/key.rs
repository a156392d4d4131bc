//! One open key, its type and its absolute expiry.

use std::ffi::CStr;
use std::os::raw::c_int;

use redis_module::raw::{self, RedisModuleCtx, RedisModuleKey, RedisModuleString};

use super::api::OK;
use super::context::Context;
use rl_core::algorithms::Millis;

/// The Redis type a key holds, as the core's storage tells them apart.
pub use rl_core::store::Kind;

/// Keyspace event classes (`notify-keyspace-events` letters).
#[derive(Clone, Copy)]
pub enum EventClass {
    /// `g`: DEL, EXPIRE and friends.
    Generic,
    /// `$`
    String,
    /// `h`
    Hash,
    /// `z`
    SortedSet,
}

/// A key opened for reading and writing.
///
/// The module runs with implicit modification signals off, so opening for writing
/// does not by itself abort a WATCH or invalidate client caches: only
/// [`Key::signal_modified`], called after a real write, does.
pub struct Key {
    ctx: *mut RedisModuleCtx,
    name: *mut RedisModuleString,
    ptr: *mut RedisModuleKey,
}

impl Key {
    /// Opens `name` in the caller's database.
    ///
    /// # Safety
    /// `ctx` and `name` must be the live context and argument of the running command,
    /// and the key must be dropped before that command returns.
    pub(super) unsafe fn open(ctx: Context, name: *mut RedisModuleString) -> Self {
        let mode = (raw::REDISMODULE_READ | raw::REDISMODULE_WRITE) as c_int;
        let ctx = ctx.raw();
        // SAFETY: `ctx` and `name` are live (the caller's contract).
        let ptr = unsafe { rm!(RedisModule_OpenKey)(ctx, name, mode) }.cast::<RedisModuleKey>();
        Self { ctx, name, ptr }
    }

    pub(crate) fn ctx(&self) -> *mut RedisModuleCtx {
        self.ctx
    }

    pub(crate) fn name(&self) -> *mut RedisModuleString {
        self.name
    }

    pub(crate) fn raw(&self) -> *mut RedisModuleKey {
        self.ptr
    }

    /// The key's name, borrowed while the key is open.
    #[cfg_attr(not(feature = "testing"), allow(dead_code))]
    pub(crate) fn name_bytes(&self) -> &[u8] {
        // SAFETY: the name is an argument of the running command (`open`'s contract),
        // alive and unmodified for the whole call, which outlives `self`.
        unsafe { super::string::bytes_of(self.name) }
    }

    pub fn kind(&self) -> Kind {
        // SAFETY: `self.ptr` is the key opened by `open`, still open.
        let t = unsafe { rm!(RedisModule_KeyType)(self.ptr) } as isize;
        match t {
            raw::REDISMODULE_KEYTYPE_EMPTY => Kind::Empty,
            raw::REDISMODULE_KEYTYPE_STRING => Kind::String,
            raw::REDISMODULE_KEYTYPE_HASH => Kind::Hash,
            raw::REDISMODULE_KEYTYPE_ZSET => Kind::SortedSet,
            _ => Kind::Other,
        }
    }

    /// The absolute expiry in ms, None for a key without one.
    pub fn expires_at(&self) -> Option<Millis> {
        // SAFETY: `self.ptr` is the key opened by `open`, still open.
        let at = unsafe { rm!(RedisModule_GetAbsExpire)(self.ptr) };
        (at != Millis::from(raw::REDISMODULE_NO_EXPIRE)).then_some(at)
    }

    /// Sets the absolute expiry; false if the server refused (an empty key), in which
    /// case nothing changed.
    #[must_use]
    pub fn set_expires_at(&self, at: Millis) -> bool {
        // SAFETY: `self.ptr` is the key opened by `open`, still open, for writing.
        unsafe { rm!(RedisModule_SetAbsExpire)(self.ptr, at) == OK }
    }

    /// Deletes the key; false if the server refused.
    #[must_use]
    pub fn delete(&self) -> bool {
        self.stop_range();
        // SAFETY: `self.ptr` is the key opened by `open`, still open, for writing.
        unsafe { rm!(RedisModule_DeleteKey)(self.ptr) == OK }
    }

    /// Ends the sorted-set range open on the key, if any ([`super::zset::Range`]):
    /// called before every write that could free what a range points into, so a
    /// range still held then reads as ended, never freed memory. Never panics (it
    /// also runs on drop).
    pub(super) fn stop_range(&self) {
        // Not rm!: a drop must never panic.
        // SAFETY: a plain load of a function pointer the loader wrote before any command.
        if let Some(stop) = unsafe { raw::RedisModule_ZsetRangeStop } {
            // SAFETY: `self.ptr` is the key opened by `open`, still open; stopping
            // when no range is open (or on a key of another type) does nothing.
            unsafe { stop(self.ptr) };
        }
    }

    /// Number of elements (members of a sorted set, fields of a hash), or a
    /// string's length in bytes.
    pub fn element_count(&self) -> u64 {
        // SAFETY: `self.ptr` is the key opened by `open`, still open.
        unsafe { rm!(RedisModule_ValueLength)(self.ptr) as u64 }
    }

    /// Tells WATCH and client-side caching that the key changed. Called once per
    /// allowed write, never for a rejected call or an inspection.
    pub fn signal_modified(&self) {
        // SAFETY: `ctx` and `name` are the running command's (`open`'s contract).
        unsafe { rm!(RedisModule_SignalModifiedKey)(self.ctx, self.name) };
    }
}

impl Key {
    /// Fires the keyspace event `event` of `class` on this key.
    pub fn notify(&self, class: EventClass, event: &'static CStr) {
        let class = match class {
            EventClass::Generic => raw::REDISMODULE_NOTIFY_GENERIC,
            EventClass::String => raw::REDISMODULE_NOTIFY_STRING,
            EventClass::Hash => raw::REDISMODULE_NOTIFY_HASH,
            EventClass::SortedSet => raw::REDISMODULE_NOTIFY_ZSET,
        };
        // SAFETY: the key's context and name are the running command's; `event` is a
        // NUL-terminated static string. The server copies what it publishes. It only
        // fails for a context without a client, which a command's context always has.
        unsafe {
            rm!(RedisModule_NotifyKeyspaceEvent)(
                self.ctx,
                class as c_int,
                event.as_ptr(),
                self.name,
            )
        };
    }
}

impl Drop for Key {
    fn drop(&mut self) {
        // Not rm!: a drop must never panic (it may run while unwinding).
        // SAFETY: a plain load of a function pointer the loader wrote before any command.
        if let Some(close) = unsafe { raw::RedisModule_CloseKey } {
            // SAFETY: `self.ptr` was opened by `open` and is closed exactly once, here.
            unsafe { close(self.ptr) };
        }
    }
}
