//! RL on a real Redis Cluster.
//!
//! Contract: the key (first argument) is declared to Redis, so the cluster routes each
//! call to the node that owns the key's slot, a node refuses keys it does not own
//! with MOVED, hash tags keep a user's limiters on one slot, and a replica that takes
//! over a failed primary goes on with the limiter state replicated before the failure.

use std::collections::BTreeSet;

use crate::common::*;
use crate::topology::{Cluster, Migration, SLOTS};
use redis::cluster::cluster_pipe;
use redis::cluster_routing::get_slot;

const DAY_MS: i64 = 86_400_000;

/// Five calls on a fresh key with a limit of 3: (allowed, remaining) of each.
const FIVE_CALLS: [(i64, i64); 5] = [(1, 2), (1, 1), (1, 0), (0, 0), (0, 0)];

/// Calls with a limit (capacity) of 3 per day: nothing comes back in a test.
trait Daily {
    /// The command's key under hash tag `tag`, so each command has its own key.
    fn key(&self, tag: &str) -> String;
    fn daily_args(&self, key: &str, cost: Option<u64>) -> Vec<String>;
    fn daily(&self, key: &str, cost: Option<u64>) -> redis::Cmd;
}

impl Daily for Command {
    fn key(&self, tag: &str) -> String {
        format!("{{{tag}}}:{}", self.short)
    }

    fn daily_args(&self, key: &str, cost: Option<u64>) -> Vec<String> {
        self.args(key, &self.per(3, "1d"), cost)
    }

    fn daily(&self, key: &str, cost: Option<u64>) -> redis::Cmd {
        command_of(&self.daily_args(key, cost))
    }
}

/// (allowed, remaining) of raw replies of `l` (CL.THROTTLE's read in RL's shape).
fn decisions(l: &Command, replies: &[Vec<i64>]) -> Vec<(i64, i64)> {
    replies
        .iter()
        .map(|r| l.reply_of(r))
        .map(|r| (r.allowed, r.remaining))
        .collect()
}

/// What `l` answers where a limiter would answer `expected`: one that blocks
/// (RL.PENALTY) rejects the call that reaches its limit, (1, 0), and starts a block.
fn answered(l: &Command, expected: &[(i64, i64)]) -> Vec<(i64, i64)> {
    expected
        .iter()
        .map(|&d| if l.blocks && d == (1, 0) { (0, 0) } else { d })
        .collect()
}

/// (allowed, remaining) of one raw reply of each command of the table, in order.
fn decisions_of_each(replies: &[Vec<i64>]) -> Vec<(i64, i64)> {
    assert_eq!(replies.len(), COMMANDS.len(), "{replies:?}");
    COMMANDS
        .iter()
        .zip(replies)
        .flat_map(|(l, r)| decisions(l, std::slice::from_ref(r)))
        .collect()
}

/// A hash tag for each slot (found with the client's CRC16; the server's view is
/// checked separately), in slot order.
fn tags_for(slots: &BTreeSet<u16>) -> Vec<(u16, String)> {
    let mut found = std::collections::BTreeMap::new();
    for n in 0u32.. {
        let tag = format!("t{n}");
        let slot = get_slot(tag.as_bytes());
        if slots.contains(&slot) {
            found.entry(slot).or_insert(tag);
            if found.len() == slots.len() {
                return found.into_iter().collect();
            }
        }
    }
    unreachable!("every slot has a tag")
}

fn dbsize(c: &mut Connection) -> i64 {
    cmd("DBSIZE").query(c).expect("DBSIZE")
}

