//! `RL.SLIDING key limit window [COST n | REFUND n]`
//!
//! Sliding log: at most `limit` units in any interval of length `window`. The key is
//! a native sorted set with one member per accepted unit, scored by its ms time.
//! Reply: `[allowed, limit, remaining, retry_after_ms, reset_after_ms]`.

use super::framework::Limiter;
use crate::config;
use crate::stats::Counters;
use crate::storage::{self, Key};
use rl_core::algorithms::sliding::{Log, SlidingLog, Write};
use rl_core::algorithms::{Algorithm, Amount, Millis, Outcome, Quota};
use rl_core::error::Result;
use rl_core::params;
use rl_core::table::{self, Command};

pub struct Sliding;

static COUNTERS: Counters = Counters::new();

impl Limiter for Sliding {
    const COMMAND: &'static Command = &table::SLIDING;
    const STATS: &'static Counters = &COUNTERS;
    type Params = Quota;
    /// The write, and the newest unit logged before it (where new units' sequence
    /// numbers continue from).
    type Write = (Option<Millis>, Write);

    fn parse_params(args: &[&[u8]]) -> Result<Quota> {
        params::sliding(args, config::sliding_max_limit())
    }

    fn decide(key: &Key, q: &Quota, now: Millis, amount: Amount) -> Result<Outcome<Self::Write>> {
        let log = storage::sliding::load(key)?;
        let out = SlidingLog::call(&log, now, *q, amount);
        Ok(Outcome {
            decision: out.decision,
            write: out.write.map(|w| (log.newest(), w)),
        })
    }

    fn store(key: &Key, (newest, write): Self::Write) -> Result<()> {
        match write {
            Write::Append(append) => storage::sliding::store(key, newest, append),
            Write::Remove(removal) => storage::sliding::remove(key, removal),
        }
    }
}
