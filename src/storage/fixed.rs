//! RL.FIXED's state: a [`record`](super::record) holding the units used in the
//! current window, expiring at the window's end.

use super::{record, Key};
use crate::algorithms::fixed::Counter;
use crate::error::Result;

const WHAT: &str = "an RL.FIXED counter (a non-negative integer with an expiry)";

/// Reads the counter; None for an absent key.
pub fn load(key: &Key) -> Result<Option<Counter>> {
    Ok(record::load(key, WHAT)?.map(|(used, expires_at)| Counter { used, expires_at }))
}

/// Stores the counter and propagates `SET key used PXAT expires_at`.
pub fn store(key: &Key, counter: Counter) -> Result<()> {
    record::store(key, counter.used, counter.expires_at)
}
