//! RL's CL.THROTTLE against the real redis-cell 0.5.0 (the module it replaces).
//!
//! Needs `RL_REDIS_CELL`, the path of redis-cell's `libredis_cell.so`: `make test`
//! builds it (scripts/redis-cell.sh, in a cache outside the repository) and sets it.
//! Without it every test here prints why it skips and passes.
//!
//! - Differential: the same call sequences (bursts at one instant, then waits of
//!   whole seconds on the server clock) on a server with redis-cell and one with
//!   RL: `limited`, `limit` and `remaining` equal, retry_after / reset_after within
//!   the one second the two clocks allow (redis-cell reads the system clock in ns
//!   at each call, RL the server's ms once per call).
//! - Interop: keys moved with DUMP / RESTORE ABSTTL are continued to the ns by the
//!   other module, both ways.
//! - Load order: with redis-cell loaded first, RL loads without CL.THROTTLE, says
//!   so in the log, and redis-cell's command stays.
//! - The differences RL makes on purpose, pinned on both modules.
//!
//! redis-cell aborts the server on some inputs (non-UTF-8 arguments, a wrong-type
//! key, a non-numeric value, negative quantities): nothing here sends it those.

use crate::common::*;

use std::io::Write;
use std::path::{Path, PathBuf};
use std::time::Duration;

/// redis-cell's module, or None (after saying why) when RL_REDIS_CELL is unset.
fn redis_cell(test: &str) -> Option<PathBuf> {
    match std::env::var_os("RL_REDIS_CELL").filter(|v| !v.is_empty()) {
        None => {
            // Straight to stderr: the test harness does not capture this.
            let _ = writeln!(
                std::io::stderr(),
                "{test}: SKIPPED: RL_REDIS_CELL is not set. `make test` builds redis-cell 0.5.0 \
                 and sets it; by hand: RL_REDIS_CELL=$(scripts/redis-cell.sh) cargo test --test redis_cell"
            );
            None
        }
        Some(p) => {
            let p = PathBuf::from(p);
            assert!(
                p.is_file(),
                "RL_REDIS_CELL={} is not a file (scripts/redis-cell.sh prints the path)",
                p.display()
            );
            Some(p)
        }
    }
}

fn cell_server(cell: &Path) -> Server {
    Server::with(Options {
        module: Some(cell.to_path_buf()),
        ..Options::default()
    })
}

/// The server clock in µs.
fn server_us(c: &mut Connection) -> i64 {
    let (s, us): (i64, i64) = cmd("TIME").query(c).expect("TIME");
    s * 1_000_000 + us
}

/// Polls (every ms) until the server clock reaches `t` µs.
fn wait_until_us(c: &mut Connection, t: i64) {
    wait_for(PATIENCE, "the server clock", || {
        if server_us(c) >= t {
            return Some(());
        }
        std::thread::sleep(Duration::from_millis(1));
        None
    });
}

/// Calls in one MULTI, between two TIME reads (µs): (before, replies, after).
fn burst(c: &mut Connection, calls: &[Vec<String>]) -> (i64, Vec<Vec<i64>>, i64) {
    let mut p = redis::pipe();
    p.atomic().cmd("TIME");
    for call in calls {
        p.add_command(command_of(call));
    }
    p.cmd("TIME");
    let mut values: Vec<Value> = p
        .query(c)
        .unwrap_or_else(|e| panic!("{calls:?} in MULTI: {e}"));
    let time = |v: &Value| {
        let (s, us): (i64, i64) = redis::from_redis_value(v).expect("TIME");
        s * 1_000_000 + us
    };
    let after = time(&values.pop().unwrap());
    let before = time(&values.remove(0));
    let replies = values
        .iter()
        .map(|v| redis::from_redis_value(v).expect("five integers"))
        .collect();
    (before, replies, after)
}

fn throttle(key: &str, max_burst: u64, count: u64, period: u64, quantity: u64) -> Vec<String> {
    [
        "CL.THROTTLE".to_string(),
        key.to_string(),
        max_burst.to_string(),
        count.to_string(),
        period.to_string(),
        quantity.to_string(),
    ]
    .to_vec()
}

