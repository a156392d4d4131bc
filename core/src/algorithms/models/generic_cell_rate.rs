//! Property tests of the GCRA against its plain model.

use super::*;

/// Rates whose period in ns is a multiple of `tokens` (so T is exact): tokens =
/// a·b with a dividing 10^6, period = b·q ms.
pub(super) fn exact_rate() -> impl Strategy<Value = (u64, u64)> {
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
pub(super) fn delay() -> impl Strategy<Value = u64> {
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

pub(super) fn emission_ns(e: Emission) -> i128 {
    // The emission interval, recovered from one unit's debt.
    let out = gcra::decide(None, 0, e, Cost::ONE);
    out.write.map_or(1, |s| s.tat.0 as i128)
}
