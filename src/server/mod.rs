//! Every call RL makes into the server's module API, behind safe functions: the
//! function-pointer lookup (`rm!`, `optional!`) and the load-time check that every
//! required one exists, the clock, server strings and the constant names, open
//! keys and the effects propagation builder, replies, and the load-time glue
//! (module init, options, the INFO callback, the ACL category, the log).
//!
//! The layers above (storage, stats, commands, config, lib) reach the server only
//! through this module.

/// The raw bindings, for the layers above that hand the server its own types and
/// constants (key handles, zset flags); their calls still go through `rm!`.
pub(crate) use redis_module::raw;

// Inside redis-server every allocation goes through the server's allocator, so
// `used_memory`, `maxmemory` and `MEMORY USAGE` see RL's memory. Unit tests and the
// fuzzer run outside Redis, where that allocator does not exist.
#[cfg(not(any(test, feature = "system-alloc")))]
#[global_allocator]
static ALLOCATOR: redis_module::alloc::RedisAlloc = redis_module::alloc::RedisAlloc;

#[macro_use]
pub(crate) mod api;
pub mod call;
mod clock;
pub mod config;
mod hash;
pub mod info;
pub mod key;
mod load;
pub mod names;
pub mod replicate;
mod string;
mod value;
pub mod zset;

pub use api::check_api;
pub(crate) use api::{optional, rm};
pub use clock::now_ms;
pub use key::{EventClass, Key, Kind};
pub use load::{
    acl_category, create_command, init, log_warning, register_info, set_module_options, ERR, OK,
};
pub(crate) use string::{bytes_of, ServerString, StrRef};
