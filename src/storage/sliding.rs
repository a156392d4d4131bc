//! RL.SLIDING's state: a native sorted set with one member per accepted unit,
//! score = the unit's server time in ms. Members are per-key sequence numbers
//! (`0`, `1`, …), which listpacks store as small integers: unique even for many units
//! in one millisecond, and a few bytes each.

use std::os::raw::c_int;

use crate::server::{raw, rm};

use super::{effects, injected, Key, Kind};
use crate::algorithms::sliding::{Append, Log, Removal};
use crate::algorithms::{Millis, MAX_COUNT};
use crate::decimal;
use crate::error::{Error, Result};
use crate::server::{ServerString, StrRef};

const WHAT: &str = "an RL.SLIDING log (a sorted set of ms timestamps)";

/// The stored log, read in place through sorted-set ranges.
pub struct ZsetLog<'k> {
    key: &'k Key,
    total: u64,
    newest: Option<Millis>,
}

/// Opens the log; an absent key is an empty log.
pub fn load(key: &Key) -> Result<ZsetLog<'_>> {
    match key.kind() {
        Kind::Empty => Ok(ZsetLog {
            key,
            total: 0,
            newest: None,
        }),
        Kind::SortedSet => {
            // Scores are sorted: if the lowest and highest are times RL could have
            // written, every score in between is too.
            let valid = |s: Option<f64>| {
                s.filter(|s| s.is_finite() && *s >= 0.0 && *s <= MAX_COUNT as f64)
                    .map(|s| s.ceil() as Millis)
            };
            let oldest = valid(edge_score(key, Edge::Oldest));
            let newest = valid(edge_score(key, Edge::Newest));
            if oldest.is_none() || newest.is_none() {
                return Err(Error::NotALimiter(WHAT));
            }
            Ok(ZsetLog {
                key,
                total: key.element_count(),
                newest,
            })
        }
        _ => Err(Error::WrongType),
    }
}

#[derive(Clone, Copy)]
enum Edge {
    Oldest,
    Newest,
}

/// A range over the scores of one key, stopped when dropped.
struct Range<'k> {
    key: &'k Key,
    started: bool,
}

impl<'k> Range<'k> {
    /// Scores in `(min, max]` when `min_exclusive`, else `[min, max]`.
    fn scores(key: &'k Key, min: f64, max: f64, min_exclusive: bool) -> Self {
        // SAFETY: the key is open (it outlives the range, which stops on drop); a
        // range on an empty or non-zset key is refused, not undefined.
        let ok = unsafe {
            rm!(RedisModule_ZsetFirstInScoreRange)(
                key.raw(),
                min,
                max,
                c_int::from(min_exclusive),
                0,
            )
        };
        Range {
            key,
            started: ok == raw::REDISMODULE_OK as c_int,
        }
    }

    fn last(key: &'k Key) -> Self {
        // SAFETY: as in `scores`.
        let ok = unsafe {
            rm!(RedisModule_ZsetLastInScoreRange)(key.raw(), f64::NEG_INFINITY, f64::INFINITY, 0, 0)
        };
        Range {
            key,
            started: ok == raw::REDISMODULE_OK as c_int,
        }
    }

    fn at_end(&self) -> bool {
        // SAFETY: the key is open and its range was started.
        !self.started || unsafe { rm!(RedisModule_ZsetRangeEndReached)(self.key.raw()) } != 0
    }

    /// The current member and its score.
    fn current(&self) -> Option<(ServerString, f64)> {
        if self.at_end() {
            return None;
        }
        let mut score = 0.0;
        // SAFETY: the key is open, its range started and not at its end; `score` is a
        // valid out-pointer.
        let member =
            unsafe { rm!(RedisModule_ZsetRangeCurrentElement)(self.key.raw(), &mut score) };
        // SAFETY: the server hands the caller one reference to the member it returns.
        unsafe { ServerString::from_owned(member) }.map(|m| (m, score))
    }

