//! A typed client for RL's rate-limit commands on redis-rs 1.x.
//!
//! RL gives Redis native rate-limit commands, either as a module (`RL.GCRA key …`)
//! or as a Functions library (`FCALL rl_gcra 1 key …`). This crate wraps your own
//! redis-rs connection, sync ([`Limiter`]) or async ([`AsyncLimiter`], with tokio),
//! learns on first use which of the two the server has, and answers each call with
//! a typed [`Decision`] that gives the HTTP fields.
//!
//! ```no_run
//! # fn main() -> Result<(), Box<dyn std::error::Error>> {
//! use rl_client::{Gcra, Limiter};
//!
//! let mut rl = Limiter::new(redis::Client::open("redis://127.0.0.1/")?.get_connection()?);
//! let d = rl.gcra("rl:api:user42", &Gcra::new(20, 100, "1m"))?; // bursts of 20, 100 a minute
//! println!("allowed={} headers={:?}", d.allowed, d.headers());
//! # Ok(())
//! # }
//! ```
//!
//! - Every command of RL's command table has a method (`gcra`, `fixed`, `all`, …) on
//!   [`Limiter`], [`AsyncLimiter`] and [`Batch`], and a parameter type ([`Gcra`],
//!   [`Fixed`], [`All`] with typed [`Policy`]s, …) whose arguments are checked against
//!   the table's ranges before anything is sent ([`Error::InvalidArgument`]).
//! - Durations: a [`std::time::Duration`], a bare integer (seconds) or RL's text
//!   (`"1m"`), see [`Period`]; never rounded.
//! - Every call has a deadline (100 ms unless set) and a [`FailMode`].
//! - Errors: [`Error`], with RL's refusals typed (bad argument, wrong type, not
//!   loaded, OOM).
//! - Raw calls: [`Decision`], [`AllDecision`] and [`ThrottleDecision`] implement
//!   `redis::FromRedisValue`.

#![warn(missing_docs)]

#[macro_use]
mod limiter;
#[cfg(feature = "tokio")]
mod aio;
mod batch;
mod check;
mod command;
mod error;
#[rustfmt::skip]
mod generated;
mod params;
mod period;
mod policy;
mod reply;
mod survive;
mod sync;

#[cfg(feature = "tokio")]
pub use aio::{AsyncLease, AsyncLimiter};
pub use batch::Batch;
pub use command::{Backend, FailMode, Reply};
pub use error::{Error, Result};
pub use generated::*;
pub use limiter::{Deadline, DEFAULT_TIMEOUT};
pub use period::Period;
pub use reply::{field_string, AllDecision, Decision, ThrottleDecision, MAX_FIELD_INTEGER};
pub use sync::{Lease, Limiter};

/// This crate's version: the RL module's version it was released with.
pub const VERSION: &str = env!("CARGO_PKG_VERSION");
