//! Replication, AOF and RDB against real redis-servers.
//!
//! Contract: an allowed RL call reaches replicas and the AOF only as native effects
//! with absolute times (`SET key n PXAT t`, `ZREMRANGEBYSCORE` + `ZADD` + `PEXPIREAT`,
//! `HSET key tokens x ts t` + `PEXPIREAT`), never as the RL command itself; a call
//! that is rejected, only inspects (COST 0) or fails writes, propagates and dirties
//! nothing; RDB and AOF restore every limiter exactly where it was.

use crate::common::*;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::Duration;

const HOUR_MS: i64 = 3_600_000;

/// Each command's calls in these tests.
trait Limiter {
    /// Its key `<short>:<name>`, so each command has its own keys.
    fn key(&self, name: &str) -> String;
    /// Limit (capacity) 3 per hour: nothing comes back within a test.
    fn hourly(&self) -> Vec<String>;
    /// Limit (capacity) 3 per two seconds: units leave while a test waits.
    fn two_seconds(&self) -> Vec<String>;
    /// A call with the hourly parameters; `cost` None sends no COST option.
    fn hour_call(&self, c: &mut Connection, key: &str, cost: Option<u64>) -> Reply;
    /// `DEBIT n` with the hourly parameters (a command that takes it).
    fn hour_debit(&self, c: &mut Connection, key: &str, n: u64) -> Reply;
    /// A call that must fail: the limit (capacity) is 0 (CL.THROTTLE's max_burst
    /// -1).
    fn invalid_call(&self, c: &mut Connection, key: &str) -> String;
}

impl Limiter for Command {
    fn key(&self, name: &str) -> String {
        format!("{}:{name}", self.short)
    }

    fn hourly(&self) -> Vec<String> {
        self.per(3, "1h")
    }

    fn two_seconds(&self) -> Vec<String> {
        self.per(3, "2s")
    }

    fn hour_call(&self, c: &mut Connection, key: &str, cost: Option<u64>) -> Reply {
        self.call(c, key, &self.hourly(), cost)
    }

    fn hour_debit(&self, c: &mut Connection, key: &str, n: u64) -> Reply {
        let mut args = self.args(key, &self.hourly(), None);
        args.extend(self.debit_args(n));
        self.run(c, &args)
    }

    fn invalid_call(&self, c: &mut Connection, key: &str) -> String {
        let mut args = self.args(key, &self.hourly(), None);
        let (i, limit) = self.limit_param();
        args[2 + i] = limit.kind.invalid().into();
        let args: Vec<&[u8]> = args.iter().map(|a| a.as_bytes()).collect();
        error_of(c, &args)
    }
}

/// A limiter's verdict on a call that takes its last units: allowed, or for one
/// that blocks (RL.PENALTY) rejected, the block starting (and written).
fn last_units(l: &Command) -> i64 {
    i64::from(!l.blocks)
}

/// Asserts a reply's decision and remaining units.
fn expect(r: Reply, allowed: i64, remaining: i64, what: &str) {
    assert_eq!(
        (r.allowed, r.remaining),
        (allowed, remaining),
        "{what}: {r:?}"
    );
}

fn repl_offset(c: &mut Connection) -> i64 {
    info_field(c, "replication", "master_repl_offset")
}

fn rdb_changes(c: &mut Connection) -> i64 {
    info_field(c, "persistence", "rdb_changes_since_last_save")
}

fn wait_until_server_ms(c: &mut Connection, at: i64) {
    wait_for(Duration::from_secs(10), "the server clock", || {
        (server_ms(c) >= at).then_some(())
    });
}

/// Every key of the database, sorted.
fn keys(c: &mut Connection) -> Vec<String> {
    let mut keys: Vec<String> = cmd("KEYS").arg("*").query(c).expect("KEYS");
    keys.sort();
    keys
}

fn dbsize(c: &mut Connection) -> i64 {
    cmd("DBSIZE").query(c).expect("DBSIZE")
}

type State = BTreeMap<String, (Option<Vec<u8>>, i64)>;

/// Every key's serialized value and absolute expiry.
fn state(c: &mut Connection) -> State {
    keys(c)
        .into_iter()
        .map(|k| {
            let snap = snapshot(c, k.as_bytes());
            (k, snap)
        })
        .collect()
}

/// Asserts two servers hold the same keys, values and absolute expiries.
fn assert_same_data(expected: &mut Connection, actual: &mut Connection, what: &str) {
    let want = state(expected);
    let got = state(actual);
    assert_eq!(
        got.keys().collect::<Vec<_>>(),
        want.keys().collect::<Vec<_>>(),
        "{what}: same keys"
    );
    for (key, snap) in &want {
        assert_eq!(
            got.get(key),
            Some(snap),
            "{what}: DUMP and PEXPIRETIME of {key}"
        );
    }
    assert_eq!(dbsize(actual), dbsize(expected), "{what}: DBSIZE");
}

