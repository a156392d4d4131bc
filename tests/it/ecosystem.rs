//! How RL fits the rest of Redis: the INFO section and module configuration.

use crate::common::*;

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
    if module_only("INFO counters are the module's") {
        return;
    }
    let s = Server::start();
    let mut c = s.conn();
    // Four counters for every command the module registered (COMMAND LIST) but
    // those on node-wide state (RL.TOP), and so for every row of the table.
    let registered: Vec<String> = cmd("COMMAND")
        .arg(&["LIST", "FILTERBY", "MODULE", "rl"])
        .query(&mut c)
        .unwrap();
    let registered: Vec<String> = registered
        .into_iter()
        .filter(|r| !is_node_command(r))
        .collect();
    for l in COMMANDS {
        assert!(
            registered.iter().any(|r| l.is(r)),
            "{} in {registered:?}",
            l.name
        );
    }
    let before = info_rl(&mut c);
    // Exactly the table's commands, CL.THROTTLE among them.
    assert!(
        registered
            .iter()
            .any(|r| r.eq_ignore_ascii_case("CL.THROTTLE")),
        "{registered:?}"
    );
    // The table's single-key commands, and those outside it (RL.ALL, the leases).
    for name in OUTSIDE_TABLE {
        assert!(
            registered.iter().any(|r| r.eq_ignore_ascii_case(name)),
            "{name} in {registered:?}"
        );
    }
    assert_eq!(
        registered.len(),
        COMMANDS.len() + OUTSIDE_TABLE.len(),
        "{registered:?}"
    );
    // Two more, shadow_allowed and shadow_rejected, for each command that takes
    // SHADOW alone or as an RL.ALL policy.
    let shadows = EVERY_ROW
        .iter()
        .filter(|l| l.row().takes_option(rl_core::options::Opt::Shadow) || l.row().policy.is_some())
        .count();
    assert_eq!(
        before.len(),
        4 * registered.len() + 2 * shadows,
        "four counters for each command, two more for SHADOW: {before:?}"
    );
    assert!(before.values().all(|&v| v == 0), "{before:?}");

    let _: () = cmd("RPUSH").arg("list").arg("x").query(&mut c).unwrap();
    // The i-th command gets 3i+1 allowed, 3i+2 rejected and 3i+3 failed calls, so
    // no two counters of the section agree.
    let mut expected = Vec::new();
    for (i, l) in COMMANDS.iter().enumerate() {
        let key = l.short;
        // A limit of 1; 2 strikes for RL.PENALTY, whose first strike then passes
        // and whose COST 5 below starts the block.
        let params = l.per(if l.blocks { 2 } else { 1 }, "1h");
        assert_eq!(l.call(&mut c, key, &params, None).allowed, 1);
        // COST 0 counts as the reply says: allowed (1 + 0 <= 1).
        for _ in 0..3 * i {
            assert_eq!(l.call(&mut c, key, &params, Some(0)).allowed, 1);
        }
        // A full limiter, and a COST above the limit.
        assert_eq!(l.call(&mut c, key, &params, Some(5)).allowed, 0);
        for _ in 0..3 * i + 1 {
            assert_eq!(l.call(&mut c, key, &params, None).allowed, 0);
        }
        // A key of another type, and bad parameters.
        let args = l.args("list", &params, None);
        let args: Vec<&[u8]> = args.iter().map(|a| a.as_bytes()).collect();
        assert!(error_of(&mut c, &args).starts_with("WRONGTYPE"));
        let mut bad = l.args(key, &params, None);
        bad[2] = l.params[0].kind.invalid().into();
        let bad: Vec<&[u8]> = bad.iter().map(|a| a.as_bytes()).collect();
        for _ in 0..3 * i + 2 {
            error_of(&mut c, &bad);
        }
        let n = 3 * i as u64;
        expected.extend([
            (format!("rl_{key}_allowed"), n + 1),
            (format!("rl_{key}_rejected"), n + 2),
            (format!("rl_{key}_errors"), n + 3),
        ]);
    }
    // RL.ALL counts its own calls, once each whatever the number of keys: one
    // allowed, two rejected, three failed. Its keys' commands count nothing more.
    let pair = [
        "2", "all:a", "all:b", "FIXED", "2", "1h", "GCRA", "2", "1", "1h",
    ];
    let mut all = |cost: &str| -> Vec<Vec<i64>> {
        cmd("RL.ALL")
            .arg(&pair)
            .arg("COST")
            .arg(cost)
            .query(&mut c)
            .unwrap()
    };
    assert_eq!(all("2")[0][0], 1);
    assert_eq!(all("1")[0][0], 0);
    assert_eq!(all("3")[0][0], 0);
    for bad in [&b"0"[..], b"17", b"x"] {
        let e = error_of(&mut c, &[b"RL.ALL", bad, b"k", b"FIXED", b"1", b"1h"]);
        assert!(e.starts_with("ERR numkeys"), "{e}");
    }
    expected.extend([
        ("rl_all_allowed".to_string(), 1),
        ("rl_all_rejected".to_string(), 2),
        ("rl_all_errors".to_string(), 3),
    ]);

    let after = info_rl(&mut c);
    for (field, value) in &expected {
        assert_eq!(after.get(field), Some(value), "{field} in {after:?}");
    }
    // INFO without arguments includes the section too (modules' sections are default).
    let all: String = cmd("INFO").arg("everything").query(&mut c).unwrap();
    for (field, value) in &expected {
        assert!(all.contains(&format!("{field}:{value}\r\n")), "{all}");
    }
}

#[test]
fn sliding_max_limit_is_a_module_config() {
    if module_only(
        "rl.sliding-max-limit is a module setting (the library keeps the default 100000)",
    ) {
        return;
    }
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
    if module_only("rl.sliding-max-limit is a module setting") {
        return;
    }
    let s = Server::loading_module(&["sliding-max-limit", "250000"]);
    let mut c = s.conn();
    let got = sliding_max_limit(&mut c);
    assert_eq!(got[1], "250000");
}
