//! The in-process fuzz entry point: argument parsing and the decision path with
//! arbitrary bytes, no server. Used by the libFuzzer target in `fuzz/` (`make fuzz`)
//! and, over the saved inputs in `fuzz/regressions/`, by `make test`.
//!
//! Input layout: byte 0 picks the command (RL.ALL: its argument parser only); the rest is split on NUL into arguments
//! (as a client would send them, key first) followed by raw bytes that make up a
//! stored state and the clock. Every reply must satisfy the contract's invariants;
//! a violation panics, which the fuzzer reports as a crash.

use crate::commands::{
    Acquire, Bucket as BucketCommand, Fixed, Gcra, Limiter, Penalty, Sliding, SlidingCounter,
    Throttle,
};
use rl_core::algorithms::acquire::{self, LeaseSet, VecLeases};
use rl_core::algorithms::bucket::{self, State};
use rl_core::algorithms::fixed::{self, Counter};
use rl_core::algorithms::gcra::{self, Tat};
use rl_core::algorithms::penalty::{self, State as Offender, BUF_LEN};
use rl_core::algorithms::sliding::{self, VecLog, Write};
use rl_core::algorithms::sliding_counter::{self, Counts};
use rl_core::algorithms::{Algorithm, Cost};
use rl_core::algorithms::{Amount, Change, Decision, Millis, RetryAfter, MAX_COUNT};
use rl_core::codec;
use rl_core::decimal;

fn take_i64(bytes: &mut &[u8]) -> i64 {
    let mut buf = [0u8; 8];
    let n = bytes.len().min(8);
    buf[..n].copy_from_slice(&bytes[..n]);
    *bytes = &bytes[n..];
    i64::from_le_bytes(buf)
}

fn check(d: &Decision, amount: Amount) {
    assert!(d.remaining <= d.limit, "remaining above limit: {d:?}");
    let cost = match amount {
        Amount::Take(n) => n.get(),
        Amount::Refund(_) | Amount::Debit(_) => {
            // Always allowed, never waits; a debit's reset_after covers its debt.
            assert!(
                d.allowed && d.retry_after == RetryAfter::Now,
                "{amount:?}: {d:?}"
            );
            assert!(d.reset_after_ms <= MAX_COUNT, "reset_after too long: {d:?}");
            return;
        }
    };
    assert!(d.reset_after_ms <= MAX_COUNT, "reset_after too long: {d:?}");
    match d.retry_after {
        RetryAfter::Now => assert!(d.allowed, "{d:?}"),
        RetryAfter::Never => assert!(!d.allowed && cost > d.limit, "{d:?}"),
        RetryAfter::Delayed(ms) => assert!(d.allowed && (1..=MAX_COUNT).contains(&ms), "{d:?}"),
        RetryAfter::Ms(ms) => assert!(!d.allowed && ms <= MAX_COUNT, "{d:?}"),
    }
}