/// Calls of every kind on several keys of each limiter: allowed, rejected, COST 0,
/// COST n, COST above the limit, DEBIT into debt, inside MULTI/EXEC and from Lua,
/// and units leaving a short window while the key lives (so the sliding log is
/// trimmed). Every key left behind expires in about an hour (a debt's, a little
/// later). Returns the keys that must exist, sorted.
fn mixed_workload(c: &mut Connection) -> Vec<String> {
    align_to_window(c, HOUR_MS, 30_000);
    let mut live = Vec::new();
    for l in COMMANDS {
        let what = |step: &str| format!("{} {step}", l.name);

        let a = l.key("a");
        expect(l.hour_call(c, &a, None), 1, 2, &what("a: first unit"));
        expect(
            l.hour_call(c, &a, Some(0)),
            1,
            2,
            &what("a: COST 0 inspects"),
        );
        expect(
            l.hour_call(c, &a, Some(2)),
            last_units(l),
            0,
            &what("a: COST 2 takes the rest"),
        );
        expect(l.hour_call(c, &a, None), 0, 0, &what("a: full, rejected"));
        expect(
            l.hour_call(c, &a, Some(0)),
            last_units(l),
            0,
            &what("a: COST 0 on a full key (blocked: rejected)"),
        );

        let b = l.key("b");
        expect(l.hour_call(c, &b, Some(2)), 1, 1, &what("b: COST 2"));
        if l.blocks {
            // Strikes past the limit block too.
            expect(l.hour_call(c, &b, Some(2)), 0, 0, &what("b: COST 2 blocks"));
            expect(l.hour_call(c, &b, Some(1)), 0, 0, &what("b: blocked"));
        } else {
            expect(
                l.hour_call(c, &b, Some(2)),
                0,
                1,
                &what("b: COST 2 rejected"),
            );
            expect(l.hour_call(c, &b, Some(1)), 1, 0, &what("b: COST 1 fits"));
        }

        expect(
            l.hour_call(c, &l.key("peek"), Some(0)),
            1,
            3,
            &what("COST 0 on an absent key"),
        );
        if l.debit() {
            // An estimate, then the real cost past the limit: debt (a bucket's
            // level goes below zero), and a rejection while it lasts.
            let debt = l.key("debt");
            expect(l.hour_call(c, &debt, Some(2)), 1, 1, &what("debt: COST 2"));
            expect(l.hour_debit(c, &debt, 4), 1, 0, &what("debt: DEBIT 4"));
            expect(l.hour_call(c, &debt, None), 0, 0, &what("debt: rejected"));
            expect(l.hour_debit(c, &debt, 1), 1, 0, &what("debt: DEBIT 1 more"));
            live.push(debt);
        }

        let never = l.hour_call(c, &l.key("never"), Some(4));
        // A limiter that blocks is blocked at once, for a while (and has written
        // it); a budget's new tenant joins it, rejected (and has written that).
        let wait = if l.blocks { HOUR_MS } else { -1 };
        assert_eq!(
            (never.allowed, never.retry_after),
            (0, wait),
            "{}",
            what("COST above the limit")
        );
        if l.blocks || l.joins {
            live.push(l.key("never"));
        }

        let tx = l.key("tx");
        let mut pipe = redis::pipe();
        pipe.atomic();
        for _ in 0..2 {
            let mut command = cmd(l.name);
            command.arg(&tx).arg(l.hourly());
            pipe.add_command(on_backend(&command));
        }
        let replies: Vec<Vec<i64>> = pipe.query(c).expect("MULTI/EXEC");
        assert_eq!(
            replies
                .iter()
                .map(|r| l.reply_of(r))
                .map(|r| (r.allowed, r.remaining))
                .collect::<Vec<_>>(),
            vec![(1, 2), (1, 1)],
            "{}",
            what("inside MULTI/EXEC")
        );

        let lua = l.key("lua");
        // A script cannot FCALL: the library's call is a plain one.
        let reply = if is_library() {
            l.hour_call(c, &lua, Some(2))
        } else {
            let reply: Vec<i64> = cmd("EVAL")
                .arg("return redis.call(ARGV[1], KEYS[1], unpack(ARGV, 2))")
                .arg(1)
                .arg(&lua)
                .arg(l.name)
                .arg(l.hourly())
                .arg(l.cost_args(2))
                .query(c)
                .expect("EVAL");
            l.reply_of(&reply)
        };
        assert_eq!(
            (reply.allowed, reply.remaining),
            (1, 1),
            "{}",
            what("from Lua")
        );

        live.extend([a, b, tx, lua]);
    }

    // Units leave a 2 s window while the key lives: the sliding log drops its
    // oldest unit, the fixed counter enters a new window, the bucket refills.
    let roll: Vec<String> = COMMANDS.iter().map(|l| l.key("roll")).collect();
    for (l, key) in COMMANDS.iter().zip(&roll) {
        expect(
            l.call(c, key, &l.two_seconds(), None),
            1,
            2,
            "short window, first unit",
        );
    }
    let t0 = server_ms(c);
    for step in [1_000, 2_000] {
        wait_until_server_ms(c, t0 + step);
        for (l, key) in COMMANDS.iter().zip(&roll) {
            let r = l.call(c, key, &l.two_seconds(), None);
            assert_eq!(
                r.allowed, 1,
                "{} short window after {step} ms: {r:?}",
                l.name
            );
        }
    }
    // An hourly policy on the same keys, so nothing expires while tests compare. Its
    // limit is 4: a sliding counter read under a new window counts every unit of the
    // last two seconds (docs/commands.md#parameters-come-with-every-call).
    for (l, key) in COMMANDS.iter().zip(&roll) {
        let r = l.call(c, key, &l.per(4, "1h"), None);
        assert_eq!(r.allowed, 1, "{} back to hourly: {r:?}", l.name);
    }
    live.extend(roll);
    live.sort();
    live
}

