//! Compiled only for tests (a submodule of `models`, which is `#[cfg(test)]`).
//! REFUND and DEBIT against the reference models: random sequences that mix
//! taking, giving back and charging into debt, each algorithm's reply equal to its
//! model's, and the writes they make: a refund writes nothing when nothing
//! changes, deletes exactly when the limiter is back to its initial state and
//! never goes beyond it; a debit always writes, and its reply's reset_after is
//! when its write expires.

use super::*;
use crate::algorithms::sliding::Log;
use crate::algorithms::Algorithm;
use crate::algorithms::{Amount, Change};

/// What a call asks: `COST n`, `REFUND n` or `DEBIT n`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Op {
    Take,
    Refund,
    Debit,
}

impl Op {
    fn name(self) -> &'static str {
        match self {
            Op::Take => "COST",
            Op::Refund => "REFUND",
            Op::Debit => "DEBIT",
        }
    }
}

/// Calls: about one in four a refund and, where the command takes it
/// (`debit`), one in five a debit (of at least 1).
fn ops(
    limit: u64,
    window: u64,
    cost: fn(u64) -> BoxedStrategy<u64>,
    debit: bool,
) -> impl Strategy<Value = Vec<(i64, u64, Op)>> {
    let op = if debit {
        prop_oneof![11 => Just(Op::Take), 5 => Just(Op::Refund), 4 => Just(Op::Debit)].boxed()
    } else {
        prop_oneof![3 => Just(Op::Take), 1 => Just(Op::Refund)].boxed()
    };
    proptest::collection::vec((forward_step(window), cost(limit), op), 1..48).prop_map(|seq| {
        seq.into_iter()
            .map(|(step, n, op)| (step, if op == Op::Debit { n.max(1) } else { n }, op))
            .collect()
    })
}

fn any_cost(limit: u64) -> BoxedStrategy<u64> {
    cost(limit).boxed()
}

fn small_cost(limit: u64) -> BoxedStrategy<u64> {
    sliding_cost(limit).boxed()
}

fn amount(n: u64, op: Op) -> Amount {
    match op {
        Op::Take => Amount::Take(k(n)),
        Op::Refund => Amount::Refund(k(n)),
        Op::Debit => Amount::Debit(c(n)),
    }
}

/// A refund's reply is the state after it, allowed and with nothing to wait for.
fn refunded(mut d: Decision) -> Decision {
    d.allowed = true;
    d.retry_after = RetryAfter::Now;
    d
}

/// What every write must satisfy: a delete leaves the initial state, a refund of
/// nothing (or on the initial state) writes nothing, a debit always writes (and
/// its reply, allowed and not waiting, still obeys `check_reply`).
fn check_write<S>(change: &Option<Change<S>>, d: &Decision, op: Op, n: u64, was_initial: bool) {
    if matches!(change, Some(Change::Delete)) {
        assert_eq!(op, Op::Refund, "only a refund deletes");
        assert_eq!((d.remaining, d.reset_after_ms), (d.limit, 0), "{d:?}");
    }
    if op == Op::Refund && (n == 0 || was_initial) {
        assert!(
            change.is_none(),
            "a refund that changes nothing writes nothing"
        );
    }
    if op == Op::Debit {
        assert!(matches!(change, Some(Change::Set(_))), "a debit writes");
        assert!(d.allowed && d.retry_after == RetryAfter::Now, "{d:?}");
        assert!(
            d.reset_after_ms > 0,
            "a debit leaves something to repay: {d:?}"
        );
    }
    check_reply(d, d.limit, if op == Op::Take { n } else { 0 });
}

/// The reply of a call, by its model.
macro_rules! by_model {
    ($model:expr, $op:expr, ($($arg:expr),*)) => {
        match $op {
            Op::Take => $model.call($($arg),*),
            Op::Refund => $model.refund($($arg),*),
            Op::Debit => $model.debit($($arg),*),
        }
    };
}

impl FixedModel {
    fn refund(&mut self, now: Millis, limit: u64, window: u64, n: u64) -> Decision {
        if self.window_index == Some(now.div_euclid(window as i64)) {
            self.used = self.used.saturating_sub(n);
        }
        refunded(self.call(now, limit, window, 0))
    }

