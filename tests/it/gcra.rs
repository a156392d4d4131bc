//! RL.GCRA and RL's CL.THROTTLE against a real redis-server: the reference's (docs/commands.md#rlgcra) and
//! redis-cell's vectors, the stored TAT and its expiry, replication of effects,
//! errors, and everything redis-cell gets wrong.
//!
//! Time is controlled exactly: [`at_one_instant`] runs a Lua script that reads TIME,
//! optionally SETs the key to a TAT relative to that instant, makes the calls and
//! reads TIME again, and retries until both reads fall in one millisecond (always,
//! on servers that freeze the time in a script; almost always on 7.0), so the
//! calls ran at a known `now`.

use std::sync::LazyLock;

use crate::common::instant;
use crate::common::*;

/// ns per ms.
const NS: u128 = 1_000_000;

/// Reads TIME, sets up the key (ARGV[1]: "fresh" deletes it, "tat" sets it to
/// `now + ARGV[2] ms + ARGV[3] ns`, expiring at the ceiling ms, "keep" leaves it),
/// runs the calls in ARGV[4..] (each ended by "|"), reads TIME again.
static AT_ONE_INSTANT: LazyLock<String> = LazyLock::new(|| {
    instant::script(
        r#"
first = 4
if ARGV[1] == 'fresh' then
  redis.call('DEL', key)
elseif ARGV[1] == 'tat' then
  local tat = t0 + tonumber(ARGV[2])
  local at = tat
  if ARGV[3] ~= '000000' then at = at + 1 end
  -- Valkey's SET deletes a key whose PXAT is now (Redis keeps it until the ms is
  -- past); a TAT of exactly now is kept 1 ms longer, which no decision reads.
  if at <= t0 then at = t0 + 1 end
  redis.call('SET', key, string.format('%d', tat) .. ARGV[3], 'PXAT', string.format('%d', at))
end"#,
        "state = redis.call('GET', key) or ''",
    )
});

/// [`at_one_instant`] for the library, whose FCALL a script cannot make: the same
/// script sets the key up (no calls), the calls follow in the same MULTI, and the
/// script runs again (key kept) to read TIME, the value and the expiry; retried
/// until the first and last TIME fall in one millisecond.
fn at_one_instant_in_multi(
    c: &mut Connection,
    key: &str,
    start: Start,
    calls: &[&[&str]],
) -> Instant {
    for _ in 0..200 {
        let mut p = redis::pipe();
        p.atomic();
        let setup = p.cmd("EVAL").arg(AT_ONE_INSTANT.as_str()).arg(1).arg(key);
        match start {
            Start::Fresh => setup.arg("fresh").arg(0).arg("000000"),
            Start::Tat { ms, ns } => {
                assert!(ns < 1_000_000);
                setup.arg("tat").arg(ms).arg(format!("{ns:06}"))
            }
        };
        for call in calls {
            p.add_command(command_of(call));
        }
        p.cmd("EVAL")
            .arg(AT_ONE_INSTANT.as_str())
            .arg(1)
            .arg(key)
            .arg("keep")
            .arg(0)
            .arg("000000");
        let mut v: Vec<Value> = p
            .query(c)
            .unwrap_or_else(|e| panic!("{calls:?} in a MULTI: {e}"));
        let (t0, _, _, _, _): (i64, i64, Value, String, i64) =
            redis::from_redis_value(&v[0]).expect("setup");
        let (_, t1, _, get, pexpiretime): (i64, i64, Value, String, i64) =
            redis::from_redis_value(&v[v.len() - 1]).expect("read-back");
        if t0 == t1 {
            v.pop();
            v.remove(0);
            return Instant {
                now: t0,
                replies: v,
                get,
                pexpiretime,
            };
        }
    }
    panic!("no run of {calls:?} within one millisecond in 200 tries");
}

/// The calls as this backend runs them: unchanged for the module; for the library
/// (which has no CL.THROTTLE, the module's alone) each `CL.THROTTLE key max_burst
/// count period [quantity]` becomes the RL.GCRA call it means, `RL.GCRA key
/// (max_burst + 1) count period COST quantity`, and one that cannot be (a bad
/// max_burst) is left out.
fn on_this_backend(calls: &[&[&str]]) -> Vec<Vec<String>> {
    calls
        .iter()
        .filter_map(|c| {
            if !(is_library() && c[0] == "CL.THROTTLE") {
                return Some(strings(c));
            }
            let capacity = c.get(2)?.parse::<u64>().ok()? + 1;
            let mut call = vec![
                "RL.GCRA".to_string(),
                c.get(1)?.to_string(),
                capacity.to_string(),
            ];
            call.extend(c.get(3..5)?.iter().map(|a| a.to_string()));
            if let Some(q) = c.get(5) {
                call.extend(["COST".to_string(), q.to_string()]);
            }
            Some(call)
        })
        .collect()
}

/// How the key starts in [`at_one_instant`].
#[derive(Clone, Copy)]
enum Start {
    /// Deleted first.
    Fresh,
    /// Holds the TAT now + ms milliseconds + ns nanoseconds (ns < 10^6).
    Tat { ms: i64, ns: u32 },
}

/// Calls made at one known server millisecond.
#[derive(Debug)]
struct Instant {
    now: i64,
    replies: Vec<Value>,
    /// GET of the key after the calls ("" when absent).
    get: String,
    pexpiretime: i64,
}

impl Instant {
    /// Reply `i` as five integers.
    fn reply(&self, i: usize) -> [i64; 5] {
        let v: Vec<i64> = redis::from_redis_value(&self.replies[i])
            .unwrap_or_else(|e| panic!("reply {i} {:?}: {e}", self.replies[i]));
        v.try_into()
            .unwrap_or_else(|v| panic!("reply {i} is not five integers: {v:?}"))
    }

    fn int(&self, i: usize) -> i64 {
        redis::from_redis_value(&self.replies[i]).expect("an integer reply")
    }

    /// The stored TAT.
    fn tat(&self) -> u128 {
        self.get
            .parse()
            .unwrap_or_else(|e| panic!("GET {:?} is not a TAT: {e}", self.get))
    }

    fn now_ns(&self) -> u128 {
        self.now as u128 * NS
    }
}

fn at_one_instant(c: &mut Connection, key: &str, start: Start, calls: &[&[&str]]) -> Instant {
    if is_library() {
        return at_one_instant_in_multi(c, key, start, calls);
    }
    for _ in 0..200 {
        let mut command = cmd("EVAL");
        command.arg(AT_ONE_INSTANT.as_str()).arg(1).arg(key);
        match start {
            Start::Fresh => command.arg("fresh").arg(0).arg("000000"),
            Start::Tat { ms, ns } => {
                assert!(ns < 1_000_000);
                command.arg("tat").arg(ms).arg(format!("{ns:06}"))
            }
        };
        for call in calls {
            command.arg(*call).arg("|");
        }
        let (t0, t1, replies, get, pexpiretime): (i64, i64, Vec<Value>, String, i64) = command
            .query(c)
            .unwrap_or_else(|e| panic!("{calls:?} in a script: {e}"));
        if t0 == t1 {
            return Instant {
                now: t0,
                replies,
                get,
                pexpiretime,
            };
        }
    }
    panic!("{calls:?}: no script ran within one millisecond in 200 tries");
}

