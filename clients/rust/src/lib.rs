//! A typed client for RL's rate-limit commands on redis-rs.
//!
//! RL gives Redis native rate-limit commands, either as a module (`RL.GCRA key …`)
//! or as a Functions library (`FCALL rl_gcra 1 key …`). This crate wraps your own
//! redis-rs connection, sync ([`Limiter`]) or async ([`AsyncLimiter`], with tokio),
//! learns on first use which of the two the server has, and answers each call with
//! a typed [`Decision`] that gives the HTTP headers.
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
//! - Every command: [`Fixed`], [`Sliding`], [`SlidingCounter`], [`Bucket`], [`Gcra`]
//!   (with DELAY), [`Throttle`] (CL.THROTTLE, module only), [`All`] (RL.ALL with
//!   typed [`Policy`]s), [`Acquire`] with RL.RELEASE and a releasing guard
//!   ([`Lease`]), [`Penalty`], [`Share`]; COST, REFUND and DEBIT as [`Charge`]s.
//! - Durations: a [`std::time::Duration`] or RL's text (`"1m"`), see [`Period`].
//! - Errors: [`Error`], with RL's refusals typed (bad argument, wrong type, not
//!   loaded, OOM); a connection error is returned unless you pick a [`FailMode`].
//! - Pipelining: [`Batch`], many calls in one round trip with typed replies.
//! - Raw calls: [`Decision`], [`AllDecision`] and [`ThrottleDecision`] implement
//!   `redis::FromRedisValue`.

#![warn(missing_docs)]

#[macro_use]
mod api;
#[cfg(feature = "aio")]
mod aio;
mod batch;
mod command;
mod error;
mod period;
mod policy;
mod reply;
mod sync;

#[cfg(feature = "aio")]
pub use aio::{AsyncLease, AsyncLimiter};
pub use batch::Batch;
pub use command::{Backend, FailMode, Reply};
pub use error::{Error, Result};
pub use period::Period;
pub use policy::{
    Acquire, All, Bucket, Charge, Fixed, Gcra, Penalty, Policy, Share, Sliding, SlidingCounter,
    Throttle,
};
pub use reply::{AllDecision, Decision, ThrottleDecision};
pub use sync::{Lease, Limiter};

/// This crate's version: the RL module's version it was released with.
pub const VERSION: &str = env!("CARGO_PKG_VERSION");
