//! A write the server refuses: the caller gets an error, and the replicas end with
//! exactly what the primary holds (nothing that failed is propagated).
//!
//! No real refusal can be provoked on a server: every write step the module makes
//! can only fail for a key of another type, a key not open for writing or a NaN
//! score, and the module rules those out before writing. So these tests use the
//! `testing` feature's fault injection: a key named `__rl_fail_<step>__…` makes that
//! step fail as if the server had refused it (see `src/storage/mod.rs`). Steps that
//! fail before anything changed must propagate nothing; a step failing after a
//! change must leave primary and replica identical.

use crate::common::*;

fn offset(c: &mut Connection) -> i64 {
    info_field(c, "replication", "master_repl_offset")
}

fn assert_write_failed(c: &mut Connection, args: &[&str]) {
    let args: Vec<&[u8]> = args.iter().map(|a| a.as_bytes()).collect();
    let e = error_of(c, &args);
    assert!(
        e.starts_with("ERR could not update the key ("),
        "{args:?} replied {e}"
    );
}

/// Primary and replica hold the same value and absolute expiry for `key`.
fn assert_same(primary: &Server, replica: &Server, key: &str) -> (Option<Vec<u8>>, i64) {
    primary.sync(replica);
    let on_primary = snapshot(&mut primary.conn(), key.as_bytes());
    let on_replica = snapshot(&mut replica.conn(), key.as_bytes());
    assert_eq!(on_primary, on_replica, "{key}: primary vs replica");
    on_primary
}

/// A primary running the `testing` build (its fault injection fails a chosen
/// write step for keys named `__rl_fail_<step>__…`) and a replica without RL.
fn setup() -> (Server, Server) {
    let primary = Server::with(Options {
        module: Some(testing_module_path()),
        ..Options::default()
    });
    let replica = primary.replica(false);
    (primary, replica)
}

fn query(c: &mut Connection, args: &[&str]) {
    let _: Value = command_of(args)
        .query(c)
        .unwrap_or_else(|e| panic!("{args:?}: {e}"));
}

#[test]
fn a_refused_first_write_changes_nothing_and_propagates_nothing() {
    if module_only("fault injection is a testing build of the module") {
        return;
    }
    let (primary, replica) = setup();
    let mut c = connect(&primary);
    let at = (server_ms(&mut c) + 3_600_000).to_string();
    let fixed = "__rl_fail_resize__:f";
    query(&mut c, &["SET", fixed, "2", "PXAT", &at]);
    let bucket = "__rl_fail_hset__:b";
    query(&mut c, &["HSET", bucket, "tokens", "3", "ts", "1"]);
    query(&mut c, &["PEXPIREAT", bucket, &at]);
    let before_fixed = assert_same(&primary, &replica, fixed);
    let before_bucket = assert_same(&primary, &replica, bucket);
    let before = offset(&mut c);

    assert_write_failed(&mut c, &["RL.FIXED", fixed, "3", "1h"]);
    assert_write_failed(&mut c, &["RL.BUCKET", bucket, "5", "1", "1h"]);
    assert_write_failed(
        &mut c,
        &["RL.BUCKET", "__rl_fail_hset__:new", "5", "1", "1h"],
    );

    assert_eq!(offset(&mut c), before, "nothing propagated");
    assert_eq!(assert_same(&primary, &replica, fixed), before_fixed);
    assert_eq!(assert_same(&primary, &replica, bucket), before_bucket);
    assert!(!exists(&mut c, "__rl_fail_hset__:new"));
}

#[test]
fn a_failure_after_a_record_or_bucket_changed_deletes_it_on_primary_and_replicas() {
    if module_only("fault injection is a testing build of the module") {
        return;
    }
    let (primary, replica) = setup();
    let mut c = connect(&primary);
    let at = (server_ms(&mut c) + 3_600_000).to_string();
    let fixed = "__rl_fail_expiry__:f";
    query(&mut c, &["SET", fixed, "2", "PXAT", &at]);
    let bucket = "__rl_fail_expiry__:b";
    query(&mut c, &["HSET", bucket, "tokens", "3", "ts", "1"]);
    query(&mut c, &["PEXPIREAT", bucket, &at]);
    assert!(assert_same(&primary, &replica, fixed).0.is_some());
    assert!(assert_same(&primary, &replica, bucket).0.is_some());

    assert_write_failed(&mut c, &["RL.FIXED", fixed, "3", "1h"]);
    assert_write_failed(&mut c, &["RL.BUCKET", bucket, "5", "1", "1h"]);

    // The value was written but its expiry refused: the key is gone everywhere
    // (the replica had the old state: the DEL reached it).
    assert_eq!(assert_same(&primary, &replica, fixed), (None, -2));
    assert_eq!(assert_same(&primary, &replica, bucket), (None, -2));
}

fn members(c: &mut Connection, key: &str) -> Vec<(String, i64)> {
    cmd("ZRANGE")
        .arg(key)
        .arg(0)
        .arg(-1)
        .arg("WITHSCORES")
        .query(c)
        .expect("ZRANGE")
}

