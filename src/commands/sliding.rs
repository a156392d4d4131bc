//! `RL.SLIDING key limit window [COST n]`
//!
//! Sliding log: at most `limit` units in any interval of length `window`. The key is
//! a native sorted set with one member per accepted unit, scored by its ms time.
//! Reply: `[allowed, limit, remaining, retry_after_ms, reset_after_ms]`.

use super::{decide_and_store, quota, Limiter, Spec, QUOTA_ARGS};
use crate::algorithms::{sliding, Cost, Decision, Millis, Quota};
use crate::config;
use crate::error::{Error, Result};
use crate::stats::Counters;
use crate::storage::{self, Key};

pub struct Sliding;

static COUNTERS: Counters = Counters::new();

impl Limiter for Sliding {
    const SPEC: Spec = Spec::rl(
        c"RL.SLIDING",
        c"write deny-oom",
        c"Logs accepted units in a sorted set and admits at most limit in any window-long interval",
        c"O(log N + M) with N the units logged and M those that left the window or the cost",
        QUOTA_ARGS,
    );
    const STATS: &'static Counters = &COUNTERS;
    type Params = Quota;

    fn parse_params(args: &[&[u8]]) -> Result<Quota> {
        let params = quota(args)?;
        // Memory is one entry per unit: large limits belong to RL.BUCKET.
        let max = config::sliding_max_limit();
        if params.limit.get() > max {
            return Err(Error::SlidingLimit { max });
        }
        Ok(params)
    }

    fn apply(key: &Key, q: &Quota, now: Millis, cost: Cost) -> Result<Decision> {
        let log = storage::sliding::load(key)?;
        let newest = sliding::Log::newest(&log);
        decide_and_store(
            &log,
            |log| sliding::decide(log, now, *q, cost),
            |append| storage::sliding::store(key, newest, append),
        )
    }
}
