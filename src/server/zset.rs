//! A sorted-set key: ranges over its scores read in place (stopped when dropped),
//! and adding, removing and scoring one member.

use std::os::raw::c_int;

use redis_module::raw;

use super::api::OK;
use super::key::Key;
use super::string::ServerString;

/// How [`Key::zset_add`] treats a member that is already there.
#[derive(Clone, Copy, PartialEq, Eq)]
pub enum IfPresent {
    /// Move it to the new score (plain `ZADD`).
    Update,
    /// Leave it where it is (`ZADD NX`).
    Keep,
}

/// What [`Key::zset_add`] did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Zadd {
    /// The member is new.
    Added,
    /// The member was there, and now has the new score.
    Updated,
    /// The member was there, and is as it was.
    Unchanged,
}

impl Key {
    /// Adds `member` at `score`; None if the server refused (another type, a NaN
    /// score), in which case nothing changed.
    pub fn zset_add(
        &self,
        score: f64,
        member: &ServerString,
        if_present: IfPresent,
    ) -> Option<Zadd> {
        self.stop_range();
        let mut flags = match if_present {
            IfPresent::Update => 0,
            IfPresent::Keep => raw::REDISMODULE_ZADD_NX as c_int,
        };
        // SAFETY: the key is open; `member` is a live string; `flags` is a valid
        // in/out-pointer. The server checks the type and the access mode.
        let status =
            unsafe { rm!(RedisModule_ZsetAdd)(self.raw(), score, member.ptr(), &mut flags) };
        if status != OK {
            return None;
        }
        Some(if flags & raw::REDISMODULE_ZADD_ADDED as c_int != 0 {
            Zadd::Added
        } else if flags & raw::REDISMODULE_ZADD_UPDATED as c_int != 0 {
            Zadd::Updated
        } else {
            Zadd::Unchanged
        })
    }

    /// Removes `member` (a member that is not there is no failure); false if the
    /// server refused, in which case nothing changed. A set left empty is deleted.
    #[must_use]
    pub fn zset_remove(&self, member: &ServerString) -> bool {
        self.stop_range();
        let mut deleted: c_int = 0;
        // SAFETY: the key is open; `member` is a live string; `deleted` is a valid
        // out-pointer. The server checks the type and the access mode.
        unsafe { rm!(RedisModule_ZsetRem)(self.raw(), member.ptr(), &mut deleted) == OK }
    }

    /// The score of `member`; None when the key has no such member (or is not a
    /// sorted set).
    pub fn zset_score(&self, member: &ServerString) -> Option<f64> {
        let mut score = 0.0;
        // SAFETY: the key is open; `member` is a live string; `score` is a valid
        // out-pointer. A missing member or key is an error status, not undefined.
        let status = unsafe { rm!(RedisModule_ZsetScore)(self.raw(), member.ptr(), &mut score) };
        (status == OK).then_some(score)
    }
}

/// A range over the scores of one sorted-set key, stopped when dropped. A write to
/// the key ends it: from then on it reads as ended (storage reads all it needs,
/// then writes, so none of its ranges sees that).
pub struct Range<'k> {
    key: &'k Key,
    started: bool,
}

impl<'k> Range<'k> {
    /// Scores in `(min, max]` when `min_exclusive`, else `[min, max]`, from the
    /// lowest. Empty on an empty key or one of another type.
    pub fn scores(key: &'k Key, min: f64, max: f64, min_exclusive: bool) -> Self {
        // SAFETY: the key is open (it outlives the range, which stops on drop); a
        // range on an empty or non-zset key is refused, not undefined.
        let status = unsafe {
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
            started: status == OK,
        }
    }

    /// Every score, from the highest.
    pub fn last(key: &'k Key) -> Self {
        // SAFETY: as in `scores`.
        let status = unsafe {
            rm!(RedisModule_ZsetLastInScoreRange)(key.raw(), f64::NEG_INFINITY, f64::INFINITY, 0, 0)
        };
        Range {
            key,
            started: status == OK,
        }
    }

    fn at_end(&self) -> bool {
        // SAFETY: the key is open and its range was started.
        !self.started || unsafe { rm!(RedisModule_ZsetRangeEndReached)(self.key.raw()) } != 0
    }

    /// The current member and its score.
    pub fn current(&self) -> Option<(ServerString, f64)> {
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
    pub fn advance(&mut self) -> bool {
        // SAFETY: the key is open and its range started and not at its end.
        !self.at_end() && unsafe { rm!(RedisModule_ZsetRangeNext)(self.key.raw()) } != 0
    }

    /// Moves back (in a range started from the last element); false at its start.
    pub fn retreat(&mut self) -> bool {
        // SAFETY: the key is open and its range started and not at its end.
        !self.at_end() && unsafe { rm!(RedisModule_ZsetRangePrev)(self.key.raw()) } != 0
    }

    /// Counts the remaining elements without materialising members.
    pub fn count(mut self) -> u64 {
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
        self.key.stop_range();
    }
}
