//! RL.PENALTY against a real redis-server, with the module or the library: the
//! reference vector, forgiveness, blocks doubling up to max, writes only when a
//! block starts, COST 0, a policy change, a state without an expiry, foreign
//! content, every bad argument, MULTI, and RL.ALL with a PENALTY policy.
//!
//! Time is controlled exactly: [`at_one_instant`] reads TIME, sets the key to a
//! state whose times are written relative to that instant (`{+60000}` is 60 s
//! later), makes the calls and reads TIME again, retrying until both reads fall in
//! one millisecond, so the calls ran at a known `now`. The cross-cutting tests
//! (replication, AOF, keyspace events, ACL, cluster…) cover RL.PENALTY through its
//! row in `common::COMMANDS`.

use std::sync::LazyLock;

use crate::common::instant;
use crate::common::*;

/// Reads TIME (t0); ARGV[1] is `fresh` (delete the key), `keep`, or a value to SET
/// with each `{+D}` / `{-D}` replaced by t0 ± D ms, ARGV[2] its PXAT in the same
/// form (empty: no expiry); runs the calls in ARGV[3..] (each ended by `|`);
/// reads TIME again.
static AT_ONE_INSTANT: LazyLock<String> = LazyLock::new(|| {
    instant::script(
        r#"
first = 3
if ARGV[1] == 'fresh' then
  redis.call('DEL', key)
elseif ARGV[1] ~= 'keep' then
  redis.call('SET', key, at(ARGV[1]))
  if ARGV[2] ~= '' then
    redis.call('PEXPIREAT', key, at(ARGV[2]))
  end
end"#,
        "state = redis.call('GET', key) or ''",
    )
});

/// How the key starts.
enum Start {
    Fresh,
    /// This value (times relative to now, as `{+D}`), expiring at `pxat` (same
    /// form; None: no expiry).
    Holding {
        value: String,
        pxat: Option<String>,
    },
}

fn holding(value: &str, pxat: &str) -> Start {
    Start::Holding {
        value: value.to_string(),
        pxat: Some(pxat.to_string()),
    }
}

/// A value kept without an expiry.
fn persistent(value: &str) -> Start {
    Start::Holding {
        value: value.to_string(),
        pxat: None,
    }
}

/// Calls at one known server millisecond, the key's value read back after them.
type Instant = instant::Instant<String>;

/// The script's first two arguments for `start`.
fn setup_args(start: &Start) -> Vec<String> {
    match start {
        Start::Fresh => strings(&["fresh", ""]),
        Start::Holding { value, pxat } => strings(&[value, pxat.as_deref().unwrap_or("")]),
    }
}

/// Runs `calls` on `key` at one server millisecond after setting the key up.
fn at_one_instant(c: &mut Connection, key: &str, start: &Start, calls: &[&[&str]]) -> Instant {
    let calls: Vec<Vec<String>> = calls.iter().map(|call| strings(call)).collect();
    instant::at_one_instant(c, &AT_ONE_INSTANT, key, &setup_args(start), &calls)
}

/// strikes 3 in 1 min, blocks of 1 min doubling up to 1 h: the reference vector's.
const LOGIN: &[&str] = &["RL.PENALTY", "k", "3", "1m", "1m", "1h"];

