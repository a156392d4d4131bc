//! RL.ACQUIRE and RL.RELEASE against real redis-servers, both backends.
//!
//! The rules (docs/commands.md#rlacquire-and-rlrelease): at most
//! `limit` live leases, each named by its id and ending by itself at now + ttl;
//! ACQUIRE of a live id renews it; RELEASE of a live id frees its slot (1), of
//! anything else changes nothing (0). The key is a sorted set (member = id, score
//! = end in ms) expiring at its latest lease's end. Cross-cutting rules for leases
//! live beside the other commands' (replication.rs, keyspace_events.rs, cluster.rs,
//! acl.rs, all.rs); this file holds what is specific to leases.

use crate::common::*;

use std::sync::atomic::{AtomicI64, Ordering};
use std::sync::{Arc, Barrier};

/// A TIME reply: seconds and microseconds.
type Time = (i64, i64);

fn acquire(c: &mut Connection, key: &str, limit: &str, ttl: &str, id: &str) -> Reply {
    rl(c, &["RL.ACQUIRE", key, limit, ttl, id])
}

fn fields(r: Reply) -> [i64; 5] {
    [
        r.allowed,
        r.limit,
        r.remaining,
        r.retry_after,
        r.reset_after,
    ]
}

fn release(c: &mut Connection, key: &str, id: impl AsRef<[u8]>) -> i64 {
    command_of(&[b"RL.RELEASE".as_slice(), key.as_bytes(), id.as_ref()])
        .query(c)
        .unwrap_or_else(|e| panic!("RL.RELEASE {key}: {e}"))
}

/// The leases stored at `key`: (id, end), by end.
fn leases(c: &mut Connection, key: &str) -> Vec<(String, i64)> {
    cmd("ZRANGE")
        .arg(&[key, "0", "-1", "WITHSCORES"])
        .query(c)
        .expect("ZRANGE")
}

fn zadd(c: &mut Connection, key: &str, end: i64, id: &str) {
    let _: i64 = cmd("ZADD")
        .arg(key)
        .arg(end)
        .arg(id)
        .query(c)
        .expect("ZADD");
}

/// Every string in a reply, depth first, lower case.
fn words(v: &Value) -> Vec<String> {
    match v {
        Value::BulkString(b) => vec![String::from_utf8_lossy(b).to_lowercase()],
        Value::SimpleString(s) => vec![s.to_lowercase()],
        Value::Array(items) | Value::Set(items) => items.iter().flat_map(words).collect(),
        Value::Map(pairs) => pairs
            .iter()
            .flat_map(|(k, v)| [words(k), words(v)].concat())
            .collect(),
        _ => Vec::new(),
    }
}

fn rdb_changes(c: &mut Connection) -> i64 {
    info_field(c, "persistence", "rdb_changes_since_last_save")
}

/// Runs `args` in a MULTI whose TIME before and after both read `at` (so the call
/// ran in that very ms), after `setup` returned `at` from the server time it is
/// given; retries until one attempt lands. The reply and the leases after.
fn at_exact_ms(
    c: &mut Connection,
    setup: &mut dyn FnMut(&mut Connection, i64) -> i64,
    args: &[&str],
) -> (Reply, Vec<(String, i64)>) {
    let key = args[1];
    wait_for(PATIENCE, "a call that lands in the chosen ms", || {
        let now = server_ms(c);
        let at = setup(c, now);
        while server_ms(c) < at {}
        let mut p = redis::pipe();
        p.atomic()
            .cmd("TIME")
            .add_command(command_of(args))
            .cmd("TIME")
            .cmd("ZRANGE")
            .arg(&[key, "0", "-1", "WITHSCORES"]);
        let (t0, reply, t1, after): (Time, Vec<i64>, Time, Vec<(String, i64)>) =
            p.query(c).expect("MULTI");
        (ms_of(t0) == at && ms_of(t1) == at).then(|| (Reply::of(&reply), after))
    })
}

