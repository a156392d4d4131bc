//! Property tests of the fixed window against its plain model.

use super::*;

/// The plainest fixed window: a count per epoch window index.
#[derive(Default)]
pub(super) struct FixedModel {
    pub(super) window_index: Option<i64>,
    pub(super) used: u64,
}

impl FixedModel {
    pub(super) fn call(&mut self, now: Millis, limit: u64, window: u64, n: u64) -> Decision {
        let w = window as i64;
        let index = now.div_euclid(w);
        if self.window_index != Some(index) {
            self.used = 0;
        }
        let end = i128::from(index) * i128::from(w) + i128::from(w);
        // A debit can leave `used` far past the limit.
        let allowed = self.used.checked_add(n).is_some_and(|total| total <= limit);
        if allowed && n > 0 {
            self.used += n;
            self.window_index = Some(index);
        }
        let until_end = ms_between(end, i128::from(now));
        Decision {
            allowed,
            limit,
            remaining: limit.saturating_sub(self.used),
            retry_after: if allowed {
                RetryAfter::Now
            } else if n > limit {
                RetryAfter::Never
            } else {
                RetryAfter::Ms(until_end)
            },
            reset_after_ms: if self.used == 0 { 0 } else { until_end },
        }
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(400))]

    #[test]
    fn fixed_matches_the_model_when_time_moves_forward(
        (limit, window, seq) in (count(), duration()).prop_flat_map(|(l, w)| (Just(l), Just(w), calls(l, w, fwd)))
    ) {
        let (mut state, mut model, mut now) = (None::<Counter>, FixedModel::default(), START);
        for (step, n) in seq {
            now += step;
            let out = fixed::decide(state, now, WindowLimit::new(c(limit), d(window)), k(n));
            // A counter the server has evicted is gone.
            let expected = model.call(now, limit, window, n);
            prop_assert_eq!(out.decision, expected, "at {} cost {}", now, n);
            check_reply(&out.decision, limit, n);
            if let Some(s) = out.write { state = Some(s); }
            state = state.filter(|s| s.expires_at > now);
        }
    }

    #[test]
    fn fixed_never_admits_more_than_limit_per_window_even_with_clock_steps_back(
        (limit, window, seq) in (1u64..=10, 1u64..=2000).prop_flat_map(|(l, w)| (Just(l), Just(w), calls(l, w, back)))
    ) {
        let mut state = None::<Counter>;
        let mut now = START;
        // Units admitted, attributed to the window (its end) the counter holds them in.
        let mut per_window = std::collections::HashMap::<Millis, u64>::new();
        for (step, n) in seq {
            now += step;
            let live = state.filter(|s| s.expires_at > now);
            let out = fixed::decide(live, now, WindowLimit::new(c(limit), d(window)), k(n));
            check_reply(&out.decision, limit, n);
            if let Some(s) = out.write {
                prop_assert_eq!(s.expires_at.rem_euclid(window as i64), 0, "expiry on a window edge");
                let fresh = live.is_none_or(|l| l.expires_at != s.expires_at);
                let units = per_window.entry(s.expires_at).or_default();
                if fresh { *units = 0; }
                *units += n;
                prop_assert!(*units <= limit, "{} units in the window ending {}", units, s.expires_at);
                state = Some(s);
            } else {
                state = live;
            }
        }
    }
}
