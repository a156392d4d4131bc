//! The Lua twin at work: functions/rl.lua loaded in-process and called against a
//! Keyspace, checked with the vectors of docs/commands.md; then the twin's own
//! Redis semantics, on small libraries of its own.

use std::collections::BTreeMap;
use std::time::Instant;

use crate::twin::LuaTwin;
use rl_core::keyspace::{Keyspace, Kind, Value};

/// A call time (ms) at a whole minute, so window arithmetic is easy to read.
const T0: i64 = 1_700_000_040_000;

/// One FCALL with string keys and arguments.
fn fcall(
    twin: &mut LuaTwin,
    ks: &mut Keyspace,
    now: i64,
    function: &str,
    keys: &[&str],
    args: &[&str],
) -> Result<Value, String> {
    let keys: Vec<&[u8]> = keys.iter().map(|k| k.as_bytes()).collect();
    let args: Vec<&[u8]> = args.iter().map(|a| a.as_bytes()).collect();
    twin.fcall(ks, now, function, &keys, &args)
}

/// A one-key call that must answer an array of five integers.
fn decide(
    twin: &mut LuaTwin,
    ks: &mut Keyspace,
    now: i64,
    function: &str,
    key: &str,
    args: &[&str],
) -> [i64; 5] {
    match fcall(twin, ks, now, function, &[key], args) {
        Ok(v) => fields(&v),
        Err(e) => panic!("{function} {key} {args:?}: {e}"),
    }
}

fn fields(v: &Value) -> [i64; 5] {
    let Value::Array(items) = v else {
        panic!("not an array: {v:?}")
    };
    let ints: Vec<i64> = items
        .iter()
        .map(|i| match i {
            Value::Int(n) => *n,
            other => panic!("not an integer: {other:?}"),
        })
        .collect();
    ints.try_into()
        .unwrap_or_else(|v| panic!("not five fields: {v:?}"))
}

fn command(ks: &mut Keyspace, now: i64, args: &[&str]) -> Value {
    let argv: Vec<&[u8]> = args.iter().map(|a| a.as_bytes()).collect();
    ks.command(now, &argv)
        .unwrap_or_else(|e| panic!("{args:?}: {e}"))
}

fn rl() -> (LuaTwin, Keyspace) {
    (LuaTwin::rl(), Keyspace::new())
}

// -- the library as loaded ------------------------------------------------------

/// The library's functions are the table's, with the flags the module's commands
/// imply: a command that is not `deny-oom` (RL.RELEASE, which must free a slot at
/// maxmemory) is `allow-oom`; `rl_version` only reads.
#[test]
fn function_list() {
    let twin = LuaTwin::rl();
    assert_eq!(twin.library(), "rl");
    let mut expected: BTreeMap<String, Vec<&str>> = rl_core::commands::COMMANDS
        .iter()
        .filter_map(|c| {
            let denies_oom = c
                .flags
                .to_bytes()
                .split(|&b| b == b' ')
                .any(|f| f == b"deny-oom");
            let flags = if denies_oom {
                vec![]
            } else {
                vec!["allow-oom"]
            };
            c.function
                .filter(|_| crate::twin::library_runs(c))
                .map(|f| (f.to_string(), flags))
        })
        .collect();
    expected.insert("rl_version".into(), vec!["no-writes", "allow-stale"]);
    assert_eq!(expected["rl_release"], ["allow-oom"]);
    assert_eq!(twin.functions(), expected);
}

#[test]
fn rl_version_answers_cargos_version() {
    let (mut twin, mut ks) = rl();
    let v = fcall(&mut twin, &mut ks, T0, "rl_version", &[], &[]);
    assert_eq!(
        v,
        Ok(Value::Bulk(env!("CARGO_PKG_VERSION").as_bytes().to_vec()))
    );
    assert_eq!(
        fcall(&mut twin, &mut ks, T0, "rl_nope", &[], &[]),
        Err("ERR Function not found".into())
    );
}