    /// Moves on; false at the end of the range.
    fn advance(&mut self) -> bool {
        // SAFETY: the key is open and its range started and not at its end.
        !self.at_end() && unsafe { rm!(RedisModule_ZsetRangeNext)(self.key.raw()) } != 0
    }

    /// Moves back (in a range started from the last element); false at its start.
    fn retreat(&mut self) -> bool {
        // SAFETY: the key is open and its range started and not at its end.
        !self.at_end() && unsafe { rm!(RedisModule_ZsetRangePrev)(self.key.raw()) } != 0
    }

    /// Counts the remaining elements without materialising members.
    fn count(mut self) -> u64 {
        if self.at_end() {
            return 0;
        }
        let mut n = 1;
        while self.advance() {
            n += 1;
        }
        n
    }
}

impl Drop for Range<'_> {
    fn drop(&mut self) {
        // Not rm!: a drop must never panic.
        // SAFETY: a plain load of a function pointer the loader wrote before any command.
        if let Some(stop) = unsafe { raw::RedisModule_ZsetRangeStop } {
            // SAFETY: the key is open; stopping a range that never started is a no-op.
            unsafe { stop(self.key.raw()) };
        }
    }
}

fn edge_score(key: &Key, edge: Edge) -> Option<f64> {
    let range = match edge {
        Edge::Oldest => Range::scores(key, f64::NEG_INFINITY, f64::INFINITY, false),
        Edge::Newest => Range::last(key),
    };
    let (_member, score) = range.current()?;
    Some(score)
}

impl Log for ZsetLog<'_> {
    fn count_after(&self, after: Millis) -> u64 {
        if self.total == 0 {
            return 0;
        }
        // Count what left the window (few, as allowed calls trim it) and subtract.
        let gone = Range::scores(self.key, f64::NEG_INFINITY, after as f64, false).count();
        self.total.saturating_sub(gone)
    }

    fn nth_after(&self, after: Millis, k: u64) -> Option<Millis> {
        let mut range = Range::scores(self.key, after as f64, f64::INFINITY, true);
        for _ in 1..k {
            if !range.advance() {
                return None;
            }
        }
        let (_member, score) = range.current()?;
        Some(score.ceil() as Millis)
    }

    fn newest(&self) -> Option<Millis> {
        self.newest
    }
}

/// Applies an allowed call: drops units that left the window, logs the new ones,
/// sets the expiry, and only then propagates what was written: `ZREMRANGEBYSCORE`
/// (if anything left), `ZADD` and `PEXPIREAT` with absolute values, firing the
/// events those fire on a replica (`zremrangebyscore`, `del` if that emptied the
/// set, `zadd`, `expire`), and signals the key.
///
/// Failures. Everything that can be checked is checked, and everything that can be
/// prepared is prepared, before the first write: the key's type, the members to
/// remove, the score. After that the server's writes cannot fail for a sorted set
/// open for writing (`ZsetRem`/`ZsetAdd` refuse only other types, read-only keys and
/// a NaN score). Should one fail anyway, the writes stop there and exactly what was
/// written is propagated — `ZREM` of the members actually removed if not all were,
/// `ZADD` of the members actually added — plus the expiry once anything was added,
/// so the replicas hold what the primary holds; the caller gets the error. (Undoing
/// instead would need more writes that could fail the same way; deleting the key
/// would forget up to `limit` counted units.)
pub fn store(key: &Key, newest: Option<Millis>, append: Append) -> Result<()> {
    if !matches!(key.kind(), Kind::Empty | Kind::SortedSet) {
        return Err(Error::WrongType);
    }
    let score = ServerString::from_i64(append.at).ok_or(Error::WriteFailed("creating a string"))?;
    let gone = members_through(key, append.drop_through);
    let sequence = Sequence(Some(next_sequence(key, newest)));

    let (removed, mut failed) = remove_each(key, &gone, "removing units that left the window");
    let mut written = Written {
        gone: gone.len(),
        removed,
        emptied: removed > 0 && key.kind() == Kind::Empty,
        ..Written::default()
    };
    let mut added = Vec::new();
    if failed.is_none() {
        failed = add_units(key, &append, sequence, &mut added).err();
    }
    written.added = added.len();
    if written.added > 0 {
        written.expiry = !injected(key, "expiry") && key.set_expires_at(append.expires_at);
        if !written.expiry && failed.is_none() {
            failed = Some("setting the expiry");
        }
    }

    propagate(key, written, &append, &score, &gone, &added)?;
    if written.removed > 0 || written.added > 0 {
        key.signal_modified();
    }
    failed.map_or(Ok(()), |what| Err(Error::WriteFailed(what)))
}

