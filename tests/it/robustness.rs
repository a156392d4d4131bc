//! Hostile input, races and extremes against a real server: the server stays up,
//! every reply is an error or a valid five-integer array, errors change nothing,
//! and concurrent clients are counted exactly.

use crate::common::*;

use std::time::Duration;

/// Arguments at and past every bound, and plain garbage.
fn token_pool() -> Vec<Vec<u8>> {
    let mut pool: Vec<Vec<u8>> = [
        "0",
        "1",
        "2",
        "5",
        "100",
        "100000",
        "100001",
        "9007199254740991",
        "9007199254740992",
        "18446744073709551615",
        "18446744073709551616",
        "99999999999999999999999999",
        "-1",
        "-0",
        "+1",
        "1.5",
        "1e3",
        "0x10",
        "",
        " ",
        "1ms",
        "0ms",
        "1500ms",
        "60",
        "60s",
        "1m",
        "24h",
        "1d",
        "3650d",
        "3651d",
        "315360000000ms",
        "315360000001ms",
        "1w",
        "ms",
        "s",
        "COST",
        "cost",
        "CoSt",
        "REFUND",
        "refund",
        "DEBIT",
        "debit",
        "FIXED",
        "sliding",
        "Bucket",
        "GCRA",
        "SLIDINGCOUNTER",
        "PENALTY",
        "DELAY",
        "EX",
        "PX",
        "NX",
        "inf",
        "-inf",
        "nan",
        "1 ",
        "\r\n",
    ]
    .iter()
    .map(|s| s.as_bytes().to_vec())
    .collect();
    pool.push(vec![0, 0xff, 0xfe, b'\r', b'\n']);
    pool.push(vec![b'9'; 5000]);
    pool.push(vec![b'x'; 100_000]);
    pool
}

const KEYS: [&str; 10] = [
    "k:absent",
    "k:str-int",
    "k:str-penalty",
    "k:str-bad",
    "k:hash-ok",
    "k:hash-bad",
    "k:zset-ok",
    "k:zset-bad",
    "k:list",
    "k:set",
];

fn seed_keys(c: &mut Connection) {
    let _: () = redis::pipe()
        .cmd("FLUSHALL")
        .ignore()
        .cmd("SET")
        .arg("k:str-int")
        .arg("3")
        .arg("PX")
        .arg(3_600_000)
        .ignore()
        .cmd("SET")
        .arg("k:str-penalty")
        .arg("2 9007199254740991 1 0")
        .ignore()
        .cmd("SET")
        .arg("k:str-bad")
        .arg("abc")
        .ignore()
        .cmd("HSET")
        .arg("k:hash-ok")
        .arg("tokens")
        .arg("2.5")
        .arg("ts")
        .arg(1)
        .ignore()
        .cmd("HSET")
        .arg("k:hash-bad")
        .arg("tokens")
        .arg("x")
        .ignore()
        .cmd("ZADD")
        .arg("k:zset-ok")
        .arg(1)
        .arg("0")
        .ignore()
        .cmd("ZADD")
        .arg("k:zset-bad")
        .arg("+inf")
        .arg("a")
        .ignore()
        .cmd("RPUSH")
        .arg("k:list")
        .arg("a")
        .ignore()
        .cmd("SADD")
        .arg("k:set")
        .arg("a")
        .ignore()
        .query(c)
        .expect("seed keys");
}

