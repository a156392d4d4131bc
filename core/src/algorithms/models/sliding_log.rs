//! Property tests of the sliding log against its plain model.

use super::*;

/// The plainest sliding log: every accepted unit's time, never trimmed.
#[derive(Default)]
pub(super) struct SlidingModel {
    pub(super) accepted: Vec<Millis>,
}

impl SlidingModel {
    pub(super) fn call(&mut self, now: Millis, limit: u64, window: u64, n: u64) -> Decision {
        let w = window as i64;
        let mut counted: Vec<Millis> = self
            .accepted
            .iter()
            .copied()
            .filter(|&t| t > now - w)
            .collect();
        counted.sort_unstable();
        let allowed = counted.len() as u64 + n <= limit;
        if allowed && n > 0 {
            self.accepted.extend(std::iter::repeat_n(now, n as usize));
            counted.extend(std::iter::repeat_n(now, n as usize));
        }
        let retry_after = if allowed {
            RetryAfter::Now
        } else if n > limit {
            RetryAfter::Never
        } else {
            let kth = counted[(counted.len() as u64 + n - limit - 1) as usize];
            RetryAfter::Ms(ms_between(i128::from(kth) + i128::from(w), i128::from(now)))
        };
        Decision {
            allowed,
            limit,
            remaining: limit.saturating_sub(counted.len() as u64),
            retry_after,
            reset_after_ms: counted.last().map_or(0, |&t| {
                ms_between(i128::from(t) + i128::from(w), i128::from(now))
            }),
        }
    }
}

/// Sliding limits stay small: the log holds one entry per unit.
pub(super) fn sliding_limit() -> impl Strategy<Value = u64> {
    prop_oneof![4 => 1u64..=10, 1 => 1u64..=200]
}

pub(super) fn sliding_cost(limit: u64) -> impl Strategy<Value = u64> {
    prop_oneof![4 => 1u64..=3, 1 => Just(0u64), 1 => Just(limit), 1 => Just(limit + 1), 1 => Just(MAX_COUNT)]
}

pub(super) fn sliding_calls(
    limit: u64,
    window: u64,
    step: fn(u64) -> BoxedStrategy<i64>,
) -> impl Strategy<Value = Vec<(i64, u64)>> {
    proptest::collection::vec((step(window), sliding_cost(limit)), 1..48)
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(400))]

    #[test]
    fn sliding_matches_the_model_when_time_moves_forward(
        (limit, window, seq) in (sliding_limit(), duration()).prop_flat_map(|(l, w)| (Just(l), Just(w), sliding_calls(l, w, fwd)))
    ) {
        let (mut log, mut model, mut now) = (VecLog::default(), SlidingModel::default(), START);
        for (step, n) in seq {
            now += step;
            let out = sliding::decide(&log, now, WindowLimit::new(c(limit), d(window)), k(n));
            prop_assert_eq!(out.decision, model.call(now, limit, window, n), "at {} cost {}", now, n);
            check_reply(&out.decision, limit, n);
            if let Some(a) = out.write {
                log.apply(&a);
                // After an allowed call the log holds exactly the units still counted.
                prop_assert!(log.0.iter().all(|&t| t > now - window as i64));
                prop_assert_eq!(a.expires_at, now + window as i64);
            }
        }
    }

    #[test]
    fn sliding_never_admits_more_than_limit_in_any_window_and_retry_is_exact(
        (limit, window, seq) in (1u64..=8, 1u64..=2000).prop_flat_map(|(l, w)| (Just(l), Just(w), sliding_calls(l, w, back)))
    ) {
        let (mut log, mut now) = (VecLog::default(), START);
        let mut all: Vec<Millis> = Vec::new();
        for (step, n) in seq {
            now += step;
            let out = sliding::decide(&log, now, WindowLimit::new(c(limit), d(window)), k(n));
            check_reply(&out.decision, limit, n);
            if let RetryAfter::Ms(wait) = out.decision.retry_after {
                let wait = wait as i64;
                prop_assert!(sliding::decide(&log, now + wait, WindowLimit::new(c(limit), d(window)), k(n)).decision.allowed);
                if wait > 0 {
                    prop_assert!(!sliding::decide(&log, now + wait - 1, WindowLimit::new(c(limit), d(window)), k(n)).decision.allowed);
                }
            }
            if let Some(a) = out.write {
                log.apply(&a);
                all.extend(std::iter::repeat_n(a.at, a.units as usize));
            }
        }
        // Every unit ever logged: no window-long interval holds more than limit.
        all.sort_unstable();
        for (i, &t) in all.iter().enumerate() {
            let inside = all[i..].iter().take_while(|&&u| u < t + window as i64).count() as u64;
            prop_assert!(inside <= limit, "{} units in [{}, {})", inside, t, t + window as i64);
        }
    }
}
