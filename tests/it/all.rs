//! RL.ALL against real redis-servers.
//!
//! The rules (docs/commands.md#rlall): every key is decided at one instant as its own command
//! would decide it; if all allow, each key is written exactly as its own command
//! writes it, otherwise nothing is written. The reply is numkeys + 1 arrays: the
//! combined decision, then each key's. Keys are declared with a numkeys key spec.

use crate::common::*;

use std::sync::{Arc, Barrier};

const HOUR_MS: i64 = 3_600_000;

/// `RL.ALL` with these arguments: the combined reply, then each key's.
fn all(c: &mut Connection, args: &[&str]) -> Vec<Reply> {
    let replies = try_all(c, args).unwrap_or_else(|e| panic!("RL.ALL {args:?}: {e}"));
    let keys: usize = args[0].parse().expect("numkeys");
    assert_eq!(
        replies.len(),
        keys + 1,
        "RL.ALL {args:?} replied {replies:?}"
    );
    replies.iter().map(|r| Reply::of(r)).collect()
}

fn try_all(c: &mut Connection, args: &[&str]) -> redis::RedisResult<Vec<Vec<i64>>> {
    on_backend(cmd("RL.ALL").arg(args)).query(c)
}

type Fields = (i64, i64, i64, i64, i64);

fn fields(r: &Reply) -> Fields {
    (
        r.allowed,
        r.limit,
        r.remaining,
        r.retry_after,
        r.reset_after,
    )
}

/// DUMP and PEXPIRETIME of each key.
fn state(c: &mut Connection, keys: &[&str]) -> Vec<(Option<Vec<u8>>, i64)> {
    keys.iter().map(|k| snapshot(c, k.as_bytes())).collect()
}

/// One key per policy, with the policy's words for a limit of `n` per hour.
fn every_policy(prefix: &str, n: u64) -> Vec<(String, Vec<String>, &'static Command)> {
    [&FIXED, &SLIDING, &BUCKET, &GCRA, &SLIDINGCOUNTER]
        .into_iter()
        .map(|l| {
            let mut words = vec![l.name.trim_start_matches("RL.").to_string()];
            words.extend(l.per(n, "1h"));
            (format!("{prefix}{}", l.short), words, l)
        })
        .collect()
}

/// `numkeys key… policy…` for these keys and policies, then `extra`.
fn line(keys: &[(String, Vec<String>, &Command)], extra: &[&str]) -> Vec<String> {
    let mut args = vec![keys.len().to_string()];
    args.extend(keys.iter().map(|(k, _, _)| k.clone()));
    args.extend(keys.iter().flat_map(|(_, p, _)| p.clone()));
    args.extend(extra.iter().map(|s| s.to_string()));
    args
}

fn strs(args: &[String]) -> Vec<&str> {
    args.iter().map(String::as_str).collect()
}

