//! Sliding window counter: constant memory at any limit and rate.
//!
//! Two epoch-aligned fixed windows are kept: the current one's count, and the
//! previous one's, weighted by how much of it the sliding window still overlaps
//! (`(W − e) / W`, with `e` the time into the current window). An estimate: it
//! assumes the previous window's units arrived evenly. The comparison is exact
//! integer arithmetic (multiplied through by W): `(cur + n)·W + prev·(W − e) ≤
//! limit·W`, so nothing is floored into an extra unit.

use super::{
    after, at_plus, cap, debited, one_value_algorithm, refunded, Change, Cost, Count, Decision,
    Millis, Outcome, RetryAfter, WindowLimit,
};

/// What the key holds: `"<start> <current> <previous>"`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Counts {
    /// Start (server ms) of the window `current` counts.
    pub start: Millis,
    pub current: u64,
    /// The count of the window before `start`'s.
    pub previous: u64,
}

/// The counts to store after an allowed call, and when the key expires (when
/// the current window stops weighing: start + 2·window).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Stored {
    pub counts: Counts,
    pub expires_at: Millis,
}

/// The stored counts as a call at `now` reads them.
struct View {
    /// When the call is decided: `now`, or the stored window's start if the clock
    /// stepped back behind it.
    at: Millis,
    /// The current window's start (an epoch-aligned multiple of W).
    window_start: Millis,
    cur: u64,
    prev: u64,
}

/// Time never runs backwards for the counter: a call while the clock is behind the
/// stored window is decided at its start, and its durations are measured from the
/// call's own time (so neither is ever too early).
fn view(stored: Option<Counts>, now: Millis, quota: WindowLimit) -> View {
    let w = quota.window.ms_i64();
    let stored = stored.unwrap_or(Counts {
        start: now,
        current: 0,
        previous: 0,
    });
    let at = now.max(stored.start);
    let i = at.div_euclid(w);
    let j = stored.start.div_euclid(w);
    let (cur, prev) = if j == i {
        (stored.current, stored.previous)
    } else if i.checked_sub(j) == Some(1) {
        (0, stored.current)
    } else {
        (0, 0)
    };
    View {
        at,
        window_start: i * w,
        cur,
        prev,
    }
}

/// The counts a write leaves, expiring when the current window stops weighing.
fn store(window_start: Millis, current: u64, previous: u64, quota: WindowLimit) -> Stored {
    Stored {
        counts: Counts {
            start: window_start,
            current,
            previous,
        },
        expires_at: at_plus(window_start, cap(2 * u128::from(quota.window.ms()))),
    }
}

/// Gives back up to `n` units, from the current window first, then the previous
/// one, never below 0. Counts back at (0, 0) are deleted; counts already there
/// (or no key) change nothing.
pub fn refund(
    stored: Option<Counts>,
    now: Millis,
    quota: WindowLimit,
    n: Cost,
) -> Outcome<Change<Stored>> {
    let View {
        window_start,
        cur,
        prev,
        ..
    } = view(stored, now, quota);
    let from_current = cur.min(n.get());
    let from_previous = prev.min(n.get() - from_current);
    let (cur_after, prev_after) = (cur - from_current, prev - from_previous);
    let change = if stored.is_none() || from_current + from_previous == 0 {
        None
    } else if cur_after == 0 && prev_after == 0 {
        Some(Change::Delete)
    } else {
        Some(Change::Set(store(
            window_start,
            cur_after,
            prev_after,
            quota,
        )))
    };
    let after = after(&change, stored, |s| s.counts);
    refunded(change, decide(after, now, quota, Cost::ZERO).decision)
}

/// Charges `n` units after the fact, whatever is left: current += n, beyond the
/// limit if need be (the count stops at 2^64 − 1). Always writes, as an allowed
/// call does; the debt weighs on the next window too, and is gone two windows on.
pub fn debit(stored: Option<Counts>, now: Millis, quota: WindowLimit, n: Count) -> Outcome<Stored> {
    let View {
        window_start,
        cur,
        prev,
        ..
    } = view(stored, now, quota);
    let s = store(window_start, cur.saturating_add(n.get()), prev, quota);
    debited(s, decide(Some(s.counts), now, quota, Cost::ZERO).decision)
}

