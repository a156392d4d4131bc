//! Compiled only for tests: `#[cfg(test)] mod models;` in algorithms/mod.rs.
//! Property tests: each algorithm against a reference model written as plainly as
//! possible (a per-window counter, a list of every accepted timestamp, a bucket in
//! exact rational arithmetic), over random call sequences with random costs, time
//! steps and parameters at the bounds; plus invariants that must hold even when the
//! clock steps backwards.

use num_bigint::BigInt;
use num_rational::BigRational;
use num_traits::{One, Signed, ToPrimitive, Zero};
use proptest::prelude::*;

use super::acquire::{self, Leases, VecLeases};
use super::bucket::{self, Rate, State};
use super::fixed::{self, Counter};
use super::gcra::{self, Emission, Tat};
use super::sliding::{self, VecLog};
use super::sliding_counter::{self, Counts};
use super::{
    Cost, Count, Decision, Interval, Millis, Quota, RetryAfter, MAX_COUNT, MAX_DURATION_MS,
};

const START: Millis = 1_700_000_000_000;

fn count() -> impl Strategy<Value = u64> {
    prop_oneof![4 => 1u64..=10, 1 => 1u64..=1000, 1 => Just(MAX_COUNT), 1 => (MAX_COUNT - 3)..=MAX_COUNT]
}

fn duration() -> impl Strategy<Value = u64> {
    prop_oneof![4 => 1u64..=2000, 1 => 1u64..=100_000, 1 => Just(MAX_DURATION_MS)]
}

/// Costs relative to the limit: mostly small, sometimes 0, at or past the limit, or huge.
fn cost(limit: u64) -> impl Strategy<Value = u64> {
    prop_oneof![
        4 => 1u64..=3,
        1 => Just(0u64),
        1 => Just(limit),
        1 => Just(limit.saturating_add(1).min(MAX_COUNT)),
        1 => Just(MAX_COUNT),
    ]
}

/// Forward steps only (zero included): where the model must agree exactly.
fn forward_step(window: u64) -> impl Strategy<Value = i64> {
    let w = i64::try_from(window).unwrap_or(i64::MAX).min(1 << 40);
    prop_oneof![2 => Just(0i64), 4 => 0..=w.min(5000), 1 => 0..=w.saturating_mul(3)]
}

/// Steps that may go backwards.
fn any_step(window: u64) -> impl Strategy<Value = i64> {
    let w = i64::try_from(window).unwrap_or(i64::MAX).min(1 << 40);
    prop_oneof![4 => forward_step(window), 1 => -w.saturating_mul(2)..=0]
}

fn calls(
    limit: u64,
    window: u64,
    step: fn(u64) -> BoxedStrategy<i64>,
) -> impl Strategy<Value = Vec<(i64, u64)>> {
    proptest::collection::vec((step(window), cost(limit)), 1..48)
}

fn fwd(w: u64) -> BoxedStrategy<i64> {
    forward_step(w).boxed()
}
fn back(w: u64) -> BoxedStrategy<i64> {
    any_step(w).boxed()
}

fn c(n: u64) -> Count {
    Count::new(n).unwrap()
}
fn k(n: u64) -> Cost {
    Cost::new(n).unwrap()
}
fn d(ms: u64) -> Interval {
    Interval::from_ms(ms).unwrap()
}

fn ms_between(until: i128, now: i128) -> u64 {
    (until - now).clamp(0, i128::from(MAX_COUNT)) as u64
}

/// Invariants every reply must satisfy.
fn check_reply(dec: &Decision, limit: u64, n: u64) {
    assert!(
        dec.remaining <= limit,
        "remaining {} > limit {limit}",
        dec.remaining
    );
    assert!(dec.reset_after_ms <= MAX_COUNT);
    match dec.retry_after {
        RetryAfter::Now => assert!(dec.allowed),
        RetryAfter::Never => assert!(!dec.allowed && n > limit),
        RetryAfter::Delayed(ms) => assert!(dec.allowed && (1..=MAX_COUNT).contains(&ms)),
        RetryAfter::Ms(ms) => assert!(!dec.allowed && ms <= MAX_COUNT),
    }
}

// ---------------------------------------------------------------- fixed window

/// The plainest fixed window: a count per epoch window index.
#[derive(Default)]
struct FixedModel {
    window_index: Option<i64>,
    used: u64,
}

