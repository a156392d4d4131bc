//! `RL.FIXED key limit window [COST n]`
//!
//! Fixed window counter: at most `limit` units per epoch-aligned window of length
//! `window`. The key is a native integer string expiring at the window's end.
//! Reply: `[allowed, limit, remaining, retry_after_ms, reset_after_ms]`.

use super::framework::Stored;
use crate::stats::Counters;
use crate::storage::record::Record;
use rl_core::algorithms::fixed::FixedWindow;
use rl_core::algorithms::Quota;
use rl_core::error::Result;
use rl_core::params;
use rl_core::table::{self, Command};

pub struct Fixed;

static COUNTERS: Counters = Counters::new();

impl Stored for Fixed {
    const COMMAND: &'static Command = &table::FIXED;
    const STATS: &'static Counters = &COUNTERS;
    type Storage = Record<FixedWindow>;

    fn parse_params(args: &[&[u8]]) -> Result<Quota> {
        params::quota(args)
    }
}