#[test]
fn a_cluster_client_runs_every_command_on_keys_across_all_slots_with_exact_per_key_limits() {
    let cluster = Cluster::start(3, 0);
    let primaries = cluster.primaries();
    assert_eq!(primaries.len(), 3, "{primaries:?}");
    // Every 16th slot, and both ends of each node's range.
    let mut slots: BTreeSet<u16> = (0..SLOTS).step_by(16).collect();
    for p in &primaries {
        slots.extend([p.first_slot(), p.last_slot()]);
    }
    let tags = tags_for(&slots);
    assert!(tags.len() * COMMANDS.len() >= 3000, "{} tags", tags.len());
    align_to_window(&mut cluster.conn(primaries[0].port), DAY_MS, 60_000);

    let mut client = cluster.client();
    let mut nodes = std::collections::HashMap::new();
    for chunk in tags.chunks(128) {
        let replies: Vec<Vec<i64>> = if is_library() {
            // redis-rs routes FCALL by its second argument (the function's name), not
            // by its key: each tag's calls go to its slot's owner here.
            let mut replies = Vec::new();
            for (_, tag) in chunk {
                let port = primaries
                    .iter()
                    .find(|p| p.owns(get_slot(tag.as_bytes())))
                    .expect("an owner")
                    .port;
                let c = nodes.entry(port).or_insert_with(|| cluster.conn(port));
                let mut pipe = redis::pipe();
                for l in COMMANDS {
                    for _ in FIVE_CALLS {
                        pipe.add_command(l.daily(&l.key(tag), None));
                    }
                }
                let r: Vec<Vec<i64>> = pipe.query(c).expect("every call succeeds");
                replies.extend(r);
            }
            replies
        } else {
            let mut pipe = cluster_pipe();
            for (_, tag) in chunk {
                for l in COMMANDS {
                    for _ in FIVE_CALLS {
                        pipe.add_command(l.daily(&l.key(tag), None));
                    }
                }
            }
            pipe.query(&mut client).expect("every call succeeds")
        };
        let mut per_key = replies.chunks(FIVE_CALLS.len());
        for (_, tag) in chunk {
            for l in COMMANDS {
                let got = decisions(l, per_key.next().expect("replies for every key"));
                assert_eq!(got, answered(l, &FIVE_CALLS), "{} {}", l.name, l.key(tag));
            }
        }
    }

    // Each node holds exactly the keys of the slots it owns, as the server hashes them.
    for p in &primaries {
        let mine: Vec<u16> = tags.iter().map(|t| t.0).filter(|&s| p.owns(s)).collect();
        assert!(mine.len() > 300, "node {} got {} slots", p.port, mine.len());
        let mut c = cluster.conn(p.port);
        let mut pipe = redis::pipe();
        for slot in &mine {
            pipe.cmd("CLUSTER").arg("COUNTKEYSINSLOT").arg(slot);
        }
        let counts: Vec<i64> = pipe.query(&mut c).expect("COUNTKEYSINSLOT");
        for (slot, n) in mine.iter().zip(counts) {
            assert_eq!(n, COMMANDS.len() as i64, "keys in slot {slot}");
        }
        assert_eq!(
            dbsize(&mut c),
            (mine.len() * COMMANDS.len()) as i64,
            "node {}",
            p.port
        );
    }
}

#[test]
fn hash_tagged_limiters_of_one_user_share_a_node_and_work_together_in_transactions_and_scripts() {
    let cluster = Cluster::start(3, 0);
    let keys: Vec<String> = COMMANDS.iter().map(|l| l.key("user42")).collect();
    let slot = cluster.keyslot(&keys[0]);
    for key in &keys {
        assert_eq!(cluster.keyslot(key), slot, "{key}");
    }
    let owner = cluster.owner(slot);
    let mut c = cluster.conn(owner.port);
    align_to_window(&mut c, DAY_MS, 60_000);

    // One unit of each limiter in one MULTI/EXEC on the owning node.
    let mut tx = redis::pipe();
    tx.atomic();
    for (l, key) in COMMANDS.iter().zip(&keys) {
        tx.add_command(l.daily(key, None));
    }
    let replies: Vec<Vec<i64>> = tx.query(&mut c).expect("MULTI/EXEC");
    assert_eq!(
        decisions_of_each(&replies),
        vec![(1, 2); COMMANDS.len()],
        "inside MULTI/EXEC"
    );

    // The cluster client finds the same state on the same node.
    let mut client = cluster.client();
    for (l, key) in COMMANDS.iter().zip(&keys) {
        let replies: Vec<Vec<i64>> = (0..3)
            .map(|_| l.daily(key, None).query(&mut client).expect(l.name))
            .collect();
        assert_eq!(
            decisions(l, &replies),
            answered(l, &[(1, 1), (1, 0), (0, 0)]),
            "{key}"
        );
    }
    for p in cluster.primaries() {
        let expected = if p.port == owner.port { keys.len() } else { 0 };
        assert_eq!(dbsize(&mut cluster.conn(p.port)), expected as i64, "{p:?}");
    }

    // A script may call the limiters of one user, but not of two users (a module's:
    // a script cannot FCALL).
    if is_library() {
        return;
    }
    let calls: Vec<String> = COMMANDS
        .iter()
        .enumerate()
        .map(|(i, l)| {
            let mut args = vec![format!("'{}'", l.name), format!("KEYS[{}]", i + 1)];
            let line = l.daily_args("", Some(0));
            args.extend(line[2..].iter().map(|a| format!("'{a}'")));
            format!("redis.call({})", args.join(", "))
        })
        .collect();
    let script = format!("return {{{}}}", calls.join(", "));
    let eval = |keys: &[String]| {
        let mut command = cmd("EVAL");
        command.arg(&script).arg(keys.len()).arg(keys);
        command
    };
    let replies: Vec<Vec<i64>> = eval(&keys)
        .query(&mut client)
        .expect("EVAL on one hash tag");
    let full: Vec<(i64, i64)> = COMMANDS
        .iter()
        .flat_map(|l| answered(l, &[(1, 0)]))
        .collect();
    assert_eq!(decisions_of_each(&replies), full, "from Lua");
    assert_ne!(cluster.keyslot("{user7}:api"), slot, "another user's slot");
    let mut across = keys.clone();
    *across.last_mut().unwrap() = "{user7}:api".to_string();
    let err = eval(&across)
        .query::<redis::Value>(&mut client)
        .expect_err("EVAL across slots");
    assert_eq!(err.code(), Some("CROSSSLOT"), "{err}");
}

