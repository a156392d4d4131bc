//! Fixed window counter (the seed's INCR + EXPIRE).
//!
//! Windows are aligned to the Unix epoch: window i covers [i·W, (i+1)·W). The stored
//! state is the units consumed in the current window and the absolute time the key
//! expires, which is the window's end.

use super::{
    after, debited, ms_until, one_value_algorithm, refunded, Change, Cost, Count, Decision,
    Interval, Millis, Outcome, RetryAfter, WindowLimit,
};

/// What the key holds: the units used and the absolute expiry (window end).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Counter {
    pub used: u64,
    pub expires_at: Millis,
}

/// What a call writes: the counter itself (what it reads, with the expiry it sets).
pub type Stored = Counter;

/// A counter's window: its limit, and where the window holding `now` ends (an
/// epoch-aligned window for RL.FIXED, a calendar period for RL.QUOTA).
pub trait Window: Copy {
    fn limit(self) -> Count;
    fn end(self, now: Millis) -> Millis;
}

impl Window for WindowLimit {
    fn limit(self) -> Count {
        self.limit
    }

    fn end(self, now: Millis) -> Millis {
        window_end(now, self.window)
    }
}

/// End of the epoch-aligned window that contains `now`.
pub fn window_end(now: Millis, window: Interval) -> Millis {
    let w = window.ms_i64();
    now.saturating_sub(now.rem_euclid(w)).saturating_add(w)
}

/// Decides one call against the stored counter (None when the key is absent).
pub fn decide(
    stored: Option<Counter>,
    now: Millis,
    quota: impl Window,
    cost: Cost,
) -> Outcome<Counter> {
    let (limit, end) = (quota.limit(), quota.end(now));
    // A counter whose expiry has passed is empty, even if the server has not yet
    // evicted it.
    let live = stored.filter(|c| c.expires_at > now);
    let used = live.map_or(0, |c| c.used);
    let (limit, n) = (limit.get(), cost.get());

    let allowed = used.checked_add(n).is_some_and(|total| total <= limit);
    let used_after = if allowed { used + n } else { used };
    // A write always expires at the current window's end: after a policy change the
    // counter keeps its count and moves to the current window.
    let store = (allowed && n > 0).then_some(Counter {
        used: used_after,
        expires_at: end,
    });
    // When the counter resets if nothing else happens: the key's own expiry (which
    // a call that writes nothing leaves where it was).
    let resets_at = match (store, live) {
        (Some(c), _) | (None, Some(c)) => c.expires_at,
        (None, None) => end,
    };
    let retry_after = if allowed {
        RetryAfter::Now
    } else if n > limit {
        RetryAfter::Never
    } else {
        RetryAfter::Ms(ms_until(resets_at, now))
    };
    let reset_after_ms = if used_after == 0 {
        0
    } else {
        ms_until(resets_at, now)
    };
    Outcome {
        decision: Decision {
            allowed,
            limit,
            remaining: limit.saturating_sub(used_after),
            retry_after,
            reset_after_ms,
        },
        write: store,
    }
}

/// Gives back up to `n` units: used = max(0, used − n), the key keeping its expiry
/// (the window's end); a counter back at 0 is deleted. An absent or expired counter
/// is already at its initial state: nothing changes.
pub fn refund(
    stored: Option<Counter>,
    now: Millis,
    quota: impl Window,
    n: Cost,
) -> Outcome<Change<Counter>> {
    let change = stored
        .filter(|c| c.expires_at > now && c.used > 0 && n.get() > 0)
        .map(|c| match c.used.saturating_sub(n.get()) {
            0 => Change::Delete,
            used => Change::Set(Counter { used, ..c }),
        });
    let after = after(&change, stored, |c| *c);
    refunded(change, decide(after, now, quota, Cost::ZERO).decision)
}

/// Charges `n` units after the fact, whatever is left: used += n, beyond the limit
/// if need be (the count stops at 2^64 − 1). Always writes; like any allowed call,
/// the key expires at the current window's end, which forgives the debt.
pub fn debit(
    stored: Option<Counter>,
    now: Millis,
    quota: impl Window,
    n: Count,
) -> Outcome<Counter> {
    let used = stored.filter(|c| c.expires_at > now).map_or(0, |c| c.used);
    let counter = Counter {
        used: used.saturating_add(n.get()),
        expires_at: quota.end(now),
    };
    debited(
        counter,
        decide(Some(counter), now, quota, Cost::ZERO).decision,
    )
}

