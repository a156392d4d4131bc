//! RL.SLIDING's state: a native sorted set with one member per accepted unit,
//! score = the unit's server time in ms. Members are per-key sequence numbers
//! (`0`, `1`, …), which listpacks store as small integers: unique even for many units
//! in one millisecond, and a few bytes each.

use std::os::raw::c_int;

use redis_module::raw::{self, RedisModuleString};

use super::{bytes_of, codec, free_string, replicate, Key, Kind};
use crate::algorithms::sliding::{Append, Log};
use crate::algorithms::{Millis, MAX_COUNT};
use crate::error::{Error, Result};

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
        let ok = unsafe {
            rm!(RedisModule_ZsetLastInScoreRange)(key.raw(), f64::NEG_INFINITY, f64::INFINITY, 0, 0)
        };
        Range {
            key,
            started: ok == raw::REDISMODULE_OK as c_int,
        }
    }

    fn at_end(&self) -> bool {
        !self.started || unsafe { rm!(RedisModule_ZsetRangeEndReached)(self.key.raw()) } != 0
    }

    /// The current member (a new string the caller owns) and its score.
    fn current(&self) -> Option<(*mut RedisModuleString, f64)> {
        if self.at_end() {
            return None;
        }
        let mut score = 0.0;
        let member =
            unsafe { rm!(RedisModule_ZsetRangeCurrentElement)(self.key.raw(), &mut score) };
        (!member.is_null()).then_some((member, score))
    }

    /// Moves on; false at the end of the range.
    fn advance(&mut self) -> bool {
        !self.at_end() && unsafe { rm!(RedisModule_ZsetRangeNext)(self.key.raw()) } != 0
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
        if let Some(stop) = unsafe { raw::RedisModule_ZsetRangeStop } {
            unsafe { stop(self.key.raw()) };
        }
    }
}

fn edge_score(key: &Key, edge: Edge) -> Option<f64> {
    let range = match edge {
        Edge::Oldest => Range::scores(key, f64::NEG_INFINITY, f64::INFINITY, false),
        Edge::Newest => Range::last(key),
    };
    let (member, score) = range.current()?;
    free_string(key.ctx(), member);
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
        let (member, score) = range.current()?;
        free_string(self.key.ctx(), member);
        Some(score.ceil() as Millis)
    }

    fn newest(&self) -> Option<Millis> {
        self.newest
    }
}

/// Applies an allowed call: drops units that left the window, logs the new ones,
/// sets the expiry, and propagates `ZREMRANGEBYSCORE` (if anything left), `ZADD`
/// and `PEXPIREAT` with absolute values.
pub fn store(key: &Key, newest: Option<Millis>, append: Append) {
    let next = next_sequence(key, newest);
    if remove_through(key, append.drop_through) > 0 {
        replicate::zremrangebyscore(key, append.drop_through);
    }
    let ctx = key.ctx();
    let score = unsafe { rm!(RedisModule_CreateStringFromLongLong)(ctx, append.at) };
    let mut args: Vec<*mut RedisModuleString> = Vec::with_capacity(2 * append.units as usize);
    let mut seq = next;
    let mut digits = itoa::Buffer::new();
    for _ in 0..append.units {
        // NX so a member someone else added under a number we picked is never moved:
        // take the next number instead.
        loop {
            let name = digits.format(seq).as_bytes();
            seq += 1;
            let member =
                unsafe { rm!(RedisModule_CreateString)(ctx, name.as_ptr().cast(), name.len()) };
            let mut flags = raw::REDISMODULE_ZADD_NX as c_int;
            let ok = unsafe {
                rm!(RedisModule_ZsetAdd)(key.raw(), append.at as f64, member, &mut flags)
            };
            if ok == raw::REDISMODULE_OK as c_int
                && flags & raw::REDISMODULE_ZADD_ADDED as c_int != 0
            {
                args.push(score);
                args.push(member);
                break;
            }
            free_string(key.ctx(), member);
            if ok != raw::REDISMODULE_OK as c_int {
                break;
            }
        }
    }
    replicate::zadd(key, &args);
    for (i, s) in args.into_iter().enumerate() {
        if i % 2 == 1 {
            free_string(key.ctx(), s);
        }
    }
    free_string(key.ctx(), score);
    key.set_expires_at(append.expires_at);
    replicate::pexpireat(key, append.expires_at);
    key.signal_modified();
}

/// One past the highest sequence number among the newest units (0 for a new log).
/// New units are always logged at or after the newest time, so sequence numbers
/// grow with time and the highest one sits at the newest score.
fn next_sequence(key: &Key, newest: Option<Millis>) -> u64 {
    let Some(newest) = newest else { return 0 };
    let mut range = Range::scores(key, newest as f64, f64::INFINITY, false);
    let mut next = 0;
    while let Some((member, _)) = range.current() {
        if let Some(seq) = codec::parse_uint(bytes_of(member)) {
            next = next.max(seq.saturating_add(1));
        }
        free_string(key.ctx(), member);
        if !range.advance() {
            break;
        }
    }
    next
}

/// Removes every unit logged at or before `through`; returns how many.
fn remove_through(key: &Key, through: Millis) -> u64 {
    let mut members = Vec::new();
    {
        let mut range = Range::scores(key, f64::NEG_INFINITY, through as f64, false);
        while let Some((member, _)) = range.current() {
            members.push(member);
            if !range.advance() {
                break;
            }
        }
    }
    for &m in &members {
        let mut deleted: c_int = 0;
        unsafe { rm!(RedisModule_ZsetRem)(key.raw(), m, &mut deleted) };
        free_string(key.ctx(), m);
    }
    members.len() as u64
}
