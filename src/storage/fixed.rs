//! RL.FIXED's state: a [`record`](super::record) holding the units used in the
//! current window, expiring at the window's end. The expiry is part of the state
//! (it says which window the count is of), so a counter without one is refused
//! (docs/commands.md, RL.FIXED).

use super::{record, Key};
use rl_core::algorithms::fixed::Counter;
use rl_core::decimal;
use rl_core::error::Result;

const WHAT: &str = "an RL.FIXED counter (a non-negative integer with an expiry)";

/// Reads the counter; None for an absent key.
pub fn load(key: &Key) -> Result<Option<Counter>> {
    Ok(record::load_with_expiry(key, WHAT, decimal::canonical_u64)?
        .map(|(used, expires_at)| Counter { used, expires_at }))
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
