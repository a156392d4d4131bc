//! `RL.GCRA key capacity tokens period [COST n]`
//!
//! The token bucket of RL.BUCKET kept as one integer (the TAT in ns), so it costs
//! what RL.FIXED costs. The key is a native string in redis-cell's format, shared
//! with CL.THROTTLE. Reply: `[allowed, capacity, remaining, retry_after_ms,
//! reset_after_ms]`.

use super::{decide_and_store, rate, Limiter, Spec, RATE_ARGS};
use crate::algorithms::gcra::{self, Emission};
use crate::algorithms::{Cost, Decision, Millis, Rate};
use crate::error::{Error, Result};
use crate::stats::Counters;
use crate::storage::{self, Key};

pub struct Gcra;

static COUNTERS: Counters = Counters::new();

/// The emission interval of a rate: an error past one token per nanosecond.
pub(super) fn emission(rate: Rate) -> Result<Emission> {
    Emission::new(rate).ok_or(Error::RateTooHigh)
}

/// Decides on the TAT, stores and propagates `SET key TAT PXAT t` when allowed.
pub(super) fn apply(key: &Key, e: Emission, now: Millis, cost: Cost) -> Result<Decision> {
    decide_and_store(
        storage::gcra::load(key)?,
        |s| gcra::decide(s, now, e, cost),
        |w| storage::gcra::store(key, w),
    )
}

impl Limiter for Gcra {
    const SPEC: Spec = Spec::rl(
        c"RL.GCRA",
        c"write deny-oom fast",
        c"Token bucket of capacity units refilling tokens per period, kept as one integer (GCRA)",
        c"O(1)",
        RATE_ARGS,
    );
    const STATS: &'static Counters = &COUNTERS;
    type Params = Emission;

    fn parse_params(args: &[&[u8]]) -> Result<Emission> {
        emission(rate(args)?)
    }

    fn apply(key: &Key, e: &Emission, now: Millis, cost: Cost) -> Result<Decision> {
        apply(key, *e, now, cost)
    }
}
