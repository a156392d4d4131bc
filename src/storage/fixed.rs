//! RL.FIXED's state: a [`record`](super::record) holding the units used in the
//! current window, expiring at the window's end.

use super::{record, Key};
use crate::algorithms::fixed::Counter;
use crate::decimal;
use crate::error::Result;

const WHAT: &str = "an RL.FIXED counter (a non-negative integer with an expiry)";

/// Reads the counter; None for an absent key.
pub fn load(key: &Key) -> Result<Option<Counter>> {
    let used = |bytes: &[u8]| decimal::canonical_u64(bytes);
    Ok(record::load(key, WHAT, used)?.map(|(used, expires_at)| Counter { used, expires_at }))
}

/// Stores the counter and propagates `SET key used PXAT expires_at`.
pub fn store(key: &Key, counter: Counter) -> Result<()> {
    let mut digits = itoa::Buffer::new();
    record::store(
        key,
        digits.format(counter.used).as_bytes(),
        counter.expires_at,
    )
}