one_value_algorithm!(
    /// The fixed window counter (RL.FIXED).
    FixedWindow,
    Counter,
    WindowLimit
);

#[cfg(test)]
mod tests {
    use super::*;
    use crate::algorithms::{Algorithm, Amount};
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

    /// Runs calls against one key the way the command does: store what is returned.
    fn run(calls: &[(Millis, u64)], limit: u64, window: u64) -> Vec<(Decision, Option<Counter>)> {
        let mut state = None;
        calls
            .iter()
            .map(|&(now, n)| {
                let out = decide(
                    state,
                    now,
                    WindowLimit::new(count(limit), ms(window)),
                    cost(n),
                );
                if let Some(s) = out.write {
                    state = Some(s);
                }
                (out.decision, state)
            })
            .collect()
    }

    #[test]
    fn windows_are_aligned_to_the_epoch() {
        assert_eq!(window_end(0, ms(60_000)), 60_000);
        assert_eq!(window_end(59_999, ms(60_000)), 60_000);
        assert_eq!(window_end(60_000, ms(60_000)), 120_000);
        assert_eq!(window_end(1_700_000_012_345, ms(1000)), 1_700_000_013_000);
        assert_eq!(window_end(5, ms(1)), 6);
    }

    #[test]
    fn admits_limit_units_per_window_then_rejects_until_its_end() {
        // limit 3, window 10 s, calls at 1 s steps from t = 60 s (window [60, 70)).
        let rows = run(
            &[
                (60_000, 1),
                (61_000, 1),
                (62_000, 1),
                (63_000, 1),
                (69_999, 1),
            ],
            3,
            10_000,
        );
        let fields: Vec<_> = rows
            .iter()
            .map(|(d, _)| (d.allowed, d.remaining, d.retry_after_ms(), d.reset_after_ms))
            .collect();
        assert_eq!(
            fields,
            vec![
                (true, 2, 0, 10_000),
                (true, 1, 0, 9_000),
                (true, 0, 0, 8_000),
                (false, 0, 7_000, 7_000),
                (false, 0, 1, 1),
            ]
        );
        assert_eq!(
            rows[2].1,
            Some(Counter {
                used: 3,
                expires_at: 70_000
            })
        );
    }

    #[test]
    fn a_call_at_the_window_end_counts_in_the_new_window() {
        let rows = run(&[(60_000, 3), (70_000, 1)], 3, 10_000);
        let (d, stored) = rows[1];
        assert!(d.allowed);
        assert_eq!(d.remaining, 2);
        assert_eq!(
            stored,
            Some(Counter {
                used: 1,
                expires_at: 80_000
            })
        );
    }

    #[test]
    fn cost_consumes_several_units_and_is_all_or_nothing() {
        let rows = run(&[(0, 4), (1, 2), (2, 1)], 5, 1000);
        assert_eq!(rows[0].0.remaining, 1);
        assert!(!rows[1].0.allowed, "4 + 2 > 5 must be rejected whole");
        assert_eq!(rows[1].0.remaining, 1);
        assert_eq!(rows[1].1.map(|c| c.used), Some(4));
        assert!(rows[2].0.allowed);
        assert_eq!(rows[2].0.remaining, 0);
    }

    #[test]
    fn cost_above_limit_never_succeeds_and_writes_nothing() {
        let out = decide(None, 0, WindowLimit::new(count(5), ms(1000)), cost(6));
        assert_eq!(out.write, None);
        assert!(!out.decision.allowed);
        assert_eq!(out.decision.retry_after, RetryAfter::Never);
        assert_eq!(out.decision.remaining, 5);
        assert_eq!(out.decision.reset_after_ms, 0);
    }

    #[test]
    fn cost_zero_reports_state_and_writes_nothing() {
        let empty = decide(None, 500, WindowLimit::new(count(5), ms(1000)), cost(0));
        assert_eq!(empty.write, None);
        assert_eq!(
            empty.decision,
            Decision {
                allowed: true,
                limit: 5,
                remaining: 5,
                retry_after: RetryAfter::Now,
                reset_after_ms: 0
            }
        );
        let stored = Counter {
            used: 2,
            expires_at: 1000,
        };
        let used = decide(
            Some(stored),
            500,
            WindowLimit::new(count(5), ms(1000)),
            cost(0),
        );
        assert_eq!(used.write, None);
        assert_eq!(used.decision.remaining, 3);
        assert_eq!(used.decision.reset_after_ms, 500);
    }