#[test]
fn a_node_answers_moved_for_rl_calls_on_keys_another_node_owns() {
    let cluster = Cluster::start(3, 0);
    let primaries = cluster.primaries();
    let here = &primaries[0];
    let mut c = cluster.conn(here.port);
    for other in &primaries[1..] {
        let slot = other.first_slot();
        let (_, tag) = &tags_for(&BTreeSet::from([slot]))[0];
        for l in COMMANDS {
            for cost in [None, Some(0)] {
                let args = l.daily_args(&l.key(tag), cost);
                let args: Vec<&[u8]> = args.iter().map(|a| a.as_bytes()).collect();
                assert_eq!(
                    error_of(&mut c, &args),
                    format!("MOVED {slot} 127.0.0.1:{}", other.port),
                    "{} {cost:?} on node {}",
                    l.name,
                    here.port
                );
            }
        }
    }
    let (_, own) = &tags_for(&BTreeSet::from([here.first_slot()]))[0];
    for l in COMMANDS {
        let args = l.daily_args(&l.key(own), None);
        let r = l.run(&mut c, &args);
        assert_eq!(
            (r.allowed, r.remaining),
            (1, 2),
            "{} on its own slot",
            l.name
        );
    }
    for p in &primaries {
        let expected = if p.port == here.port {
            COMMANDS.len()
        } else {
            0
        };
        assert_eq!(dbsize(&mut cluster.conn(p.port)), expected as i64, "{p:?}");
    }
}

#[test]
fn command_getkeys_finds_the_key_of_every_rl_command_as_read_write() {
    let s = Server::start();
    let mut c = s.conn();
    for l in COMMANDS {
        for cost in [None, Some(2)] {
            let args = translate(
                l.daily_args("the:key", cost)
                    .into_iter()
                    .map(String::into_bytes)
                    .collect(),
            );
            let keys: Vec<String> = cmd("COMMAND")
                .arg("GETKEYS")
                .arg(&args)
                .query(&mut c)
                .expect("COMMAND GETKEYS");
            assert_eq!(keys, ["the:key"], "{args:?}");
            let flagged: Vec<(String, Vec<String>)> = cmd("COMMAND")
                .arg("GETKEYSANDFLAGS")
                .arg(&args)
                .query(&mut c)
                .expect("COMMAND GETKEYSANDFLAGS");
            assert_eq!(flagged.len(), 1, "{flagged:?}");
            assert_eq!(flagged[0].0, "the:key");
            assert!(
                flagged[0].1.iter().any(|f| f == "RW"),
                "{args:?}: {flagged:?}"
            );
        }
    }
}

