//! A sorted set (RL.SLIDING's log, RL.ACQUIRE's leases): ranges over its scores
//! read in place, and its writes — `ZADD` (event `zadd`), `ZREM` (`zrem`) and
//! `ZREMRANGEBYSCORE` (`zremrangebyscore`), each then `del` if it emptied the set.
//!
//! Failures. Everything that can be checked or prepared (the members to remove,
//! the strings) is before the first write. After that the server's writes cannot
//! fail for a sorted set open for writing (`ZsetRem`/`ZsetAdd` refuse only other
//! types, read-only keys and a NaN score). Should one fail anyway, the writes stop
//! there and exactly what was written is propagated — `ZREM` of the members
//! actually removed if not all were, `ZADD` of the members actually added — so the
//! replicas hold what the primary holds; the caller gets the error. (Undoing
//! instead would need more writes that could fail the same way; deleting the key
//! would forget up to `limit` counted units.)

use super::{injected, Key, Kind};
use crate::server::names::names;
use crate::server::replicate::replicate;
use crate::server::zset::{IfPresent, Range, Zadd};
use crate::server::{EventClass as Class, ServerString, StrRef};
use rl_core::algorithms::Millis;
use rl_core::error::{Error, Result};
use rl_core::store::From;
use smallvec::SmallVec;

/// Members a call removes by name, on the stack for the usual few (RL.RELEASE's
/// one lease, a refund's newest units).
type Strings<T> = SmallVec<[T; 8]>;

/// The range a walk from `from` goes over, and whether it goes down.
fn range(key: &Key, from: From) -> (Range<'_>, bool) {
    match from {
        From::Above { min, exclusive } => {
            (Range::scores(key, min, f64::INFINITY, exclusive), false)
        }
        From::Top => (Range::last(key), true),
    }
}

fn step(range: &mut Range<'_>, down: bool) -> bool {
    if down {
        range.retreat()
    } else {
        range.advance()
    }
}

/// Scores at or below `max`, counted without materialising members.
#[inline]
pub(super) fn count_through(key: &Key, max: Millis) -> u64 {
    Range::scores(key, f64::NEG_INFINITY, max as f64, false).count()
}

/// The score `skip` places on from `from`.
#[inline]
pub(super) fn nth(key: &Key, from: From, skip: u64) -> Option<f64> {
    let (mut range, down) = range(key, from);
    for _ in 0..skip {
        if !step(&mut range, down) {
            return None;
        }
    }
    let (_member, score) = range.current()?;
    Some(score)
}

#[inline]
pub(super) fn walk(key: &Key, from: From, mut visit: impl FnMut(&[u8], f64) -> bool) {
    let (mut range, down) = range(key, from);
    while let Some((member, score)) = range.current() {
        if !visit(member.bytes(), score) || !step(&mut range, down) {
            return;
        }
    }
}

/// Every member scored at or before `through`.
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

/// Removes `members` one by one (a test build's `remove` step fails at the
/// second); how many were removed, and what failed if not all were.
fn remove_members(key: &Key, members: &[ServerString]) -> (usize, Option<Error>) {
    for (removed, member) in members.iter().enumerate() {
        let ok = !(injected(key, "remove") && removed == 1) && key.zset_remove(member);
        if !ok {
            return (removed, Some(Error::WriteFailed("removing members")));
        }
    }
    (members.len(), None)
}

/// `ZREM` of the first `removed` of `members` (all of them, or the ones removed
/// before a failure), then `failed`, if any.
fn propagate_zrem(
    key: &Key,
    members: &[ServerString],
    removed: usize,
    failed: Option<Error>,
) -> Result<()> {
    if removed > 0 {
        let members: Strings<StrRef> = members[..removed]
            .iter()
            .map(ServerString::as_ref)
            .collect();
        let members: &[StrRef] = &members;
        replicate!(key, c"ZREM"; strings(members))?;
        key.notify(Class::SortedSet, c"zrem");
        emptied(key);
        key.signal_modified();
    }
    failed.map_or(Ok(()), Err)
}

/// Event `del` when the last write left the set empty (so deleted it).
fn emptied(key: &Key) {
    if key.kind() == Kind::Empty {
        key.notify(Class::Generic, c"del");
    }
}

