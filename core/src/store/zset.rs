//! What RL.SLIDING's log and RL.ACQUIRE's leases share: the one check every reader
//! of their sorted sets makes, and a score read as a time.

use super::{From, Store};
use crate::algorithms::Millis;
use crate::codec;
use crate::error::{Error, Result};

/// Before reading a sorted set RL keeps: its lowest and highest scores are whole
/// ms times ([`codec::log_time`]); otherwise the key holds something RL did not
/// write, the "does not hold `what`" error. Returns the highest, the newest time.
/// The key must be a sorted set.
#[inline]
pub(super) fn check_times<S: Store>(store: &S, key: &S::Key, what: &'static str) -> Result<Millis> {
    let edge = |from| store.znth(key, from, 0).and_then(codec::log_time);
    match (edge(From::BOTTOM), edge(From::Top)) {
        (Some(_), Some(newest)) => Ok(newest),
        _ => Err(Error::NotALimiter(what)),
    }
}

/// A score between the two [`check_times`] accepted, as a time: rounded up if a
/// foreign member left a fraction there (the edges are whole, so it is in range).
#[inline]
pub(super) fn time_between(score: f64) -> Millis {
    // `as` saturates: NaN (never a score) would read as 0, anything else is in range.
    score.ceil() as Millis
}

/// Scores above `t`, from the lowest.
pub(super) fn after(t: Millis) -> From {
    From::Above {
        min: t as f64,
        exclusive: true,
    }
}