#[test]
fn allows_only_when_every_key_allows_and_takes_from_each() {
    let s = Server::start();
    let mut c = s.conn();
    align_to_window(&mut c, HOUR_MS, 60_000);
    let args = ["2", "f", "b", "FIXED", "2", "1h", "BUCKET", "5", "1", "1h"];
    let first = all(&mut c, &args);
    assert_eq!((first[1].allowed, first[1].remaining), (1, 1), "{first:?}");
    assert_eq!((first[2].allowed, first[2].remaining), (1, 4), "{first:?}");
    assert_eq!(
        first[2].reset_after, 3_600_000,
        "an hour to refill the one token taken"
    );
    // Combined: allowed, the smallest remaining with that key's limit, retry 0,
    // the longest reset.
    let longest = first[1].reset_after.max(first[2].reset_after);
    assert_eq!(fields(&first[0]), (1, 2, 1, 0, longest));
    assert_eq!(
        rl(&mut c, &["RL.FIXED", "f", "2", "1h", "COST", "0"]).remaining,
        1
    );
    assert_eq!(
        rl(&mut c, &["RL.BUCKET", "b", "5", "1", "1h", "COST", "0"]).remaining,
        4
    );

    all(&mut c, &args);
    // The fixed window is full: the bucket would allow, but nothing is taken.
    let before = state(&mut c, &["f", "b"]);
    let rejected = all(&mut c, &args);
    assert_eq!(
        state(&mut c, &["f", "b"]),
        before,
        "a rejected RL.ALL writes nothing"
    );
    let (f, b) = (&rejected[1], &rejected[2]);
    assert_eq!((f.allowed, f.limit, f.remaining), (0, 2, 0), "{rejected:?}");
    assert!(
        f.retry_after > 0 && f.retry_after == f.reset_after,
        "{rejected:?}"
    );
    // The bucket's own verdict on this cost (allowed, no wait) and its real state,
    // with nothing taken: 3 tokens left.
    assert_eq!(
        (b.allowed, b.limit, b.remaining, b.retry_after),
        (1, 5, 3, 0),
        "{rejected:?}"
    );
    assert_eq!(
        fields(&rejected[0]),
        (0, 2, 0, f.retry_after, f.reset_after.max(b.reset_after))
    );
}

#[test]
fn a_rejected_call_reports_the_longest_wait_or_never() {
    let s = Server::start();
    let mut c = s.conn();
    align_to_window(&mut c, HOUR_MS, 60_000);
    // Two buckets emptied at different rates: 1 per second and 1 per 10 s.
    let args = [
        "2", "fast", "slow", "BUCKET", "1", "1", "1s", "BUCKET", "1", "1", "10s",
    ];
    assert_eq!(all(&mut c, &args)[0].allowed, 1);
    let r = all(&mut c, &args);
    assert_eq!((r[1].allowed, r[2].allowed), (0, 0), "{r:?}");
    assert!(r[1].retry_after <= 1000 && r[2].retry_after > 9000, "{r:?}");
    assert_eq!(
        r[0].retry_after, r[2].retry_after,
        "the longest wait: {r:?}"
    );
    // Ties for the smallest remaining: the first key's limit.
    assert_eq!((r[0].limit, r[0].remaining), (1, 0));
    // A cost one key can never allow: -1, whatever the other keys say.
    let never = [
        "2", "fast", "big", "BUCKET", "1", "1", "1s", "FIXED", "10", "1h", "COST", "2",
    ];
    let r = all(&mut c, &never);
    assert_eq!(r[1].retry_after, -1, "{r:?}");
    assert_eq!(r[2].allowed, 1, "{r:?}");
    assert_eq!(fields(&r[0]).3, -1, "{r:?}");
    assert!(
        !exists(&mut c, "big"),
        "nothing written on the allowing key"
    );
}

