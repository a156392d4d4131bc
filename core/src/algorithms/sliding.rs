//! Sliding log (the seed's ZREMRANGEBYSCORE / ZADD / ZCARD / EXPIRE).
//!
//! The log holds one timestamp per accepted unit. A unit consumed at `t` counts while
//! `t > now - window`. Only accepted units are logged, so a client hammering a full
//! limiter does not extend its own ban.

use std::marker::PhantomData;

use super::{
    at_plus, ms_until, refunded, takes_refunds, Algorithm, Amount, Cost, Decision, Millis, Outcome,
    Refunds, RetryAfter, WindowLimit,
};

/// Read access to the stored log: unit times in ms, oldest first.
///
/// Implemented over a sorted set by the storage layer and over a plain vector in
/// tests, so the decision never needs the whole log in memory.
pub trait Log {
    /// Number of units logged at a time later than `after`.
    fn count_after(&self, after: Millis) -> u64;
    /// The k-th oldest (1-based) unit logged later than `after`.
    fn nth_after(&self, after: Millis, k: u64) -> Option<Millis>;
    /// The newest unit, if any.
    fn newest(&self) -> Option<Millis>;
}

/// The write an allowed call makes: drop what left the window, log `units` at `at`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Append {
    /// Units logged at or before this time no longer count and are removed.
    pub drop_through: Millis,
    pub at: Millis,
    pub units: u64,
    /// When the newest unit leaves the window, and the key with it.
    pub expires_at: Millis,
}

/// The write a refund makes: drop what left the window, and the newest units.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Removal {
    /// Units logged at or before this time no longer count and are removed.
    pub drop_through: Millis,
    /// How many of the newest counted units are given back.
    pub newest: u64,
    /// When the newest unit left leaves the window, and the key with it; None
    /// when nothing is left (the key is deleted).
    pub expires_at: Option<Millis>,
}

/// What a call writes to the log.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Write {
    Append(Append),
    Remove(Removal),
}

/// When a call on this log is decided, and the oldest time still counted after:
/// a call made while the clock is behind the newest unit is decided as if made at
/// that unit's time, so a clock step back neither frees units early nor logs units
/// that would leave too soon.
fn instant(log: &impl Log, now: Millis, quota: WindowLimit) -> (Millis, Millis) {
    let at = log.newest().map_or(now, |t| t.max(now));
    (at, at.saturating_sub(quota.window.ms_i64()))
}

/// Gives back up to `n` units, the newest first, and drops what left the window
/// as an allowed call does. A log left empty is deleted; one with nothing counted
/// (or no key) changes nothing.
pub fn refund(log: &impl Log, now: Millis, quota: WindowLimit, n: Cost) -> Outcome<Removal> {
    let (_, cutoff) = instant(log, now, quota);
    let counted = log.count_after(cutoff);
    let given = counted.min(n.get());
    let left = counted - given;
    // The newest unit left is the left-th oldest counted one.
    let newest_after = if left > 0 {
        log.nth_after(cutoff, left)
    } else {
        None
    };
    let expires_at = newest_after.map(|t| at_plus(t, quota.window.ms()));
    let store = (given > 0).then_some(Removal {
        drop_through: cutoff,
        newest: given,
        expires_at,
    });
    let limit = quota.limit.get();
    let report = Decision {
        allowed: true,
        limit,
        remaining: limit.saturating_sub(left),
        retry_after: RetryAfter::Now,
        reset_after_ms: expires_at.map_or(0, |t| ms_until(t, now)),
    };
    refunded(store, report)
}

/// The sliding log (RL.SLIDING) over a log of type `L`: a sorted set in the
/// module, a vector in tests.
pub struct SlidingLog<L>(PhantomData<L>);

impl<L: Log> Algorithm for SlidingLog<L> {
    type State = L;
    type Params = WindowLimit;
    type Write = Write;

    fn take(log: L, now: Millis, quota: WindowLimit, cost: Cost) -> Outcome<Write> {
        let out = decide(&log, now, quota, cost);
        Outcome {
            decision: out.decision,
            write: out.write.map(Write::Append),
        }
    }