#[test]
fn spec_vector_limit_2_ttl_10s() {
    let s = Server::start();
    let mut c = s.conn();
    // The reference's times scaled by 1/10 (ttl 1 s; 400 and 500 ms): the same steps.
    let mut p = redis::pipe();
    p.atomic().cmd("TIME");
    for id in ["a", "b", "c"] {
        p.add_command(command_of(&["RL.ACQUIRE", "k", "2", "1000ms", id]));
    }
    p.cmd("TIME");
    let (t0, a, b, cc, t1): (Time, Vec<i64>, Vec<i64>, Vec<i64>, Time) =
        p.query(&mut c).expect("MULTI");
    let (t0, spread) = (ms_of(t0), ms_of(t1) - ms_of(t0));
    assert_eq!(a, [1, 2, 1, 0, 1000]);
    assert_eq!(b, [1, 2, 0, 0, 1000]);
    let [allowed, limit, remaining, retry, reset] = cc[..] else {
        panic!("{cc:?}")
    };
    assert_eq!((allowed, limit, remaining), (0, 2, 0), "{cc:?}");
    assert!((1000 - spread..=1000).contains(&retry), "{cc:?}");
    assert!((retry..=1000).contains(&reset), "{cc:?}");
    wait_until(&mut c, t0 + 400);
    // Renewal: a's new end is the latest.
    assert_eq!(
        fields(acquire(&mut c, "k", "2", "1000ms", "a")),
        [1, 2, 0, 0, 1000]
    );
    assert_eq!(release(&mut c, "k", "b"), 1);
    wait_until(&mut c, t0 + 500);
    assert_eq!(
        fields(acquire(&mut c, "k", "2", "1000ms", "c")),
        [1, 2, 0, 0, 1000]
    );
    assert_eq!(release(&mut c, "k", "b"), 0);
    let ids: Vec<String> = leases(&mut c, "k").into_iter().map(|(id, _)| id).collect();
    assert_eq!(ids, ["a", "c"]);
    // The key expires at the latest lease's end.
    let latest = leases(&mut c, "k")[1].1;
    assert_eq!(pexpiretime(&mut c, "k"), latest);
}

#[test]
fn thirty_two_clients_racing_never_hold_more_than_the_limit() {
    const LIMIT: i64 = 4;
    const CLIENTS: usize = 32;
    const ROUNDS: usize = 40;
    let s = Arc::new(Server::start());
    // Leases this test holds: counted up after a grant arrives and down before the
    // release is sent, so never more than the server holds.
    let held = Arc::new(AtomicI64::new(0));
    let peak = Arc::new(AtomicI64::new(0));
    let start = Arc::new(Barrier::new(CLIENTS));
    let workers: Vec<_> = (0..CLIENTS)
        .map(|i| {
            let (s, held, peak, start) = (s.clone(), held.clone(), peak.clone(), start.clone());
            std::thread::spawn(move || {
                let mut c = connect(&s);
                let id = format!("client-{i}");
                let mut granted = 0;
                start.wait();
                for _ in 0..ROUNDS {
                    let r = acquire(&mut c, "pool", "4", "1h", &id);
                    assert!((0..LIMIT).contains(&r.remaining), "{r:?}");
                    if r.allowed == 0 {
                        assert!(r.retry_after > 0, "{r:?}");
                        continue;
                    }
                    granted += 1;
                    let now = held.fetch_add(1, Ordering::SeqCst) + 1;
                    peak.fetch_max(now, Ordering::SeqCst);
                    assert!(now <= LIMIT, "{now} leases held at once");
                    let stored: i64 = cmd("ZCARD").arg("pool").query(&mut c).expect("ZCARD");
                    assert!(stored <= LIMIT, "{stored} leases stored");
                    held.fetch_sub(1, Ordering::SeqCst);
                    assert_eq!(release(&mut c, "pool", &id), 1, "{id}");
                }
                granted
            })
        })
        .collect();
    let granted: usize = workers.into_iter().map(|w| w.join().expect("worker")).sum();
    assert!(granted >= ROUNDS, "only {granted} grants");
    assert!(peak.load(Ordering::SeqCst) >= 1);
    let mut c = s.conn();
    assert!(!exists(&mut c, "pool"), "the last release deleted the key");
}