#[test]
fn each_key_is_written_and_answered_exactly_as_its_own_command() {
    let s = Server::start();
    let mut c = s.conn();
    align_to_window(&mut c, HOUR_MS, 60_000);
    let keys = every_policy("all:", 5);
    // Twins of the same keys, each called by its own command in the same MULTI: at
    // one instant (the frozen command time on 7.2+; on 7.0 retried until both TIMEs
    // fall in one ms), so values, expiries and replies must be identical.
    for cost in ["2", "1", "0", "2", "3"] {
        let mut tries = 0;
        loop {
            tries += 1;
            // A try that spans two ms is undone before the next one: it may have
            // written the two sets of keys at different ms.
            let names: Vec<String> = keys
                .iter()
                .flat_map(|(k, _, _)| [k.clone(), format!("twin:{k}")])
                .collect();
            let saved: Vec<_> = names
                .iter()
                .map(|k| (k, snapshot(&mut c, k.as_bytes())))
                .collect();
            let mut p = redis::pipe();
            p.atomic().cmd("TIME");
            p.add_command(on_backend(cmd("RL.ALL").arg(line(&keys, &["COST", cost]))));
            for (key, words, l) in &keys {
                let twin = format!("twin:{key}");
                p.add_command(l.cmd(&twin, &words[1..], Some(cost.parse().unwrap())));
            }
            p.cmd("TIME");
            let v: Vec<Value> = p.query(&mut c).expect("MULTI");
            let n = v.len();
            let time = |x: &Value| -> i64 { ms_of(redis::from_redis_value(x).unwrap()) };
            let (t0, t1) = (time(&v[0]), time(&v[n - 1]));
            let replies: Vec<Vec<i64>> = redis::from_redis_value(&v[1]).unwrap();
            let singles: Vec<Vec<i64>> = v[2..n - 1]
                .iter()
                .map(|x| redis::from_redis_value(x).unwrap())
                .collect();
            if t0 != t1 && tries < 50 {
                for (k, (dump, at)) in &saved {
                    let _: () = cmd("DEL").arg(k.as_str()).query(&mut c).unwrap();
                    if let Some(dump) = dump {
                        let _: () = cmd("RESTORE")
                            .arg(k.as_str())
                            .arg((*at).max(0))
                            .arg(dump)
                            .arg("ABSTTL")
                            .query(&mut c)
                            .expect("RESTORE");
                    }
                }
                continue;
            }
            assert_eq!(&replies[1..], &singles[..], "COST {cost}: per-key replies");
            for (key, _, l) in &keys {
                assert_eq!(
                    snapshot(&mut c, key.as_bytes()),
                    snapshot(&mut c, format!("twin:{key}").as_bytes()),
                    "{}: COST {cost}: DUMP and PEXPIRETIME",
                    l.name
                );
            }
            break;
        }
    }
    // 2 + 1 + 0 + 2 = 5 taken: the next COST 3 was rejected everywhere.
    for (key, _, l) in &keys {
        assert!(exists(&mut c, key), "{} wrote {key}", l.name);
    }
}

#[test]
fn refund_gives_back_on_every_key() {
    let s = Server::start();
    let mut c = s.conn();
    align_to_window(&mut c, HOUR_MS, 60_000);
    let keys = every_policy("r:", 5);
    let taken = all(&mut c, &strs(&line(&keys, &["COST", "3"])));
    assert!(taken[1..].iter().all(|r| r.remaining == 2), "{taken:?}");
    let back = all(&mut c, &strs(&line(&keys, &["REFUND", "1"])));
    assert!(
        back.iter()
            .all(|r| r.allowed == 1 && r.retry_after == 0 && r.remaining == 3),
        "{back:?}"
    );
    // Everything back: every key is deleted, the reply is the initial state.
    let back = all(&mut c, &strs(&line(&keys, &["REFUND", "10"])));
    assert!(
        back.iter().all(|r| fields(r) == (1, 5, 5, 0, 0)),
        "{back:?}"
    );
    for (key, _, l) in &keys {
        assert!(!exists(&mut c, key), "{}: {key} deleted", l.name);
    }
    // Nothing left to give back: nothing written, even the key absent.
    let _: () = cmd("WATCH").arg("r:fixed").query(&mut c).unwrap();
    all(&mut c, &strs(&line(&keys, &["REFUND", "1"])));
    let exec: Option<Vec<String>> = redis::pipe().atomic().cmd("PING").query(&mut c).unwrap();
    assert!(
        exec.is_some(),
        "a refund that changes nothing keeps the WATCH"
    );
}

