//! Every call RL makes into the server's module API, behind safe functions: the
//! function-pointer lookup (`rm!`, `optional!`) and the load-time check that every
//! required one exists, the contexts the server hands over, the module's entry
//! points, the clock, server strings and the constant names, open keys and their
//! values (strings, hashes, sorted sets), the effects propagation builder, replies,
//! command docs, configs, INFO, and the load-time glue (module init, options, the
//! ACL category, the log).
//!
//! The layers above (storage, stats, commands, config, lib) reach the server only
//! through this module, and none of them sees a raw pointer or a C type.

// Inside redis-server every allocation goes through the server's allocator, at any
// alignment (alloc.rs). Unit tests and the fuzzer run outside Redis, where that
// allocator does not exist.
#[cfg(not(test))]
#[global_allocator]
static ALLOCATOR: alloc::ServerAlloc = alloc::ServerAlloc;

mod alloc;
#[macro_use]
pub(crate) mod api;
pub mod call;
mod clock;
pub mod command_info;
pub mod config;
mod context;
pub mod filter;
mod hash;
pub mod info;
pub mod key;
pub(crate) mod load;
pub mod names;
pub mod replicate;
mod string;
mod value;
pub mod zset;

pub use api::check_api;
pub(crate) use api::rm;
pub use call::{Argv, Entry};
pub use clock::now_ms;
pub use context::{Context, InfoContext};
pub use key::{EventClass, Key, Kind};
pub(crate) use load::entry_points;
pub(crate) use string::{ServerString, StrRef};
