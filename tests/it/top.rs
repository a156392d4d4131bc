//! RL.TOP (the keys rejected most on this node in the last minute or so) and
//! INFO's `near_limit` counters, on a real server (docs/commands.md#rltop,
//! docs/operations.md#monitoring).

use crate::common::*;

/// RL.TOP's reply: `[key, rejected, ms since its last rejection]` per key.
type Top = Vec<(Vec<u8>, i64, i64)>;

fn top(c: &mut Connection, args: &[&str]) -> Top {
    cmd("RL.TOP").arg(args).query(c).expect("RL.TOP")
}

fn keys(t: &Top) -> Vec<String> {
    t.iter()
        .map(|(k, _, _)| String::from_utf8_lossy(k).into_owned())
        .collect()
}

/// Rejected calls on `keys` that write nothing (a cost above the limit), pipelined.
fn reject<S: AsRef<str>>(c: &mut Connection, keys: impl IntoIterator<Item = S>) {
    let mut p = redis::pipe();
    let mut n = 0;
    for k in keys {
        p.cmd("RL.FIXED")
            .arg(k.as_ref())
            .arg(&["1", "1h", "COST", "2"])
            .ignore();
        n += 1;
        if n % 10_000 == 0 {
            let _: () = p.query(c).expect("rejected calls");
            p = redis::pipe();
        }
    }
    let _: () = p.query(c).expect("rejected calls");
}

fn dbsize(c: &mut Connection) -> i64 {
    cmd("DBSIZE").query(c).expect("DBSIZE")
}

fn near(c: &mut Connection, command: &str) -> i64 {
    info_field(c, "rl", &format!("rl_{command}_near_limit"))
}

#[test]
fn near_limit_counts_allowed_calls_that_left_a_tenth_of_the_limit() {
    if module_only("INFO rl is the module's") {
        return;
    }
    let s = Server::start();
    let mut c = s.conn();
    // Remaining 9 .. 2 are not near; 1 and 0 are (≤ 10% of 10); a rejection is not.
    for _ in 0..11 {
        rl(&mut c, &["RL.FIXED", "nl", "10", "1h"]);
    }
    assert_eq!(near(&mut c, "fixed"), 2);
    // A lease: the last one of the limit. RL.RELEASE decides no limit: never.
    rl(&mut c, &["RL.ACQUIRE", "lease", "1", "1h", "a"]);
    let _: i64 = cmd("RL.RELEASE")
        .arg(&["lease", "a"])
        .query(&mut c)
        .unwrap();
    let _: i64 = cmd("RL.RELEASE")
        .arg(&["lease", "a"])
        .query(&mut c)
        .unwrap();
    assert_eq!((near(&mut c, "acquire"), near(&mut c, "release")), (1, 0));

    // RL.ALL: the call under RL.ALL, each charged key under its own command.
    let all = |c: &mut Connection| -> Vec<Vec<i64>> {
        cmd("RL.ALL")
            .arg(&[
                "2", "{a}x", "{a}y", "FIXED", "2", "1h", "GCRA", "100", "1", "1h",
            ])
            .query(c)
            .unwrap()
    };
    assert_eq!(all(&mut c)[0][..3], [1, 2, 1]);
    assert_eq!((near(&mut c, "all"), near(&mut c, "fixed")), (0, 2));
    assert_eq!(all(&mut c)[0][..3], [1, 2, 0]);
    assert_eq!(
        (
            near(&mut c, "all"),
            near(&mut c, "fixed"),
            near(&mut c, "gcra")
        ),
        (1, 3, 0)
    );
    assert_eq!(all(&mut c)[0][0], 0, "rejected: counts nothing");
    assert_eq!((near(&mut c, "all"), near(&mut c, "fixed")), (1, 3));

    // A PENALTY policy is only looked at: its key, one strike from a block, counts
    // under RL.PENALTY for the strike, not for RL.ALL's look.
    rl(
        &mut c,
        &["RL.PENALTY", "pk", "10", "1h", "1m", "1h", "COST", "9"],
    );
    assert_eq!(near(&mut c, "penalty"), 1);
    let r: Vec<Vec<i64>> = cmd("RL.ALL")
        .arg(&[
            "2", "{p}f", "{p}k", "FIXED", "100", "1h", "PENALTY", "10", "1h", "1m", "1h",
        ])
        .query(&mut c)
        .unwrap();
    assert_eq!(r[0][0], 1);
    assert_eq!(near(&mut c, "penalty"), 1);
}

