//! The RL.* commands: the glue between Redis and the algorithms.
//!
//! - `framework`: the steps every command runs ([`framework::dispatch`]), and the
//!   [`Limiter`] and [`Handler`] traits a command implements;
//! - one file per command (`fixed`, `sliding`, `bucket`, `gcra`, `sliding_counter`,
//!   `throttle`, `all`, `acquire`, `penalty`), which supplies only its parsing and its storage pair;
//! - `docs`: COMMAND INFO / COMMAND DOCS and ACL categories from a command's spec;
//! - `registry`: the list of every command ([`registry::COMMANDS`]), registration
//!   and the INFO rows.

mod acquire;
mod all;
mod bucket;
mod docs;
mod fixed;
mod framework;
mod gcra;
mod penalty;
mod registry;
mod sliding;
mod sliding_counter;
mod throttle;

pub use registry::{register_all, Info};