// -- RL.FIXED -------------------------------------------------------------------

#[test]
fn rl_fixed_counts_in_a_set_with_pxat() {
    let (mut twin, mut ks) = rl();
    let now = T0 + 1_500;
    let window_end = T0 + 60_000;
    assert_eq!(
        decide(&mut twin, &mut ks, now, "rl_fixed", "k", &["5", "60"]),
        [1, 5, 4, 0, 58_500]
    );
    assert_eq!(ks.string(b"k", now), Some(&b"1"[..]));
    assert_eq!(ks.expires_at(b"k", now), Some(window_end));
    assert_eq!(
        decide(
            &mut twin,
            &mut ks,
            now,
            "rl_fixed",
            "k",
            &["5", "1m", "COST", "4"]
        ),
        [1, 5, 0, 0, 58_500]
    );
    assert_eq!(
        decide(&mut twin, &mut ks, now, "rl_fixed", "k", &["5", "1m"]),
        [0, 5, 0, 58_500, 58_500]
    );
    assert_eq!(ks.string(b"k", now), Some(&b"5"[..]));
    // At the window's end the key is still live in Redis (it expires after its
    // expiry instant), and RL counts it as ended.
    assert_eq!(ks.kind(b"k", window_end), Kind::String);
    assert_eq!(
        decide(
            &mut twin,
            &mut ks,
            window_end,
            "rl_fixed",
            "k",
            &["5", "60"]
        ),
        [1, 5, 4, 0, 60_000]
    );
    assert_eq!(ks.expires_at(b"k", window_end), Some(window_end + 60_000));
}

#[test]
fn rl_fixed_errors() {
    let (mut twin, mut ks) = rl();
    command(&mut ks, T0, &["HSET", "h", "f", "v"]);
    assert_eq!(
        fcall(&mut twin, &mut ks, T0, "rl_fixed", &["h"], &["5", "60"]),
        Err("WRONGTYPE Operation against a key holding the wrong kind of value".into())
    );
    assert_eq!(
        fcall(&mut twin, &mut ks, T0, "rl_fixed", &["err:a"], &["10", "11y"]),
        Err("ERR window must be a duration from 1ms to 3650d: an integer with an optional unit ms, s, m, h or d (a bare integer means seconds)".into())
    );
    assert_eq!(
        fcall(
            &mut twin,
            &mut ks,
            T0,
            "rl_fixed",
            &["err:a"],
            &["10", "1m", "COST", "1", "REFUND", "1"]
        ),
        Err("ERR syntax error: COST and REFUND exclude each other".into())
    );
    command(&mut ks, T0, &["SET", "err:b", "hello"]);
    assert_eq!(
        fcall(
            &mut twin,
            &mut ks,
            T0,
            "rl_fixed",
            &["err:b"],
            &["10", "1m"]
        ),
        Err(
            "ERR key does not hold an RL.FIXED counter (a non-negative integer with an expiry)"
                .into()
        )
    );
    assert_eq!(ks.string(b"err:b", T0), Some(&b"hello"[..]));
    assert_eq!(
        fcall(&mut twin, &mut ks, T0, "rl_fixed", &["a", "b"], &["10", "1m"]),
        Err("ERR rl_fixed takes exactly one key: FCALL rl_fixed 1 key limit window [COST n | REFUND n | DEBIT n] [SHADOW]".into())
    );
}

// -- RL.GCRA ----------------------------------------------------------------------

