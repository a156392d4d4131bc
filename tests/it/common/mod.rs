//! Real redis-server processes for integration tests.
//!
//! Each [`Server`] runs on its own free loopback port with its own directory, the
//! backend under test loaded (unless asked otherwise), and is killed and reaped when
//! dropped, so a failing test leaves nothing behind. Waits poll with deadlines;
//! nothing sleeps for a fixed time.
//!
//! Two backends run the same tests ([`backend`], env `RL_BACKEND`): the module
//! (`module`, the default) and the Functions library `functions/rl.lua`
//! (`library`, path `RL_LIBRARY`). Tests write RL calls as the module's commands
//! (`["RL.FIXED", key, …]`); [`on_backend`] is the one place that turns them into
//! `FCALL rl_fixed 1 key …` for the library. Tests of module-only features start
//! with `if module_only("why") { return; }`.
//!
//! - `server`: the servers (binary, module build, options, start, restart, drop);
//! - `backend`: module or library, and the translation of command lines;
//! - `helpers`: replies, errors, snapshots, the clock, INFO, polling;
//! - `rng`: the one deterministic generator of the randomized tests;
//! - `commands`: the per-command table.
//!
//! Every name is re-exported here: tests `use crate::common::*`.

pub use redis::{cmd, Connection, Value};

pub mod backend;
pub mod commands;
pub mod helpers;
pub mod instant;
pub mod rng;
pub mod server;

pub use {backend::*, commands::*, helpers::*, rng::*, server::*};