#[test]
fn a_holder_that_never_releases_frees_its_slot_at_its_ttl() {
    let s = Server::start();
    let mut c = s.conn();
    assert_eq!(acquire(&mut c, "k", "1", "300ms", "crashed").allowed, 1);
    let end = leases(&mut c, "k")[0].1;
    assert_eq!(pexpiretime(&mut c, "k"), end);
    let r = acquire(&mut c, "k", "1", "300ms", "next");
    assert_eq!(r.allowed, 0);
    assert!((1..=300).contains(&r.retry_after), "{r:?}");
    let granted_by = wait_for(PATIENCE, "the slot to free", || {
        let allowed = acquire(&mut c, "k", "1", "300ms", "next").allowed == 1;
        allowed.then(|| server_ms(&mut c))
    });
    assert!(
        granted_by >= end,
        "granted by {granted_by}, before the lease ended at {end}"
    );
    let now = leases(&mut c, "k");
    assert_eq!(now.len(), 1, "the expired lease was removed: {now:?}");
    assert_eq!(now[0].0, "next");
    // Nobody renews: the key vanishes by itself.
    wait_for(PATIENCE, "the idle key to expire", || {
        (!exists(&mut c, "k")).then_some(())
    });
}

#[test]
fn a_renewal_in_the_last_ms_keeps_the_slot_and_one_ms_later_it_is_free() {
    let s = Server::start();
    let mut c = s.conn();
    // Lease a ends at `end`; a renewal at end - 1 keeps it, one more lease is refused.
    let mut end = 0;
    let (r, after) = at_exact_ms(
        &mut c,
        &mut |c, now| {
            end = now + 30;
            let _: i64 = cmd("DEL").arg("k").query(c).expect("DEL");
            zadd(c, "k", end, "a");
            end - 1
        },
        &["RL.ACQUIRE", "k", "1", "10s", "a"],
    );
    assert_eq!(fields(r), [1, 1, 0, 0, 10_000]);
    assert_eq!(after, [("a".to_string(), end - 1 + 10_000)]);
    // At its end exactly, the lease no longer holds the slot.
    let (r, after) = at_exact_ms(
        &mut c,
        &mut |c, now| {
            end = now + 30;
            let _: i64 = cmd("DEL").arg("k").query(c).expect("DEL");
            zadd(c, "k", end, "a");
            end
        },
        &["RL.ACQUIRE", "k", "1", "10s", "b"],
    );
    assert_eq!(fields(r), [1, 1, 0, 0, 10_000]);
    assert_eq!(after, [("b".to_string(), end + 10_000)], "a was removed");
}

#[test]
fn release_of_an_unknown_expired_or_absent_id_changes_nothing() {
    let s = Server::start();
    let mut c = s.conn();
    assert_eq!(release(&mut c, "absent", "a"), 0);
    assert!(!exists(&mut c, "absent"));
    let now = server_ms(&mut c);
    zadd(&mut c, "k", now - 1000, "expired");
    assert_eq!(acquire(&mut c, "k", "3", "1h", "live").allowed, 1);
    // The allowed call removed the expired lease; put one back to release.
    zadd(&mut c, "k", now - 1000, "expired");
    let before = snapshot(&mut c, b"k");
    let changes = rdb_changes(&mut c);
    for id in ["expired", "unknown", "LIVE", "live "] {
        assert_eq!(release(&mut c, "k", id), 0, "{id}");
    }
    assert_eq!(snapshot(&mut c, b"k"), before);
    assert_eq!(rdb_changes(&mut c), changes, "nothing written");
    // The live lease is released; the expired one does not keep the key alive.
    assert_eq!(release(&mut c, "k", "live"), 1);
    assert!(!exists(&mut c, "k"), "the last live lease deleted the key");
}

