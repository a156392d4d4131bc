//! The smoke suite for a release artefact, run by `make test-dist`
//! (scripts/test-dist.sh) once per artefact and server: the `.so` from dist/ loaded
//! into a real server of its platform (an arm64 one under qemu, a musl-built Redis).
//!
//! It runs only when `RL_DIST_MODULE` names the artefact; scripts/test-dist.sh sets it,
//! `RL_MODULE` to the same file (so every server here, replicas too, loads it),
//! `RL_REDIS_SERVER`, `RL_SERVER_WRAPPER` for an emulated server, `RL_DIST_LIBRARY`
//! (dist/rl-<version>.lua) and `RL_DIST_TARGET` (the target triple the artefact is
//! for). Without `RL_DIST_MODULE` each test says so and passes: `make test` does not
//! test artefacts.
//!
//! - every command's vectors from docs/commands.md (allowed and rejected calls),
//!   RL.ALL, RL.GCRA DELAY, RL.ACQUIRE / RL.RELEASE, CL.THROTTLE;
//! - an error changes nothing (the key's DUMP and expiry);
//! - effects replicated to a replica (also loading the artefact) byte-identical;
//! - the upgrade path: MODULE UNLOAD, then MODULE LOAD of the artefact, with live keys;
//! - the version the artefact and the library report.

use crate::common::*;

use std::path::PathBuf;

/// The artefact under test, or None (and a line saying so) outside `make test-dist`.
fn artefact() -> Option<PathBuf> {
    let Some(path) = std::env::var_os("RL_DIST_MODULE").filter(|p| !p.is_empty()) else {
        eprintln!("skipped: RL_DIST_MODULE is not set (make test-dist sets it)");
        return None;
    };
    let path = PathBuf::from(path);
    assert!(
        path.is_file(),
        "RL_DIST_MODULE={} is no file",
        path.display()
    );
    assert_eq!(
        module_path(),
        path,
        "RL_MODULE must name the artefact too, so that every server loads it"
    );
    Some(path)
}

fn owned(args: &[&str]) -> Vec<String> {
    strings(args)
}

/// Every integer of a reply, depth first: an RL reply, RL.ALL's arrays of them, or
/// RL.RELEASE's one integer.
fn integers(v: &Value) -> Vec<i64> {
    match v {
        Value::Int(n) => vec![*n],
        Value::Array(items) => items.iter().flat_map(integers).collect(),
        other => panic!("not an integer reply: {other:?}"),
    }
}

/// Runs the calls in one MULTI (one instant on Redis 7.2+ and Valkey) and returns
/// each reply's integers.
fn at_one_instant(c: &mut Connection, calls: &[Vec<String>]) -> Vec<Vec<i64>> {
    let mut p = redis::pipe();
    p.atomic();
    for call in calls {
        p.add_command(command_of(call));
    }
    let replies: Vec<Value> = p
        .query(c)
        .unwrap_or_else(|e| panic!("{calls:?} in MULTI: {e}"));
    replies.iter().map(integers).collect()
}

/// Checks `calls` (built for a key) at one instant with `check`; on Redis 7.0 a
/// MULTI is not frozen in time and can straddle a millisecond, so a mismatch is
/// tried again on a fresh key, up to three times.
fn vector(
    c: &mut Connection,
    name: &str,
    calls: impl Fn(&str) -> Vec<Vec<String>>,
    check: impl Fn(&[Vec<i64>]) -> Result<(), String>,
) {
    let mut last = String::new();
    for attempt in 0..3 {
        let key = format!("{{v}}:{name}:{attempt}");
        let replies = at_one_instant(c, &calls(&key));
        match check(&replies) {
            Ok(()) => return,
            Err(e) => last = format!("{name}: {e}: {replies:?}"),
        }
    }
    panic!("{last}");
}

/// A check that the replies are exactly `expected`.
fn exactly(expected: Vec<Vec<i64>>) -> impl Fn(&[Vec<i64>]) -> Result<(), String> {
    move |got| {
        if got == expected.as_slice() {
            Ok(())
        } else {
            Err(format!("want {expected:?}"))
        }
    }
}