    /// A log keeps one entry per unit, so it takes no DEBIT (which could grow it
    /// without bound).
    #[inline]
    fn call(log: L, now: Millis, quota: WindowLimit, amount: Amount) -> Outcome<Write> {
        takes_refunds::<Self>((log, now, quota), amount)
    }
}

impl<L: Log> Refunds for SlidingLog<L> {
    fn refund(log: L, now: Millis, quota: WindowLimit, n: Cost) -> Outcome<Write> {
        let out = refund(&log, now, quota, n);
        Outcome {
            decision: out.decision,
            write: out.write.map(Write::Remove),
        }
    }
}

/// A borrowed log reads as the log.
impl<L: Log> Log for &L {
    fn count_after(&self, after: Millis) -> u64 {
        (**self).count_after(after)
    }
    fn nth_after(&self, after: Millis, k: u64) -> Option<Millis> {
        (**self).nth_after(after, k)
    }
    fn newest(&self) -> Option<Millis> {
        (**self).newest()
    }
}

/// Decides one call against the stored log.
pub fn decide(log: &impl Log, now: Millis, quota: WindowLimit, cost: Cost) -> Outcome<Append> {
    let WindowLimit { limit, window } = quota;
    let newest = log.newest();
    let (at, cutoff) = instant(log, now, quota);
    let counted = log.count_after(cutoff);
    let (limit, n) = (limit.get(), cost.get());

    let allowed = counted.checked_add(n).is_some_and(|total| total <= limit);
    let counted_after = if allowed { counted + n } else { counted };
    let store = (allowed && n > 0).then_some(Append {
        drop_through: cutoff,
        at,
        units: n,
        expires_at: at_plus(at, window.ms()),
    });
    let retry_after = if allowed {
        RetryAfter::Now
    } else if n > limit {
        RetryAfter::Never
    } else {
        // The call fits once the k oldest counted units have left the window.
        let k = counted + n - limit;
        let t_k = log.nth_after(cutoff, k).unwrap_or(at);
        RetryAfter::Ms(ms_until(at_plus(t_k, window.ms()), now))
    };
    let newest_after = if store.is_some() { Some(at) } else { newest };
    let reset_after_ms = match newest_after {
        Some(t) if counted_after > 0 => ms_until(at_plus(t, window.ms()), now),
        _ => 0,
    };
    Outcome {
        decision: Decision {
            allowed,
            limit,
            remaining: limit.saturating_sub(counted_after),
            retry_after,
            reset_after_ms,
        },
        write: store,
    }
}

/// A log kept in a sorted vector: what the tests and the fuzzer decide against.
#[doc(hidden)]
#[derive(Debug, Default, Clone)]
pub struct VecLog(pub Vec<Millis>);

#[doc(hidden)]
impl VecLog {
    pub fn apply(&mut self, append: &Append) {
        self.0.retain(|&t| t > append.drop_through);
        self.0
            .extend(std::iter::repeat_n(append.at, append.units as usize));
        self.0.sort_unstable();
    }
}

#[doc(hidden)]
impl VecLog {
    /// Applies any write: an append, or a refund's removal.
    pub fn write(&mut self, write: &Write) {
        match write {
            Write::Append(a) => self.apply(a),
            Write::Remove(r) => {
                self.0.retain(|&t| t > r.drop_through);
                let keep = self.0.len().saturating_sub(r.newest as usize);
                self.0.truncate(keep);
            }
        }
    }
}