#[test]
fn bad_calls_are_errors_that_change_nothing() {
    let s = Server::start();
    let mut c = s.conn();
    align_to_window(&mut c, HOUR_MS, 60_000);
    all(
        &mut c,
        &["2", "a", "b", "FIXED", "5", "1h", "GCRA", "5", "1", "1h"],
    );
    let _: () = cmd("RPUSH").arg("list").arg("x").query(&mut c).unwrap();
    let _: () = cmd("SET")
        .arg("s")
        .arg("abc")
        .arg("EX")
        .arg(1000)
        .query(&mut c)
        .unwrap();
    let before = state(&mut c, &["a", "b", "list", "s"]);
    let cases: &[(&[&str], &str)] = &[
        (&["0", "a", "FIXED", "5", "1h"], "ERR numkeys must be an integer from 1 to 16"),
        (&["17", "a", "FIXED", "5", "1h"], "ERR numkeys must be an integer from 1 to 16"),
        (&["x", "a", "FIXED", "5", "1h"], "ERR numkeys must be"),
        (&["-1", "a", "FIXED", "5", "1h"], "ERR numkeys must be"),
        (&["9", "a", "b", "FIXED", "5"], "ERR numkeys is 9, but fewer keys follow it"),
        (&["2", "a", "a", "FIXED", "5", "1h", "FIXED", "5", "1h"], "ERR key 'a' is given more than once"),
        (&["2", "a", "b", "FIXED", "5", "1h"], "ERR one policy per key, in key order: numkeys is 2, policies given 1"),
        (&["2", "a", "b", "FIXED", "5", "1h", "COST", "1"], "ERR one policy per key"),
        (&["1", "a", "FIXED", "5", "1h", "FIXED", "5", "1h"], "ERR one policy per key, in key order: numkeys is 1, policies given 2"),
        (&["2", "a", "b", "FIXED", "5", "1h", "LEAKY", "5", "1h"], "ERR syntax error: unknown policy 'LEAKY', expected FIXED, SLIDING, BUCKET, GCRA, SLIDINGCOUNTER, ACQUIRE, PENALTY, SHARE or QUOTA"),
        (&["1", "a", "CL.THROTTLE", "5", "1", "1h"], "ERR syntax error: unknown policy 'CL.THROTTLE'"),
        (&["2", "a", "b", "FIXED", "5", "1h", "BUCKET", "5", "1"], "ERR syntax error: policy BUCKET takes capacity tokens period"),
        (&["1", "a", "FIXED", "0", "1h"], "ERR limit must be an integer from 1 to 9007199254740991"),
        (&["1", "a", "FIXED", "5", "0"], "ERR window must be a duration"),
        (&["1", "a", "SLIDING", "100001", "1h"], "ERR limit must be an integer from 1 to 100000 for RL.SLIDING"),
        (&["1", "b", "GCRA", "1", "2000000", "1ms"], "ERR tokens per period is too high"),
        (&["1", "a", "FIXED", "5", "1h", "COST", "1", "REFUND", "1"], "ERR syntax error: COST and REFUND exclude each other"),
        (&["1", "a", "FIXED", "5", "1h", "COST"], "ERR syntax error: COST needs a value"),
        (&["1", "a", "FIXED", "5", "1h", "COST", "-1"], "ERR COST must be an integer from 0 to 9007199254740991"),
        (&["1", "a", "FIXED", "5", "1h", "EX", "1"], "ERR syntax error: unknown option 'EX'"),
        // numkeys that does not match the keys and policies that follow it.
        (&["3", "a", "b", "FIXED", "5", "1h", "FIXED", "5", "1h"], "ERR numkeys is 3, but the keys and policies given match numkeys 2"),
        (&["1", "a", "b", "FIXED", "5", "1h", "GCRA", "5", "1", "1h", "COST", "2"], "ERR numkeys is 1, but the keys and policies given match numkeys 2"),
        (&["2", "a", "FIXED", "5", "1h", "COST", "1"], "ERR numkeys is 2, but the keys and policies given match numkeys 1"),
        // DELAY belongs to a GCRA policy; after the last one, among its options.
        (&["1", "a", "FIXED", "5", "1h", "COST", "1", "DELAY", "1s"], "ERR syntax error: DELAY must follow a GCRA policy"),
        (&["2", "a", "b", "FIXED", "5", "1h", "DELAY", "1s", "GCRA", "5", "1", "1h"], "ERR syntax error: DELAY must follow a GCRA policy"),
        (&["1", "b", "GCRA", "5", "1", "1h", "COST", "1", "DELAY", "1s", "DELAY", "2s"], "ERR syntax error: DELAY given more than once"),
        (&["1", "b", "GCRA", "5", "1", "1h", "REFUND", "1", "DELAY", "1s"], "ERR syntax error: DELAY and REFUND exclude each other"),
        (&["1", "a", "FIXED", "5"], "ERR wrong number of arguments for 'RL.ALL' command"),
        (&["1"], "ERR wrong number of arguments"),
        // A key of another type, after a key that would allow: nothing written.
        (&["2", "a", "list", "FIXED", "5", "1h", "FIXED", "5", "1h"], "WRONGTYPE Operation against a key holding the wrong kind of value"),
        (&["2", "a", "s", "FIXED", "5", "1h", "FIXED", "5", "1h"], "ERR key does not hold an RL.FIXED counter"),
        (&["2", "a", "b", "FIXED", "5", "1h", "BUCKET", "5", "1", "1h"], "WRONGTYPE"),
    ];
    for (args, want) in cases {
        let mut line: Vec<&[u8]> = vec![b"RL.ALL"];
        line.extend(args.iter().map(|a| a.as_bytes()));
        let e = error_of(&mut c, &line);
        // FCALL reads numkeys itself, with its own errors, before rl_all runs.
        let want = if is_library() {
            match args[0].parse::<i64>() {
                Err(_) => "ERR Bad number of keys provided".to_string(),
                Ok(n) if n < 0 => "ERR Number of keys can't be negative".to_string(),
                Ok(n) if n as usize > args.len() - 1 => {
                    "ERR Number of keys can't be greater than number of args".to_string()
                }
                _ if want.starts_with("ERR wrong number") => arity_error("RL.ALL"),
                // A library without rl_share yet lists the policies but SHARE.
                _ if library_lacks("rl_share") => {
                    want.replace("ACQUIRE, PENALTY, SHARE or QUOTA", "ACQUIRE or PENALTY")
                }
                _ => want.to_string(),
            }
        } else {
            want.to_string()
        };
        assert!(e.starts_with(&want), "RL.ALL {args:?}: {e}");
        assert_eq!(
            state(&mut c, &["a", "b", "list", "s"]),
            before,
            "RL.ALL {args:?} changed a key"
        );
    }
}

