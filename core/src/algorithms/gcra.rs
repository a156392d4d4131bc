//! Generic cell rate algorithm: the token bucket kept as one integer.
//!
//! The same limiter as RL.BUCKET (`capacity` units at once, `tokens` more every
//! `period`), stored as the TAT, the "theoretical arrival time": the instant (ns
//! since the Unix epoch) the limiter is back to its initial state. Each unit moves
//! the TAT `T` later, where `T` is the emission interval (`period / tokens`); the
//! limiter holds at most `D = capacity · T` of such debt. This is redis-cell's
//! state (CL.THROTTLE), so the two commands share keys.
//!
//! All arithmetic is exact integer arithmetic in nanoseconds (u128: a debt can reach
//! 2^53 · 10 years in ns, beyond u64); the only rounding is `T = floor(period_ns /
//! tokens)`, which is exact whenever the period in ns is a multiple of `tokens`, and
//! the ms of the reply, rounded up (never too early).
//!
//! `DELAY max` turns the limiter into a queue (NGINX's `limit_req … delay=`, Go's
//! `rate.Limiter.Reserve`): a call whose turn comes within `max` is admitted with
//! the same write as any allowed call, and told how long to wait before acting.
//! The TAT is the schedule: each admitted call queues behind the earlier ones.

use super::{
    after, cap, debited, one_value_algorithm, refunded, Change, Cost, Count, Decision, Millis,
    Outcome, Rate, RetryAfter,
};

/// Nanoseconds per millisecond.
pub const NS_PER_MS: u128 = 1_000_000;

/// A rate whose emission interval is at least 1 ns: what RL.GCRA can represent;
/// and how long a call may wait for its turn (`DELAY max`, 0 without it).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Emission {
    /// The emission interval T in ns: the debt one unit adds.
    interval: u128,
    capacity: u64,
    /// M, the longest wait in ns: a call is admitted while its debt stays
    /// within D + M, and waits for what exceeds D.
    max_wait: u128,
}

impl Emission {
    /// None when `tokens` per `period` is more than one per nanosecond.
    pub fn new(rate: Rate) -> Option<Self> {
        let period_ns = u128::from(rate.period.ms()) * NS_PER_MS;
        let interval = period_ns / u128::from(rate.tokens.get());
        (interval >= 1).then_some(Emission {
            interval,
            capacity: rate.capacity.get(),
            max_wait: 0,
        })
    }

    /// The same rate, scheduling calls that wait at most `max_ms` for their turn
    /// (`DELAY max`). `0` is the rate without DELAY.
    pub fn with_delay(self, max_ms: u64) -> Self {
        Emission {
            max_wait: u128::from(max_ms) * NS_PER_MS,
            ..self
        }
    }

    /// The debt the limiter tolerates: `capacity · T`.
    fn tolerance(&self) -> u128 {
        u128::from(self.capacity) * self.interval
    }
}

/// What the key holds: the TAT in ns since the epoch.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Tat(pub u128);

/// The TAT to store after an allowed call, and when its key expires.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Stored {
    pub tat: Tat,
    /// ceil(TAT / 10^6) ms, capped at 2^53 − 1 ms from now.
    pub expires_at: Millis,
}