#[test]
fn rl_gcra_vector() {
    let (mut twin, mut ks) = rl();
    let gcra = |twin: &mut LuaTwin, ks: &mut Keyspace, t: i64, extra: &[&str]| {
        let mut args = vec!["5", "1", "1s"];
        args.extend_from_slice(extra);
        decide(twin, ks, T0 + t, "rl_gcra", "gcra:a", &args)
    };
    assert_eq!(
        gcra(&mut twin, &mut ks, 0, &["COST", "6"]),
        [0, 5, 5, -1, 0]
    );
    assert_eq!(ks.kind(b"gcra:a", T0), Kind::Empty);
    for (i, remaining) in [4, 3, 2, 1, 0].into_iter().enumerate() {
        let reset = 1_000 * (i as i64 + 1);
        assert_eq!(
            gcra(&mut twin, &mut ks, 0, &[]),
            [1, 5, remaining, 0, reset]
        );
    }
    assert_eq!(gcra(&mut twin, &mut ks, 0, &[]), [0, 5, 0, 1_000, 5_000]);
    assert_eq!(gcra(&mut twin, &mut ks, 3_000, &[]), [1, 5, 2, 0, 3_000]);
    assert_eq!(gcra(&mut twin, &mut ks, 3_100, &[]), [1, 5, 1, 0, 3_900]);
    // The TAT in ns, ~1.7e18 (beyond 2^53): an exact decimal, redis-cell's format.
    let tat = (T0 as u128 + 7_000) * 1_000_000;
    assert_eq!(
        ks.string(b"gcra:a", T0 + 3_100),
        Some(tat.to_string().as_bytes())
    );
    assert_eq!(ks.expires_at(b"gcra:a", T0 + 3_100), Some(T0 + 7_000));
}

#[test]
fn rl_gcra_stores_the_exact_tat() {
    let (mut twin, mut ks) = rl();
    // 3 per 1 s: T = floor(10^9 / 3) ns, so the TAT is not a whole ms.
    let now = T0 + 123;
    assert_eq!(
        decide(&mut twin, &mut ks, now, "rl_gcra", "g", &["3", "3", "1s"]),
        [1, 3, 2, 0, 334]
    );
    let tat = now as u128 * 1_000_000 + 333_333_333;
    assert_eq!(ks.string(b"g", now), Some(tat.to_string().as_bytes()));
    assert_eq!(ks.string(b"g", now), Some(&b"1700000040456333333"[..]));
    assert_eq!(ks.expires_at(b"g", now), Some(now + 334)); // ceil(TAT / 10^6)
}

#[test]
fn rl_gcra_delay_vector() {
    let (mut twin, mut ks) = rl();
    let args = ["2", "1", "1s", "DELAY", "3s"];
    let expected = [
        [1, 2, 1, 0, 1_000],
        [1, 2, 0, 0, 2_000],
        [1, 2, 0, 1_000, 3_000],
        [1, 2, 0, 2_000, 4_000],
        [1, 2, 0, 3_000, 5_000],
        [0, 2, 0, 1_000, 5_000],
    ];
    for want in expected {
        assert_eq!(
            decide(&mut twin, &mut ks, T0, "rl_gcra", "queue:a", &args),
            want
        );
    }
}

// -- RL.BUCKET --------------------------------------------------------------------

#[test]
fn rl_bucket_vector() {
    let (mut twin, mut ks) = rl();
    let args = ["5", "1", "1s"];
    let at_zero = [
        (1, 4, 0),
        (1, 3, 0),
        (1, 2, 0),
        (1, 1, 0),
        (1, 0, 0),
        (0, 0, 1_000),
        (0, 0, 1_000),
    ];
    for (allowed, remaining, retry) in at_zero {
        let d = decide(&mut twin, &mut ks, T0, "rl_bucket", "k", &args);
        assert_eq!((d[0], d[2], d[3]), (allowed, remaining, retry));
    }
    let d = decide(&mut twin, &mut ks, T0 + 3_000, "rl_bucket", "k", &args);
    assert_eq!((d[0], d[2], d[3]), (1, 2, 0));
    assert_eq!(
        ks.hash_get(b"k", b"tokens", T0 + 3_000),
        Ok(Some(&b"2"[..]))
    );
    let ts = (T0 + 3_000).to_string();
    assert_eq!(
        ks.hash_get(b"k", b"ts", T0 + 3_000),
        Ok(Some(ts.as_bytes()))
    );
    assert_eq!(ks.expires_at(b"k", T0 + 3_000), Some(T0 + 6_000));
}