#[test]
fn keys_are_declared_by_numkeys_for_getkeys_and_command_info() {
    if module_only("COMMAND GETKEYS and COMMAND INFO describe module commands") {
        return;
    }
    let s = Server::start();
    let mut c = s.conn();
    let keys: Vec<String> = cmd("COMMAND")
        .arg(&[
            "GETKEYS", "RL.ALL", "3", "x", "y", "z", "FIXED", "1", "1h", "GCRA", "1", "1", "1h",
            "SLIDING", "2", "1s", "COST", "2",
        ])
        .query(&mut c)
        .unwrap();
    assert_eq!(keys, ["x", "y", "z"]);
    let info: Value = cmd("COMMAND")
        .arg("INFO")
        .arg("RL.ALL")
        .query(&mut c)
        .unwrap();
    let Value::Array(entries) = info else {
        panic!("{info:?}")
    };
    let Value::Array(entry) = &entries[0] else {
        panic!("{entries:?}")
    };
    let arity: i64 = redis::from_redis_value(&entry[1]).unwrap();
    assert_eq!(arity, -6);
    let flags: Vec<String> = redis::from_redis_value(&entry[2]).unwrap();
    for f in ["write", "denyoom", "movablekeys"] {
        assert!(flags.contains(&f.to_string()), "{flags:?}");
    }
    assert!(!flags.contains(&"fast".to_string()), "{flags:?}");
}

