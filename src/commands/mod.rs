//! The RL.* commands on the server: the glue between Redis and the core.
//!
//! - `framework`: the steps every command runs ([`framework::dispatch`]), the
//!   [`framework::Handler`] trait, and [`framework::Single`], which runs any
//!   single-key command of the core's list on the server's keys
//!   (`crate::storage::Server`);
//! - `all` (RL.ALL: the core's one RL.ALL over the server's keys), the command
//!   with a flow of its own;
//! - `docs`: COMMAND INFO / COMMAND DOCS and ACL categories from a command's row;
//! - `registry`: the handler of every command, from the core's list
//!   (`rl_core::each_command!`), registration and the INFO rows;
//! - `top`: RL.TOP, the one command on node-wide state (no key, no table row).

mod all;
mod docs;
mod framework;
mod registry;
mod top;

pub use registry::{register_all, Info};