/// Keys drawn from a Zipf law (s = 1.1) over `n` keys: key i (from 0) about
/// 1/(i+1)^1.1 of the time.
fn zipf(rng: &mut Rng, cdf: &[f64]) -> usize {
    let u = (rng.next() >> 11) as f64 / (1u64 << 53) as f64;
    cdf.partition_point(|&p| p < u).min(cdf.len() - 1)
}

#[test]
fn the_top_of_a_zipf_load_over_ten_thousand_keys_is_the_true_top() {
    if module_only("RL.TOP is the module's") {
        return;
    }
    let s = Server::start();
    let mut c = s.conn();
    const KEYS: usize = 10_000;
    const CALLS: usize = 200_000;
    let weights: Vec<f64> = (1..=KEYS).map(|i| (i as f64).powf(-1.1)).collect();
    let total: f64 = weights.iter().sum();
    let mut cdf = Vec::with_capacity(KEYS);
    let mut acc = 0.0;
    for w in &weights {
        acc += w / total;
        cdf.push(acc);
    }
    let mut rng = Rng(0x5eed_70b5);
    let drawn: Vec<usize> = (0..CALLS).map(|_| zipf(&mut rng, &cdf)).collect();
    let mut truth = vec![0i64; KEYS];
    for &k in &drawn {
        truth[k] += 1;
    }
    // Keys named so that their order says nothing.
    let name = |k: usize| format!("zipf:{:x}", (k as u64).wrapping_mul(0x9E37_79B9_7F4A_7C15));
    reject(&mut c, drawn.iter().map(|&k| name(k)));

    let mut expected: Vec<(i64, String)> = (0..KEYS).map(|k| (truth[k], name(k))).collect();
    expected.sort_by(|a, b| b.cmp(a));
    let got = top(&mut c, &["COUNT", "5"]);
    assert_eq!(got.len(), 5);
    assert_eq!(
        keys(&got),
        expected[..5]
            .iter()
            .map(|e| e.1.clone())
            .collect::<Vec<_>>(),
        "{got:?}"
    );
    // Held from their first rejection, the heavy keys' counts are exact.
    for ((_, rejected, since), (count, _)) in got.iter().zip(&expected) {
        assert_eq!(rejected, count);
        assert!((0..60_000).contains(since), "{since}");
    }
    // The default COUNT is 10.
    assert_eq!(top(&mut c, &[]).len(), 10);
}

#[test]
fn memory_stays_flat_under_a_million_distinct_rejected_keys() {
    if module_only("RL.TOP is the module's") {
        return;
    }
    let s = Server::start();
    let mut c = s.conn();
    let used = |c: &mut Connection| info_field(c, "memory", "used_memory");
    // Fill the sketch first: the baseline holds it full.
    reject(&mut c, (0..10_000).map(|i| format!("warm:{i}")));
    let before = used(&mut c);
    reject(&mut c, (0..1_000_000).map(|i| format!("distinct:{i}")));
    let after = used(&mut c);
    // Two windows of rl.top-size (128) keys: a few tens of KB whatever the keys.
    assert!(
        after - before < 1 << 20,
        "used_memory {before} -> {after} after a million distinct rejected keys"
    );
    let held = top(&mut c, &["COUNT", "1000000"]);
    assert!(held.len() <= 2 * 128, "{} keys held", held.len());
    assert_eq!(dbsize(&mut c), 0, "rejected calls wrote nothing");
}

