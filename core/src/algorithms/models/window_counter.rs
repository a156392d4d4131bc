//! Property tests of the sliding counter against its plain model.

use super::*;

/// The plainest sliding window counter: every accepted unit's window index, and the
/// weighted estimate in exact rationals.
#[derive(Default)]
pub(super) struct CounterModel {
    pub(super) per_window: std::collections::BTreeMap<i64, u64>,
}

impl CounterModel {
    pub(super) fn call(&mut self, now: Millis, limit: u64, window: u64, n: u64) -> Decision {
        let w = window as i64;
        let i = now.div_euclid(w);
        let cur = self.per_window.get(&i).copied().unwrap_or(0);
        let prev = self.per_window.get(&(i - 1)).copied().unwrap_or(0);
        let e = now - i * w;
        let weight = BigRational::new(BigInt::from(w - e), BigInt::from(w));
        let weighted = weight * rat(i128::from(prev));
        // A debit can leave `cur` far past the limit.
        let allowed = n <= limit
            && rat(i128::from(cur) + i128::from(n)) + weighted.clone() <= rat(i128::from(limit));
        let cur_after = if allowed { cur + n } else { cur };
        if allowed && n > 0 {
            self.per_window.insert(i, cur_after);
        }
        let left = rat(i128::from(limit)) - rat(i128::from(cur_after)) - weighted;
        let remaining = if left.is_negative() {
            0
        } else {
            left.floor().to_integer().to_u64().unwrap_or(0)
        };
        let reset = if cur_after > 0 {
            2 * w - e
        } else if prev > 0 {
            w - e
        } else {
            0
        };
        Decision {
            allowed,
            limit,
            remaining: remaining.min(limit),
            // Checked against decide() itself (allowed at it, not 1 ms before).
            retry_after: if allowed {
                RetryAfter::Now
            } else if n > limit {
                RetryAfter::Never
            } else {
                RetryAfter::Ms(0)
            },
            reset_after_ms: reset as u64,
        }
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(400))]

    #[test]
    fn sliding_counter_matches_the_rational_model_when_time_moves_forward(
        (limit, window, seq) in (count(), 1u64..=5000).prop_flat_map(|(l, w)| (Just(l), Just(w), calls(l, w, fwd)))
    ) {
        let q = WindowLimit::new(c(limit), d(window));
        let (mut state, mut model, mut now) = (None::<Counts>, CounterModel::default(), START);
        for (step, n) in seq {
            now += step;
            let out = sliding_counter::decide(state, now, q, k(n));
            let mut expected = model.call(now, limit, window, n);
            if let (RetryAfter::Ms(_), RetryAfter::Ms(got)) = (expected.retry_after, out.decision.retry_after) {
                expected.retry_after = RetryAfter::Ms(got);
                let wait = got as i64;
                prop_assert!(wait >= 1);
                prop_assert!(sliding_counter::decide(state, now + wait, q, k(n)).decision.allowed, "allowed after {}", wait);
                prop_assert!(!sliding_counter::decide(state, now + wait - 1, q, k(n)).decision.allowed, "not before {}", wait);
            }
            prop_assert_eq!(out.decision, expected, "at {} cost {}", now, n);
            check_reply(&out.decision, limit, n);
            if let Some(s) = out.write {
                prop_assert_eq!(s.expires_at, now + out.decision.reset_after_ms as i64);
                state = Some(s.counts);
            }
        }
    }

    #[test]
    fn sliding_counter_replies_hold_when_the_clock_steps_back_or_the_window_changes(
        (limit, seq) in (1u64..=20).prop_flat_map(|l| (Just(l), proptest::collection::vec((any_step(3000), cost(l), 1u64..=3000), 1..48)))
    ) {
        let (mut state, mut now) = (None::<Counts>, START);
        for (step, n, window) in seq {
            now += step;
            let q = WindowLimit::new(c(limit), d(window));
            let out = sliding_counter::decide(state, now, q, k(n));
            check_reply(&out.decision, limit, n);
            if let RetryAfter::Ms(wait) = out.decision.retry_after {
                let wait = wait as i64;
                prop_assert!(wait >= 1);
                prop_assert!(sliding_counter::decide(state, now + wait, q, k(n)).decision.allowed);
            }
            if let Some(s) = out.write {
                prop_assert!(s.counts.current <= limit.max(state.map_or(0, |c| c.current)) + n);
                state = Some(s.counts);
            }
        }
    }
}