/// `ZREMRANGEBYSCORE key -inf max`: removes every member scored at or before
/// `max` (none: nothing is written). Removed half way, it propagates `ZREM` of
/// those removed.
pub(super) fn remove_through(key: &Key, max: Millis) -> Result<()> {
    let gone = members_through(key, max);
    if gone.is_empty() {
        return Ok(());
    }
    let (removed, failed) = remove_members(key, &gone);
    if failed.is_some() {
        return propagate_zrem(key, &gone, removed, failed);
    }
    replicate!(key, c"ZREMRANGEBYSCORE"; shared(&names().neg_inf), int(max))?;
    key.notify(Class::SortedSet, c"zremrangebyscore");
    emptied(key);
    key.signal_modified();
    Ok(())
}

/// `ZREM key member …`.
pub(super) fn remove<M: AsRef<[u8]>>(key: &Key, members: &[M]) -> Result<()> {
    if key.kind() != Kind::SortedSet {
        return Err(Error::WrongType);
    }
    let members = members
        .iter()
        .map(|m| ServerString::new(m.as_ref()).ok_or(Error::WriteFailed("creating a string")))
        .collect::<Result<Strings<_>>>()?;
    let (removed, failed) = remove_members(key, &members);
    propagate_zrem(key, &members, removed, failed)
}

/// Propagates `ZADD key score m1 score m2 …` of the members added.
fn propagate_zadd(key: &Key, score: &ServerString, added: &[ServerString]) -> Result<()> {
    let pairs: Vec<StrRef> = added
        .iter()
        .flat_map(|m| [score.as_ref(), m.as_ref()])
        .collect();
    let pairs: &[StrRef] = &pairs;
    replicate!(key, c"ZADD"; strings(pairs))?;
    key.notify(Class::SortedSet, c"zadd");
    key.signal_modified();
    Ok(())
}

fn score(at: Millis) -> Result<ServerString> {
    ServerString::from_i64(at).ok_or(Error::WriteFailed("creating a string"))
}

/// `ZADD key at member`: adds or moves one member (a lease; a test build's `add`
/// step refuses it).
pub(super) fn add(key: &Key, at: Millis, member: &[u8]) -> Result<()> {
    let member = ServerString::new(member).ok_or(Error::WriteFailed("creating a string"))?;
    let score = score(at)?;
    let added = !injected(key, "add")
        && key
            .zset_add(at as f64, &member, IfPresent::Update)
            .is_some();
    if !added {
        return Err(Error::WriteFailed("adding the lease"));
    }
    propagate_zadd(key, &score, std::slice::from_ref(&member))
}

/// `ZADD key at …` of the first `count` candidates the set does not hold: NX, so a
/// member someone else added under a name we picked is never moved (the next
/// candidate is taken instead). A test build's `add` step fails at the second.
pub(super) fn add_new<M: AsRef<[u8]>>(
    key: &Key,
    at: Millis,
    count: u64,
    mut candidates: impl Iterator<Item = M>,
) -> (u64, Result<()>) {
    let score = match score(at) {
        Ok(score) => score,
        Err(e) => return (0, Err(e)),
    };
    let mut added = Vec::with_capacity(usize::try_from(count).unwrap_or(0));
    let mut failed = None;
    while (added.len() as u64) < count {
        let refuse = injected(key, "add") && added.len() == 1;
        let Some(member) = candidates.next() else {
            failed = Some(Error::WriteFailed("logging the new units"));
            break;
        };
        let Some(member) = ServerString::new(member.as_ref()) else {
            failed = Some(Error::WriteFailed("creating a string"));
            break;
        };
        let outcome = if refuse {
            None
        } else {
            key.zset_add(at as f64, &member, IfPresent::Keep)
        };
        match outcome {
            None => {
                failed = Some(Error::WriteFailed("logging the new units"));
                break;
            }
            Some(Zadd::Added) => added.push(member),
            Some(Zadd::Updated | Zadd::Unchanged) => {}
        }
    }
    let n = added.len() as u64;
    if n == 0 {
        return (0, failed.map_or(Ok(()), Err));
    }
    let propagated = propagate_zadd(key, &score, &added);
    (n, failed.map_or(propagated, Err))
}