/// Decides one call against the stored TAT (None when the key is absent).
pub fn decide(stored: Option<Tat>, now: Millis, rate: Emission, cost: Cost) -> Outcome<Stored> {
    // Times before the epoch do not occur on a server; clamp rather than wrap.
    let now_ns = u128::try_from(now).unwrap_or(0) * NS_PER_MS;
    // A TAT in the past is the initial state; a clock that stepped back only
    // increases the debt, so it never grants more.
    let base = stored.map_or(now_ns, |t| t.0.max(now_ns));
    let debt = base - now_ns;
    let (t, d) = (rate.interval, rate.tolerance());
    let n = cost.get();
    let increment = u128::from(n) * t;
    // Saturating: a foreign TAT near u128::MAX leaves a debt whose sum with the
    // increment overflows; every wait is capped at 2^53 − 1 ms either way.
    let wanted = debt.saturating_add(increment);
    // D + M ≤ 2^53 · 10 years + 2^64 ms in ns: far inside u128.
    let allowed = n <= rate.capacity && wanted <= d + rate.max_wait;
    let debt_after = if allowed { wanted } else { debt };

    let store = (allowed && n > 0).then(|| {
        let tat = base + increment;
        Stored {
            tat: Tat(tat),
            expires_at: expiry(now, debt_after),
        }
    });
    let retry_after = if allowed {
        // The part of the debt beyond D is the wait (none without DELAY).
        match cap(wanted.saturating_sub(d).div_ceil(NS_PER_MS)) {
            0 => RetryAfter::Now,
            wait => RetryAfter::Delayed(wait),
        }
    } else if n > rate.capacity {
        RetryAfter::Never
    } else {
        // wanted > D + M here: the time until the same call, with the same DELAY,
        // is admitted.
        RetryAfter::Ms(cap((wanted - d - rate.max_wait).div_ceil(NS_PER_MS)))
    };
    let remaining = d.saturating_sub(debt_after) / t;
    Outcome {
        decision: Decision {
            allowed,
            limit: rate.capacity,
            remaining: u64::try_from(remaining).map_or(rate.capacity, |r| r.min(rate.capacity)),
            retry_after,
            reset_after_ms: cap(debt_after.div_ceil(NS_PER_MS)),
        },
        write: store,
    }
}

/// Gives back up to `n` units: TAT = max(now, TAT − n·T). A TAT back at `now` is
/// the initial state: the key is deleted. A TAT already there (or no key) changes
/// nothing.
pub fn refund(
    stored: Option<Tat>,
    now: Millis,
    rate: Emission,
    n: Cost,
) -> Outcome<Change<Stored>> {
    let now_ns = u128::try_from(now).unwrap_or(0) * NS_PER_MS;
    let change = stored.filter(|t| t.0 > now_ns && n.get() > 0).map(|t| {
        // n·T < 2^53 · 10 years in ns: far inside u128.
        let tat = t.0.saturating_sub(u128::from(n.get()) * rate.interval);
        if tat <= now_ns {
            Change::Delete
        } else {
            Change::Set(Stored {
                tat: Tat(tat),
                expires_at: expiry(now, tat - now_ns),
            })
        }
    });
    let after = after(&change, stored, |s| s.tat);
    refunded(change, decide(after, now, rate, Cost::ZERO).decision)
}

/// Charges `n` units after the fact, whatever is left: TAT = max(TAT, now) + n·T,
/// with no cap at D: the debt beyond D is repaid by time before the next call
/// passes. Always writes; the key expires at ceil(TAT / 10^6) ms (capped at
/// 2^53 − 1 ms from now).
pub fn debit(stored: Option<Tat>, now: Millis, rate: Emission, n: Count) -> Outcome<Stored> {
    let now_ns = u128::try_from(now).unwrap_or(0) * NS_PER_MS;
    let base = stored.map_or(now_ns, |t| t.0.max(now_ns));
    // n·T < 2^53 · 10 years in ns; repeated debits stop at the largest TAT a key
    // can hold (2^128 − 1 ns), which no reply or expiry can tell apart.
    let tat = base.saturating_add(u128::from(n.get()) * rate.interval);
    let store = Stored {
        tat: Tat(tat),
        expires_at: expiry(now, tat - now_ns),
    };
    debited(
        store,
        decide(Some(Tat(tat)), now, rate, Cost::ZERO).decision,
    )
}

one_value_algorithm!(
    /// The generic cell rate algorithm (RL.GCRA, CL.THROTTLE).
    Gcra,
    Tat,
    Emission
);