/// [`LOGIN`] with more arguments.
fn login(extra: &[&'static str]) -> Vec<&'static str> {
    [LOGIN, extra].concat()
}

const MINUTE: i64 = 60_000;
const HOUR: i64 = 60 * MINUTE;

#[test]
fn the_reference_vector_blocks_on_the_third_strike_and_doubles_the_next_block() {
    let s = Server::start();
    let mut c = s.conn();
    let strike: &[&str] = LOGIN;
    // t = 0: the first strike opens a one-minute window.
    let i = at_one_instant(&mut c, "k", &Start::Fresh, &[strike]);
    assert_eq!(i.reply(0), [1, 3, 2, 0, 60_000], "t = 0");
    assert_eq!(i.state, i.at("1 {+60000} 0 0"));
    assert_eq!(i.pexpiretime, i.now + 60_000, "the key expires at reset");
    // t = 10 s: the window ends 50 s later.
    let i = at_one_instant(
        &mut c,
        "k",
        &holding("1 {+50000} 0 0", "{+50000}"),
        &[strike],
    );
    assert_eq!(i.reply(0), [1, 3, 1, 0, 50_000], "t = 10 s");
    assert_eq!(i.state, i.at("2 {+50000} 0 0"));
    // t = 20 s: the third strike blocks for a minute.
    let i = at_one_instant(
        &mut c,
        "k",
        &holding("2 {+40000} 0 0", "{+40000}"),
        &[strike],
    );
    assert_eq!(i.reply(0), [0, 3, 0, 60_000, 3_660_000], "t = 20 s");
    assert_eq!(i.state, i.at("0 0 1 {+60000}"));
    assert_eq!(i.pexpiretime, i.now + 3_660_000);
    // t = 30 s: blocked, not counted, nothing written.
    let i = at_one_instant(
        &mut c,
        "k",
        &holding("0 0 1 {+50000}", "{+3650000}"),
        &[strike],
    );
    assert_eq!(i.reply(0), [0, 3, 0, 50_000, 3_650_000], "t = 30 s");
    assert_eq!(i.state, i.at("0 0 1 {+50000}"));
    assert_eq!(i.pexpiretime, i.now + 3_650_000);
    // t = 80 s: the block is over, level 1: the third strike blocks for 2 min.
    let i = at_one_instant(
        &mut c,
        "k",
        &holding("0 0 1 {+0}", "{+3600000}"),
        &[strike, strike, strike],
    );
    assert_eq!(i.reply(0), [1, 3, 2, 0, 3_600_000], "t = 80 s");
    assert_eq!(i.reply(1), [1, 3, 1, 0, 3_600_000]);
    assert_eq!(i.reply(2), [0, 3, 0, 120_000, 3_720_000]);
    assert_eq!(i.state, i.at("0 0 2 {+120000}"));
    assert_eq!(i.pexpiretime, i.now + 3_720_000);
    // t = 3801 s: an hour and a second after that block ended (at 200 s) the key
    // has expired; kept without an expiry, it reads the same: level 0 again.
    let i = at_one_instant(&mut c, "k", &Start::Fresh, &[strike]);
    assert_eq!(i.reply(0), [1, 3, 2, 0, 60_000], "t = 3801 s, expired");
    let i = at_one_instant(&mut c, "k", &persistent("0 0 2 {-3601000}"), &[strike]);
    assert_eq!(i.reply(0), [1, 3, 2, 0, 60_000], "t = 3801 s, no expiry");
    assert_eq!(i.state, i.at("1 {+60000} 0 {-3601000}"));
    assert_eq!(i.pexpiretime, i.now + 60_000, "the write sets an expiry");
}

#[test]
fn an_offender_is_forgiven_exactly_max_after_the_last_block_ended() {
    let s = Server::start();
    let mut c = s.conn();
    let three = login(&["COST", "3"]);
    // The second block ended an hour ago: forgiven, the next block is 1 min.
    let i = at_one_instant(&mut c, "k", &persistent("0 0 2 {-3600000}"), &[&three]);
    assert_eq!(i.reply(0), [0, 3, 0, MINUTE, MINUTE + HOUR]);
    assert_eq!(i.state, i.at("0 0 1 {+60000}"));
    // 1 ms less: still remembered, the third block is 4 min.
    let i = at_one_instant(&mut c, "k", &holding("0 0 2 {-3599999}", "{+1}"), &[&three]);
    assert_eq!(i.reply(0), [0, 3, 0, 4 * MINUTE, 4 * MINUTE + HOUR]);
    assert_eq!(i.state, i.at("0 0 3 {+240000}"));
    assert_eq!(i.pexpiretime, i.now + 4 * MINUTE + HOUR);
}

#[test]
fn blocks_double_up_to_max_at_any_level() {
    let s = Server::start();
    let mut c = s.conn();
    // One strike blocks; blocks of 1 min doubling up to 5 min.
    let strike: &[&str] = &["RL.PENALTY", "k", "1", "1m", "1m", "5m"];
    for (level, block) in [
        ("0", MINUTE),
        ("1", 2 * MINUTE),
        ("2", 4 * MINUTE),
        ("3", 5 * MINUTE),
        ("63", 5 * MINUTE),
        ("64", 5 * MINUTE),
        ("9007199254740990", 5 * MINUTE),
    ] {
        let value = format!("0 0 {level} {{-1}}");
        let i = at_one_instant(&mut c, "k", &holding(&value, "{+299999}"), &[strike]);
        assert_eq!(
            i.reply(0),
            [0, 1, 0, block, block + 5 * MINUTE],
            "level {level}"
        );
        let next = level.parse::<u64>().unwrap() + 1;
        assert_eq!(i.state, format!("0 0 {next} {}", i.now + block));
    }
    // At 2^53 − 1 the level stays: still a value every client reads exactly.
    let top = "0 0 9007199254740991 {-1}";
    let i = at_one_instant(&mut c, "k", &holding(top, "{+299999}"), &[strike]);
    assert_eq!(i.reply(0)[3], 5 * MINUTE);
    assert_eq!(i.state, i.at("0 0 9007199254740991 {+300000}"));
}

#[test]
fn only_the_call_that_starts_a_block_writes_and_calls_during_it_keep_watch() {
    let s = Server::start();
    let mut c = s.conn();
    let three = login(&["COST", "3"]);
    let args: Vec<Vec<u8>> = three.iter().map(|a| a.as_bytes().to_vec()).collect();
    let run = |c: &mut Connection, extra: &[&str]| -> Reply {
        let mut line: Vec<&str> = LOGIN.to_vec();
        line.extend(extra);
        rl(c, &line)
    };
    // The block's start writes: a WATCH aborts, the key gets its expiry.
    let survived = exec_survives(&s, b"k", |a| {
        let r: Vec<i64> = command_of(&args).query(a).unwrap();
        assert_eq!(r[0], 0, "the block starts: {r:?}");
    });
    assert!(
        !survived,
        "the call that starts a block must abort the WATCH"
    );
    let (value, expiry) = snapshot(&mut c, b"k");
    let ttl: i64 = cmd("PTTL").arg("k").query(&mut c).unwrap();
    assert!(ttl > HOUR && ttl <= HOUR + MINUTE, "PTTL {ttl}");
    let changes = info_field(&mut c, "persistence", "rdb_changes_since_last_save");
    // During the block: strikes, COST 0 and huge costs are rejected and write nothing.
    for extra in [
        &[][..],
        &["COST", "0"],
        &["COST", "1"],
        &["COST", "9007199254740991"],
    ] {
        let survived = exec_survives(&s, b"k", |a| {
            let r = run(a, extra);
            assert_eq!((r.allowed, r.remaining), (0, 0), "{extra:?}: {r:?}");
            assert!(r.retry_after > 0 && r.retry_after <= MINUTE, "{r:?}");
        });
        assert!(survived, "{extra:?} during a block aborted the WATCH");
    }
    assert_eq!(
        snapshot(&mut c, b"k"),
        (value, expiry),
        "the block as written"
    );
    assert_eq!(
        info_field(&mut c, "persistence", "rdb_changes_since_last_save"),
        changes
    );
    // A strike that does not block writes too.
    let survived = exec_survives(&s, b"other", |a| {
        let r = rl(a, &["RL.PENALTY", "other", "3", "1m", "1m", "1h"]);
        assert_eq!(r.allowed, 1);
    });
    assert!(!survived, "a counted strike must abort the WATCH");
}

#[test]
fn cost_zero_reports_the_state_and_writes_nothing() {
    let s = Server::start();
    let mut c = s.conn();
    let look = login(&["COST", "0"]);
    let i = at_one_instant(&mut c, "k", &Start::Fresh, &[&look]);
    assert_eq!(i.reply(0), [1, 3, 3, 0, 0], "a clean slate");
    assert_eq!(i.state, "", "no key is made");
    let i = at_one_instant(
        &mut c,
        "k",
        &holding("2 {+30000} 0 0", "{+30000}"),
        &[&look],
    );
    assert_eq!(i.reply(0), [1, 3, 1, 0, 30_000], "two strikes");
    assert_eq!(i.state, i.at("2 {+30000} 0 0"));
    assert_eq!(i.pexpiretime, i.now + 30_000);
    let i = at_one_instant(
        &mut c,
        "k",
        &holding("0 0 1 {+30000}", "{+3630000}"),
        &[&look],
    );
    assert_eq!(i.reply(0), [0, 3, 0, 30_000, 3_630_000], "blocked");
    assert_eq!(i.state, i.at("0 0 1 {+30000}"));
    assert_eq!(i.pexpiretime, i.now + 3_630_000);
}

#[test]
fn a_cost_of_strikes_or_more_blocks_at_once() {
    let s = Server::start();
    let mut c = s.conn();
    for n in ["3", "4", "9007199254740991"] {
        let line = login(&["COST", n]);
        let i = at_one_instant(&mut c, "k", &Start::Fresh, &[&line]);
        assert_eq!(i.reply(0), [0, 3, 0, MINUTE, MINUTE + HOUR], "COST {n}");
        assert_eq!(i.state, i.at("0 0 1 {+60000}"));
    }
    // Two strikes counted: one more is enough.
    let i = at_one_instant(
        &mut c,
        "k",
        &holding("2 {+30000} 0 0", "{+30000}"),
        &[LOGIN],
    );
    assert_eq!(i.reply(0)[0], 0);
}

#[test]
fn a_policy_change_reads_the_live_state_under_the_new_parameters() {
    let s = Server::start();
    let mut c = s.conn();
    // Four strikes counted under `strikes 5`; now 3: none remaining, not blocked,
    // and the next strike blocks.
    let four = holding("4 {+40000} 0 0", "{+40000}");
    let look = login(&["COST", "0"]);
    let i = at_one_instant(&mut c, "k", &four, &[&look, LOGIN]);
    assert_eq!(i.reply(0), [1, 3, 0, 0, 40_000]);
    assert_eq!(i.reply(1), [0, 3, 0, MINUTE, MINUTE + HOUR]);
    // A longer window keeps the open window's end.
    let longer: &[&str] = &["RL.PENALTY", "k", "10", "1h", "1m", "1h"];
    let i = at_one_instant(&mut c, "k", &four, &[longer]);
    assert_eq!(i.reply(0), [1, 10, 5, 0, 40_000]);
    assert_eq!(i.state, i.at("5 {+40000} 0 0"));
    // A lowered max forgives sooner and caps the next block.
    let remembered = holding("0 0 5 {-1000}", "{+3599000}");
    let short: &[&str] = &["RL.PENALTY", "k", "3", "1m", "1m", "2m"];
    let short_look = [short, &["COST", "0"]].concat();
    let i = at_one_instant(&mut c, "k", &remembered, &[&short_look]);
    assert_eq!(i.reply(0), [1, 3, 3, 0, 119_000]);
    let short_block = [short, &["COST", "3"]].concat();
    let i = at_one_instant(&mut c, "k", &remembered, &[&short_block]);
    assert_eq!(i.reply(0), [0, 3, 0, 2 * MINUTE, 4 * MINUTE]);
}

#[test]
fn a_state_without_an_expiry_is_read_and_only_a_write_sets_one() {
    let s = Server::start();
    let mut c = s.conn();
    let blocked = persistent("0 0 1 {+5000}");
    let i = at_one_instant(&mut c, "k", &blocked, &[LOGIN]);
    assert_eq!(i.reply(0), [0, 3, 0, 5_000, 5_000 + HOUR]);
    assert_eq!(i.pexpiretime, -1, "a call while blocked writes nothing");
    let counting = persistent("1 {+5000} 0 0");
    let i = at_one_instant(&mut c, "k", &counting, &[LOGIN]);
    assert_eq!(i.reply(0), [1, 3, 1, 0, 5_000]);
    assert_eq!(i.state, i.at("2 {+5000} 0 0"));
    assert_eq!(i.pexpiretime, i.now + 5_000);
}

#[test]
fn foreign_content_and_other_types_are_errors_that_change_nothing() {
    let s = Server::start();
    let mut c = s.conn();
    let holds = "ERR key does not hold an RL.PENALTY state (a string \"<count> <window_end> <level> <blocked_until>\")";
    for value in [
        "3",
        "1 2 3",
        "1 2 3 4 5",
        "1 2 3 4\n",
        "1 2 3 04",
        "1 2 -3 4",
        "9007199254740992 0 0 0",
        "0 0 0 18446744073709551616",
        "",
    ] {
        let _: () = cmd("SET").arg("k").arg(value).query(&mut c).unwrap();
        for extra in [&[][..], &["COST", "0"]] {
            let before = snapshot(&mut c, b"k");
            let line: Vec<&[u8]> = login(extra).iter().map(|a| a.as_bytes()).collect();
            assert_eq!(error_of(&mut c, &line), holds, "{value:?}");
            assert_eq!(snapshot(&mut c, b"k"), before, "{value:?}");
        }
    }
    let _: i64 = cmd("DEL").arg("k").query(&mut c).unwrap();
    let _: i64 = cmd("HSET")
        .arg("k")
        .arg("a")
        .arg("1")
        .query(&mut c)
        .unwrap();
    let line: Vec<&[u8]> = LOGIN.iter().map(|a| a.as_bytes()).collect();
    assert_eq!(
        error_of(&mut c, &line),
        "WRONGTYPE Operation against a key holding the wrong kind of value"
    );
}

#[test]
fn every_bad_argument_is_an_error_that_names_it_and_changes_nothing() {
    let s = Server::start();
    let mut c = s.conn();
    let duration = |name: &str| {
        format!(
            "ERR {name} must be a duration from 1ms to 3650d: an integer with an optional \
             unit ms, s, m, h or d (a bare integer means seconds)"
        )
    };
    let not_here = |option: &str| {
        format!("ERR syntax error: {option} does not apply to RL.PENALTY, which takes COST n")
    };
    let cases: Vec<(Vec<&str>, String)> = vec![
        (
            vec!["0", "1m", "1m", "1h"],
            "ERR strikes must be an integer from 1 to 9007199254740991".into(),
        ),
        (
            vec!["9007199254740992", "1m", "1m", "1h"],
            "ERR strikes must be an integer from 1 to 9007199254740991".into(),
        ),
        (vec!["3", "0", "1m", "1h"], duration("window")),
        (vec!["3", "1m", "1w", "1h"], duration("block")),
        (vec!["3", "1m", "1m", "3651d"], duration("max")),
        (
            vec!["3", "1m", "2h", "1h"],
            "ERR block must be at most max".into(),
        ),
        (
            vec!["3", "1m", "1m", "1h", "REFUND", "1"],
            not_here("REFUND"),
        ),
        (vec!["3", "1m", "1m", "1h", "debit", "1"], not_here("DEBIT")),
        (
            vec!["3", "1m", "1m", "1h", "COST", "1", "Delay", "1s"],
            not_here("DELAY"),
        ),
        (
            vec!["3", "1m", "1m", "1h", "WEIGHT", "1"],
            "ERR syntax error: unknown option 'WEIGHT', expected COST n".into(),
        ),
        (
            vec!["3", "1m", "1m", "1h", "COST"],
            "ERR syntax error: COST needs a value".into(),
        ),
        (
            vec!["3", "1m", "1m", "1h", "COST", "1", "cost", "2"],
            "ERR syntax error: COST given more than once".into(),
        ),
        (
            vec!["3", "1m", "1m", "1h", "COST", "-1"],
            "ERR COST must be an integer from 0 to 9007199254740991".into(),
        ),
        (vec!["3", "1m", "1m"], arity_error("RL.PENALTY")),
    ];
    // A key with strikes on it, and an absent key.
    rl(&mut c, &["RL.PENALTY", "live", "3", "1m", "1m", "1h"]);
    for key in ["live", "absent"] {
        for (params, want) in &cases {
            let before = snapshot(&mut c, key.as_bytes());
            let mut line: Vec<&[u8]> = vec![b"RL.PENALTY", key.as_bytes()];
            line.extend(params.iter().map(|p| p.as_bytes()));
            let e = error_of(&mut c, &line);
            if want.contains("wrong number of arguments") {
                // Named in the server's case: the module's RL.PENALTY, rl_penalty.
                assert!(e.eq_ignore_ascii_case(want), "{params:?}: {e}");
            } else {
                assert_eq!(&e, want, "{params:?}");
            }
            assert_eq!(snapshot(&mut c, key.as_bytes()), before, "{params:?}");
        }
    }
}

#[test]
fn a_block_started_inside_multi_holds_for_the_rest_of_it() {
    let s = Server::start();
    let mut c = s.conn();
    let mut tx = redis::pipe();
    tx.atomic();
    for extra in [&[][..], &["COST", "2"], &["COST", "0"], &[]] {
        tx.add_command(command_of(&login(extra)));
    }
    let replies: Vec<Vec<i64>> = tx.query(&mut c).expect("MULTI/EXEC");
    let heads: Vec<[i64; 2]> = replies.iter().map(|r| [r[0], r[2]]).collect();
    assert_eq!(heads, [[1, 2], [0, 0], [0, 0], [0, 0]], "{replies:?}");
    // The block starts at the second call and lasts a minute. Redis 7.0 has no frozen
    // instant inside MULTI, so a later call may see a ms or two of it gone.
    assert_eq!(replies[0][3], 0, "{replies:?}");
    assert_eq!(replies[1][3], MINUTE, "{replies:?}");
    for r in &replies[2..] {
        assert!((MINUTE - 1000..=MINUTE).contains(&r[3]), "{replies:?}");
    }
}

#[test]
fn rl_all_looks_at_the_block_and_takes_from_the_rate_limit_in_one_call() {
    let s = Server::start();
    let mut c = s.conn();
    let all = |option: &'static str, n: &'static str| -> Vec<&'static str> {
        vec![
            "RL.ALL", "2", "{u}:pen", "{u}:rate", "PENALTY", "3", "1m", "1m", "1h", "GCRA", "10",
            "1", "1s", option, n,
        ]
    };
    let take = all("COST", "1");
    // Blocked: rejected for the rest of the block, and nothing is written; the
    // combined limit, remaining and reset are the rate limit's, never the strikes.
    let i = at_one_instant(
        &mut c,
        "{u}:pen",
        &holding("0 0 1 {+30000}", "{+3630000}"),
        &[&take],
    );
    let r = i.all_reply(0);
    assert_eq!(r[1], [0, 3, 0, 30_000, 3_630_000], "the penalty key");
    assert_eq!(r[2], [1, 10, 10, 0, 0], "the rate limit, nothing taken");
    assert_eq!(r[0], [0, 10, 10, 30_000, 0], "combined");
    assert_eq!(
        i.state,
        i.at("0 0 1 {+30000}"),
        "the penalty key is unchanged"
    );
    assert!(
        !exists(&mut c, "{u}:rate"),
        "a rejected call writes nothing"
    );
    // Strikes counted but no block: the request is taken from the rate limit, and
    // the combined answer is the rate limit's; the strikes are not touched. (A try
    // that missed the millisecond is run again: each starts from no rate key.)
    let fresh_rate: &[&str] = &["DEL", "{u}:rate"];
    let i = at_one_instant(
        &mut c,
        "{u}:pen",
        &holding("2 {+30000} 0 0", "{+30000}"),
        &[fresh_rate, &take, &take],
    );
    assert_eq!(i.all_reply(1)[1], [1, 3, 1, 0, 30_000], "the penalty key");
    assert_eq!(i.all_reply(1)[2], [1, 10, 9, 0, 1000], "the rate limit");
    assert_eq!(i.all_reply(1)[0], [1, 10, 9, 0, 1000], "combined");
    assert_eq!(
        i.all_reply(2)[0],
        [1, 10, 8, 0, 2000],
        "combined, second call"
    );
    assert_eq!(i.state, i.at("2 {+30000} 0 0"), "RL.ALL never strikes");
    // REFUND and DEBIT settle what was taken, blocked or not.
    let i = at_one_instant(
        &mut c,
        "{u}:pen",
        &holding("0 0 1 {+30000}", "{+3630000}"),
        &[
            fresh_rate,
            &all("REFUND", "1"),
            &all("DEBIT", "3"),
            &all("COST", "0"),
        ],
    );
    assert_eq!(i.all_reply(1)[0], [1, 10, 10, 0, 0], "nothing to refund");
    assert_eq!(i.all_reply(2)[0], [1, 10, 7, 0, 3000], "debited three");
    assert_eq!(
        i.all_reply(2)[1],
        [0, 3, 0, 30_000, 3_630_000],
        "still blocked"
    );
    // COST 0 only looks: blocked, so not allowed, with the rate limit's figures.
    assert_eq!(i.all_reply(3)[0], [0, 10, 7, 30_000, 3000], "COST 0");
    assert_eq!(i.state, i.at("0 0 1 {+30000}"));
    // A policy missing an argument is named, whatever was read in its place.
    let before = snapshot(&mut c, b"{u}:pen");
    for (line, want) in [
        (
            vec![
                "RL.ALL", "1", "{u}:pen", "PENALTY", "5", "15m", "1m", "COST", "0",
            ],
            "ERR syntax error: policy PENALTY takes strikes window block max",
        ),
        (
            vec![
                "RL.ALL", "2", "{u}:pen", "{u}:rate", "PENALTY", "5", "15m", "1m", "GCRA", "10",
                "1", "1s",
            ],
            "ERR syntax error: policy PENALTY takes strikes window block max",
        ),
    ] {
        let bytes: Vec<&[u8]> = line.iter().map(|a| a.as_bytes()).collect();
        assert_eq!(error_of(&mut c, &bytes), want, "{line:?}");
    }
    assert_eq!(snapshot(&mut c, b"{u}:pen"), before);
    let mut bad = all("COST", "1");
    bad[7] = "2h";
    let bytes: Vec<&[u8]> = bad.iter().map(|a| a.as_bytes()).collect();
    assert_eq!(error_of(&mut c, &bytes), "ERR block must be at most max");
}
