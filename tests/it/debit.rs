//! DEBIT n on RL.FIXED, RL.SLIDINGCOUNTER, RL.BUCKET, RL.GCRA, RL.SHARE and RL.ALL
//! (docs/commands.md#debit), on a real server, with the module and with the
//! library.
//!
//! Contract: a debit charges n units whatever is left, into debt: always allowed,
//! remaining 0 while in debt, retry_after 0, a reset_after that covers the debt,
//! the key's expiry moved as any allowed write moves it; later calls are rejected
//! until time repays the debt. DEBIT excludes COST, REFUND and DELAY; RL.SLIDING
//! (and in RL.ALL a SLIDING or ACQUIRE policy) takes none. Errors change nothing.

use crate::common::*;

const HOUR_MS: i64 = 3_600_000;

/// The commands that take DEBIT (CL.THROTTLE and RL.SLIDING do not).
fn debit_commands() -> impl Iterator<Item = &'static Command> {
    COMMANDS.iter().copied().filter(|l| l.debit())
}

/// Those whose window `per` can make short (not RL.QUOTA's calendar periods).
fn debit_windowed() -> impl Iterator<Item = &'static Command> {
    debit_commands().filter(|l| !l.calendar())
}

/// `name key params DEBIT n`.
fn debit(l: &Command, c: &mut Connection, key: &str, params: &[String], n: u64) -> Reply {
    let mut args = l.args(key, params, None);
    args.extend(l.debit_args(n));
    l.run(c, &args)
}

/// Sets KEYS[1] relative to the server's clock: ARGV = kind ("string" or "hash"),
/// its values, then the absolute expiry. A value `@ms+D` is the server's ms + D;
/// `@ns+D` the same instant in ns. Returns the server's ms.
const SETUP: &str = r#"
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local function value(v)
  local d = v:match('^@ns%+(%-?%d+)$')
  if d then return string.format('%d', now + tonumber(d)) .. '000000' end
  d = v:match('^@ms%+(%-?%d+)$')
  if d then return string.format('%d', now + tonumber(d)) end
  return v
