//! Limiter state in native Redis keys, and the effects each write propagates.
//!
//! Everything here goes through the module key API (no `RedisModule_Call` on the
//! hot path) and replicates effects with absolute times, never the RL command.

pub mod codec;
pub mod counter;
pub mod hash;
pub mod key;
pub mod log;
mod replicate;

pub use key::{Key, Kind};

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