#[test]
fn after_a_primary_dies_its_replica_serves_the_limiters_written_before_with_wait() {
    let mut cluster = Cluster::start(3, 1);
    let keys: Vec<String> = COMMANDS.iter().map(|l| l.key("acct7")).collect();
    let slot = cluster.keyslot(&keys[0]);
    let primary = cluster.owner(slot);
    let replica = cluster.replica_of(&primary);

    let mut c = cluster.conn(primary.port);
    align_to_window(&mut c, DAY_MS, 60_000);
    for (l, key) in COMMANDS.iter().zip(&keys) {
        let r: Vec<i64> = l.daily(key, Some(2)).query(&mut c).expect(l.name);
        assert_eq!(decisions(l, &[r]), [(1, 1)], "{key} before the failure");
    }
    let acked: i64 = cmd("WAIT").arg(1).arg(10_000).query(&mut c).expect("WAIT");
    assert_eq!(acked, 1, "the replica acknowledged the writes");
    let before: Vec<_> = keys
        .iter()
        .map(|k| snapshot(&mut c, k.as_bytes()))
        .collect();
    drop(c);

    cluster.kill(primary.port);
    cluster.wait_for_owner(slot, replica.port);

    let mut promoted = cluster.conn(replica.port);
    let after: Vec<_> = keys
        .iter()
        .map(|k| snapshot(&mut promoted, k.as_bytes()))
        .collect();
    assert_eq!(
        after, before,
        "DUMP and PEXPIRETIME on the promoted replica"
    );

    let mut client = cluster.client();
    for (l, key) in COMMANDS.iter().zip(&keys) {
        let replies: Vec<Vec<i64>> = (0..2)
            .map(|_| l.daily(key, None).query(&mut client).expect(l.name))
            .collect();
        assert_eq!(
            decisions(l, &replies),
            answered(l, &[(1, 0), (0, 0)]),
            "{key} goes on from 2 of 3"
        );
        let fresh: Vec<i64> = l
            .daily(&format!("{key}:fresh"), None)
            .query(&mut client)
            .expect(l.name);
        assert_eq!(decisions(l, &[fresh]), [(1, 2)], "a new key after failover");
    }
}

/// Asserts that a key moved by MIGRATE kept its value and (almost) its expiry:
/// MIGRATE carries a TTL as relative time, so the expiry shifts by the transfer time.
fn assert_moved_intact(key: &str, before: &(Option<Vec<u8>>, i64), after: &(Option<Vec<u8>>, i64)) {
    assert!(before.0.is_some(), "{key} existed before");
    assert_eq!(after.0, before.0, "DUMP of {key} after the move");
    let shift = after.1 - before.1;
    assert!(
        (0..1000).contains(&shift),
        "PEXPIRETIME of {key} moved by {shift} ms"
    );
}

#[test]
fn resharding_moves_limiters_with_their_state_and_calls_follow_the_slot() {
    let cluster = Cluster::start(3, 0);
    let keys: Vec<String> = COMMANDS.iter().map(|l| l.key("shop9")).collect();
    let slot = cluster.keyslot(&keys[0]);
    let from = cluster.owner(slot);
    let to = cluster
        .primaries()
        .into_iter()
        .find(|n| n.port != from.port)
        .expect("another primary");
    let mut source = cluster.conn(from.port);
    align_to_window(&mut source, DAY_MS, 60_000);
    let mut client = cluster.client();
    for (l, key) in COMMANDS.iter().zip(&keys) {
        let r: Vec<i64> = l.daily(key, Some(2)).query(&mut client).expect(l.name);
        assert_eq!(decisions(l, &[r]), [(1, 1)], "{key}");
    }
    let before: Vec<_> = keys
        .iter()
        .map(|k| snapshot(&mut source, k.as_bytes()))
        .collect();

    let migration = Migration::begin(&cluster, slot, to.port);
    migration.migrate(&keys[..1]);
    // Half-way, the source sends calls on the moved key, and on new keys, to the
    // target with ASK, and still serves the keys it holds.
    let fixed = COMMANDS[0];
    for key in [keys[0].clone(), format!("{}:new", keys[0])] {
        let args = fixed.daily_args(&key, None);
        let args: Vec<&[u8]> = args.iter().map(|a| a.as_bytes()).collect();
        assert_eq!(
            error_of(&mut source, &args),
            format!("ASK {slot} 127.0.0.1:{}", to.port),
            "{key} during the migration"
        );
    }
    for (l, key) in COMMANDS.iter().zip(&keys).skip(1) {
        let r: Vec<i64> = l.daily(key, Some(0)).query(&mut source).expect(l.name);
        assert_eq!(decisions(l, &[r]), [(1, 1)], "{key} still on the source");
    }
    // A node importing a slot serves its keys only to commands after ASKING.
    let mut target = cluster.conn(to.port);
    let mut asking = redis::pipe();
    asking.cmd("ASKING").ignore();
    comparable_dump(&mut asking, &keys[0]);
    let moved: (Option<Vec<u8>>, i64) = asking
        .cmd("ASKING")
        .ignore()
        .cmd("PEXPIRETIME")
        .arg(&keys[0])
        .query(&mut target)
        .expect("DUMP and PEXPIRETIME after ASKING");
    assert_moved_intact(&keys[0], &before[0], &moved);
    // The cluster client follows ASK to the counter that moved.
    let r: Vec<i64> = fixed.daily(&keys[0], None).query(&mut client).expect("ASK");
    assert_eq!(
        decisions(fixed, &[r]),
        [(1, 0)],
        "{} on the target",
        keys[0]
    );

    migration.finish();
    assert_eq!(dbsize(&mut source), 0, "every key left the source");
    for (i, key) in keys.iter().enumerate().skip(1) {
        assert_moved_intact(key, &before[i], &snapshot(&mut target, key.as_bytes()));
    }
    let mut client = cluster.client();
    for (l, key) in COMMANDS.iter().zip(&keys) {
        let r: Vec<i64> = l.daily(key, None).query(&mut client).expect(l.name);
        let expected = if l.name == fixed.name { (0, 0) } else { (1, 0) };
        assert_eq!(
            decisions(l, &[r]),
            answered(l, &[expected]),
            "{key} after the move"
        );
    }
}