#[test]
fn rl_bucket_session_and_refund() {
    let (mut twin, mut ks) = rl();
    let b = |twin: &mut LuaTwin, ks: &mut Keyspace, extra: &[&str]| {
        let mut args = vec!["5", "1", "1s"];
        args.extend_from_slice(extra);
        decide(twin, ks, T0, "rl_bucket", "bucket:a", &args)
    };
    assert_eq!(b(&mut twin, &mut ks, &["COST", "4"]), [1, 5, 1, 0, 4_000]);
    assert_eq!(b(&mut twin, &mut ks, &[]), [1, 5, 0, 0, 5_000]);
    assert_eq!(b(&mut twin, &mut ks, &[]), [0, 5, 0, 1_000, 5_000]);
    assert_eq!(
        command(&mut ks, T0, &["HGET", "bucket:a", "tokens"]),
        Value::Bulk(b"0".to_vec())
    );

    let r = |twin: &mut LuaTwin, ks: &mut Keyspace, extra: &[&str]| {
        let mut args = vec!["10", "1", "1s"];
        args.extend_from_slice(extra);
        decide(twin, ks, T0, "rl_bucket", "refund:a", &args)
    };
    assert_eq!(r(&mut twin, &mut ks, &["COST", "4"]), [1, 10, 6, 0, 4_000]);
    assert_eq!(r(&mut twin, &mut ks, &["REFUND", "10"]), [1, 10, 10, 0, 0]);
    assert_eq!(command(&mut ks, T0, &["EXISTS", "refund:a"]), Value::Int(0));
    assert_eq!(
        fcall(
            &mut twin,
            &mut ks,
            T0,
            "rl_bucket",
            &["err:a"],
            &["10", "0", "1s"]
        ),
        Err("ERR tokens must be an integer from 1 to 9007199254740991".into())
    );
}

// -- RL.SLIDING -------------------------------------------------------------------

#[test]
fn rl_sliding_vector() {
    let (mut twin, mut ks) = rl();
    let steps = [
        (10, 1, 4, 0),
        (20, 1, 3, 0),
        (30, 1, 2, 0),
        (40, 1, 1, 0),
        (50, 1, 0, 0),
        (55, 0, 0, 15_000),
        (121, 1, 4, 0),
    ];
    for (t, allowed, remaining, retry) in steps {
        let now = T0 + t * 1_000;
        let d = decide(&mut twin, &mut ks, now, "rl_sliding", "log", &["5", "60"]);
        assert_eq!((d[0], d[2], d[3]), (allowed, remaining, retry), "t = {t} s");
    }
    // After the call at 121 s only its own unit is left, scored at that ms.
    let members = ks.zset_members(b"log", T0 + 121_000).unwrap_or_default();
    assert_eq!(members.len(), 1);
    assert_eq!(members[0].1, (T0 + 121_000) as f64);
    assert_eq!(ks.expires_at(b"log", T0 + 121_000), Some(T0 + 181_000));
}

#[test]
fn rl_sliding_session() {
    let (mut twin, mut ks) = rl();
    let args = ["3", "1m", "COST", "2"];
    assert_eq!(
        decide(&mut twin, &mut ks, T0, "rl_sliding", "log:a", &args),
        [1, 3, 1, 0, 60_000]
    );
    assert_eq!(
        decide(&mut twin, &mut ks, T0, "rl_sliding", "log:a", &args),
        [0, 3, 1, 60_000, 60_000]
    );
    assert_eq!(command(&mut ks, T0, &["ZCARD", "log:a"]), Value::Int(2));
}

// -- RL.SLIDINGCOUNTER ---------------------------------------------------------------

