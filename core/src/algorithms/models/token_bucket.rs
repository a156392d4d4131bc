//! Property tests of the token bucket against its plain model.

use super::*;

/// The plainest bucket: a rational level, refilled by elapsed · tokens / period.
/// Replies (remaining, retry_after, reset_after) come from the exact level; the level
/// carried to the next call is rounded down to a millionth, as the contract allows
/// for the stored copy.
pub(super) struct BucketModel {
    pub(super) level: BigRational,
    pub(super) ts: Option<Millis>,
    /// Round the carried level down to a millionth (RL.BUCKET's stored copy); off,
    /// the model is the exact bucket RL.GCRA must equal.
    pub(super) round: bool,
    /// RL.GCRA's `DELAY max` in ms: the level may go down to −max · rate, and a
    /// call that takes it below 0 waits until it is back at 0.
    pub(super) delay_ms: u64,
    /// The deepest debt a debit leaves (RL.BUCKET: −(2^53 − 1) tokens); None for
    /// RL.GCRA, whose debt has no floor.
    pub(super) deepest: Option<BigRational>,
}

pub(super) fn rat(n: i128) -> BigRational {
    BigRational::from_integer(BigInt::from(n))
}

pub(super) fn ceil_ms(r: &BigRational) -> u64 {
    let c = r.ceil().to_integer();
    if c.is_negative() {
        0
    } else {
        c.to_u64().unwrap_or(u64::MAX).min(MAX_COUNT)
    }
}

impl BucketModel {
    pub(super) fn new(capacity: u64) -> Self {
        BucketModel {
            level: rat(i128::from(capacity)),
            ts: None,
            round: true,
            delay_ms: 0,
            deepest: Some(-rat(i128::from(MAX_COUNT))),
        }
    }

    pub(super) fn exact(capacity: u64) -> Self {
        BucketModel {
            round: false,
            deepest: None,
            ..BucketModel::new(capacity)
        }
    }

    pub(super) fn call(
        &mut self,
        now: Millis,
        capacity: u64,
        tokens: u64,
        period: u64,
        n: u64,
    ) -> Decision {
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
