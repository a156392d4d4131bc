//! Token bucket (the seed's two-field hash, recomputed atomically).
//!
//! The bucket holds at most `capacity` tokens and gains `tokens` every `period`,
//! continuously. A missing key is a full bucket.
//!
//! Exactness: the level is kept in millionths of a token (what the hash stores as a
//! decimal with up to six places). Within one call all arithmetic is exact integer
//! arithmetic in units of 1 / (10^6 · period) token, so refill, comparison,
//! retry_after and reset_after carry no rounding; the only rounding is the floor to
//! a millionth when an allowed call stores the new level, which is always down (never
//! grants more) and at most 10^-6 token per allowed call.
//!
//! A debit (`DEBIT n`) takes tokens whatever is left: the level may go below zero,
//! down to −(2^53 − 1) tokens, and refills from there at the same rate.

pub use super::Rate;
use super::{
    at_plus, cap, ms_until, one_value_algorithm, refunded, Change, Cost, Count, Decision, Millis,
    Outcome, RetryAfter, MAX_COUNT,
};

/// Millionths of a token: the stored level's resolution (the decimal reader's).
pub use crate::decimal::MICROS;

/// The lowest level a bucket holds, in millionths: −(2^53 − 1) tokens of debt.
pub const LOWEST_MICROS: i128 = -(MAX_COUNT as i128) * MICROS as i128;

/// What the hash holds: the level (in millionths of a token, below zero for a
/// bucket in debt) at time `ts`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct State {
    pub level_micros: i128,
    pub ts: Millis,
}

/// The bucket to store after an allowed call, and when the key may vanish (the
/// moment the bucket is full again).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Stored {
    pub bucket: State,
    pub expires_at: Millis,
}

// Exact levels are i128 in units of 1 / (10^6 · period) token: a full bucket is at
// most 2^53 · 10^6 · 10 years in ms < 2^112, and so is the deepest debt.
impl Rate {
    /// One token in the call's exact unit, 1 / (10^6 · period) token... times 10^6 · period.
    fn token(&self) -> i128 {
        MICROS as i128 * i128::from(self.period.ms())
    }

    /// Exact units gained per millisecond: tokens · 10^6 (the period cancels out).
    fn per_ms(&self) -> i128 {
        i128::from(self.tokens.get()) * MICROS as i128
    }

    fn full(&self) -> i128 {
        i128::from(self.capacity.get()) * self.token()
    }

    /// The deepest debt: −(2^53 − 1) tokens.
    fn lowest(&self) -> i128 {
        -(MAX_COUNT as i128) * self.token()
    }

    /// Whole milliseconds until `deficit` exact units have refilled, rounded up
    /// (0 for none).
    fn ms_to_gain(&self, deficit: i128) -> u128 {
        (deficit.max(0) as u128).div_ceil(self.per_ms() as u128)
    }
}

/// Decides one call against the stored bucket (None when the key is absent).
pub fn decide(stored: Option<State>, now: Millis, rate: Rate, cost: Cost) -> Outcome<Stored> {
    let (at, level) = level_at(stored, now, rate);
    let n = cost.get();
    let wanted = i128::from(n) * rate.token();
    let allowed = wanted <= level;

    // The exact level after this call: what the reply reports and when the bucket
    // is full again. Only the stored copy is rounded (down, to a millionth).
    let level_after = if allowed { level - wanted } else { level };
    let settled = settle(at, level_after, now, rate);
    let retry_after = if allowed {
        RetryAfter::Now
    } else if n > rate.capacity.get() {
        RetryAfter::Never
    } else {
        let wait = cap(rate.ms_to_gain(wanted - level));
        RetryAfter::Ms(ms_until(at_plus(at, wait), now))
    };
    Outcome {
        decision: Decision {
            allowed,
            retry_after,
            ..settled.report
        },
        write: (allowed && n > 0).then_some(settled.write),
    }
}

