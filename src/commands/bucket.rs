//! `RL.BUCKET key capacity tokens period [COST n]`
//!
//! Token bucket: holds at most `capacity` tokens and gains `tokens` every `period`,
//! continuously. The key is a native hash `{tokens, ts}` that expires when the
//! bucket would be full again. Reply: `[allowed, capacity, remaining,
//! retry_after_ms, reset_after_ms]`.

use super::framework::Stored;
use crate::stats::Counters;
use crate::storage::bucket::Hash;
use rl_core::algorithms::bucket::Rate;
use rl_core::error::Result;
use rl_core::params;
use rl_core::table::{self, Command};

pub struct Bucket;

static COUNTERS: Counters = Counters::new();

impl Stored for Bucket {
    const COMMAND: &'static Command = &table::BUCKET;
    const STATS: &'static Counters = &COUNTERS;
    type Storage = Hash;

    fn parse_params(args: &[&[u8]]) -> Result<Rate> {
        params::rate(args)
    }
}
