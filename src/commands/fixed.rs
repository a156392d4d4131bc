//! `RL.FIXED key limit window [COST n | REFUND n | DEBIT n]`
//!
//! Fixed window counter: at most `limit` units per epoch-aligned window of length
//! `window`. The key is a native integer string expiring at the window's end.
//! Reply: `[allowed, limit, remaining, retry_after_ms, reset_after_ms]`.

use super::framework::{quota, Limiter};
use super::spec::{Spec, QUOTA_ARGS};
use crate::algorithms::fixed::{self, Counter};
use crate::algorithms::{Amount, Change, Millis, Outcome, Quota};
use crate::error::Result;
use crate::stats::Counters;
use crate::storage::{self, Key};

pub struct Fixed;

static COUNTERS: Counters = Counters::new();

impl Limiter for Fixed {
    const DEFINITION: Spec = Spec::rl(
        c"RL.FIXED",
        c"write deny-oom fast",
        c"Counts units in an epoch-aligned fixed window and admits at most limit per window",
        c"O(1)",
        QUOTA_ARGS,
    )
    .with_debit();
    const STATS: &'static Counters = &COUNTERS;
    type Params = Quota;
    type Write = Change<Counter>;

    fn parse_params(args: &[&[u8]]) -> Result<Quota> {
        quota(args)
    }

    fn decide(key: &Key, q: &Quota, now: Millis, amount: Amount) -> Result<Outcome<Self::Write>> {
        Ok(fixed::call(storage::fixed::load(key)?, now, *q, amount))
    }

    fn store(key: &Key, write: Self::Write) -> Result<()> {
        storage::change(key, write, storage::fixed::store)
    }
}
