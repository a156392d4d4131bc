//! `RL.SLIDINGCOUNTER key limit window [COST n]`
//!
//! Sliding window counter: the previous epoch-aligned window's count, weighted by
//! its overlap with the sliding window, plus the current one — constant memory at
//! any limit and rate. The key is a native string `"<start> <current> <previous>"`.
//! Reply: `[allowed, limit, remaining, retry_after_ms, reset_after_ms]`.

use super::framework::Stored;
use crate::stats::Counters;
use crate::storage::record::Record;
use rl_core::algorithms::sliding_counter::SlidingWindowCounter;
use rl_core::algorithms::Quota;
use rl_core::error::Result;
use rl_core::params;
use rl_core::table::{self, Command};

pub struct SlidingCounter;

static COUNTERS: Counters = Counters::new();

impl Stored for SlidingCounter {
    const COMMAND: &'static Command = &table::SLIDINGCOUNTER;
    const STATS: &'static Counters = &COUNTERS;
    type Storage = Record<SlidingWindowCounter>;

    fn parse_params(args: &[&[u8]]) -> Result<Quota> {
        params::quota(args)
    }
}