fn replica_ends_identical(with_module: bool) {
    let primary = Server::start();
    let replica = primary.replica(with_module);
    let mut c = primary.conn();
    let live = mixed_workload(&mut c);
    assert_eq!(
        keys(&mut c),
        live,
        "the primary holds exactly the keys of allowed calls"
    );
    primary.sync(&replica);
    let mut r = replica.conn();
    assert_same_data(&mut c, &mut r, "replica vs primary");
    assert_eq!(
        repl_offset(&mut r),
        repl_offset(&mut c),
        "the replica applied the whole stream"
    );
}

#[test]
fn replica_with_the_module_holds_identical_keys_values_and_expiries() {
    replica_ends_identical(true);
}

#[test]
fn replica_without_the_module_holds_identical_data_so_only_native_commands_flow() {
    replica_ends_identical(false);
}

#[test]
fn replica_applying_the_stream_late_keeps_the_primarys_absolute_times() {
    let primary = Server::start();
    let replica = primary.replica(true);
    let mut r = replica.conn();
    // A replica paused for writes holds back its primary's stream too.
    let _: () = cmd("CLIENT")
        .arg(&["PAUSE", "20000", "WRITE"])
        .query(&mut r)
        .expect("CLIENT PAUSE");
    let mut c = primary.conn();
    align_to_window(&mut c, HOUR_MS, 30_000);
    for l in COMMANDS {
        expect(l.hour_call(&mut c, &l.key("k"), Some(2)), 1, 1, l.name);
    }
    let last_call = server_ms(&mut c);
    wait_until_server_ms(&mut c, last_call + 200);
    assert!(
        repl_offset(&mut r) < repl_offset(&mut c),
        "the paused replica must not have applied the calls yet"
    );
    let _: () = cmd("CLIENT")
        .arg("UNPAUSE")
        .query(&mut r)
        .expect("CLIENT UNPAUSE");
    primary.sync(&replica);
    // Had the replica re-run the RL commands 200 ms later, the sliding scores, the
    // bucket's ts and both expiries would differ.
    assert_same_data(&mut c, &mut r, "replica applying 200 ms late");
}

#[test]
fn replica_refuses_rl_calls_like_any_write() {
    let primary = Server::start();
    let replica = primary.replica(true);
    let mut r = replica.conn();
    for l in COMMANDS {
        for cost in [None, Some(0)] {
            let args = l.args(&l.key("k"), &l.hourly(), cost);
            let args: Vec<&[u8]> = args.iter().map(|a| a.as_bytes()).collect();
            let err = error_of(&mut r, &args);
            assert!(err.starts_with("READONLY"), "{} {cost:?}: {err}", l.name);
        }
    }
    assert_eq!(dbsize(&mut r), 0, "the replica wrote nothing");
}

/// Each limiter gets a call that takes its whole limit (one that blocks: which
/// starts the block), then calls that must write, propagate and dirty nothing. `counter` must grow with the allowed call and stay
/// put through all the others.
fn only_allowed_calls_move(c: &mut Connection, counter: fn(&mut Connection) -> i64, what: &str) {
    align_to_window(c, HOUR_MS, 30_000);
    let _: i64 = cmd("RPUSH").arg(&["a-list", "x"]).query(c).expect("RPUSH");
    for l in COMMANDS {
        let k = l.key("k");
        let before = counter(c);
        expect(l.hour_call(c, &k, Some(3)), last_units(l), 0, l.name);
        let after = counter(c);
        assert!(
            after > before,
            "{what} grows on an allowed {} call ({before} -> {after})",
            l.name
        );
        let unchanged = |c: &mut Connection, step: &str| {
            assert_eq!(counter(c), after, "{what} moved on {} {step}", l.name);
        };

        expect(l.hour_call(c, &k, None), 0, 0, "rejected");
        unchanged(c, "rejected");
        expect(l.hour_call(c, &k, Some(0)), last_units(l), 0, "COST 0");
        unchanged(c, "COST 0 on a used key");
        expect(l.hour_call(c, &l.key("absent"), Some(0)), 1, 3, "COST 0");
        unchanged(c, "COST 0 on an absent key");
        let retry = l.hour_call(c, &k, Some(4)).retry_after;
        if l.blocks {
            assert!(retry > 0, "{}: blocked, {retry}", l.name);
        } else {
            assert_eq!(retry, -1, "COST above the limit");
        }
        unchanged(c, "COST above the limit");
        let err = l.invalid_call(c, &k);
        assert!(err.starts_with("ERR"), "{err}");
        unchanged(c, "invalid arguments");
        let args = l.args("a-list", &l.hourly(), None);
        let args: Vec<&[u8]> = args.iter().map(|a| a.as_bytes()).collect();
        let err = error_of(c, &args);
        assert!(err.starts_with("WRONGTYPE"), "{err}");
        unchanged(c, "a key of another type");
    }
}