#[test]
fn reset_count_shadow_errors_and_size() {
    if module_only("RL.TOP is the module's") {
        return;
    }
    let s = Server::start();
    let mut c = s.conn();
    assert!(top(&mut c, &[]).is_empty());
    reject(&mut c, ["a", "b", "b", "c", "c", "c"]);
    let t = top(&mut c, &[]);
    assert_eq!(keys(&t), ["c", "b", "a"]);
    assert_eq!(
        t.iter().map(|e| e.1).collect::<Vec<_>>(),
        [3, 2, 1],
        "{t:?}"
    );
    // COUNT bounds the reply; any count from 1 up is taken.
    assert_eq!(keys(&top(&mut c, &["count", "1"])), ["c"]);
    assert_eq!(top(&mut c, &["COUNT", "9007199254740991"]).len(), 3);
    // SHADOW: rejections a shadow limit would have made; none here.
    assert!(top(&mut c, &["SHADOW"]).is_empty());
    assert!(top(&mut c, &["COUNT", "2", "SHADOW"]).is_empty());
    // Allowed calls and RL.RELEASE are no rejections.
    rl(&mut c, &["RL.FIXED", "allowed", "5", "1h"]);
    let _: i64 = cmd("RL.RELEASE")
        .arg(&["lease", "x"])
        .query(&mut c)
        .unwrap();
    // RL.ALL: each key its own decision rejected.
    let _: Vec<Vec<i64>> = cmd("RL.ALL")
        .arg(&[
            "2", "{q}ok", "{q}full", "FIXED", "5", "1h", "FIXED", "1", "1h", "COST", "2",
        ])
        .query(&mut c)
        .unwrap();
    // ({q}ok would have allowed a COST of 2: only {q}full rejected it.)
    // (Ties go to the latest rejection, then by key: in one millisecond, "a" first.)
    let mut t = keys(&top(&mut c, &["COUNT", "100"]));
    assert_eq!(t[..2], ["c", "b"]);
    t[2..].sort();
    assert_eq!(t[2..], ["a", "{q}full"]);

    for (bad, says) in [
        (
            &["COUNT", "0"][..],
            "COUNT must be an integer from 1 to 9007199254740991",
        ),
        (&["COUNT", "-1"], "COUNT must be"),
        (&["COUNT", "9007199254740992"], "COUNT must be"),
        (&["COUNT"], "syntax error"),
        (&["COUNT", "1", "COUNT", "1"], "syntax error"),
        (&["SHADOW", "SHADOW"], "syntax error"),
        (&["RESET", "SHADOW"], "syntax error"),
        (&["LIMIT", "1"], "syntax error"),
    ] {
        let mut args: Vec<&[u8]> = vec![b"RL.TOP"];
        args.extend(bad.iter().map(|a| a.as_bytes()));
        let e = error_of(&mut c, &args);
        assert!(e.starts_with("ERR ") && e.contains(says), "{bad:?}: {e}");
    }
    assert_eq!(
        top(&mut c, &["COUNT", "100"]).len(),
        4,
        "errors change nothing"
    );

    let ok: String = cmd("RL.TOP").arg("reset").query(&mut c).unwrap();
    assert_eq!(ok, "OK");
    assert!(top(&mut c, &[]).is_empty());

    // From a script, read-only or not (not `noscript`).
    reject(&mut c, ["scripted"]);
    let t: Top = cmd("EVAL")
        .arg("return redis.call('RL.TOP', 'COUNT', '1')")
        .arg(0)
        .query(&mut c)
        .unwrap();
    assert_eq!(keys(&t), ["scripted"]);

    // rl.top-size bounds the keys held; a new size starts afresh.
    config_set(&mut c, "rl.top-size", 2);
    reject(&mut c, ["a", "a", "a", "a", "b", "b", "c"]);
    let t = top(&mut c, &["COUNT", "10"]);
    // One window of two keys (two if a minute ended in between: four at most); in
    // one window, c took b's place and count (2 + 1, over by b's 2).
    assert!(t.len() <= 4 && keys(&t)[0] == "a" && t[0].1 == 4, "{t:?}");
    assert!(!keys(&t).contains(&"scripted".to_string()), "{t:?}");
    if t.len() == 2 {
        assert_eq!((keys(&t)[1].as_str(), t[1].1), ("c", 3), "{t:?}");
    }
    // Validated like every setting (the unit tests run the range through each form).
    let e = error_of(&mut c, &[b"CONFIG", b"SET", b"rl.top-size", b"100001"]);
    assert!(
        e.contains("rl.top-size must be an integer from 1 to 100000"),
        "{e}"
    );
}

