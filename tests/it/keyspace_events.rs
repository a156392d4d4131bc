//! Keyspace notifications against real redis-servers.
//!
//! Contract: with `notify-keyspace-events KEA`, an allowed write fires the events its
//! propagated native commands fire, with the same classes, so a primary and its
//! replicas notify alike: RL.FIXED `set` + `expire`; RL.SLIDING `zremrangebyscore`
//! (only when units left the window; plus `del` when that emptied the set), `zadd`,
//! `expire`; RL.BUCKET `hset` + `expire`. A rejected call, COST 0 and an error fire
//! none.
//!
//! No key expires during these tests (an expiry fires `expired` on the primary and
//! `del` on a replica, natively too): windows and periods are long, and the one
//! short window used to trim a log is followed at once by a long one.

use crate::common::*;

/// One published notification: (channel, payload).
type Event = (String, String);

/// Subscribed to every keyspace and keyevent channel of db 0 of one server.
struct Listener {
    ps: redis::PubSub<'static>,
}

impl Listener {
    fn new(server: &Server) -> Listener {
        // Leaked so the subscription (which a dropped PubSub cancels) lives as long
        // as the test; the socket closes when the server is killed.
        let conn: &'static mut Connection = Box::leak(Box::new(server.conn()));
        let mut ps = conn.as_pubsub();
        ps.psubscribe("__keyevent@0__:*").expect("PSUBSCRIBE");
        ps.psubscribe("__keyspace@0__:*").expect("PSUBSCRIBE");
        ps.set_read_timeout(Some(REPLY_TIMEOUT)).expect("timeout");
        Listener { ps }
    }

    /// Every event up to and including the keyevent of `SET <marker>` (the last
    /// message of the marker write, which the caller issues after its workload: pub/sub
    /// is ordered, so everything before it has arrived), the marker's own two dropped.
    fn until_marker(&mut self, marker: &str) -> Vec<Event> {
        let ps = &mut self.ps;
        let mut events = Vec::new();
        loop {
            let msg = ps
                .get_message()
                .unwrap_or_else(|e| panic!("waiting for the marker {marker}: {e}"));
            let event = (
                msg.get_channel_name().to_string(),
                msg.get_payload::<String>().expect("payload"),
            );
            if event == ("__keyevent@0__:set".to_string(), marker.to_string()) {
                break;
            }
            if event.0 != format!("__keyspace@0__:{marker}") {
                events.push(event);
            }
        }
        events
    }
}

/// The keyevent notifications only, as (event, key).
fn keyevents(events: &[Event]) -> Vec<(String, String)> {
    events
        .iter()
        .filter_map(|(ch, key)| {
            Some((ch.strip_prefix("__keyevent@0__:")?.to_string(), key.clone()))
        })
        .collect()
}

fn pairs(items: &[(&str, &str)]) -> Vec<(String, String)> {
    items
        .iter()
        .map(|(a, b)| (a.to_string(), b.to_string()))
        .collect()
}

fn primary_and_replica() -> (Server, Server) {
    let primary = Server::with(Options {
        args: vec!["--notify-keyspace-events".into(), "KEA".into()],
        ..Options::default()
    });
    // Without the module: the replica applies native commands only.
    let replica = primary.replica(false);
    config_set(&mut replica.conn(), "notify-keyspace-events", "KEA");
    (primary, replica)
}

fn as_strs(args: &[String]) -> Vec<&str> {
    args.iter().map(String::as_str).collect()
}

fn marker(c: &mut Connection, name: &str) {
    let _: () = cmd("SET").arg(name).arg(1).query(c).expect("SET marker");
}

fn allowed(r: Reply, what: &str) {
    assert_eq!(r.allowed, 1, "{what} should be allowed: {r:?}");
}

