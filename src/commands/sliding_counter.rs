//! `RL.SLIDINGCOUNTER key limit window [COST n | REFUND n | DEBIT n]`
//!
//! Sliding window counter: the previous epoch-aligned window's count, weighted by
//! its overlap with the sliding window, plus the current one — constant memory at
//! any limit and rate. The key is a native string `"<start> <current> <previous>"`.
//! Reply: `[allowed, limit, remaining, retry_after_ms, reset_after_ms]`.

use super::framework::{quota, Limiter};
use super::spec::{Spec, QUOTA_ARGS};
use crate::algorithms::sliding_counter::{self, Store};
use crate::algorithms::{Amount, Change, Millis, Outcome, Quota};
use crate::error::Result;
use crate::stats::Counters;
use crate::storage::{self, Key};

pub struct SlidingCounter;

static COUNTERS: Counters = Counters::new();

impl Limiter for SlidingCounter {
    const DEFINITION: Spec = Spec::rl(
        c"RL.SLIDINGCOUNTER",
        c"write deny-oom fast",
        c"Estimates a sliding window from two fixed-window counts and admits at most limit in it",
        c"O(1)",
        QUOTA_ARGS,
    )
    .with_debit();
    const STATS: &'static Counters = &COUNTERS;
    type Params = Quota;
    type Write = Change<Store>;

    fn parse_params(args: &[&[u8]]) -> Result<Quota> {
        quota(args)
    }

    fn decide(key: &Key, q: &Quota, now: Millis, amount: Amount) -> Result<Outcome<Self::Write>> {
        Ok(sliding_counter::call(
            storage::sliding_counter::load(key)?,
            now,
            *q,
            amount,
        ))
    }

    fn store(key: &Key, write: Self::Write) -> Result<()> {
        storage::change(key, write, storage::sliding_counter::store)
    }
}