#[test]
fn only_allowed_calls_advance_the_replication_offset() {
    // No keepalive PING may move the offset while the test measures it.
    let primary = Server::with(Options {
        args: vec!["--repl-ping-replica-period".into(), "3600".into()],
        ..Options::default()
    });
    // The offset only moves once a replica (and so a backlog) exists.
    let replica = primary.replica(true);
    let mut c = primary.conn();
    only_allowed_calls_move(&mut c, repl_offset, "master_repl_offset");
    primary.sync(&replica);
    assert_same_data(&mut c, &mut replica.conn(), "replica vs primary");
}

#[test]
fn only_allowed_calls_count_as_changes_since_the_last_save() {
    let s = Server::start();
    only_allowed_calls_move(&mut s.conn(), rdb_changes, "rdb_changes_since_last_save");
}

// ---------------------------------------------------------------- AOF contents

/// A server that appends every write to its AOF before replying.
pub(crate) const AOF_ARGS: [&str; 4] = ["--appendonly", "yes", "--appendfsync", "always"];

/// The raw AOF increment files of a Redis 7 server, in manifest order.
fn aof_increments(dir: &Path) -> Vec<Vec<u8>> {
    let aof_dir = dir.join("appendonlydir");
    let manifest = std::fs::read_to_string(aof_dir.join("appendonly.aof.manifest"))
        .expect("appendonlydir/appendonly.aof.manifest");
    let files: Vec<Vec<u8>> = manifest
        .lines()
        .filter_map(|line| {
            // file <name> seq <n> type <b|h|i>
            let fields: Vec<&str> = line.split_whitespace().collect();
            (fields.get(5) == Some(&"i")).then(|| fields[1].to_string())
        })
        .map(|name| std::fs::read(aof_dir.join(&name)).expect("AOF increment file"))
        .collect();
    assert!(!files.is_empty(), "no increment file in {manifest}");
    files
}

/// Splits AOF text (RESP arrays of bulk strings) into commands.
fn parse_aof(mut rest: &[u8]) -> Vec<Vec<String>> {
    fn line(b: &[u8]) -> (&[u8], &[u8]) {
        let end = b
            .windows(2)
            .position(|w| w == b"\r\n")
            .unwrap_or_else(|| panic!("unterminated AOF line: {:?}", String::from_utf8_lossy(b)));
        (&b[..end], &b[end + 2..])
    }
    fn number(b: &[u8], prefix: u8) -> usize {
        assert_eq!(b.first(), Some(&prefix), "{:?}", String::from_utf8_lossy(b));
        std::str::from_utf8(&b[1..]).unwrap().parse().unwrap()
    }
    let mut commands = Vec::new();
    while !rest.is_empty() {
        let (header, after) = line(rest);
        rest = after;
        if header.starts_with(b"#") {
            continue; // an annotation, such as a timestamp
        }
        let mut command = Vec::new();
        for _ in 0..number(header, b'*') {
            let (len, after) = line(rest);
            let len = number(len, b'$');
            command.push(String::from_utf8_lossy(&after[..len]).into_owned());
            assert_eq!(&after[len..len + 2], b"\r\n");
            rest = &after[len + 2..];
        }
        commands.push(command);
    }
    commands
}

pub(crate) fn aof_commands(dir: &Path) -> Vec<Vec<String>> {
    aof_increments(dir)
        .iter()
        .flat_map(|f| parse_aof(f))
        .collect()
}