/// Runs one input. Never returns an error: anything wrong is a panic.
pub fn run(data: &[u8]) {
    let Some((&selector, rest)) = data.split_first() else {
        return;
    };
    // Arguments end at the first 0xFF byte; what follows is state and clock.
    let (arg_bytes, mut state) = match rest.iter().position(|&b| b == 0xff) {
        Some(i) => (&rest[..i], &rest[i + 1..]),
        None => (rest, &b""[..]),
    };
    let argv: Vec<&[u8]> = arg_bytes.split(|&b| b == 0).collect();
    let now = take_i64(&mut state) >> 8;
    // The stored-content decoders must accept or refuse any bytes without panicking.
    let _ = decimal::digits(state);
    let _ = decimal::micros(state);
    let _ = decimal::signed_micros(state);

    if selector >= LEASES {
        leases(&argv, now, state);
        return;
    }
    if selector >= PENALTY {
        penalty(&argv, now, state);
        return;
    }
    if selector % 7 == 6 {
        // RL.ALL's line: numkeys, keys, policies, options, in any bytes.
        if let Ok(keys) = crate::commands::parses_all(&argv) {
            assert!((1..=16).contains(&keys), "{keys} keys");
        }
        return;
    }
    match selector % 7 {
        0 => {
            let Some(params) = parse::<Fixed>(&argv) else {
                return;
            };
            let stored = (!state.is_empty()).then(|| Counter {
                used: take_i64(&mut state) as u64,
                expires_at: take_i64(&mut state),
            });
            let out = fixed::FixedWindow::call(stored, now, params.0, params.1);
            check(&out.decision, params.1);
            if let Amount::Debit(n) = params.1 {
                // Always a write, of at least the units charged.
                assert!(
                    matches!(out.store, Some(Change::Store(c)) if c.used >= n.get()),
                    "{out:?}"
                );
            }
        }
        1 => {
            let Some(params) = parse::<Sliding>(&argv) else {
                return;
            };
            let mut times: Vec<Millis> = state
                .chunks(2)
                .map(|c| {
                    now.wrapping_sub(i64::from(c[0]) * 97 + i64::from(*c.get(1).unwrap_or(&0)))
                })
                .collect();
            times.sort_unstable();
            let log = VecLog(times);
            let out = sliding::SlidingLog::call(&log, now, params.0, params.1);
            check(&out.decision, params.1);
            match (out.store, params.1) {
                (Some(Write::Append(a)), Amount::Take(n)) => {
                    assert!(a.at >= now && a.units == n.get(), "{a:?}")
                }
                (Some(Write::Remove(r)), Amount::Refund(n)) => {
                    assert!(r.newest > 0 && r.newest <= n.get(), "{r:?}")
                }
                (None, _) => {}
                (write, amount) => panic!("{amount:?} wrote {write:?}"),
            }
        }
        3 | 4 => {
            // RL.GCRA and CL.THROTTLE: the same decision on a TAT.
            let parsed = if selector % 7 == 3 {
                parse::<Gcra>(&argv)
            } else {
                parse::<Throttle>(&argv)
            };
            let Some((emission, amount)) = parsed else {
                return;
            };
            let stored = (!state.is_empty()).then(|| {
                Tat(u128::from(take_i64(&mut state) as u64) << (take_i64(&mut state) & 63))
            });
            // With or without DELAY (RL.GCRA's option): a rejected call writes nothing.
            let out = gcra::Gcra::call(stored, now, emission, amount);
            check(&out.decision, amount);
            assert!(out.decision.allowed || out.store.is_none(), "{out:?}");
            if let Some(Change::Store(s)) = out.store {
                assert!(s.expires_at >= now, "{s:?}");
            }
            if let Amount::Debit(_) = amount {
                // Always a write; the TAT never moves back.
                let Some(Change::Store(s)) = out.store else {
                    panic!("a debit wrote nothing: {out:?}");
                };
                assert!(stored.is_none_or(|t| s.tat.0 >= t.0), "{out:?}");
            }
        }
        5 => {
            let Some((quota, amount)) = parse::<SlidingCounter>(&argv) else {
                return;
            };
            let stored = (!state.is_empty()).then(|| Counts {
                start: take_i64(&mut state),
                current: take_i64(&mut state) as u64,
                previous: take_i64(&mut state) as u64,
            });
            let out = sliding_counter::SlidingWindowCounter::call(stored, now, quota, amount);
            check(&out.decision, amount);
            match (out.store, amount) {
                (Some(Change::Store(s)), Amount::Take(n)) => {
                    assert!(s.counts.current >= n.get(), "{s:?}")
                }
                (Some(Change::Store(s)), Amount::Debit(n)) => {
                    assert!(s.counts.current >= n.get(), "{s:?}")
                }
                (None, Amount::Debit(_)) => panic!("a debit wrote nothing: {out:?}"),
                _ => {}
            }
        }
        _ => {
            let Some(params) = parse::<BucketCommand>(&argv) else {
                return;
            };
            // Any level, a debt (below zero) included, even past the deepest one.
            let stored = (!state.is_empty()).then(|| State {
                level_micros: i128::from(take_i64(&mut state))
                    * i128::from(take_i64(&mut state) as u16),
                ts: take_i64(&mut state),
            });
            let out = bucket::TokenBucket::call(stored, now, params.0, params.1);
            check(&out.decision, params.1);
            if let Some(Change::Store(s)) = out.store {
                let full = i128::from(params.0.capacity.get()) * bucket::MICROS as i128;
                assert!(s.bucket.level_micros <= full, "{s:?}");
                assert!(s.bucket.level_micros >= bucket::LOWEST_MICROS, "{s:?}");
                let mut buf = [0u8; 48];
                let text = codec::format_micros(s.bucket.level_micros, &mut buf);
                assert_eq!(decimal::signed_micros(text), Some(s.bucket.level_micros));
            }
            if let Amount::Debit(_) = params.1 {
                assert!(
                    matches!(out.store, Some(Change::Store(_))),
                    "a debit wrote nothing: {out:?}"
                );
            }
        }
    }
}

