//! Limiter state in native Redis keys, and the effects each write propagates.
//!
//! Everything here goes through the module key API (no `RedisModule_Call` on the
//! hot path) and replicates effects with absolute times, never the RL command.
//! Modules are named after the limiter whose state they hold (`sliding`, `bucket`,
//! `acquire`, `share`); `record` is the string with an expiry that RL.FIXED, RL.GCRA,
//! RL.SLIDINGCOUNTER and RL.PENALTY share, `effects` what a write propagates, `zset`
//! the sorted-set pieces the sliding log and the lease set share.
//!
//! Every store returns `Err` when a write fails, and propagates (and notifies) only
//! writes that happened, after they happened.

pub mod acquire;
pub mod bucket;
mod effects;
pub mod record;
pub mod share;
pub mod sliding;
mod zset;

pub use crate::server::{Key, Kind};

use bucket::Hash;
use record::Record;
use rl_core::algorithms::fixed::FixedWindow;
use rl_core::algorithms::gcra::Gcra;
use rl_core::algorithms::penalty::EscalatingBlocks;
use rl_core::algorithms::quota::CalendarQuota;
use rl_core::algorithms::sliding_counter::SlidingWindowCounter;
use rl_core::algorithms::{Algorithm, Amount, Change, Millis, Outcome};
use rl_core::command::{Backend, Runs, Spec};
use rl_core::commands;
use rl_core::error::{Error, Result};

/// The server's keys, as the core's executor sees them: every command of the
/// core's list runs on them ([`Runs`]).
pub struct Server;

impl Backend for Server {
    type Key = Key;
}

/// The commands whose state an algorithm reads from one [`Storage`] and writes
/// back: a string ([`Record`]) or RL.BUCKET's hash ([`Hash`]). RL.SLIDING's log and
/// RL.ACQUIRE's leases are read in place (`sliding`, `acquire`), RL.SHARE's budget
/// field by field (`share`).
macro_rules! stored {
    ($($command:ident => $storage:ty),* $(,)?) => {$(
        impl Runs<commands::$command> for Server {
            #[inline]
            fn decide(
                &mut self,
                key: &Key,
                params: &<commands::$command as Spec>::Params,
                now: Millis,
                amount: Amount,
            ) -> Result<Outcome<<commands::$command as Spec>::Write>> {
                let state = <$storage>::load(key)?;
                Ok(<<$storage as Storage>::Algorithm>::call(state, now, *params, amount))
            }

            #[inline]
            fn store(&mut self, key: &Key, write: <commands::$command as Spec>::Write) -> Result<()> {
                <$storage>::store(key, write)
            }
        }
    )*};
}

stored! {
    Fixed => Record<FixedWindow>,
    Gcra => Record<Gcra>,
    Throttle => Record<Gcra>,
    SlidingCounter => Record<SlidingWindowCounter>,
    Penalty => Record<EscalatingBlocks>,
    Quota => Record<CalendarQuota>,
    Bucket => Hash,
}

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
/// (records), `hset` and `expiry` (buckets; RL.SHARE budgets, whose `hset` fails
/// the first field), `remove` and `add` (sliding logs; they
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