/// Removes `members` one by one, stopping at the first the server refuses: how many
/// were removed, and `what` failed if one was refused.
fn remove_each<'a>(
    key: &Key,
    members: impl IntoIterator<Item = &'a ServerString>,
    what: &'static str,
) -> (usize, Option<&'static str>) {
    let mut removed = 0;
    for member in members {
        let mut deleted: c_int = 0;
        // SAFETY: the key is open for writing; `member` is a live string; `deleted`
        // is a valid out-pointer.
        let ok = !(injected(key, "remove") && removed == 1)
            && unsafe { rm!(RedisModule_ZsetRem)(key.raw(), member.ptr(), &mut deleted) }
                == raw::REDISMODULE_OK as c_int;
        if !ok {
            return (removed, Some(what));
        }
        removed += 1;
    }
    (removed, None)
}

/// The sequence numbers new members take, counting up. The last one (u64::MAX,
/// reached only after a foreign member that high) can be taken once; past it the
/// call fails instead of looping forever.
struct Sequence(Option<u64>);

impl Sequence {
    fn take(&mut self) -> Option<u64> {
        let n = self.0?;
        self.0 = n.checked_add(1);
        Some(n)
    }
}

/// Logs `append.units` new members at `append.at` into `added`, stopping at the
/// first failure (whose description it returns).
fn add_units(
    key: &Key,
    append: &Append,
    mut sequence: Sequence,
    added: &mut Vec<ServerString>,
) -> std::result::Result<(), &'static str> {
    added.reserve(usize::try_from(append.units).unwrap_or(0));
    let mut digits = itoa::Buffer::new();
    for _ in 0..append.units {
        let refuse = injected(key, "add") && added.len() == 1;
        added.push(add_unit(
            key,
            append.at,
            &mut sequence,
            &mut digits,
            refuse,
        )?);
    }
    Ok(())
}

/// Logs one unit at `at` under the next free sequence number. NX so a member
/// someone else added under a number we picked is never moved: take the next
/// number instead. `refuse` makes the server's write fail (test injection).
fn add_unit(
    key: &Key,
    at: Millis,
    sequence: &mut Sequence,
    digits: &mut itoa::Buffer,
    refuse: bool,
) -> std::result::Result<ServerString, &'static str> {
    loop {
        let seq = sequence.take().ok_or("logging the new units")?;
        let member = ServerString::new(digits.format(seq).as_bytes()).ok_or("creating a string")?;
        let mut flags = raw::REDISMODULE_ZADD_NX as c_int;
        // SAFETY: the key is open for writing; `member` is a live string; `flags` is
        // a valid in/out-pointer.
        let ok = !refuse
            && unsafe { rm!(RedisModule_ZsetAdd)(key.raw(), at as f64, member.ptr(), &mut flags) }
                == raw::REDISMODULE_OK as c_int;
        if !ok {
            return Err("logging the new units");
        }
        if flags & raw::REDISMODULE_ZADD_ADDED as c_int != 0 {
            return Ok(member);
        }
    }
}

/// Propagates exactly what `written` says was written, in order.
fn propagate(
    key: &Key,
    written: Written,
    append: &Append,
    score: &ServerString,
    gone: &[ServerString],
    added: &[ServerString],
) -> Result<()> {
    for effect in written.effects() {
        match effect {
            Effect::ZremRangeByScore { emptied } => {
                effects::zremrangebyscore(key, append.drop_through, emptied)?
            }
            Effect::Zrem { count, emptied } => {
                let removed: Vec<StrRef> = gone[..count].iter().map(ServerString::as_ref).collect();
                effects::zrem(key, &removed, emptied)?
            }
            Effect::Zadd { count } => {
                let pairs: Vec<StrRef> = added[..count]
                    .iter()
                    .flat_map(|m| [score.as_ref(), m.as_ref()])
                    .collect();
                effects::zadd(key, &pairs)?
            }
            Effect::PexpireAt => effects::pexpireat(key, append.expires_at)?,
        }
    }
    Ok(())
}