/// Gives back up to `n` tokens: level = min(capacity, level + n). A bucket that is
/// full again is deleted (a missing key is a full bucket); a full one changes
/// nothing.
pub fn refund(stored: Option<State>, now: Millis, rate: Rate, n: Cost) -> Outcome<Change<Stored>> {
    let (at, level) = level_at(stored, now, rate);
    let full = rate.full();
    // n · token < 2^53 · 10^6 · 10 years in ms: far inside i128.
    let level_after = (level + i128::from(n.get()) * rate.token()).min(full);
    let settled = settle(at, level_after, now, rate);
    let change = if stored.is_none() || level_after == level {
        None
    } else if level_after == full {
        Some(Change::Delete)
    } else {
        Some(Change::Set(settled.write))
    };
    refunded(change, settled.report)
}

/// Charges `n` tokens after the fact, whatever is left: level −= n, below zero if
/// need be (a debt the refill repays), down to −(2^53 − 1) tokens. Always writes;
/// the key expires when the bucket is full again.
pub fn debit(stored: Option<State>, now: Millis, rate: Rate, n: Count) -> Outcome<Stored> {
    let (at, level) = level_at(stored, now, rate);
    let level_after = (level - i128::from(n.get()) * rate.token()).max(rate.lowest());
    let settled = settle(at, level_after, now, rate);
    Outcome {
        decision: settled.report,
        write: Some(settled.write),
    }
}

one_value_algorithm!(
    /// The token bucket (RL.BUCKET).
    TokenBucket,
    State,
    Rate
);

/// When the call is decided and the exact level then. Time never runs backwards
/// for a bucket: a call made while the clock is behind the last write is decided
/// at the write's time, so it refills nothing.
fn level_at(stored: Option<State>, now: Millis, rate: Rate) -> (Millis, i128) {
    match stored {
        None => (now, rate.full()),
        Some(b) => {
            let at = now.max(b.ts);
            (at, refill(b, at, rate))
        }
    }
}

/// A bucket holding exactly `level` at `at`: what to store, and the reply's
/// limit, remaining and reset_after (allowed and retry_after are the caller's).
struct Settled {
    write: Stored,
    report: Decision,
}

// Inlined: its caller's take path then costs what it did with unsigned levels.
#[inline(always)]
fn settle(at: Millis, level: i128, now: Millis, rate: Rate) -> Settled {
    let full = rate.full();
    let resets_at = at_plus(at, cap(rate.ms_to_gain(full - level)));
    Settled {
        write: Stored {
            bucket: State {
                // Rounded down, below zero too (toward −∞): never more than exact.
                level_micros: floor_div(level, i128::from(rate.period.ms())),
                ts: at,
            },
            // The exact model is full again then; until then the stored (lower)
            // level never grants more than the exact one, and from then on a
            // missing key is the same full bucket.
            expires_at: resets_at,
        },
        report: Decision {
            allowed: true,
            limit: rate.capacity.get(),
            // level <= full, so this is at most capacity; 0 while in debt.
            remaining: floor_div(level.max(0), rate.token()) as u64,
            retry_after: RetryAfter::Now,
            reset_after_ms: if level >= full {
                0
            } else {
                ms_until(resets_at, now)
            },
        },
    }
}

/// floor(a / b) for b > 0; unsigned division when a >= 0, the common case (a bucket
/// not in debt), which costs less than a signed one.
fn floor_div(a: i128, b: i128) -> i128 {
    if a >= 0 {
        // Both non-negative: the casts keep the values.
        (a as u128 / b as u128) as i128
    } else {
        a.div_euclid(b)
    }
}

/// The exact level at `at` (>= b.ts), clamped to the capacity.
fn refill(b: State, at: Millis, rate: Rate) -> i128 {
    let full = rate.full();
    let period = i128::from(rate.period.ms());
    // A stored level above the capacity (the capacity was lowered) is clamped first;
    // one below the deepest debt (never stored) is read as that debt.
    let capacity_micros = i128::from(rate.capacity.get()) * MICROS as i128;
    let base = b.level_micros.clamp(LOWEST_MICROS, capacity_micros) * period;
    let elapsed = (i128::from(at) - i128::from(b.ts)).max(0);
    // elapsed >= 0: the cast keeps its value.
    if elapsed as u128 >= rate.ms_to_gain(full - base) {
        full
    } else {
        // elapsed < ceil((full - base) / per_ms), so the product stays below
        // full + per_ms: no overflow.
        base + elapsed * rate.per_ms()
    }
}