#[test]
fn rl_slidingcounter_vector() {
    let (mut twin, mut ks) = rl();
    // Previous window 8, current 3, 15 s into the current window.
    let start = T0;
    let state = format!("{start} 3 8");
    let now = start + 15_000;
    ks.set_string(b"sc", state.as_bytes(), Some(start + 120_000));
    let cost = |n: &str, twin: &mut LuaTwin, ks: &mut Keyspace| {
        decide(
            twin,
            ks,
            now,
            "rl_slidingcounter",
            "sc",
            &["10", "60", "COST", n],
        )
    };
    let rejected = cost("2", &mut twin, &mut ks);
    assert_eq!((rejected[0], rejected[2]), (0, 1));
    assert_eq!(ks.string(b"sc", now), Some(state.as_bytes()));
    let allowed = cost("1", &mut twin, &mut ks);
    assert_eq!((allowed[0], allowed[2]), (1, 0));
    assert_eq!(
        ks.string(b"sc", now),
        Some(format!("{start} 4 8").as_bytes())
    );
}

// -- RL.ACQUIRE and RL.RELEASE ------------------------------------------------------

#[test]
fn rl_acquire_and_release_vector() {
    let (mut twin, mut ks) = rl();
    let acquire = |twin: &mut LuaTwin, ks: &mut Keyspace, t: i64, id: &str| {
        decide(twin, ks, T0 + t, "rl_acquire", "lease:a", &["2", "10s", id])
    };
    let release = |twin: &mut LuaTwin, ks: &mut Keyspace, t: i64, id: &str| {
        fcall(twin, ks, T0 + t, "rl_release", &["lease:a"], &[id])
    };
    assert_eq!(acquire(&mut twin, &mut ks, 0, "a"), [1, 2, 1, 0, 10_000]);
    assert_eq!(acquire(&mut twin, &mut ks, 0, "b"), [1, 2, 0, 0, 10_000]);
    assert_eq!(
        acquire(&mut twin, &mut ks, 0, "c"),
        [0, 2, 0, 10_000, 10_000]
    );
    assert_eq!(
        acquire(&mut twin, &mut ks, 4_000, "a"),
        [1, 2, 0, 0, 10_000]
    );
    assert_eq!(
        ks.zset_score(b"lease:a", b"a", T0 + 4_000),
        Ok(Some((T0 + 14_000) as f64))
    );
    assert_eq!(release(&mut twin, &mut ks, 4_000, "b"), Ok(Value::Int(1)));
    assert_eq!(ks.expires_at(b"lease:a", T0 + 4_000), Some(T0 + 14_000));
    assert_eq!(
        acquire(&mut twin, &mut ks, 5_000, "c"),
        [1, 2, 0, 0, 10_000]
    );
    assert_eq!(release(&mut twin, &mut ks, 5_000, "b"), Ok(Value::Int(0)));
    let members: Vec<Vec<u8>> = ks
        .zset_members(b"lease:a", T0 + 5_000)
        .unwrap_or_default()
        .into_iter()
        .map(|(m, _)| m.to_vec())
        .collect();
    assert_eq!(members, [b"a".to_vec(), b"c".to_vec()]);
    assert_eq!(ks.expires_at(b"lease:a", T0 + 5_000), Some(T0 + 15_000));
    // The last live lease released deletes the key.
    assert_eq!(release(&mut twin, &mut ks, 5_000, "a"), Ok(Value::Int(1)));
    assert_eq!(release(&mut twin, &mut ks, 5_000, "c"), Ok(Value::Int(1)));
    assert_eq!(ks.kind(b"lease:a", T0 + 5_000), Kind::Empty);
}

// -- RL.QUOTA -------------------------------------------------------------------

/// An instant written with its offset (`2026-02-10T12:00-05:00`), in ms.
fn instant(s: &str) -> i64 {
    s.parse::<jiff::Timestamp>()
        .unwrap_or_else(|e| panic!("{s}: {e}"))
        .as_millisecond()
}