/// The reference's RL.GCRA on a TAT: (reply, TAT to store) for `capacity`, emission
/// interval `t` ns and cost `n` at server ms `now`.
fn model(
    tat: Option<u128>,
    now: i64,
    capacity: u128,
    t: u128,
    n: u128,
) -> ([i64; 5], Option<u128>) {
    model_delayed(tat, now, capacity, t, n, 0)
}

/// [`model`] with `DELAY max_ms`: admitted while the debt stays within D + max,
/// waiting for what exceeds D.
fn model_delayed(
    tat: Option<u128>,
    now: i64,
    capacity: u128,
    t: u128,
    n: u128,
    max_ms: u128,
) -> ([i64; 5], Option<u128>) {
    let now_ns = now as u128 * NS;
    let (d, m) = (capacity * t, max_ms * NS);
    let base = tat.map_or(now_ns, |tat| tat.max(now_ns));
    let debt = base - now_ns;
    let allowed = n <= capacity && debt + n * t <= d + m;
    let after = if allowed { debt + n * t } else { debt };
    let remaining = if after > d {
        0
    } else {
        ((d - after) / t).min(capacity)
    };
    let retry = if allowed {
        (debt + n * t).saturating_sub(d).div_ceil(NS) as i64
    } else if n > capacity {
        -1
    } else {
        (debt + n * t - d - m).div_ceil(NS) as i64
    };
    let reply = [
        i64::from(allowed),
        capacity as i64,
        remaining as i64,
        retry,
        after.div_ceil(NS) as i64,
    ];
    (reply, (allowed && n > 0).then_some(base + n * t))
}

/// RL.GCRA's reply as CL.THROTTLE reports it.
fn throttle_reply(r: [i64; 5]) -> [i64; 5] {
    let s = |ms: i64| (ms + 999) / 1000;
    let retry = if r[0] == 1 || r[3] == -1 { -1 } else { s(r[3]) };
    [1 - r[0], r[1], r[2], retry, s(r[4])]
}

fn canonical(v: &str) -> bool {
    !v.is_empty() && v.bytes().all(|b| b.is_ascii_digit()) && (v == "0" || !v.starts_with('0'))
}

// ------------------------------------------------------------------ vectors

#[test]
fn spec_vector_capacity_5_one_per_second() {
    let s = Server::start();
    let mut c = s.conn();
    let gcra: &[&str] = &["RL.GCRA", "v", "5", "1", "1s"];
    let cost6: &[&str] = &["RL.GCRA", "v", "5", "1", "1s", "COST", "6"];

    let i = at_one_instant(&mut c, "v", Start::Fresh, &[cost6]);
    assert_eq!(i.reply(0), [0, 5, 5, -1, 0], "COST 6 at t = 0");
    assert_eq!(i.get, "", "a rejected call writes nothing");

    let i = at_one_instant(
        &mut c,
        "v",
        Start::Fresh,
        &[cost6, gcra, gcra, gcra, gcra, gcra, gcra],
    );
    assert_eq!(i.reply(0), [0, 5, 5, -1, 0], "COST 6 at t = 0");
    for k in 1..=5 {
        assert_eq!(
            i.reply(k),
            [1, 5, 5 - k as i64, 0, 1000 * k as i64],
            "call {k} at t = 0"
        );
    }
    assert_eq!(i.reply(6), [0, 5, 0, 1000, 5000], "sixth call at t = 0");
    assert_eq!(i.tat(), i.now_ns() + 5000 * NS, "TAT after five calls");
    assert_eq!(i.pexpiretime, i.now + 5000);

    // t = 3000: the five calls' TAT (t0 + 5000) is 2000 ms ahead.
    let i = at_one_instant(&mut c, "v", Start::Tat { ms: 2000, ns: 0 }, &[gcra]);
    assert_eq!(i.reply(0), [1, 5, 2, 0, 3000], "t = 3000");
    assert_eq!(i.tat(), i.now_ns() + 3000 * NS);
    assert_eq!(i.pexpiretime, i.now + 3000);
    // t = 3100: that call's TAT (t0 + 6000) is 2900 ms ahead.
    let i = at_one_instant(&mut c, "v", Start::Tat { ms: 2900, ns: 0 }, &[gcra]);
    assert_eq!(i.reply(0), [1, 5, 1, 0, 3900], "t = 3100");
    assert_eq!(i.tat(), i.now_ns() + 3900 * NS);
}

#[test]
fn cl_throttle_redis_cell_vectors() {
    if module_only("CL.THROTTLE is the module's alone") {
        return;
    }
    let s = Server::start();
    let mut c = s.conn();
    let i = at_one_instant(
        &mut c,
        "user123",
        Start::Fresh,
        &[&["CL.THROTTLE", "user123", "15", "30", "60"]],
    );
    assert_eq!(i.reply(0), [0, 16, 15, -1, 2], "redis-cell's README vector");
    assert_eq!(i.tat(), i.now_ns() + 2_000_000_000, "T = 60 s / 30");

    let k: &[&str] = &["CL.THROTTLE", "k", "0", "1", "2"];
    let i = at_one_instant(&mut c, "k", Start::Fresh, &[k, k]);
    assert_eq!(i.reply(0), [0, 1, 0, -1, 2], "fresh k 0 1 2");
    assert_eq!(i.reply(1), [1, 1, 0, 2, 2], "again at once");
    assert_eq!(
        i.tat(),
        i.now_ns() + 2_000_000_000,
        "the limited call wrote nothing"
    );

    // The optional quantity, and a period with a unit.
    let i = at_one_instant(
        &mut c,
        "q",
        Start::Fresh,
        &[
            &["CL.THROTTLE", "q", "9", "10", "1s", "4"],
            &["CL.THROTTLE", "q", "9", "10", "1000ms", "7"],
        ],
    );
    assert_eq!(i.reply(0), [0, 10, 6, -1, 1]);
    assert_eq!(
        i.reply(1),
        [1, 10, 6, 1, 1],
        "4 + 7 > 10: retry after 100 ms"
    );
}