#[test]
fn a_sliding_log_failing_half_way_propagates_exactly_what_was_written() {
    if module_only("fault injection is a testing build of the module") {
        return;
    }
    let (primary, replica) = setup();
    let mut c = connect(&primary);
    let now = server_ms(&mut c);
    let later = (now + 3_600_000).to_string();
    let old = |ago: i64| (now - ago).to_string();

    // Adding fails at the second of three new units, after the trim and one unit.
    let add = "__rl_fail_add__:s";
    query(&mut c, &["ZADD", add, &old(10_000), "0", &old(1_000), "1"]);
    query(&mut c, &["PEXPIREAT", add, &later]);
    // Removing fails at the second of three units that left the window.
    let remove = "__rl_fail_remove__:s";
    query(
        &mut c,
        &[
            "ZADD",
            remove,
            &old(10_000),
            "0",
            &old(9_000),
            "1",
            &old(8_000),
            "2",
            &old(1_000),
            "3",
        ],
    );
    query(&mut c, &["PEXPIREAT", remove, &later]);
    assert_same(&primary, &replica, add);
    let remove_before = assert_same(&primary, &replica, remove);

    assert_write_failed(&mut c, &["RL.SLIDING", add, "10", "5s", "COST", "3"]);
    assert_write_failed(&mut c, &["RL.SLIDING", remove, "10", "5s"]);

    // add: the old unit trimmed, the recent one kept, one new unit logged, and the
    // expiry that new unit needs; the replica holds the same.
    let logged = members(&mut c, add);
    assert_eq!(logged.len(), 2, "{logged:?}");
    assert_eq!(logged[0], ("1".to_string(), now - 1_000));
    assert_eq!(logged[1].0, "2");
    let (_, expires_at) = assert_same(&primary, &replica, add);
    assert_eq!(expires_at, logged[1].1 + 5_000);
    assert_eq!(members(&mut replica.conn(), add), logged);

    // remove: only the first old unit is gone (propagated as ZREM of it), nothing
    // was logged, the expiry is untouched.
    let kept = members(&mut c, remove);
    let names: Vec<&str> = kept.iter().map(|(m, _)| m.as_str()).collect();
    assert_eq!(names, ["1", "2", "3"]);
    let (_, expires_at) = assert_same(&primary, &replica, remove);
    assert_eq!(expires_at, remove_before.1);
    assert_eq!(members(&mut replica.conn(), remove), kept);
}

#[test]
fn a_refused_lease_write_propagates_exactly_what_was_written() {
    if module_only("fault injection is a testing build of the module") {
        return;
    }
    let (primary, replica) = setup();
    let mut c = connect(&primary);
    // The add refused on a new key: nothing written, nothing propagated.
    let before = offset(&mut c);
    assert_write_failed(
        &mut c,
        &["RL.ACQUIRE", "__rl_fail_add__:new", "2", "1h", "a"],
    );
    assert_eq!(offset(&mut c), before, "nothing propagated");
    assert!(!exists(&mut c, "__rl_fail_add__:new"));

    // The trim refused at the second expired lease: the first one's removal
    // reaches the replica (ZREM), and no lease is added.
    let q = "__rl_fail_remove__:q";
    let now = server_ms(&mut c);
    let (old, older, live) = (now - 1000, now - 2000, now + 3_600_000);
    let (old, older, live) = (old.to_string(), older.to_string(), live.to_string());
    query(&mut c, &["ZADD", q, &older, "x", &old, "y", &live, "z"]);
    query(&mut c, &["PEXPIREAT", q, &live]);
    assert_write_failed(&mut c, &["RL.ACQUIRE", q, "5", "1h", "a"]);
    assert_same(&primary, &replica, q);
    let left: Vec<String> = cmd("ZRANGE").arg(&[q, "0", "-1"]).query(&mut c).unwrap();
    assert_eq!(left, ["y", "z"]);

    // The expiry refused after the add: the lease is there on both, without a
    // PEXPIREAT; a release whose expiry is refused propagates its ZREM.
    let e = "__rl_fail_expiry__:e";
    assert_write_failed(&mut c, &["RL.ACQUIRE", e, "2", "1h", "a"]);
    assert_write_failed(&mut c, &["RL.ACQUIRE", e, "2", "1h", "b"]);
    assert_same(&primary, &replica, e);
    assert_write_failed(&mut c, &["RL.RELEASE", e, "a"]);
    let (_, at) = assert_same(&primary, &replica, e);
    assert_eq!(at, -1, "no expiry was set");
    let left: Vec<String> = cmd("ZRANGE").arg(&[e, "0", "-1"]).query(&mut c).unwrap();
    assert_eq!(left, ["b"]);
}

#[test]
fn a_refused_or_failed_budget_write_leaves_primary_and_replica_alike() {
    if module_only("fault injection is a testing build of the module") {
        return;
    }
    let (primary, replica) = setup();
    let mut c = connect(&primary);
    let share =
        |key: &'static str| -> [&'static str; 7] { ["RL.SHARE", key, "a", "1", "5", "1", "1h"] };
    // The first field refused: nothing changes and nothing is propagated, on a
    // hash that exists (a field RL.SHARE does not read) and on a new key.
    let refused = "__rl_fail_hset__:s";
    query(&mut c, &["HSET", refused, "x", "1"]);
    let before = assert_same(&primary, &replica, refused);
    let offset_before = offset(&mut c);
    assert_write_failed(&mut c, &share(refused));
    assert_write_failed(&mut c, &share("__rl_fail_hset__:new"));
    assert_eq!(offset(&mut c), offset_before, "nothing propagated");
    assert_eq!(assert_same(&primary, &replica, refused), before);
    assert!(!exists(&mut c, "__rl_fail_hset__:new"));
    // The fields written, the expiry refused: the budget is deleted everywhere.
    let failed = "__rl_fail_expiry__:s";
    query(&mut c, &["HSET", failed, "x", "1"]);
    assert!(assert_same(&primary, &replica, failed).0.is_some());
    assert_write_failed(&mut c, &share(failed));
    assert_eq!(assert_same(&primary, &replica, failed), (None, -2));
}