/// Selectors from here on run RL.ACQUIRE and RL.RELEASE (the arms above take
/// `selector % 7`; saved inputs use small selectors).
const LEASES: u8 = 0xF0;

/// Selectors from here to [`LEASES`] run RL.PENALTY.
const PENALTY: u8 = 0xE0;

/// RL.PENALTY on a state read from the state bytes as the key's value would be,
/// or else made of them as four integers.
fn penalty(argv: &[&[u8]], now: Millis, mut state: &[u8]) {
    let Some((params, Amount::Take(cost))) = parse::<Penalty>(argv) else {
        return;
    };
    let stored = Offender::parse(state).or_else(|| {
        (!state.is_empty()).then(|| Offender {
            count: take_i64(&mut state) as u64,
            window_end: take_i64(&mut state),
            level: take_i64(&mut state) as u64,
            blocked_until: take_i64(&mut state),
        })
    });
    let out = penalty::decide(stored, now, params, cost);
    check(&out.decision, Amount::Take(cost));
    let looked = penalty::decide(stored, now, params, Cost::ZERO);
    assert!(looked.store.is_none(), "COST 0 wrote {looked:?}");
    if let Some(s) = out.store {
        assert!(
            cost.get() > 0 && looked.decision.allowed,
            "wrote while blocked: {out:?}"
        );
        let mut buf = [0; BUF_LEN];
        let text = s.state.format(&mut buf);
        let back = Offender::parse(text).expect("a stored state reads back");
        assert!(back.count < params.strikes().get(), "{back:?}");
    }
}

/// RL.ACQUIRE on leases made of the state bytes (3 per lease: an id byte and an
/// end relative to now), then RL.RELEASE of the same id.
fn leases(argv: &[&[u8]], now: Millis, state: &[u8]) {
    let Some((params, _)) = parse::<Acquire>(argv) else {
        return;
    };
    let mut set = VecLeases::default();
    for c in state.chunks(3) {
        let id = vec![c[0]];
        if set.end_of(&id).is_none() {
            let offset = i16::from_le_bytes([*c.get(1).unwrap_or(&0), *c.get(2).unwrap_or(&0)]);
            set.0.push((id, now.saturating_add(i64::from(offset))));
        }
    }
    let id = params.id.as_bytes();
    let live = |s: &VecLeases| s.stored() - s.ended_by(now);
    let before = live(&set);
    let out = acquire::acquire(&set, now, params.leases, id, Cost::ONE);
    check(&out.decision, Amount::Take(Cost::ONE));
    let limit = params.leases.limit.get();
    let held = set.end_of(id).is_some_and(|end| end > now);
    assert_eq!(out.decision.allowed, held || before < limit, "{out:?}");
    let mut after = set.clone();
    if let Some(g) = out.store {
        after.grant(id, &g);
        assert!(g.expires_at > now || g.lease_end.is_none(), "{g:?}");
        assert!(live(&after) <= before.max(limit), "{} live", live(&after));
    }
    let released = acquire::release(&set, now, id);
    assert_eq!(released.is_some(), held, "{released:?}");
    if let Some(r) = released {
        set.release(id, &r);
        assert_eq!(live(&set) + 1, before);
    }
}

/// Parses `key args…` the way the command does (arity included).
fn parse<L: Limiter>(argv: &[&[u8]]) -> Option<(L::Params, Amount)> {
    // argv has no command name: the key is argv[0].
    let argc = argv.len() + 1;
    if !L::COMMAND.accepts_argc(argc) {
        return None;
    }
    L::parse(&argv[1..]).ok()
}

#[cfg(test)]
mod tests {
    /// Every input saved under fuzz/regressions (crashes once found, and seeds)
    /// keeps passing.
    #[test]
    fn saved_fuzz_inputs_still_pass() {
        let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("fuzz/regressions");
        let mut ran = 0;
        for entry in std::fs::read_dir(&dir).expect("fuzz/regressions") {
            let path = entry.expect("entry").path();
            super::run(&std::fs::read(&path).expect("read input"));
            ran += 1;
        }
        assert!(ran > 0, "no inputs in {}", dir.display());
    }
}
