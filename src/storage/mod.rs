//! Limiter state in native Redis keys, and the effects each write propagates.
//!
//! Everything here goes through the module key API (no `RedisModule_Call` on the
//! hot path) and replicates effects with absolute times, never the RL command.

/// Resolves a module API function pointer. All of them are checked when the module
/// loads ([`crate::server::check_api`]), so a missing one here is a bug that the command
/// guard turns into an error reply.
macro_rules! rm {
    ($name:ident) => {{
        // Reading the pointer is unsafe (a mutable static); callers are often
        // already inside an unsafe block.
        #[allow(unused_unsafe)]
        let f = match unsafe { redis_module::raw::$name } {
            Some(f) => f,
            None => $crate::server::missing_api(stringify!($name)),
        };
        f
    }};
}
pub(crate) use rm;

pub mod codec;
pub mod counter;
pub mod hash;
pub mod key;
pub mod log;
pub mod names;
mod replicate;

pub use key::{Key, Kind};

use redis_module::raw::{RedisModuleCtx, RedisModuleString};

/// The bytes of a server string, borrowed for as long as the string lives.
pub(crate) fn bytes_of<'a>(s: *const RedisModuleString) -> &'a [u8] {
    if s.is_null() {
        return &[];
    }
    let mut len = 0usize;
    let p = unsafe { rm!(RedisModule_StringPtrLen)(s, &mut len) };
    if p.is_null() {
        return &[];
    }
    unsafe { std::slice::from_raw_parts(p.cast::<u8>(), len) }
}

/// Releases a string this module created or was handed ownership of.
pub(crate) fn free_string(ctx: *mut RedisModuleCtx, s: *mut RedisModuleString) {
    if !s.is_null() {
        unsafe { rm!(RedisModule_FreeString)(ctx, s) };
    }
}