#[test]
fn allowed_writes_fire_the_events_of_their_propagated_commands_on_primary_and_replica() {
    let (primary, replica) = primary_and_replica();
    let mut on_primary = Listener::new(&primary);
    let mut on_replica = Listener::new(&replica);
    let mut c = connect(&primary);

    // Every command, twice on a fresh key: the events of its propagated commands
    // (RL.FIXED: SET … PXAT → set, expire; RL.BUCKET: HSET + PEXPIREAT → hset, expire;
    // RL.SLIDING: ZADD + PEXPIREAT → zadd, expire). 3 of 4 units: RL.PENALTY
    // counts its strikes without reaching a block.
    let mut expected = Vec::new();
    for l in COMMANDS {
        let params = l.per(4, "3650d");
        for cost in [None, Some(2)] {
            allowed(l.call(&mut c, l.short, &params, cost), l.name);
            // An expiry rounded up to a slot (456 days here) does not move for a
            // second call in the same slot: no PEXPIREAT, no `expire`.
            let same_expiry = cost.is_some() && l.slots.is_some();
            expected.extend(
                l.events
                    .iter()
                    .filter(|e| !(same_expiry && **e == "expire"))
                    .map(|e| (e.to_string(), l.short.to_string())),
            );
        }
        if l.joins {
            // A tenant's first call joins the budget even when rejected (COST above
            // the capacity): it writes, and fires the same events.
            let key = format!("{}:joins", l.short);
            let r = l.call(&mut c, &key, &params, Some(5));
            assert_eq!(r.allowed, 0, "{}: {r:?}", l.name);
            expected.extend(l.events.iter().map(|e| (e.to_string(), key.clone())));
        }
    }
    // RL.SLIDING trimming its log (its own events). Nothing left the window yet:
    // ZADD + PEXPIREAT → zadd, expire.
    let t0 = server_ms(&mut c);
    allowed(rl(&mut c, &["RL.SLIDING", "s1", "5", "60s"]), "s1 first");
    allowed(
        rl(&mut c, &["RL.SLIDING", "s2", "5", "60s", "COST", "2"]),
        "s2 first",
    );
    wait_until(&mut c, t0 + 1500);
    allowed(rl(&mut c, &["RL.SLIDING", "s1", "5", "60s"]), "s1 second");
    // A 1 s window now: s1's first unit (≥ 1.5 s old) leaves, its second stays:
    // zremrangebyscore, zadd, expire. s2's units all leave: the replica's
    // ZREMRANGEBYSCORE deletes the key (del) before ZADD recreates it.
    allowed(rl(&mut c, &["RL.SLIDING", "s1", "5", "1s"]), "s1 trims");
    allowed(rl(&mut c, &["RL.SLIDING", "s2", "5", "1s"]), "s2 trims all");
    // Back to a long window at once, so neither key expires during the test
    // (nothing more leaves: everything left is under 1 s old).
    allowed(rl(&mut c, &["RL.SLIDING", "s1", "5", "60s"]), "s1 long");
    allowed(rl(&mut c, &["RL.SLIDING", "s2", "5", "60s"]), "s2 long");
    marker(&mut c, "end");

    let from_primary = on_primary.until_marker("end");
    let from_replica = on_replica.until_marker("end");
    expected.extend(pairs(&[
        ("zadd", "s1"),
        ("expire", "s1"),
        ("zadd", "s2"),
        ("expire", "s2"),
        ("zadd", "s1"),
        ("expire", "s1"),
        ("zremrangebyscore", "s1"),
        ("zadd", "s1"),
        ("expire", "s1"),
        ("zremrangebyscore", "s2"),
        ("del", "s2"),
        ("zadd", "s2"),
        ("expire", "s2"),
        ("zadd", "s1"),
        ("expire", "s1"),
        ("zadd", "s2"),
        ("expire", "s2"),
    ]));
    assert_eq!(
        keyevents(&from_replica),
        expected,
        "replica (native commands)"
    );
    assert_eq!(keyevents(&from_primary), expected, "primary");
    // Keyspace channels too, interleaved in the same order.
    assert_eq!(from_primary, from_replica);
    assert_eq!(from_primary.len(), 2 * expected.len());
}

