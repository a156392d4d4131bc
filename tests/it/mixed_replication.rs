//! Many mixed RL calls against a primary with two replicas, one with the module and
//! one without it.
//!
//! Contract: replicas receive only native effects with absolute times, so after they
//! catch up they hold the primary's keys with byte-identical values (DUMP) and the
//! same absolute expiries (PEXPIRETIME), and no other keys, whatever mix of allowed,
//! rejected, COST 0 and COST n calls, and keys expiring and coming back, produced them.
//!
//! Keys expire while the servers are compared, so the comparison is made exact:
//! the primary's key list is read before the replicas', nothing writes meanwhile, and
//! only keys that outlive the whole comparison (by their absolute expiry) must match.

use crate::common::*;

use std::collections::{BTreeMap, BTreeSet};
use std::time::Duration;

const DAY_MS: i64 = 86_400_000;
const CALLS: usize = 10_000;
const ROUNDS: usize = 5;
const PIPELINE: usize = 500;
/// Server time between the starts of two rounds: longer than any short-lived key
/// lives, so the next round finds those keys expired.
const ROUND_GAP_MS: i64 = 250;

/// Keys of one command under one policy.
struct Policy {
    command: &'static Command,
    /// How long its keys live: `day`, `seconds` or `short` (< ROUND_GAP_MS).
    lifetime: &'static str,
    params: Vec<String>,
    /// Limit (capacity).
    limit: u64,
    keys: usize,
}

/// (lifetime, window, keys per command, limit of the i-th command).
#[allow(clippy::type_complexity)]
const LIFETIMES: [(&str, &str, usize, fn(usize) -> u64); 3] = [
    ("day", "1d", 100, |i| 3 + i as u64),
    ("seconds", "2s", 60, |_| 4),
    ("short", "150ms", 40, |i| 2 + (i % 2) as u64),
];

/// Every command under every lifetime.
fn policies() -> Vec<Policy> {
    LIFETIMES
        .iter()
        .flat_map(|&(lifetime, window, keys, limit)| {
            COMMANDS
                .iter()
                .enumerate()
                // A calendar period (RL.QUOTA) is a day at least: the day-long keys.
                .filter(move |(_, c)| lifetime == "day" || !c.calendar())
                .map(move |(i, &command)| Policy {
                    command,
                    lifetime,
                    params: command.per(limit(i), window),
                    limit: limit(i),
                    // Its day-long keys see enough calls to reject some.
                    keys: if command.calendar() { 10 } else { keys },
                })
        })
        .collect()
}

/// One call of the workload.
struct Call<'p> {
    policy: &'p Policy,
    key: String,
    cost: Option<u64>,
}

impl Call<'_> {
    fn cmd(&self) -> redis::Cmd {
        self.policy
            .command
            .cmd(&self.key, &self.policy.params, self.cost)
    }

    /// Whether the reply is of a call that started a block (RL.PENALTY), a
    /// rejected call that wrote: it waits the whole block (the policy's block and
    /// max are equal), which only a call in the same ms as the block's start
    /// also answers.
    fn started_a_block(&self, raw: &[i64]) -> bool {
        if !self.policy.command.blocks {
            return false;
        }
        let r = self.policy.command.reply_of(raw);
        let block = duration_ms(&self.policy.params[2]) as i64;
        r.allowed == 0 && r.retry_after == block
    }

    /// Whether a rejected call wrote because its tenant joined the budget
    /// ([`Command::joins`]): a cost above 0 on a day-long key that does not hold
    /// its tenant yet, which here is one that no call has written (each key has one
    /// tenant, remembered a day after its last write). `written`: the day-long keys
    /// written so far.
    fn joined(&self, outcome: &str, written: &BTreeSet<String>) -> bool {
        self.policy.command.joins
            && self.policy.lifetime == "day"
            && self.cost != Some(0)
            && matches!(outcome, "rejected" | "never")
            && !written.contains(&self.key)
    }

    /// What the reply says happened (CL.THROTTLE's read in RL's shape; its
    /// retry_after in seconds keeps the signs this looks at).
    fn outcome(&self, raw: &[i64]) -> &'static str {
        let limit = self.policy.limit as i64;
        assert_eq!(raw.len(), 5, "{}: {raw:?}", self.key);
        let r = self.policy.command.reply_of(raw);
        assert_eq!(r.limit, limit, "{}: {raw:?}", self.key);
        assert!((0..=limit).contains(&r.remaining), "{}: {raw:?}", self.key);
        let n = self.cost.unwrap_or(1);
        match (n, r.allowed) {
            (0, 1) => "inspected",
            // A limiter that blocks answers every call while blocked with the time
            // left, a COST above its limit too (which blocks at once).
            (_, 0) if self.policy.command.blocks && r.retry_after > 0 => {
                if n > self.policy.limit {
                    "never"
                } else {
                    "rejected"
                }
            }
            (n, 0) if n > self.policy.limit && r.retry_after == -1 => "never",
            (n, 0) if n <= self.policy.limit && r.retry_after > 0 => "rejected",
            (n, 1) if n > 0 && n <= self.policy.limit && r.retry_after == 0 => "allowed",
            _ => panic!(
                "{} COST {:?}: impossible reply {raw:?}",
                self.key, self.cost
            ),
        }
    }
}