/// The contract's vectors through the library: a month period in New York time
/// whose end is the key's expiry (SET … PXAT), a day of 23 hours starting in the
/// spring-forward gap, a week in RL.ALL's QUOTA policy, a zone it does not know.
#[test]
fn rl_quota_counts_per_period_of_a_calendar() {
    let (mut twin, mut ks) = rl();
    let now = instant("2026-02-10T12:00-05:00");
    let month = ["1000000", "month", "ON", "31", "TZ", "America/New_York"];
    assert_eq!(
        decide(&mut twin, &mut ks, now, "rl_quota", "m", &month),
        [1, 1_000_000, 999_999, 0, 1_512_000_000]
    );
    assert_eq!(ks.string(b"m", now), Some(&b"1"[..]));
    assert_eq!(
        ks.expires_at(b"m", now),
        Some(instant("2026-02-28T00:00-05:00"))
    );

    // AT 02:30 on the spring-forward day starts at 03:30 EDT; the day ends at
    // 02:30 EDT the next day.
    let now = instant("2026-03-08T12:00-04:00");
    let day = ["5", "DAY", "tz", "america/new_york", "AT", "02:30"];
    let all = [&day[..], &["COST", "5"]].concat();
    assert_eq!(
        decide(&mut twin, &mut ks, now, "rl_quota", "d", &all),
        [1, 5, 0, 0, 52_200_000]
    );
    assert_eq!(
        decide(&mut twin, &mut ks, now, "rl_quota", "d", &day),
        [0, 5, 0, 52_200_000, 52_200_000]
    );

    // A week from Sunday 00:00 New York time, 167 hours long, beside a FIXED limit.
    let now = instant("2026-03-10T10:00-04:00");
    let week_end = instant("2026-03-15T00:00-04:00");
    let args = [
        "FIXED",
        "10",
        "1m",
        "QUOTA",
        "3",
        "week",
        "ON",
        "sun",
        "TZ",
        "America/New_York",
        "COST",
        "2",
    ];
    let reply = fcall(&mut twin, &mut ks, now, "rl_all", &["a", "b"], &args).expect("rl_all");
    let Value::Array(replies) = reply else {
        panic!("not an array: {reply:?}")
    };
    assert_eq!(fields(&replies[2]), [1, 3, 1, 0, week_end - now]);
    assert_eq!(ks.expires_at(b"b", now), Some(week_end));

    let unknown = fcall(
        &mut twin,
        &mut ks,
        now,
        "rl_quota",
        &["z"],
        &["5", "day", "TZ", "Mars/Olympus"],
    );
    assert!(
        unknown
            .as_ref()
            .is_err_and(|e| e.starts_with("ERR unknown time zone 'Mars/Olympus': TZ takes UTC")),
        "{unknown:?}"
    );
    assert_eq!(ks.kind(b"z", now), Kind::Empty);
}

// -- RL.ALL ---------------------------------------------------------------------------

#[test]
fn rl_all_session() {
    let (mut twin, mut ks) = rl();
    let keys = ["{u}:burst", "{u}:minute"];
    let args = ["GCRA", "1", "1", "1s", "GCRA", "5", "1", "1s"];
    let all = |twin: &mut LuaTwin, ks: &mut Keyspace| -> Vec<[i64; 5]> {
        match fcall(twin, ks, T0, "rl_all", &keys, &args) {
            Ok(Value::Array(items)) => items.iter().map(fields).collect(),
            other => panic!("rl_all: {other:?}"),
        }
    };
    assert_eq!(
        all(&mut twin, &mut ks),
        [
            [1, 1, 0, 0, 1_000],
            [1, 1, 0, 0, 1_000],
            [1, 5, 4, 0, 1_000]
        ]
    );
    let minute = ks.string(b"{u}:minute", T0).map(<[u8]>::to_vec);
    assert_eq!(
        all(&mut twin, &mut ks),
        [
            [0, 1, 0, 1_000, 1_000],
            [0, 1, 0, 1_000, 1_000],
            [1, 5, 4, 0, 1_000]
        ]
    );
    // Rejected by its first key: the second kept its unit.
    assert_eq!(ks.string(b"{u}:minute", T0).map(<[u8]>::to_vec), minute);
    assert_eq!(
        fcall(
            &mut twin,
            &mut ks,
            T0,
            "rl_all",
            &["a", "a"],
            &["FIXED", "1", "1s", "FIXED", "1", "1s"]
        ),
        Err("ERR key 'a' is given more than once".into())
    );
}