one_value_algorithm!(
    /// The sliding window counter (RL.SLIDINGCOUNTER).
    SlidingWindowCounter,
    Counts,
    WindowLimit
);

/// Decides one call against the stored counts (None when the key is absent).
pub fn decide(
    stored: Option<Counts>,
    now: Millis,
    quota: WindowLimit,
    cost: Cost,
) -> Outcome<Stored> {
    let View {
        at,
        window_start,
        cur,
        prev,
    } = view(stored, now, quota);
    let lag = u128::try_from(i128::from(at) - i128::from(now)).unwrap_or(0);
    let w = quota.window.ms_i64();
    let e = u128::try_from(at - window_start).unwrap_or(0);
    let (w, limit, n) = (
        u128::try_from(w).unwrap_or(1),
        quota.limit.get(),
        cost.get(),
    );
    let (cur_w, prev_w, limit_w) = (u128::from(cur), u128::from(prev), u128::from(limit));
    let n_w = u128::from(n);
    // Everything below is in "unit·ms": counts multiplied through by W.
    let weighted_prev = prev_w * (w - e);
    let allowed = n <= limit && (cur_w + n_w) * w + weighted_prev <= limit_w * w;
    let cur_after = if allowed { cur + n } else { cur };

    let store = (allowed && n > 0).then(|| store(window_start, cur_after, prev, quota));
    let remaining = limit_w
        .saturating_sub(u128::from(cur_after))
        .saturating_sub(weighted_prev.div_ceil(w));
    let retry_after = if allowed {
        RetryAfter::Now
    } else if n > limit {
        RetryAfter::Never
    } else {
        RetryAfter::Ms(cap(lag + wait(cur_w, prev_w, limit_w, n_w, w, e)))
    };
    let until = if cur_after > 0 {
        2 * w - e
    } else if prev > 0 {
        w - e
    } else {
        0
    };
    Outcome {
        decision: Decision {
            allowed,
            limit,
            remaining: u64::try_from(remaining).unwrap_or(limit).min(limit),
            retry_after,
            reset_after_ms: if until == 0 { 0 } else { cap(lag + until) },
        },
        write: store,
    }
}

