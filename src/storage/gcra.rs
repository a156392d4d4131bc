//! RL.GCRA's (and CL.THROTTLE's) state: a [`record`](super::record) holding the TAT
//! in ns since the epoch as a canonical decimal — redis-cell's format, so keys
//! written by either module are read by the other — expiring at ceil(TAT / 10^6) ms.

use super::{record, Key};
use rl_core::algorithms::gcra::{Store, Tat};
use rl_core::decimal;
use rl_core::error::Result;

const WHAT: &str = "a GCRA state (a non-negative integer TAT in ns)";

/// Reads the TAT; None for an absent key. The value alone is the state: a TAT on a
/// key without an expiry (`RESTORE key 0 …` of a redis-cell key, `PERSIST`) is read
/// like any other, and the next write sets the expiry again.
pub fn load(key: &Key) -> Result<Option<Tat>> {
    Ok(record::load(key, WHAT, decimal::canonical)?.map(|(tat, _)| Tat(tat)))
}

/// Stores the TAT and propagates `SET key TAT PXAT expires_at`.
pub fn store(key: &Key, store: Store) -> Result<()> {
    let mut digits = itoa::Buffer::new();
    record::store(key, digits.format(store.tat.0).as_bytes(), store.expires_at)
}