// -- speed --------------------------------------------------------------------------

#[test]
fn timing_of_100000_rl_fixed_calls() {
    let (mut twin, mut ks) = rl();
    let n = 100_000;
    let started = Instant::now();
    for i in 0..n {
        let key = format!("k{}", i % 100);
        let now = T0 + i / 10;
        let reply = fcall(
            &mut twin,
            &mut ks,
            now,
            "rl_fixed",
            &[&key],
            &["1000", "60"],
        );
        assert!(reply.is_ok(), "{reply:?}");
    }
    let elapsed = started.elapsed();
    println!(
        "{n} rl_fixed calls through the Lua twin: {:.2?} ({:.1} µs per call)",
        elapsed,
        elapsed.as_secs_f64() * 1e6 / n as f64
    );
}

// -- the twin's Redis semantics, on libraries of its own -------------------------------

const PROBE: &str = r#"#!lua name=probe
redis.register_function("echo", function(keys, args) return args[1] end)
redis.register_function{function_name = "raise", callback = function(keys)
  return redis.call("GET", keys[1])
end}
redis.register_function{function_name = "caught", callback = function(keys)
  local ok, e = pcall(redis.call, "GET", keys[1])
  return {type(e), redis.pcall("GET", keys[1])}
end}
redis.register_function{function_name = "ro", callback = function(keys)
  return redis.call("SET", keys[1], "x")
end, flags = {"no-writes"}}
redis.register_function("replies", function()
  return {1, 2.9, -2.9, true, false, "s", {ok = "fine"}, {"nested", 7}, nil, "after nil"}
end)
redis.register_function("status", function() return redis.status_reply("PONG") end)
redis.register_function("custom", function() return redis.error_reply("MY code here") end)
redis.register_function("bare", function() return redis.error_reply("oops") end)
redis.register_function("misuse", function() return redis.error_reply(1) end)
redis.register_function("boom", function() local t = nil; return t.x end)
redis.register_function("global", function() undefined_thing = 1 end)
redis.register_function("numbers", function(keys)
  redis.call("ZADD", keys[1], 1500, "a", 0.5, "b")
  return redis.call("ZRANGE", keys[1], 0, -1, "WITHSCORES")
end)
redis.register_function("time", function() return redis.call("TIME") end)
redis.register_function("args", function()
  redis.call("SET", "n", 0/0); redis.call("SET", "m", 1e17); redis.call("SET", "o", 2^53 + 1)
  return {redis.call("GET", "n"), redis.call("GET", "m"), redis.call("GET", "o")}
end)
"#;

fn probe(function: &str, keys: &[&str], ks: &mut Keyspace) -> Result<Value, String> {
    let mut twin = LuaTwin::load(PROBE).unwrap_or_else(|e| panic!("{e}"));
    fcall(&mut twin, ks, T0, function, keys, &["arg"])
}

fn bulk(s: &str) -> Value {
    Value::Bulk(s.as_bytes().to_vec())
}

