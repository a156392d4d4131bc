//! `CL.THROTTLE key max_burst count period [quantity]`
//!
//! redis-cell's command, answered as redis-cell answers it, on the same keys:
//! `RL.GCRA key (max_burst + 1) count period COST quantity`, with the reply
//! `[limited, limit, remaining, retry_after_s, reset_after_s]` (limited is 1 when
//! rejected; seconds are rounded up; retry_after is -1 when allowed).

use super::framework::Limiter;
use super::gcra::{self, emission};
use super::spec::{Arg, ArgKind, CostArg, Keys, Spec};
use crate::algorithms::gcra::Emission;
use crate::algorithms::{
    Amount, Cost, Count, Decision, Millis, Outcome, Rate, RetryAfter, MAX_COUNT,
};
use crate::args;
use crate::error::{Error, Result};
use crate::server::Context;
use crate::stats::Counters;
use crate::storage::Key;

pub struct Throttle;

static COUNTERS: Counters = Counters::new();

/// Seconds as redis-cell reports them: every fraction rounds up.
fn seconds(ms: u64) -> i64 {
    i64::try_from(ms.div_ceil(1000)).unwrap_or(i64::MAX)
}

impl Limiter for Throttle {
    const DEFINITION: Spec = Spec {
        name: c"CL.THROTTLE",
        flags: c"write deny-oom fast",
        summary:
            c"redis-cell's rate limiter: max_burst + 1 units at once, count more per period (GCRA)",
        complexity: c"O(1)",
        args: &[
            Arg::new(c"key", ArgKind::Key),
            Arg::new(c"max_burst", ArgKind::Integer),
            Arg::new(c"count", ArgKind::Integer),
            Arg::new(c"period", ArgKind::Duration),
        ],
        keys: Keys::First,
        // The command name, the key and three parameters; then an optional quantity.
        min_argc: 5,
        cost: CostArg::Positional(c"quantity"),
        optional: true,
        delay: false,
        debit: false,
    };
    const STATS: &'static Counters = &COUNTERS;
    type Params = Emission;
    type Write = gcra::Write;

    fn parse_params(args: &[&[u8]]) -> Result<Emission> {
        // max_burst + 1 is the capacity, which must stay within 2^53 - 1.
        let burst = args::integer("max_burst", args[0], 0, MAX_COUNT - 1)?;
        let rate = Rate {
            capacity: Count::new(burst + 1).ok_or(Error::Internal("CL.THROTTLE"))?,
            tokens: args::count("count", args[1])?,
            period: args::duration("period", args[2])?,
        };
        emission(rate)
    }

    /// The three parameters, then an optional quantity (no options).
    fn parse(args: &[&[u8]]) -> Result<(Emission, Amount)> {
        let e = Self::parse_params(&args[..3])?;
        let quantity = match args.get(3) {
            Some(q) => args::cost("quantity", q)?,
            None => Cost::ONE,
        };
        Ok((e, Amount::Take(quantity)))
    }

    fn decide(
        key: &Key,
        e: &Emission,
        now: Millis,
        amount: Amount,
    ) -> Result<Outcome<gcra::Write>> {
        gcra::decide(key, *e, now, amount)
    }

    fn store(key: &Key, write: gcra::Write) -> Result<()> {
        gcra::store(key, write)
    }

    fn reply(ctx: Context, d: &Decision) {
        let retry = match d.retry_after {
            RetryAfter::Ms(ms) => seconds(ms),
            // Allowed (CL.THROTTLE takes no DELAY: never Delayed), or never.
            RetryAfter::Now | RetryAfter::Delayed(_) | RetryAfter::Never => -1,
        };
        ctx.reply_integers([
            i64::from(!d.allowed),
            d.limit as i64,
            d.remaining as i64,
            retry,
            seconds(d.reset_after_ms),
        ]);
    }
}