    #[test]
    fn a_lowered_limit_keeps_the_count_and_remaining_stays_in_range() {
        let stored = Counter {
            used: 8,
            expires_at: 1000,
        };
        let out = decide(
            Some(stored),
            100,
            WindowLimit::new(count(5), ms(1000)),
            cost(1),
        );
        assert!(!out.decision.allowed);
        assert_eq!(out.decision.remaining, 0);
        assert_eq!(out.decision.retry_after_ms(), 900);
        let inspect = decide(
            Some(stored),
            100,
            WindowLimit::new(count(5), ms(1000)),
            cost(0),
        );
        assert!(
            !inspect.decision.allowed,
            "used > limit even before this call"
        );
        assert_eq!(inspect.decision.remaining, 0);
    }

    #[test]
    fn a_longer_window_keeps_the_count_and_moves_the_expiry_to_its_end() {
        // Written under a 1 s window at t = 500 (expires 1000); now the window is 1 min.
        let stored = Counter {
            used: 2,
            expires_at: 1000,
        };
        let out = decide(
            Some(stored),
            600,
            WindowLimit::new(count(5), ms(60_000)),
            cost(1),
        );
        assert_eq!(
            out.write,
            Some(Counter {
                used: 3,
                expires_at: 60_000
            })
        );
    }

    #[test]
    fn a_shorter_window_keeps_the_count_and_expires_at_the_current_window_end() {
        // Written under a 1 h window; now 1 s. The counter expires at the current
        // second's end, not an hour later.
        let stored = Counter {
            used: 2,
            expires_at: 3_600_000,
        };
        let out = decide(
            Some(stored),
            1_500,
            WindowLimit::new(count(5), ms(1000)),
            cost(1),
        );
        assert_eq!(
            out.write,
            Some(Counter {
                used: 3,
                expires_at: 2_000
            })
        );
    }

    #[test]
    fn a_shorter_window_moves_the_expiry_even_to_one_window_before_the_old_end() {
        // Written under a 2 s window at [0, 2000); now 1 s windows, at 500: the counter
        // keeps its count and expires at 1000, not 2000.
        let stored = Counter {
            used: 2,
            expires_at: 2_000,
        };
        let out = decide(
            Some(stored),
            500,
            WindowLimit::new(count(5), ms(1000)),
            cost(1),
        );
        assert_eq!(
            out.write,
            Some(Counter {
                used: 3,
                expires_at: 1_000
            })
        );
        assert_eq!(out.decision.reset_after_ms, 500);
    }

    #[test]
    fn a_rejected_call_waits_for_the_counter_s_own_expiry() {
        // The counter expires at 3000 (a longer window, or a clock that stepped back):
        // nothing is written, so it is full until 3000, not until 2000.
        let stored = Counter {
            used: 5,
            expires_at: 3_000,
        };
        let out = decide(
            Some(stored),
            1_900,
            WindowLimit::new(count(5), ms(1000)),
            cost(1),
        );
        assert!(!out.decision.allowed);
        assert_eq!(out.decision.retry_after_ms(), 1_100);
        assert_eq!(out.decision.reset_after_ms, 1_100);
        assert!(
            decide(
                Some(stored),
                3_000,
                WindowLimit::new(count(5), ms(1000)),
                cost(1)
            )
            .decision
            .allowed
        );
    }

    #[test]
    fn an_expired_but_not_yet_evicted_counter_is_empty() {
        let stale = Counter {
            used: 5,
            expires_at: 1000,
        };
        let out = decide(
            Some(stale),
            1000,
            WindowLimit::new(count(5), ms(1000)),
            cost(1),
        );
        assert!(out.decision.allowed);
        assert_eq!(
            out.write,
            Some(Counter {
                used: 1,
                expires_at: 2000
            })
        );
    }

    fn fields(d: &Decision) -> (bool, u64, u64, i64, u64) {
        (
            d.allowed,
            d.limit,
            d.remaining,
            d.retry_after_ms(),
            d.reset_after_ms,
        )
    }