#[test]
fn aof_records_native_effects_with_absolute_times_never_rl_commands() {
    let s = Server::with(Options {
        args: strings(&AOF_ARGS),
        ..Options::default()
    });
    let mut c = s.conn();
    let started = server_ms(&mut c);
    mixed_workload(&mut c);

    // The library's source, in its FUNCTION LOAD, names the commands: what the
    // calls added is checked. No FCALL either: effects, never the call.
    let raw = if is_library() {
        let effects: Vec<String> = aof_commands_but_the_library(&s.dir).concat();
        effects.join(" ").into_bytes().to_ascii_uppercase()
    } else {
        aof_increments(&s.dir).concat().to_ascii_uppercase()
    };
    assert!(
        !raw.windows(5).any(|w| w == b"FCALL"),
        "the AOF mentions FCALL:\n{}",
        String::from_utf8_lossy(&raw)
    );
    assert!(
        !raw.windows(3).any(|w| w == b"RL."),
        "the AOF mentions an RL command:\n{}",
        String::from_utf8_lossy(&raw)
    );
    for l in COMMANDS {
        let name = l.name.as_bytes();
        assert!(
            !raw.windows(name.len()).any(|w| w == name),
            "the AOF mentions {}:\n{}",
            l.name,
            String::from_utf8_lossy(&raw)
        );
    }
    let commands = aof_commands_but_the_library(&s.dir);
    // The server logs a key that expired as DEL, or as UNLINK where it frees it
    // lazily (Valkey's default).
    let lazy: Vec<String> = cmd("CONFIG")
        .arg("GET")
        .arg("lazyfree-lazy-expire")
        .query(&mut c)
        .expect("CONFIG GET lazyfree-lazy-expire");
    let expiry = if lazy.get(1).map(String::as_str) == Some("yes") {
        "UNLINK"
    } else {
        "DEL"
    };
    let mut seen = BTreeMap::<String, usize>::new();
    for command in &commands {
        let name = command[0].to_ascii_uppercase();
        *seen.entry(name.clone()).or_default() += 1;
        let time = |i: usize| -> i64 {
            command
                .get(i)
                .and_then(|t| t.parse().ok())
                .unwrap_or_else(|| panic!("no time at {i} in {command:?}"))
        };
        match name.as_str() {
            // Redis's own effects: the database and transactions around several
            // effects of one call, and keys that expired during the workload.
            "SELECT" | "MULTI" | "EXEC" => {}
            n if n == expiry => {}
            "SET" => {
                assert_eq!(command.len(), 5, "{command:?}");
                // The value in the format of the command whose key it is.
                let short = command[1].split(':').next().unwrap_or_default();
                let l = COMMANDS
                    .iter()
                    .find(|l| l.short == short)
                    .unwrap_or_else(|| panic!("no command writes {command:?}"));
                let valid = l
                    .string_state
                    .unwrap_or_else(|| panic!("{}: {command:?}", l.name));
                assert!(valid(&command[2]), "{command:?}");
                assert_eq!(command[3].to_ascii_uppercase(), "PXAT", "{command:?}");
                assert!(time(4) > started, "absolute time in {command:?}");
            }
            "PEXPIREAT" => assert!(time(2) > started, "absolute time in {command:?}"),
            "ZADD" => {
                assert!(command.len() >= 4 && command.len() % 2 == 0, "{command:?}");
                for i in (2..command.len()).step_by(2) {
                    assert!(time(i) >= started, "absolute score in {command:?}");
                }
            }
            "ZREMRANGEBYSCORE" => {
                assert_eq!(command[2], "-inf", "{command:?}");
                assert!(time(3) > started - HOUR_MS, "absolute bound in {command:?}");
            }
            "HSET" | "HDEL" => {
                // Fields of the command whose key it is, in its format.
                let short = command[1].split(':').next().unwrap_or_default();
                let l = COMMANDS
                    .iter()
                    .find(|l| l.short == short)
                    .unwrap_or_else(|| panic!("no command writes {command:?}"));
                if name == "HDEL" {
                    assert!(
                        l.also_propagates.contains(&"HDEL") && command.len() >= 3,
                        "{}: {command:?}",
                        l.name
                    );
                    continue;
                }
                assert!(command.len() >= 4 && command.len() % 2 == 0, "{command:?}");
                let pairs: Vec<(&str, &str)> = command[2..]
                    .chunks(2)
                    .map(|p| (p[0].as_str(), p[1].as_str()))
                    .collect();
                let valid = l
                    .hash_state
                    .unwrap_or_else(|| panic!("{}: {command:?}", l.name));
                assert!(valid(&pairs), "{command:?}");
                for (field, value) in pairs {
                    if field == "ts" {
                        let ts: i64 = value.parse().expect("a time");
                        assert!(ts >= started, "absolute ts in {command:?}");
                    }
                }
            }
            _ => panic!("unexpected command in the AOF: {command:?}"),
        }
    }
    for l in COMMANDS {
        for name in l.propagates {
            assert!(
                seen.contains_key(*name),
                "no {name} ({}) in the AOF: {seen:?}",
                l.name
            );
        }
    }
}

/// The commands the call that wrote `key` last (from scratch, for a sorted set
/// or a hash) must have propagated, rebuilt from the key's state on the primary.
fn effects_of_last_write(c: &mut Connection, l: &Command, key: &str) -> Vec<Vec<String>> {
    let at = pexpiretime(c, key).to_string();
    let wrap = |effects: Vec<Vec<String>>| {
        let mut all = vec![strings(&["MULTI"])];
        all.extend(effects);
        all.push(strings(&["EXEC"]));
        all
    };
    match l.native_type {
        "string" => {
            let used: String = cmd("GET").arg(key).query(c).expect("GET");
            vec![strings(&["SET", key, &used, "PXAT", &at])]
        }
        "zset" => {
            let members: Vec<(String, String)> = cmd("ZRANGE")
                .arg(&[key, "0", "-1", "WITHSCORES"])
                .query(c)
                .expect("ZRANGE");
            let mut zadd = strings(&["ZADD", key]);
            for (member, score) in members {
                zadd.extend([score, member]);
            }
            wrap(vec![zadd, strings(&["PEXPIREAT", key, &at])])
        }
        "hash" => {
            // Every field (in HGETALL's order: compare with [`fields_sorted`]).
            let fields: Vec<(String, String)> = cmd("HGETALL").arg(key).query(c).expect("HGETALL");
            let mut hset = strings(&["HSET", key]);
            for (field, value) in fields {
                hset.extend([field, value]);
            }
            wrap(vec![hset, strings(&["PEXPIREAT", key, &at])])
        }
        other => unreachable!("{}: {other}", l.name),
    }
}