/// Applies a refund: drops units that left the window and the newest units given
/// back, moves the expiry to when the newest unit left leaves the window, and only
/// then propagates what was written: `ZREMRANGEBYSCORE` (if anything had left),
/// `ZREM` of the members given back, `PEXPIREAT`. A refund that gives everything
/// back deletes the key (`DEL`). A failed removal stops there; exactly what was
/// removed is propagated (as `store` does) and the caller gets the error.
pub fn remove(key: &Key, removal: Removal) -> Result<()> {
    let Some(expires_at) = removal.expires_at else {
        return super::delete(key);
    };
    if key.kind() != Kind::SortedSet {
        return Err(Error::WrongType);
    }
    let gone = members_through(key, removal.drop_through);
    let newest = newest_members(key, removal.newest);
    let (removed, mut failed) = remove_each(key, gone.iter().chain(&newest), "removing units");
    let complete = failed.is_none();
    let expiry = complete && !injected(key, "expiry") && key.set_expires_at(expires_at);
    if complete && !expiry {
        failed = Some("setting the expiry");
    }

    let emptied = key.kind() == Kind::Empty;
    let (trimmed, given) = (removed.min(gone.len()), removed.saturating_sub(gone.len()));
    if trimmed == gone.len() && trimmed > 0 {
        effects::zremrangebyscore(key, removal.drop_through, emptied && given == 0)?;
    } else if trimmed > 0 {
        let members: Vec<StrRef> = gone[..trimmed].iter().map(ServerString::as_ref).collect();
        effects::zrem(key, &members, emptied)?;
    }
    if given > 0 {
        let members: Vec<StrRef> = newest[..given].iter().map(ServerString::as_ref).collect();
        effects::zrem(key, &members, emptied)?;
    }
    if expiry {
        effects::pexpireat(key, expires_at)?;
    }
    if removed > 0 {
        key.signal_modified();
    }
    match failed {
        Some(what) => Err(Error::WriteFailed(what)),
        None => Ok(()),
    }
}

/// The `n` newest members, newest first.
fn newest_members(key: &Key, n: u64) -> Vec<ServerString> {
    let mut members = Vec::new();
    let mut range = Range::last(key);
    while (members.len() as u64) < n {
        let Some((member, _)) = range.current() else {
            break;
        };
        members.push(member);
        if !range.retreat() {
            break;
        }
    }
    members
}

/// What a store wrote, in order. What is propagated is derived from this alone.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
struct Written {
    /// Members that had left the window, all of them to be removed.
    gone: usize,
    /// Of those, how many were removed (the first ones).
    removed: usize,
    /// Whether the removals left the key empty (so deleted it).
    emptied: bool,
    /// New members logged.
    added: usize,
    /// Whether the expiry was set.
    expiry: bool,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Effect {
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
    fn effects(self) -> impl Iterator<Item = Effect> {
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

/// One past the highest sequence number among the newest units (0 for a new log).
/// New units are always logged at or after the newest time, so sequence numbers
/// grow with time and the highest one sits at the newest score.
fn next_sequence(key: &Key, newest: Option<Millis>) -> u64 {
    let Some(newest) = newest else { return 0 };
    let mut range = Range::scores(key, newest as f64, f64::INFINITY, false);
    let mut next = 0;
    while let Some((member, _)) = range.current() {
        if let Some(seq) = decimal::digits(member.bytes()) {
            next = next.max(seq.saturating_add(1));
        }
        if !range.advance() {
            break;
        }
    }
    next
}

/// Every member logged at or before `through`.
fn members_through(key: &Key, through: Millis) -> Vec<ServerString> {
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