    #[test]
    fn a_debit_goes_past_the_limit_into_debt_that_the_window_end_forgives() {
        // limit 5, window 10 s, in the window [60 s, 70 s).
        let q = WindowLimit::new(count(5), ms(10_000));
        let taken = decide(None, 61_000, q, cost(4)).write;
        // At the limit: one unit left, DEBIT 1 takes it.
        let out = debit(taken, 62_000, q, count(1));
        let at_limit = Counter {
            used: 5,
            expires_at: 70_000,
        };
        assert_eq!(out.write, Some(at_limit));
        assert_eq!(fields(&out.decision), (true, 5, 0, 0, 8_000));
        // Beyond it: allowed all the same, remaining 0, the key still ends with the window.
        let out = debit(Some(at_limit), 63_000, q, count(7));
        let in_debt = Counter {
            used: 12,
            expires_at: 70_000,
        };
        assert_eq!(out.write, Some(in_debt));
        assert_eq!(fields(&out.decision), (true, 5, 0, 0, 7_000));
        // Later calls are rejected until the window ends ...
        let d = decide(Some(in_debt), 69_999, q, cost(1)).decision;
        assert_eq!(fields(&d), (false, 5, 0, 1, 1));
        assert_eq!(
            fields(&decide(Some(in_debt), 65_000, q, cost(0)).decision).2,
            0
        );
        // ... and the next window starts afresh.
        let d = decide(Some(in_debt), 70_000, q, cost(1)).decision;
        assert_eq!(fields(&d), (true, 5, 4, 0, 10_000));
    }

    #[test]
    fn a_debit_on_an_absent_or_expired_counter_starts_the_window() {
        let q = WindowLimit::new(count(5), ms(1000));
        let stale = Counter {
            used: 5,
            expires_at: 1000,
        };
        for stored in [None, Some(stale)] {
            let out = debit(stored, 1_250, q, count(2));
            assert_eq!(
                out.write,
                Some(Counter {
                    used: 2,
                    expires_at: 2000
                })
            );
            assert_eq!(fields(&out.decision), (true, 5, 3, 0, 750));
        }
        // Through call(): a Debit is always a store.
        let out = FixedWindow::call(None, 0, q, Amount::Debit(count(9)));
        assert!(matches!(out.write, Some(Change::Set(c)) if c.used == 9));
        assert!(out.decision.allowed);
    }

    #[test]
    fn debits_at_the_bounds_do_not_overflow() {
        let q = WindowLimit::new(count(MAX_COUNT), ms(MAX_DURATION_MS));
        let huge = Counter {
            used: u64::MAX - 1,
            expires_at: i64::MAX,
        };
        let out = debit(Some(huge), i64::MAX - 5, q, count(MAX_COUNT));
        let c = out.write.unwrap();
        assert_eq!(c.used, u64::MAX, "the count stops at 2^64 - 1");
        assert_eq!(c.expires_at, i64::MAX);
        assert_eq!(out.decision.remaining, 0);
        assert!(out.decision.reset_after_ms <= MAX_COUNT);
        let out = debit(
            None,
            i64::MIN + 1,
            WindowLimit::new(count(1), ms(1)),
            count(MAX_COUNT),
        );
        assert_eq!(out.write.map(|c| c.used), Some(MAX_COUNT));
        assert_eq!(fields(&out.decision), (true, 1, 0, 0, 1));
    }

    #[test]
    fn bounds_do_not_overflow() {
        let big = count(MAX_COUNT);
        let out = decide(
            None,
            i64::MAX - 5,
            WindowLimit::new(big, ms(MAX_DURATION_MS)),
            cost(MAX_COUNT),
        );
        assert!(out.decision.allowed);
        assert_eq!(out.decision.remaining, 0);
        let again = decide(
            out.write,
            i64::MAX - 4,
            WindowLimit::new(big, ms(MAX_DURATION_MS)),
            cost(MAX_COUNT),
        );
        assert!(!again.decision.allowed);
        let huge = Counter {
            used: u64::MAX,
            expires_at: i64::MAX,
        };
        let out = decide(Some(huge), 0, WindowLimit::new(big, ms(1)), cost(MAX_COUNT));
        assert!(!out.decision.allowed);
        assert_eq!(out.decision.remaining, 0);
        assert!(out.decision.reset_after_ms <= MAX_COUNT);
        let out = decide(
            None,
            i64::MIN + 1,
            WindowLimit::new(count(1), ms(MAX_DURATION_MS)),
            cost(1),
        );
        assert!(out.decision.allowed);
    }
}