/// One random RL call. Half are well-formed (so the decision path runs on every
/// kind of key), half draw each argument from the hostile pool.
fn random_call(rng: &mut Rng, pool: &[Vec<u8>]) -> (String, Vec<Vec<u8>>) {
    let command = rng.pick(&COMMANDS);
    // The name as the table spells it, in lower case, or in title case (`Rl.Bucket`).
    let name = match rng.below(3) {
        0 => command.name.to_string(),
        1 => command.name.to_lowercase(),
        _ => title_case(command.name),
    };
    let mut args = vec![rng.pick(&KEYS).as_bytes().to_vec()];
    let counts = ["1", "5", "100", "9007199254740991"];
    let durations = ["1ms", "100ms", "1s", "1m", "3650d"];
    // Names (RL.SHARE's tenants): short, binary, the longest (256 bytes), one too long.
    let longest = "t".repeat(256);
    let too_long = "t".repeat(257);
    let texts = ["a", "b", "\u{0}é\r\n", &longest, &too_long];
    if rng.below(2) == 0 {
        let mut draw = || -> Vec<String> {
            command
                .params
                .iter()
                .map(|p| {
                    let from: &[&str] = match p.kind {
                        Kind::Count => &counts,
                        // 9007199254740991 is one past max_burst's maximum: an error.
                        Kind::Burst => &["0", "4", "100", "9007199254740990", "9007199254740991"],
                        Kind::Duration => &durations,
                        // 10001 is one past a weight's maximum: an error.
                        Kind::Weight => &["1", "3", "10000", "10001"],
                        Kind::Text => &texts,
                        Kind::Unit => &["day", "week", "month", "year", "hour", "DAY"],
                    };
                    rng.pick(from).to_string()
                })
                .collect()
        };
        // Mostly parameters the command takes together (RL.PENALTY's block ≤ max).
        let mut params = draw();
        if let Some((refused, _)) = command.conflict {
            for _ in 0..3 {
                if !refused(&params) {
                    break;
                }
                params = draw();
            }
        }
        args.extend(params.into_iter().map(String::into_bytes));
        if rng.below(2) == 0 {
            let cost = rng.pick(&[0, 1, 3, 9_007_199_254_740_991]);
            if command.style == Style::Rl && rng.below(3) == 0 {
                let option = rng.pick(&["REFUND", "DEBIT"]).as_bytes().to_vec();
                args.extend([option, cost.to_string().into_bytes()]);
            } else {
                args.extend(command.cost_args(*cost).into_iter().map(String::into_bytes));
            }
        }
    } else {
        for _ in 0..rng.below(8) {
            args.push(rng.pick(pool).clone());
        }
    }
    (name, args)
}

fn as_strs(args: &[String]) -> Vec<&str> {
    args.iter().map(String::as_str).collect()
}

/// `RL.BUCKET` → `Rl.Bucket`.
fn title_case(name: &str) -> String {
    let mut out = String::new();
    let mut upper = true;
    for ch in name.chars() {
        out.push(if upper {
            ch.to_ascii_uppercase()
        } else {
            ch.to_ascii_lowercase()
        });
        upper = !ch.is_ascii_alphanumeric();
    }
    out
}

fn is_reply(v: &Value) -> bool {
    match v {
        Value::Array(items) => items.len() == 5 && items.iter().all(|i| matches!(i, Value::Int(_))),
        _ => false,
    }
}