fn get(c: &mut Connection, key: &str) -> Option<String> {
    cmd("GET").arg(key).query(c).expect("GET")
}

fn tat(c: &mut Connection, key: &str) -> u128 {
    let v = get(c, key).unwrap_or_else(|| panic!("no {key}"));
    v.parse()
        .unwrap_or_else(|e| panic!("{key} holds {v:?}, not a TAT: {e}"))
}

// ------------------------------------------------------------------ differential

enum Step {
    /// Calls with these quantities, at one instant.
    Burst(&'static [u64]),
    /// Whole seconds on the server clock.
    Wait(i64),
}
use Step::{Burst, Wait};

struct Scenario {
    max_burst: u64,
    count: u64,
    period: u64,
    steps: &'static [Step],
}

/// Runs the scenario on both modules step by step and compares every reply.
fn differential(name: &str, s: &Scenario) {
    let Some(cell) = redis_cell(name) else {
        return;
    };
    let mut cell_server = cell_server(&cell);
    let mut rl_server = Server::start();
    let (mut a, mut b) = (cell_server.conn(), rl_server.conn());
    let key = "k";
    // The end of the first burst on each server, and the waits since.
    let mut origin: Option<(i64, i64)> = None;
    let mut waited_us = 0;
    let mut transcript = String::new();
    let mut time_differences = Vec::new();
    for (n, step) in s.steps.iter().enumerate() {
        match step {
            Wait(secs) => {
                waited_us += secs * 1_000_000;
                let (oa, ob) = origin.expect("a burst before a wait");
                wait_until_us(&mut a, oa + waited_us);
                wait_until_us(&mut b, ob + waited_us);
                transcript += &format!("wait {secs} s\n");
            }
            Burst(quantities) => {
                let calls: Vec<Vec<String>> = quantities
                    .iter()
                    .map(|&q| throttle(key, s.max_burst, s.count, s.period, q))
                    .collect();
                let (_, ra, ea) = burst(&mut a, &calls);
                let (_, rb, eb) = burst(&mut b, &calls);
                origin.get_or_insert((ea, eb));
                for ((call, x), y) in calls.iter().zip(&ra).zip(&rb) {
                    transcript += &format!("{}: redis-cell {x:?}, RL {y:?}\n", call.join(" "));
                    let what = format!(
                        "{name}, step {n}, {}: redis-cell {x:?}, RL {y:?}\n{transcript}",
                        call.join(" ")
                    );
                    assert_eq!(x[..3], y[..3], "limited, limit, remaining: {what}");
                    assert_eq!(x[3] == -1, y[3] == -1, "retry_after -1: {what}");
                    assert!((x[3] - y[3]).abs() <= 1, "retry_after: {what}");
                    assert!((x[4] - y[4]).abs() <= 1, "reset_after: {what}");
                    if x != y {
                        time_differences.push(format!("{}: {x:?} vs {y:?}", call.join(" ")));
                    }
                }
            }
        }
    }
    assert!(cell_server.alive() && rl_server.alive());
    let _ = writeln!(
        std::io::stderr(),
        "{name}: CL.THROTTLE {} {} {}: {} replies differed by a second (redis-cell vs RL): {:?}",
        s.max_burst,
        s.count,
        s.period,
        time_differences.len(),
        time_differences
    );
}

#[test]
fn differential_capacity_5_one_per_second() {
    if module_only("CL.THROTTLE and redis-cell are the module's") {
        return;
    }
    differential(
        "differential_capacity_5_one_per_second",
        &Scenario {
            max_burst: 4,
            count: 1,
            period: 1,
            steps: &[
                Burst(&[1, 1, 1, 1, 1, 1, 1]),
                Wait(1),
                Burst(&[1, 1]),
                Wait(2),
                Burst(&[1, 1, 1, 0]),
                Wait(5),
                Burst(&[0, 1, 0, 2, 3]),
            ],
        },
    );
}

#[test]
fn differential_readme_15_30_60() {
    if module_only("CL.THROTTLE and redis-cell are the module's") {
        return;
    }
    differential(
        "differential_readme_15_30_60",
        &Scenario {
            max_burst: 15,
            count: 30,
            period: 60,
            steps: &[
                Burst(&[1; 18]),
                Wait(1),
                Burst(&[1, 1]),
                Wait(2),
                Burst(&[1, 1]),
                Wait(3),
                Burst(&[3, 0, 1, 16]),
            ],
        },
    );
}

#[test]
fn differential_quantity_3_every_200ms() {
    if module_only("CL.THROTTLE and redis-cell are the module's") {
        return;
    }
    differential(
        "differential_quantity_3_every_200ms",
        &Scenario {
            max_burst: 9,
            count: 5,
            period: 1,
            steps: &[
                Burst(&[3, 3, 3, 3]),
                Wait(1),
                Burst(&[3, 3]),
                Wait(1),
                Burst(&[3, 3, 3, 0, 1]),
            ],
        },
    );
}

#[test]
fn differential_quantity_above_the_limit() {
    if module_only("CL.THROTTLE and redis-cell are the module's") {
        return;
    }
    differential(
        "differential_quantity_above_the_limit",
        &Scenario {
            max_burst: 2,
            count: 1,
            period: 2,
            steps: &[Burst(&[4, 1, 4, 2, 4, 100]), Wait(2), Burst(&[4, 1, 1, 0])],
        },
    );
}

#[test]
fn differential_quantity_zero_peeks() {
    if module_only("CL.THROTTLE and redis-cell are the module's") {
        return;
    }
    differential(
        "differential_quantity_zero_peeks",
        &Scenario {
            max_burst: 5,
            count: 5,
            period: 1,
            steps: &[Burst(&[0, 0, 6, 0, 1, 0]), Wait(1), Burst(&[0, 1, 0, 6, 0])],
        },
    );
}

#[test]
fn differential_readme_0_1_2() {
    if module_only("CL.THROTTLE and redis-cell are the module's") {
        return;
    }
    differential(
        "differential_readme_0_1_2",
        &Scenario {
            max_burst: 0,
            count: 1,
            period: 2,
            steps: &[
                Burst(&[1, 1, 1]),
                Wait(1),
                Burst(&[1]),
                Wait(1),
                Burst(&[1, 1]),
            ],
        },
    );
}

// ------------------------------------------------------------------ interop

/// DUMP with its absolute expiry, RESTORE ... ABSTTL on the other server.
fn move_key(from: &mut Connection, to: &mut Connection, key: &str) {
    let payload: Vec<u8> = cmd("DUMP").arg(key).query(from).expect("DUMP");
    let at = pexpiretime(from, key);
    assert!(at > 0, "{key} has an expiry");
    let _: () = cmd("RESTORE")
        .arg(key)
        .arg(at)
        .arg(payload)
        .arg("ABSTTL")
        .query(to)
        .expect("RESTORE");
    assert_eq!(get(to, key), get(from, key));
    assert_eq!(pexpiretime(to, key), at);
}

const T60: u128 = 60_000_000_000;

#[test]
fn a_key_written_by_redis_cell_is_continued_by_rl() {
    if module_only("CL.THROTTLE and redis-cell are the module's") {
        return;
    }
    let Some(cell) = redis_cell("a_key_written_by_redis_cell_is_continued_by_rl") else {
        return;
    };
    let cs = cell_server(&cell);
    let rs = Server::start();
    let (mut a, mut b) = (cs.conn(), rs.conn());
    let call = throttle("m", 4, 1, 60, 1);
    let (_, r, cell_after) = burst(&mut a, &[call.clone(), call.clone(), call.clone()]);
    let remaining: Vec<i64> = r.iter().map(|r| r[2]).collect();
    assert_eq!(remaining, [4, 3, 2], "redis-cell: {r:?}");
    let written = tat(&mut a, "m");
    move_key(&mut a, &mut b, "m");
    // redis-cell read the system clock to the ns; RL reads the server's, in whole
    // ms. Continue once RL's clock is a full ms past redis-cell's calls, so the
    // debt RL sees is below redis-cell's three units, as it would be in service.
    wait_until(&mut b, cell_after / 1000 + 2);

    // RL's CL.THROTTLE takes the fourth unit: one T later, to the ns.
    let (_, r, _) = burst(&mut b, std::slice::from_ref(&call));
    assert_eq!(
        r[0][..4],
        [0, 5, 1, -1],
        "RL's CL.THROTTLE on redis-cell's key: {r:?}"
    );
    assert!((239..=240).contains(&r[0][4]), "{r:?}");
    assert_eq!(tat(&mut b, "m"), written + T60);
    assert_eq!(
        pexpiretime(&mut b, "m") as u128,
        (written + T60).div_ceil(1_000_000)
    );
    // RL.GCRA (capacity = max_burst + 1, 1 per minute) the fifth.
    let r = rl(&mut b, &["RL.GCRA", "m", "5", "1", "1m"]);
    assert_eq!(
        (r.allowed, r.limit, r.remaining, r.retry_after),
        (1, 5, 0, 0),
        "{r:?}"
    );
    assert_eq!(tat(&mut b, "m"), written + 2 * T60);
    // And the sixth is limited for about a minute.
    let (_, r, _) = burst(&mut b, std::slice::from_ref(&call));
    assert_eq!(r[0][..3], [1, 5, 0], "{r:?}");
    assert!(
        (59..=60).contains(&r[0][3]) && (299..=300).contains(&r[0][4]),
        "{r:?}"
    );
    assert_eq!(tat(&mut b, "m"), written + 2 * T60, "a limited call wrote");
}

#[test]
fn a_key_written_by_rl_is_continued_by_redis_cell() {
    if module_only("CL.THROTTLE and redis-cell are the module's") {
        return;
    }
    let Some(cell) = redis_cell("a_key_written_by_rl_is_continued_by_redis_cell") else {
        return;
    };
    let cs = cell_server(&cell);
    let rs = Server::start();
    let (mut a, mut b) = (cs.conn(), rs.conn());
    let call = throttle("n", 4, 1, 60, 1);
    let (_, r, _) = burst(&mut b, &[call.clone(), call.clone()]);
    assert_eq!(r[1][..3], [0, 5, 3], "{r:?}");
    let r = rl(&mut b, &["RL.GCRA", "n", "5", "1", "1m"]);
    assert_eq!(r.remaining, 2);
    let written = tat(&mut b, "n");
    move_key(&mut b, &mut a, "n");

    let (_, r, _) = burst(&mut a, std::slice::from_ref(&call));
    assert_eq!(r[0][..4], [0, 5, 1, -1], "redis-cell on RL's key: {r:?}");
    assert!((239..=240).contains(&r[0][4]), "{r:?}");
    assert_eq!(
        tat(&mut a, "n"),
        written + T60,
        "redis-cell continued the TAT"
    );
    let (_, r, _) = burst(&mut a, &[throttle("n", 4, 1, 60, 2)]);
    assert_eq!(r[0][..3], [1, 5, 1], "{r:?}");
    assert!((59..=60).contains(&r[0][3]), "{r:?}");
    assert_eq!(tat(&mut a, "n"), written + T60);
}

/// Moving keys the usual way, `DUMP` + `RESTORE key 0 payload`, drops the expiry:
/// RL reads redis-cell's TAT alone and the next write sets the expiry again
/// (docs/commands.md, RL.GCRA). On the library, RL.GCRA with the same limiter.
#[test]
fn a_redis_cell_key_restored_without_an_expiry_is_continued() {
    let Some(cell) = redis_cell("a_redis_cell_key_restored_without_an_expiry_is_continued") else {
        return;
    };
    let cs = cell_server(&cell);
    let rs = Server::start();
    let (mut a, mut b) = (cs.conn(), rs.conn());
    let call = throttle("mig", 4, 1, 60, 1);
    let (_, r, cell_after) = burst(&mut a, &[call.clone(), call.clone(), call.clone()]);
    let remaining: Vec<i64> = r.iter().map(|r| r[2]).collect();
    assert_eq!(remaining, [4, 3, 2], "redis-cell: {r:?}");
    let written = tat(&mut a, "mig");
    let payload: Vec<u8> = cmd("DUMP").arg("mig").query(&mut a).expect("DUMP");
    let _: () = cmd("RESTORE")
        .arg("mig")
        .arg(0)
        .arg(payload)
        .query(&mut b)
        .expect("RESTORE with TTL 0");
    assert_eq!(pexpiretime(&mut b, "mig"), -1);
    // As above: continue once RL's clock is a full ms past redis-cell's calls.
    wait_until(&mut b, cell_after / 1000 + 2);
    let next = if is_library() {
        strings(&["RL.GCRA", "mig", "5", "1", "1m"])
    } else {
        call
    };
    let (_, r, _) = burst(&mut b, &[next]);
    assert_eq!(r[0][1..3], [5, 1], "the fourth unit: {r:?}");
    assert_eq!(tat(&mut b, "mig"), written + T60);
    assert_eq!(
        pexpiretime(&mut b, "mig") as u128,
        (written + T60).div_ceil(1_000_000),
        "the write set the expiry again"
    );
}

// ------------------------------------------------------------------ load order

#[test]
fn with_redis_cell_loaded_first_rl_loads_without_cl_throttle_and_logs_it() {
    if module_only("CL.THROTTLE and redis-cell are the module's") {
        return;
    }
    let Some(cell) =
        redis_cell("with_redis_cell_loaded_first_rl_loads_without_cl_throttle_and_logs_it")
    else {
        return;
    };
    let rl_module = module_path();
    let s = Server::with(Options {
        module: Some(cell.clone()),
        args: vec!["--loadmodule".into(), rl_module.display().to_string()],
        ..Options::default()
    });
    let mut c = s.conn();
    let modules: Vec<Vec<Value>> = cmd("MODULE").arg("LIST").query(&mut c).unwrap();
    let names: Vec<String> = modules
        .iter()
        .map(|m| {
            let at = m
                .iter()
                .position(|v| redis::from_redis_value::<String>(v).ok().as_deref() == Some("name"))
                .expect("a name field");
            redis::from_redis_value(&m[at + 1]).unwrap()
        })
        .collect();
    assert!(
        names.iter().any(|n| n == "redis-cell") && names.iter().any(|n| n == "rl"),
        "MODULE LIST: {names:?}"
    );
    let log = s.log();
    assert!(
        log.contains("CL.THROTTLE is already registered"),
        "RL's log line is missing:\n{log}"
    );

    // RL's own commands work.
    let r = rl(&mut c, &["RL.GCRA", "g", "5", "1", "1s"]);
    assert_eq!(r, Reply::of(&[1, 5, 4, 0, 1000]));
    rl(&mut c, &["RL.FIXED", "f", "5", "1m"]);

    // CL.THROTTLE is redis-cell's: its error text, its remaining from whole µs, and
    // no documentation of RL's.
    let err = error_of(&mut c, &[b"CL.THROTTLE", b"k", b"x", b"1", b"2"]);
    assert!(err.contains("Cell error"), "{err}");
    let v: Vec<i64> = try_rl(&mut c, &["CL.THROTTLE", "a", "6000", "6000", "1"]).unwrap();
    assert_eq!(v, [0, 6001, 6024, -1, 0], "redis-cell's reply");
    let docs: Value = cmd("COMMAND")
        .arg("DOCS")
        .arg("CL.THROTTLE")
        .query(&mut c)
        .unwrap();
    let docs = format!("{docs:?}");
    assert!(
        docs.contains("redis-cell"),
        "COMMAND DOCS CL.THROTTLE: {docs}"
    );
    assert!(
        !docs.contains("summary"),
        "RL's summary on redis-cell's command: {docs}"
    );
    let docs: Value = cmd("COMMAND")
        .arg("DOCS")
        .arg("RL.GCRA")
        .query(&mut c)
        .unwrap();
    assert!(
        format!("{docs:?}").contains("summary"),
        "RL.GCRA has its docs"
    );
}

// ------------------------------------------------------------------ on purpose

/// Sets `key` to a TAT `ms` ms + `ns` ns after the server's TIME (to the µs) and
/// calls CL.THROTTLE at once, in one script.
const FROM_NOW: &str = r#"
local t = redis.call('TIME')
local ns = tonumber(t[2]) * 1000 + tonumber(ARGV[1]) * 1000000 + tonumber(ARGV[2])
local s = tonumber(t[1]) + math.floor(ns / 1000000000)
ns = ns % 1000000000
local at = s * 1000 + math.ceil(ns / 1000000) + tonumber(ARGV[3])
redis.call('SET', KEYS[1], string.format('%d%09d', s, ns), 'PXAT', string.format('%d', at))
return redis.call('CL.THROTTLE', KEYS[1], ARGV[4], ARGV[5], ARGV[6], ARGV[7])
"#;

/// CL.THROTTLE key params on a key whose TAT is `ms` + `ns` from now, and which
/// expires `extra_ms` after it.
fn from_now(c: &mut Connection, ms: i64, ns: i64, extra_ms: i64, params: [&str; 4]) -> Vec<i64> {
    cmd("EVAL")
        .arg(FROM_NOW)
        .arg(1)
        .arg("d")
        .arg(ms)
        .arg(ns)
        .arg(extra_ms)
        .arg(&params[..])
        .query(c)
        .unwrap_or_else(|e| panic!("{params:?}: {e}"))
}

#[test]
fn differences_rl_makes_on_purpose() {
    if module_only("CL.THROTTLE and redis-cell are the module's") {
        return;
    }
    let Some(cell) = redis_cell("differences_rl_makes_on_purpose") else {
        return;
    };
    let cs = cell_server(&cell);
    let rs = Server::start();
    let (mut a, mut b) = (cs.conn(), rs.conn());

    // T = 1 s / 6000: redis-cell divides whole µs (999996 / 166) and reports more
    // than the limit; RL divides ns and never does. And its reset of 166666 ns
    // rounds to 0 s (a limiter not in its initial state), RL's to 1 s.
    let call = throttle("a", 6000, 6000, 1, 1);
    let (_, x, _) = burst(&mut a, std::slice::from_ref(&call));
    let (_, y, _) = burst(&mut b, std::slice::from_ref(&call));
    assert_eq!(x[0], [0, 6001, 6024, -1, 0], "redis-cell");
    assert_eq!(y[0], [0, 6001, 6000, -1, 1], "RL");

    // A debt of 2 s + 0.9 ms (less the µs the script takes): redis-cell drops the
    // sub-ms fraction when rounding to seconds, RL rounds every fraction up.
    let params = ["4", "1", "1", "0"];
    let x = from_now(&mut a, 2000, 900_000, 0, params);
    let y = from_now(&mut b, 2000, 900_000, 0, params);
    assert_eq!(x, [0, 5, 2, -1, 2], "redis-cell");
    assert_eq!(y, [0, 5, 2, -1, 3], "RL");

    // A live key whose TAT is 3 s in the past (its expiry later, as after a clock
    // step back): redis-cell answers remaining above the limit and a negative reset.
    let params = ["4", "1", "1", "6"];
    let x = from_now(&mut a, -3000, 0, 60_000, params);
    let y = from_now(&mut b, -3000, 0, 60_000, params);
    assert_eq!(x, [1, 5, 8, -1, -3], "redis-cell");
    assert_eq!(y, [1, 5, 5, -1, 0], "RL");
    drop((cs, rs));
}