/// Effects with each `HSET`'s fields sorted: the order a call sets fields in is
/// not kept by a hash past the listpack limits (an RL.SHARE budget), whose HGETALL
/// order is its hash table's.
fn fields_sorted(mut effects: Vec<Vec<String>>) -> Vec<Vec<String>> {
    for e in &mut effects {
        if e[0].eq_ignore_ascii_case("HSET") && e.len() % 2 == 0 {
            let mut pairs: Vec<(String, String)> = e[2..]
                .chunks(2)
                .map(|p| (p[0].clone(), p[1].clone()))
                .collect();
            pairs.sort();
            e.truncate(2);
            e.extend(pairs.into_iter().flat_map(|(f, v)| [f, v]));
        }
    }
    effects
}

#[test]
fn aof_holds_one_effect_group_per_allowed_call_with_the_primarys_values() {
    let s = Server::with(Options {
        args: strings(&AOF_ARGS),
        ..Options::default()
    });
    let mut c = s.conn();
    align_to_window(&mut c, HOUR_MS, 30_000);
    let mut expected = vec![strings(&["SELECT", "0"])];
    for l in COMMANDS {
        let k = l.key("k");
        expect(l.hour_call(&mut c, &k, Some(2)), 1, 1, "COST 2");
        expected.extend(effects_of_last_write(&mut c, l, &k));
        expect(l.hour_call(&mut c, &k, Some(0)), 1, 1, "COST 0");
        if l.blocks {
            // The strikes reach the limit: rejected, and the block written.
            expect(l.hour_call(&mut c, &k, Some(2)), 0, 0, "the block");
            expected.extend(effects_of_last_write(&mut c, l, &k));
            assert!(l.hour_call(&mut c, &k, Some(4)).retry_after > 0, "blocked");
        } else {
            expect(l.hour_call(&mut c, &k, Some(2)), 0, 1, "rejected");
            assert_eq!(l.hour_call(&mut c, &k, Some(4)).retry_after, -1, "COST 4");
        }
        l.invalid_call(&mut c, &k);
    }
    assert_eq!(
        fields_sorted(aof_commands_but_the_library(&s.dir)),
        fields_sorted(expected)
    );
}

/// [`aof_commands`] without the library's own FUNCTION LOAD (the library backend
/// loads it first; it is not an effect of an RL call).
fn aof_commands_but_the_library(dir: &Path) -> Vec<Vec<String>> {
    let mut commands = aof_commands(dir);
    commands.retain(|c| !(c.len() == 4 && c[0] == "FUNCTION" && c[1] == "LOAD"));
    commands
}

// ---------------------------------------------------------------- restarts

/// A directory that outlives server restarts; removed when the test passes.
struct TempDir(PathBuf);

impl TempDir {
    fn new(name: &str) -> TempDir {
        let n = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| d.as_nanos())
            .unwrap_or_default();
        let dir =
            std::env::temp_dir().join(format!("rl-replication-{name}-{}-{n}", std::process::id()));
        std::fs::create_dir_all(&dir).expect("create test dir");
        TempDir(dir)
    }

    fn options(&self, args: &[&str]) -> Options {
        Options {
            args: strings(args),
            dir: Some(self.0.clone()),
            ..Options::default()
        }
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        if !std::thread::panicking() {
            let _ = std::fs::remove_dir_all(&self.0);
        }
    }
}

/// Takes two of the three units of each limiter; returns every key's state.
fn use_two_of_three(c: &mut Connection) -> State {
    align_to_window(c, HOUR_MS, 30_000);
    for l in COMMANDS {
        let k = l.key("k");
        expect(l.hour_call(c, &k, None), 1, 2, l.name);
        expect(l.hour_call(c, &k, Some(1)), 1, 1, l.name);
        expect(l.hour_call(c, &k, Some(0)), 1, 1, l.name);
    }
    let state = state(c);
    assert_eq!(state.len(), COMMANDS.len(), "{state:?}");
    state
}

/// Each limiter goes on from where it was: one unit left, then rejected.
fn assert_one_unit_left(c: &mut Connection, what: &str) {
    for l in COMMANDS {
        let k = l.key("k");
        expect(
            l.hour_call(c, &k, None),
            last_units(l),
            0,
            &format!("{} after {what}", l.name),
        );
        expect(
            l.hour_call(c, &k, None),
            0,
            0,
            &format!("{} after {what}", l.name),
        );
    }
}

