//! Sorted-set building blocks shared by the limiters that keep one (RL.SLIDING's
//! log, RL.ACQUIRE's leases): the edges of the scores, the members that left a
//! window, removal of members with failure injection, and the effects a trim + add
//! + expiry propagates.

use super::{effects, injected, Key};
pub(super) use crate::server::zset::{IfPresent, Range, Zadd};
use crate::server::{ServerString, StrRef};
use rl_core::algorithms::Millis;
use rl_core::codec;
use rl_core::error::{Error, Result};

/// The one check every reader of a sorted set RL keeps (RL.SLIDING's log,
/// RL.ACQUIRE's leases, in their own commands and in RL.ALL) makes before reading
/// it: its lowest and highest scores are whole ms times ([`codec::log_time`]); otherwise
/// the key holds something RL did not write, the "does not hold `what`" error.
/// Returns the highest score, the newest time. The key must be a non-empty sorted
/// set.
pub(super) fn check_times(key: &Key, what: &'static str) -> Result<Millis> {
    let edge = |edge| edge_score(key, edge).and_then(codec::log_time);
    match (edge(Edge::Oldest), edge(Edge::Newest)) {
        (Some(_), Some(newest)) => Ok(newest),
        _ => Err(Error::NotALimiter(what)),
    }
}

/// A score between the two a [`check_times`] accepted, as a time: rounded up if a
/// foreign member left a fraction there (the edges are whole, so it is in range).
pub(super) fn time_between(score: f64) -> Millis {
    // `as` saturates: NaN (never a score) would read as 0, anything else is in range.
    score.ceil() as Millis
}

#[derive(Clone, Copy)]
enum Edge {
    Oldest,
    Newest,
}

fn edge_score(key: &Key, edge: Edge) -> Option<f64> {
    let range = match edge {
        Edge::Oldest => Range::scores(key, f64::NEG_INFINITY, f64::INFINITY, false),
        Edge::Newest => Range::last(key),
    };
    let (_member, score) = range.current()?;
    Some(score)
}

/// Every member logged at or before `through`.
pub(super) fn members_through(key: &Key, through: Millis) -> Vec<ServerString> {
    let mut members = Vec::new();
    let mut range = Range::scores(key, f64::NEG_INFINITY, through as f64, false);
    while let Some((member, _)) = range.current() {
        members.push(member);
        if !range.advance() {
            break;
        }
    }
    members
}

/// Removes `members` one by one (a test build's `remove` step fails at the
/// second); how many were removed, and what failed if not all were.
pub(super) fn remove_members<'a>(
    key: &Key,
    members: impl IntoIterator<Item = &'a ServerString>,
    what: &'static str,
) -> (usize, Option<&'static str>) {
    let mut removed = 0;
    for member in members {
        let ok = !(injected(key, "remove") && removed == 1) && key.zset_remove(member);
        if !ok {
            return (removed, Some(what));
        }
        removed += 1;
    }
    (removed, None)
}

/// Propagates exactly what a trim + add + expiry wrote ([`Written::effects`]):
/// `gone` are the members through `drop_through` that were to be removed, `pairs`
/// the (score, member) pairs added.
pub(super) fn propagate(
    key: &Key,
    written: Written,
    drop_through: Millis,
    gone: &[ServerString],
    pairs: &[StrRef<'_>],
    expires_at: Millis,
) -> Result<()> {
    for effect in written.effects() {
        match effect {
            Effect::ZremRangeByScore { emptied } => {
                effects::zremrangebyscore(key, drop_through, emptied)?
            }
            Effect::Zrem { count, emptied } => {
                let removed: Vec<StrRef> = gone[..count].iter().map(ServerString::as_ref).collect();
                effects::zrem(key, &removed, emptied)?
            }
            Effect::Zadd { count } => effects::zadd(key, &pairs[..2 * count])?,
            Effect::PexpireAt => effects::pexpireat(key, expires_at)?,
        }
    }
    Ok(())
}

/// What a store wrote, in order. What is propagated is derived from this alone.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub(super) struct Written {
    /// Members that had left the window, all of them to be removed.
    pub(super) gone: usize,
    /// Of those, how many were removed (the first ones).
    pub(super) removed: usize,
    /// Whether the removals left the key empty (so deleted it).
    pub(super) emptied: bool,
    /// New members logged.
    pub(super) added: usize,
    /// Whether the expiry was set.
    pub(super) expiry: bool,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Effect {
    /// All of `gone` removed: `ZREMRANGEBYSCORE key -inf drop_through` is the same.
    ZremRangeByScore {
        emptied: bool,
    },
    /// Only the first `count` of `gone` removed.
    Zrem {
        count: usize,
        emptied: bool,
    },
    /// `ZADD` of the first `count` new members.
    Zadd {
        count: usize,
    },
    PexpireAt,
}

impl Written {
    /// The commands replaying exactly these writes, in order (at most three).
    pub(super) fn effects(self) -> impl Iterator<Item = Effect> {
        let removal = match self.removed {
            0 => None,
            n if n == self.gone => Some(Effect::ZremRangeByScore {
                emptied: self.emptied,
            }),
            count => Some(Effect::Zrem {
                count,
                emptied: self.emptied,
            }),
        };
        let add = (self.added > 0).then_some(Effect::Zadd { count: self.added });
        let expiry = self.expiry.then_some(Effect::PexpireAt);
        [removal, add, expiry].into_iter().flatten()
    }
}

#[cfg(test)]
mod tests {
    use super::{Effect, Written};

    fn effects(w: Written) -> Vec<Effect> {
        w.effects().collect()
    }

    #[test]
    fn a_complete_store_propagates_trim_add_and_expiry_in_that_order() {
        let w = Written {
            gone: 3,
            removed: 3,
            emptied: false,
            added: 2,
            expiry: true,
        };
        assert_eq!(
            effects(w),
            [
                Effect::ZremRangeByScore { emptied: false },
                Effect::Zadd { count: 2 },
                Effect::PexpireAt
            ]
        );
        // Nothing had left the window: no ZREMRANGEBYSCORE at all.
        let w = Written {
            gone: 0,
            removed: 0,
            ..w
        };
        assert_eq!(effects(w), [Effect::Zadd { count: 2 }, Effect::PexpireAt]);
        // The trim emptied the set: the replica's ZREMRANGEBYSCORE deletes the key.
        let w = Written {
            gone: 4,
            removed: 4,
            emptied: true,
            ..w
        };
        assert_eq!(effects(w)[0], Effect::ZremRangeByScore { emptied: true });
    }

    #[test]
    fn a_partial_store_propagates_exactly_what_was_written() {
        // Failed at the third removal: ZREM of the two removed, nothing else.
        let w = Written {
            gone: 5,
            removed: 2,
            emptied: false,
            added: 0,
            expiry: false,
        };
        assert_eq!(
            effects(w),
            [Effect::Zrem {
                count: 2,
                emptied: false
            }]
        );
        // Failed at the second new unit: the trim, the one added, its expiry.
        let w = Written {
            gone: 1,
            removed: 1,
            emptied: true,
            added: 1,
            expiry: true,
        };
        assert_eq!(
            effects(w),
            [
                Effect::ZremRangeByScore { emptied: true },
                Effect::Zadd { count: 1 },
                Effect::PexpireAt
            ]
        );
        // Failed before any write: nothing at all.
        assert_eq!(effects(Written::default()), []);
        // Units added but the expiry refused: no PEXPIREAT.
        let w = Written {
            added: 3,
            ..Written::default()
        };
        assert_eq!(effects(w), [Effect::Zadd { count: 3 }]);
    }
}