/// `n` copies of one call.
fn times(n: usize, call: &[&str]) -> Vec<Vec<String>> {
    vec![owned(call); n]
}

#[test]
fn every_command_answers_its_vectors() {
    if artefact().is_none() {
        return;
    }
    let s = Server::start();
    let mut c = connect(&s);

    // RL.GCRA (docs/commands.md#rlgcra): capacity 5, 1 per second, at one instant.
    vector(
        &mut c,
        "gcra",
        |k| {
            let mut calls = vec![owned(&["RL.GCRA", k, "5", "1", "1s", "COST", "6"])];
            calls.extend(times(6, &["RL.GCRA", k, "5", "1", "1s"]));
            calls
        },
        exactly(vec![
            vec![0, 5, 5, -1, 0],
            vec![1, 5, 4, 0, 1000],
            vec![1, 5, 3, 0, 2000],
            vec![1, 5, 2, 0, 3000],
            vec![1, 5, 1, 0, 4000],
            vec![1, 5, 0, 0, 5000],
            vec![0, 5, 0, 1000, 5000],
        ]),
    );
    // DELAY (#delay): capacity 2, 1 per second, DELAY 3s.
    vector(
        &mut c,
        "delay",
        |k| times(6, &["RL.GCRA", k, "2", "1", "1s", "DELAY", "3s"]),
        exactly(vec![
            vec![1, 2, 1, 0, 1000],
            vec![1, 2, 0, 0, 2000],
            vec![1, 2, 0, 1000, 3000],
            vec![1, 2, 0, 2000, 4000],
            vec![1, 2, 0, 3000, 5000],
            vec![0, 2, 0, 1000, 5000],
        ]),
    );
    // RL.BUCKET (#rlbucket): seven calls at t = 0 (allowed, remaining, retry_after).
    vector(
        &mut c,
        "bucket",
        |k| times(7, &["RL.BUCKET", k, "5", "1", "1s"]),
        |got| {
            let head: Vec<[i64; 4]> = got.iter().map(|r| [r[0], r[1], r[2], r[3]]).collect();
            let want = [
                [1, 5, 4, 0],
                [1, 5, 3, 0],
                [1, 5, 2, 0],
                [1, 5, 1, 0],
                [1, 5, 0, 0],
                [0, 5, 0, 1000],
                [0, 5, 0, 1000],
            ];
            (head == want).then_some(()).ok_or(format!("want {want:?}"))
        },
    );
    // RL.SLIDING (#rlsliding): a call that does not fit waits for the oldest unit.
    vector(
        &mut c,
        "sliding",
        |k| times(3, &["RL.SLIDING", k, "2", "10s"]),
        exactly(vec![
            vec![1, 2, 1, 0, 10000],
            vec![1, 2, 0, 0, 10000],
            vec![0, 2, 0, 10000, 10000],
        ]),
    );
    // Epoch-aligned windows (RL.FIXED, RL.SLIDINGCOUNTER): the times depend on
    // where in the hour the call falls, the counts do not.
    for name in ["RL.FIXED", "RL.SLIDINGCOUNTER"] {
        vector(
            &mut c,
            name,
            |k| times(3, &[name, k, "2", "1h"]),
            |got| {
                let head: Vec<[i64; 3]> = got.iter().map(|r| [r[0], r[1], r[2]]).collect();
                if head != [[1, 2, 1], [1, 2, 0], [0, 2, 0]] {
                    return Err("want allowed, allowed, rejected".into());
                }
                let rejected = &got[2];
                if !(1..=7_200_000).contains(&rejected[3]) || got[0][3] != 0 {
                    return Err("retry_after out of range".into());
                }
                Ok(())
            },
        );
    }
    // CL.THROTTLE (#clthrottle).
    vector(
        &mut c,
        "throttle",
        |k| {
            let mut calls = vec![owned(&["CL.THROTTLE", &format!("{k}:a"), "15", "30", "60"])];
            calls.extend(times(2, &["CL.THROTTLE", k, "0", "1", "2"]));
            calls
        },
        exactly(vec![
            vec![0, 16, 15, -1, 2],
            vec![0, 1, 0, -1, 2],
            vec![1, 1, 0, 2, 2],
        ]),
    );
    // RL.ALL (#rlall): the second call is rejected by its first key, so the second
    // key keeps its unit.
    vector(
        &mut c,
        "all",
        |k| {
            let (a, b) = (format!("{k}:burst"), format!("{k}:minute"));
            let call = [
                "RL.ALL", "2", &a, &b, "GCRA", "1", "1", "1s", "GCRA", "5", "1", "1s",
            ];
            times(2, &call)
        },
        exactly(vec![
            vec![1, 1, 0, 0, 1000, 1, 1, 0, 0, 1000, 1, 5, 4, 0, 1000],
            vec![0, 1, 0, 1000, 1000, 0, 1, 0, 1000, 1000, 1, 5, 4, 0, 1000],
        ]),
    );
    // RL.ACQUIRE / RL.RELEASE (#rlacquire-and-rlrelease): limit 2, ttl 10 s.
    vector(
        &mut c,
        "acquire",
        |k| {
            vec![
                owned(&["RL.ACQUIRE", k, "2", "10s", "a"]),
                owned(&["RL.ACQUIRE", k, "2", "10s", "b"]),
                owned(&["RL.ACQUIRE", k, "2", "10s", "c"]),
                owned(&["RL.RELEASE", k, "b"]),
                owned(&["RL.RELEASE", k, "b"]),
            ]
        },
        exactly(vec![
            vec![1, 2, 1, 0, 10000],
            vec![1, 2, 0, 0, 10000],
            vec![0, 2, 0, 10000, 10000],
            vec![1],
            vec![0],
        ]),
    );
    // RL.PENALTY (#rlpenalty): the third strike blocks for a minute; COST 0 sees it.
    vector(
        &mut c,
        "penalty",
        |k| {
            let mut calls = times(3, &["RL.PENALTY", k, "3", "1m", "1m", "1h"]);
            calls.push(owned(&[
                "RL.PENALTY",
                k,
                "3",
                "1m",
                "1m",
                "1h",
                "COST",
                "0",
            ]));
            calls
        },
        exactly(vec![
            vec![1, 3, 2, 0, 60000],
            vec![1, 3, 1, 0, 60000],
            vec![0, 3, 0, 60000, 3660000],
            vec![0, 3, 0, 60000, 3660000],
        ]),
    );
    assert!(s.log().contains("Module 'rl' loaded"), "{}", s.log());
}