#[test]
fn a_release_moves_the_expiry_to_the_latest_lease_left() {
    let s = Server::start();
    let mut c = s.conn();
    acquire(&mut c, "k", "3", "1h", "short");
    acquire(&mut c, "k", "3", "2h", "long");
    let ends: Vec<i64> = leases(&mut c, "k").iter().map(|l| l.1).collect();
    assert_eq!(pexpiretime(&mut c, "k"), ends[1]);
    assert_eq!(release(&mut c, "k", "long"), 1);
    assert_eq!(pexpiretime(&mut c, "k"), ends[0]);
    // Binary-safe ids, up to 256 bytes.
    let id = [b'\0', b'\xff', b' ', b'\n'].repeat(64);
    let r: Vec<i64> = command_of(&[b"RL.ACQUIRE".as_slice(), b"k", b"3", b"1h", &id])
        .query(&mut c)
        .expect("binary id");
    assert_eq!(r[..3], [1, 3, 1]);
    assert_eq!(release(&mut c, "k", &id), 1);
    assert_eq!(release(&mut c, "k", &id), 0);
}

#[test]
fn bad_inputs_are_clear_errors_that_change_nothing() {
    let s = Server::start();
    let mut c = s.conn();
    acquire(&mut c, "k", "2", "1h", "a");
    let before = snapshot(&mut c, b"k");
    let changes = rdb_changes(&mut c);
    let long = "x".repeat(257);
    let limit = "ERR limit must be an integer from 1 to 100000 for RL.ACQUIRE, which keeps one entry per lease (rl.sliding-max-limit)";
    let ttl = "ERR ttl must be a duration from 1ms to 3650d: an integer with an optional unit ms, s, m, h or d (a bare integer means seconds)";
    let id = "ERR id must be 1 to 256 bytes";
    let cases: &[(&[&str], &str)] = &[
        (&["RL.ACQUIRE", "k", "0", "1h", "b"], limit),
        (&["RL.ACQUIRE", "k", "100001", "1h", "b"], limit),
        (&["RL.ACQUIRE", "k", "-1", "1h", "b"], limit),
        (&["RL.ACQUIRE", "k", "x", "1h", "b"], limit),
        (&["RL.ACQUIRE", "k", "2", "0", "b"], ttl),
        (&["RL.ACQUIRE", "k", "2", "0ms", "b"], ttl),
        (&["RL.ACQUIRE", "k", "2", "3651d", "b"], ttl),
        (&["RL.ACQUIRE", "k", "2", "1h", ""], id),
        (&["RL.ACQUIRE", "k", "2", "1h", &long], id),
        (&["RL.RELEASE", "k", ""], id),
        (&["RL.RELEASE", "k", &long], id),
    ];
    for (args, want) in cases {
        let bytes: Vec<&[u8]> = args.iter().map(|a| a.as_bytes()).collect();
        assert_eq!(&error_of(&mut c, &bytes), want, "{args:?}");
    }
    // No COST, no REFUND, no DELAY: an error naming the option, whatever follows
    // it (the parameters are not read).
    let options: &[(&[&str], &str)] = &[
        (
            &["RL.ACQUIRE", "k", "2", "1h", "b", "COST", "1"],
            "ERR syntax error: COST does not apply to RL.ACQUIRE, which takes no options",
        ),
        (
            &["RL.ACQUIRE", "k", "2", "1h", "b", "cost"],
            "ERR syntax error: COST does not apply to RL.ACQUIRE, which takes no options",
        ),
        (
            &["RL.ACQUIRE", "k", "0", "1h", "b", "COST", "0"],
            "ERR syntax error: COST does not apply to RL.ACQUIRE, which takes no options",
        ),
        (
            &["RL.ACQUIRE", "k", "2", "1h", "b", "REFUND", "1"],
            "ERR syntax error: REFUND does not apply to RL.ACQUIRE, which takes no options",
        ),
        (
            &["RL.ACQUIRE", "k", "2", "1h", "b", "Delay", "1s"],
            "ERR syntax error: DELAY does not apply to RL.ACQUIRE, which takes no options",
        ),
        (
            &["RL.RELEASE", "k", "a", "COST", "1"],
            "ERR syntax error: COST does not apply to RL.RELEASE, which takes no options",
        ),
        (
            &["RL.RELEASE", "k", "a", "refund", "1"],
            "ERR syntax error: REFUND does not apply to RL.RELEASE, which takes no options",
        ),
    ];
    for (args, want) in options {
        let bytes: Vec<&[u8]> = args.iter().map(|a| a.as_bytes()).collect();
        assert_eq!(&error_of(&mut c, &bytes), want, "{args:?}");
    }
    // Missing or other extra arguments: arity errors.
    for args in [
        &["RL.ACQUIRE", "k", "2", "1h", "b", "x"][..],
        &["RL.ACQUIRE", "k", "2", "1h", "b", "x", "COST", "1"],
        &["RL.ACQUIRE", "k", "2", "1h"],
        &["RL.RELEASE", "k"],
        &["RL.RELEASE", "k", "a", "b"],
    ] {
        let bytes: Vec<&[u8]> = args.iter().map(|a| a.as_bytes()).collect();
        let e = error_of(&mut c, &bytes);
        assert_eq!(e, arity_error(args[0]), "{args:?}");
    }
    assert_eq!(snapshot(&mut c, b"k"), before);
    assert_eq!(rdb_changes(&mut c), changes);
}

