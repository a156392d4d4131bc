//! `RL.GCRA key capacity tokens period [COST n | REFUND n | DEBIT n] [DELAY max]`
//!
//! The token bucket of RL.BUCKET kept as one integer (the TAT in ns), so it costs
//! what RL.FIXED costs. The key is a native string in redis-cell's format, shared
//! with CL.THROTTLE. Reply: `[allowed, capacity, remaining, retry_after_ms,
//! reset_after_ms]`; with `DELAY max` a call whose turn comes within max is allowed
//! and its retry_after_ms is the wait before acting (docs/commands.md).

use super::framework::{rate, Limiter};
use super::spec::{Spec, RATE_ARGS};
use crate::algorithms::gcra::{self, Emission, Store};
use crate::algorithms::{Amount, Change, Millis, Outcome, Rate};
use crate::error::{Error, Result};
use crate::stats::Counters;
use crate::storage::{self, Key};

pub struct Gcra;

static COUNTERS: Counters = Counters::new();

/// The emission interval of a rate: an error past one token per nanosecond.
pub(super) fn emission(rate: Rate) -> Result<Emission> {
    Emission::new(rate).ok_or(Error::RateTooHigh)
}

/// Decides on the TAT (RL.GCRA's and CL.THROTTLE's decision).
pub(super) fn decide(
    key: &Key,
    e: Emission,
    now: Millis,
    amount: Amount,
) -> Result<Outcome<Write>> {
    Ok(gcra::call(storage::gcra::load(key)?, now, e, amount))
}

/// What RL.GCRA and CL.THROTTLE write.
pub(super) type Write = Change<Store>;

/// Stores the TAT and propagates `SET key TAT PXAT t` (or deletes the key).
pub(super) fn store(key: &Key, write: Write) -> Result<()> {
    storage::change(key, write, storage::gcra::store)
}

impl Limiter for Gcra {
    const DEFINITION: Spec = Spec::rl(
        c"RL.GCRA",
        c"write deny-oom fast",
        c"Token bucket of capacity units refilling tokens per period, kept as one integer (GCRA)",
        c"O(1)",
        RATE_ARGS,
    )
    .with_delay()
    .with_debit();
    const STATS: &'static Counters = &COUNTERS;
    type Params = Emission;
    type Write = Write;

    fn parse_params(args: &[&[u8]]) -> Result<Emission> {
        emission(rate(args)?)
    }

    fn delayed(e: Emission, max_ms: u64) -> Emission {
        e.with_delay(max_ms)
    }

    fn decide(key: &Key, e: &Emission, now: Millis, amount: Amount) -> Result<Outcome<Write>> {
        decide(key, *e, now, amount)
    }

    fn store(key: &Key, write: Write) -> Result<()> {
        store(key, write)
    }
}