end
local key = KEYS[1]
redis.call('DEL', key)
local at = value(ARGV[#ARGV])
if ARGV[1] == 'string' then
  redis.call('SET', key, value(ARGV[2]), 'PXAT', at)
elseif ARGV[1] == 'hash' then
  redis.call('HSET', key, 'tokens', value(ARGV[2]), 'ts', value(ARGV[3]))
  redis.call('PEXPIREAT', key, at)
end
return now
"#;

/// What [`at_one_instant`] ran: the server ms, each call's reply, each read's.
struct Instant {
    now: i64,
    replies: Vec<Value>,
    reads: Vec<Value>,
}

impl Instant {
    fn reply(&self, i: usize) -> [i64; 5] {
        let v: Vec<i64> = redis::from_redis_value(&self.replies[i])
            .unwrap_or_else(|e| panic!("reply {i} {:?}: {e}", self.replies[i]));
        v.try_into().expect("five integers")
    }

    fn read<T: redis::FromRedisValue>(&self, i: usize) -> T {
        redis::from_redis_value(&self.reads[i])
            .unwrap_or_else(|e| panic!("read {i} {:?}: {e}", self.reads[i]))
    }
}

/// Runs, in one MULTI, `setups` (each `key kind values… expiry` for [`SETUP`]),
/// then `calls`, then the native `reads`, between two TIMEs, retried until both
/// fall in one millisecond: every call ran at a known `now`.
fn at_one_instant(
    c: &mut Connection,
    setups: &[&[&str]],
    calls: &[&[&str]],
    reads: &[&[&str]],
) -> Instant {
    for _ in 0..200 {
        let mut p = redis::pipe();
        p.atomic().cmd("TIME");
        for s in setups {
            p.cmd("EVAL").arg(SETUP).arg(1).arg(s);
        }
        for call in calls {
            p.add_command(command_of(call));
        }
        for r in reads {
            p.add_command(command_of(r));
        }
        p.cmd("TIME");
        let v: Vec<Value> = p
            .query(c)
            .unwrap_or_else(|e| panic!("{calls:?} in a MULTI: {e}"));
        let t = |x: &Value| ms_of(redis::from_redis_value(x).expect("TIME"));
        let (t0, t1) = (t(&v[0]), t(&v[v.len() - 1]));
        if t0 == t1 {
            let first = 1 + setups.len();
            return Instant {
                now: t0,
                replies: v[first..first + calls.len()].to_vec(),
                reads: v[first + calls.len()..v.len() - 1].to_vec(),
            };
        }
    }
    panic!("no run of {calls:?} within one millisecond in 200 tries");
}

// ------------------------------------------------------------------ vectors

#[test]
fn spec_vectors_gcra_and_bucket_settle_into_debt() {
    let s = Server::start();
    let mut c = s.conn();
    let gcra = |extra: &[&'static str]| -> Vec<&'static str> {
        let mut line = vec!["RL.GCRA", "g", "5", "1", "1s"];
        line.extend(extra);
        line
    };
    let (cost2, debit6, cost1) = (gcra(&["COST", "2"]), gcra(&["DEBIT", "6"]), gcra(&[]));
    let i = at_one_instant(
        &mut c,
        &[],
        &[&["DEL", "g"], &cost2, &debit6, &cost1],
        &[&["GET", "g"], &["PEXPIRETIME", "g"]],
    );
    assert_eq!(i.reply(1), [1, 5, 3, 0, 2000], "COST 2 at t = 0");
    assert_eq!(i.reply(2), [1, 5, 0, 0, 8000], "DEBIT 6 at t = 0");
    assert_eq!(i.reply(3), [0, 5, 0, 4000, 8000], "COST 1 at t = 0");
    let tat: String = i.read(0);
    assert_eq!(tat, format!("{}000000", i.now + 8000), "no cap at D");
    assert_eq!(i.read::<i64>(1), i.now + 8000);
    // At t = 4000 the TAT is 4000 ms ahead.
    let i = at_one_instant(
        &mut c,
        &[&["g", "string", "@ns+4000", "@ms+4000"]],
        &[&cost1],
        &[],
    );
    assert_eq!(i.reply(0), [1, 5, 0, 0, 5000], "COST 1 at t = 4000");

    let bucket = |extra: &[&'static str]| -> Vec<&'static str> {
        let mut line = vec!["RL.BUCKET", "b", "5", "1", "1s"];
        line.extend(extra);
        line
    };
    let i = at_one_instant(
        &mut c,
        &[],
        &[
            &["DEL", "b"],
            &bucket(&["COST", "2"]),
            &bucket(&["DEBIT", "6"]),
            &bucket(&[]),
        ],
        &[
            &["HGET", "b", "tokens"],
            &["HGET", "b", "ts"],
            &["PEXPIRETIME", "b"],
        ],
    );
    assert_eq!(i.reply(1), [1, 5, 3, 0, 2000]);
    assert_eq!(i.reply(2), [1, 5, 0, 0, 8000], "DEBIT 6 at t = 0");
    assert_eq!(i.reply(3), [0, 5, 0, 4000, 8000], "rejected while in debt");
    assert_eq!(i.read::<String>(0), "-3", "the stored level carries a -");
    assert_eq!(i.read::<i64>(1), i.now);
    assert_eq!(i.read::<i64>(2), i.now + 8000, "expires when full again");
}

#[test]
fn a_bucket_in_debt_is_read_by_every_reader() {
    let s = Server::start();
    let mut c = s.conn();
    let b = |extra: &[&'static str]| -> Vec<&'static str> {
        let mut line = vec!["RL.BUCKET", "b", "5", "1", "1s"];
        line.extend(extra);
        line
    };
    // -2.5 tokens at t = -1000: -1.5 now; COST 0, REFUND, RL.ALL and a new policy
    // read it. COST 0 in debt is rejected as on a lowered limit: it says when the
    // level is back at zero (1.5 s), and when full (6.5 s).
    let setup: &[&str] = &["b", "hash", "-2.5", "@ms+-1000", "@ms+5500"];
    let i = at_one_instant(&mut c, &[setup], &[&b(&["COST", "0"])], &[]);
    assert_eq!(i.reply(0), [0, 5, 0, 1500, 6500]);
    let i = at_one_instant(
        &mut c,
        &[setup],
        &[&b(&["REFUND", "2"])],
        &[&["HGET", "b", "tokens"]],
    );
    assert_eq!(i.reply(0), [1, 5, 0, 0, 4500]);
    assert_eq!(i.read::<String>(0), "0.5");
    let i = at_one_instant(
        &mut c,
        &[setup],
        &[&["RL.ALL", "1", "b", "BUCKET", "5", "1", "1s", "COST", "0"]],
        &[],
    );
    let all: Vec<Vec<i64>> = redis::from_redis_value(&i.replies[0]).unwrap();
    assert_eq!(all[1], [0, 5, 0, 1500, 6500]);
    // Capacity 2 refilling 2 per second: -0.5 now, 1.25 s to full.
    let i = at_one_instant(
        &mut c,
        &[setup],
        &[&["RL.BUCKET", "b", "2", "2", "1s", "COST", "0"]],
        &[],
    );
    assert_eq!(i.reply(0), [0, 2, 0, 250, 1250]);
    // The deepest debt is -(2^53-1) tokens; below it the key holds no bucket.
    let deepest: &[&str] = &["b", "hash", "-9007199254740991", "@ms+0", "@ms+60000"];
    let i = at_one_instant(&mut c, &[deepest], &[&b(&["COST", "0"])], &[]);
    assert_eq!(i.reply(0)[..3], [0, 5, 0]);
    let _: i64 = cmd("HSET")
        .arg(&["b", "tokens", "-9007199254740991.000001"])
        .query(&mut c)
        .unwrap();
    let before = snapshot(&mut c, b"b");
    for extra in [&["COST", "1"][..], &["DEBIT", "1"], &["REFUND", "1"]] {
        let e = error_of(&mut c, &bytes(&b(extra)));
        assert_eq!(
            e,
            "ERR key does not hold an RL.BUCKET (a hash with numeric fields tokens and ts)"
        );
        assert_eq!(snapshot(&mut c, b"b"), before);
    }
}

fn bytes<'a>(args: &'a [&'a str]) -> Vec<&'a [u8]> {
    args.iter().map(|a| a.as_bytes()).collect()
}

fn as_strs(args: &[String]) -> Vec<&str> {
    args.iter().map(String::as_str).collect()
}

// ------------------------------------------------------------------ settling

/// The pattern: reserve an estimate, then settle the difference once the real
/// cost is known.
#[test]
fn an_estimate_settled_with_refund_or_debit_counts_the_real_cost() {
    let s = Server::start();
    let mut c = s.conn();
    align_to_window(&mut c, HOUR_MS, 60_000);
    for l in debit_commands() {
        let (key, p) = (l.short, l.per(10, "1h"));
        let what = |step: &str| format!("{} {step}", l.name);
        // Estimated 4, used 3: give one back.
        assert_eq!(
            l.call(&mut c, key, &p, Some(4)).remaining,
            6,
            "{}",
            what("COST 4")
        );
        let mut args = l.args(key, &p, None);
        args.extend(strings(&["REFUND", "1"]));
        assert_eq!(l.run(&mut c, &args).remaining, 7, "{}", what("REFUND 1"));
        // Estimated 4, used 7: charge three more, which uses the limit up.
        assert_eq!(
            l.call(&mut c, key, &p, Some(4)).remaining,
            3,
            "{}",
            what("COST 4")
        );
        let r = debit(l, &mut c, key, &p, 3);
        assert_eq!(
            (r.allowed, r.limit, r.remaining, r.retry_after),
            (1, 10, 0, 0),
            "{}",
            what("DEBIT 3")
        );
        // 3 + 7 = 10 real units: nothing left.
        let r = l.call(&mut c, key, &p, Some(1));
        assert_eq!((r.allowed, r.remaining), (0, 0), "{}", what("COST 1"));
        // A cost that comes out far above the estimate still counts, into debt.
        let r = debit(l, &mut c, key, &p, 25);
        assert_eq!(
            (r.allowed, r.remaining, r.retry_after),
            (1, 0, 0),
            "{}",
            what("DEBIT 25")
        );
        assert!(r.reset_after > 0, "{}: {r:?}", what("DEBIT 25"));
        let pttl: i64 = cmd("PTTL").arg(key).query(&mut c).unwrap();
        l.assert_expiry(&p, r.reset_after, pttl, 50);
        // REFUND of part of the debt: still in debt, still rejected.
        let mut args = l.args(key, &p, None);
        args.extend(strings(&["REFUND", "20"]));
        assert_eq!(l.run(&mut c, &args).remaining, 0, "{}", what("REFUND 20"));
        assert_eq!(
            l.call(&mut c, key, &p, Some(1)).allowed,
            0,
            "{}",
            what("COST 1")
        );
    }
}

#[test]
fn a_debit_on_an_absent_key_writes_what_an_allowed_call_writes() {
    let s = Server::start();
    let mut c = s.conn();
    align_to_window(&mut c, HOUR_MS, 60_000);
    for l in debit_commands() {
        let p = l.per(5, "1h");
        let key = format!("{}:a", l.short);
        let twin = format!("{}:b", l.short);
        let mut line = l.args(&key, &p, None);
        line.extend(l.debit_args(3));
        let twin_line = l.args(&twin, &p, Some(3));
        let line: Vec<&str> = line.iter().map(String::as_str).collect();
        let twin_line: Vec<&str> = twin_line.iter().map(String::as_str).collect();
        // Within the limit, DEBIT n is COST n: same reply, same value and expiry.
        let i = at_one_instant(
            &mut c,
            &[],
            &[&["DEL", &key, &twin], &line, &twin_line],
            &[
                &as_strs(&comparable_dump_line(&key)),
                &as_strs(&comparable_dump_line(&twin)),
                &["PEXPIRETIME", &key],
                &["PEXPIRETIME", &twin],
            ],
        );
        assert_eq!(i.reply(1), i.reply(2), "{}", l.name);
        assert_eq!(i.reply(1)[..4], [1, 5, 2, 0], "{}", l.name);
        assert_eq!(i.read::<Vec<u8>>(0), i.read::<Vec<u8>>(1), "{}", l.name);
        assert_eq!(i.read::<i64>(2), i.read::<i64>(3), "{}", l.name);
        // A debit always writes: a WATCH on the key aborts.
        let _: () = cmd("WATCH").arg(&key).query(&mut c).unwrap();
        debit(l, &mut c, &key, &p, 1);
        let exec: Option<Vec<String>> = redis::pipe().atomic().cmd("PING").query(&mut c).unwrap();
        assert!(exec.is_none(), "{}: a debit aborts a WATCH", l.name);
    }
}

// ------------------------------------------------------------------ repaid by time

/// Full use, then a debit: every call that asks for the whole limit is rejected
/// until the reset, when the key expires (the debt repaid: the window over, the
/// bucket full again, the TAT reached; RL.SHARE's key may outlive it by less than
/// a time slot), then allowed. Short windows, polled with deadlines.
#[test]
fn debt_is_repaid_by_time_on_every_limiter() {
    let s = Server::start();
    let mut c = s.conn();
    for l in debit_windowed() {
        let key = l.short;
        let p = l.per(2, "300ms");
        // Where the window is epoch-aligned, start early in one.
        align_to_window(&mut c, 300, 250);
        let i = {
            let full = l.args(key, &p, Some(2));
            let mut owe = l.args(key, &p, None);
            owe.extend(l.debit_args(3));
            let full: Vec<&str> = full.iter().map(String::as_str).collect();
            let owe: Vec<&str> = owe.iter().map(String::as_str).collect();
            at_one_instant(
                &mut c,
                &[],
                &[&["DEL", key], &full, &owe],
                &[&["PEXPIRETIME", key]],
            )
        };
        let r = Reply::of(&i.reply(2));
        assert_eq!(
            (r.allowed, r.remaining, r.retry_after),
            (1, 0, 0),
            "{}: {r:?}",
            l.name
        );
        // The key expires at the reset (RL.SHARE's up to a slot later).
        let expires = i.read::<i64>(0);
        let reset = i.now + r.reset_after;
        l.assert_expiry(&p, r.reset_after, expires - i.now, 0);
        // A rate (a bucket, GCRA, a shared budget: capacity 2, 2 per 300 ms): 5
        // units of 150 ms; fixed window: its end; sliding counter: the end of the
        // next window.
        let rate = l.params.iter().any(|p| p.name == "tokens");
        let want = match l.name {
            _ if rate => 750,
            "RL.FIXED" => 300 - i.now % 300,
            _ => 600 - i.now % 300,
        };
        assert_eq!(r.reset_after, want, "{}", l.name);
        let polls = wait_for(PATIENCE, "the debt repaid", || {
            let before = server_ms(&mut c);
            let r = l.call(&mut c, key, &p, Some(2));
            let after = server_ms(&mut c);
            if r.allowed == 1 {
                Some((before, after))
            } else {
                // (A debt is still owed in the reset's own ms.)
                assert!(
                    before <= reset,
                    "{}: rejected at {before}, after the reset {reset}",
                    l.name
                );
                assert!(r.retry_after > 0, "{}: {r:?}", l.name);
                std::thread::sleep(std::time::Duration::from_millis(20));
                None
            }
        });
        assert!(
            polls.1 >= reset,
            "{}: allowed at {polls:?}, before the reset {reset}",
            l.name
        );
    }
}

// ------------------------------------------------------------------ bounds

#[test]
fn debits_at_the_bounds_do_not_overflow() {
    let s = Server::start();
    let mut c = s.conn();
    for l in debit_commands() {
        let key = format!("{}:max", l.short);
        let p: Vec<String> = l.params.iter().map(|p| p.max.to_string()).collect();
        for round in 0..3 {
            let r = debit(l, &mut c, &key, &p, 9_007_199_254_740_991);
            assert_eq!(
                (r.allowed, r.remaining, r.retry_after),
                (1, 0, 0),
                "{} round {round}: {r:?}",
                l.name
            );
            assert!(
                (1..=9_007_199_254_740_991).contains(&r.reset_after),
                "{} round {round}: {r:?}",
                l.name
            );
            let pttl: i64 = cmd("PTTL").arg(&key).query(&mut c).unwrap();
            assert!(
                (1..=9_007_199_254_740_991).contains(&pttl),
                "{}: PTTL {pttl}",
                l.name
            );
        }
        let r = l.call(&mut c, &key, &p, Some(1));
        assert_eq!((r.allowed, r.remaining), (0, 0), "{}: {r:?}", l.name);
        assert!(r.retry_after <= 9_007_199_254_740_991, "{}: {r:?}", l.name);
    }
    // A bucket of one token: the debt stops at -(2^53-1) tokens.
    let p = strings(&["1", "1", "3650d"]);
    for _ in 0..3 {
        debit(&BUCKET, &mut c, "deepest", &p, 9_007_199_254_740_991);
    }
    let tokens: String = cmd("HGET")
        .arg(&["deepest", "tokens"])
        .query(&mut c)
        .unwrap();
    assert_eq!(tokens, "-9007199254740991");
    // Counters stop at 2^64-1.
    for (l, key, value) in [
        (&FIXED, "fixed:top", "18446744073709551610"),
        (&SLIDINGCOUNTER, "sc:top", ""),
    ] {
        let p = l.per(5, "1h");
        if l.is("RL.FIXED") {
            let _: () = cmd("SET")
                .arg(&[key, value, "PX", "60000"])
                .query(&mut c)
                .unwrap();
        } else {
            let now = server_ms(&mut c);
            let start = now - now % HOUR_MS;
            let v = format!("{start} 18446744073709551610 18446744073709551615");
            let _: () = cmd("SET")
                .arg(key)
                .arg(v)
                .arg("PX")
                .arg(60_000)
                .query(&mut c)
                .unwrap();
        }
        let r = debit(l, &mut c, key, &p, 9_007_199_254_740_991);
        assert_eq!((r.allowed, r.remaining), (1, 0), "{}", l.name);
        let v: String = cmd("GET").arg(key).query(&mut c).unwrap();
        assert!(v.contains("18446744073709551615"), "{}: {v}", l.name);
    }
}

// ------------------------------------------------------------------ errors

#[test]
fn every_bad_debit_gets_a_clear_error_and_changes_nothing() {
    let s = Server::start();
    let mut c = s.conn();
    align_to_window(&mut c, HOUR_MS, 60_000);
    let count = "ERR DEBIT must be an integer from 1 to 9007199254740991";
    for l in COMMANDS.iter().copied().filter(|l| l.style == Style::Rl) {
        let key = l.short;
        let p = l.per(5, "1h");
        l.call(&mut c, key, &p, Some(2));
        let before = snapshot(&mut c, key.as_bytes());
        let not_taken = format!(
            "ERR syntax error: DEBIT does not apply to {}, which takes {}",
            l.name,
            l.row().takes().expected()
        );
        let mut cases: Vec<(Vec<&str>, String)> = vec![
            (vec!["DEBIT", "0"], count.into()),
            (vec!["DEBIT", "-1"], count.into()),
            (vec!["DEBIT", "1.5"], count.into()),
            (vec!["DEBIT", "01"], count.into()),
            (vec!["DEBIT", "9007199254740992"], count.into()),
            (
                vec!["DEBIT"],
                "ERR syntax error: DEBIT needs a value".into(),
            ),
            (
                vec!["DEBIT", "1", "debit", "1"],
                "ERR syntax error: DEBIT given more than once".into(),
            ),
            (
                vec!["COST", "1", "DEBIT", "1"],
                "ERR syntax error: COST and DEBIT exclude each other".into(),
            ),
            (
                vec!["Debit", "1", "cost", "1"],
                "ERR syntax error: COST and DEBIT exclude each other".into(),
            ),
            (
                vec!["REFUND", "1", "DEBIT", "1"],
                "ERR syntax error: REFUND and DEBIT exclude each other".into(),
            ),
        ];
        if !l.debit() {
            // RL.SLIDING: the option is named with the command, whatever follows.
            cases = [
                &["DEBIT", "1"][..],
                &["debit", "0"],
                &["DEBIT"],
                &["COST", "1", "DEBIT", "1"],
                &["REFUND", "1", "DEBIT", "x"],
            ]
            .iter()
            .map(|line| (line.to_vec(), not_taken.clone()))
            .collect();
        }
        if l.is("RL.GCRA") {
            for line in [
                vec!["DELAY", "1s", "DEBIT", "1"],
                vec!["DEBIT", "1", "DELAY", "0"],
            ] {
                cases.push((
                    line,
                    "ERR syntax error: DELAY and DEBIT exclude each other".into(),
                ));
            }
        }
        for (extra, want) in &cases {
            let mut args = l.args(key, &p, None);
            args.extend(extra.iter().map(|s| s.to_string()));
            let args: Vec<&[u8]> = args.iter().map(|a| a.as_bytes()).collect();
            assert_eq!(&error_of(&mut c, &args), want, "{} {extra:?}", l.name);
            assert_eq!(
                snapshot(&mut c, key.as_bytes()),
                before,
                "{} {extra:?}",
                l.name
            );
        }
        // Another type: WRONGTYPE, nothing changed.
        if l.debit() {
            let other = format!("{}:list", l.short);
            let _: i64 = cmd("RPUSH").arg(&[&other, "x"]).query(&mut c).unwrap();
            let mut args = l.args(&other, &p, None);
            args.extend(l.debit_args(1));
            let args: Vec<&[u8]> = args.iter().map(|a| a.as_bytes()).collect();
            assert!(
                error_of(&mut c, &args).starts_with("WRONGTYPE"),
                "{}",
                l.name
            );
            let len: i64 = cmd("LLEN").arg(&other).query(&mut c).unwrap();
            assert_eq!(len, 1);
        }
    }

    // RL.ALL: a policy that takes no DEBIT is named; no key changes.
    let _: () = cmd("SET")
        .arg(&["fixed:all", "1", "PX", "3600000"])
        .query(&mut c)
        .unwrap();
    let before = snapshot(&mut c, b"fixed:all");
    let all = |tail: &[&'static str]| -> Vec<&'static str> {
        let mut line = vec!["RL.ALL", "2", "fixed:all", "other:all", "FIXED", "5", "1h"];
        line.extend(tail);
        line
    };
    for (line, want) in [
        (
            all(&["SLIDING", "5", "1h", "DEBIT", "1"]),
            "ERR syntax error: DEBIT does not apply to SLIDING, which takes COST n or REFUND n",
        ),
        (
            all(&["ACQUIRE", "5", "1h", "job", "debit", "1"]),
            "ERR syntax error: DEBIT does not apply to ACQUIRE, which takes COST n",
        ),
        (
            all(&["GCRA", "5", "1", "1h", "DELAY", "1s", "DEBIT", "1"]),
            "ERR syntax error: DELAY and DEBIT exclude each other",
        ),
        (
            all(&["GCRA", "5", "1", "1h", "DEBIT", "0"]),
            "ERR DEBIT must be an integer from 1 to 9007199254740991",
        ),
        (
            all(&["BUCKET", "5", "1", "1h", "COST", "1", "DEBIT", "1"]),
            "ERR syntax error: COST and DEBIT exclude each other",
        ),
        (
            all(&["BUCKET", "5", "1", "1h", "WEIGHT", "1"]),
            "ERR syntax error: unknown option 'WEIGHT', expected COST n, REFUND n or DEBIT n",
        ),
    ] {
        assert_eq!(error_of(&mut c, &bytes(&line)), want, "{line:?}");
        assert_eq!(snapshot(&mut c, b"fixed:all"), before, "{line:?}");
        assert!(!exists(&mut c, "other:all"), "{line:?}");
    }

    // RL.ACQUIRE names the option, as it names COST; CL.THROTTLE keeps redis-cell's
    // arity (5 or 6 arguments) and its error.
    let mut fixed: Vec<(&[&str], &str)> = vec![(
        &["RL.ACQUIRE", "q", "5", "1h", "job", "DEBIT", "1"],
        "ERR syntax error: DEBIT does not apply to RL.ACQUIRE, which takes no options",
    )];
    if !is_library() {
        fixed.push((
            &["CL.THROTTLE", "t", "4", "1", "1h", "DEBIT", "1"],
            "ERR wrong number of arguments for 'CL.THROTTLE' command",
        ));
    }
    for (line, want) in fixed {
        assert_eq!(error_of(&mut c, &bytes(line)), want, "{line:?}");
        assert!(!exists(&mut c, line[1]));
    }
}

// ------------------------------------------------------------------ RL.ALL

#[test]
fn rl_all_with_debit_writes_every_key_as_its_own_command_would() {
    let s = Server::start();
    let mut c = s.conn();
    align_to_window(&mut c, HOUR_MS, 60_000);
    let policies: Vec<&Command> = debit_commands().collect();
    let mut all: Vec<String> = vec!["RL.ALL".into(), policies.len().to_string()];
    all.extend(policies.iter().map(|l| format!("{}:all", l.short)));
    for l in &policies {
        all.push(l.name.trim_start_matches("RL.").to_string());
        all.extend(l.per(5, "1h"));
    }
    let mut take = all.clone();
    take.extend(strings(&["COST", "3"]));
    let mut owe = all.clone();
    owe.extend(strings(&["DEBIT", "6"]));
    // A retried MULTI starts afresh.
    let mut del = strings(&["DEL"]);
    for l in &policies {
        del.extend([format!("{}:all", l.short), format!("{}:one", l.short)]);
    }
    let mut calls: Vec<Vec<String>> = vec![del, take, owe];
    for l in &policies {
        let key = format!("{}:one", l.short);
        calls.push(l.args(&key, &l.per(5, "1h"), Some(3)));
        let mut line = l.args(&key, &l.per(5, "1h"), None);
        line.extend(l.debit_args(6));
        calls.push(line);
    }
    let mut reads: Vec<Vec<String>> = Vec::new();
    for l in &policies {
        for suffix in ["all", "one"] {
            let key = format!("{}:{suffix}", l.short);
            reads.push(comparable_dump_line(&key));
            reads.push(strings(&["PEXPIRETIME", &key]));
        }
    }
    let calls_ref: Vec<Vec<&str>> = calls
        .iter()
        .map(|c| c.iter().map(String::as_str).collect())
        .collect();
    let calls_ref: Vec<&[&str]> = calls_ref.iter().map(Vec::as_slice).collect();
    let reads_ref: Vec<Vec<&str>> = reads
        .iter()
        .map(|c| c.iter().map(String::as_str).collect())
        .collect();
    let reads_ref: Vec<&[&str]> = reads_ref.iter().map(Vec::as_slice).collect();
    let i = at_one_instant(&mut c, &[], &calls_ref, &reads_ref);
    let replies: Vec<Vec<i64>> = redis::from_redis_value(&i.replies[2]).unwrap();
    assert_eq!(
        replies[0][..4],
        [1, 5, 0, 0],
        "combined: allowed, nothing left"
    );
    for (k, l) in policies.iter().enumerate() {
        // Each key answers what its own command answered, and holds what it wrote.
        assert_eq!(replies[1 + k], i.reply(4 + 2 * k).to_vec(), "{}", l.name);
        assert_eq!(replies[1 + k][..4], [1, 5, 0, 0], "{}", l.name);
        let dump = |j: usize| i.read::<Vec<u8>>(4 * k + j);
        let at = |j: usize| i.read::<i64>(4 * k + j);
        assert_eq!(dump(0), dump(2), "{}: the value", l.name);
        assert_eq!(at(1), at(3), "{}: the expiry", l.name);
    }
    // In debt, every key rejects: so does the call.
    let mut again = all.clone();
    again.extend(strings(&["COST", "1"]));
    let again: Vec<&str> = again.iter().map(String::as_str).collect();
    let v: Vec<Vec<i64>> = command_of(&again).query(&mut c).unwrap();
    assert_eq!(v[0][0], 0, "{v:?}");
    assert!(v[1..].iter().all(|r| r[0] == 0), "{v:?}");
}
