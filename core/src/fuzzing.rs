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

use crate::algorithms::MAX_COUNT;
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
        let command = table::find(argv[0]);
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

/// RL's five integers: allowed 0 or 1; remaining within the limit; retry_after 0
/// or a wait when allowed (a scheduled call), a wait or −1 when rejected; every
/// duration at most 2^53 − 1 ms.
pub fn check_reply(f: &[i64]) {
    let max = MAX_COUNT as i64;
    let [allowed, limit, remaining, retry, reset] = f else {
        panic!("not five fields: {f:?}");
    };
    assert!(*allowed == 0 || *allowed == 1, "{f:?}");
    assert!((0..=max).contains(limit), "{f:?}");
    assert!(
        (0..=*limit).contains(remaining),
        "remaining above the limit: {f:?}"
    );
    assert!((0..=max).contains(reset), "{f:?}");
    if *allowed == 1 {
        assert!((0..=max).contains(retry), "{f:?}");
    } else {
        assert!(*retry == -1 || (1..=max).contains(retry), "{f:?}");
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

/// Command lines the fuzzer starts from (`make fuzz` writes them into its corpus).
pub fn seeds() -> Vec<Vec<u8>> {
    let lines: &[&[&str]] = &[
        &["RL.FIXED", "k", "5", "1m", "COST", "2"],
        &["RL.SLIDING", "k", "3", "1s"],
        &["RL.BUCKET", "k", "5", "1", "1s", "REFUND", "1"],
        &["RL.GCRA", "k", "5", "1", "1s", "DELAY", "2s"],
        &["RL.SLIDINGCOUNTER", "k", "10", "1m"],
        &["CL.THROTTLE", "k", "15", "30", "60"],
        &["RL.ACQUIRE", "k", "2", "10s", "a"],
        &["RL.RELEASE", "k", "a"],
        &["RL.PENALTY", "k", "3", "1m", "1m", "1h"],
        &[
            "RL.ALL", "2", "a", "b", "FIXED", "5", "1s", "GCRA", "5", "1", "1s",
        ],
        &["SET", "k", "1800000000000 3 8"],
        &["HSET", "k", "tokens", "-2.5", "ts", "1800000000000"],
        &["ZADD", "k", "1800000000000", "0"],
    ];
    lines
        .iter()
        .map(|line| {
            let mut call = vec![64u8];
            call.extend(line.join("\0").bytes());
            // The same call twice, 37 ms apart.
            let mut input = call.clone();
            input.push(0xff);
            input.push(65);
            input.extend(&call[1..]);
            input
        })
        .collect()
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

    /// Seeds in the input layout, one per command, so the fuzzer starts from calls
    /// that parse.
    #[test]
    fn the_seed_lines_run() {
        for seed in super::seeds() {
            super::run(&seed);
        }
    }
}
