//! `RL.FIXED key limit window [COST n]`
//!
//! Fixed window counter: at most `limit` units per epoch-aligned window of length
//! `window`. The key is a native integer string expiring at the window's end.
//! Reply: `[allowed, limit, remaining, retry_after_ms, reset_after_ms]`.

use super::{decide_and_store, quota, Limiter, Spec, QUOTA_ARGS};
use crate::algorithms::{fixed, Cost, Decision, Millis, Quota};
use crate::error::Result;
use crate::stats::Counters;
use crate::storage::{self, Key};

pub struct Fixed;

static COUNTERS: Counters = Counters::new();

impl Limiter for Fixed {
    const SPEC: Spec = Spec::rl(
        c"RL.FIXED",
        c"write deny-oom fast",
        c"Counts units in an epoch-aligned fixed window and admits at most limit per window",
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
            storage::fixed::load(key)?,
            |s| fixed::decide(s, now, *q, cost),
            |w| storage::fixed::store(key, w),
        )
    }
}