/// CL.THROTTLE is RL.GCRA with capacity max_burst + 1 and the reply converted.
#[test]
fn cl_throttle_means_rl_gcra_with_capacity_max_burst_plus_one() {
    if module_only("CL.THROTTLE is the module's alone") {
        return;
    }
    let s = Server::start();
    let mut c = s.conn();
    let cases: &[(&str, &str, &str, &str, i64, u32)] = &[
        ("4", "1", "1", "1", 2500, 0),
        ("4", "1", "1", "3", 2500, 1),
        ("4", "1", "1", "6", 1, 0),
        ("2", "3", "1", "1", 700, 999_999),
        ("0", "2000", "1", "1", 0, 400_000),
        ("99", "7", "60", "20", 500_000, 123_456),
        ("9", "5", "2", "0", 1500, 0),
    ];
    for &(burst, count, period, q, ms, ns) in cases {
        let capacity = (burst.parse::<u64>().unwrap() + 1).to_string();
        let gcra: &[&str] = &["RL.GCRA", "g", &capacity, count, period, "COST", q];
        let throttle: &[&str] = &["CL.THROTTLE", "g", burst, count, period, q];
        let a = at_one_instant(&mut c, "g", Start::Tat { ms, ns }, &[gcra]);
        let b = at_one_instant(&mut c, "g", Start::Tat { ms, ns }, &[throttle]);
        let what = format!("{throttle:?} on a TAT {ms} ms + {ns} ns ahead");
        assert_eq!(b.reply(0), throttle_reply(a.reply(0)), "{what}");
        assert_eq!(
            b.tat() - b.now_ns(),
            a.tat() - a.now_ns(),
            "{what}: the same TAT"
        );
        let t = u128::from(period.parse::<u64>().unwrap()) * 1_000_000_000
            / u128::from(count.parse::<u64>().unwrap());
        let tat = a.now_ns() + ms as u128 * NS + u128::from(ns);
        let (expect, stored) = model(
            Some(tat),
            a.now,
            capacity.parse().unwrap(),
            t,
            q.parse().unwrap(),
        );
        assert_eq!(a.reply(0), expect, "RL.GCRA {what}");
        assert_eq!(a.tat(), stored.unwrap_or(tat), "{what}: stored TAT");
    }
}

// ------------------------------------------------------------------ state

#[test]
fn state_is_the_tat_in_ns_as_a_canonical_decimal_expiring_at_its_ceiling_ms() {
    let s = Server::start();
    let mut c = s.conn();
    // T = 333333333 ns: a TAT between two ms.
    for call in on_this_backend(&[
        &["RL.GCRA", "s", "1", "3", "1s"][..],
        &["CL.THROTTLE", "s", "0", "3", "1"][..],
    ]) {
        let call: Vec<&str> = call.iter().map(String::as_str).collect();
        let call = &call[..];
        let i = at_one_instant(&mut c, "s", Start::Fresh, &[call]);
        assert!(canonical(&i.get), "{call:?}: GET {:?}", i.get);
        assert_eq!(i.tat(), i.now_ns() + 333_333_333, "{call:?}");
        assert_eq!(i.pexpiretime, i.now + 334, "{call:?}: ceil(TAT / 10^6)");
        let kind: String = cmd("TYPE").arg("s").query(&mut c).unwrap();
        assert_eq!(kind, "string");
    }

    // A TAT 1000 ms + 1 ns ahead: the debt is read to the ns, the reply rounds up.
    let i = at_one_instant(
        &mut c,
        "s",
        Start::Tat { ms: 1000, ns: 1 },
        &[&["RL.GCRA", "s", "5", "1", "1s"]],
    );
    assert_eq!(i.reply(0), [1, 5, 2, 0, 2001]);
    assert_eq!(i.tat(), i.now_ns() + 2000 * NS + 1);
    assert_eq!(i.get, format!("{}", i.now_ns() + 2000 * NS + 1));
    assert_eq!(i.pexpiretime, i.now + 2001);

    // A TAT of exactly now is the initial state.
    let i = at_one_instant(
        &mut c,
        "p",
        Start::Tat { ms: 0, ns: 0 },
        &[&["RL.GCRA", "p", "5", "1", "1s", "COST", "0"]],
    );
    assert_eq!(i.reply(0), [1, 5, 5, 0, 0]);
}

// ------------------------------------------------------------------ replication

/// The bytes a command takes in the replication stream.
fn resp_len(args: &[&[u8]]) -> i64 {
    let mut n = format!("*{}\r\n", args.len()).len();
    for a in args {
        n += format!("${}\r\n", a.len()).len() + a.len() + 2;
    }
    n as i64
}

fn repl_offset(c: &mut Connection) -> i64 {
    info_field(c, "replication", "master_repl_offset")
}

fn get(c: &mut Connection, key: &str) -> Option<String> {
    cmd("GET").arg(key).query(c).expect("GET")
}

#[test]
fn a_replica_without_the_module_receives_set_pxat_and_ends_byte_identical() {
    let primary = Server::with(Options {
        args: vec!["--repl-ping-replica-period".into(), "3600".into()],
        ..Options::default()
    });
    let replica = primary.replica(false);
    let mut c = primary.conn();
    // The first write of the stream carries a SELECT: get it out of the way.
    let _: () = cmd("SET").arg("warm-up").arg("x").query(&mut c).unwrap();
    let _: i64 = cmd("RPUSH").arg("a-list").arg("x").query(&mut c).unwrap();

    let allowed: &[&[&str]] = &[
        &["RL.GCRA", "a", "5", "1", "1h"],
        &["RL.GCRA", "a", "5", "1", "1h", "COST", "3"],
        &["CL.THROTTLE", "a", "4", "1", "3600"],
        &["CL.THROTTLE", "b", "15", "30", "60"],
        &["RL.GCRA", "c", "1", "3", "1h"],
        &["CL.THROTTLE", "d", "99", "7", "1d", "50"],
    ];
    let wrapped = resp_len(&[b"MULTI"]) + resp_len(&[b"EXEC"]);
    for call in on_this_backend(allowed) {
        let call: Vec<&str> = call.iter().map(String::as_str).collect();
        let call = &call[..];
        let key = call[1];
        let before = repl_offset(&mut c);
        let r = try_rl(&mut c, call).unwrap();
        assert_eq!(
            r[0],
            i64::from(call[0] == "RL.GCRA"),
            "{call:?} allowed: {r:?}"
        );
        let delta = repl_offset(&mut c) - before;
        let tat = get(&mut c, key).expect("a stored TAT");
        let at = pexpiretime(&mut c, key).to_string();
        let set = resp_len(&[
            b"SET",
            key.as_bytes(),
            tat.as_bytes(),
            b"PXAT",
            at.as_bytes(),
        ]);
        assert!(
            delta == set || delta == set + wrapped,
            "{call:?} propagated {delta} bytes, not SET {key} {tat} PXAT {at} ({set} bytes)"
        );
    }

    let nothing: &[&[&str]] = &[
        &["RL.GCRA", "a", "5", "1", "1h"],       // rejected: a holds 5
        &["CL.THROTTLE", "a", "4", "1", "3600"], // rejected
        &["RL.GCRA", "a", "5", "1", "1h", "COST", "0"], // COST 0 on a live key
        &["CL.THROTTLE", "b", "15", "30", "60", "0"], // quantity 0
        &["CL.THROTTLE", "fresh", "15", "30", "60", "0"], // quantity 0, absent key
        &["RL.GCRA", "fresh", "5", "1", "1h", "COST", "6"], // above the capacity
        &["CL.THROTTLE", "fresh", "4", "1", "1", "6"], // above the limit
        &["CL.THROTTLE", "a", "-1", "1", "1"],   // errors
        &["CL.THROTTLE", "a", "0", "1", "1", "-1"],
        &["RL.GCRA", "a", "5", "0", "1h"],
        &["RL.GCRA", "a", "5", "2000000", "1ms"],
        &["CL.THROTTLE", "a-list", "0", "1", "1"],
        &["RL.GCRA", "warm-up", "5", "1", "1h"],
    ];
    let before = repl_offset(&mut c);
    for call in on_this_backend(nothing) {
        let call: Vec<&str> = call.iter().map(String::as_str).collect();
        let call = &call[..];
        let _ = try_rl(&mut c, call);
        assert_eq!(repl_offset(&mut c), before, "{call:?} propagated something");
    }
    assert!(!exists(&mut c, "fresh"));

    primary.sync(&replica);
    let mut r = replica.conn();
    for key in ["a", "b", "c", "d"] {
        let p = (get(&mut c, key), pexpiretime(&mut c, key));
        assert!(p.0.is_some(), "{key} on the primary");
        assert_eq!(
            (get(&mut r, key), pexpiretime(&mut r, key)),
            p,
            "{key} on the replica"
        );
    }
    assert!(!exists(&mut r, "fresh"));
}

