//! `RL.BUCKET key capacity tokens period [COST n | REFUND n | DEBIT n]`
//!
//! Token bucket: holds at most `capacity` tokens and gains `tokens` every `period`,
//! continuously. The key is a native hash `{tokens, ts}` that expires when the
//! bucket would be full again. Reply: `[allowed, capacity, remaining,
//! retry_after_ms, reset_after_ms]`.

use super::framework::{rate, Limiter};
use super::spec::{Spec, RATE_ARGS};
use crate::algorithms::bucket::{self, Rate, Store};
use crate::algorithms::{Amount, Change, Millis, Outcome};
use crate::error::Result;
use crate::stats::Counters;
use crate::storage::{self, Key};

pub struct Bucket;

static COUNTERS: Counters = Counters::new();

impl Limiter for Bucket {
    const DEFINITION: Spec = Spec::rl(
        c"RL.BUCKET",
        c"write deny-oom fast",
        c"Takes cost tokens from a bucket of capacity tokens that refills tokens per period",
        c"O(1)",
        RATE_ARGS,
    )
    .with_debit();
    const STATS: &'static Counters = &COUNTERS;
    type Params = Rate;
    type Write = Change<Store>;

    fn parse_params(args: &[&[u8]]) -> Result<Rate> {
        rate(args)
    }

    fn decide(key: &Key, rate: &Rate, now: Millis, amount: Amount) -> Result<Outcome<Self::Write>> {
        Ok(bucket::call(
            storage::bucket::load(key)?,
            now,
            *rate,
            amount,
        ))
    }

    fn store(key: &Key, write: Self::Write) -> Result<()> {
        storage::change(key, write, storage::bucket::store)
    }
}