/// The calls of the workload: every policy, many keys, and the cost mix
/// 70% default, 10% COST 0, 15% COST 2, 5% COST above the limit.
fn workload(policies: &[Policy]) -> Vec<Call<'_>> {
    let mut rng = Rng(0x9e37_79b9_7f4a_7c15);
    (0..CALLS)
        .map(|_| {
            let policy = rng.pick(policies);
            let key = format!(
                "{}:{}:{}",
                policy.command.short,
                policy.lifetime,
                rng.index(policy.keys)
            );
            let cost = match rng.below(20) {
                0..=1 => Some(0),
                2..=4 => Some(2),
                5 => Some(policy.limit + 1),
                6..=8 => Some(1),
                _ => None,
            };
            Call { policy, key, cost }
        })
        .collect()
}

fn keys(c: &mut Connection) -> BTreeSet<String> {
    cmd("KEYS").arg("*").query(c).expect("KEYS")
}

type Snapshot = (Option<Vec<u8>>, i64);

/// DUMP (as [`snapshot`] compares it) and PEXPIRETIME of every key, in one pipeline.
fn snapshots(c: &mut Connection, keys: &BTreeSet<String>) -> BTreeMap<String, Snapshot> {
    let mut pipe = redis::pipe();
    for key in keys {
        comparable_dump(&mut pipe, key);
        pipe.cmd("PEXPIRETIME").arg(key);
    }
    let values: Vec<redis::Value> = pipe.query(c).expect("DUMP and PEXPIRETIME");
    keys.iter()
        .zip(values.chunks(2))
        .map(|(key, v)| {
            let dump = redis::from_redis_value(&v[0]).expect("DUMP");
            let at = redis::from_redis_value(&v[1]).expect("PEXPIRETIME");
            (key.clone(), (dump, at))
        })
        .collect()
}

/// Compares the replicas with the primary (no writes may run meanwhile) and returns
/// the primary's keys with their snapshots. Every key the primary lists has an
/// expiry; every key that outlives the comparison is on each replica with the same
/// DUMP and PEXPIRETIME; a replica lists no key the primary did not list before it.
fn assert_replicas_match(
    primary: &mut Connection,
    replicas: &mut [(&str, Connection)],
) -> BTreeMap<String, Snapshot> {
    let listed = keys(primary);
    let listed_by: Vec<BTreeSet<String>> = replicas.iter_mut().map(|(_, c)| keys(c)).collect();
    let want = snapshots(primary, &listed);
    let got: Vec<_> = replicas
        .iter_mut()
        .map(|(_, c)| snapshots(c, &listed))
        .collect();
    // Keys expiring after this instant lived through every read above.
    let end = server_ms(primary);

    for (key, (_, at)) in &want {
        // -2: expired since KEYS listed it.
        assert_ne!(*at, -1, "{key} has no expiry on the primary");
    }
    for (((name, _), listed_here), got) in replicas.iter().zip(&listed_by).zip(&got) {
        let extra: Vec<_> = listed_here.difference(&listed).collect();
        assert!(
            extra.is_empty(),
            "{name} has keys the primary lacks: {extra:?}"
        );
        for (key, snap) in want.iter().filter(|(_, (_, at))| *at > end) {
            assert!(listed_here.contains(key), "{name} lacks {key}");
            assert_eq!(
                got.get(key),
                Some(snap),
                "{name}: DUMP and PEXPIRETIME of {key}"
            );
        }
    }
    want
}

