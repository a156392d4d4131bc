//! `RL.FIXED key limit window [COST n]`
//!
//! Fixed window counter: at most `limit` units per epoch-aligned window of length
//! `window`. The key is a native integer string expiring at the window's end.
//! Reply: `[allowed, limit, remaining, retry_after_ms, reset_after_ms]`.

use super::{quota, CostArg, Limiter, Spec, QUOTA_ARGS};
use crate::algorithms::{fixed, Cost, Decision, Millis, Quota};
use crate::error::Result;
use crate::stats::Counters;
use crate::storage::{self, Key};

pub struct Fixed;

static COUNTERS: Counters = Counters::new();

impl Limiter for Fixed {
    const SPEC: Spec = Spec {
        name: c"RL.FIXED",
        flags: c"write deny-oom fast",
        summary:
            c"Counts units in an epoch-aligned fixed window and admits at most limit per window",
        complexity: c"O(1)",
        args: QUOTA_ARGS,
        cost: CostArg::Option,
        optional: false,
    };
    const STATS: &'static Counters = &COUNTERS;
    type Params = Quota;

    fn parse_params(args: &[&[u8]]) -> Result<Quota> {
        quota(args)
    }

    fn apply(key: &Key, q: &Quota, now: Millis, cost: Cost) -> Result<Decision> {
        let outcome = fixed::decide(storage::fixed::load(key)?, now, *q, cost);
        if let Some(c) = outcome.store {
            storage::fixed::store(key, c)?;
        }
        Ok(outcome.decision)
    }
}
