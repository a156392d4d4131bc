//! How RL fits the rest of Redis: the INFO section and module configuration.

mod common;
use common::*;

fn info_rl(c: &mut Connection) -> std::collections::HashMap<String, u64> {
    let text: String = cmd("INFO").arg("rl").query(c).unwrap();
    assert!(text.contains("# rl"), "{text}");
    text.lines()
        .filter_map(|l| l.split_once(':'))
        .filter_map(|(k, v)| Some((k.to_string(), v.trim().parse().ok()?)))
        .collect()
}

/// CONFIG GET rl.sliding-max-limit: the name and the value.
fn sliding_max_limit(c: &mut Connection) -> Vec<String> {
    cmd("CONFIG")
        .arg("GET")
        .arg("rl.sliding-max-limit")
        .query(c)
        .unwrap()
}

#[test]
fn info_counts_allowed_rejected_and_errored_calls_per_command() {
    let s = Server::start();
    let mut c = s.conn();
    let before = info_rl(&mut c);
    assert_eq!(before.len(), 3 * 6, "three counters for each of six commands: {before:?}");
    assert!(before.values().all(|&v| v == 0), "{before:?}");

    rl(&mut c, &["RL.FIXED", "f", "1", "1h"]);
    rl(&mut c, &["RL.FIXED", "f", "1", "1h"]);
    rl(&mut c, &["RL.FIXED", "f", "1", "1h", "COST", "0"]);
    rl(&mut c, &["RL.SLIDING", "s", "2", "1h", "COST", "2"]);
    rl(&mut c, &["RL.BUCKET", "b", "1", "1", "1h", "COST", "5"]);
    error_of(&mut c, &[b"RL.BUCKET", b"b", b"0", b"1", b"1h"]);
    let _: () = cmd("RPUSH").arg("list").arg("x").query(&mut c).unwrap();
    error_of(&mut c, &[b"RL.SLIDING", b"list", b"1", b"1h"]);

    let after = info_rl(&mut c);
    let expected = [
        // COST 0 counts as the reply says: allowed (1 + 0 <= 1).
        ("rl_fixed_allowed", 2),
        ("rl_fixed_rejected", 1),
        ("rl_fixed_errors", 0),
        ("rl_sliding_allowed", 1),
        ("rl_sliding_rejected", 0),
        ("rl_sliding_errors", 1),
        ("rl_bucket_allowed", 0),
        ("rl_bucket_rejected", 1),
        ("rl_bucket_errors", 1),
    ];
    for (field, value) in expected {
        assert_eq!(after.get(field), Some(&value), "{field} in {after:?}");
    }
    // INFO without arguments includes the section too (modules' sections are default).
    let all: String = cmd("INFO").arg("everything").query(&mut c).unwrap();
    assert!(all.contains("rl_fixed_allowed:2"), "{all}");
}

#[test]
fn sliding_max_limit_is_a_module_config() {
    let s = Server::start();
    let mut c = s.conn();
    let got = sliding_max_limit(&mut c);
    assert_eq!(got, ["rl.sliding-max-limit", "100000"]);
    let e = error_of(&mut c, &[b"RL.SLIDING", b"k", b"100001", b"1s"]);
    assert!(e.contains("100000") && e.contains("RL.BUCKET"), "{e}");

    config_set(&mut c, "rl.sliding-max-limit", 200_000);
    let r = rl(&mut c, &["RL.SLIDING", "k", "100001", "1s", "COST", "0"]);
    assert_eq!(r.limit, 100_001);

    config_set(&mut c, "rl.sliding-max-limit", 3);
    let e = error_of(&mut c, &[b"RL.SLIDING", b"k", b"4", b"1s"]);
    assert!(e.contains("from 1 to 3"), "{e}");

    for bad in ["0", "-1", "abc", "10000001"] {
        let e = error_of(
            &mut c,
            &[b"CONFIG", b"SET", b"rl.sliding-max-limit", bad.as_bytes()],
        );
        assert!(e.starts_with("ERR"), "{bad}: {e}");
    }
    let got = sliding_max_limit(&mut c);
    assert_eq!(got[1], "3", "a refused value changes nothing");
}

#[test]
fn sliding_max_limit_can_be_given_at_load_time() {
    let s = Server::with(Options {
        without_module: true,
        args: vec![
            "--loadmodule".into(),
            module_path().display().to_string(),
            "sliding-max-limit".into(),
            "250000".into(),
        ],
        ..Options::default()
    });
    let mut c = s.conn();
    let got = sliding_max_limit(&mut c);
    assert_eq!(got[1], "250000");
}