#[test]
fn rejected_calls_cost_0_and_errors_fire_nothing() {
    let (primary, replica) = primary_and_replica();
    let mut c = connect(&primary);
    // Each command's key at its limit (capacity) 1, which never comes back; RL.PENALTY's
    // blocked by its one strike (that call is rejected, and writes the block).
    let long = |l: &Command, n: u64| l.per(n, "3650d");
    for l in COMMANDS {
        let r = l.call(&mut c, l.short, &long(l, 1), None);
        assert_eq!(r.allowed, i64::from(!l.blocks), "{}: {r:?}", l.name);
    }
    marker(&mut c, "ready");
    primary.sync(&replica);

    let mut on_primary = Listener::new(&primary);
    let mut on_replica = Listener::new(&replica);
    for l in COMMANDS {
        let full = l.call(&mut c, l.short, &long(l, 1), None);
        assert_eq!(full.allowed, 0, "{} full", l.name);
        // A blocking limiter blocks a new key at once (a write), and a new key's
        // first tenant joins its budget even when rejected (a write): their own
        // key, blocked or remembering the tenant.
        let key = if l.blocks || l.joins { l.short } else { "new" };
        let above = l.call(&mut c, key, &long(l, 1), Some(2));
        assert_eq!(above.allowed, 0, "{} cost above the limit", l.name);
    }
    for key in COMMANDS.iter().map(|l| l.short).chain(["new"]) {
        for l in COMMANDS {
            // Inspections of a key of another type are WRONGTYPE errors: also silent.
            let _ = try_rl(&mut c, &as_strs(&l.args(key, &long(l, 5), Some(0))));
        }
    }
    for l in COMMANDS {
        let mut failing = Vec::new();
        // A count of 0 (a max_burst of -1), a duration of 0 ms, COST without a value.
        for (i, p) in l.params.iter().enumerate() {
            let mut params = long(l, 1);
            params[i] = p.kind.invalid().into();
            failing.push(l.args(l.short, &params, None));
        }
        match l.style {
            Style::Rl | Style::CostOnly => {
                let mut no_value = l.args(l.short, &long(l, 1), None);
                no_value.push("COST".into());
                failing.push(no_value);
            }
            // No options: a bad quantity, and a 7th argument (the arity error).
            Style::Throttle => {
                failing.push(l.args(l.short, &long(l, 1), None));
                failing.last_mut().unwrap().push("-1".into());
                failing.push(l.args(l.short, &long(l, 1), Some(1)));
                failing.last_mut().unwrap().push("1".into());
            }
        }
        // Another command's key of another type.
        for other in COMMANDS.iter().filter(|o| o.native_type != l.native_type) {
            failing.push(l.args(other.short, &long(l, 1), None));
        }
        for args in failing {
            assert!(
                try_rl(&mut c, &as_strs(&args)).is_err(),
                "{args:?} should fail"
            );
        }
    }
    marker(&mut c, "end");
    assert_eq!(
        on_primary.until_marker("end"),
        Vec::<Event>::new(),
        "primary"
    );
    assert_eq!(
        on_replica.until_marker("end"),
        Vec::<Event>::new(),
        "replica"
    );
}

#[test]
fn no_events_without_notify_keyspace_events() {
    // The default (notifications off) publishes nothing, as for native commands.
    let server = Server::start();
    let mut c = connect(&server);
    let mut listener = Listener::new(&server);
    for l in COMMANDS {
        allowed(l.call(&mut c, l.short, &l.per(3, "3650d"), None), l.name);
    }
    config_set(&mut c, "notify-keyspace-events", "KEA");
    marker(&mut c, "end");
    assert_eq!(listener.until_marker("end"), Vec::<Event>::new());
}

