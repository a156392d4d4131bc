//! RL.SLIDING's state: a sorted set with one member per accepted unit, score = the
//! unit's server time in ms. Members are per-key sequence numbers (`0`, `1`, …),
//! which listpacks store as small integers: unique even for many units in one
//! millisecond, and a few bytes each. Read in place; an allowed call writes
//! `ZREMRANGEBYSCORE` (what left the window) + `ZADD` + `PEXPIREAT`, a refund
//! `ZREMRANGEBYSCORE` + `ZREM` of the newest units + `PEXPIREAT`, or `DEL`.

use super::zset::{after, check_times, time_between};
use super::{From, Kind, Store};
use crate::algorithms::sliding::{Append, Log, Removal, SlidingLog, Write};
use crate::algorithms::{Algorithm, Amount, Millis, Outcome, WindowLimit};
use crate::codec::SLIDING_WHAT;
use crate::command::Runs;
use crate::commands::Sliding;
use crate::decimal;
use crate::error::{Error, Result};

/// The stored log, read in place through sorted-set ranges.
struct StoredLog<'s, S: Store> {
    store: &'s S,
    key: &'s S::Key,
    total: u64,
    newest: Option<Millis>,
}

/// Opens the log; an absent key is an empty log.
#[inline]
fn load<'s, S: Store>(store: &'s S, key: &'s S::Key) -> Result<StoredLog<'s, S>> {
    let (total, newest) = match store.kind(key) {
        Kind::Empty => (0, None),
        Kind::SortedSet => {
            let newest = check_times(store, key, SLIDING_WHAT)?;
            (store.zcard(key), Some(newest))
        }
        _ => return Err(Error::WrongType),
    };
    Ok(StoredLog {
        store,
        key,
        total,
        newest,
    })
}

impl<S: Store> Log for StoredLog<'_, S> {
    fn count_after(&self, t: Millis) -> u64 {
        if self.total == 0 {
            return 0;
        }
        // Count what left the window (few, as allowed calls trim it) and subtract.
        let gone = self.store.zcount_through(self.key, t);
        self.total.saturating_sub(gone)
    }

    fn nth_after(&self, t: Millis, k: u64) -> Option<Millis> {
        let score = self.store.znth(self.key, after(t), k.saturating_sub(1))?;
        Some(time_between(score))
    }

    fn newest(&self) -> Option<Millis> {
        self.newest
    }
}

impl Runs for Sliding {
    #[inline]
    fn decide<S: Store>(
        store: &S,
        key: &S::Key,
        q: &WindowLimit,
        now: Millis,
        amount: Amount,
    ) -> Result<Outcome<(Option<Millis>, Write)>> {
        let log = load(store, key)?;
        let newest = log.newest();
        let out = SlidingLog::call(log, now, *q, amount);
        Ok(Outcome {
            decision: out.decision,
            write: out.write.map(|w| (newest, w)),
        })
    }

    #[inline]
    fn store<S: Store>(
        store: &mut S,
        key: &S::Key,
        (newest, write): (Option<Millis>, Write),
    ) -> Result<()> {
        match write {
            Write::Append(append) => log(store, key, newest, append),
            Write::Remove(removal) => remove(store, key, removal),
        }
    }
}

/// An allowed call: drops the units that left the window, logs the new ones under
/// fresh sequence numbers, and moves the expiry once anything was logged, even
/// when logging failed half way (so the key never outlives its units).
fn log<S: Store>(
    store: &mut S,
    key: &S::Key,
    newest: Option<Millis>,
    append: Append,
) -> Result<()> {
    if !matches!(store.kind(key), Kind::Empty | Kind::SortedSet) {
        return Err(Error::WrongType);
    }
    let next = next_sequence(store, key, newest);
    store.zremrangebyscore(key, append.drop_through)?;
    let (added, logged) = store.zadd_new(key, append.at, append.units, Sequence(Some(next)));
    if added == 0 {
        return logged;
    }
    let expiry = store.pexpireat(key, append.expires_at);
    logged.and(expiry)
}

/// A refund: drops the units that left the window and the newest units given
/// back, then moves the expiry; gives everything back by deleting the key.
fn remove<S: Store>(store: &mut S, key: &S::Key, removal: Removal) -> Result<()> {
    let Some(expires_at) = removal.expires_at else {
        return store.del(key);
    };
    if store.kind(key) != Kind::SortedSet {
        return Err(Error::WrongType);
    }
    let mut newest: Vec<Vec<u8>> = Vec::new();
    if removal.newest > 0 {
        store.zwalk(key, From::Top, |member, _| {
            newest.push(member.to_vec());
            (newest.len() as u64) < removal.newest
        });
    }
    store.zremrangebyscore(key, removal.drop_through)?;
    if !newest.is_empty() {
        store.zrem(key, &newest)?;
    }
    store.pexpireat(key, expires_at)
}

/// One past the highest sequence number among the newest units (0 for a new log).
/// New units are always logged at or after the newest time, so sequence numbers
/// grow with time and the highest one sits at the newest score.
fn next_sequence<S: Store>(store: &S, key: &S::Key, newest: Option<Millis>) -> u64 {
    let Some(newest) = newest else { return 0 };
    let mut next = 0u64;
    let from = From::Above {
        min: newest as f64,
        exclusive: false,
    };
    store.zwalk(key, from, |member, _| {
        if let Some(seq) = decimal::digits(member) {
            next = next.max(seq.saturating_add(1));
        }
        true
    });
    next
}

/// The sequence numbers new members take, counting up, as decimal members. The
/// last one (u64::MAX, reached only after a foreign member that high) can be taken
/// once; past it the candidates run out and the call fails instead of looping.
struct Sequence(Option<u64>);

impl Iterator for Sequence {
    type Item = Digits;

    fn next(&mut self) -> Option<Digits> {
        let n = self.0?;
        self.0 = n.checked_add(1);
        Some(Digits::of(n))
    }
}

/// A u64 in decimal, on the stack.
struct Digits {
    buf: [u8; 20],
    len: usize,
}

impl Digits {
    fn of(n: u64) -> Digits {
        let mut itoa = itoa::Buffer::new();
        let digits = itoa.format(n).as_bytes();
        let mut buf = [0u8; 20];
        buf[..digits.len()].copy_from_slice(digits);
        Digits {
            buf,
            len: digits.len(),
        }
    }
}

impl AsRef<[u8]> for Digits {
    fn as_ref(&self) -> &[u8] {
        &self.buf[..self.len]
    }
}
