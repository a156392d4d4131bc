//! `RL.FIXED key limit window [COST n]`
//!
//! Fixed window counter: at most `limit` units per epoch-aligned window of length
//! `window`. The key is a native integer string expiring at the window's end.
//! Reply: `[allowed, limit, remaining, retry_after_ms, reset_after_ms]`.

use super::framework::{quota, Stored};
use super::spec::{Spec, QUOTA_ARGS};
use crate::stats::Counters;
use crate::storage::record::Record;
use rl_core::algorithms::fixed::FixedWindow;
use rl_core::algorithms::Quota;
use rl_core::error::Result;

pub struct Fixed;

static COUNTERS: Counters = Counters::new();

impl Stored for Fixed {
    const DEFINITION: Spec = Spec::rl(
        c"RL.FIXED",
        c"write deny-oom fast",
        c"Counts units in an epoch-aligned fixed window and admits at most limit per window",
        c"O(1)",
        QUOTA_ARGS,
    );
    const STATS: &'static Counters = &COUNTERS;
    type Storage = Record<FixedWindow>;

    fn parse_params(args: &[&[u8]]) -> Result<Quota> {
        quota(args)
    }
}