/// `now + ceil(debt / 10^6)` ms, the key's absolute expiry: ceil(TAT / 10^6) when
/// `now` is a whole ms (it always is), capped like every reply duration.
fn expiry(now: Millis, debt: u128) -> Millis {
    super::at_plus(now, cap(debt.div_ceil(NS_PER_MS)))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::algorithms::{Algorithm, Amount};
    use crate::algorithms::{Count, Interval, MAX_COUNT, MAX_DURATION_MS};

    fn rate(capacity: u64, tokens: u64, period_ms: u64) -> Emission {
        Emission::new(Rate {
            capacity: Count::new(capacity).unwrap(),
            tokens: Count::new(tokens).unwrap(),
            period: Interval::from_ms(period_ms).unwrap(),
        })
        .unwrap()
    }
    fn cost(n: u64) -> Cost {
        Cost::new(n).unwrap()
    }
    fn fields(d: &Decision) -> (i64, u64, u64, i64, u64) {
        (
            i64::from(d.allowed),
            d.limit,
            d.remaining,
            d.retry_after_ms(),
            d.reset_after_ms,
        )
    }

    fn call(state: &mut Option<Tat>, now: Millis, r: Emission, n: u64) -> Decision {
        let out = decide(*state, now, r, cost(n));
        if let Some(s) = out.write {
            *state = Some(s.tat);
        }
        out.decision
    }

    #[test]
    fn spec_vector_capacity_5_one_per_second() {
        let r = rate(5, 1, 1000);
        let mut s = None;
        assert_eq!(fields(&call(&mut s, 0, r, 6)), (0, 5, 5, -1, 0));
        for (remaining, reset) in [(4, 1000), (3, 2000), (2, 3000), (1, 4000), (0, 5000)] {
            assert_eq!(fields(&call(&mut s, 0, r, 1)), (1, 5, remaining, 0, reset));
        }
        assert_eq!(fields(&call(&mut s, 0, r, 1)), (0, 5, 0, 1000, 5000));
        assert_eq!(fields(&call(&mut s, 3000, r, 1)), (1, 5, 2, 0, 3000));
        assert_eq!(fields(&call(&mut s, 3100, r, 1)), (1, 5, 1, 0, 3900));
        assert_eq!(s, Some(Tat(7_000_000_000)));
    }

    #[test]
    fn spec_delay_vector_schedules_instead_of_rejecting() {
        // Capacity 2, 1 token per second, DELAY 3s, all at t = 0.
        let r = rate(2, 1, 1000).with_delay(3000);
        let mut s = None;
        for want in [
            (1, 2, 1, 0, 1000),
            (1, 2, 0, 0, 2000),
            (1, 2, 0, 1000, 3000),
            (1, 2, 0, 2000, 4000),
            (1, 2, 0, 3000, 5000),
        ] {
            assert_eq!(fields(&call(&mut s, 0, r, 1)), want);
        }
        let out = decide(s, 0, r, cost(1));
        assert_eq!(fields(&out.decision), (0, 2, 0, 1000, 5000));
        assert_eq!(out.write, None, "the sixth call writes nothing");
        assert_eq!(s, Some(Tat(5_000_000_000)));
        // The wait is the Delayed variant: allowed, act after it.
        let r = rate(2, 1, 1000).with_delay(3000);
        let d = decide(Some(Tat(2_000_000_000)), 0, r, cost(1)).decision;
        assert_eq!(d.retry_after, RetryAfter::Delayed(1000));
    }

    #[test]
    fn delay_zero_is_the_call_without_delay() {
        let r = rate(3, 2, 1000);
        for tat in [
            None,
            Some(Tat(1)),
            Some(Tat(1_499_999_999)),
            Some(Tat(9_000_000_001)),
        ] {
            for n in [0, 1, 2, 3, 4] {
                assert_eq!(
                    decide(tat, 1000, r.with_delay(0), cost(n)),
                    decide(tat, 1000, r, cost(n))
                );
            }
        }
    }

    #[test]
    fn spec_debit_vector_settles_into_debt_repaid_by_time() {
        // Capacity 5, 1 per second, t = 0: COST 2, DEBIT 6, COST 1; at 4 s COST 1.
        let r = rate(5, 1, 1000);
        let mut s = None;
        assert_eq!(fields(&call(&mut s, 0, r, 2)), (1, 5, 3, 0, 2000));
        let out = debit(s, 0, r, Count::new(6).unwrap());
        assert_eq!(fields(&out.decision), (1, 5, 0, 0, 8000));
        let store = out.write.unwrap();
        assert_eq!(store.tat, Tat(8_000_000_000), "no cap at D = 5 s");
        assert_eq!(store.expires_at, 8000);
        s = Some(store.tat);
        let rejected = decide(s, 0, r, cost(1));
        assert_eq!(fields(&rejected.decision), (0, 5, 0, 4000, 8000));
        assert_eq!(rejected.write, None);
        assert!(!decide(s, 3999, r, cost(1)).decision.allowed);
        assert_eq!(fields(&call(&mut s, 4000, r, 1)), (1, 5, 0, 0, 5000));
    }

    #[test]
    fn a_debit_at_the_limit_or_on_a_drained_tat_starts_from_now() {
        let r = rate(3, 1, 1000);
        // At the limit (debt = D = 3 s), DEBIT 1 adds one more second of debt.
        let out = debit(Some(Tat(13_000_000_000)), 10_000, r, Count::new(1).unwrap());
        assert_eq!(fields(&out.decision), (1, 3, 0, 0, 4000));
        assert_eq!(out.write.map(|s| s.tat), Some(Tat(14_000_000_000)));
        // A TAT in the past, or no key: the debit counts from now.
        for stored in [None, Some(Tat(1))] {
            let out = Gcra::call(stored, 10_000, r, Amount::Debit(Count::new(2).unwrap()));
            assert_eq!(fields(&out.decision), (1, 3, 1, 0, 2000));
            assert!(matches!(out.write, Some(Change::Set(s)) if s.tat == Tat(12_000_000_000)));
        }
    }

    #[test]
    fn debits_at_the_bounds_do_not_overflow() {
        let r = rate(MAX_COUNT, 1, MAX_DURATION_MS);
        let n = Count::new(MAX_COUNT).unwrap();
        let now = 1_700_000_000_000;
        let out = debit(None, now, r, n);
        let s = out.write.unwrap();
        // n·T ≈ 2.8·10^36 ns: far past 2^53 − 1 ms, which caps the expiry and reply.
        assert_eq!(
            s.tat.0,
            now as u128 * NS_PER_MS + u128::from(MAX_COUNT) * 315_360_000_000 * NS_PER_MS
        );
        assert_eq!(s.expires_at, now + MAX_COUNT as i64);
        assert_eq!(fields(&out.decision), (1, MAX_COUNT, 0, 0, MAX_COUNT));
        // Debit after debit (about 10^5 of them): the TAT stops at 2^128 − 1.
        let near = u128::MAX - u128::from(MAX_COUNT) * 315_360_000_000 * NS_PER_MS / 2;
        let tat = debit(Some(Tat(near)), now, r, n).write.map(|s| s.tat);
        assert_eq!(tat, Some(Tat(u128::MAX)));
        let out = debit(tat, i64::MAX, r, n);
        assert_eq!(out.write.map(|s| s.tat), Some(Tat(u128::MAX)));
        assert!(out.decision.allowed && out.decision.reset_after_ms <= MAX_COUNT);
        let out = debit(None, i64::MIN, rate(1, 1, 1), n);
        assert!(out.decision.allowed);
        assert_eq!(
            out.write.map(|s| s.expires_at),
            Some(i64::MIN + MAX_COUNT as i64)
        );
    }

    #[test]
    fn a_delayed_call_takes_cost_and_waits_at_most_max() {
        // Capacity 4, 1 per 100 ms, DELAY 250ms: COST 3 twice at t = 0.
        let r = rate(4, 1, 100).with_delay(250);
        let mut s = None;
        assert_eq!(fields(&call(&mut s, 0, r, 3)), (1, 4, 1, 0, 300));
        // Debt 300 + 300 = 600 ms > D = 400 ms: wait 200 ms (≤ 250).
        assert_eq!(fields(&call(&mut s, 0, r, 3)), (1, 4, 0, 200, 600));
        // Another unit: 700 − 400 = 300 > 250, rejected for 50 ms.
        assert_eq!(fields(&call(&mut s, 0, r, 1)), (0, 4, 0, 50, 600));
        assert!(decide(s, 50, r, cost(1)).decision.allowed);
        assert!(!decide(s, 49, r, cost(1)).decision.allowed);
        // More than the capacity is never admitted, however long the delay.
        let long = rate(4, 1, 100).with_delay(MAX_DURATION_MS);
        assert_eq!(
            fields(&decide(None, 0, long, cost(5)).decision),
            (0, 4, 4, -1, 0)
        );
    }

    #[test]
    fn cost_zero_with_delay_reports_the_wait_and_writes_nothing() {
        let r = rate(2, 1, 1000).with_delay(3000);
        let out = decide(Some(Tat(3_500_000_000)), 0, r, cost(0));
        assert_eq!(out.write, None);
        assert_eq!(fields(&out.decision), (1, 2, 0, 1500, 3500));
    }

    #[test]
    fn a_sub_millisecond_wait_rounds_up_to_one_ms() {
        // T = 0.5 ms, capacity 1: the second call's turn is 0.5 ms away.
        let r = rate(1, 2000, 1000).with_delay(1);
        let mut s = None;
        assert_eq!(fields(&call(&mut s, 10, r, 1)), (1, 1, 0, 0, 1));
        assert_eq!(fields(&call(&mut s, 10, r, 1)), (1, 1, 0, 1, 1));
        assert_eq!(fields(&call(&mut s, 10, r, 1)), (1, 1, 0, 1, 2));
        assert_eq!(fields(&call(&mut s, 10, r, 1)), (0, 1, 0, 1, 2));
        assert_eq!(s, Some(Tat(11_500_000)));
    }

    #[test]
    fn redis_cell_vectors() {
        // CL.THROTTLE user123 15 30 60: capacity 16, 30 per 60 s.
        let out = decide(None, 0, rate(16, 30, 60_000), cost(1));
        assert_eq!(fields(&out.decision), (1, 16, 15, 0, 2000));
        // CL.THROTTLE k 0 1 2: capacity 1, 1 per 2 s; at once again → limited 2 s.
        let r = rate(1, 1, 2000);
        let mut s = None;
        assert_eq!(fields(&call(&mut s, 0, r, 1)), (1, 1, 0, 0, 2000));
        assert_eq!(fields(&call(&mut s, 0, r, 1)), (0, 1, 0, 2000, 2000));
        // redis-cell's it_rate_limits: burst 5 (capacity 6), 1 per second; six
        // at once pass, the seventh waits a second.
        let r = rate(6, 1, 1000);
        let mut s = None;
        for remaining in (0..6).rev() {
            let d = call(&mut s, 1_000_000, r, 1);
            assert!(d.allowed);
            assert_eq!(d.remaining, remaining);
        }
        let d = call(&mut s, 1_000_000, r, 1);
        assert_eq!(fields(&d), (0, 6, 0, 1000, 6000));
    }

    #[test]
    fn state_is_the_tat_and_the_key_expires_at_it() {
        let out = decide(None, 1_700_000_000_000, rate(5, 1, 1000), cost(2));
        let s = out.write.unwrap();
        assert_eq!(s.tat, Tat(1_700_000_002_000_000_000));
        assert_eq!(s.expires_at, 1_700_000_002_000);
    }

    #[test]
    fn an_emission_interval_under_a_millisecond_keeps_its_state() {
        // 2000 per second: T = 0.5 ms. redis-cell sets a 0 ms TTL and forgets.
        let r = rate(1, 2000, 1000);
        let out = decide(None, 10, r, cost(1));
        let s = out.write.unwrap();
        assert_eq!(s.tat, Tat(10_500_000));
        assert_eq!(s.expires_at, 11, "ceil to the next ms, never 0 ms");
        assert_eq!(out.decision.reset_after_ms, 1);
        assert!(!decide(Some(s.tat), 10, r, cost(1)).decision.allowed);
        assert!(decide(Some(s.tat), 11, r, cost(1)).decision.allowed);
    }

    #[test]
    fn too_many_tokens_per_period_is_unrepresentable() {
        let r = Rate {
            capacity: Count::new(1).unwrap(),
            tokens: Count::new(1_000_001).unwrap(),
            period: Interval::from_ms(1).unwrap(),
        };
        assert_eq!(Emission::new(r), None);
        let r = Rate {
            tokens: Count::new(1_000_000).unwrap(),
            ..r
        };
        assert!(Emission::new(r).is_some());
    }

    #[test]
    fn remaining_never_exceeds_the_limit_and_cost_zero_writes_nothing() {
        // A TAT far in the past (redis-cell can report remaining above the limit).
        let r = rate(6000, 6000, 1000);
        let out = decide(Some(Tat(1)), 1_000_000, r, cost(0));
        assert_eq!(out.write, None);
        assert_eq!(fields(&out.decision), (1, 6000, 6000, 0, 0));
        let out = decide(None, 5, r, cost(1));
        assert_eq!(out.decision.remaining, 5999);
    }

    #[test]
    fn a_lowered_capacity_rejects_until_the_debt_drains() {
        // Debt of 10 s under capacity 10; capacity now 3 (D = 3 s).
        let tat = Some(Tat(10_000_000_000));
        let r = rate(3, 1, 1000);
        let d = decide(tat, 0, r, cost(1)).decision;
        assert_eq!(fields(&d), (0, 3, 0, 8000, 10_000));
        let d = decide(tat, 0, r, cost(0)).decision;
        assert_eq!(fields(&d), (0, 3, 0, 7000, 10_000));
        assert!(decide(tat, 8000, r, cost(1)).decision.allowed);
    }

    #[test]
    fn a_clock_stepping_back_grants_nothing_more() {
        let r = rate(2, 1, 1000);
        let mut s = None;
        call(&mut s, 10_000, r, 2);
        assert!(!call(&mut s, 5_000, r, 1).allowed, "debt measured from 5 s");
        assert!(!call(&mut s, 10_999, r, 1).allowed);
        assert!(call(&mut s, 11_000, r, 1).allowed);
    }

    #[test]
    fn retry_after_is_exact_to_the_millisecond() {
        for r in [
            rate(5, 1, 1000),
            rate(3, 7, 1000),
            rate(10, 3, 7),
            rate(1, 2000, 1000),
        ] {
            for start_debt_ns in [0u128, 1, 499_999, 1_000_000, 2_345_678_901] {
                let tat = Some(Tat(1_000_000_000 + start_debt_ns));
                for n in 1..=r.capacity.min(12) {
                    let d = decide(tat, 1000, r, cost(n)).decision;
                    let RetryAfter::Ms(wait) = d.retry_after else {
                        continue;
                    };
                    let wait = wait as i64;
                    assert!(wait > 0);
                    assert!(decide(tat, 1000 + wait, r, cost(n)).decision.allowed);
                    assert!(!decide(tat, 1000 + wait - 1, r, cost(n)).decision.allowed);
                }
            }
        }
    }

    #[test]
    fn bounds_do_not_overflow() {
        let r = rate(MAX_COUNT, 1, MAX_DURATION_MS);
        let out = decide(None, i64::MAX / 2_000_000, r, cost(MAX_COUNT));
        assert!(out.decision.allowed);
        assert_eq!(out.decision.reset_after_ms, MAX_COUNT);
        let s = out.write.unwrap();
        let d = decide(Some(s.tat), 0, r, cost(MAX_COUNT)).decision;
        assert!(!d.allowed);
        assert!(d.retry_after_ms() <= MAX_COUNT as i64);
        let d = decide(Some(Tat(u128::MAX)), i64::MAX, r, cost(1)).decision;
        assert!(!d.allowed && d.remaining == 0);
        let d = decide(None, i64::MIN, rate(1, 1, 1), cost(1)).decision;
        assert!(d.allowed);
        let long = r.with_delay(u64::MAX);
        let d = decide(Some(Tat(u128::MAX)), i64::MAX, long, cost(MAX_COUNT)).decision;
        assert!(!d.allowed && d.retry_after_ms() <= MAX_COUNT as i64);
        let d = decide(Some(s.tat), i64::MAX / 2_000_000, long, cost(1)).decision;
        assert_eq!(d.retry_after, RetryAfter::Delayed(MAX_DURATION_MS));
    }
}