#[test]
fn rl_top_is_readonly_keyless_and_node_local() {
    if module_only("RL.TOP is the module's") {
        return;
    }
    let primary = Server::start();
    let replica = primary.replica(true);
    let mut p = primary.conn();
    let mut r = replica.conn();
    // COMMAND INFO: any number of arguments, readonly, no key.
    let info: Vec<redis::Value> = cmd("COMMAND")
        .arg(&["INFO", "RL.TOP"])
        .query(&mut p)
        .unwrap();
    let redis::Value::Array(entry) = &info[0] else {
        panic!("COMMAND INFO RL.TOP: {info:?}");
    };
    assert_eq!(entry[1], redis::Value::Int(-1));
    assert!(
        format!("{:?}", entry[2]).contains("readonly"),
        "{:?}",
        entry[2]
    );
    let zero = redis::Value::Int(0);
    assert_eq!(entry[3..6], [zero.clone(), zero.clone(), zero], "no key");
    let getkeys = cmd("COMMAND")
        .arg(&["GETKEYS", "RL.TOP", "COUNT", "1"])
        .query::<Vec<String>>(&mut p);
    assert!(getkeys.is_err(), "no key: {getkeys:?}");

    reject(&mut p, ["hot", "hot"]);
    let offset = |c: &mut Connection| info_field(c, "replication", "master_repl_offset");
    let before = offset(&mut p);
    assert_eq!(keys(&top(&mut p, &[])), ["hot"]);
    let _: String = cmd("RL.TOP").arg("RESET").query(&mut p).unwrap();
    reject(&mut p, ["hot"]);
    assert_eq!(
        offset(&mut p),
        before,
        "RL.TOP and rejected calls propagate nothing"
    );
    primary.sync(&replica);
    // The replica's own sketch: it ran no RL call, so it holds nothing.
    assert!(top(&mut r, &[]).is_empty());
    assert_eq!(keys(&top(&mut p, &[])), ["hot"]);
}

#[test]
fn shadow_rejections_are_reported_apart_from_enforced_ones() {
    if module_only("RL.TOP is the module's") {
        return;
    }
    let s = Server::start();
    let mut c = s.conn();
    // A SHADOW call rejected twice, a SHADOW call allowed: only the first shows,
    // in the SHADOW report alone.
    for _ in 0..2 {
        rl(
            &mut c,
            &["RL.FIXED", "s:single", "1", "1h", "COST", "2", "SHADOW"],
        );
    }
    rl(&mut c, &["RL.FIXED", "s:allowed", "5", "1h", "SHADOW"]);
    // RL.ALL: the SHADOW policy its own reply rejects shows in the SHADOW report,
    // though the call is allowed; the enforced key that allowed shows nowhere.
    let r: Vec<Vec<i64>> = cmd("RL.ALL")
        .arg(&[
            "2", "{a}:on", "{a}:try", "FIXED", "5", "1h", "SHADOW", "FIXED", "1", "1h",
        ])
        .arg(&["COST", "2"])
        .query(&mut c)
        .expect("RL.ALL");
    assert_eq!((r[0][0], r[1][0], r[2][0]), (1, 1, 0), "{r:?}");
    // A rejected call: its enforced key in the enforced report, its SHADOW key
    // (rejected on its own) in the SHADOW one.
    let r: Vec<Vec<i64>> = cmd("RL.ALL")
        .arg(&[
            "2", "{b}:on", "{b}:try", "FIXED", "1", "1h", "SHADOW", "FIXED", "1", "1h",
        ])
        .arg(&["COST", "2"])
        .query(&mut c)
        .expect("RL.ALL");
    assert_eq!((r[0][0], r[1][0], r[2][0]), (0, 0, 0), "{r:?}");
    // The two SHADOW policies tie (one rejection each, often in the same ms).
    let shadow = top(&mut c, &["SHADOW"]);
    let mut ranked = keys(&shadow);
    ranked[1..].sort();
    assert_eq!(ranked, ["s:single", "{a}:try", "{b}:try"], "{shadow:?}");
    assert_eq!(shadow.iter().map(|e| e.1).collect::<Vec<_>>(), [2, 1, 1]);
    assert_eq!(keys(&top(&mut c, &[])), ["{b}:on"]);
    // RESET forgets both.
    let ok: String = cmd("RL.TOP").arg("RESET").query(&mut c).unwrap();
    assert_eq!(ok, "OK");
    assert!(top(&mut c, &["SHADOW"]).is_empty());
    assert!(top(&mut c, &[]).is_empty());
}