#[cfg(test)]
mod tests {
    use crate::algorithms::Algorithm;
    use crate::algorithms::Amount;

    fn call_amount(s: Option<State>, now: Millis, r: Rate, a: Amount) -> Outcome<Change<Stored>> {
        TokenBucket::call(s, now, r, a)
    }
    use super::*;
    use crate::algorithms::Interval;
    use crate::algorithms::{MAX_COUNT, MAX_DURATION_MS};
    use num_rational::Ratio;

    fn rate(capacity: u64, tokens: u64, period_ms: u64) -> Rate {
        Rate {
            capacity: Count::new(capacity).unwrap(),
            tokens: Count::new(tokens).unwrap(),
            period: Interval::from_ms(period_ms).unwrap(),
        }
    }
    fn cost(n: u64) -> Cost {
        Cost::new(n).unwrap()
    }

    fn call(state: &mut Option<State>, now: Millis, r: Rate, n: u64) -> Decision {
        let out = decide(*state, now, r, cost(n));
        if let Some(s) = out.write {
            *state = Some(s.bucket);
        }
        out.decision
    }

    #[test]
    fn seed_vector_5_tokens_refilling_1_per_second() {
        // docs/commands.md#rlbucket: seven calls at t = 0, then one at t = 3 s.
        let r = rate(5, 1, 1000);
        let mut state = None;
        let expected = [
            (true, 4, 0),
            (true, 3, 0),
            (true, 2, 0),
            (true, 1, 0),
            (true, 0, 0),
            (false, 0, 1000),
            (false, 0, 1000),
        ];
        for (i, want) in expected.into_iter().enumerate() {
            let d = call(&mut state, 0, r, 1);
            assert_eq!(
                (d.allowed, d.remaining, d.retry_after_ms()),
                want,
                "call {}",
                i + 1
            );
        }
        let d = call(&mut state, 3000, r, 1);
        assert_eq!((d.allowed, d.remaining, d.retry_after_ms()), (true, 2, 0));
        assert_eq!(d.reset_after_ms, 3000);
        assert_eq!(
            state,
            Some(State {
                level_micros: 2_000_000,
                ts: 3000
            })
        );
    }

    #[test]
    fn a_missing_bucket_is_full() {
        let out = decide(None, 10, rate(5, 1, 1000), cost(0));
        assert_eq!(out.write, None);
        assert_eq!(out.decision.remaining, 5);
        assert_eq!(out.decision.reset_after_ms, 0);
    }

    #[test]
    fn fractions_accrue_continuously() {
        // 1 token per 3 ms: after 1 ms a third of a token is there.
        let r = rate(1, 1, 3);
        let mut state = None;
        assert!(call(&mut state, 0, r, 1).allowed);
        let out = decide(state, 1, r, cost(1));
        assert!(!out.decision.allowed);
        assert_eq!(out.decision.retry_after_ms(), 2);
        let state2 = Some(State {
            level_micros: 0,
            ts: 0,
        });
        assert!(decide(state2, 3, r, cost(1)).decision.allowed);
        assert!(!decide(state2, 2, r, cost(1)).decision.allowed);
    }

    #[test]
    fn stored_level_is_floored_to_a_millionth() {
        // 1 token per 3 ms, capacity 2, empty at 0; at 1 ms the level is 1/3.
        // Taking nothing is not a write, so take from a fuller bucket: level 4/3 at 4 ms.
        let r = rate(2, 1, 3);
        let state = Some(State {
            level_micros: 0,
            ts: 0,
        });
        let out = decide(state, 4, r, cost(1));
        assert!(out.decision.allowed);
        let s = out.write.unwrap();
        assert_eq!(s.bucket.level_micros, 333_333);
        // Full again when the exact 5/3 tokens have refilled: 5 ms, not the 6 ms
        // the stored (rounded) 2 - 0.333333 would take.
        assert_eq!(s.expires_at, 4 + 5);
        assert_eq!(out.decision.reset_after_ms, 5);
    }