fn assert_restored(c: &mut Connection, before: &State, what: &str) {
    assert_eq!(&state(c), before, "DUMP and PEXPIRETIME after {what}");
}

#[test]
fn aof_restart_restores_every_limiter_and_decisions_continue() {
    for save in [false, true] {
        let what = format!(
            "an AOF restart (SHUTDOWN {})",
            if save { "SAVE" } else { "NOSAVE" }
        );
        let dir = TempDir::new("aof");
        let opts = dir.options(&AOF_ARGS);
        let s = Server::with(opts.clone());
        let before = use_two_of_three(&mut s.conn());
        s.shutdown(save);
        let s = Server::with(opts);
        let mut c = s.conn();
        assert_restored(&mut c, &before, &what);
        assert_one_unit_left(&mut c, &what);
    }
}

#[test]
fn aof_replays_on_a_server_without_the_module() {
    let dir = TempDir::new("aof-plain");
    let opts = dir.options(&AOF_ARGS);
    let s = Server::with(opts.clone());
    let before = use_two_of_three(&mut s.conn());
    s.shutdown(false);
    let s = Server::with(Options {
        without_module: true,
        ..opts
    });
    assert_restored(&mut s.conn(), &before, "an AOF replay without the module");
}

#[test]
fn debug_reload_keeps_every_limiter_and_decisions_continue() {
    let s = Server::with(Options {
        args: strings(&["--enable-debug-command", "yes"]),
        ..Options::default()
    });
    let mut c = s.conn();
    let before = use_two_of_three(&mut c);
    let _: () = cmd("DEBUG")
        .arg("RELOAD")
        .query(&mut c)
        .expect("DEBUG RELOAD");
    assert_restored(&mut c, &before, "DEBUG RELOAD");
    assert_one_unit_left(&mut c, "DEBUG RELOAD");
}

#[test]
fn save_and_restart_keeps_every_limiter_and_decisions_continue() {
    let dir = TempDir::new("rdb");
    let opts = dir.options(&["--dbfilename", "dump.rdb"]);
    let s = Server::with(opts.clone());
    let mut c = s.conn();
    let before = use_two_of_three(&mut c);
    let _: () = cmd("SAVE").query(&mut c).expect("SAVE");
    assert_eq!(rdb_changes(&mut c), 0, "SAVE wrote everything");
    drop(c);
    s.shutdown(false);
    assert!(dir.0.join("dump.rdb").exists(), "SAVE wrote dump.rdb");
    let s = Server::with(opts);
    let mut c = s.conn();
    assert_restored(&mut c, &before, "SAVE and a restart");
    assert_one_unit_left(&mut c, "SAVE and a restart");
}

// ---------------------------------------------------------------- leases

/// Thousands of mixed RL.ACQUIRE / RL.RELEASE calls on a few keys (grants,
/// renewals, rejections, releases of held, unknown and expired ids, leases that
/// end and are trimmed, RL.ALL with an ACQUIRE policy), in rounds a little longer
/// than the short leases. Ends once every short lease is over, each key that is
/// left holding a lease of an hour or more, so nothing expires while servers are
/// compared. Returns how many calls were allowed.
fn lease_workload(c: &mut Connection) -> usize {
    let mut rng = Rng(0x9e37_79b9_7f4a_7c15);
    let mut next = move |n: u64| rng.below(n);
    let ids = ["a", "b", "c", "d", "\u{0}é", "job-42"];
    let mut allowed = 0;
    for _ in 0..8 {
        let mut p = redis::pipe();
        for _ in 0..400 {
            let key = format!("lease:{}", next(6));
            let id = ids[next(ids.len() as u64) as usize];
            let limit = (1 + next(3)).to_string();
            let ttl = ["30ms", "120ms", "1h", "2h"][next(4) as usize];
            let line = match next(10) {
                0..=5 => strings(&["RL.ACQUIRE", &key, &limit, ttl, id]),
                6..=8 => strings(&["RL.RELEASE", &key, id]),
                _ => strings(&[
                    "RL.ALL",
                    "2",
                    &key,
                    "lease:rate",
                    "ACQUIRE",
                    &limit,
                    ttl,
                    id,
                    "FIXED",
                    "100000",
                    "1d",
                ]),
            };
            p.add_command(command_of(&line));
        }
        let replies: Vec<Value> = p.query(c).expect("lease calls");
        allowed += replies
            .iter()
            .filter(|r| match r {
                Value::Int(n) => *n == 1,
                Value::Array(v) => matches!(v.first(), Some(Value::Int(1)))
                    || matches!(v.first(), Some(Value::Array(w)) if w.first() == Some(&Value::Int(1))),
                _ => false,
            })
            .count();
        let now = server_ms(c);
        wait_until_server_ms(c, now + 50);
    }
    let now = server_ms(c);
    wait_until_server_ms(c, now + 200);
    allowed
}