impl Log for VecLog {
    fn count_after(&self, after: Millis) -> u64 {
        self.0.iter().filter(|&&t| t > after).count() as u64
    }
    fn nth_after(&self, after: Millis, k: u64) -> Option<Millis> {
        let k = usize::try_from(k).ok()?.checked_sub(1)?;
        self.0.iter().copied().filter(|&t| t > after).nth(k)
    }
    fn newest(&self) -> Option<Millis> {
        self.0.last().copied()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::algorithms::{Count, Interval, WindowLimit};
    use crate::algorithms::{MAX_COUNT, MAX_DURATION_MS};

    fn count(n: u64) -> Count {
        Count::new(n).unwrap()
    }
    fn cost(n: u64) -> Cost {
        Cost::new(n).unwrap()
    }
    fn ms(n: u64) -> Interval {
        Interval::from_ms(n).unwrap()
    }

    fn call(log: &mut VecLog, now: Millis, limit: u64, window: u64, n: u64) -> Decision {
        let out = decide(
            log,
            now,
            WindowLimit::new(count(limit), ms(window)),
            cost(n),
        );
        if let Some(append) = out.write {
            log.apply(&append);
        }
        out.decision
    }

    #[test]
    fn seed_vector_limit_5_per_minute() {
        // docs/commands.md#rlsliding: times in seconds from a start point; (t, allowed, remaining, retry_after_ms).
        let table = [
            (10, true, 4, 0),
            (20, true, 3, 0),
            (30, true, 2, 0),
            (40, true, 1, 0),
            (50, true, 0, 0),
            (55, false, 0, 15_000),
            (121, true, 4, 0),
        ];
        let start = 1_700_000_000_000;
        let mut log = VecLog::default();
        for (t, allowed, remaining, retry) in table {
            let d = call(&mut log, start + t * 1000, 5, 60_000, 1);
            assert_eq!(
                (d.allowed, d.remaining, d.retry_after_ms()),
                (allowed, remaining, retry),
                "at t = {t} s"
            );
        }
        assert_eq!(log.0, vec![start + 121_000], "only counted units remain");
    }

    #[test]
    fn a_unit_counts_until_exactly_window_after_it() {
        let mut log = VecLog::default();
        assert!(call(&mut log, 1000, 1, 500, 1).allowed);
        assert!(!call(&mut log, 1499, 1, 500, 1).allowed);
        assert!(call(&mut log, 1500, 1, 500, 1).allowed);
    }

    #[test]
    fn an_allowed_call_drops_exactly_the_units_that_left_the_window() {
        // Limit 10, window 300: 3 units at 0, 2 at 150 (tests/it/sliding.rs runs the
        // same calls on a server's clock).
        let mut log = VecLog::default();
        assert_eq!(call(&mut log, 0, 10, 300, 3).remaining, 7);
        assert_eq!(call(&mut log, 150, 10, 300, 2).remaining, 5);
        assert_eq!(log.0, vec![0, 0, 0, 150, 150]);
        // At 299 the units at 0 still count; an inspection drops nothing.
        let out = decide(&log, 299, WindowLimit::new(count(10), ms(300)), cost(0));
        assert_eq!((out.decision.remaining, out.write), (5, None));
        // At 300 they have left: the call drops them (through 0) and logs its own.
        let out = decide(&log, 300, WindowLimit::new(count(10), ms(300)), cost(1));
        assert_eq!(
            out.write,
            Some(Append {
                drop_through: 0,
                at: 300,
                units: 1,
                expires_at: 600
            })
        );
        assert_eq!(out.decision.remaining, 7);
        log.apply(&out.write.unwrap());
        assert_eq!(log.0, vec![150, 150, 300]);
        // At 450 the units at 150 go too.
        assert_eq!(call(&mut log, 450, 10, 300, 1).remaining, 8);
        assert_eq!(log.0, vec![300, 450]);
    }

    #[test]
    fn rejected_calls_are_not_logged() {
        let mut log = VecLog::default();
        call(&mut log, 0, 2, 1000, 2);
        for t in 1..100 {
            assert!(!call(&mut log, t, 2, 1000, 1).allowed);
        }
        assert_eq!(log.0, vec![0, 0]);
        assert!(call(&mut log, 1000, 2, 1000, 1).allowed);
    }

    #[test]
    fn retry_after_waits_for_the_kth_oldest_unit() {
        // Units at 0, 100, 200, 300 (limit 4, window 1000). A call of cost 3 at 500
        // needs 3 units to leave: the third oldest (200) leaves at 1200.
        let mut log = VecLog(vec![0, 100, 200, 300]);
        let d = call(&mut log, 500, 4, 1000, 3);
        assert!(!d.allowed);
        assert_eq!(d.retry_after_ms(), 700);
        assert_eq!(d.reset_after_ms, 800, "newest (300) leaves at 1300");
        assert!(!call(&mut log, 1199, 4, 1000, 3).allowed);
        assert!(call(&mut log, 1200, 4, 1000, 3).allowed);
    }

    #[test]
    fn reset_and_expiry_follow_the_newest_unit() {
        let log = VecLog::default();
        let out = decide(&log, 5000, WindowLimit::new(count(3), ms(2000)), cost(2));
        assert_eq!(
            out.write,
            Some(Append {
                drop_through: 3000,
                at: 5000,
                units: 2,
                expires_at: 7000
            })
        );
        assert_eq!(out.decision.reset_after_ms, 2000);
        assert_eq!(out.decision.remaining, 1);
    }

    #[test]
    fn cost_above_limit_is_never_allowed() {
        let out = decide(
            &VecLog::default(),
            0,
            WindowLimit::new(count(3), ms(1000)),
            cost(4),
        );
        assert_eq!(out.decision.retry_after, RetryAfter::Never);
        assert_eq!(out.write, None);
    }

    #[test]
    fn cost_zero_inspects() {
        let log = VecLog(vec![100, 200]);
        let out = decide(&log, 500, WindowLimit::new(count(3), ms(1000)), cost(0));
        assert_eq!(out.write, None);
        assert_eq!(
            out.decision,
            Decision {
                allowed: true,
                limit: 3,
                remaining: 1,
                retry_after: RetryAfter::Now,
                reset_after_ms: 700
            }
        );
        let empty = decide(
            &VecLog::default(),
            500,
            WindowLimit::new(count(3), ms(1000)),
            cost(0),
        );
        assert_eq!(empty.decision.reset_after_ms, 0);
        assert_eq!(empty.decision.remaining, 3);
    }

    #[test]
    fn a_lowered_limit_counts_the_log_against_it() {
        let log = VecLog(vec![100, 200, 300, 400]);
        let out = decide(&log, 500, WindowLimit::new(count(2), ms(1000)), cost(1));
        assert!(!out.decision.allowed);
        assert_eq!(out.decision.remaining, 0);
        // 4 + 1 - 2 = 3: the third oldest (300) must leave, at 1300.
        assert_eq!(out.decision.retry_after_ms(), 800);
    }

    #[test]
    fn a_clock_stepping_back_decides_at_the_newest_unit_time() {
        let mut log = VecLog(vec![1000, 2000]);
        // Limit 2, window 1500: at 2000 the unit at 1000 still counts. The clock steps
        // back to 1200: nothing frees up, and a later allowed call logs at 2000.
        let d = call(&mut log, 1200, 2, 1500, 1);
        assert!(!d.allowed);
        assert_eq!(d.retry_after_ms(), 1300, "the unit at 1000 leaves at 2500");
        let d = call(&mut log, 1300, 3, 1500, 1);
        assert!(d.allowed);
        assert_eq!(log.0, vec![1000, 2000, 2000]);
    }

    #[test]
    fn bounds_do_not_overflow() {
        let log = VecLog(vec![i64::MAX - 1]);
        let out = decide(
            &log,
            0,
            WindowLimit::new(count(MAX_COUNT), ms(MAX_DURATION_MS)),
            cost(MAX_COUNT),
        );
        assert!(!out.decision.allowed);
        assert!(out.decision.reset_after_ms <= MAX_COUNT);
        assert!(out.decision.retry_after_ms() <= MAX_COUNT as i64);
        let out = decide(
            &VecLog::default(),
            i64::MAX,
            WindowLimit::new(count(1), ms(MAX_DURATION_MS)),
            cost(1),
        );
        assert_eq!(out.write.map(|a| a.expires_at), Some(i64::MAX));
    }
}