#[test]
fn writes_the_replica_had_not_acknowledged_are_lost_when_the_primary_fails() {
    let mut cluster = Cluster::start(3, 1);
    let keys: Vec<String> = COMMANDS.iter().map(|l| l.key("acct8")).collect();
    let slot = cluster.keyslot(&keys[0]);
    let primary = cluster.owner(slot);
    let replica = cluster.replica_of(&primary);
    let wait_replica =
        |c: &mut Connection, ms: u64| -> i64 { cmd("WAIT").arg(1).arg(ms).query(c).expect("WAIT") };

    let mut c = cluster.conn(primary.port);
    align_to_window(&mut c, DAY_MS, 60_000);
    for (l, key) in COMMANDS.iter().zip(&keys) {
        let r: Vec<i64> = l.daily(key, None).query(&mut c).expect(l.name);
        assert_eq!(decisions(l, &[r]), [(1, 2)], "{key}");
    }
    assert_eq!(
        wait_replica(&mut c, 10_000),
        1,
        "the first unit is replicated"
    );

    // A replica paused for writes holds back its primary's stream.
    let mut r = cluster.conn(replica.port);
    let _: () = cmd("CLIENT")
        .arg(&["PAUSE", "60000", "WRITE"])
        .query(&mut r)
        .expect("CLIENT PAUSE");
    for (l, key) in COMMANDS.iter().zip(&keys) {
        let r: Vec<i64> = l.daily(key, Some(2)).query(&mut c).expect(l.name);
        assert_eq!(decisions(l, &[r]), answered(l, &[(1, 0)]), "{key}");
    }
    assert_eq!(
        wait_replica(&mut c, 300),
        0,
        "WAIT tells the rest is not replicated"
    );
    drop(c);

    cluster.kill(primary.port);
    cluster.wait_for_owner(slot, replica.port);
    let _: () = cmd("CLIENT")
        .arg("UNPAUSE")
        .query(&mut r)
        .expect("CLIENT UNPAUSE");
    let mut client = cluster.client();
    for (l, key) in COMMANDS.iter().zip(&keys) {
        let r: Vec<i64> = l.daily(key, None).query(&mut client).expect(l.name);
        assert_eq!(
            decisions(l, &[r]),
            [(1, 1)],
            "{key}: only the acknowledged unit survived"
        );
    }
}

