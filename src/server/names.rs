//! Constant strings the hot path hands to the server: field names and command
//! arguments, created once at load instead of allocated on every call.

use std::sync::atomic::{AtomicPtr, Ordering};

use redis_module::raw::{RedisModuleCtx, RedisModuleString};

/// A server string kept for the module's lifetime. Only ever used on the main
/// thread, like every RedisModuleString.
pub struct Shared(*mut RedisModuleString);

// SAFETY: created once at load and afterwards only read (its pointer passed to the
// server) from the server's main thread; freed only at unload.
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
    /// RL.SHARE's global record's field.
    pub share_global: Shared,
}

/// The strings of this load, or null before the first use and after unload.
///
/// Not a `OnceLock`: `MODULE UNLOAD` does not always unmap the module (musl's
/// `dlclose` never does), so the statics of one load can live on into the next,
/// which must not find the strings the unload freed.
static NAMES: AtomicPtr<Names> = AtomicPtr::new(std::ptr::null_mut());

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
///
/// Inlined into every write that names one; the creation stays out of line.
#[inline]
pub fn names() -> &'static Names {
    let current = NAMES.load(Ordering::Acquire);
    if !current.is_null() {
        // SAFETY: a leaked Box stored by `create_names`, freed only by `release` at
        // unload, after which no command of this load runs.
        return unsafe { &*current };
    }
    create_names()
}

/// The first use of a load: creates the strings and keeps them in NAMES.
#[cold]
#[inline(never)]
fn create_names() -> &'static Names {
    let fresh = Box::into_raw(Box::new(Names {
        tokens: create("tokens"),
        ts: create("ts"),
        pxat: create("PXAT"),
        neg_inf: create("-inf"),
        share_global: create("g"),
    }));
    // Only the main thread loads, unloads and runs commands: no other store races.
    NAMES.store(fresh, Ordering::Release);
    // SAFETY: just leaked, and valid until `release`, as above.
    unsafe { &*fresh }
}

/// Frees the strings when the module unloads; a later load creates new ones.
pub fn release() {
    let current = NAMES.swap(std::ptr::null_mut(), Ordering::AcqRel);
    if current.is_null() {
        return;
    }
    // SAFETY: the Box `names` leaked, taken out of NAMES so nothing reads it again.
    let n = unsafe { Box::from_raw(current) };
    for s in [&n.tokens, &n.ts, &n.pxat, &n.neg_inf, &n.share_global] {
        if let Some(free) = optional!(RedisModule_FreeString) {
            // SAFETY: each string was created once by `create` with no context and
            // is never used again: the module is being unloaded.
            unsafe { free(std::ptr::null_mut(), s.ptr()) };
        }
    }
}