#[test]
fn an_error_changes_nothing() {
    if artefact().is_none() {
        return;
    }
    let s = Server::start();
    let mut c = connect(&s);
    for lim in COMMANDS {
        let key = format!("err:{}", lim.short);
        let params: Vec<String> = strings(&lim.valid_params());
        lim.call(&mut c, &key, &params, None);
        let before = snapshot(&mut c, key.as_bytes());
        assert!(
            before.0.is_some(),
            "{}: the first call wrote nothing",
            lim.name
        );
        // An out-of-range first parameter: an ERR, nothing written.
        let mut bad = params.clone();
        bad[0] = lim.params[0].kind.invalid().to_string();
        let args = lim.args(&key, &bad, Some(1));
        let refs: Vec<&[u8]> = args.iter().map(|a| a.as_bytes()).collect();
        let error = error_of(&mut c, &refs);
        assert!(error.starts_with("ERR "), "{}: {error}", lim.name);
        assert_eq!(snapshot(&mut c, key.as_bytes()), before, "{}", lim.name);
        // A key of another type: WRONGTYPE, the list untouched.
        let list = format!("err:list:{}", lim.short);
        let _: i64 = cmd("RPUSH").arg(&list).arg("a").query(&mut c).unwrap();
        let list_before = snapshot(&mut c, list.as_bytes());
        let args = lim.args(&list, &params, None);
        let refs: Vec<&[u8]> = args.iter().map(|a| a.as_bytes()).collect();
        assert!(
            error_of(&mut c, &refs).starts_with("WRONGTYPE"),
            "{}",
            lim.name
        );
        assert_eq!(
            snapshot(&mut c, list.as_bytes()),
            list_before,
            "{}",
            lim.name
        );
    }
    // RL.ACQUIRE with a limit of 0: an ERR, the lease set untouched.
    rl(&mut c, &["RL.ACQUIRE", "err:acquire", "2", "1h", "a"]);
    let before = snapshot(&mut c, b"err:acquire");
    let error = error_of(&mut c, &[b"RL.ACQUIRE", b"err:acquire", b"0", b"1h", b"b"]);
    assert!(error.starts_with("ERR "), "{error}");
    assert_eq!(snapshot(&mut c, b"err:acquire"), before);
    // RL.ALL with one bad policy writes neither key.
    rl(&mut c, &["RL.FIXED", "{e}:a", "5", "1h"]);
    let before = snapshot(&mut c, b"{e}:a");
    let error = error_of(
        &mut c,
        &[
            b"RL.ALL", b"2", b"{e}:a", b"{e}:b", b"FIXED", b"5", b"1h", b"FIXED", b"0", b"1h",
        ],
    );
    assert!(error.starts_with("ERR "), "{error}");
    assert_eq!(snapshot(&mut c, b"{e}:a"), before);
    assert!(!exists(&mut c, "{e}:b"));
}