    /// `used += n` in the current window, past the limit if need be.
    fn debit(&mut self, now: Millis, limit: u64, window: u64, n: u64) -> Decision {
        let index = now.div_euclid(window as i64);
        if self.window_index != Some(index) {
            self.used = 0;
        }
        self.used = self.used.saturating_add(n);
        self.window_index = Some(index);
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
    /// The level at `now`, refilled and clamped to the capacity.
    fn level_now(&self, now: Millis, cap: &BigRational, per_ms: &BigRational) -> BigRational {
        match self.ts {
            None => cap.clone(),
            Some(ts) => (self.level.clone().min(cap.clone())
                + per_ms.clone() * rat(i128::from((now - ts).max(0))))
            .min(cap.clone()),
        }
    }

    /// `level −= n`, below zero if need be (down to the deepest debt, if any).
    fn debit(&mut self, now: Millis, capacity: u64, tokens: u64, period: u64, n: u64) -> Decision {
        let cap = rat(i128::from(capacity));
        let per_ms = BigRational::new(BigInt::from(tokens), BigInt::from(period));
        let mut after = self.level_now(now, &cap, &per_ms) - rat(i128::from(n));
        if let Some(deepest) = &self.deepest {
            after = after.max(deepest.clone());
        }
        let micros = rat(1_000_000);
        self.level = if self.round {
            (after.clone() * micros.clone()).floor() / micros
        } else {
            after.clone()
        };
        self.ts = Some(now);
        Decision {
            allowed: true,
            limit: capacity,
            remaining: after.floor().to_integer().to_u64().unwrap_or(0),
            retry_after: RetryAfter::Now,
            reset_after_ms: ceil_ms(&((cap - after) / per_ms)),
        }
    }

    fn refund(&mut self, now: Millis, capacity: u64, tokens: u64, period: u64, n: u64) -> Decision {
        let cap = rat(i128::from(capacity));
        let per_ms = BigRational::new(BigInt::from(tokens), BigInt::from(period));
        let level = self.level_now(now, &cap, &per_ms);
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
    /// `current += n` in the current window, past the limit if need be.
    fn debit(&mut self, now: Millis, limit: u64, window: u64, n: u64) -> Decision {
        let units = self
            .per_window
            .entry(now.div_euclid(window as i64))
            .or_default();
        *units = units.saturating_add(n);
        refunded(self.call(now, limit, window, 0))
    }

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
    fn fixed_with_refunds_and_debits_matches_the_model(
        (limit, window, seq) in (count(), duration()).prop_flat_map(|(l, w)| (Just(l), Just(w), ops(l, w, any_cost, true)))
    ) {
        let q = WindowLimit::new(c(limit), d(window));
        let (mut state, mut model, mut now) = (None::<Counter>, FixedModel::default(), START);
        for (step, n, op) in seq {
            now += step;
            let initial = state.is_none_or(|s| s.used == 0);
            let out = fixed::FixedWindow::call(state, now, q, amount(n, op));
            let want = by_model!(model, op, (now, limit, window, n));
            prop_assert_eq!(out.decision, want, "at {} {} {}", now, op.name(), n);
            check_write(&out.write, &out.decision, op, n, initial);
            match out.write {
                Some(Change::Set(s)) => {
                    // Every write, a debit's too, expires at the window's end.
                    prop_assert_eq!(s.expires_at, fixed::window_end(now, q.window));
                    state = Some(s);
                }
                Some(Change::Delete) => state = None,
                None => {}
            }
            state = state.filter(|s| s.expires_at > now);
        }
    }

    #[test]
    fn sliding_with_refunds_matches_the_model(
        (limit, window, seq) in (sliding_limit(), duration()).prop_flat_map(|(l, w)| (Just(l), Just(w), ops(l, w, small_cost, false)))
    ) {
        let q = WindowLimit::new(c(limit), d(window));
        let (mut log, mut model, mut now) = (VecLog::default(), SlidingModel::default(), START);
        for (step, n, op) in seq {
            now += step;
            let refund = op == Op::Refund;
            let counted = log.count_after(now - window as i64);
            let out = sliding::SlidingLog::call(&log, now, q, amount(n, op));
            let want = if refund { model.refund(now, limit, window, n) } else { model.call(now, limit, window, n) };
            prop_assert_eq!(out.decision, want, "at {} {} {}", now, op.name(), n);
            check_reply(&out.decision, limit, if refund { 0 } else { n });
            if refund && (n == 0 || counted == 0) {
                prop_assert!(out.write.is_none());
            }
            if let Some(w) = out.write {
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
    fn bucket_with_refunds_and_debits_matches_the_exact_model(
        (capacity, tokens, period, seq) in (count(), count(), duration())
            .prop_flat_map(|(c, t, p)| (Just(c), Just(t), Just(p), ops(c, p, any_cost, true)))
    ) {
        let rate = Rate { capacity: c(capacity), tokens: c(tokens), period: d(period) };
        let (mut state, mut model, mut now) = (None::<State>, BucketModel::new(capacity), START);
        for (step, n, op) in seq {
            now += step;
            let full_now = bucket::decide(state, now, rate, k(0)).decision.reset_after_ms == 0;
            let out = bucket::TokenBucket::call(state, now, rate, amount(n, op));
            let want = by_model!(model, op, (now, capacity, tokens, period, n));
            prop_assert_eq!(out.decision, want, "at {} {} {}", now, op.name(), n);
            check_write(&out.write, &out.decision, op, n, full_now);
            match out.write {
                Some(Change::Set(s)) => {
                    prop_assert_eq!(s.expires_at, now + out.decision.reset_after_ms as i64);
                    prop_assert!(s.bucket.level_micros >= bucket::LOWEST_MICROS);
                    if op == Op::Debit && out.decision.reset_after_ms > 1 {
                        // Not full again before the key expires: its debt is still there.
                        let d = bucket::decide(Some(s.bucket), s.expires_at - 1, rate, k(0)).decision;
                        prop_assert!(d.reset_after_ms >= 1, "{:?}", d);
                    }
                    state = Some(s.bucket);
                }
                Some(Change::Delete) => state = None,
                None => {}
            }
        }
    }

    #[test]
    fn gcra_with_refunds_and_debits_decides_exactly_as_the_exact_bucket_when_t_is_exact(
        (capacity, (tokens, period), seq) in (count(), exact_rate())
            .prop_flat_map(|(c, r)| (Just(c), Just(r), ops(c, r.1, any_cost, true)))
    ) {
        let rate = Rate { capacity: c(capacity), tokens: c(tokens), period: d(period) };
        let emission = Emission::new(rate).unwrap();
        let (mut state, mut model, mut now) = (None::<Tat>, BucketModel::exact(capacity), START);
        for (step, n, op) in seq {
            now += step;
            let initial = state.is_none_or(|t| t.0 <= now as u128 * 1_000_000);
            let out = gcra::Gcra::call(state, now, emission, amount(n, op));
            let want = by_model!(model, op, (now, capacity, tokens, period, n));
            prop_assert_eq!(out.decision, want, "at {} {} {}", now, op.name(), n);
            check_write(&out.write, &out.decision, op, n, initial);
            match out.write {
                Some(Change::Set(s)) => {
                    prop_assert_eq!(s.expires_at, now + out.decision.reset_after_ms as i64);
                    if op == Op::Debit && out.decision.reset_after_ms > 1 {
                        let d = gcra::decide(Some(s.tat), s.expires_at - 1, emission, k(0)).decision;
                        prop_assert!(d.reset_after_ms >= 1, "{:?}", d);
                    }
                    state = Some(s.tat);
                }
                Some(Change::Delete) => state = None,
                None => {}
            }
        }
    }

    #[test]
    fn sliding_counter_with_refunds_and_debits_matches_the_rational_model(
        (limit, window, seq) in (count(), 1u64..=5000).prop_flat_map(|(l, w)| (Just(l), Just(w), ops(l, w, any_cost, true)))
    ) {
        let q = WindowLimit::new(c(limit), d(window));
        let (mut state, mut model, mut now) = (None::<Counts>, CounterModel::default(), START);
        for (step, n, op) in seq {
            now += step;
            let initial = sliding_counter::decide(state, now, q, k(0)).decision.reset_after_ms == 0;
            let out = sliding_counter::SlidingWindowCounter::call(state, now, q, amount(n, op));
            let mut want = by_model!(model, op, (now, limit, window, n));
            if let (RetryAfter::Ms(_), RetryAfter::Ms(got)) = (want.retry_after, out.decision.retry_after) {
                // The model does not compute waits; decide() is checked against itself.
                want.retry_after = RetryAfter::Ms(got);
                prop_assert!(sliding_counter::decide(state, now + got as i64, q, k(n)).decision.allowed);
            }
            prop_assert_eq!(out.decision, want, "at {} {} {}", now, op.name(), n);
            check_write(&out.write, &out.decision, op, n, initial);
            match out.write {
                Some(Change::Set(s)) => {
                    if op == Op::Debit {
                        prop_assert_eq!(s.expires_at, now + out.decision.reset_after_ms as i64);
                    }
                    state = Some(s.counts)
                }
                Some(Change::Delete) => state = None,
                None => {}
            }
        }
    }

    #[test]
    fn debt_is_repaid_by_time_on_every_limiter(
        (capacity, tokens, period, n) in (1u64..=20, 1u64..=20, 1u64..=5000, 1u64..=100)
    ) {
        // Full use, then DEBIT n: every call is rejected until reset_after has
        // passed (bucket, GCRA) or the window no longer counts it; then the
        // limiter is back at its initial state.
        let rate = Rate { capacity: c(capacity), tokens: c(tokens), period: d(period) };
        let b = bucket::decide(None, START, rate, k(capacity)).write.map(|s| s.bucket);
        let out = bucket::debit(b, START, rate, c(n));
        let reset = out.decision.reset_after_ms as i64;
        let s = out.write.unwrap();
        prop_assert_eq!(out.decision.remaining, 0);
        prop_assert!(!bucket::decide(Some(s.bucket), START, rate, k(1)).decision.allowed);
        // The key expires when the exact bucket is full again (the stored copy,
        // rounded down, is a millionth short of it then): not a ms earlier.
        prop_assert_eq!(s.expires_at, START + reset);
        let before = bucket::decide(Some(s.bucket), s.expires_at - 1, rate, k(0)).decision;
        prop_assert!(before.reset_after_ms >= 1 && before.remaining < capacity);

        let e = Emission::new(rate).unwrap();
        let t = gcra::decide(None, START, e, k(capacity)).write.map(|s| s.tat);
        let out = gcra::debit(t, START, e, c(n));
        let s = out.write.unwrap();
        prop_assert_eq!(out.decision.remaining, 0);
        let back = gcra::decide(Some(s.tat), s.expires_at, e, k(0)).decision;
        prop_assert_eq!((back.remaining, back.reset_after_ms), (capacity, 0));

        let q = WindowLimit::new(c(capacity), d(period));
        let f = fixed::decide(None, START, q, k(capacity)).write;
        let out = fixed::debit(f, START, q, c(n));
        let s = out.write.unwrap();
        prop_assert_eq!(out.decision.reset_after_ms as i64, s.expires_at - START);
        prop_assert!(!fixed::decide(Some(s), s.expires_at - 1, q, k(1)).decision.allowed);
        prop_assert!(fixed::decide(Some(s), s.expires_at, q, k(capacity)).decision.allowed);

        let sc = sliding_counter::decide(None, START, q, k(capacity)).write.map(|s| s.counts);
        let out = sliding_counter::debit(sc, START, q, c(n));
        let s = out.write.unwrap();
        prop_assert_eq!(out.decision.remaining, 0);
        prop_assert_eq!(out.decision.reset_after_ms as i64, s.expires_at - START);
        let back = sliding_counter::decide(Some(s.counts), s.expires_at, q, k(0)).decision;
        prop_assert_eq!((back.remaining, back.reset_after_ms), (capacity, 0));
    }
}

#[test]
fn a_refund_never_goes_beyond_the_initial_state() {
    let q = WindowLimit::new(c(5), d(1000));
    // Three taken, ten given back: the counter is deleted, not negative.
    let taken = fixed::decide(None, START, q, k(3)).write;
    let out = fixed::refund(taken, START + 1, q, k(10));
    assert_eq!(out.write, Some(Change::Delete));
    assert_eq!(
        (out.decision.remaining, out.decision.reset_after_ms),
        (5, 0)
    );
    // Nothing taken: nothing to give back, nothing written.
    assert_eq!(fixed::refund(None, START, q, k(10)).write, None);

    let rate = Rate {
        capacity: c(5),
        tokens: c(1),
        period: d(1000),
    };
    let half = bucket::decide(None, START, rate, k(2))
        .write
        .map(|s| s.bucket);
    let out = bucket::refund(half, START + 500, rate, k(1));
    // 3 + 0.5 refilled + 1 given back = 4.5 tokens.
    assert_eq!(out.decision.remaining, 4);
    assert_eq!(out.decision.reset_after_ms, 500);
    assert!(matches!(out.write, Some(Change::Set(s)) if s.bucket.level_micros == 4_500_000));
    assert_eq!(
        bucket::refund(half, START + 500, rate, k(2)).write,
        Some(Change::Delete)
    );

    let e = Emission::new(rate).unwrap();
    let tat = gcra::decide(None, START, e, k(3)).write.map(|s| s.tat);
    let out = gcra::refund(tat, START, e, k(1));
    assert!(
        matches!(out.write, Some(Change::Set(s)) if s.tat.0 == (START as u128 + 2000) * 1_000_000)
    );
    assert_eq!(out.decision.reset_after_ms, 2000);
    assert_eq!(
        gcra::refund(tat, START, e, k(4)).write,
        Some(Change::Delete)
    );

    // The counter gives back from the current window first, then the previous.
    let counts = Some(Counts {
        start: START,
        current: 2,
        previous: 3,
    });
    let q = WindowLimit::new(c(10), d(1000));
    let out = sliding_counter::refund(counts, START + 10, q, k(4));
    assert!(
        matches!(out.write, Some(Change::Set(s)) if (s.counts.current, s.counts.previous) == (0, 1))
    );
    assert_eq!(
        sliding_counter::refund(counts, START, q, k(5)).write,
        Some(Change::Delete)
    );
}
