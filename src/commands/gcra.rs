//! `RL.GCRA key capacity tokens period [COST n | REFUND n] [DELAY max]`
//!
//! The token bucket of RL.BUCKET kept as one integer (the TAT in ns), so it costs
//! what RL.FIXED costs. The key is a native string in redis-cell's format, shared
//! with CL.THROTTLE. Reply: `[allowed, capacity, remaining, retry_after_ms,
//! reset_after_ms]`; with `DELAY max` a call whose turn comes within max is allowed
//! and its retry_after_ms is the wait before acting (docs/commands.md).

use super::framework::Stored;
use crate::stats::Counters;
use crate::storage::record::Record;
use rl_core::algorithms::gcra::{Emission, Gcra as Algorithm};
use rl_core::error::Result;
use rl_core::params;
use rl_core::table::{self, Command};

pub struct Gcra;

static COUNTERS: Counters = Counters::new();

/// Where RL.GCRA and CL.THROTTLE keep their TAT: `SET key TAT PXAT t`.
pub(super) type Tat = Record<Algorithm>;

impl Stored for Gcra {
    const COMMAND: &'static Command = &table::GCRA;
    const STATS: &'static Counters = &COUNTERS;
    type Storage = Tat;

    fn parse_params(args: &[&[u8]]) -> Result<Emission> {
        params::emission(args)
    }

    fn delayed(e: Emission, max_ms: u64) -> Emission {
        e.with_delay(max_ms)
    }
}