    #[test]
    fn reset_after_comes_from_the_exact_level_not_the_stored_one() {
        // Capacity 3, 1 token per 300 ms, empty at 0. At 301 ms the level is
        // 301/300; taking 1 leaves 1/300, full again after (3 - 1/300) * 300 = 899 ms.
        let r = rate(3, 1, 300);
        let empty = Some(State {
            level_micros: 0,
            ts: 0,
        });
        let out = decide(empty, 301, r, cost(1));
        assert!(out.decision.allowed);
        assert_eq!(out.decision.remaining, 0);
        assert_eq!(out.decision.reset_after_ms, 899);
        let s = out.write.unwrap();
        assert_eq!(s.bucket.level_micros, 3_333, "stored rounded down");
        assert_eq!(
            s.expires_at,
            301 + 899,
            "the key expires when the bucket is full"
        );
    }

    #[test]
    fn retry_after_is_exact_to_the_millisecond() {
        // For many states: allowed at now + retry_after, rejected one ms earlier.
        let rates = [
            rate(5, 1, 1000),
            rate(10, 3, 1000),
            rate(7, 7, 1),
            rate(3, 2, 7),
        ];
        for r in rates {
            for micros in [0i128, 1, 499_999, 999_999, 1_000_000, 2_345_678] {
                for n in 1..=r.capacity.get() {
                    let b = Some(State {
                        level_micros: micros,
                        ts: 1000,
                    });
                    let d = decide(b, 1000, r, cost(n)).decision;
                    if d.allowed {
                        continue;
                    }
                    let wait = d.retry_after_ms();
                    assert!(wait > 0);
                    assert!(decide(b, 1000 + wait, r, cost(n)).decision.allowed);
                    assert!(!decide(b, 1000 + wait - 1, r, cost(n)).decision.allowed);
                }
            }
        }
    }

    #[test]
    fn cost_above_capacity_is_never_allowed() {
        let out = decide(None, 0, rate(5, 1, 1000), cost(6));
        assert!(!out.decision.allowed);
        assert_eq!(out.decision.retry_after, RetryAfter::Never);
        assert_eq!(out.write, None);
    }

    #[test]
    fn level_never_exceeds_capacity_and_lowered_capacity_clamps() {
        let r = rate(5, 1, 1000);
        let b = Some(State {
            level_micros: 2_000_000,
            ts: 0,
        });
        let d = decide(b, 1_000_000, r, cost(0)).decision;
        assert_eq!((d.remaining, d.reset_after_ms), (5, 0));
        // Stored 9 tokens, capacity now 3.
        let over = Some(State {
            level_micros: 9_000_000,
            ts: 0,
        });
        let d = decide(over, 0, rate(3, 1, 1000), cost(1)).decision;
        assert_eq!(d.remaining, 2);
    }

    #[test]
    fn a_clock_stepping_back_refills_nothing() {
        let r = rate(5, 1, 1000);
        let b = Some(State {
            level_micros: 1_000_000,
            ts: 10_000,
        });
        let out = decide(b, 4_000, r, cost(1));
        assert!(out.decision.allowed);
        assert_eq!(
            out.write.map(|s| s.bucket),
            Some(State {
                level_micros: 0,
                ts: 10_000
            }),
            "the write keeps the later time"
        );
        let out = decide(out.write.map(|s| s.bucket), 4_000, r, cost(1));
        assert_eq!(out.decision.retry_after_ms(), 7_000, "one token at 11 000");
    }