#[test]
fn twin_replies_convert_as_redis_converts_them() {
    let mut ks = Keyspace::new();
    assert_eq!(probe("echo", &[], &mut ks), Ok(bulk("arg")));
    assert_eq!(
        probe("replies", &[], &mut ks),
        Ok(Value::Array(vec![
            Value::Int(1),
            Value::Int(2),
            Value::Int(-2),
            Value::Int(1),
            Value::Nil,
            bulk("s"),
            Value::Status("fine".into()),
            Value::Array(vec![bulk("nested"), Value::Int(7)]),
        ]))
    );
    assert_eq!(
        probe("status", &[], &mut ks),
        Ok(Value::Status("PONG".into()))
    );
    assert_eq!(probe("custom", &[], &mut ks), Err("MY code here".into()));
    assert_eq!(probe("bare", &[], &mut ks), Err("ERR oops".into()));
    assert_eq!(
        probe("misuse", &[], &mut ks),
        Err("ERR wrong number or type of arguments".into())
    );
    assert_eq!(
        probe("numbers", &["z"], &mut ks),
        Ok(Value::Array(vec![
            bulk("b"),
            bulk("0.5"),
            bulk("a"),
            bulk("1500")
        ]))
    );
    // Number arguments are formatted with %.17g, as Redis 7.0 does.
    assert_eq!(
        probe("args", &[], &mut ks),
        Ok(Value::Array(vec![
            bulk("-nan"),
            bulk("1e+17"),
            bulk("9007199254740992")
        ]))
    );
    assert_eq!(
        probe("time", &[], &mut ks),
        Ok(Value::Array(vec![bulk("1700000040"), bulk("0")]))
    );
}

#[test]
fn twin_errors_are_redis_errors() {
    let mut ks = Keyspace::new();
    command(&mut ks, T0, &["HSET", "h", "f", "v"]);
    let wrongtype = "WRONGTYPE Operation against a key holding the wrong kind of value";
    assert_eq!(
        probe("raise", &["h"], &mut ks),
        Err(format!("{wrongtype} script: raise, on @user_function:4."))
    );
    // Redis's pcall turns a caught {err = …} into its string; redis.pcall returns
    // the table, which as a reply is the error inside the array.
    assert_eq!(
        probe("caught", &["h"], &mut ks),
        Ok(Value::Array(vec![
            bulk("string"),
            Value::Error(wrongtype.into())
        ]))
    );
    assert_eq!(
        probe("ro", &["k"], &mut ks),
        Err("ERR Write commands are not allowed from read-only scripts. script: ro, on @user_function:11.".into())
    );
    assert_eq!(ks.kind(b"k", T0), Kind::Empty);
    assert_eq!(
        probe("boom", &[], &mut ks),
        Err("ERR user_function:20: attempt to index local 't' (a nil value) script: boom, on @user_function:20.".into())
    );
    assert_eq!(
        probe("global", &[], &mut ks),
        Err("ERR user_function:21: Attempt to modify a readonly table script: global, on @user_function:21.".into())
    );
}

#[test]
fn twin_function_load_errors() {
    let load = |source: &str| LuaTwin::load(source).err();
    assert_eq!(
        load("return 1"),
        Some("ERR Missing library metadata".into())
    );
    assert_eq!(
        load("#!lua name=x\n"),
        Some("ERR No functions registered".into())
    );
    assert_eq!(
        load("#!js name=x\n"),
        Some("ERR Engine 'js' not found".into())
    );
    assert_eq!(
        load("#!lua name=x\nlocal f = math.floor"),
        Some("ERR Error registering functions: ERR user_function:2: Script attempted to access nonexistent global variable 'math'".into())
    );
    assert_eq!(
        load("#!lua name=x\nredis.call('GET', 'k')"),
        Some("ERR Error registering functions: ERR user_function:2: Script attempted to access nonexistent global variable 'call'".into())
    );
    assert_eq!(
        load("#!lua name=x\nredis.register_function('a-b', function() end)"),
        Some("ERR Error registering functions: ERR Library names can only contain letters, numbers, or underscores(_) and must be at least one character long".into())
    );
    assert_eq!(
        load("#!lua name=x\nredis.register_function{function_name='f', callback=function() end, flags={'nope'}}"),
        Some("ERR Error registering functions: ERR unknown flag given".into())
    );
    assert_eq!(
        load("#!lua name=x\nthis is not lua"),
        Some("ERR Error compiling function: user_function:2: '=' expected near 'is'".into())
    );
}
