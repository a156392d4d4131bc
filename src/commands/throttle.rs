//! `CL.THROTTLE key max_burst count period [quantity]`
//!
//! redis-cell's command, answered as redis-cell answers it, on the same keys:
//! `RL.GCRA key (max_burst + 1) count period COST quantity`, with the reply
//! `[limited, limit, remaining, retry_after_s, reset_after_s]` (limited is 1 when
//! rejected; seconds are rounded up; retry_after is -1 when allowed).

use super::framework::Limiter;
use super::gcra::Tat;
use crate::server::Context;
use crate::stats::Counters;
use crate::storage::{Key, Storage};
use rl_core::algorithms::gcra::{Emission, Gcra};
use rl_core::algorithms::{Algorithm, Amount, Decision, Millis, Outcome};
use rl_core::error::Result;
use rl_core::params;
use rl_core::table::{self, Command};

pub struct Throttle;

static COUNTERS: Counters = Counters::new();

impl Limiter for Throttle {
    const COMMAND: &'static Command = &table::THROTTLE;
    const STATS: &'static Counters = &COUNTERS;
    type Params = Emission;
    type Write = <Gcra as Algorithm>::Write;

    fn parse_params(args: &[&[u8]]) -> Result<Emission> {
        Ok(params::throttle(args)?.0)
    }

    /// The three parameters, then an optional quantity (no options).
    fn parse(args: &[&[u8]]) -> Result<(Emission, Amount)> {
        params::throttle(args)
    }

    fn decide(
        key: &Key,
        e: &Emission,
        now: Millis,
        amount: Amount,
    ) -> Result<Outcome<Self::Write>> {
        Ok(Gcra::call(Tat::load(key)?, now, *e, amount))
    }

    fn store(key: &Key, write: Self::Write) -> Result<()> {
        Tat::store(key, write)
    }

    fn reply(ctx: Context, d: &Decision) {
        ctx.reply_integers(d.throttle_fields());
    }
}
