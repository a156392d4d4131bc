//! Limiter state in native Redis keys, and the effects each write propagates.
//!
//! Everything here goes through the module key API (no `RedisModule_Call` on the
//! hot path) and replicates effects with absolute times, never the RL command.
//! Modules are named after the limiter whose state they hold (`sliding`, `bucket`,
//! `acquire`); `record` is the string with an expiry that RL.FIXED, RL.GCRA,
//! RL.SLIDINGCOUNTER and RL.PENALTY share, `effects` what a write propagates, `zset`
//! the sorted-set pieces the sliding log and the lease set share.
//!
//! Every store returns `Err` when a write fails, and propagates (and notifies) only
//! writes that happened, after they happened.

pub mod acquire;
pub mod bucket;
mod effects;
pub mod record;
pub mod sliding;
mod zset;

pub use crate::server::{Key, Kind};

use rl_core::algorithms::{Algorithm, Change};
use rl_core::error::{Error, Result};

/// Where an algorithm's state lives in a native key: loaded before a call decides,
/// written (and propagated) after it allows. A limiter whose state is a string is a
/// [`record::Record`]; RL.BUCKET's hash is [`bucket::Hash`].
pub trait Storage {
    type Algorithm: Algorithm;

    /// Reads the key: WRONGTYPE for another type, the "does not hold" error for
    /// content RL did not write.
    fn load(key: &Key) -> Result<<Self::Algorithm as Algorithm>::State>;

    /// Writes what a call decided, then propagates it.
    fn store(key: &Key, write: <Self::Algorithm as Algorithm>::Write) -> Result<()>;
}

/// Deletes the key, a limiter back at its initial state (a refund gave everything
/// back), and propagates `DEL`.
pub fn delete(key: &Key) -> Result<()> {
    if injected(key, "delete") || !key.delete() {
        return Err(Error::WriteFailed("deleting the key"));
    }
    effects::del(key)?;
    key.signal_modified();
    Ok(())
}

/// Applies a write: `store` a new state, or delete the key.
pub fn change<S>(
    key: &Key,
    change: Change<S>,
    store: impl FnOnce(&Key, S) -> Result<()>,
) -> Result<()> {
    match change {
        Change::Set(state) => store(key, state),
        Change::Delete => delete(key),
    }
}

/// Test builds only: a key whose name starts with `__rl_fail_<step>__` makes that
/// write step fail as if the server had refused it, so tests can follow a failed
/// write through to what is replied and propagated. Steps: `resize` and `expiry`
/// (records), `hset` and `expiry` (buckets), `remove` and `add` (sliding logs; they
/// fail at the second member, after one succeeded) and `expiry`, `remove` (at the
/// second member), `add` and `expiry` (lease sets), and `delete` (a refund back to
/// the initial state, a release of the last lease).
#[cfg(feature = "testing")]
fn injected(key: &Key, step: &str) -> bool {
    key.name_bytes()
        .strip_prefix(b"__rl_fail_".as_slice())
        .and_then(|rest| rest.strip_prefix(step.as_bytes()))
        .is_some_and(|rest| rest.starts_with(b"__"))
}

#[cfg(not(feature = "testing"))]
#[inline(always)]
fn injected(_key: &Key, _step: &str) -> bool {
    false
}