// ------------------------------------------------------------------ errors

fn rdb_changes(c: &mut Connection) -> i64 {
    info_field(c, "persistence", "rdb_changes_since_last_save")
}

#[test]
fn errors_change_nothing_and_the_server_stays_up() {
    let mut s = Server::start();
    let mut c = s.conn();
    rl(&mut c, &["RL.GCRA", "g", "5", "1", "1h", "COST", "2"]);
    let _: i64 = cmd("RPUSH").arg("l").arg("x").query(&mut c).unwrap();
    for (key, value) in [
        ("text", "abc"),
        ("zeros", "0123"),
        ("negative", "-5"),
        ("plus", "+5"),
        ("empty", ""),
        ("fraction", "1.5"),
        ("huge", "1000000000000000000000000000000000000000"),
    ] {
        let _: () = cmd("SET")
            .arg(key)
            .arg(value)
            .arg("PX")
            .arg(3_600_000)
            .query(&mut c)
            .unwrap();
    }
    let keys = [
        "g", "l", "text", "zeros", "negative", "plus", "empty", "fraction", "huge",
    ];
    let snapshots =
        |c: &mut Connection| -> Vec<_> { keys.iter().map(|k| snapshot(c, k.as_bytes())).collect() };
    let before = snapshots(&mut c);
    let changes = rdb_changes(&mut c);

    let max_burst = "ERR max_burst must be an integer from 0 to 9007199254740990";
    let count = "ERR count must be an integer from 1 to 9007199254740991";
    let period = "ERR period must be a duration from 1ms to 3650d";
    let quantity = "ERR quantity must be an integer from 0 to 9007199254740991";
    let rate = "ERR tokens per period is too high";
    let not_gcra = "ERR key does not hold a GCRA state";
    let arity = "ERR wrong number of arguments for 'CL.THROTTLE' command";
    let cases: Vec<(Vec<&[u8]>, &str)> = vec![
        (vec![b"CL.THROTTLE", b"g", b"-1", b"1", b"2"], max_burst),
        (
            vec![b"CL.THROTTLE", b"g", b"9007199254740991", b"1", b"2"],
            max_burst,
        ),
        (vec![b"CL.THROTTLE", b"g", b"x", b"1", b"2"], max_burst),
        (vec![b"CL.THROTTLE", b"g", b"1.5", b"1", b"2"], max_burst),
        (
            vec![b"CL.THROTTLE", b"g", b"\xff\xfe", b"1", b"2"],
            max_burst,
        ),
        (vec![b"CL.THROTTLE", b"g", b"0", b"0", b"2"], count),
        (vec![b"CL.THROTTLE", b"g", b"0", b"-3", b"2"], count),
        (vec![b"CL.THROTTLE", b"g", b"0", b"\xc3\x28", b"2"], count),
        (vec![b"CL.THROTTLE", b"g", b"0", b"1", b"0"], period),
        (vec![b"CL.THROTTLE", b"g", b"0", b"1", b"-2"], period),
        (vec![b"CL.THROTTLE", b"g", b"0", b"1", b"\xff"], period),
        (
            vec![b"CL.THROTTLE", b"g", b"0", b"1", b"2", b"-1"],
            quantity,
        ),
        (vec![b"CL.THROTTLE", b"g", b"0", b"1", b"2", b"x"], quantity),
        (
            vec![b"CL.THROTTLE", b"g", b"0", b"1", b"2", b"\xe2\x82"],
            quantity,
        ),
        (vec![b"CL.THROTTLE", b"g", b"0", b"1000000001", b"1"], rate),
        (vec![b"CL.THROTTLE", b"g", b"0", b"1"], arity),
        (
            vec![b"CL.THROTTLE", b"g", b"0", b"1", b"2", b"3", b"4"],
            arity,
        ),
        (vec![b"CL.THROTTLE", b"l", b"0", b"1", b"2"], "WRONGTYPE"),
        (
            vec![b"RL.GCRA", b"g", b"0", b"1", b"1s"],
            "ERR capacity must be",
        ),
        (
            vec![b"RL.GCRA", b"g", b"5", b"0", b"1s"],
            "ERR tokens must be",
        ),
        (vec![b"RL.GCRA", b"g", b"5", b"1", b"0"], period),
        (vec![b"RL.GCRA", b"g", b"5", b"2000000", b"1ms"], rate),
        (
            vec![b"RL.GCRA", b"g", b"5", b"1", b"1s", b"COST", b"-1"],
            "ERR COST must be",
        ),
        (
            vec![b"RL.GCRA", b"g", b"5", b"1", b"1s", b"COST", b"\xff"],
            "ERR COST must be",
        ),
        (
            vec![b"RL.GCRA", b"g", b"5", b"1", b"1s", b"\xff", b"1"],
            "ERR syntax error",
        ),
        (
            vec![b"RL.GCRA", b"g", b"5", b"1"],
            "ERR wrong number of arguments",
        ),
        (vec![b"RL.GCRA", b"l", b"5", b"1", b"1s"], "WRONGTYPE"),
    ];
    let mut cases = cases;
    for key in &keys[2..] {
        for command in [&b"CL.THROTTLE"[..], b"RL.GCRA"] {
            let args: Vec<&[u8]> = if command == b"RL.GCRA" {
                vec![command, key.as_bytes(), b"5", b"1", b"1s"]
            } else {
                vec![command, key.as_bytes(), b"4", b"1", b"1"]
            };
            cases.push((args, not_gcra));
        }
    }
    for (args, expected) in &cases {
        if is_library() && args[0] == b"CL.THROTTLE" {
            continue;
        }
        let err = error_of(&mut c, args);
        assert!(
            err.to_lowercase().starts_with(&expected.to_lowercase()),
            "{args:?}: {err:?}, expected {expected:?}"
        );
        assert!(s.alive(), "the server died on {args:?}");
    }
    let pong: String = cmd("PING").query(&mut c).unwrap();
    assert_eq!(pong, "PONG");
    assert_eq!(snapshots(&mut c), before, "an error changed a key");
    assert_eq!(rdb_changes(&mut c), changes, "an error counted as a change");
    assert!(!exists(&mut c, "absent"));
    if is_library() {
        return;
    }
    let err = error_of(
        &mut c,
        &[b"CL.THROTTLE", b"absent", b"0", b"1", b"2", b"-1"],
    );
    assert!(err.starts_with(quantity), "{err}");
    assert!(!exists(&mut c, "absent"), "a negative quantity wrote");
}

