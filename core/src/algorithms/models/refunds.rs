//! Compiled only for tests (a submodule of `models`, which is `#[cfg(test)]`).
//! REFUND against the reference models: random sequences that mix taking and
//! giving back, each algorithm's reply equal to its model's, and the writes a
//! refund makes: nothing when nothing changes, a delete exactly when the limiter
//! is back to its initial state, never beyond it.

use super::*;
use crate::algorithms::sliding::Log;
use crate::algorithms::Algorithm;
use crate::algorithms::{Amount, Change};

/// A call: take (`COST n`) or give back (`REFUND n`), about one in four a refund.
fn ops(
    limit: u64,
    window: u64,
    cost: fn(u64) -> BoxedStrategy<u64>,
) -> impl Strategy<Value = Vec<(i64, u64, bool)>> {
    proptest::collection::vec(
        (
            forward_step(window),
            cost(limit),
            prop::bool::weighted(0.25),
        ),
        1..48,
    )
}

fn any_cost(limit: u64) -> BoxedStrategy<u64> {
    cost(limit).boxed()
}

fn small_cost(limit: u64) -> BoxedStrategy<u64> {
    sliding_cost(limit).boxed()
}

fn amount(n: u64, refund: bool) -> Amount {
    if refund {
        Amount::Refund(k(n))
    } else {
        Amount::Take(k(n))
    }
}

/// A refund's reply is the state after it, allowed and with nothing to wait for.
fn refunded(mut d: Decision) -> Decision {
    d.allowed = true;
    d.retry_after = RetryAfter::Now;
    d
}

/// What every write must satisfy: a delete leaves the initial state, a refund of
/// nothing (or on the initial state) writes nothing.
fn check_write<S>(
    change: &Option<Change<S>>,
    d: &Decision,
    refund: bool,
    n: u64,
    was_initial: bool,
) {
    if matches!(change, Some(Change::Delete)) {
        assert!(refund, "only a refund deletes");
        assert_eq!((d.remaining, d.reset_after_ms), (d.limit, 0), "{d:?}");
    }
    if refund && (n == 0 || was_initial) {
        assert!(
            change.is_none(),
            "a refund that changes nothing writes nothing"
        );
    }
}

impl FixedModel {
    fn refund(&mut self, now: Millis, limit: u64, window: u64, n: u64) -> Decision {
        if self.window_index == Some(now.div_euclid(window as i64)) {
            self.used = self.used.saturating_sub(n);
        }
        refunded(self.call(now, limit, window, 0))
    }
}

impl SlidingModel {
    fn refund(&mut self, now: Millis, limit: u64, window: u64, n: u64) -> Decision {
        self.accepted.retain(|&t| t > now - window as i64);
        self.accepted.sort_unstable();
        let keep = self.accepted.len().saturating_sub(n as usize);
        self.accepted.truncate(keep);
        refunded(self.call(now, limit, window, 0))
    }
}

impl BucketModel {
    fn refund(&mut self, now: Millis, capacity: u64, tokens: u64, period: u64, n: u64) -> Decision {
        let cap = rat(i128::from(capacity));
        let per_ms = BigRational::new(BigInt::from(tokens), BigInt::from(period));
        let level = match self.ts {
            None => cap.clone(),
            Some(ts) => (self.level.clone().min(cap.clone())
                + per_ms.clone() * rat(i128::from((now - ts).max(0))))
            .min(cap.clone()),
        };
        let after = (level.clone() + rat(i128::from(n))).min(cap.clone());
        if after >= cap {
            // Full again: the key is gone, a missing key is a full bucket.
            self.ts = None;
        } else if after > level {
            let micros = rat(1_000_000);
            self.level = if self.round {
                (after.clone() * micros.clone()).floor() / micros
            } else {
                after.clone()
            };
            self.ts = Some(now);
        }
        Decision {
            allowed: true,
            limit: capacity,
            remaining: after.floor().to_integer().to_u64().unwrap_or(0),
            retry_after: RetryAfter::Now,
            reset_after_ms: if after >= cap {
                0
            } else {
                ceil_ms(&((cap - after) / per_ms))
            },
        }
    }
}