#[test]
fn rl_all_runs_on_hash_tagged_keys_and_is_refused_across_slots() {
    let cluster = Cluster::start(3, 0);
    let (sec, day) = ("{user42}:per-second", "{user42}:per-day");
    let slot = cluster.keyslot(sec);
    assert_eq!(cluster.keyslot(day), slot);
    let line = |a: &str, b: &str| {
        let mut command = cmd("RL.ALL");
        command.arg(&["2", a, b, "BUCKET", "3", "3", "1d", "FIXED", "2", "1d"]);
        on_backend(&command)
    };
    // The owner answers; the cluster client gets there too (following MOVED if it
    // routed by another argument).
    let owner = cluster.owner(slot);
    let mut c = cluster.conn(owner.port);
    align_to_window(&mut c, DAY_MS, 60_000);
    let replies: Vec<Vec<i64>> = line(sec, day).query(&mut c).expect("on the owner");
    assert_eq!(replies[0][..3], [1, 2, 1], "{replies:?}");
    let mut client = cluster.client();
    let replies: Vec<Vec<i64>> = line(sec, day).query(&mut client).expect("cluster client");
    assert_eq!(replies[0][..3], [1, 2, 0], "{replies:?}");
    let replies: Vec<Vec<i64>> = line(sec, day).query(&mut client).expect("cluster client");
    assert_eq!(replies[0][0], 0, "the daily limit of 2: {replies:?}");
    assert_eq!(
        replies[1][2], 1,
        "the bucket kept its last token: {replies:?}"
    );
    // Another node sends the caller to the owner.
    let other = cluster
        .primaries()
        .into_iter()
        .find(|p| p.port != owner.port)
        .unwrap();
    let err = line(sec, day)
        .query::<Value>(&mut cluster.conn(other.port))
        .expect_err("not the owner");
    assert_eq!(err.code(), Some("MOVED"), "{err}");
    // Keys of two slots: CROSSSLOT from any node, nothing written.
    let elsewhere = "{user7}:per-day";
    assert_ne!(cluster.keyslot(elsewhere), slot);
    for p in cluster.primaries() {
        let err = line(sec, elsewhere)
            .query::<Value>(&mut cluster.conn(p.port))
            .expect_err("across slots");
        assert_eq!(err.code(), Some("CROSSSLOT"), "{err}");
    }
    let total: i64 = cluster
        .primaries()
        .iter()
        .map(|p| dbsize(&mut cluster.conn(p.port)))
        .sum();
    assert_eq!(total, 2, "only the two tagged keys exist");
}

#[test]
fn leases_of_one_user_live_on_their_hash_tags_slot_beside_its_rate_limits() {
    let cluster = Cluster::start(3, 0);
    let (conc, rate) = ("{user42}:conc", "{user42}:rate");
    let slot = cluster.keyslot(conc);
    assert_eq!(cluster.keyslot(rate), slot);
    let owner = cluster.owner(slot);
    let mut client = cluster.client();
    let acquire = |c: &mut redis::cluster::ClusterConnection, id: &str| -> Vec<i64> {
        command_of(&["RL.ACQUIRE", conc, "2", "1d", id])
            .query(c)
            .expect("RL.ACQUIRE")
    };
    assert_eq!(acquire(&mut client, "a")[..3], [1, 2, 1]);
    // "At most 2 at once and 3 a day", on the owning node, in one call.
    let mut c = cluster.conn(owner.port);
    let both = |c: &mut Connection, id: &str, other: &str| {
        command_of(&[
            "RL.ALL", "2", conc, other, "ACQUIRE", "2", "1d", id, "FIXED", "3", "1d",
        ])
        .query::<Vec<Vec<i64>>>(c)
    };
    assert_eq!(both(&mut c, "b", rate).expect("RL.ALL")[0][0], 1);
    assert_eq!(acquire(&mut client, "c")[..3], [0, 2, 0], "full");
    let released: i64 = command_of(&["RL.RELEASE", conc, "a"])
        .query(&mut client)
        .expect("RL.RELEASE");
    assert_eq!(released, 1);
    for p in cluster.primaries() {
        let expected = if p.port == owner.port { 2 } else { 0 };
        assert_eq!(dbsize(&mut cluster.conn(p.port)), expected, "{p:?}");
    }
    // Another user's key is in another slot: refused, nothing taken.
    let other = "{user7}:rate";
    assert_ne!(cluster.keyslot(other), slot);
    let err = both(&mut c, "d", other).expect_err("across slots");
    assert_eq!(err.code(), Some("CROSSSLOT"), "{err}");
    let ids: Vec<String> = cmd("ZRANGE")
        .arg(&[conc, "0", "-1"])
        .query(&mut c)
        .expect("ZRANGE");
    assert_eq!(ids, ["b"]);
}