// ------------------------------------------------------------------ what redis-cell gets wrong

#[test]
fn a_non_utf8_key_is_an_ordinary_key() {
    if module_only("CL.THROTTLE is the module's alone") {
        return;
    }
    let s = Server::start();
    let mut c = s.conn();
    let key: &[u8] = b"\xff\xfe\x00k";
    let v: Vec<i64> = cmd("CL.THROTTLE")
        .arg(key)
        .arg(0)
        .arg(1)
        .arg(2)
        .query(&mut c)
        .unwrap();
    assert_eq!(v, [0, 1, 0, -1, 2]);
    let tat: String = cmd("GET").arg(key).query(&mut c).unwrap();
    assert!(canonical(&tat), "{tat:?}");
}

#[test]
fn remaining_never_exceeds_the_limit_at_high_rates() {
    if module_only("CL.THROTTLE is the module's alone") {
        return;
    }
    let s = Server::start();
    let mut c = s.conn();
    // T = 1 s / 6000 = 166666 ns (redis-cell: 166 us, and remaining up to 6024).
    let i = at_one_instant(
        &mut c,
        "a",
        Start::Fresh,
        &[&["CL.THROTTLE", "a", "6000", "6000", "1"]],
    );
    assert_eq!(i.reply(0), [0, 6001, 6000, -1, 1]);
    let mut max = 0;
    for _ in 0..10 {
        let mut p = redis::pipe();
        for _ in 0..2000 {
            p.cmd("CL.THROTTLE").arg(&["a", "6000", "6000", "1"]);
        }
        let replies: Vec<Vec<i64>> = p.query(&mut c).unwrap();
        for r in replies {
            assert!(
                (0..=6001).contains(&r[2]) && r[1] == 6001 && r[4] >= 0,
                "CL.THROTTLE a 6000 6000 1 replied {r:?}"
            );
            max = max.max(r[2]);
        }
    }
    assert!(max <= 6000, "an allowed call leaves at most 6000 of 6001");
}

#[test]
fn an_emission_interval_under_1ms_keeps_its_state_across_milliseconds() {
    if module_only("CL.THROTTLE is the module's alone") {
        return;
    }
    let s = Server::start();
    let mut c = s.conn();
    // T = 500 us: redis-cell stores this with a 0 ms TTL and forgets it.
    let k: &[&str] = &["CL.THROTTLE", "k", "0", "2000", "1"];
    let i = at_one_instant(&mut c, "k", Start::Fresh, &[k, &["PTTL", "k"], k]);
    assert_eq!(i.reply(0), [0, 1, 0, -1, 1]);
    assert!(i.int(1) >= 1, "PTTL {} right after the call", i.int(1));
    assert_eq!(i.reply(2), [1, 1, 0, 1, 1], "limited within the same ms");
    assert_eq!(i.tat(), i.now_ns() + 500_000);
    assert_eq!(i.pexpiretime, i.now + 1);

    // Capacity 10 at T = 500 us: a burst at t leaves TAT t + 5 ms; each later ms
    // gives back exactly two units, until the key expires at t + 5.
    let b: &[&str] = &["CL.THROTTLE", "b", "9", "2000", "1"];
    let i = at_one_instant(&mut c, "b", Start::Fresh, &[b; 10]);
    assert_eq!(i.reply(9), [0, 10, 0, -1, 1]);
    let tat = i.tat();
    assert_eq!(tat, i.now_ns() + 5 * NS);
    let mut seen = std::collections::BTreeSet::new();
    let deadline = std::time::Instant::now() + PATIENCE;
    while seen.len() < 3 && std::time::Instant::now() < deadline {
        // Read the state at one ms after the burst (COST 0), with GET in the same
        // script; skip ms already seen and anything past the expiry.
        let peek: &[&str] = &["CL.THROTTLE", "b", "9", "2000", "1", "0"];
        let r: (i64, i64, Vec<Value>, String, i64) = cmd("EVAL")
            .arg(AT_ONE_INSTANT.as_str())
            .arg(1)
            .arg("b")
            .arg("keep")
            .arg(0)
            .arg("000000")
            .arg(peek)
            .arg("|")
            .query(&mut c)
            .unwrap();
        let (t0, t1, replies, got, _) = r;
        if t0 != t1 || t0 >= i.now + 5 {
            if t0 >= i.now + 5 {
                break;
            }
            continue;
        }
        let v: Vec<i64> = redis::from_redis_value(&replies[0]).unwrap();
        assert_eq!(got, tat.to_string(), "COST 0 wrote nothing at {t0}");
        let (expect, _) = model(Some(tat), t0, 10, 500_000, 0);
        assert_eq!(v, throttle_reply(expect), "at burst + {} ms", t0 - i.now);
        assert!(v[2] < 10, "the state survived into ms {}", t0 - i.now);
        seen.insert(t0);
    }
    assert!(!seen.is_empty(), "no peek landed within 5 ms of the burst");
}

#[test]
fn quantity_zero_writes_nothing() {
    if module_only("CL.THROTTLE is the module's alone") {
        return;
    }
    let s = Server::start();
    let mut c = s.conn();
    let i = at_one_instant(
        &mut c,
        "z",
        Start::Fresh,
        &[
            &["CL.THROTTLE", "z", "5", "1", "1", "0"],
            &["RL.GCRA", "z", "6", "1", "1s", "COST", "0"],
            &["EXISTS", "z"],
        ],
    );
    assert_eq!(i.reply(0), [0, 6, 6, -1, 0]);
    assert_eq!(i.reply(1), [1, 6, 6, 0, 0]);
    assert_eq!(i.int(2), 0, "quantity 0 created the key");
    assert!(!exists(&mut c, "z"));

    rl(&mut c, &["CL.THROTTLE", "z", "5", "1", "60", "2"]);
    let before = snapshot(&mut c, b"z");
    let changes = rdb_changes(&mut c);
    let r = try_rl(&mut c, &["CL.THROTTLE", "z", "5", "1", "60", "0"]).unwrap();
    assert_eq!(&r[..3], [0, 6, 4]);
    let r = try_rl(&mut c, &["RL.GCRA", "z", "6", "1", "1m", "COST", "0"]).unwrap();
    assert_eq!(&r[..3], [1, 6, 4]);
    assert_eq!(snapshot(&mut c, b"z"), before, "COST 0 touched a live key");
    assert_eq!(rdb_changes(&mut c), changes);
}

// ------------------------------------------------------------------ DELAY