    #[test]
    fn bounds_do_not_overflow() {
        let r = rate(MAX_COUNT, 1, MAX_DURATION_MS);
        let out = decide(None, 0, r, cost(MAX_COUNT));
        assert!(out.decision.allowed);
        assert_eq!(out.decision.reset_after_ms, MAX_COUNT);
        let s = out.write.unwrap();
        assert_eq!(s.expires_at, MAX_COUNT as i64);
        let d = decide(Some(s.bucket), 1, r, cost(MAX_COUNT)).decision;
        assert!(!d.allowed);
        assert_eq!(d.retry_after_ms(), MAX_COUNT as i64);
        let fast = rate(MAX_COUNT, MAX_COUNT, 1);
        let b = Some(State {
            level_micros: i128::MAX,
            ts: i64::MIN,
        });
        let d = decide(b, i64::MAX, fast, cost(MAX_COUNT)).decision;
        assert!(d.allowed);
        let b = Some(State {
            level_micros: 0,
            ts: i64::MIN,
        });
        assert!(decide(b, i64::MAX, r, cost(1)).decision.allowed);
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

    fn debt(tokens: u64) -> Count {
        Count::new(tokens).unwrap()
    }

    #[test]
    fn spec_debit_vector_leaves_a_negative_level() {
        // RL.BUCKET 5 1 1s at t = 0: COST 2, then DEBIT 6: tokens -3.
        let r = rate(5, 1, 1000);
        let mut state = None;
        assert_eq!(fields(&call(&mut state, 0, r, 2)), (true, 5, 3, 0, 2000));
        let out = debit(state, 0, r, debt(6));
        assert_eq!(fields(&out.decision), (true, 5, 0, 0, 8000));
        let s = out.write.unwrap();
        assert_eq!(
            s.bucket,
            State {
                level_micros: -3_000_000,
                ts: 0
            }
        );
        assert_eq!(s.expires_at, 8000, "expires when full again");
        // Rejected until the debt is repaid and one token is back: 4 s.
        let d = decide(Some(s.bucket), 0, r, cost(1)).decision;
        assert_eq!(fields(&d), (false, 5, 0, 4000, 8000));
        assert!(!decide(Some(s.bucket), 3999, r, cost(1)).decision.allowed);
        let d = decide(Some(s.bucket), 4000, r, cost(1)).decision;
        assert_eq!(fields(&d), (true, 5, 0, 0, 5000));
        // Full again at 8 s.
        let d = decide(Some(s.bucket), 8000, r, cost(0)).decision;
        assert_eq!((d.remaining, d.reset_after_ms), (5, 0));
    }

    #[test]
    fn a_debit_at_the_limit_and_beyond_refills_at_the_same_rate() {
        // 1 token per 2 ms, capacity 3, empty at 10: DEBIT 1 takes it to -1.
        let r = rate(3, 1, 2);
        let empty = Some(State {
            level_micros: 0,
            ts: 10,
        });
        let out = debit(empty, 10, r, debt(1));
        assert_eq!(fields(&out.decision), (true, 3, 0, 0, 8));
        let s = out.write.unwrap().bucket;
        assert_eq!(s.level_micros, -1_000_000);
        // 3 ms later: -1 + 1.5 = 0.5; DEBIT 2.25 is not possible (whole units), DEBIT 2: -1.5.
        let out = call_amount(Some(s), 13, r, Amount::Debit(debt(2)));
        let Some(Change::Set(s)) = out.write else {
            panic!("a debit always writes: {out:?}");
        };
        assert_eq!(
            s.bucket,
            State {
                level_micros: -1_500_000,
                ts: 13
            }
        );
        assert_eq!(out.decision.reset_after_ms, 9);
        // A negative level refunds, refills and clamps like any other.
        let out = refund(Some(s.bucket), 13, r, cost(1));
        assert!(matches!(out.write, Some(Change::Set(s)) if s.bucket.level_micros == -500_000));
        assert_eq!(out.decision.remaining, 0);
        let out = refund(Some(s.bucket), 13, r, cost(10));
        assert_eq!(out.write, Some(Change::Delete));
        let d = decide(Some(s.bucket), 17, r, cost(0)).decision;
        assert_eq!((d.remaining, d.reset_after_ms), (0, 5), "0.5 at 17 ms");
        // Under a new policy (capacity 1, 1 per ms) the debt refills faster.
        let d = decide(Some(s.bucket), 13, rate(1, 1, 1), cost(0)).decision;
        assert_eq!((d.remaining, d.reset_after_ms), (0, 3));
    }

    #[test]
    fn a_negative_level_is_stored_rounded_down() {
        // 1 token per 3 ms, capacity 1, empty at 0; at 1 ms the level is 1/3:
        // DEBIT 1 leaves -2/3, stored as -0.666667 (lower, never higher).
        let r = rate(1, 1, 3);
        let empty = Some(State {
            level_micros: 0,
            ts: 0,
        });
        let out = debit(empty, 1, r, debt(1));
        let s = out.write.unwrap();
        assert_eq!(s.bucket.level_micros, -666_667);
        // Full again when the exact 5/3 tokens have refilled: 5 ms.
        assert_eq!(out.decision.reset_after_ms, 5);
        assert_eq!(s.expires_at, 6);
    }

    #[test]
    fn debits_stop_at_the_deepest_debt_and_do_not_overflow() {
        let r = rate(MAX_COUNT, 1, MAX_DURATION_MS);
        let out = debit(None, 0, r, debt(MAX_COUNT));
        assert_eq!(fields(&out.decision), (true, MAX_COUNT, 0, 0, MAX_COUNT));
        let s = out.write.unwrap();
        assert_eq!(s.bucket.level_micros, 0);
        assert_eq!(s.expires_at, MAX_COUNT as i64, "capped");
        let out = debit(Some(s.bucket), 0, r, debt(MAX_COUNT));
        assert_eq!(out.write.unwrap().bucket.level_micros, LOWEST_MICROS);
        let out = debit(out.write.map(|s| s.bucket), 0, r, debt(MAX_COUNT));
        assert_eq!(out.write.unwrap().bucket.level_micros, LOWEST_MICROS);
        assert_eq!(out.decision.reset_after_ms, MAX_COUNT);
        // Levels past the deepest debt (never stored) read as it; no overflow anywhere.
        let fast = rate(MAX_COUNT, MAX_COUNT, 1);
        for level_micros in [i128::MIN, LOWEST_MICROS - 1, LOWEST_MICROS, i128::MAX] {
            for ts in [i64::MIN, 0, i64::MAX] {
                let b = Some(State { level_micros, ts });
                for now in [i64::MIN, 0, i64::MAX] {
                    for r in [r, fast] {
                        let out = debit(b, now, r, debt(MAX_COUNT));
                        assert!(out.decision.reset_after_ms <= MAX_COUNT);
                        let stored = out.write.unwrap().bucket.level_micros;
                        assert!(stored >= LOWEST_MICROS, "{stored}");
                        let d = decide(b, now, r, cost(MAX_COUNT)).decision;
                        assert!(d.retry_after_ms() <= MAX_COUNT as i64);
                        let _ = refund(b, now, r, cost(MAX_COUNT));
                    }
                }
            }
        }
    }

    /// The exact model: level as a rational, refilled by elapsed · tokens / period.
    fn admitted_exact(r: Rate, steps: u64, step_ms: i64) -> u64 {
        let cap = Ratio::from_integer(i128::from(r.capacity.get()));
        let per_ms = Ratio::new(i128::from(r.tokens.get()), i128::from(r.period.ms()));
        let (mut level, mut admitted) = (cap, 0);
        for _ in 0..steps {
            if level >= Ratio::from_integer(1) {
                level -= 1;
                admitted += 1;
            }
            level = (level + per_ms * i128::from(step_ms)).min(cap);
        }
        admitted
    }

    fn admitted_module(r: Rate, steps: u64, step_ms: i64) -> u64 {
        let (mut state, mut admitted, mut now) = (None, 0, 0);
        for _ in 0..steps {
            if call(&mut state, now, r, 1).allowed {
                admitted += 1;
            }
            now += step_ms;
        }
        admitted
    }

    #[test]
    fn no_drift_over_a_million_calls_at_awkward_rates() {
        // (capacity, tokens, period ms, step ms)
        let cases = [
            (10, 3, 1000, 1),
            (10, 7, 1000, 1),
            (5, 1, 3, 1),
            (3, 7, 60_000, 7),
            (2, 1, MAX_DURATION_MS, 1),
        ];
        for (c, t, p, step) in cases {
            let r = rate(c, t, p);
            let exact = admitted_exact(r, 1_000_000, step);
            let module = admitted_module(r, 1_000_000, step);
            assert!(
                module <= exact && exact - module <= 1,
                "rate {t}/{p}ms step {step}: module {module}, exact {exact}"
            );
        }
    }
}
