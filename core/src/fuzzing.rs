//! The fuzz entry point: whole command lines, any bytes, through the in-memory
//! executor ([`crate::memory`]), with no server. Used by the libFuzzer target in
//! `fuzz/` (`make fuzz`) and, over the saved inputs in `fuzz/regressions/`, by the
//! core's tests.
//!
//! Input: calls separated by 0xFF. A call's first byte moves the clock (by
//! `(byte − 64) · 37` ms, so it can step back), the rest is its arguments split on
//! 0x00, the command name first. Native commands (`SET`, `HSET`, `ZADD` …) plant
//! any state RL must then read; RL commands run as the module runs them. Every
//! reply must keep the contract's invariants, and a call that answers an error or
//! rejects writes nothing; a violation panics, which the fuzzer reports as a crash.

use crate::algorithms::{check_fields, MAX_COUNT};
use crate::commands;
use crate::keyspace::{Keyspace, Value};
use crate::memory;
use crate::table;

/// Where the clock starts: a server time in 2027.
const START_MS: i64 = 1_800_000_000_000;

/// Runs one input. Never returns an error: anything wrong is a panic.
pub fn run(data: &[u8]) {
    let mut ks = Keyspace::new();
    let mut now = START_MS;
    for call in data.split(|&b| b == 0xff) {
        let Some((&step, rest)) = call.split_first() else {
            continue;
        };
        now += (i64::from(step) - 64) * 37;
        let argv: Vec<&[u8]> = rest.split(|&b| b == 0).collect();
        if argv.first().is_none_or(|name| name.is_empty()) {
            continue;
        }
        let command = commands::find(argv[0]);
        let before = command.map(|_| ks.snapshot(now));
        let reply = memory::call(&mut ks, now, &argv);
        let (Some(command), Some(before)) = (command, before) else {
            continue;
        };
        let unchanged = || assert_eq!(ks.snapshot(now), before, "{argv:?} → {reply:?}");
        match &reply {
            Err(e) => {
                assert!(
                    e.starts_with("ERR ") || e.starts_with("WRONGTYPE "),
                    "an error without its code: {e}"
                );
                unchanged();
            }
            Ok(Value::Array(items)) if command.name != table::ALL.name => {
                let fields = integers(items);
                if command.name == table::THROTTLE.name {
                    check_throttle(&fields);
                    if fields[0] == 1 {
                        unchanged();
                    }
                } else {
                    check_reply(&fields);
                    // The strike that starts an RL.PENALTY block is rejected and writes it.
                    if fields[0] == 0 && command.name != table::PENALTY.name {
                        unchanged();
                    }
                }
            }
            Ok(Value::Array(items)) => {
                // RL.ALL: the combined reply, then each key's.
                let replies: Vec<Vec<i64>> = items
                    .iter()
                    .map(|r| match r {
                        Value::Array(f) => integers(f),
                        other => panic!("RL.ALL replied {other:?}"),
                    })
                    .collect();
                assert!(replies.len() >= 2, "{replies:?}");
                replies.iter().for_each(|r| check_reply(r));
                let allowed = replies[1..].iter().all(|r| r[0] == 1);
                assert_eq!(replies[0][0] == 1, allowed, "{replies:?}");
                if !allowed {
                    unchanged();
                }
            }
            Ok(Value::Int(n)) => {
                assert_eq!(command.name, table::RELEASE.name, "{argv:?} → {reply:?}");
                assert!(*n == 0 || *n == 1);
                if *n == 0 {
                    unchanged();
                }
            }
            Ok(other) => panic!("{argv:?} replied {other:?}"),
        }
    }
}

fn integers(items: &[Value]) -> Vec<i64> {
    items
        .iter()
        .map(|v| match v {
            Value::Int(n) => *n,
            other => panic!("not an integer: {other:?}"),
        })
        .collect()
}

/// RL's five integers keep their invariants.
fn check_reply(f: &[i64]) {
    if let Err(why) = check_fields(f) {
        panic!("{why}");
    }
}

/// CL.THROTTLE's reply: limited 0 or 1, retry −1 when allowed, seconds otherwise.
fn check_throttle(f: &[i64]) {
    let [limited, limit, remaining, retry, reset] = f else {
        panic!("not five fields: {f:?}");
    };
    assert!(*limited == 0 || *limited == 1, "{f:?}");
    assert!((1..=MAX_COUNT as i64).contains(limit), "{f:?}");
    assert!((0..=*limit).contains(remaining), "{f:?}");
    assert!(*reset >= 0, "{f:?}");
    if *limited == 0 {
        assert_eq!(*retry, -1, "{f:?}");
    } else {
        assert!(*retry == -1 || *retry >= 1, "{f:?}");
    }
}

#[cfg(test)]
mod tests {
    /// Every input saved under fuzz/regressions (crashes once found, and seeds)
    /// keeps passing.
    #[test]
    fn saved_fuzz_inputs_still_pass() {
        let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../fuzz/regressions");
        let mut ran = 0;
        for entry in std::fs::read_dir(&dir).expect("fuzz/regressions") {
            let path = entry.expect("entry").path();
            super::run(&std::fs::read(&path).expect("read input"));
            ran += 1;
        }
        assert!(ran > 0, "no inputs in {}", dir.display());
    }
}