/// Reply `i` of an [`Instant`] as RL.ALL's arrays of five integers.
fn all_reply(i: &Instant, k: usize) -> Vec<[i64; 5]> {
    let v: Vec<Vec<i64>> = redis::from_redis_value(&i.replies[k])
        .unwrap_or_else(|e| panic!("reply {k} {:?}: {e}", i.replies[k]));
    v.into_iter()
        .map(|r| r.try_into().expect("five integers"))
        .collect()
}

#[test]
fn spec_delay_vector_schedules_five_and_rejects_the_sixth_at_one_instant() {
    let s = Server::start();
    let mut c = s.conn();
    let call: &[&str] = &["RL.GCRA", "d", "2", "1", "1s", "DELAY", "3s"];
    let i = at_one_instant(&mut c, "d", Start::Fresh, &[call; 6]);
    let want = [
        [1, 2, 1, 0, 1000],
        [1, 2, 0, 0, 2000],
        [1, 2, 0, 1000, 3000],
        [1, 2, 0, 2000, 4000],
        [1, 2, 0, 3000, 5000],
        [0, 2, 0, 1000, 5000],
    ];
    for (k, want) in want.iter().enumerate() {
        assert_eq!(&i.reply(k), want, "call {} at t = 0", k + 1);
    }
    assert_eq!(
        i.tat(),
        i.now_ns() + 5000 * NS,
        "the sixth call wrote nothing"
    );
    assert_eq!(i.pexpiretime, i.now + 5000);
    // The option in any case, before or after COST; DELAY 0 is no DELAY.
    let i = at_one_instant(
        &mut c,
        "d",
        Start::Fresh,
        &[
            &[
                "RL.GCRA", "d", "2", "1", "1s", "delay", "3000ms", "COST", "2",
            ],
            &["RL.GCRA", "d", "2", "1", "1s", "COST", "1", "Delay", "3s"],
            &["RL.GCRA", "d", "2", "1", "1s", "DELAY", "0"],
            &["RL.GCRA", "d", "2", "1", "1s"],
        ],
    );
    assert_eq!(i.reply(0), [1, 2, 0, 0, 2000]);
    assert_eq!(i.reply(1), [1, 2, 0, 1000, 3000]);
    assert_eq!(
        i.reply(2),
        [0, 2, 0, 2000, 3000],
        "DELAY 0 rejects as without it"
    );
    assert_eq!(i.reply(3), [0, 2, 0, 2000, 3000]);
}

#[test]
fn delay_with_cost_a_lowered_capacity_and_a_sub_ms_interval_follows_the_model() {
    let s = Server::start();
    let mut c = s.conn();
    /// `RL.GCRA m capacity tokens 1s COST cost DELAY {delay}ms` on a TAT
    /// `ahead` (ms, ns) of now, and its reply.
    struct Case {
        capacity: u128,
        tokens: u128,
        cost: u128,
        delay: u128,
        ahead: (i64, u32),
        reply: [i64; 5],
    }
    let case = |capacity, tokens, cost, delay, ahead, reply| Case {
        capacity,
        tokens,
        cost,
        delay,
        ahead,
        reply,
    };
    let cases = [
        // COST 3 with 3 s of debt on capacity 5: 1 s past D, within the 4 s delay.
        case(5, 1, 3, 4000, (3000, 0), [1, 5, 0, 1000, 6000]),
        case(5, 1, 3, 4000, (6000, 1), [0, 5, 0, 1, 6001]),
        case(5, 1, 6, 3_600_000, (0, 0), [0, 5, 5, -1, 0]),
        // Written under capacity 10, read under capacity 3: 10 s of debt, D = 3 s.
        case(3, 1, 1, 8000, (10_000, 0), [1, 3, 0, 8000, 11_000]),
        case(3, 1, 1, 7000, (10_000, 0), [0, 3, 0, 1000, 10_000]),
        case(3, 1, 0, 7000, (10_000, 0), [1, 3, 0, 7000, 10_000]),
        // T = 0.5 ms: waits under a ms round up to one.
        case(1, 2000, 1, 1, (0, 500_000), [1, 1, 0, 1, 1]),
        case(1, 2000, 1, 1, (1, 0), [1, 1, 0, 1, 2]),
        case(1, 2000, 1, 1, (1, 1), [0, 1, 0, 1, 2]),
        // T = 333333333 ns.
        case(1, 3, 1, 1000, (333, 333_333), [1, 1, 0, 334, 667]),
        case(2, 1, 1, 0, (2000, 0), [0, 2, 0, 1000, 2000]),
    ];
    for Case {
        capacity,
        tokens,
        cost,
        delay,
        ahead: (ms, ns),
        reply,
    } in cases
    {
        let [capacity_s, tokens_s, cost_s] = [capacity, tokens, cost].map(|v| v.to_string());
        let delay_s = format!("{delay}ms");
        let call: &[&str] = &[
            "RL.GCRA",
            "m",
            &capacity_s,
            &tokens_s,
            "1s",
            "COST",
            &cost_s,
            "DELAY",
            &delay_s,
        ];
        let i = at_one_instant(&mut c, "m", Start::Tat { ms, ns }, &[call]);
        let tat = i.now_ns() + ms as u128 * NS + u128::from(ns);
        let t = 1_000_000_000 / tokens;
        let (expect, stored) = model_delayed(Some(tat), i.now, capacity, t, cost, delay);
        assert_eq!(
            i.reply(0),
            reply,
            "{call:?} on a TAT {ms} ms + {ns} ns ahead"
        );
        assert_eq!(expect, reply, "the model agrees on {call:?}");
        assert_eq!(i.tat(), stored.unwrap_or(tat), "{call:?}: stored TAT");
    }
    // A burst at T = 0.5 ms, capacity 1, DELAY 1ms: two scheduled in the next ms.
    let sub_ms: &[&str] = &["RL.GCRA", "u", "1", "2000", "1s", "DELAY", "1ms"];
    let i = at_one_instant(&mut c, "u", Start::Fresh, &[sub_ms; 4]);
    assert_eq!(
        (0..4).map(|k| i.reply(k)).collect::<Vec<_>>(),
        [
            [1, 1, 0, 0, 1],
            [1, 1, 0, 1, 1],
            [1, 1, 0, 1, 2],
            [0, 1, 0, 1, 2]
        ]
    );
    assert_eq!(i.tat(), i.now_ns() + 1_500_000);
    assert_eq!(i.pexpiretime, i.now + 2);
}