#[test]
fn replicas_with_and_without_the_module_end_identical_after_ten_thousand_mixed_calls() {
    let primary = Server::start();
    let with_module = primary.replica(true);
    let without_module = primary.replica(false);
    let mut c = primary.conn();
    // No day-long fixed window ends during the test.
    align_to_window(&mut c, DAY_MS, 120_000);

    let policies = policies();
    let calls = workload(&policies);
    let mut outcomes = BTreeMap::<(&str, &str), usize>::new();
    let mut written_for_a_day = BTreeSet::new();
    let mut next_round_at = 0;
    for round in calls.chunks(CALLS / ROUNDS) {
        wait_for(Duration::from_secs(10), "the next round", || {
            (server_ms(&mut c) >= next_round_at).then_some(())
        });
        next_round_at = server_ms(&mut c) + ROUND_GAP_MS;
        for batch in round.chunks(PIPELINE) {
            let mut pipe = redis::pipe();
            for call in batch {
                pipe.add_command(call.cmd());
            }
            let replies: Vec<Vec<i64>> = pipe.query(&mut c).expect("every call succeeds");
            for (call, reply) in batch.iter().zip(&replies) {
                let outcome = call.outcome(reply);
                *outcomes
                    .entry((call.policy.command.name, outcome))
                    .or_default() += 1;
                let wrote = outcome == "allowed"
                    || call.started_a_block(reply)
                    || call.joined(outcome, &written_for_a_day);
                if wrote && call.policy.lifetime == "day" {
                    written_for_a_day.insert(call.key.clone());
                }
            }
        }
    }
    for policy in policies.iter().filter(|p| p.lifetime == "day") {
        for outcome in ["allowed", "rejected", "inspected", "never"] {
            let n = outcomes.get(&(policy.command.name, outcome)).copied();
            assert!(
                n.unwrap_or(0) > 0,
                "no {outcome} {} call: {outcomes:?}",
                policy.command.name
            );
        }
    }
    assert!(
        info_field(&mut c, "stats", "expired_keys") > 0,
        "some keys expired during the workload"
    );

    let mut replicas = [
        ("the replica with the module", with_module.conn()),
        ("the replica without the module", without_module.conn()),
    ];
    for replica in [&with_module, &without_module] {
        primary.sync(replica);
    }
    let live = assert_replicas_match(&mut c, &mut replicas);
    let missing: Vec<_> = written_for_a_day
        .iter()
        .filter(|k| !live.contains_key(*k))
        .collect();
    assert!(missing.is_empty(), "day-long keys missing: {missing:?}");

    // Once every key of a short policy has expired, the servers hold exactly the
    // same keys, and all of them outlive the comparison.
    let day_long = server_ms(&mut c) + 60_000;
    let last_short = live
        .values()
        .map(|&(_, at)| at)
        .filter(|&at| at < day_long)
        .max()
        .unwrap_or(0);
    wait_for(
        Duration::from_secs(10),
        "short-lived keys to expire",
        || (server_ms(&mut c) > last_short).then_some(()),
    );
    for replica in [&with_module, &without_module] {
        primary.sync(replica);
    }
    let live = assert_replicas_match(&mut c, &mut replicas);
    let end = server_ms(&mut c);
    assert!(live.values().all(|&(_, at)| at > end), "{live:?}");
    let remaining: BTreeSet<String> = live.into_keys().collect();
    assert_eq!(
        remaining, written_for_a_day,
        "exactly the day-long keys that took units remain"
    );
    for (name, r) in &mut replicas {
        assert_eq!(keys(r), remaining, "{name}: the same keys");
    }
    // It holds the data, but could not serve RL calls if it were promoted (the
    // library's replica has the functions: FUNCTION LOAD replicates).
    for l in COMMANDS {
        if is_library() {
            break;
        }
        let args = l.args("k", &l.per(3, "1d"), None);
        let args: Vec<&[u8]> = args.iter().map(|a| a.as_bytes()).collect();
        let err = error_of(&mut replicas[1].1, &args);
        assert!(err.starts_with("ERR unknown command"), "{}: {err}", l.name);
    }
}