#[test]
fn random_argument_vectors_never_crash_and_errors_change_nothing() {
    let seed = std::env::var("RL_FUZZ_SEED")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(0x5eed_1234_u64);
    let calls: usize = std::env::var("RL_FUZZ_CALLS")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(100_000);
    let mut server = Server::start();
    let mut c = server.conn();
    let pool = token_pool();
    let mut rng = Rng(seed);
    // A key RL wrote with a short window may expire while it is being looked at:
    // compare only keys that cannot expire during the batch (under a minute).
    let stable = |before: &Value, batch_start: i64| match before {
        Value::Int(-1) => true,
        Value::Int(at) => *at > batch_start + 60_000,
        _ => false,
    };
    let (mut errors, mut replies, mut compared) = (0usize, 0usize, 0usize);
    let batch = 500;
    let mut done = 0;
    while done < calls {
        seed_keys(&mut c);
        let batch_start = server_ms(&mut c);
        // Per call: snapshot, call, snapshot, in one pipeline.
        let mut pipe = redis::pipe();
        let mut sent = Vec::new();
        for _ in 0..batch.min(calls - done) {
            let (command, args) = random_call(&mut rng, &pool);
            let key = args[0].clone();
            comparable_dump(&mut pipe, &key);
            pipe.cmd("PEXPIRETIME").arg(&key);
            let mut cmd = redis::cmd(&command);
            for a in &args {
                cmd.arg(a.as_slice());
            }
            pipe.add_command(on_backend(&cmd));
            comparable_dump(&mut pipe, &key);
            pipe.cmd("PEXPIRETIME").arg(&key);
            sent.push((command, args));
        }
        // Raw pipelined replies: server errors stay values instead of failing the batch.
        let results: Vec<Value> = redis::ConnectionLike::req_packed_commands(
            &mut c,
            &pipe.get_packed_pipeline(),
            0,
            sent.len() * 5,
        )
        .expect("pipeline");
        for (i, (command, args)) in sent.iter().enumerate() {
            let r = &results[i * 5..i * 5 + 5];
            let (before, after) = ((&r[0], &r[1]), (&r[3], &r[4]));
            match &r[2] {
                v if is_reply(v) => replies += 1,
                Value::ServerError(e) => {
                    errors += 1;
                    let code = e.code();
                    assert!(
                        ["ERR", "WRONGTYPE"].contains(&code),
                        "unexpected error code {code:?} for {command} {args:?}"
                    );
                    // A panic in the module, an unexpected Lua error in the library.
                    assert!(
                        !format!("{e:?}").contains("internal error"),
                        "{e:?} for {command} {args:?} (seed {seed})"
                    );
                    if !stable(before.1, batch_start) {
                        continue;
                    }
                    compared += 1;
                    assert_eq!(
                        before,
                        after,
                        "error {e:?} changed {:?} ({command}, seed {seed})",
                        String::from_utf8_lossy(&args[0])
                    );
                }
                other => panic!("{command} {args:?} replied {other:?} (seed {seed})"),
            }
        }
        done += sent.len();
        assert!(
            server.alive(),
            "server died (seed {seed}):\n{}",
            server.log()
        );
    }
    let pong: String = cmd("PING").query(&mut c).unwrap();
    assert_eq!(pong, "PONG");
    assert!(
        errors > calls / 10 && replies > calls / 25 && compared > errors / 2,
        "{errors} errors ({compared} checked for changes), {replies} replies"
    );
}

/// `threads` connections share `total` calls of `args` (a line of `l`) on one key;
/// returns how many were allowed.
fn hammer(
    server: &Server,
    l: &'static Command,
    args: &[String],
    threads: usize,
    total: usize,
) -> usize {
    let per = total / threads;
    let handles: Vec<_> = (0..threads)
        .map(|_| {
            let mut c = server.conn();
            let args = args.to_vec();
            std::thread::spawn(move || {
                (0..per)
                    .filter(|_| l.run(&mut c, &args).allowed == 1)
                    .count()
            })
        })
        .collect();
    handles
        .into_iter()
        .map(|h| h.join().expect("client thread"))
        .sum()
}

#[test]
fn concurrent_clients_are_counted_exactly() {
    let server = Server::start();
    let mut c = server.conn();
    // Stay inside one hour-long fixed window.
    align_to_window(&mut c, 3_600_000, 120_000);
    for l in COMMANDS {
        // 5000 per ten years: nothing comes back during the test.
        let key = format!("race:{}", l.short);
        let params = l.per(5000, "3650d");
        let base = l.args(&key, &params, None);
        let allowed = hammer(&server, l, &base, 32, 20_000);
        // A limiter that blocks rejects the call that reaches its limit.
        let want = if l.blocks { 4999 } else { 5000 };
        assert_eq!(
            allowed, want,
            "{}: admitted {allowed} of 20000 with limit 5000",
            l.name
        );
        let with_cost = l.args(&format!("{key}:cost"), &params, Some(3));
        let allowed = hammer(&server, l, &with_cost, 32, 20_000);
        assert_eq!(
            allowed, 1666,
            "{} COST 3: admitted {allowed} calls (limit 5000)",
            l.name
        );
    }
}

