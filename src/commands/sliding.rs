//! `RL.SLIDING key limit window [COST n | REFUND n]`
//!
//! Sliding log: at most `limit` units in any interval of length `window`. The key is
//! a native sorted set with one member per accepted unit, scored by its ms time.
//! Reply: `[allowed, limit, remaining, retry_after_ms, reset_after_ms]`.

use super::framework::{quota, Limiter};
use super::spec::{Spec, QUOTA_ARGS};
use crate::algorithms::sliding::{self, Log, Write};
use crate::algorithms::{Amount, Millis, Outcome, Quota};
use crate::config;
use crate::error::{Error, Result};
use crate::stats::Counters;
use crate::storage::{self, Key};

pub struct Sliding;

static COUNTERS: Counters = Counters::new();

impl Limiter for Sliding {
    const DEFINITION: Spec = Spec::rl(
        c"RL.SLIDING",
        c"write deny-oom",
        c"Logs accepted units in a sorted set and admits at most limit in any window-long interval",
        c"O(log N + M) with N the units logged and M those that left the window or the cost",
        QUOTA_ARGS,
    );
    const STATS: &'static Counters = &COUNTERS;
    type Params = Quota;
    /// The write, and the newest unit logged before it (where new units' sequence
    /// numbers continue from).
    type Write = (Option<Millis>, Write);

    fn parse_params(args: &[&[u8]]) -> Result<Quota> {
        let params = quota(args)?;
        // Memory is one entry per unit: large limits belong to RL.BUCKET.
        let max = config::sliding_max_limit();
        if params.limit.get() > max {
            return Err(Error::SlidingLimit { max });
        }
        Ok(params)
    }

    fn decide(key: &Key, q: &Quota, now: Millis, amount: Amount) -> Result<Outcome<Self::Write>> {
        let log = storage::sliding::load(key)?;
        let out = sliding::call(&log, now, *q, amount);
        Ok(Outcome {
            decision: out.decision,
            store: out.store.map(|w| (log.newest(), w)),
        })
    }

    fn store(key: &Key, (newest, write): Self::Write) -> Result<()> {
        match write {
            Write::Append(append) => storage::sliding::store(key, newest, append),
            Write::Remove(removal) => storage::sliding::remove(key, removal),
        }
    }
}