#[test]
fn twenty_clients_reserving_one_key_get_distinct_slots_in_arrival_order() {
    let s = Server::start();
    // Capacity 1, T = 100 ms, DELAY 10s: each call queues behind the earlier ones.
    let call = strings(&["RL.GCRA", "fleet", "1", "10", "1s", "DELAY", "10s"]);
    let clients: Vec<Connection> = (0..20).map(|_| s.conn()).collect();
    let start = std::sync::Barrier::new(clients.len());
    let observed: Vec<Observed<Option<String>>> = std::thread::scope(|scope| {
        let workers: Vec<_> = clients
            .into_iter()
            .map(|mut c| {
                let (call, start) = (&call, &start);
                scope.spawn(move || {
                    start.wait();
                    observe(&mut c, call, |p, k| {
                        p.cmd("GET").arg(k);
                    })
                })
            })
            .collect();
        workers
            .into_iter()
            .map(|w| w.join().expect("a client"))
            .collect()
    });
    // Each call's slot: its server time plus its wait. Sorted by slot, the calls
    // are in the order they ran (server time, and the TAT each one read).
    let mut slots: Vec<(i64, &Observed<Option<String>>)> = observed
        .iter()
        .map(|o| {
            assert_eq!(o.reply.allowed, 1, "{:?}", o.reply);
            assert!(o.reply.retry_after <= 10_000, "{:?}", o.reply);
            // T is a whole number of ms: the TAT is the slot + T exactly.
            assert_eq!(
                o.reply.reset_after,
                o.reply.retry_after + 100,
                "{:?}",
                o.reply
            );
            (o.lo + o.reply.retry_after, o)
        })
        .collect();
    slots.sort_by_key(|(slot, _)| *slot);
    assert_eq!(slots[0].1.reply.retry_after, 0, "the first goes at once");
    let tat = |o: &Observed<Option<String>>| -> u128 {
        o.after.as_deref().expect("a TAT").parse().expect("a TAT")
    };
    for pair in slots.windows(2) {
        let ((a, x), (b, y)) = (pair[0], pair[1]);
        // Exact where a MULTI runs at one instant (lo = hi); else within the spread.
        let slack = (x.hi - x.lo) + (y.hi - y.lo);
        assert!(
            (b - a - 100).abs() <= slack,
            "slots {a} and {b} are not T = 100 ms apart: {:?} then {:?}",
            x.reply,
            y.reply
        );
        assert!(y.lo + slack >= x.lo, "a later slot went to an earlier call");
        assert_eq!(
            tat(y),
            tat(x) + 100 * NS,
            "each call queued behind the previous"
        );
    }
}

#[test]
fn rl_all_with_a_delay_policy_answers_the_longest_wait() {
    let s = Server::start();
    let mut c = s.conn();
    let all = |b_delay: &'static str| -> Vec<&'static str> {
        let mut line = vec![
            "RL.ALL", "2", "a", "b", "GCRA", "1", "1", "1s", "DELAY", "5s",
        ];
        line.extend(["GCRA", "3", "1", "1s"]);
        if !b_delay.is_empty() {
            line.extend(["DELAY", b_delay]);
        }
        line
    };
    let (delayed, strict) = (all("5s"), all(""));
    let i = at_one_instant(
        &mut c,
        "a",
        Start::Fresh,
        &[
            &["DEL", "b"],
            &delayed,
            &delayed,
            &delayed,
            &strict,
            &["GET", "b"],
        ],
    );
    // a: capacity 1, scheduled from the second call on; b: capacity 3, at once.
    assert_eq!(
        all_reply(&i, 1),
        [[1, 1, 0, 0, 1000], [1, 1, 0, 0, 1000], [1, 3, 2, 0, 1000]]
    );
    assert_eq!(
        all_reply(&i, 2),
        [
            [1, 1, 0, 1000, 2000],
            [1, 1, 0, 1000, 2000],
            [1, 3, 1, 0, 2000]
        ]
    );
    assert_eq!(
        all_reply(&i, 3),
        [
            [1, 1, 0, 2000, 3000],
            [1, 1, 0, 2000, 3000],
            [1, 3, 0, 0, 3000]
        ]
    );
    // b without DELAY rejects: a would be scheduled, but nothing is written and
    // the combined wait is b's, the key that rejects.
    assert_eq!(
        all_reply(&i, 4),
        [
            [0, 1, 0, 1000, 3000],
            [1, 1, 0, 3000, 3000],
            [0, 3, 0, 1000, 3000]
        ]
    );
    assert_eq!(
        i.tat(),
        i.now_ns() + 3000 * NS,
        "a: three calls, the fourth wrote nothing"
    );
    let b: String = redis::from_redis_value(&i.replies[5]).expect("GET b");
    assert_eq!(b, (i.now_ns() + 3000 * NS).to_string());
}

/// After RL.ALL's last policy, a GCRA's DELAY and the COST come in any order and
/// mean the same: the same replies, the same TAT written.
#[test]
fn rl_all_takes_the_last_gcra_s_delay_before_or_after_cost() {
    let s = Server::start();
    let mut c = s.conn();
    let line = |key: &'static str, options: [&'static str; 4]| -> Vec<&'static str> {
        let mut l = vec!["RL.ALL", "1", key, "GCRA", "1", "1", "1s"];
        l.extend(options);
        l
    };
    let first = line("a", ["DELAY", "5s", "COST", "1"]);
    let second = line("b", ["cost", "1", "delay", "5s"]);
    for _ in 0..200 {
        // Both keys at one instant (a MULTI that TIME shows ran within one ms).
        let mut p = redis::pipe();
        p.atomic().cmd("DEL").arg("a").arg("b").ignore().cmd("TIME");
        for _ in 0..3 {
            p.add_command(command_of(&first));
            p.add_command(command_of(&second));
        }
        p.cmd("GET").arg("a").cmd("GET").arg("b").cmd("TIME");
        type Replies = Vec<Vec<i64>>;
        #[allow(clippy::type_complexity)]
        let (t0, a1, b1, a2, b2, a3, b3, tat_a, tat_b, t1): (
            (i64, i64),
            Replies,
            Replies,
            Replies,
            Replies,
            Replies,
            Replies,
            String,
            String,
            (i64, i64),
        ) = p.query(&mut c).expect("MULTI");
        if ms_of(t0) != ms_of(t1) {
            continue;
        }
        assert_eq!((&a1, &a2, &a3), (&b1, &b2, &b3));
        // Capacity 1, one per second, DELAY 5s: the third call waits 2 s.
        assert_eq!(a3[0], [1, 1, 0, 2000, 3000], "{a3:?}");
        assert_eq!(tat_a, tat_b);
        return;
    }
    panic!("no MULTI ran within one millisecond in 200 tries");
}