#[test]
fn extreme_parameters_do_not_overflow() {
    let server = Server::start();
    let mut c = server.conn();
    let max = MAX_COUNT;
    let cap = 9_007_199_254_740_991;
    for l in COMMANDS {
        // Every count at 1 and at its maximum, every duration at 1 ms and 10 years,
        // with COST 1, the first count's maximum and 2^53-1.
        let mut lines: Vec<Vec<String>> = vec![vec![]];
        for p in l.params {
            let values = match p.kind {
                Kind::Count | Kind::Weight => ["1", p.max],
                Kind::Burst => ["0", p.max],
                Kind::Duration => ["1ms", MAX_DURATION],
                Kind::Text => ["a", p.max],
                Kind::Unit => ["day", p.max],
            };
            lines = lines
                .into_iter()
                .flat_map(|line| {
                    values.map(|v| {
                        let mut line = line.clone();
                        line.push(v.to_string());
                        line
                    })
                })
                .collect();
        }
        for (i, params) in lines.iter().enumerate() {
            for (j, cost) in ["1", l.limit_param().1.max, max].iter().enumerate() {
                let key = format!("x:{}:{i}:{j}", l.short);
                let mut args = l.args(&key, params, None);
                args.extend(l.cost_args(cost.parse().unwrap()));
                // More than one token per ns (10 years is 3.2e20 ns, 1 ms 1e6 ns):
                // RL.GCRA's tokens, CL.THROTTLE's count.
                let fast = l
                    .params
                    .iter()
                    .zip(params)
                    .any(|(p, v)| matches!(p.name, "tokens" | "count") && v == max)
                    && params.last().map(String::as_str) == Some("1ms");
                if let (true, Some(error)) = (fast, l.too_fast) {
                    let e =
                        try_rl(&mut c, &as_strs(&args)).expect_err("a rate above one token per ns");
                    assert!(e.to_string().contains(error), "{args:?}: {e}");
                    continue;
                }
                if let Some((_, error)) = l.conflict.filter(|(refused, _)| refused(params)) {
                    let e = try_rl(&mut c, &as_strs(&args)).expect_err("refused parameters");
                    assert!(e.to_string().contains(error), "{args:?}: {e}");
                    continue;
                }
                for _ in 0..2 {
                    // CL.THROTTLE's times are seconds, within the same bounds.
                    let r = l.run(&mut c, &args);
                    assert!(
                        r.remaining >= 0 && r.remaining <= r.limit,
                        "{args:?}: {r:?}"
                    );
                    assert!((-1..=cap).contains(&r.retry_after), "{args:?}: {r:?}");
                    assert!((0..=cap).contains(&r.reset_after), "{args:?}: {r:?}");
                }
            }
        }
    }
    // The bucket drained to zero at one token per ten years: full again in 2^53-1 ms (capped).
    let r = rl(
        &mut c,
        &["RL.BUCKET", "x:b3", max, "1", "3650d", "COST", max],
    );
    assert_eq!(
        (r.allowed, r.remaining, r.reset_after),
        (1, 0, 9_007_199_254_740_991)
    );
    let ttl: i64 = cmd("PTTL").arg("x:b3").query(&mut c).unwrap();
    assert!(ttl > 9_007_199_254_000_000, "PTTL {ttl}");
}

#[test]
fn a_sliding_cost_at_the_maximum_is_served_without_blowing_memory() {
    let server = Server::start();
    let mut c = server.conn();
    let r = rl(
        &mut c,
        &["RL.SLIDING", "big", "100000", "1h", "COST", "100000"],
    );
    assert_eq!((r.allowed, r.remaining), (1, 0));
    let card: i64 = cmd("ZCARD").arg("big").query(&mut c).unwrap();
    assert_eq!(card, 100_000);
    let used: i64 = cmd("MEMORY").arg("USAGE").arg("big").query(&mut c).unwrap();
    assert!(used < 100_000 * 200, "{used} bytes for 100000 units");
    let r = rl(
        &mut c,
        &[
            "RL.SLIDING",
            "big",
            "100000",
            "1h",
            "COST",
            "9007199254740991",
        ],
    );
    assert_eq!((r.allowed, r.retry_after), (0, -1));
}