#[test]
fn thirty_two_clients_on_two_shared_limits_admit_exactly_the_tighter_one() {
    let s = Server::start();
    align_to_window(&mut s.conn(), HOUR_MS, 120_000);
    const CLIENTS: usize = 32;
    const CALLS: usize = 20;
    // 100 per hour in a fixed window, 60 in a bucket that does not refill during
    // the test (1 token per 1000 h): exactly 60 calls pass, each taking from both.
    let args = [
        "2", "shared:f", "shared:b", "FIXED", "100", "1h", "BUCKET", "60", "1", "1000h",
    ];
    let start = Arc::new(Barrier::new(CLIENTS));
    let port = s.port;
    let threads: Vec<_> = (0..CLIENTS)
        .map(|_| {
            let start = Arc::clone(&start);
            std::thread::spawn(move || {
                let client = redis::Client::open(format!("redis://127.0.0.1:{port}/")).unwrap();
                let mut c = client.get_connection().unwrap();
                start.wait();
                (0..CALLS)
                    .filter(|_| all(&mut c, &args)[0].allowed == 1)
                    .count()
            })
        })
        .collect();
    let admitted: usize = threads.into_iter().map(|t| t.join().unwrap()).sum();
    assert_eq!(admitted, 60);
    let mut c = s.conn();
    let used: String = cmd("GET").arg("shared:f").query(&mut c).unwrap();
    assert_eq!(used, "60", "no unit taken by a rejected call");
    let tokens: String = cmd("HGET")
        .arg("shared:b")
        .arg("tokens")
        .query(&mut c)
        .unwrap();
    assert_eq!(tokens, "0");
}

#[test]
fn a_rejected_call_keeps_watches_and_an_allowed_one_aborts_them() {
    let s = Server::start();
    let mut c = s.conn();
    let args = [
        "2", "w:a", "w:b", "FIXED", "1", "1h", "GCRA", "1", "1", "1h",
    ];
    all(&mut c, &args);
    let exec = |c: &mut Connection| -> Option<Vec<String>> {
        redis::pipe().atomic().cmd("PING").query(c).unwrap()
    };
    let _: () = cmd("WATCH").arg("w:a").arg("w:b").query(&mut c).unwrap();
    assert_eq!(all(&mut c, &args)[0].allowed, 0);
    assert!(exec(&mut c).is_some(), "a rejected RL.ALL is no write");
    let _: () = cmd("WATCH").arg("w:b").query(&mut c).unwrap();
    assert_eq!(
        all(
            &mut c,
            &["2", "w:a", "w:b", "FIXED", "1", "1h", "GCRA", "1", "1", "1h", "REFUND", "1"]
        )[0]
        .allowed,
        1
    );
    assert!(
        exec(&mut c).is_none(),
        "a refund that wrote aborts the WATCH"
    );
}

