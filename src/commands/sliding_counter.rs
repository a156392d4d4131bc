//! `RL.SLIDINGCOUNTER key limit window [COST n]`
//!
//! Sliding window counter: the previous epoch-aligned window's count, weighted by
//! its overlap with the sliding window, plus the current one — constant memory at
//! any limit and rate. The key is a native string `"<start> <current> <previous>"`.
//! Reply: `[allowed, limit, remaining, retry_after_ms, reset_after_ms]`.

use super::{decide_and_store, quota, Limiter, Spec, QUOTA_ARGS};
use crate::algorithms::{sliding_counter, Cost, Decision, Millis, Quota};
use crate::error::Result;
use crate::stats::Counters;
use crate::storage::{self, Key};

pub struct SlidingCounter;

static COUNTERS: Counters = Counters::new();

impl Limiter for SlidingCounter {
    const SPEC: Spec = Spec::rl(
        c"RL.SLIDINGCOUNTER",
        c"write deny-oom fast",
        c"Estimates a sliding window from two fixed-window counts and admits at most limit in it",
        c"O(1)",
        QUOTA_ARGS,
    );
    const STATS: &'static Counters = &COUNTERS;
    type Params = Quota;

    fn parse_params(args: &[&[u8]]) -> Result<Quota> {
        quota(args)
    }

    fn apply(key: &Key, q: &Quota, now: Millis, cost: Cost) -> Result<Decision> {
        decide_and_store(
            storage::sliding_counter::load(key)?,
            |s| sliding_counter::decide(s, now, *q, cost),
            |w| storage::sliding_counter::store(key, w),
        )
    }
}