#[test]
fn writes_are_refused_at_maxmemory_and_nothing_is_written() {
    let server = Server::start();
    let mut c = server.conn();
    // Some data, then a limit below what is already used: every write is refused.
    for i in 0..200 {
        let _: () = cmd("SET")
            .arg(format!("fill:{i}"))
            .arg(vec![b'x'; 1024])
            .query(&mut c)
            .unwrap();
    }
    let used = info_field(&mut c, "memory", "used_memory");
    for (name, value) in [
        ("maxmemory-policy", "noeviction".to_string()),
        ("maxmemory", (used / 2).to_string()),
    ] {
        config_set(&mut c, name, value);
    }
    for l in COMMANDS {
        let args = l.args("oom", &l.per(5, "1m"), None);
        let bytes: Vec<&[u8]> = args.iter().map(|a| a.as_bytes()).collect();
        let e = error_of(&mut c, &bytes);
        assert!(e.starts_with("OOM"), "{args:?}: {e}");
        assert!(!exists(&mut c, "oom"));
    }
}

#[test]
fn a_huge_foreign_sorted_set_is_handled_without_crashing() {
    let server = Server::start();
    let mut c = server.conn();
    // 200,000 members that RL did not write, all "in the window" (scores = now).
    let now = server_ms(&mut c);
    for chunk in 0..20 {
        let mut z = cmd("ZADD");
        z.arg("foreign");
        for i in 0..10_000 {
            z.arg(now).arg(format!("m{}", chunk * 10_000 + i));
        }
        let _: i64 = z.query(&mut c).unwrap();
    }
    let r = rl(&mut c, &["RL.SLIDING", "foreign", "100000", "1h"]);
    assert_eq!((r.allowed, r.remaining), (0, 0), "{r:?}");
    assert!(r.retry_after > 3_500_000, "{r:?}");
    let pong: String = cmd("PING").query(&mut c).unwrap();
    assert_eq!(pong, "PONG");
}

#[test]
fn a_key_changed_behind_rl_s_back_gets_a_clear_error_or_a_sane_result() {
    let server = Server::start();
    let mut c = server.conn();
    rl(&mut c, &["RL.BUCKET", "b", "5", "1", "1s"]);
    // A level in debt (what DEBIT leaves) is read; past the deepest debt it is not.
    let _: () = cmd("HSET")
        .arg("b")
        .arg("tokens")
        .arg("-3")
        .query(&mut c)
        .unwrap();
    let r = rl(&mut c, &["RL.BUCKET", "b", "5", "1", "1s"]);
    assert_eq!((r.allowed, r.remaining), (0, 0), "a bucket in debt");
    let _: () = cmd("HSET")
        .arg("b")
        .arg("tokens")
        .arg("-9007199254740992")
        .query(&mut c)
        .unwrap();
    let e = error_of(&mut c, &[b"RL.BUCKET", b"b", b"5", b"1", b"1s"]);
    assert!(e.starts_with("ERR") && e.contains("RL.BUCKET"), "{e}");
    let _: () = cmd("HSET")
        .arg("b")
        .arg("tokens")
        .arg("1000")
        .query(&mut c)
        .unwrap();
    let r = rl(&mut c, &["RL.BUCKET", "b", "5", "1", "1s"]);
    assert_eq!(
        (r.allowed, r.remaining),
        (1, 4),
        "a level above capacity is clamped"
    );
    rl(&mut c, &["RL.FIXED", "f", "5", "1m"]);
    let _: () = cmd("SET")
        .arg("f")
        .arg("garbage")
        .arg("KEEPTTL")
        .query(&mut c)
        .unwrap();
    let e = error_of(&mut c, &[b"RL.FIXED", b"f", b"5", b"1m"]);
    assert!(e.starts_with("ERR") && e.contains("RL.FIXED"), "{e}");
    let _: () = cmd("DEL").arg("f").query(&mut c).unwrap();
    let _: () = cmd("RPUSH").arg("f").arg("x").query(&mut c).unwrap();
    let e = error_of(&mut c, &[b"RL.FIXED", b"f", b"5", b"1m"]);
    assert!(e.starts_with("WRONGTYPE"), "{e}");
    wait_for(Duration::from_secs(1), "server alive", || {
        cmd("PING").query::<String>(&mut c).ok()
    });
}

