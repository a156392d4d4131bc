//! RL.PENALTY's state: a [`record`](super::record) holding
//! `"<count> <window_end> <level> <blocked_until>"` (four canonical decimals, one
//! space apart), expiring when the offender would be back to a clean slate.

use super::{record, Key};
use crate::algorithms::penalty::{State, Store, BUF_LEN};
use crate::error::Result;

const WHAT: &str =
    "an RL.PENALTY state (a string \"<count> <window_end> <level> <blocked_until>\")";

/// Reads the state; None for an absent key. The value alone is the state (its
/// times are absolute): without an expiry it is read the same, and the next write
/// sets one.
pub fn load(key: &Key) -> Result<Option<State>> {
    Ok(record::load(key, WHAT, State::parse)?.map(|(state, _)| state))
}

/// Stores the state and propagates `SET key "<count> <window_end> <level>
/// <blocked_until>" PXAT t`.
pub fn store(key: &Key, store: Store) -> Result<()> {
    let mut buf = [0; BUF_LEN];
    record::store(key, store.state.format(&mut buf), store.expires_at)
}
