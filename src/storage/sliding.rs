//! RL.SLIDING's state: a native sorted set with one member per accepted unit,
//! score = the unit's server time in ms. Members are per-key sequence numbers
//! (`0`, `1`, …), which listpacks store as small integers: unique even for many units
//! in one millisecond, and a few bytes each.

use super::zset::{self, members_through, IfPresent, Range, Written, Zadd};
use super::{effects, injected, Key, Kind, Server};
use crate::server::{ServerString, StrRef};
use rl_core::algorithms::sliding::{Append, Log, Removal, SlidingLog, Write};
use rl_core::algorithms::{Algorithm, Amount, Millis, Outcome, WindowLimit};
use rl_core::command::Runs;
use rl_core::commands;
use rl_core::decimal;
use rl_core::error::{Error, Result};

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
            let newest = zset::check_times(key, WHAT)?;
            Ok(ZsetLog {
                key,
                total: key.element_count(),
                newest: Some(newest),
            })
        }
        _ => Err(Error::WrongType),
    }
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
        Some(zset::time_between(score))
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

    let (removed, mut failed) =
        zset::remove_members(key, &gone, "removing units that left the window");
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

    let pairs: Vec<StrRef> = added
        .iter()
        .flat_map(|m| [score.as_ref(), m.as_ref()])
        .collect();
    zset::propagate(
        key,
        written,
        append.drop_through,
        &gone,
        &pairs,
        append.expires_at,
    )?;
    if written.removed > 0 || written.added > 0 {
        key.signal_modified();
    }
    failed.map_or(Ok(()), |what| Err(Error::WriteFailed(what)))
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
        let added = if refuse {
            None
        } else {
            key.zset_add(at as f64, &member, IfPresent::Keep)
        };
        match added {
            None => return Err("logging the new units"),
            Some(Zadd::Added) => return Ok(member),
            Some(Zadd::Updated | Zadd::Unchanged) => {}
        }
    }
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
    let (removed, mut failed) =
        zset::remove_members(key, gone.iter().chain(&newest), "removing units");
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

/// RL.SLIDING on the server's keys: the log read in place, the write applied by
/// [`store`] or [`remove`].
impl Runs<commands::Sliding> for Server {
    fn decide(
        &mut self,
        key: &Key,
        q: &WindowLimit,
        now: Millis,
        amount: Amount,
    ) -> Result<Outcome<(Option<Millis>, Write)>> {
        let log = load(key)?;
        let out = SlidingLog::call(&log, now, *q, amount);
        Ok(Outcome {
            decision: out.decision,
            write: out.write.map(|w| (log.newest(), w)),
        })
    }

    fn store(&mut self, key: &Key, (newest, write): (Option<Millis>, Write)) -> Result<()> {
        match write {
            Write::Append(append) => store(key, newest, append),
            Write::Remove(removal) => remove(key, removal),
        }
    }
}