/// One random RL.ALL line: half well-formed (distinct keys of every kind, a policy
/// each, maybe COST or REFUND), half numkeys, keys and words from the hostile pool.
fn random_all(rng: &mut Rng, pool: &[Vec<u8>]) -> Vec<Vec<u8>> {
    let policies: [&[&str]; 7] = [
        &["FIXED", "5", "1h"],
        &["SLIDING", "5", "1h"],
        &["BUCKET", "5", "1", "1h"],
        &["GCRA", "5", "1", "1h"],
        &["SLIDINGCOUNTER", "5", "1h"],
        &["ACQUIRE", "5", "1h", "job"],
        &["PENALTY", "5", "1h", "1m", "1h"],
    ];
    let n = 1 + rng.index(4);
    let mut line = vec![n.to_string().into_bytes()];
    let mut keys: Vec<&str> = Vec::new();
    while keys.len() < n {
        let k = *rng.pick(&KEYS);
        if !keys.contains(&k) {
            keys.push(k);
        }
    }
    line.extend(keys.iter().map(|k| k.as_bytes().to_vec()));
    if rng.below(2) == 0 {
        for _ in 0..n {
            line.extend(rng.pick(&policies).iter().map(|w| w.as_bytes().to_vec()));
        }
        match rng.below(4) {
            0 => line.extend([
                b"COST".to_vec(),
                rng.pick(&["0", "1", "6"]).as_bytes().to_vec(),
            ]),
            1 => line.extend([
                b"REFUND".to_vec(),
                rng.pick(&["0", "1", "9"]).as_bytes().to_vec(),
            ]),
            2 => line.extend([
                b"DEBIT".to_vec(),
                rng.pick(&["0", "1", "9"]).as_bytes().to_vec(),
            ]),
            _ => {}
        }
    } else {
        if rng.below(2) == 0 {
            line[0] = rng.pick(pool).clone();
        }
        for _ in 0..rng.below(10) {
            line.push(rng.pick(pool).clone());
        }
    }
    line
}

#[test]
fn random_rl_all_lines_never_crash_and_errors_change_nothing() {
    let mut server = Server::start();
    let mut c = server.conn();
    let pool = token_pool();
    let mut rng = Rng(0x00a1_1a11);
    let (mut errors, mut replies) = (0usize, 0usize);
    for _ in 0..20 {
        seed_keys(&mut c);
        // Every key's DUMP and expiry before and after each call, in one pipeline.
        let state = |p: &mut redis::Pipeline| {
            for k in KEYS {
                comparable_dump(p, k);
                p.cmd("PEXPIRETIME").arg(k);
            }
        };
        let mut pipe = redis::pipe();
        let mut sent = Vec::new();
        for _ in 0..250 {
            let line = random_all(&mut rng, &pool);
            state(&mut pipe);
            let mut call = redis::cmd("RL.ALL");
            for a in &line {
                call.arg(a.as_slice());
            }
            pipe.add_command(on_backend(&call));
            state(&mut pipe);
            sent.push(line);
        }
        let per_call = 4 * KEYS.len() + 1;
        let results: Vec<Value> = redis::ConnectionLike::req_packed_commands(
            &mut c,
            &pipe.get_packed_pipeline(),
            0,
            sent.len() * per_call,
        )
        .expect("pipeline");
        for (i, line) in sent.iter().enumerate() {
            let r = &results[i * per_call..(i + 1) * per_call];
            let half = 2 * KEYS.len();
            match &r[half] {
                Value::Array(arrays) if arrays.iter().all(is_reply) => replies += 1,
                Value::ServerError(e) => {
                    errors += 1;
                    assert!(
                        ["ERR", "WRONGTYPE"].contains(&e.code()),
                        "{e:?} for {line:?}"
                    );
                    assert!(
                        !format!("{e:?}").contains("internal error"),
                        "{e:?} for {line:?}"
                    );
                    assert_eq!(
                        r[..half],
                        r[half + 1..],
                        "error {e:?} changed a key: {line:?}"
                    );
                }
                other => panic!("RL.ALL {line:?} replied {other:?}"),
            }
        }
        assert!(server.alive(), "server died:\n{}", server.log());
    }
    // Most well-formed lines meet a key of another type among their keys.
    assert!(
        errors > 1000 && replies > 50,
        "{errors} errors, {replies} replies"
    );
}
