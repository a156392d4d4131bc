//! `RL.BUCKET key capacity tokens period [COST n]`
//!
//! Token bucket: holds at most `capacity` tokens and gains `tokens` every `period`,
//! continuously. The key is a native hash `{tokens, ts}` that expires when the
//! bucket would be full again. Reply: `[allowed, capacity, remaining,
//! retry_after_ms, reset_after_ms]`.

use super::{Arg, ArgKind, Limiter, Spec};
use crate::algorithms::bucket::{self, Rate};
use crate::algorithms::{Cost, Decision, Millis};
use crate::args;
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
        args: &[
            Arg {
                name: c"key",
                kind: ArgKind::Key,
            },
            Arg {
                name: c"capacity",
                kind: ArgKind::Integer,
            },
            Arg {
                name: c"tokens",
                kind: ArgKind::Integer,
            },
            Arg {
                name: c"period",
                kind: ArgKind::Duration,
            },
        ],
    };
    const STATS: &'static Counters = &COUNTERS;
    type Params = Rate;

    fn parse(args: &[&[u8]]) -> Result<Rate> {
        Ok(Rate {
            capacity: args::count("capacity", args[0])?,
            tokens: args::count("tokens", args[1])?,
            period: args::duration("period", args[2])?,
        })
    }

    fn apply(key: &Key, rate: &Rate, now: Millis, cost: Cost) -> Result<Decision> {
        let outcome = bucket::decide(storage::bucket::load(key)?, now, *rate, cost);
        if let Some(s) = outcome.store {
            storage::bucket::store(key, s)?;
        }
        Ok(outcome.decision)
    }
}