#[test]
fn other_types_and_foreign_sorted_sets_are_refused_and_left_alone() {
    let s = Server::start();
    let mut c = s.conn();
    let holds = "ERR key does not hold an RL.ACQUIRE lease set (a sorted set of lease ends in ms)";
    let setups = ACQUIRE.wrong_types.iter().map(|s| {
        (
            s,
            "WRONGTYPE Operation against a key holding the wrong kind of value",
        )
    });
    let setups = setups.chain(ACQUIRE.foreign.iter().map(|s| (s, holds)));
    for (setup, want) in setups {
        let _: i64 = cmd("DEL").arg("k").query(&mut c).expect("DEL");
        let _: Value = cmd(setup[0]).arg(&setup[1..]).query(&mut c).expect("setup");
        let before = snapshot(&mut c, b"k");
        for args in [
            &["RL.ACQUIRE", "k", "2", "1h", "a"][..],
            &["RL.RELEASE", "k", "a"],
        ] {
            let bytes: Vec<&[u8]> = args.iter().map(|a| a.as_bytes()).collect();
            assert_eq!(error_of(&mut c, &bytes), want, "{setup:?} {args:?}");
        }
        assert_eq!(snapshot(&mut c, b"k"), before, "{setup:?}");
    }
    // Whole ms scores are leases, whoever wrote them (an RL.SLIDING log too).
    let _: i64 = cmd("DEL").arg("k").query(&mut c).expect("DEL");
    let far = server_ms(&mut c) + 3_600_000;
    zadd(&mut c, "k", far, "by-hand");
    assert_eq!(fields(acquire(&mut c, "k", "1", "1h", "x"))[..3], [0, 1, 0]);
    assert_eq!(release(&mut c, "k", "by-hand"), 1);
}

