//! Constant strings the hot path hands to the server: field names and command
//! arguments, created once at load instead of allocated on every call.

use std::sync::OnceLock;

use redis_module::raw::{RedisModuleCtx, RedisModuleString};

/// A server string kept for the module's lifetime. Only ever used on the main
/// thread, like every RedisModuleString.
pub struct Shared(*mut RedisModuleString);

// SAFETY: created once at load and afterwards only read (its pointer passed to the
// server) from the server's main thread; never freed.
unsafe impl Send for Shared {}
// SAFETY: as for Send: nothing mutates the string after creation, and every use is
// on the server's main thread.
unsafe impl Sync for Shared {}

impl Shared {
    pub fn ptr(&self) -> *mut RedisModuleString {
        self.0
    }
}

pub struct Names {
    pub tokens: Shared,
    pub ts: Shared,
    pub pxat: Shared,
    pub neg_inf: Shared,
}

static NAMES: OnceLock<Names> = OnceLock::new();

fn create(text: &str) -> Shared {
    // A NULL context: the string is not freed with any call's context.
    // SAFETY: `text` is a valid buffer of `text.len()` bytes, copied by the call.
    // The server aborts on out-of-memory rather than return NULL.
    Shared(unsafe {
        rm!(RedisModule_CreateString)(
            std::ptr::null_mut::<RedisModuleCtx>(),
            text.as_ptr().cast(),
            text.len(),
        )
    })
}

/// The strings, created on first use (the module's load calls this once, so no
/// command pays for it).
pub fn names() -> &'static Names {
    NAMES.get_or_init(|| Names {
        tokens: create("tokens"),
        ts: create("ts"),
        pxat: create("PXAT"),
        neg_inf: create("-inf"),
    })
}

/// Frees the strings when the module unloads (a later load creates new ones).
pub fn release() {
    let Some(n) = NAMES.get() else { return };
    for s in [&n.tokens, &n.ts, &n.pxat, &n.neg_inf] {
        if let Some(free) = optional!(RedisModule_FreeString) {
            // SAFETY: each string was created once by `create` with no context and
            // is never used again: the module is being unloaded.
            unsafe { free(std::ptr::null_mut(), s.ptr()) };
        }
    }
}