#[test]
fn refunds_and_rl_all_fire_their_keys_own_events_on_primary_and_replica() {
    let (primary, replica) = primary_and_replica();
    let mut on_primary = Listener::new(&primary);
    let mut on_replica = Listener::new(&replica);
    let mut c = connect(&primary);
    let pair = [
        "2", "f", "b", "FIXED", "3", "3650d", "BUCKET", "3", "1", "3650d",
    ];
    let all = |c: &mut Connection, extra: &[&str]| -> Vec<Vec<i64>> {
        on_backend(cmd("RL.ALL").arg(&pair).arg(extra))
            .query(c)
            .expect("RL.ALL")
    };
    // RL.ALL allowed: each key's own events, in key order.
    assert_eq!(all(&mut c, &["COST", "2"])[0][0], 1);
    // Rejected, and a refund of nothing on an absent key: none.
    assert_eq!(all(&mut c, &["COST", "2"])[0][0], 0);
    allowed(
        rl(&mut c, &["RL.GCRA", "g", "3", "1", "3650d", "REFUND", "1"]),
        "refund of nothing",
    );
    // A partial refund writes the new state; a full one deletes the key.
    allowed(
        rl(&mut c, &["RL.FIXED", "f", "3", "3650d", "REFUND", "1"]),
        "partial refund",
    );
    assert_eq!(all(&mut c, &["REFUND", "5"])[0][0], 1);
    // A sliding log: REFUND 1 of two units removes the newest (zrem, expire).
    allowed(
        rl(&mut c, &["RL.SLIDING", "s", "3", "3650d", "COST", "2"]),
        "two units",
    );
    allowed(
        rl(&mut c, &["RL.SLIDING", "s", "3", "3650d", "REFUND", "1"]),
        "one back",
    );
    marker(&mut c, "end");

    let expected = pairs(&[
        ("set", "f"),
        ("expire", "f"),
        ("hset", "b"),
        ("expire", "b"),
        ("set", "f"),
        ("expire", "f"),
        ("del", "f"),
        ("del", "b"),
        ("zadd", "s"),
        ("expire", "s"),
        ("zrem", "s"),
        ("expire", "s"),
    ]);
    let from_primary = on_primary.until_marker("end");
    let from_replica = on_replica.until_marker("end");
    assert_eq!(
        keyevents(&from_replica),
        expected,
        "replica (native commands)"
    );
    assert_eq!(keyevents(&from_primary), expected, "primary");
    assert_eq!(from_primary, from_replica);
}

fn lease(c: &mut Connection, args: &[&str]) -> Value {
    command_of(args)
        .query(c)
        .unwrap_or_else(|e| panic!("{args:?}: {e}"))
}

#[test]
fn leases_fire_the_events_of_their_propagated_commands_and_rejections_none() {
    let (primary, replica) = primary_and_replica();
    let mut on_primary = Listener::new(&primary);
    let mut on_replica = Listener::new(&replica);
    let mut c = connect(&primary);
    // A new lease: ZADD + PEXPIREAT. A renewal: the same.
    lease(&mut c, &["RL.ACQUIRE", "q", "2", "1h", "a"]);
    lease(&mut c, &["RL.ACQUIRE", "q", "2", "2h", "a"]);
    // A short lease that ends: the next grant trims it (ZREMRANGEBYSCORE) first.
    lease(&mut c, &["RL.ACQUIRE", "q", "2", "20ms", "b"]);
    let t = server_ms(&mut c);
    wait_until(&mut c, t + 40);
    lease(&mut c, &["RL.ACQUIRE", "q", "2", "1h", "c"]);
    // Rejected, an unknown release, an error: nothing.
    lease(&mut c, &["RL.ACQUIRE", "q", "2", "1h", "d"]);
    lease(&mut c, &["RL.RELEASE", "q", "zz"]);
    let _ = command_of(&["RL.ACQUIRE", "q", "0", "1h", "d"]).query::<Value>(&mut c);
    // A release: ZREM + PEXPIREAT; the last one: DEL.
    lease(&mut c, &["RL.RELEASE", "q", "a"]);
    lease(&mut c, &["RL.RELEASE", "q", "c"]);
    marker(&mut c, "end");
    let q = |e: &'static str| (e, "q");
    let expected = pairs(&[
        q("zadd"),
        q("expire"),
        q("zadd"),
        q("expire"),
        q("zadd"),
        q("expire"),
        q("zremrangebyscore"),
        q("zadd"),
        q("expire"),
        q("zrem"),
        q("expire"),
        q("del"),
    ]);
    let from_primary = on_primary.until_marker("end");
    let from_replica = on_replica.until_marker("end");
    assert_eq!(
        keyevents(&from_replica),
        expected,
        "replica (native commands)"
    );
    assert_eq!(keyevents(&from_primary), expected, "primary");
    assert_eq!(from_primary, from_replica);
}