#[test]
fn rejected_calls_and_errors_write_nothing_and_a_watch_survives_them() {
    let s = Server::start();
    let mut c = s.conn();
    let mut watcher = s.conn();
    acquire(&mut c, "k", "1", "1h", "a");
    let changes = rdb_changes(&mut c);
    let _: () = cmd("WATCH").arg("k").query(&mut watcher).expect("WATCH");
    assert_eq!(acquire(&mut c, "k", "1", "1h", "b").allowed, 0);
    assert_eq!(release(&mut c, "k", "b"), 0);
    let _ = error_of(&mut c, &[b"RL.ACQUIRE", b"k", b"0", b"1h", b"b"]);
    assert_eq!(rdb_changes(&mut c), changes, "nothing written");
    let exec = |w: &mut Connection| -> Option<Vec<String>> {
        redis::pipe().atomic().cmd("PING").query(w).expect("EXEC")
    };
    assert_eq!(
        exec(&mut watcher),
        Some(vec!["PONG".to_string()]),
        "WATCH survives"
    );
    // An allowed call (here a release) does touch the key.
    let _: () = cmd("WATCH").arg("k").query(&mut watcher).expect("WATCH");
    assert_eq!(release(&mut c, "k", "a"), 1);
    assert_eq!(exec(&mut watcher), None, "WATCH aborts after a write");
    assert!(rdb_changes(&mut c) > changes);
}

#[test]
fn release_works_at_maxmemory_where_acquire_is_refused() {
    let s = Server::start();
    let mut c = s.conn();
    acquire(&mut c, "k", "2", "1h", "a");
    acquire(&mut c, "k", "2", "1h", "b");
    config_set(&mut c, "maxmemory-policy", "noeviction");
    config_set(&mut c, "maxmemory", 1);
    let err = error_of(&mut c, &[b"RL.ACQUIRE", b"k", b"3", b"1h", b"c"]);
    assert!(err.starts_with("OOM"), "{err}");
    assert_eq!(release(&mut c, "k", "a"), 1);
    assert_eq!(release(&mut c, "k", "b"), 1);
    assert!(!exists(&mut c, "k"));
}

#[test]
fn info_counts_grants_rejections_releases_and_errors() {
    if module_only("INFO counters are the module's") {
        return;
    }
    let s = Server::start();
    let mut c = s.conn();
    acquire(&mut c, "k", "1", "1h", "a");
    acquire(&mut c, "k", "1", "1h", "a");
    for _ in 0..3 {
        acquire(&mut c, "k", "1", "1h", "b");
    }
    let _ = error_of(&mut c, &[b"RL.ACQUIRE", b"k", b"1", b"1h", b""]);
    assert_eq!(release(&mut c, "k", "zz"), 0);
    assert_eq!(release(&mut c, "k", "a"), 1);
    // (A wrong argument count is the server's error: it never reaches the module.)
    for _ in 0..4 {
        let _ = error_of(&mut c, &[b"RL.RELEASE", b"k", b""]);
    }
    for (field, want) in [
        ("rl_acquire_allowed", 2),
        ("rl_acquire_rejected", 3),
        ("rl_acquire_errors", 1),
        ("rl_release_allowed", 1),
        ("rl_release_rejected", 1),
        ("rl_release_errors", 4),
    ] {
        assert_eq!(info_field(&mut c, "rl", field), want, "{field}");
    }
}

#[test]
fn command_info_and_docs_describe_both_commands() {
    if module_only("COMMAND DOCS describe the module's commands") {
        return;
    }
    let s = Server::start();
    let mut c = s.conn();
    let info: Vec<Value> = cmd("COMMAND")
        .arg(&["INFO", "RL.ACQUIRE", "RL.RELEASE"])
        .query(&mut c)
        .expect("COMMAND INFO");
    // In order: name, arity, flags, first key, last key, step.
    // At least 5 and 3 arguments: more are refused by the command itself, which
    // names an option given to it (no COST, no REFUND).
    let expected = [
        (-5, &["write", "denyoom"][..], "fast"),
        (-3, &["write", "fast"][..], "denyoom"),
    ];
    for (command, (arity, flags, not)) in info.iter().zip(expected) {
        let Value::Array(fields) = command else {
            panic!("{command:?}")
        };
        assert_eq!(fields[1], Value::Int(arity), "{command:?}");
        let f = words(&fields[2]);
        for flag in flags {
            assert!(f.iter().any(|w| w == flag), "{flag} in {f:?}");
        }
        assert!(!f.iter().any(|w| w == not), "no {not} in {f:?}");
        assert_eq!(fields[3..6], [Value::Int(1), Value::Int(1), Value::Int(1)]);
    }
    let docs: Value = cmd("COMMAND")
        .arg(&["DOCS", "RL.ACQUIRE"])
        .query(&mut c)
        .expect("COMMAND DOCS");
    let docs = words(&docs);
    // The arguments key limit ttl id, and no COST / REFUND.
    let names: Vec<&String> = docs
        .windows(2)
        .filter(|w| w[0] == "name")
        .map(|w| &w[1])
        .collect();
    assert_eq!(names, ["key", "limit", "ttl", "id"], "{docs:?}");
    assert!(docs.iter().any(|w| w.contains("lease")), "{docs:?}");
}