impl CounterModel {
    fn refund(&mut self, now: Millis, limit: u64, window: u64, n: u64) -> Decision {
        let i = now.div_euclid(window as i64);
        let mut left = n;
        for index in [i, i - 1] {
            if let Some(units) = self.per_window.get_mut(&index) {
                let given = (*units).min(left);
                *units -= given;
                left -= given;
            }
        }
        refunded(self.call(now, limit, window, 0))
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(300))]

    #[test]
    fn fixed_with_refunds_matches_the_model(
        (limit, window, seq) in (count(), duration()).prop_flat_map(|(l, w)| (Just(l), Just(w), ops(l, w, any_cost)))
    ) {
        let q = Quota::new(c(limit), d(window));
        let (mut state, mut model, mut now) = (None::<Counter>, FixedModel::default(), START);
        for (step, n, refund) in seq {
            now += step;
            let initial = state.is_none_or(|s| s.used == 0);
            let out = fixed::FixedWindow::call(state, now, q, amount(n, refund));
            let want = if refund { model.refund(now, limit, window, n) } else { model.call(now, limit, window, n) };
            prop_assert_eq!(out.decision, want, "at {} {} {}", now, if refund { "REFUND" } else { "COST" }, n);
            check_reply(&out.decision, limit, if refund { 0 } else { n });
            check_write(&out.store, &out.decision, refund, n, initial);
            match out.store {
                Some(Change::Store(s)) => state = Some(s),
                Some(Change::Delete) => state = None,
                None => {}
            }
            state = state.filter(|s| s.expires_at > now);
        }
    }

    #[test]
    fn sliding_with_refunds_matches_the_model(
        (limit, window, seq) in (sliding_limit(), duration()).prop_flat_map(|(l, w)| (Just(l), Just(w), ops(l, w, small_cost)))
    ) {
        let q = Quota::new(c(limit), d(window));
        let (mut log, mut model, mut now) = (VecLog::default(), SlidingModel::default(), START);
        for (step, n, refund) in seq {
            now += step;
            let counted = log.count_after(now - window as i64);
            let out = sliding::SlidingLog::call(&log, now, q, amount(n, refund));
            let want = if refund { model.refund(now, limit, window, n) } else { model.call(now, limit, window, n) };
            prop_assert_eq!(out.decision, want, "at {} {} {}", now, if refund { "REFUND" } else { "COST" }, n);
            check_reply(&out.decision, limit, if refund { 0 } else { n });
            if refund && (n == 0 || counted == 0) {
                prop_assert!(out.store.is_none());
            }
            if let Some(w) = out.store {
                log.write(&w);
                // After any write the log holds exactly the units still counted.
                prop_assert!(log.0.iter().all(|&t| t > now - window as i64));
                if let sliding::Write::Remove(r) = w {
                    prop_assert_eq!(r.expires_at.is_none(), log.0.is_empty());
                    prop_assert_eq!(r.expires_at, log.0.last().map(|&t| t + window as i64));
                }
            }
        }
    }

    #[test]
    fn bucket_with_refunds_matches_the_exact_model(
        (capacity, tokens, period, seq) in (count(), count(), duration())
            .prop_flat_map(|(c, t, p)| (Just(c), Just(t), Just(p), ops(c, p, any_cost)))
    ) {
        let rate = Rate { capacity: c(capacity), tokens: c(tokens), period: d(period) };
        let (mut state, mut model, mut now) = (None::<State>, BucketModel::new(capacity), START);
        for (step, n, refund) in seq {
            now += step;
            let full_now = bucket::decide(state, now, rate, k(0)).decision.reset_after_ms == 0;
            let out = bucket::TokenBucket::call(state, now, rate, amount(n, refund));
            let want = if refund { model.refund(now, capacity, tokens, period, n) } else { model.call(now, capacity, tokens, period, n) };
            prop_assert_eq!(out.decision, want, "at {} {} {}", now, if refund { "REFUND" } else { "COST" }, n);
            check_reply(&out.decision, capacity, if refund { 0 } else { n });
            check_write(&out.store, &out.decision, refund, n, full_now);
            match out.store {
                Some(Change::Store(s)) => {
                    prop_assert_eq!(s.expires_at, now + out.decision.reset_after_ms as i64);
                    state = Some(s.bucket);
                }
                Some(Change::Delete) => state = None,
                None => {}
            }
        }
    }

    #[test]
    fn gcra_with_refunds_decides_exactly_as_the_exact_bucket_when_t_is_exact(
        (capacity, (tokens, period), seq) in (count(), exact_rate())
            .prop_flat_map(|(c, r)| (Just(c), Just(r), ops(c, r.1, any_cost)))
    ) {
        let rate = Rate { capacity: c(capacity), tokens: c(tokens), period: d(period) };
        let emission = Emission::new(rate).unwrap();
        let (mut state, mut model, mut now) = (None::<Tat>, BucketModel::exact(capacity), START);
        for (step, n, refund) in seq {
            now += step;
            let initial = state.is_none_or(|t| t.0 <= now as u128 * 1_000_000);
            let out = gcra::Gcra::call(state, now, emission, amount(n, refund));
            let want = if refund { model.refund(now, capacity, tokens, period, n) } else { model.call(now, capacity, tokens, period, n) };
            prop_assert_eq!(out.decision, want, "at {} {} {}", now, if refund { "REFUND" } else { "COST" }, n);
            check_write(&out.store, &out.decision, refund, n, initial);
            match out.store {
                Some(Change::Store(s)) => {
                    prop_assert_eq!(s.expires_at, now + out.decision.reset_after_ms as i64);
                    state = Some(s.tat);
                }
                Some(Change::Delete) => state = None,
                None => {}
            }
        }
    }

    #[test]
    fn sliding_counter_with_refunds_matches_the_rational_model(
        (limit, window, seq) in (count(), 1u64..=5000).prop_flat_map(|(l, w)| (Just(l), Just(w), ops(l, w, any_cost)))
    ) {
        let q = Quota::new(c(limit), d(window));
        let (mut state, mut model, mut now) = (None::<Counts>, CounterModel::default(), START);
        for (step, n, refund) in seq {
            now += step;
            let initial = sliding_counter::decide(state, now, q, k(0)).decision.reset_after_ms == 0;
            let out = sliding_counter::SlidingWindowCounter::call(state, now, q, amount(n, refund));
            let mut want = if refund { model.refund(now, limit, window, n) } else { model.call(now, limit, window, n) };
            if let (RetryAfter::Ms(_), RetryAfter::Ms(got)) = (want.retry_after, out.decision.retry_after) {
                // The model does not compute waits; decide() is checked against itself.
                want.retry_after = RetryAfter::Ms(got);
                prop_assert!(sliding_counter::decide(state, now + got as i64, q, k(n)).decision.allowed);
            }
            prop_assert_eq!(out.decision, want, "at {} {} {}", now, if refund { "REFUND" } else { "COST" }, n);
            check_write(&out.store, &out.decision, refund, n, initial);
            match out.store {
                Some(Change::Store(s)) => state = Some(s.counts),
                Some(Change::Delete) => state = None,
                None => {}
            }
        }
    }
}

