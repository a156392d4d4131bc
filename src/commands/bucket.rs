//! `RL.BUCKET key capacity tokens period [COST n]`
//!
//! Token bucket: holds at most `capacity` tokens and gains `tokens` every `period`,
//! continuously. The key is a native hash `{tokens, ts}` that expires when the
//! bucket would be full again. Reply: `[allowed, capacity, remaining,
//! retry_after_ms, reset_after_ms]`.

use super::{rate, CostArg, Limiter, Spec, RATE_ARGS};
use crate::algorithms::bucket::{self, Rate};
use crate::algorithms::{Cost, Decision, Millis};
use crate::error::Result;
use crate::stats::Counters;
use crate::storage::{self, Key};

pub struct Bucket;

static COUNTERS: Counters = Counters::new();

impl Limiter for Bucket {
    const SPEC: Spec = Spec {
        name: c"RL.BUCKET",
        flags: c"write deny-oom fast",
        summary:
            c"Takes cost tokens from a bucket of capacity tokens that refills tokens per period",
        complexity: c"O(1)",
        args: RATE_ARGS,
        cost: CostArg::Option,
        optional: false,
    };
    const STATS: &'static Counters = &COUNTERS;
    type Params = Rate;

    fn parse_params(args: &[&[u8]]) -> Result<Rate> {
        rate(args)
    }

    fn apply(key: &Key, rate: &Rate, now: Millis, cost: Cost) -> Result<Decision> {
        let outcome = bucket::decide(storage::bucket::load(key)?, now, *rate, cost);
        if let Some(s) = outcome.store {
            storage::bucket::store(key, s)?;
        }
        Ok(outcome.decision)
    }
}