#[test]
fn delay_errors_change_nothing() {
    let s = Server::start();
    let mut c = s.conn();
    rl(&mut c, &["RL.GCRA", "g", "5", "1", "1h", "COST", "2"]);
    let before = snapshot(&mut c, b"g");
    let changes = rdb_changes(&mut c);
    let gcra = |extra: &[&'static str]| -> Vec<&'static str> {
        let mut line = vec!["RL.GCRA", "g", "5", "1", "1h"];
        line.extend(extra);
        line
    };
    let bad_delay = "ERR DELAY must be a duration from 0 to 3650d: an integer with an \
                     optional unit ms, s, m, h or d (a bare integer means seconds)";
    let refund = "ERR syntax error: DELAY and REFUND exclude each other";
    let mut cases: Vec<(Vec<&str>, &str)> = vec![
        (gcra(&["DELAY", "1s", "REFUND", "1"]), refund),
        (gcra(&["refund", "1", "delay", "0"]), refund),
        (gcra(&["DELAY"]), "ERR syntax error: DELAY needs a value"),
        (
            gcra(&["COST", "1", "DELAY"]),
            "ERR syntax error: DELAY needs a value",
        ),
        (
            gcra(&["DELAY", "1s", "DELAY", "1s"]),
            "ERR syntax error: DELAY given more than once",
        ),
        (
            gcra(&["WAIT", "1s"]),
            "ERR syntax error: unknown option 'WAIT', expected COST n, REFUND n or DEBIT n, or DELAY max",
        ),
        (
            vec!["RL.BUCKET", "g2", "5", "1", "1h", "DELAY", "1s"],
            "ERR syntax error: DELAY does not apply to RL.BUCKET, which takes COST n, REFUND n or DEBIT n",
        ),
        (
            vec![
                "RL.ALL", "1", "g", "GCRA", "5", "1", "1h", "DELAY", "1s", "REFUND", "1",
            ],
            refund,
        ),
        (
            vec!["RL.ALL", "1", "g", "GCRA", "5", "1", "1h", "DELAY", "x"],
            bad_delay,
        ),
        (
            vec!["RL.ALL", "1", "g", "GCRA", "5", "1", "1h", "DELAY"],
            "ERR syntax error: DELAY needs a value",
        ),
        (
            vec![
                "RL.ALL", "1", "g", "GCRA", "5", "1", "1h", "DELAY", "1s", "DELAY", "1s",
            ],
            "ERR syntax error: DELAY given more than once",
        ),
        (
            vec!["RL.ALL", "1", "g", "FIXED", "5", "1h", "DELAY", "1s"],
            "ERR syntax error: DELAY must follow a GCRA policy",
        ),
        (
            vec![
                "RL.ALL", "1", "g", "FIXED", "5", "1h", "COST", "1", "DELAY", "1s",
            ],
            "ERR syntax error: DELAY must follow a GCRA policy",
        ),
        (
            vec![
                "RL.ALL", "1", "g", "GCRA", "5", "1", "1h", "COST", "1", "DELAY", "1s", "REFUND",
                "1",
            ],
            "ERR syntax error: COST and REFUND exclude each other",
        ),
        (
            vec![
                "RL.ALL", "1", "g", "GCRA", "5", "1", "1h", "REFUND", "1", "DELAY", "1s",
            ],
            refund,
        ),
        (
            vec![
                "RL.ALL", "1", "g", "GCRA", "5", "1", "1h", "DELAY", "1s", "COST", "1", "DELAY",
                "1s",
            ],
            "ERR syntax error: DELAY given more than once",
        ),
        (
            vec![
                "RL.ALL", "1", "g", "GCRA", "5", "1", "1h", "COST", "1", "DELAY", "x",
            ],
            bad_delay,
        ),
    ];
    for value in [
        "-1",
        "1.5s",
        "00",
        "3651d",
        "315360000001ms",
        "1w",
        "",
        "x",
        "1 s",
    ] {
        cases.push((gcra(&["DELAY", value]), bad_delay));
    }
    for (args, expected) in &cases {
        let args: Vec<&[u8]> = args.iter().map(|a| a.as_bytes()).collect();
        assert_eq!(&error_of(&mut c, &args), expected, "{args:?}");
    }
    if !is_library() {
        // redis-cell's syntax: no options at all.
        let e = error_of(
            &mut c,
            &[b"CL.THROTTLE", b"g", b"4", b"1", b"3600", b"DELAY", b"1s"],
        );
        assert_eq!(e.to_lowercase(), arity_error("CL.THROTTLE").to_lowercase());
    }
    assert_eq!(snapshot(&mut c, b"g"), before, "an error changed the key");
    assert_eq!(rdb_changes(&mut c), changes, "an error counted as a change");
    assert!(!exists(&mut c, "g2"));
}

/// The value alone is the state: a TAT on a key without an expiry (`RESTORE key 0
/// …` of a redis-cell key, a `PERSIST`) is read like any other, as redis-cell reads
/// it; COST 0 and a rejected call leave it as it is, and the next allowed write sets
/// the expiry again (docs/commands.md, RL.GCRA).
#[test]
fn a_tat_without_an_expiry_is_read_and_the_next_write_sets_one() {
    let s = Server::start();
    let mut c = s.conn();
    let persisted = |c: &mut Connection, key: &str, ahead_ms: i64| {
        let tat = (server_ms(c) + ahead_ms) as u128 * NS;
        let _: () = cmd("SET").arg(key).arg(tat.to_string()).query(c).unwrap();
        assert_eq!(pexpiretime(c, key), -1);
        tat
    };
    // 10 s of debt at 1 per second, capacity 20: about 10 left.
    let tat = persisted(&mut c, "g:persisted", 10_000);
    let peek = rl(
        &mut c,
        &["RL.GCRA", "g:persisted", "20", "1", "1s", "COST", "0"],
    );
    assert_eq!(
        (peek.allowed, peek.limit, peek.remaining),
        (1, 20, 10),
        "{peek:?}"
    );
    assert!((9_000..=10_000).contains(&peek.reset_after), "{peek:?}");
    assert_eq!(pexpiretime(&mut c, "g:persisted"), -1, "COST 0 wrote");
    let r = rl(&mut c, &["RL.GCRA", "g:persisted", "20", "1", "1s"]);
    assert_eq!((r.allowed, r.remaining, r.retry_after), (1, 9, 0), "{r:?}");
    assert_eq!(
        get(&mut c, "g:persisted"),
        Some((tat + 1_000 * NS).to_string())
    );
    assert_eq!(
        pexpiretime(&mut c, "g:persisted") as u128,
        (tat + 1_000 * NS).div_ceil(NS),
        "the allowed write sets the expiry"
    );

    // 100 s of debt, capacity 5: rejected for about 96 s, nothing written.
    let tat = persisted(&mut c, "g:persisted:full", 100_000);
    let r = rl(&mut c, &["RL.GCRA", "g:persisted:full", "5", "1", "1s"]);
    assert_eq!((r.allowed, r.remaining), (0, 0), "{r:?}");
    assert!((95_000..=96_000).contains(&r.retry_after), "{r:?}");
    assert_eq!(get(&mut c, "g:persisted:full"), Some(tat.to_string()));
    assert_eq!(pexpiretime(&mut c, "g:persisted:full"), -1);

    if module_only("CL.THROTTLE is the module's") {
        return;
    }
    // CL.THROTTLE reads it the same (max_burst 19: capacity 20).
    let tat = persisted(&mut c, "g:persisted:cell", 10_000);
    let v: Vec<i64> = cmd("CL.THROTTLE")
        .arg(&["g:persisted:cell", "19", "1", "1"])
        .query(&mut c)
        .unwrap();
    assert_eq!(v[..4], [0, 20, 9, -1], "{v:?}");
    assert_eq!(
        get(&mut c, "g:persisted:cell"),
        Some((tat + 1_000 * NS).to_string())
    );
    assert!(pexpiretime(&mut c, "g:persisted:cell") > 0);
}