/// The smallest wait ≥ 1 ms after which a rejected call of `n` (≤ limit) would be
/// allowed if nothing else happens, `e` ms into the current window.
fn wait(cur: u128, prev: u128, limit: u128, n: u128, w: u128, e: u128) -> u128 {
    let left = w - e;
    // Within this window, once the previous window weighs little enough:
    // prev·(W − e′) ≤ (limit − cur − n)·W.
    let weight_ok = limit
        .checked_sub(cur + n)
        .and_then(|need| (need * w).checked_div(prev));
    if let Some(weight_ok) = weight_ok.filter(|&ok| ok > 0) {
        // The call is rejected, so left > weight_ok: the wait is ≥ 1.
        return left - weight_ok.min(left - 1);
    }
    // Otherwise in the next window, where this window's count is the previous
    // one: cur·(W − e₂) ≤ (limit − n)·W.
    let e2 = if cur + n <= limit {
        0
    } else {
        w - ((limit - n) * w / cur).min(w)
    };
    left + e2
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::algorithms::{Algorithm, Amount};
    use crate::algorithms::{Count, Interval, MAX_COUNT, MAX_DURATION_MS};

    fn quota(limit: u64, window_ms: u64) -> WindowLimit {
        WindowLimit::new(
            Count::new(limit).unwrap(),
            Interval::from_ms(window_ms).unwrap(),
        )
    }
    fn cost(n: u64) -> Cost {
        Cost::new(n).unwrap()
    }
    const MIN: i64 = 60_000;

    /// Previous window 8, current 3, 15 s into a 60 s window (docs/commands.md#rlslidingcounter).
    fn spec_state() -> (Option<Counts>, Millis) {
        let start = 1000 * MIN;
        let counts = Counts {
            start,
            current: 3,
            previous: 8,
        };
        (Some(counts), start + 15_000)
    }

    #[test]
    fn spec_vectors() {
        let (stored, now) = spec_state();
        let out = decide(stored, now, quota(10, 60_000), cost(1));
        assert!(out.decision.allowed, "3 + 1 + 6 = 10");
        assert_eq!(out.decision.remaining, 0);
        let s = out.write.unwrap();
        assert_eq!(
            s.counts,
            Counts {
                start: 1000 * MIN,
                current: 4,
                previous: 8
            }
        );
        assert_eq!(s.expires_at, 1002 * MIN);
        assert_eq!(out.decision.reset_after_ms, 2 * 60_000 - 15_000);
        let out = decide(stored, now, quota(10, 60_000), cost(2));
        assert!(!out.decision.allowed);
        assert_eq!(out.write, None);
        // limit 50, previous 42, current 18, 15 s in: 18 + 1 + 31.5 > 50.
        let counts = Counts {
            start: 1000 * MIN,
            current: 18,
            previous: 42,
        };
        let out = decide(Some(counts), now, quota(50, 60_000), cost(1));
        assert!(!out.decision.allowed, "no flooring of the weighted 31.5");
        assert_eq!(out.decision.remaining, 0, "50 - 18 - ceil(31.5)");
    }

    #[test]
    fn retry_after_is_exact_within_the_window_and_across_it() {
        let (stored, now) = spec_state();
        let q = quota(10, 60_000);
        for n in 1..=10 {
            let d = decide(stored, now, q, cost(n)).decision;
            let RetryAfter::Ms(wait) = d.retry_after else {
                assert!(d.allowed);
                continue;
            };
            let wait = wait as i64;
            assert!(
                decide(stored, now + wait, q, cost(n)).decision.allowed,
                "n {n}"
            );
            assert!(
                !decide(stored, now + wait - 1, q, cost(n)).decision.allowed,
                "n {n}"
            );
        }
    }

    #[test]
    fn windows_roll_over_and_a_key_idle_two_windows_is_fresh() {
        let q = quota(10, 1000);
        let out = decide(None, 5_500, q, cost(4));
        let s = out.write.unwrap();
        assert_eq!(
            s.counts,
            Counts {
                start: 5_000,
                current: 4,
                previous: 0
            }
        );
        assert_eq!(s.expires_at, 7_000);
        // Next window, 250 ms in: previous 4 weighs 3.
        let out = decide(Some(s.counts), 6_250, q, cost(0));
        assert_eq!(out.decision.remaining, 7);
        assert_eq!(
            out.decision.reset_after_ms, 750,
            "previous stops weighing at 7000"
        );
        let out = decide(Some(s.counts), 6_250, q, cost(1));
        assert_eq!(
            out.write.unwrap().counts,
            Counts {
                start: 6_000,
                current: 1,
                previous: 4
            }
        );
        let out = decide(Some(s.counts), 7_000, q, cost(0));
        assert_eq!(
            (out.decision.remaining, out.decision.reset_after_ms),
            (10, 0)
        );
    }

    #[test]
    fn cost_above_limit_and_cost_zero() {
        let out = decide(None, 0, quota(3, 1000), cost(4));
        assert_eq!(out.decision.retry_after, RetryAfter::Never);
        assert_eq!(out.write, None);
        let out = decide(None, 0, quota(3, 1000), cost(0));
        assert_eq!(out.write, None);
        assert_eq!(
            (out.decision.remaining, out.decision.reset_after_ms),
            (3, 0)
        );
    }

    #[test]
    fn a_clock_stepping_back_decides_at_the_window_start_and_waits_from_now() {
        let q = quota(2, 1000);
        let counts = Counts {
            start: 10_000,
            current: 2,
            previous: 0,
        };
        let d = decide(Some(counts), 9_500, q, cost(1)).decision;
        assert!(!d.allowed);
        // Decided at 10 000; allowed at 11 000 + e₂ where cur 2 weighs ≤ 1:
        // 2·(1000 − e₂) ≤ 1000 → e₂ = 500: 11 500, i.e. 2000 ms from 9 500.
        assert_eq!(d.retry_after_ms(), 2000);
        assert!(decide(Some(counts), 11_500, q, cost(1)).decision.allowed);
        assert!(!decide(Some(counts), 11_499, q, cost(1)).decision.allowed);
        assert_eq!(d.reset_after_ms, 2500, "the key's own expiry, 12 000");
    }

    #[test]
    fn a_debit_goes_past_the_limit_and_weighs_until_two_windows_on() {
        let q = quota(10, 1000);
        // 8 taken at 5 250; at the limit, DEBIT 2 takes the last two.
        let taken = decide(None, 5_250, q, cost(8)).write.map(|s| s.counts);
        let out = debit(taken, 5_500, q, Count::new(2).unwrap());
        let full = out.write.unwrap();
        assert_eq!(
            full.counts,
            Counts {
                start: 5_000,
                current: 10,
                previous: 0
            }
        );
        assert_eq!(full.expires_at, 7_000);
        let d = out.decision;
        assert_eq!(
            (d.allowed, d.remaining, d.retry_after_ms(), d.reset_after_ms),
            (true, 0, 0, 1_500)
        );
        // Beyond it: current 30, three times the limit.
        let out = debit(Some(full.counts), 5_600, q, Count::new(20).unwrap());
        let debt = out.write.unwrap().counts;
        assert_eq!((debt.current, debt.previous), (30, 0));
        assert_eq!((out.decision.allowed, out.decision.remaining), (true, 0));
        // The next window still carries it: 30 weighted by (W − e) / W stays
        // above 10 until e > 2/3 W, so COST 1 waits until 6 700 (30·300 ≤ 9·1000).
        let d = decide(Some(debt), 6_000, q, cost(1)).decision;
        assert_eq!((d.allowed, d.retry_after_ms()), (false, 700));
        assert!(!decide(Some(debt), 6_699, q, cost(1)).decision.allowed);
        assert!(decide(Some(debt), 6_700, q, cost(1)).decision.allowed);
        // Two windows on, the key (expiring at 7 000) has forgotten it.
        let d = decide(Some(debt), 7_000, q, cost(0)).decision;
        assert_eq!((d.remaining, d.reset_after_ms), (10, 0));
    }

    #[test]
    fn a_debit_in_a_new_window_keeps_the_previous_count() {
        let q = quota(10, 1000);
        let counts = Counts {
            start: 5_000,
            current: 4,
            previous: 9,
        };
        let out = SlidingWindowCounter::call(
            Some(counts),
            6_500,
            q,
            Amount::Debit(Count::new(3).unwrap()),
        );
        let Some(Change::Set(s)) = out.write else {
            panic!("a debit always writes: {out:?}");
        };
        assert_eq!(
            s.counts,
            Counts {
                start: 6_000,
                current: 3,
                previous: 4
            }
        );
        // 10 − 3 − ceil(4 · 500 / 1000) = 5
        assert_eq!(out.decision.remaining, 5);
        assert_eq!(out.decision.reset_after_ms, 1_500);
    }

    #[test]
    fn debits_at_the_bounds_do_not_overflow() {
        let huge = Counts {
            start: 1_700_000_000_000,
            current: u64::MAX - 3,
            previous: u64::MAX,
        };
        let big = quota(MAX_COUNT, MAX_DURATION_MS);
        let n = Count::new(MAX_COUNT).unwrap();
        let out = debit(Some(huge), 1_700_000_000_000, big, n);
        let s = out.write.unwrap();
        assert_eq!(s.counts.current, u64::MAX, "the count stops at 2^64 - 1");
        assert_eq!(out.decision.remaining, 0);
        assert!(out.decision.reset_after_ms <= MAX_COUNT);
        let out = debit(None, i64::MAX - 1, quota(1, 1), n);
        assert!(out.decision.allowed && out.decision.reset_after_ms <= MAX_COUNT);
        let out = debit(Some(huge), i64::MIN, big, n);
        assert!(out.decision.allowed && out.decision.reset_after_ms <= MAX_COUNT);
    }

    #[test]
    fn bounds_do_not_overflow() {
        let big = quota(MAX_COUNT, MAX_DURATION_MS);
        let out = decide(None, 1_700_000_000_000, big, cost(MAX_COUNT));
        assert!(out.decision.allowed);
        let s = out.write.unwrap();
        let d = decide(Some(s.counts), 1_700_000_000_001, big, cost(1)).decision;
        assert!(!d.allowed);
        assert!(d.retry_after_ms() <= MAX_COUNT as i64);
        let huge = Counts {
            start: i64::MAX,
            current: u64::MAX,
            previous: u64::MAX,
        };
        let d = decide(Some(huge), 0, quota(1, 1), cost(1)).decision;
        assert!(!d.allowed && d.remaining == 0 && d.reset_after_ms <= MAX_COUNT);
        let d = decide(Some(huge), i64::MIN, big, cost(0)).decision;
        assert!(d.reset_after_ms <= MAX_COUNT);
    }
}