/// Calls of every command, RL.ALL, DELAY and the leases, on keys under `prefix`.
fn traffic(c: &mut Connection, prefix: &str) {
    for lim in COMMANDS {
        let key = format!("{prefix}:{}", lim.short);
        let params: Vec<String> = strings(&lim.valid_params());
        for cost in [1, 2, 0, 9] {
            lim.call(c, &key, &params, Some(cost));
        }
    }
    let (a, b) = (format!("{{{prefix}}}:a"), format!("{{{prefix}}}:b"));
    let lease = format!("{prefix}:lease");
    let delay = format!("{prefix}:delay");
    let calls: Vec<Vec<String>> = vec![
        owned(&[
            "RL.ALL", "2", &a, &b, "SLIDING", "3", "1h", "BUCKET", "4", "1", "1m",
        ]),
        owned(&[
            "RL.ALL", "2", &a, &b, "SLIDING", "3", "1h", "BUCKET", "4", "1", "1m",
        ]),
        owned(&["RL.GCRA", &delay, "1", "1", "1h", "DELAY", "3h"]),
        owned(&["RL.GCRA", &delay, "1", "1", "1h", "DELAY", "3h"]),
        owned(&["RL.ACQUIRE", &lease, "2", "1h", "job-1"]),
        owned(&["RL.ACQUIRE", &lease, "2", "1h", "job-2"]),
        owned(&["RL.RELEASE", &lease, "job-1"]),
    ];
    for call in calls {
        let _: Value = command_of(&call)
            .query(c)
            .unwrap_or_else(|e| panic!("{call:?}: {e}"));
    }
}

/// A key's DUMP and PEXPIRETIME.
type Snapshot = (Option<Vec<u8>>, i64);

/// Every key and its snapshot, sorted by key.
fn all_keys(c: &mut Connection) -> Vec<(String, Snapshot)> {
    let mut keys: Vec<String> = cmd("KEYS").arg("*").query(c).unwrap();
    keys.sort();
    keys.into_iter()
        .map(|k| {
            let snap = snapshot(c, k.as_bytes());
            (k, snap)
        })
        .collect()
}

#[test]
fn effects_reach_a_replica_byte_identical() {
    if artefact().is_none() {
        return;
    }
    let primary = Server::start();
    let replica = primary.replica(true);
    let mut p = connect(&primary);
    traffic(&mut p, "repl");
    primary.sync(&replica);
    let on_primary = all_keys(&mut p);
    assert!(on_primary.len() >= 10, "{on_primary:?}");
    assert_eq!(all_keys(&mut connect(&replica)), on_primary);
}

