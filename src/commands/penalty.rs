//! `RL.PENALTY key strikes window block max [COST n]`
//!
//! Escalating blocks for repeat offenders: `strikes` within `window` block the key
//! for `block`, each further block while the offender is remembered twice as long,
//! up to `max`. `COST n` records n strikes, `COST 0` only looks. The key is a
//! native string `"<count> <window_end> <level> <blocked_until>"`.
//! Reply: `[allowed, strikes, remaining, retry_after_ms, reset_after_ms]`.

use super::framework::Stored;
use crate::stats::Counters;
use crate::storage::record::Record;
use rl_core::algorithms::penalty::{EscalatingBlocks, Penalty as Params};
use rl_core::error::Result;
use rl_core::params;
use rl_core::table::{self, Command};

pub struct Penalty;

static COUNTERS: Counters = Counters::new();

impl Stored for Penalty {
    const COMMAND: &'static Command = &table::PENALTY;
    const STATS: &'static Counters = &COUNTERS;
    type Storage = Record<EscalatingBlocks>;

    fn parse_params(args: &[&[u8]]) -> Result<Params> {
        params::penalty(args)
    }
}
