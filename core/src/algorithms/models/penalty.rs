//! Compiled only for tests (a submodule of `models`, which is `#[cfg(test)]`).
//! RL.PENALTY against the plainest reading of its rules: random strikes and looks
//! (`COST 0`) at random times, the reply equal to the model's while time moves
//! forward, and the reply's invariants, the exact retry_after and the writes when
//! the clock may step back.

use super::*;
use crate::algorithms::penalty::{self, Penalty, State, Stored, BUF_LEN};

/// The rules as written, in wide integers, with nothing left out or merged: a
/// window that opens at the first strike, a block at `strikes`, doubling per
/// level up to `max`, forgiveness `max` after the last block ended.
#[derive(Clone, Default)]
struct PenaltyModel {
    count: u128,
    /// None: no window open.
    window_end: Option<i128>,
    level: u128,
    /// None: no block yet.
    blocked_until: Option<i128>,
}

#[derive(Clone, Copy, Debug)]
struct Params {
    strikes: u64,
    window: u64,
    block: u64,
    max: u64,
}

impl PenaltyModel {
    fn call(&mut self, now: Millis, p: Params, n: u64) -> Decision {
        let now = i128::from(now);
        let (window, block, max) = (i128::from(p.window), i128::from(p.block), i128::from(p.max));
        let mut s = self.clone();
        let blocked = s.blocked_until.is_some_and(|b| now < b);
        if !blocked {
            if s.window_end.is_some_and(|end| now >= end) {
                s.count = 0;
                s.window_end = None;
            }
            if s.level > 0 && s.blocked_until.is_some_and(|b| now >= b + max) {
                s.level = 0;
            }
            if n > 0 {
                if s.count == 0 {
                    s.window_end = Some(now + window);
                }
                s.count += u128::from(n);
                if s.count >= u128::from(p.strikes) {
                    let mut length = block;
                    for _ in 0..s.level {
                        length = (length * 2).min(max);
                    }
                    s.blocked_until = Some(now + length.min(max));
                    s.level += 1;
                    s.count = 0;
                    s.window_end = None;
                }
                *self = s.clone();
            }
        }
        let blocked_now = s.blocked_until.is_some_and(|b| now < b);
        let mut reset_at = s.window_end.unwrap_or(0);
        if s.level > 0 {
            reset_at = reset_at.max(s.blocked_until.unwrap_or(0) + max);
        }
        Decision {
            allowed: !blocked_now,
            limit: p.strikes,
            remaining: if blocked_now {
                0
            } else {
                u128::from(p.strikes).saturating_sub(s.count) as u64
            },
            retry_after: if blocked_now {
                RetryAfter::Ms(ms_between(s.blocked_until.unwrap_or(0), now))
            } else {
                RetryAfter::Now
            },
            reset_after_ms: ms_between(reset_at, now),
        }
    }
}

/// strikes, window, block and max (block ≤ max).
fn params() -> impl Strategy<Value = Params> {
    (count(), duration(), duration(), duration()).prop_map(|(strikes, window, a, b)| Params {
        strikes,
        window,
        block: a.min(b),
        max: a.max(b),
    })
}

fn build(p: Params) -> Penalty {
    Penalty::new(c(p.strikes), d(p.window), d(p.block), d(p.max)).unwrap()
}

/// Mostly single strikes and looks, sometimes all the strikes at once or more.
fn strikes_cost(strikes: u64) -> impl Strategy<Value = u64> {
    prop_oneof![
        4 => 1u64..=2,
        2 => Just(0u64),
        1 => Just(strikes),
        1 => Just(MAX_COUNT),
    ]
}

/// A time step: a random one, or onto an instant where a rule changes its answer
/// (`Edge`), where an off-by-one would show.
#[derive(Clone, Copy, Debug)]
enum Step {
    By(i64),
    /// 1 ms before, at or after the window's end (0), the block's end (1) or the
    /// forgiveness instant (2) of the state at that point; no move without one.
    Edge(u8, i8),
}

impl Step {
    /// The time of the next call after one at `now` that left `state`.
    fn from(self, now: Millis, state: Option<State>, p: Params) -> Millis {
        match self {
            Step::By(dt) => now + dt,
            Step::Edge(which, offset) => {
                let edge = state.and_then(|s| match which {
                    0 => (s.window_end > 0).then_some(s.window_end),
                    1 => (s.blocked_until > 0).then_some(s.blocked_until),
                    _ => (s.level > 0).then_some(s.blocked_until + p.max as i64),
                });
                edge.map_or(now, |t| t + i64::from(offset))
            }
        }
    }
}