#[test]
fn leases_reach_replicas_and_the_aof_as_native_effects_and_end_identical() {
    let dir = TempDir::new("leases");
    let opts = dir.options(&AOF_ARGS);
    let primary = Server::with(opts.clone());
    let with_module = primary.replica(true);
    let without_module = primary.replica(false);
    let mut c = primary.conn();
    let allowed = lease_workload(&mut c);
    assert!(allowed > 500, "only {allowed} calls allowed");
    assert!(!keys(&mut c).is_empty(), "some leases are held");
    for replica in [&with_module, &without_module] {
        primary.sync(replica);
        let mut r = replica.conn();
        assert_same_data(&mut c, &mut r, "replica vs primary after the lease calls");
        assert_eq!(repl_offset(&mut r), repl_offset(&mut c));
    }
    // The AOF holds native commands only, and replays to the same data, with the
    // module or without it.
    let commands = aof_commands(&dir.0);
    assert!(
        commands
            .iter()
            .all(|c| !c[0].starts_with("RL.") && c[0] != "FCALL"),
        "{:?}",
        commands
            .iter()
            .find(|c| c[0].starts_with("RL.") || c[0] == "FCALL")
    );
    for effect in ["ZADD", "ZREM", "ZREMRANGEBYSCORE", "PEXPIREAT"] {
        assert!(
            commands.iter().any(|c| c[0] == effect),
            "{effect} in the AOF"
        );
    }
    let before = state(&mut c);
    drop((with_module, without_module));
    primary.shutdown(false);
    for without in [false, true] {
        let s = Server::with(Options {
            without_module: without,
            ..opts.clone()
        });
        assert_eq!(
            state(&mut s.conn()),
            before,
            "AOF replay, without module: {without}"
        );
        s.shutdown(false);
    }
}

// ---------------------------------------------------------------- DELAY

/// RL.GCRA with `DELAY max` (and RL.ALL with a GCRA policy carrying it): a
/// scheduled call writes what any allowed call writes, a call rejected even with
/// the delay writes nothing; replica and AOF hold exactly the primary's effects.
#[test]
fn delayed_calls_replicate_and_log_only_their_effects() {
    let primary = Server::with(Options {
        args: strings(&AOF_ARGS),
        ..Options::default()
    });
    let replica = primary.replica(false);
    let mut c = primary.conn();
    // Capacity 2, 1 per hour, DELAY 3h: two at once, three scheduled, the sixth
    // rejected. Then RL.ALL: its GCRA key (capacity 1, DELAY 1h) is scheduled once.
    let gcra = ["RL.GCRA", "gcra:q", "2", "1", "1h", "DELAY", "3h"];
    let all = [
        "RL.ALL", "2", "gcra:a", "fixed:b", "GCRA", "1", "1", "1h", "DELAY", "1h", "FIXED", "5",
        "1h",
    ];
    let calls: Vec<(&[&str], i64, i64)> = vec![
        // (call, allowed, its wait in hours)
        (&gcra, 1, 0),
        (&gcra, 1, 0),
        (&gcra, 1, 1),
        (&gcra, 1, 2),
        (&gcra, 1, 3),
        (&gcra, 0, 1),
        (&all, 1, 0),
        (&all, 1, 1),
        (&all, 0, 1),
    ];
    let mut expected: Vec<Vec<String>> = Vec::new();
    for (call, allowed, hours) in calls {
        let before = repl_offset(&mut c);
        let raw: Value = command_of(call).query(&mut c).expect("an RL call");
        let combined: Vec<i64> = match redis::from_redis_value::<Vec<Vec<i64>>>(&raw) {
            Ok(replies) => replies[0].clone(),
            Err(_) => redis::from_redis_value(&raw).expect("five integers"),
        };
        assert_eq!(combined[0], allowed, "{call:?}: {combined:?}");
        // The wait (or the rejection's retry) is `hours` from the TAT the call read,
        // taken a few ms before this one.
        let retry = combined[3];
        assert!(
            retry <= hours * HOUR_MS && retry > hours * HOUR_MS - 5_000,
            "{call:?}: retry_after {retry}, expected about {hours} h"
        );
        if allowed == 0 {
            assert_eq!(repl_offset(&mut c), before, "{call:?} propagated something");
            continue;
        }
        let keys = if call[0] == "RL.ALL" {
            &call[2..4]
        } else {
            &call[1..2]
        };
        for key in keys {
            let value: String = cmd("GET").arg(*key).query(&mut c).expect("GET");
            let at = pexpiretime(&mut c, key).to_string();
            expected.push(strings(&["SET", key, &value, "PXAT", &at]));
        }
    }
    primary.sync(&replica);
    let mut r = replica.conn();
    assert_same_data(&mut c, &mut r, "replica vs primary after DELAY calls");
    let effects: Vec<Vec<String>> = aof_commands_but_the_library(&primary.dir)
        .into_iter()
        .filter(|c| !["SELECT", "MULTI", "EXEC"].contains(&c[0].to_ascii_uppercase().as_str()))
        .collect();
    assert_eq!(
        effects, expected,
        "the AOF holds each allowed call's SET … PXAT"
    );
}