impl FixedModel {
    fn call(&mut self, now: Millis, limit: u64, window: u64, n: u64) -> Decision {
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
            let out = fixed::decide(state, now, Quota::new(c(limit), d(window)), k(n));
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
            let out = fixed::decide(live, now, Quota::new(c(limit), d(window)), k(n));
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

// ---------------------------------------------------------------- sliding log

/// The plainest sliding log: every accepted unit's time, never trimmed.
#[derive(Default)]
struct SlidingModel {
    accepted: Vec<Millis>,
}

impl SlidingModel {
    fn call(&mut self, now: Millis, limit: u64, window: u64, n: u64) -> Decision {
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
fn sliding_limit() -> impl Strategy<Value = u64> {
    prop_oneof![4 => 1u64..=10, 1 => 1u64..=200]
}

fn sliding_cost(limit: u64) -> impl Strategy<Value = u64> {
    prop_oneof![4 => 1u64..=3, 1 => Just(0u64), 1 => Just(limit), 1 => Just(limit + 1), 1 => Just(MAX_COUNT)]
}

fn sliding_calls(
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
            let out = sliding::decide(&log, now, Quota::new(c(limit), d(window)), k(n));
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
            let out = sliding::decide(&log, now, Quota::new(c(limit), d(window)), k(n));
            check_reply(&out.decision, limit, n);
            if let RetryAfter::Ms(wait) = out.decision.retry_after {
                let wait = wait as i64;
                prop_assert!(sliding::decide(&log, now + wait, Quota::new(c(limit), d(window)), k(n)).decision.allowed);
                if wait > 0 {
                    prop_assert!(!sliding::decide(&log, now + wait - 1, Quota::new(c(limit), d(window)), k(n)).decision.allowed);
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

// ---------------------------------------------------------------- token bucket

/// The plainest bucket: a rational level, refilled by elapsed · tokens / period.
/// Replies (remaining, retry_after, reset_after) come from the exact level; the level
/// carried to the next call is rounded down to a millionth, as the contract allows
/// for the stored copy.
struct BucketModel {
    level: BigRational,
    ts: Option<Millis>,
    /// Round the carried level down to a millionth (RL.BUCKET's stored copy); off,
    /// the model is the exact bucket RL.GCRA must equal.
    round: bool,
    /// RL.GCRA's `DELAY max` in ms: the level may go down to −max · rate, and a
    /// call that takes it below 0 waits until it is back at 0.
    delay_ms: u64,
    /// The deepest debt a debit leaves (RL.BUCKET: −(2^53 − 1) tokens); None for
    /// RL.GCRA, whose debt has no floor.
    deepest: Option<BigRational>,
}

fn rat(n: i128) -> BigRational {
    BigRational::from_integer(BigInt::from(n))
}

fn ceil_ms(r: &BigRational) -> u64 {
    let c = r.ceil().to_integer();
    if c.is_negative() {
        0
    } else {
        c.to_u64().unwrap_or(u64::MAX).min(MAX_COUNT)
    }
}

impl BucketModel {
    fn new(capacity: u64) -> Self {
        BucketModel {
            level: rat(i128::from(capacity)),
            ts: None,
            round: true,
            delay_ms: 0,
            deepest: Some(-rat(i128::from(MAX_COUNT))),
        }
    }

    fn exact(capacity: u64) -> Self {
        BucketModel {
            round: false,
            deepest: None,
            ..BucketModel::new(capacity)
        }
    }

    fn call(&mut self, now: Millis, capacity: u64, tokens: u64, period: u64, n: u64) -> Decision {
        let cap = rat(i128::from(capacity));
        let per_ms = BigRational::new(BigInt::from(tokens), BigInt::from(period));
        let stored = self.level.clone().min(cap.clone());
        let level = match self.ts {
            None => cap.clone(),
            Some(ts) => {
                (stored + per_ms.clone() * rat(i128::from((now - ts).max(0)))).min(cap.clone())
            }
        };
        let wanted = rat(i128::from(n));
        let queue = per_ms.clone() * rat(i128::from(self.delay_ms));
        let allowed = n <= capacity && level.clone() - wanted.clone() >= -queue;
        // The reply describes the exact level; only the stored copy is rounded down.
        let after = if allowed {
            level.clone() - wanted.clone()
        } else {
            level.clone()
        };
        if allowed && n > 0 {
            let micros = rat(1_000_000);
            self.level = if self.round {
                (after.clone() * micros.clone()).floor() / micros
            } else {
                after.clone()
            };
            self.ts = Some(now);
        }
        // Until the level is back to the cost: the wait of a scheduled call.
        let until_enough = (wanted - level) / per_ms.clone();
        let retry_after = if allowed {
            match ceil_ms(&until_enough) {
                0 => RetryAfter::Now,
                wait => RetryAfter::Delayed(wait),
            }
        } else if n > capacity {
            RetryAfter::Never
        } else {
            RetryAfter::Ms(ceil_ms(&(until_enough - rat(i128::from(self.delay_ms)))))
        };
        let reset_after_ms = if after >= cap {
            0
        } else {
            ceil_ms(&((cap - after.clone()) / per_ms))
        };
        Decision {
            allowed,
            limit: capacity,
            remaining: after.floor().to_integer().to_u64().unwrap_or(0),
            retry_after,
            reset_after_ms,
        }
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(300))]

    #[test]
    fn bucket_matches_the_exact_model_when_time_moves_forward(
        (capacity, tokens, period, seq) in (count(), count(), duration())
            .prop_flat_map(|(c, t, p)| (Just(c), Just(t), Just(p), calls(c, p, fwd)))
    ) {
        let rate = Rate { capacity: c(capacity), tokens: c(tokens), period: d(period) };
        let (mut state, mut model, mut now) = (None::<State>, BucketModel::new(capacity), START);
        for (step, n) in seq {
            now += step;
            let out = bucket::decide(state, now, rate, k(n));
            prop_assert_eq!(out.decision, model.call(now, capacity, tokens, period, n), "at {} cost {}", now, n);
            check_reply(&out.decision, capacity, n);
            if let Some(s) = out.write {
                prop_assert!(s.bucket.level_micros <= i128::from(capacity) * 1_000_000);
                prop_assert_eq!(s.expires_at, now + out.decision.reset_after_ms as i64);
                state = Some(s.bucket);
            }
        }
    }

    #[test]
    fn bucket_admits_at_most_capacity_plus_refill_and_retry_is_exact(
        (capacity, tokens, period, seq) in (1u64..=20, 1u64..=20, 1u64..=5000)
            .prop_flat_map(|(c, t, p)| (Just(c), Just(t), Just(p), calls(c, p, back)))
    ) {
        let rate = Rate { capacity: c(capacity), tokens: c(tokens), period: d(period) };
        let (mut state, mut now) = (None::<State>, START);
        let (mut admitted, mut earliest, mut latest) = (0u64, START, START);
        for (step, n) in seq {
            now += step;
            earliest = earliest.min(now);
            latest = latest.max(now);
            let out = bucket::decide(state, now, rate, k(n));
            check_reply(&out.decision, capacity, n);
            if let RetryAfter::Ms(wait) = out.decision.retry_after {
                let wait = wait as i64;
                prop_assert!(bucket::decide(state, now + wait, rate, k(n)).decision.allowed);
                prop_assert!(wait > 0);
                prop_assert!(!bucket::decide(state, now + wait - 1, rate, k(n)).decision.allowed);
            }
            if out.decision.allowed { admitted += n; }
            if let Some(s) = out.write { state = Some(s.bucket); }
        }
        // Over the whole run, from the earliest to the latest clock reading:
        let refill = BigRational::new(BigInt::from(tokens), BigInt::from(period)) * rat(i128::from(latest - earliest));
        prop_assert!(rat(i128::from(admitted)) <= rat(i128::from(capacity)) + refill);
    }
}

// ---------------------------------------------------------------- GCRA

/// Rates whose period in ns is a multiple of `tokens` (so T is exact): tokens =
/// a·b with a dividing 10^6, period = b·q ms.
fn exact_rate() -> impl Strategy<Value = (u64, u64)> {
    let a = prop::sample::select(vec![1u64, 2, 4, 5, 8, 10, 25, 40, 125, 1000, 1_000_000]);
    (
        a,
        1u64..=5,
        prop_oneof![4 => 1u64..=2000, 1 => 1u64..=(MAX_DURATION_MS / 5)],
    )
        .prop_map(|(a, b, q)| (a * b, b * q))
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(400))]

    #[test]
    fn gcra_decides_exactly_as_the_exact_bucket_when_t_is_exact(
        (capacity, (tokens, period), delay, seq) in (count(), exact_rate(), delay())
            .prop_flat_map(|(c, r, m)| (Just(c), Just(r), Just(m), calls(c, r.1, fwd)))
    ) {
        let rate = Rate { capacity: c(capacity), tokens: c(tokens), period: d(period) };
        let emission = Emission::new(rate).unwrap().with_delay(delay);
        let mut model = BucketModel { delay_ms: delay, ..BucketModel::exact(capacity) };
        let (mut state, mut now) = (None::<Tat>, START);
        for (step, n) in seq {
            now += step;
            let out = gcra::decide(state, now, emission, k(n));
            prop_assert_eq!(out.decision, model.call(now, capacity, tokens, period, n), "at {} cost {}", now, n);
            check_reply(&out.decision, capacity, n);
            if let Some(s) = out.write {
                prop_assert_eq!(s.expires_at, now + out.decision.reset_after_ms as i64);
                state = Some(s.tat);
            }
        }
    }

    #[test]
    fn gcra_never_admits_more_than_capacity_plus_refill_and_retry_is_exact(
        (capacity, tokens, period, seq) in (1u64..=20, 1u64..=20, 1u64..=5000)
            .prop_flat_map(|(c, t, p)| (Just(c), Just(t), Just(p), calls(c, p, back)))
    ) {
        let rate = Rate { capacity: c(capacity), tokens: c(tokens), period: d(period) };
        let emission = Emission::new(rate).unwrap();
        let (mut state, mut now) = (None::<Tat>, START);
        let (mut admitted, mut earliest, mut latest) = (0u64, START, START);
        for (step, n) in seq {
            now += step;
            earliest = earliest.min(now);
            latest = latest.max(now);
            let out = gcra::decide(state, now, emission, k(n));
            check_reply(&out.decision, capacity, n);
            if let RetryAfter::Ms(wait) = out.decision.retry_after {
                let wait = wait as i64;
                prop_assert!(wait > 0);
                prop_assert!(gcra::decide(state, now + wait, emission, k(n)).decision.allowed);
                prop_assert!(!gcra::decide(state, now + wait - 1, emission, k(n)).decision.allowed);
            }
            if out.decision.allowed { admitted += n; }
            if let Some(s) = out.write { state = Some(s.tat); }
        }
        // T may be rounded down (faster than nominal) by under 1 ns per unit.
        let per_ms = BigRational::new(BigInt::from(1_000_000), BigInt::from(emission_ns(emission)));
        let refill = per_ms * rat(i128::from(latest - earliest));
        prop_assert!(rat(i128::from(admitted)) <= rat(i128::from(capacity)) + refill);
    }
}

/// A DELAY's max: mostly none, often short, sometimes at the bound.
fn delay() -> impl Strategy<Value = u64> {
    prop_oneof![2 => Just(0u64), 4 => 1u64..=5000, 1 => 0..=MAX_DURATION_MS, 1 => Just(MAX_DURATION_MS)]
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(400))]

    #[test]
    fn gcra_delay_zero_is_the_call_without_delay_in_every_reply_and_state(
        (capacity, tokens, period, seq) in (count(), count(), duration())
            .prop_flat_map(|(c, t, p)| (Just(c), Just(t), Just(p), calls(c, p, back)))
    ) {
        let rate = Rate { capacity: c(capacity), tokens: c(tokens), period: d(period) };
        let Some(plain) = Emission::new(rate) else { return Ok(()) };
        let (mut state, mut now) = (None::<Tat>, START);
        for (step, n) in seq {
            now += step;
            let out = gcra::decide(state, now, plain.with_delay(0), k(n));
            prop_assert_eq!(out, gcra::decide(state, now, plain, k(n)), "at {} cost {}", now, n);
            if let Some(s) = out.write { state = Some(s.tat); }
        }
    }

    #[test]
    fn gcra_delay_schedules_at_the_rate_waits_at_most_max_and_rejects_without_writing(
        (capacity, tokens, period, delay, seq) in (1u64..=10, 1u64..=20, 1u64..=5000, delay())
            .prop_flat_map(|(c, t, p, m)| (Just(c), Just(t), Just(p), Just(m), calls(c, p, back)))
    ) {
        let rate = Rate { capacity: c(capacity), tokens: c(tokens), period: d(period) };
        let emission = Emission::new(rate).unwrap().with_delay(delay);
        let (mut state, mut now) = (None::<Tat>, START);
        // (call time + wait, units) of every call that took something.
        let mut scheduled: Vec<(i64, u64)> = Vec::new();
        for (step, n) in seq {
            now += step;
            let out = gcra::decide(state, now, emission, k(n));
            check_reply(&out.decision, capacity, n);
            match out.decision.retry_after {
                RetryAfter::Delayed(wait) => prop_assert!(wait <= delay, "waits {} > {}", wait, delay),
                RetryAfter::Ms(wait) => {
                    // Exact: the same call with the same DELAY is admitted then, not before.
                    let wait = wait as i64;
                    prop_assert!(wait > 0);
                    prop_assert!(gcra::decide(state, now + wait, emission, k(n)).decision.allowed);
                    prop_assert!(!gcra::decide(state, now + wait - 1, emission, k(n)).decision.allowed);
                }
                RetryAfter::Now | RetryAfter::Never => {}
            }
            if !out.decision.allowed {
                prop_assert_eq!(out.write, None, "a rejected call writes nothing");
            }
            if let Some(s) = out.write {
                scheduled.push((now + out.decision.retry_after_ms(), n));
                state = Some(s.tat);
            }
        }
        // Over any interval [a, b] at most capacity + (b − a) / T units are
        // scheduled. Waits are whole ms, rounded up: when T is not a whole number
        // of ms, an action's time is up to 1 ms late, so allow one ms more.
        let t = emission_ns(emission) as u128;
        let late = if t.is_multiple_of(1_000_000) { 0 } else { 1_000_000 };
        for &(a, _) in &scheduled {
            for &(b, _) in scheduled.iter().filter(|(b, _)| *b >= a) {
                let units: u128 = scheduled.iter().filter(|(s, _)| (a..=b).contains(s)).map(|&(_, n)| u128::from(n)).sum();
                let span = (b - a) as u128 * 1_000_000 + late;
                prop_assert!(
                    units * t <= u128::from(capacity) * t + span,
                    "{} units scheduled in [{}, {}], T = {} ns", units, a, b, t
                );
            }
        }
    }
}

fn emission_ns(e: Emission) -> i128 {
    // The emission interval, recovered from one unit's debt.
    let out = gcra::decide(None, 0, e, Cost::ONE);
    out.write.map_or(1, |s| s.tat.0 as i128)
}

// ---------------------------------------------------------------- sliding counter

/// The plainest sliding window counter: every accepted unit's window index, and the
/// weighted estimate in exact rationals.
#[derive(Default)]
struct CounterModel {
    per_window: std::collections::BTreeMap<i64, u64>,
}

impl CounterModel {
    fn call(&mut self, now: Millis, limit: u64, window: u64, n: u64) -> Decision {
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
        let q = Quota::new(c(limit), d(window));
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
            let q = Quota::new(c(limit), d(window));
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

// ---------------------------------------------------------------- leases

/// The plainest lease set: (id, end) pairs, expired ones dropped only when an
/// ACQUIRE is allowed or the last live lease is released, as the contract says.
#[derive(Default)]
struct LeaseModel {
    leases: Vec<(u8, Millis)>,
}

impl LeaseModel {
    fn live(&self, now: Millis) -> Vec<(u8, Millis)> {
        self.leases
            .iter()
            .copied()
            .filter(|&(_, end)| end > now)
            .collect()
    }

    fn acquire(&mut self, now: Millis, limit: u64, ttl: u64, id: u8) -> Decision {
        let live = self.live(now);
        let held = live.iter().any(|&(i, _)| i == id);
        let allowed = held || (live.len() as u64) < limit;
        if allowed {
            self.leases = live.clone();
            self.leases.retain(|&(i, _)| i != id);
            self.leases.push((id, now + ttl as i64));
        }
        let after = self.live(now);
        let soonest = live.iter().map(|&(_, e)| e).min();
        Decision {
            allowed,
            limit,
            remaining: limit.saturating_sub(after.len() as u64),
            retry_after: if allowed {
                RetryAfter::Now
            } else {
                RetryAfter::Ms(ms_between(i128::from(soonest.unwrap()), i128::from(now)))
            },
            reset_after_ms: after
                .iter()
                .map(|&(_, e)| ms_between(i128::from(e), i128::from(now)))
                .max()
                .unwrap_or(0),
        }
    }

    fn release(&mut self, now: Millis, id: u8) -> bool {
        let held = self.live(now).iter().any(|&(i, _)| i == id);
        if held {
            self.leases.retain(|&(i, _)| i != id);
            // The last live lease released deletes the key, expired ones with it.
            if self.live(now).is_empty() {
                self.leases.clear();
            }
        }
        held
    }
}

/// One step of a lease sequence: a time step, then ACQUIRE (true) or RELEASE of
/// one of a few ids.
fn lease_steps(
    ttl: u64,
    step: fn(u64) -> BoxedStrategy<i64>,
) -> impl Strategy<Value = Vec<(i64, bool, u8)>> {
    proptest::collection::vec((step(ttl), prop::bool::weighted(0.7), 0u8..6), 1..64)
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(400))]

    #[test]
    fn leases_match_the_model_and_never_exceed_the_limit(
        (limit, ttl, seq) in (1u64..=4, prop_oneof![4 => 1u64..=2000, 1 => Just(MAX_DURATION_MS)])
            .prop_flat_map(|(l, t)| (Just(l), Just(t), lease_steps(t, back)))
    ) {
        let params = Leases { limit: c(limit), ttl: d(ttl) };
        let (mut set, mut model, mut now) = (VecLeases::default(), LeaseModel::default(), START);
        for (step, take, id) in seq {
            now += step;
            let name = [b'a' + id];
            let live_before = model.live(now);
            if take {
                let out = acquire::acquire(&set, now, params, &name, Cost::ONE);
                let expected = model.acquire(now, limit, ttl, id);
                prop_assert_eq!(out.decision, expected, "acquire {} at {}", id, now);
                check_reply(&out.decision, limit, 1);
                if let Some(g) = out.write {
                    set.grant(&name, &g);
                    prop_assert_eq!(Some(g.expires_at), set.0.iter().map(|&(_, e)| e).max());
                }
                let live_after = model.live(now);
                prop_assert!(live_after.len() as u64 <= limit, "{} live leases", live_after.len());
                if live_before.iter().any(|&(i, _)| i == id) {
                    prop_assert_eq!(live_after.len(), live_before.len(), "a renewal takes no second slot");
                }
            } else {
                let out = acquire::release(&set, now, &name);
                prop_assert_eq!(out.is_some(), model.release(now, id), "release {} at {}", id, now);
                if let Some(r) = out {
                    set.release(&name, &r);
                    prop_assert_eq!(model.live(now).len() + 1, live_before.len(), "a release frees one slot");
                    prop_assert_eq!(r.expires_at, model.live(now).iter().map(|&(_, e)| e).max());
                }
            }
            // The stored set and the model agree on what is live.
            let mut stored: Vec<(u8, Millis)> = set.0.iter().filter(|&(_, e)| *e > now).map(|(m, e)| (m[0] - b'a', *e)).collect();
            let mut live = model.live(now);
            stored.sort_unstable();
            live.sort_unstable();
            prop_assert_eq!(stored, live);
        }
    }
}

#[test]
fn models_agree_on_the_seed_vectors() {
    // Cross-check the models themselves against the contract's vectors.
    let mut m = SlidingModel::default();
    let got: Vec<_> = [10, 20, 30, 40, 50, 55, 121]
        .iter()
        .map(|t| {
            let dec = m.call(t * 1000, 5, 60_000, 1);
            (dec.allowed, dec.remaining)
        })
        .collect();
    assert_eq!(
        got,
        [
            (true, 4),
            (true, 3),
            (true, 2),
            (true, 1),
            (true, 0),
            (false, 0),
            (true, 4)
        ]
    );
    let mut b = BucketModel::new(5);
    let rejected = (0..7)
        .map(|_| b.call(0, 5, 1, 1000, 1))
        .filter(|dec| !dec.allowed)
        .count();
    assert_eq!(rejected, 2);
    assert!(b.call(3000, 5, 1, 1000, 1).allowed);
    assert!(BigRational::one() > BigRational::zero());
}

mod penalty;
mod refunds;