#[test]
fn module_unload_and_load_keeps_live_keys() {
    let Some(so) = artefact() else {
        return;
    };
    // MODULE LOAD needs the module command enabled (off by default since 7.0).
    let s = Server::with(Options {
        args: owned(&["--enable-module-command", "yes"]),
        ..Options::default()
    });
    let mut c = connect(&s);
    traffic(&mut c, "live");
    let keys = all_keys(&mut c);
    // What each single-key command answers about its key (COST 0 reads).
    let read = |c: &mut Connection| -> Vec<(i64, i64, i64)> {
        COMMANDS
            .iter()
            .map(|lim| {
                let key = format!("live:{}", lim.short);
                let r = lim.call(c, &key, &strings(&lim.valid_params()), Some(0));
                (r.allowed, r.limit, r.remaining)
            })
            .collect()
    };
    let answers = read(&mut c);
    config_set(&mut c, "rl.sliding-max-limit", 200000);
    assert!(info_field(&mut c, "rl", "rl_fixed_allowed") > 0);

    let ok: String = cmd("MODULE").arg("UNLOAD").arg("rl").query(&mut c).unwrap();
    assert_eq!(ok, "OK");
    assert_eq!(module_version(&mut c), None);
    let gone = error_of(&mut c, &[b"RL.FIXED", b"live:fixed", b"5", b"1h"]);
    assert!(gone.starts_with("ERR unknown command"), "{gone}");
    // Native keys: nothing happens to them while no module is loaded.
    assert_eq!(all_keys(&mut c), keys);

    let ok: String = cmd("MODULE")
        .arg("LOAD")
        .arg(so.as_os_str().as_encoded_bytes())
        .query(&mut c)
        .unwrap();
    assert_eq!(ok, "OK");
    assert_eq!(module_version(&mut c), Some(cargo_version_number()));
    assert_eq!(all_keys(&mut c), keys);
    // A new load starts afresh, even where the unload left the old one mapped (musl):
    // default settings, zero counters.
    let limit: Vec<String> = cmd("CONFIG")
        .arg("GET")
        .arg("rl.sliding-max-limit")
        .query(&mut c)
        .unwrap();
    assert_eq!(limit, ["rl.sliding-max-limit", "100000"]);
    assert_eq!(info_field(&mut c, "rl", "rl_fixed_allowed"), 0);
    assert_eq!(read(&mut c), answers);
    // And the limiters go on from where they were.
    let lim = command("RL.FIXED");
    let params = strings(&lim.valid_params());
    let before = lim.call(&mut c, "live:fixed", &params, Some(0)).remaining;
    let after = lim.call(&mut c, "live:fixed", &params, Some(1)).remaining;
    assert_eq!(after, before - 1);
}

#[test]
fn the_artefact_and_library_report_the_version() {
    if artefact().is_none() {
        return;
    }
    let s = Server::start();
    let mut c = connect(&s);
    assert_eq!(module_version(&mut c), Some(cargo_version_number()));
    assert_eq!(
        info_str(&mut c, "rl", "rl_version"),
        env!("CARGO_PKG_VERSION")
    );
    if let Ok(target) = std::env::var("RL_DIST_TARGET") {
        assert_eq!(info_str(&mut c, "rl", "rl_target"), target);
    }
    let commit = info_str(&mut c, "rl", "rl_git_commit");
    assert!(commit.len() == 12 || commit == "unknown", "{commit}");
    if let Some(lua) = std::env::var_os("RL_DIST_LIBRARY").filter(|p| !p.is_empty()) {
        let source = std::fs::read_to_string(&lua).expect("RL_DIST_LIBRARY");
        let name: String = cmd("FUNCTION")
            .arg("LOAD")
            .arg(source)
            .query(&mut c)
            .unwrap();
        assert_eq!(name, "rl");
        let version: String = cmd("FCALL").arg("rl_version").arg(0).query(&mut c).unwrap();
        assert_eq!(version, env!("CARGO_PKG_VERSION"));
        // The library answers on the same server as the module, on its own keys.
        let r: Vec<i64> = cmd("FCALL")
            .arg(&["rl_gcra", "1", "lib:g", "5", "1", "1s"])
            .query(&mut c)
            .unwrap();
        assert_eq!(&r[..3], [1, 5, 4]);
    }
}