/// Steps long enough to see windows end, blocks end and offenders forgiven.
fn penalty_calls(
    p: Params,
    step: fn(u64) -> BoxedStrategy<i64>,
) -> impl Strategy<Value = Vec<(Step, u64)>> {
    let span = p.window.max(p.max);
    let steps = prop_oneof![
        3 => step(span).prop_map(Step::By),
        2 => (0u8..3, -1i8..=1).prop_map(|(w, o)| Step::Edge(w, o)),
    ];
    proptest::collection::vec((steps, strikes_cost(p.strikes)), 1..64)
}

fn with_calls(
    step: fn(u64) -> BoxedStrategy<i64>,
) -> impl Strategy<Value = (Params, Vec<(Step, u64)>)> {
    params().prop_flat_map(move |p| (Just(p), penalty_calls(p, step)))
}

/// Whether the stored value reads back as written.
fn round_trips(s: &Stored) -> bool {
    let mut buf = [0; BUF_LEN];
    State::parse(s.state.format(&mut buf)) == Some(s.state)
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(400))]

    #[test]
    fn penalty_matches_the_model_when_time_moves_forward(
        (p, seq) in with_calls(fwd)
    ) {
        let (mut kept, mut evicted) = (None::<State>, None::<Stored>);
        let (mut model, mut now) = (PenaltyModel::default(), START);
        for (step, n) in seq {
            // Forward only: an edge already passed is now.
            now = step.from(now, kept, p).max(now);
            let expected = model.call(now, p, n);
            // A key whose expiry passed is gone: that must not change a decision
            // (the key expires when its state is back to the initial one).
            let live = evicted.filter(|s| s.expires_at > now).map(|s| s.state);
            let out = penalty::decide(live, now, build(p), k(n));
            prop_assert_eq!(out.decision, expected, "at {} cost {}", now, n);
            check_reply(&out.decision, p.strikes, n);
            let kept_out = penalty::decide(kept, now, build(p), k(n));
            prop_assert_eq!(kept_out.decision, expected, "no expiry: at {} cost {}", now, n);
            if let Some(s) = out.write {
                prop_assert!(s.expires_at > now);
                prop_assert_eq!(s.expires_at, now + out.decision.reset_after_ms as i64);
                prop_assert!(round_trips(&s));
                evicted = Some(s);
            } else {
                evicted = evicted.filter(|s| s.expires_at > now);
            }
            if let Some(s) = kept_out.write {
                kept = Some(s.state);
            }
        }
    }

    #[test]
    fn penalty_replies_hold_and_blocks_are_exact_even_when_the_clock_steps_back(
        (p, seq) in with_calls(back)
    ) {
        let penalty = build(p);
        let (mut state, mut now) = (None::<State>, START);
        for (step, n) in seq {
            now = step.from(now, state, p);
            let out = penalty::decide(state, now, penalty, k(n));
            let d = out.decision;
            check_reply(&d, p.strikes, n);
            prop_assert_eq!(d.retry_after == RetryAfter::Now, d.allowed);
            if !d.allowed {
                prop_assert_eq!(d.remaining, 0);
                prop_assert!(d.reset_after_ms >= d.retry_after_ms() as u64);
            }
            let before = penalty::decide(state, now, penalty, Cost::ZERO).decision;
            // A look writes nothing, and neither does a call while blocked.
            if n == 0 || !before.allowed {
                prop_assert_eq!(out.write, None);
            }
            if let RetryAfter::Ms(wait) = d.retry_after {
                // The state the call leaves is blocked exactly until retry_after.
                let after = out.write.map(|s| s.state).or(state);
                let wait = wait as i64;
                prop_assert!(!penalty::decide(after, now + wait - 1, penalty, Cost::ZERO).decision.allowed);
                prop_assert!(penalty::decide(after, now + wait, penalty, Cost::ZERO).decision.allowed);
            }
            if let Some(s) = out.write {
                prop_assert!(n > 0 && before.allowed);
                prop_assert!(s.expires_at > now);
                prop_assert_eq!(s.expires_at, now + d.reset_after_ms as i64);
                prop_assert!(round_trips(&s));
                state = Some(s.state);
            }
        }
    }
}