#[test]
fn a_refund_never_goes_beyond_the_initial_state() {
    let q = Quota::new(c(5), d(1000));
    // Three taken, ten given back: the counter is deleted, not negative.
    let taken = fixed::decide(None, START, q, k(3)).store;
    let out = fixed::refund(taken, START + 1, q, k(10));
    assert_eq!(out.store, Some(Change::Delete));
    assert_eq!(
        (out.decision.remaining, out.decision.reset_after_ms),
        (5, 0)
    );
    // Nothing taken: nothing to give back, nothing written.
    assert_eq!(fixed::refund(None, START, q, k(10)).store, None);

    let rate = Rate {
        capacity: c(5),
        tokens: c(1),
        period: d(1000),
    };
    let half = bucket::decide(None, START, rate, k(2))
        .store
        .map(|s| s.bucket);
    let out = bucket::refund(half, START + 500, rate, k(1));
    // 3 + 0.5 refilled + 1 given back = 4.5 tokens.
    assert_eq!(out.decision.remaining, 4);
    assert_eq!(out.decision.reset_after_ms, 500);
    assert!(matches!(out.store, Some(Change::Store(s)) if s.bucket.level_micros == 4_500_000));
    assert_eq!(
        bucket::refund(half, START + 500, rate, k(2)).store,
        Some(Change::Delete)
    );

    let e = Emission::new(rate).unwrap();
    let tat = gcra::decide(None, START, e, k(3)).store.map(|s| s.tat);
    let out = gcra::refund(tat, START, e, k(1));
    assert!(
        matches!(out.store, Some(Change::Store(s)) if s.tat.0 == (START as u128 + 2000) * 1_000_000)
    );
    assert_eq!(out.decision.reset_after_ms, 2000);
    assert_eq!(
        gcra::refund(tat, START, e, k(4)).store,
        Some(Change::Delete)
    );

    // The counter gives back from the current window first, then the previous.
    let counts = Some(Counts {
        start: START,
        current: 2,
        previous: 3,
    });
    let q = Quota::new(c(10), d(1000));
    let out = sliding_counter::refund(counts, START + 10, q, k(4));
    assert!(
        matches!(out.store, Some(Change::Store(s)) if (s.counts.current, s.counts.previous) == (0, 1))
    );
    assert_eq!(
        sliding_counter::refund(counts, START, q, k(5)).store,
        Some(Change::Delete)
    );
}