#[test]
fn a_panic_inside_either_command_is_an_error_reply_and_the_server_lives_on() {
    if module_only("panic injection is a testing build of the module") {
        return;
    }
    let mut s = Server::with(Options {
        module: Some(testing_module_path()),
        ..Options::default()
    });
    let mut c = s.conn();
    for args in [
        &[&b"RL.ACQUIRE"[..], b"__rl_panic__", b"2", b"1h", b"a"][..],
        &[b"RL.RELEASE", b"__rl_panic__", b"a"],
    ] {
        let e = error_of(&mut c, args);
        assert!(
            e.starts_with("ERR ") && e.contains("internal error"),
            "{e} (is {} a build with --features testing? set RL_TESTING_MODULE)",
            testing_module_path().display()
        );
    }
    assert!(!exists(&mut c, "__rl_panic__"));
    assert_eq!(acquire(&mut c, "after", "2", "1h", "a").allowed, 1);
    assert!(s.alive(), "redis-server died:\n{}", s.log());
}

#[test]
fn both_commands_declare_their_key_and_run_in_transactions_scripts_and_not_on_replicas() {
    let primary = Server::start();
    let mut c = primary.conn();
    if !is_library() {
        for line in [
            &["RL.ACQUIRE", "k", "2", "1h", "a"][..],
            &["RL.RELEASE", "k", "a"],
        ] {
            let keys: Vec<String> = cmd("COMMAND")
                .arg("GETKEYS")
                .arg(line)
                .query(&mut c)
                .unwrap();
            assert_eq!(keys, ["k"], "{line:?}");
        }
        // From Lua, as any write command (a script cannot FCALL: module only).
        let script = "return {redis.call('RL.ACQUIRE', KEYS[1], '2', '1h', 'a'), \
                      redis.call('RL.RELEASE', KEYS[1], 'a')}";
        let (granted, released): (Vec<i64>, i64) = cmd("EVAL")
            .arg(script)
            .arg(1)
            .arg("lua")
            .query(&mut c)
            .expect("EVAL");
        assert_eq!((granted[0], released), (1, 1));
    }
    // In MULTI/EXEC: a lease taken and given back in one transaction.
    let (granted, released): (Vec<i64>, i64) = redis::pipe()
        .atomic()
        .add_command(command_of(&["RL.ACQUIRE", "tx", "1", "1h", "a"]))
        .add_command(command_of(&["RL.RELEASE", "tx", "a"]))
        .query(&mut c)
        .expect("MULTI");
    assert_eq!((granted[0], released), (1, 1));
    assert!(!exists(&mut c, "tx"));
    // A replica refuses both, like any write.
    let replica = primary.replica(true);
    let mut r = replica.conn();
    for line in [
        &[&b"RL.ACQUIRE"[..], b"k", b"2", b"1h", b"a"][..],
        &[b"RL.RELEASE", b"k", b"a"],
    ] {
        let e = error_of(&mut r, line);
        assert!(e.starts_with("READONLY"), "{e}");
    }
}