#[test]
fn a_replica_without_the_module_and_an_aof_replay_end_identical_after_mixed_all_refund_and_debit_calls(
) {
    let dir = std::env::temp_dir().join(format!("rl-all-aof-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    let opts = Options {
        args: strings(&["--appendonly", "yes", "--appendfsync", "always"]),
        dir: Some(dir.clone()),
        ..Options::default()
    };
    let primary = Server::with(opts.clone());
    let replica = primary.replica(false);
    let mut c = primary.conn();
    align_to_window(&mut c, HOUR_MS, 120_000);
    let policies = every_policy("", 4);
    let mut rng = 0x2545_f491_4f6c_dd1du64;
    let mut next = |n: usize| {
        rng ^= rng << 13;
        rng ^= rng >> 7;
        rng ^= rng << 17;
        (rng % n as u64) as usize
    };
    let mut pipe = redis::pipe();
    for _ in 0..3000 {
        let amount = match next(12) {
            0..=2 => vec!["REFUND".to_string(), (1 + next(3)).to_string()],
            3 => vec!["COST".to_string(), "0".to_string()],
            4 | 5 => vec!["DEBIT".to_string(), (1 + next(3)).to_string()],
            _ => vec!["COST".to_string(), (1 + next(2)).to_string()],
        };
        // DEBIT where every command takes it, else COST 1 (RL.SLIDING takes none).
        let amount_for = |commands: &[&Command]| -> Vec<&str> {
            if amount[0] == "DEBIT" && commands.iter().any(|l| !l.debit()) {
                vec!["COST", "1"]
            } else {
                amount.iter().map(String::as_str).collect()
            }
        };
        if next(2) == 0 {
            // RL.ALL over two or three distinct policies, each on one of 20 keys.
            let n = 2 + next(2);
            let mut chosen: Vec<(String, Vec<String>, &Command)> = Vec::new();
            while chosen.len() < n {
                let (name, words, l) = &policies[next(policies.len())];
                if chosen.iter().all(|(_, _, m)| m.name != l.name) {
                    chosen.push((format!("{name}:{}", next(20)), words.clone(), l));
                }
            }
            let commands: Vec<&Command> = chosen.iter().map(|(_, _, l)| *l).collect();
            let amount = amount_for(&commands);
            pipe.add_command(on_backend(cmd("RL.ALL").arg(line(&chosen, &amount))));
        } else {
            let (name, words, l) = &policies[next(policies.len())];
            pipe.add_command(l.cmd(&format!("{name}:{}", next(20)), &words[1..], None))
                .arg(amount_for(&[l]));
        }
    }
    let _: Vec<Value> = pipe.query(&mut c).expect("every call succeeds");
    primary.sync(&replica);
    let keys: Vec<String> = cmd("KEYS").arg("*").query(&mut c).unwrap();
    assert!(keys.len() > 50, "{keys:?}");
    let want: Vec<_> = keys
        .iter()
        .map(|k| snapshot(&mut c, k.as_bytes()))
        .collect();
    let mut rc = replica.conn();
    let got: Vec<_> = keys
        .iter()
        .map(|k| snapshot(&mut rc, k.as_bytes()))
        .collect();
    assert_eq!(
        got, want,
        "the replica without the module holds the same keys"
    );
    drop(rc);
    drop(replica);
    primary.shutdown(false);
    let replayed = Server::with(Options {
        without_module: true,
        ..opts
    });
    let mut r = replayed.conn();
    let got: Vec<_> = keys
        .iter()
        .map(|k| snapshot(&mut r, k.as_bytes()))
        .collect();
    assert_eq!(got, want, "an AOF replayed without the module");
    let replayed_keys: Vec<String> = cmd("KEYS").arg("*").query(&mut r).unwrap();
    assert_eq!(replayed_keys.len(), keys.len());
    drop(r);
    drop(replayed);
    let _ = std::fs::remove_dir_all(&dir);
}

// ---------------------------------------------------------------- leases

/// The leases stored at `key`, by end.
fn lease_ids(c: &mut Connection, key: &str) -> Vec<String> {
    cmd("ZRANGE")
        .arg(&[key, "0", "-1"])
        .query(c)
        .expect("ZRANGE")
}

#[test]
fn an_acquire_policy_beside_a_rate_limit_is_all_or_nothing_both_ways() {
    let s = Server::start();
    let mut c = s.conn();
    align_to_window(&mut c, HOUR_MS, 60_000);
    // "3 per hour and at most 2 at once".
    let call = |id: &str| -> Vec<String> {
        strings(&[
            "2", "conc", "rate", "ACQUIRE", "2", "1h", id, "FIXED", "3", "1h",
        ])
    };
    let r = all(&mut c, &strs(&call("a")));
    assert_eq!(fields(&r[1]), (1, 2, 1, 0, HOUR_MS), "{r:?}");
    assert_eq!((r[2].allowed, r[2].remaining), (1, 2), "{r:?}");
    assert_eq!(
        (r[0].allowed, r[0].limit, r[0].remaining),
        (1, 2, 1),
        "{r:?}"
    );
    assert_eq!(all(&mut c, &strs(&call("b")))[0].allowed, 1);

    // The lease set is full: no rate unit is taken.
    let before = state(&mut c, &["conc", "rate"]);
    let r = all(&mut c, &strs(&call("c")));
    assert_eq!(state(&mut c, &["conc", "rate"]), before, "nothing written");
    let (lease, rate) = (&r[1], &r[2]);
    assert_eq!(
        (lease.allowed, lease.limit, lease.remaining),
        (0, 2, 0),
        "{r:?}"
    );
    assert!(
        lease.retry_after > 0 && lease.retry_after <= HOUR_MS,
        "{r:?}"
    );
    // The rate limit's own verdict and its real state, nothing taken: 1 left.
    assert_eq!(
        (rate.allowed, rate.remaining, rate.retry_after),
        (1, 1, 0),
        "{r:?}"
    );
    assert_eq!(
        (r[0].allowed, r[0].retry_after),
        (0, lease.retry_after),
        "{r:?}"
    );

    // A renewal of a held lease is allowed: it takes the last rate unit.
    assert_eq!(all(&mut c, &strs(&call("a")))[0].allowed, 1);
    // The rate limit is used up: releasing a slot does not help, and no lease is taken.
    assert_eq!(rl_release(&mut c, "conc", "b"), 1);
    let before = state(&mut c, &["conc", "rate"]);
    let r = all(&mut c, &strs(&call("d")));
    assert_eq!(state(&mut c, &["conc", "rate"]), before, "nothing written");
    assert_eq!(lease_ids(&mut c, "conc"), ["a"]);
    assert_eq!(
        (r[1].allowed, r[1].remaining, r[1].retry_after),
        (1, 1, 0),
        "{r:?}"
    );
    assert_eq!((r[2].allowed, r[2].remaining), (0, 0), "{r:?}");
    assert_eq!(
        (r[0].allowed, r[0].retry_after),
        (0, r[2].retry_after),
        "{r:?}"
    );
}

#[test]
fn an_acquire_policy_counts_one_lease_whatever_the_cost_and_takes_no_refund() {
    let s = Server::start();
    let mut c = s.conn();
    align_to_window(&mut c, HOUR_MS, 60_000);
    let line = |id: &str, extra: &[&str]| -> Vec<String> {
        let mut l = strings(&[
            "2", "conc", "rate", "ACQUIRE", "3", "1h", id, "FIXED", "10", "1h",
        ]);
        l.extend(strings(extra));
        l
    };
    let r = all(&mut c, &strs(&line("a", &["COST", "4"])));
    assert_eq!((r[1].remaining, r[2].remaining), (2, 6), "{r:?}");
    // COST 0 inspects every key: no lease either.
    let before = state(&mut c, &["conc", "rate"]);
    let r = all(&mut c, &strs(&line("b", &["COST", "0"])));
    assert_eq!(fields(&r[1]).0, 1, "{r:?}");
    assert_eq!((r[1].remaining, r[2].remaining), (2, 6), "{r:?}");
    assert_eq!(
        state(&mut c, &["conc", "rate"]),
        before,
        "COST 0 writes nothing"
    );
    let err = try_all(&mut c, &strs(&line("b", &["REFUND", "1"]))).expect_err("REFUND");
    assert_eq!(
        err.detail(),
        Some("syntax error: REFUND does not apply to ACQUIRE: end a lease with RL.RELEASE")
    );
    assert_eq!(
        state(&mut c, &["conc", "rate"]),
        before,
        "an error writes nothing"
    );
    let err = try_all(&mut c, &["1", "conc", "ACQUIRE", "3", "1h"]).expect_err("short");
    assert_eq!(
        err.detail(),
        Some("syntax error: policy ACQUIRE takes limit ttl id")
    );
}

fn rl_release(c: &mut Connection, key: &str, id: &str) -> i64 {
    command_of(&["RL.RELEASE", key, id])
        .query(c)
        .expect("RL.RELEASE")
}
