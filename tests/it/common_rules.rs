//! Rules every RL command shares (docs/commands.md#common-rules), checked over every row of
//! `common::COMMANDS` against real redis-servers.

use crate::common::*;

use std::time::Duration;

const BAD_COUNTS: &[&str] = &["0", "-1", "1.5", "9007199254740992", "abc", ""];
/// CL.THROTTLE's max_burst: 0 ..= 2^53−2.
const BAD_BURSTS: &[&str] = &["-1", "1.5", "9007199254740991", "abc", ""];
const BAD_DURATIONS: &[&str] = &["0", "0ms", "-1", "1.5s", "1w", "315360000001ms", "ms", ""];

/// Values out of a parameter's range, by its kind: for a weight the bad counts
/// below 2^53 − 1 and one past its maximum (RL.SHARE's 10001), for a text the empty
/// one and one byte more than its longest.
fn bad_values(p: &Param) -> Vec<String> {
    match p.kind {
        Kind::Count => strings(BAD_COUNTS),
        Kind::Burst => strings(BAD_BURSTS),
        Kind::Duration => strings(BAD_DURATIONS),
        Kind::Weight => {
            let max: u64 = p.max.parse().expect("a weight's maximum");
            let mut bad = strings(BAD_COUNTS);
            bad.push((max + 1).to_string());
            bad
        }
        Kind::Text => vec![String::new(), format!("{}x", p.max)],
        Kind::Unit => strings(&["hour", "days", "1d", "", "month\0"]),
    }
}

/// Calls on byte keys with the table's valid parameters.
trait Rules {
    /// The command line: name, key, `params`, `extra`.
    fn line(&self, key: &[u8], params: &[&str], extra: &[&str]) -> Vec<Vec<u8>>;
    /// A valid call with the table's parameters and `extra` arguments; its reply in
    /// RL's shape ([`Command::reply_of`]).
    fn invoke(&self, c: &mut Connection, key: &[u8], extra: &[&str]) -> Reply;
    /// Leaves `key` with 1 of its 5 units: a call with COST 2 is then rejected.
    fn nearly_fill(&self, c: &mut Connection, key: &[u8]);
    /// Leaves `key` where a call that takes units is rejected and writes nothing:
    /// 1 of its 5 units left or, for a limiter that blocks, blocked (the call that
    /// starts the block writes it, here). Whether COST 0 is then allowed: `peeks`.
    fn fill_to_rejection(&self, c: &mut Connection, key: &[u8]);
    /// Whether COST 0 is allowed on a key left by [`Rules::fill_to_rejection`].
    fn peeks(&self) -> bool;
    /// The arguments that give a call the cost `n` (any text, valid or not):
    /// `COST n`, or CL.THROTTLE's positional quantity `n`.
    fn cost(&self, n: &'static str) -> Vec<&'static str>;
}

impl Rules for Command {
    fn line(&self, key: &[u8], params: &[&str], extra: &[&str]) -> Vec<Vec<u8>> {
        let mut v = vec![self.name.as_bytes().to_vec(), key.to_vec()];
        v.extend(params.iter().chain(extra).map(|a| a.as_bytes().to_vec()));
        v
    }

    fn invoke(&self, c: &mut Connection, key: &[u8], extra: &[&str]) -> Reply {
        let v: Vec<i64> = redis::from_owned_redis_value(
            run(c, &self.line(key, &self.valid_params(), extra))
                .unwrap_or_else(|e| panic!("{} {key:?} {extra:?}: {e}", self.name)),
        )
        .expect("an array of integers");
        self.reply_of(&v)
    }

    fn nearly_fill(&self, c: &mut Connection, key: &[u8]) {
        let r = self.invoke(c, key, &self.cost("4"));
        assert_eq!((r.allowed, r.remaining), (1, 1), "{}: {r:?}", self.name);
    }

    fn fill_to_rejection(&self, c: &mut Connection, key: &[u8]) {
        self.nearly_fill(c, key);
        if self.blocks {
            let r = self.invoke(c, key, &self.cost("2"));
            assert_eq!(r.allowed, 0, "{}: the block: {r:?}", self.name);
        }
    }

    fn peeks(&self) -> bool {
        !self.blocks
    }

    fn cost(&self, n: &'static str) -> Vec<&'static str> {
        match self.style {
            Style::Rl | Style::CostOnly => vec!["COST", n],
            Style::Throttle => vec![n],
        }
    }
}

/// Runs any command given as raw byte arguments.
/// RL commands go to the backend under test ([`translate`]).
fn run(c: &mut Connection, args: &[Vec<u8>]) -> redis::RedisResult<Value> {
    command_of(args).query(c)
}

/// `COMMAND GETKEYS` of an RL call as the backend takes it.
fn getkeys_of(line: Vec<Vec<u8>>) -> Vec<Vec<u8>> {
    let mut getkeys = vec![b"COMMAND".to_vec(), b"GETKEYS".to_vec()];
    getkeys.extend(translate(line));
    getkeys
}

fn run_str(c: &mut Connection, args: &[&str]) -> Value {
    run(c, &with_key(args, b"k")).unwrap_or_else(|e| panic!("{args:?}: {e}"))
}

/// A command from a table, with its placeholder key `k` replaced by `key`.
fn with_key(args: &[&str], key: &[u8]) -> Vec<Vec<u8>> {
    args.iter()
        .map(|&a| if a == "k" { key } else { a.as_bytes() }.to_vec())
        .collect()
}

fn error_of_line(c: &mut Connection, line: &[Vec<u8>]) -> String {
    let args: Vec<&[u8]> = line.iter().map(Vec::as_slice).collect();
    error_of(c, &args)
}

/// `rdb_changes_since_last_save` from INFO persistence.
fn dirty(c: &mut Connection) -> i64 {
    info_field(c, "persistence", "rdb_changes_since_last_save")
}

/// A status, bulk or integer reply as text.
fn text(v: &Value) -> String {
    match v {
        Value::BulkString(b) => String::from_utf8_lossy(b).into_owned(),
        Value::SimpleString(s) => s.clone(),
        Value::Okay => "OK".into(),
        Value::Int(i) => i.to_string(),
        other => panic!("not a string: {other:?}"),
    }
}

fn items(v: &Value) -> &[Value] {
    match v {
        Value::Array(items) | Value::Set(items) => items,
        other => panic!("not an array: {other:?}"),
    }
}

/// A RESP2 flat map (or a RESP3 map) as (field, value) pairs.
fn fields(v: &Value) -> Vec<(String, &Value)> {
    match v {
        Value::Map(pairs) => pairs.iter().map(|(k, v)| (text(k), v)).collect(),
        other => items(other)
            .chunks(2)
            .map(|pair| (text(&pair[0]), &pair[1]))
            .collect(),
    }
}

fn field<'v>(v: &'v Value, name: &str) -> &'v Value {
    fields(v)
        .into_iter()
        .find_map(|(k, v)| (k == name).then_some(v))
        .unwrap_or_else(|| panic!("no field {name} in {v:?}"))
}

/// Runs the erroneous `line` (built for a key) against a key the limiter wrote and
/// against an absent key: each time the reply is an error starting with `code` and
/// containing `fragment`, and nothing changes (same DUMP and expiry, absent stays
/// absent, no change counted for RDB).
fn assert_error_changes_nothing(
    c: &mut Connection,
    lim: &Command,
    line: impl Fn(&[u8]) -> Vec<Vec<u8>>,
    code: &str,
    fragment: &str,
) {
    let live = format!("{}:live", lim.name).into_bytes();
    lim.invoke(c, &live, &[]);
    let _: i64 = cmd("DEL").arg("absent").query(c).unwrap();
    for key in [&live[..], b"absent"] {
        let before = snapshot(c, key);
        let changes = dirty(c);
        let args = line(key);
        let e = error_of_line(c, &args);
        let shown: Vec<_> = args.iter().map(|a| String::from_utf8_lossy(a)).collect();
        assert!(
            e.starts_with(&format!("{code} ")),
            "{shown:?}: error {e:?} should have code {code}"
        );
        assert!(
            e.to_lowercase().contains(&fragment.to_lowercase()),
            "{shown:?}: error {e:?} should mention {fragment:?}"
        );
        assert_eq!(snapshot(c, key), before, "{shown:?} changed {key:?}");
        assert_eq!(dirty(c), changes, "{shown:?} counted a change");
    }
}

#[test]
fn wrong_arity_is_redis_standard_error_and_changes_nothing() {
    let s = Server::start();
    let mut c = s.conn();
    for lim in COMMANDS {
        let message = format!(
            "wrong number of arguments for '{}' command",
            arity_name(lim.name)
        );
        let valid = lim.valid_params();
        for given in 0..valid.len() {
            assert_error_changes_nothing(
                &mut c,
                lim,
                |key| lim.line(key, &valid[..given], &[]),
                "ERR",
                &message,
            );
        }
        if is_library() {
            // FCALL rl_x 1 with no key: FCALL's own error, before the function.
            continue;
        }
        // The server names the command as RL registered it, whatever the case sent.
        for name in [lim.name.to_string(), lim.name.to_lowercase()] {
            let e = error_of(&mut c, &[name.as_bytes()]);
            assert!(e.contains(&message), "{name}: {e}");
        }
    }
}

#[test]
fn bad_counts_and_durations_are_errors_naming_the_argument() {
    let s = Server::start();
    let mut c = s.conn();
    for lim in COMMANDS {
        for (i, p) in lim.params.iter().enumerate() {
            for value in &bad_values(p) {
                let mut params = lim.valid_params();
                params[i] = value;
                assert_error_changes_nothing(
                    &mut c,
                    lim,
                    |key| lim.line(key, &params, &[]),
                    "ERR",
                    p.name,
                );
            }
        }
    }
}

#[test]
fn bad_options_are_errors_naming_cost() {
    let s = Server::start();
    let mut c = s.conn();
    let bad: &[&[&str]] = &[
        &["COST", "-1"],
        &["COST", "9007199254740992"],
        &["COST", "abc"],
        &["COST", "1.5"],
        &["COST", ""],
        &["COST"],
        &["cost"],
        &["COST", "1", "COST", "1"],
        &["COST", "1", "cost", "0"],
        &["WEIGHT", "2"],
        &["COST", "1", "EX"],
        // Echoed options must not break the error line.
        &["a\r\nb\x00c"],
    ];
    for lim in COMMANDS {
        match lim.style {
            Style::Rl | Style::CostOnly => {
                for options in bad {
                    assert_error_changes_nothing(
                        &mut c,
                        lim,
                        |key| lim.line(key, &lim.valid_params(), options),
                        "ERR",
                        "COST",
                    );
                }
            }
            // No options: a bad quantity names it, and any argument after it (an
            // option like `COST 1`, a second quantity) is redis-cell's arity error.
            Style::Throttle => {
                for quantity in ["-1", "9007199254740992", "abc", "1.5", ""] {
                    assert_error_changes_nothing(
                        &mut c,
                        lim,
                        |key| lim.line(key, &lim.valid_params(), &[quantity]),
                        "ERR",
                        "quantity",
                    );
                }
                let message = format!("wrong number of arguments for '{}' command", lim.name);
                let too_many: &[&[&str]] = &[&["1", "1"], &["COST", "1"], &["1", "COST", "1"]];
                for extra in too_many {
                    assert_error_changes_nothing(
                        &mut c,
                        lim,
                        |key| lim.line(key, &lim.valid_params(), extra),
                        "ERR",
                        &message,
                    );
                }
            }
        }
    }
}

#[test]
fn options_are_case_insensitive() {
    let s = Server::start();
    let mut c = s.conn();
    // CL.THROTTLE has no options (its quantity is positional): RL's rows only.
    for lim in COMMANDS.iter().filter(|l| l.style != Style::Throttle) {
        for (key, option) in [(&b"a"[..], "COST"), (b"b", "cost"), (b"c", "CoSt")] {
            let r = lim.invoke(&mut c, key, &[option, "3"]);
            assert_eq!((r.allowed, r.remaining), (1, 2), "{} {option}", lim.name);
        }
        let _: () = cmd("FLUSHALL").query(&mut c).unwrap();
    }
}

#[test]
fn keys_of_another_type_are_wrongtype_and_untouched() {
    let s = Server::start();
    let mut c = s.conn();
    for lim in COMMANDS {
        for setup in lim.wrong_types {
            let _: () = cmd("FLUSHALL").query(&mut c).unwrap();
            run_str(&mut c, setup);
            for extra in [vec![], lim.cost("0")] {
                let before = snapshot(&mut c, b"k");
                let e = error_of_line(&mut c, &lim.line(b"k", &lim.valid_params(), &extra));
                assert_eq!(
                    e, "WRONGTYPE Operation against a key holding the wrong kind of value",
                    "{} on {setup:?}",
                    lim.name
                );
                assert_eq!(snapshot(&mut c, b"k"), before, "{} on {setup:?}", lim.name);
            }
        }
    }
}

#[test]
fn content_rl_did_not_write_is_an_error_and_untouched() {
    let s = Server::start();
    let mut c = s.conn();
    for lim in COMMANDS {
        for setup in lim.foreign {
            let _: () = cmd("FLUSHALL").query(&mut c).unwrap();
            run_str(&mut c, setup);
            for extra in [vec![], lim.cost("0")] {
                let before = snapshot(&mut c, b"k");
                let e = error_of_line(&mut c, &lim.line(b"k", &lim.valid_params(), &extra));
                assert!(
                    e.starts_with("ERR ") && e.contains("does not hold") && e.contains(lim.holds),
                    "{} on {setup:?}: {e}",
                    lim.name
                );
                assert_eq!(snapshot(&mut c, b"k"), before, "{} on {setup:?}", lim.name);
            }
        }
    }
}

/// Every reader of an RL sorted set refuses one whose lowest or highest score is
/// not a whole ms time RL could have written, with or without an expiry, and leaves
/// it as it was: RL.SLIDING (taking, inspecting, refunding), RL.ACQUIRE, RL.RELEASE
/// and RL.ALL's SLIDING and ACQUIRE policies.
#[test]
fn sorted_sets_with_fractional_or_out_of_range_edges_are_refused_by_every_reader() {
    let s = Server::start();
    let mut c = s.conn();
    let log = "ERR key does not hold an RL.SLIDING log (a sorted set of ms timestamps)";
    let leases = "ERR key does not hold an RL.ACQUIRE lease set (a sorted set of lease ends in ms)";
    let readers: &[(&[&str], &str)] = &[
        (&["RL.SLIDING", "k", "5", "1h"], log),
        (&["RL.SLIDING", "k", "5", "1h", "COST", "0"], log),
        (&["RL.SLIDING", "k", "5", "1h", "REFUND", "1"], log),
        (&["RL.ACQUIRE", "k", "5", "1h", "a"], leases),
        (&["RL.RELEASE", "k", "a"], leases),
        (&["RL.ALL", "1", "k", "SLIDING", "5", "1h"], log),
        (&["RL.ALL", "1", "k", "ACQUIRE", "5", "1h", "a"], leases),
        (
            &["RL.ALL", "1", "k", "SLIDING", "5", "1h", "COST", "0"],
            log,
        ),
        (
            &["RL.ALL", "1", "k", "ACQUIRE", "5", "1h", "a", "COST", "0"],
            leases,
        ),
    ];
    let now = server_ms(&mut c);
    let recent = |ms: i64, fraction: &str| format!("{}{fraction}", now + ms);
    // (scores, with an expiry): the highest or the lowest score is not a whole ms in
    // 0 ..= 2^53 - 1. Recent times too, which a reader that rounds would count.
    let setups: Vec<(Vec<String>, bool)> = vec![
        (vec!["1.5".into()], false),
        (vec![recent(-1000, ".5")], false),
        (vec![recent(-1000, ".5")], true),
        (vec![recent(-2000, ""), recent(-1000, ".25")], true),
        (vec![recent(-2000, ".75"), recent(-1000, "")], false),
        (vec!["9007199254740992".into()], false),
        (vec![recent(-1000, ""), "9007199254740992".into()], true),
        (vec!["-1".into(), recent(-1000, "")], true),
    ];
    for (scores, expiry) in &setups {
        let _: () = cmd("DEL").arg("k").query(&mut c).unwrap();
        for (i, score) in scores.iter().enumerate() {
            let _: i64 = cmd("ZADD")
                .arg("k")
                .arg(score)
                .arg(["a", "b"][i])
                .query(&mut c)
                .unwrap();
        }
        if *expiry {
            let _: i64 = cmd("PEXPIRE")
                .arg("k")
                .arg(3_600_000)
                .query(&mut c)
                .unwrap();
        }
        for (args, want) in readers {
            let before = snapshot(&mut c, b"k");
            let pttl: i64 = cmd("PTTL").arg("k").query(&mut c).unwrap();
            let changes = dirty(&mut c);
            let bytes: Vec<&[u8]> = args.iter().map(|a| a.as_bytes()).collect();
            assert_eq!(&error_of(&mut c, &bytes), want, "{args:?} on {scores:?}");
            assert_eq!(snapshot(&mut c, b"k"), before, "{args:?} on {scores:?}");
            let after: i64 = cmd("PTTL").arg("k").query(&mut c).unwrap();
            assert_eq!(after == -1, pttl == -1, "{args:?} on {scores:?}: PTTL");
            assert!(
                after <= pttl,
                "{args:?} on {scores:?}: PTTL {pttl} → {after}"
            );
            assert_eq!(dirty(&mut c), changes, "{args:?} on {scores:?}");
        }
    }
}

#[test]
fn sliding_limit_above_the_maximum_points_to_bucket() {
    let s = Server::start();
    let mut c = s.conn();
    assert_error_changes_nothing(
        &mut c,
        &SLIDING,
        |key| SLIDING.line(key, &["100001", "1h"], &[]),
        "ERR",
        "limit must be an integer from 1 to 100000 for RL.SLIDING, which keeps one entry \
         per unit (rl.sliding-max-limit); use RL.BUCKET for larger limits",
    );
    let r = rl(&mut c, &["RL.SLIDING", "big", "100000", "1h"]);
    assert_eq!((r.allowed, r.limit, r.remaining), (1, 100_000, 99_999));
}

#[test]
fn binary_keys_are_distinct_limiters_and_getkeys_returns_them() {
    let s = Server::start();
    let mut c = s.conn();
    let key: &[u8] = b"a\x00b\xff\r\n c";
    let sibling: &[u8] = b"a\x00c\xff\r\n c";
    for lim in COMMANDS {
        let _: () = cmd("FLUSHALL").query(&mut c).unwrap();
        assert_eq!(lim.invoke(&mut c, key, &lim.cost("2")).remaining, 3);
        assert_eq!(lim.invoke(&mut c, key, &[]).remaining, 2, "{}", lim.name);
        assert_eq!(
            lim.invoke(&mut c, sibling, &[]).remaining,
            4,
            "{}: bytes after NUL make another key",
            lim.name
        );
        let kind: String = cmd("TYPE").arg(key).query(&mut c).unwrap();
        assert_eq!(kind, lim.native_type);
        let getkeys = getkeys_of(lim.line(key, &lim.valid_params(), &lim.cost("1")));
        let keys: Vec<Vec<u8>> =
            redis::from_owned_redis_value(run(&mut c, &getkeys).unwrap()).expect("a list of keys");
        assert_eq!(keys, vec![key.to_vec()], "{}", lim.name);
    }
}

#[test]
fn getkeys_returns_only_the_first_argument() {
    let s = Server::start();
    let mut c = s.conn();
    for lim in COMMANDS {
        for (key, extra) in [("k", vec![]), ("{user42}:api", lim.cost("3"))] {
            let getkeys = getkeys_of(lim.line(key.as_bytes(), &lim.valid_params(), &extra));
            let keys: Vec<String> =
                redis::from_owned_redis_value(run(&mut c, &getkeys).unwrap()).unwrap();
            assert_eq!(keys, vec![key.to_string()], "{}", lim.name);
        }
    }
}

#[test]
fn command_info_declares_arity_flags_and_key_spec() {
    if module_only("COMMAND INFO describes module commands") {
        return;
    }
    let s = Server::start();
    let mut c = s.conn();
    for lim in COMMANDS {
        let info: Value = cmd("COMMAND")
            .arg("INFO")
            .arg(lim.name)
            .query(&mut c)
            .unwrap();
        let entry = &items(&info)[0];
        let entry = items(entry);
        assert_eq!(text(&entry[0]).to_lowercase(), lim.name.to_lowercase());
        assert_eq!(
            text(&entry[1]),
            lim.arity().to_string(),
            "{} arity",
            lim.name
        );
        let flags: Vec<String> = items(&entry[2]).iter().map(text).collect();
        for f in ["write", "denyoom"] {
            assert!(flags.contains(&f.to_string()), "{}: {flags:?}", lim.name);
        }
        assert_eq!(
            flags.contains(&"fast".to_string()),
            lim.fast(),
            "{}: {flags:?}",
            lim.name
        );
        assert!(!flags.contains(&"readonly".to_string()));
        let positions: Vec<String> = entry[3..6].iter().map(text).collect();
        assert_eq!(positions, ["1", "1", "1"], "{} first/last/step", lim.name);
        let specs = items(&entry[8]);
        assert_eq!(specs.len(), 1, "{}: one key spec", lim.name);
        let spec_flags: Vec<String> = items(field(&specs[0], "flags")).iter().map(text).collect();
        for f in ["RW", "update"] {
            assert!(
                spec_flags.contains(&f.to_string()),
                "{}: {spec_flags:?}",
                lim.name
            );
        }
    }
}

#[test]
fn command_docs_describe_summary_since_and_arguments() {
    if module_only("COMMAND DOCS describes module commands") {
        return;
    }
    let s = Server::start();
    let mut c = s.conn();
    for lim in COMMANDS {
        let docs: Value = cmd("COMMAND")
            .arg("DOCS")
            .arg(lim.name)
            .query(&mut c)
            .unwrap();
        let (name, doc) = fields(&docs).into_iter().next().expect("one entry");
        assert_eq!(name.to_lowercase(), lim.name.to_lowercase());
        assert!(!text(field(doc, "summary")).is_empty(), "{}", lim.name);
        assert!(!text(field(doc, "since")).is_empty(), "{}", lim.name);
        assert_eq!(text(field(doc, "module")), "rl");
        let args = items(field(doc, "arguments"));
        let mut want = vec!["key".to_string()];
        want.extend(lim.params.iter().map(|p| p.name.to_string()));
        want.push(
            match lim.style {
                Style::Rl => "amount",
                Style::CostOnly => "cost",
                Style::Throttle => "quantity",
            }
            .into(),
        );
        // [SHADOW] follows the amount, a pure token, where the row takes it.
        let takes_shadow = lim.row().takes_option(rl_core::options::Opt::Shadow);
        if takes_shadow {
            want.push("shadow".into());
        }
        // RL.GCRA's [DELAY max] follows them: a token and a duration.
        let args = match args.split_last() {
            Some((delay, rest)) if lim.name == "RL.GCRA" => {
                assert_eq!(text(field(delay, "name")), "delay");
                assert_eq!(text(field(delay, "token")), "DELAY");
                assert_eq!(text(field(delay, "type")), "string");
                let flags: Vec<String> = items(field(delay, "flags")).iter().map(text).collect();
                assert_eq!(flags, ["optional"]);
                rest
            }
            _ => args,
        };
        // RL.QUOTA's calendar follows its amount: four optional tokens.
        let args = if lim.calendar() {
            let (rest, calendar) = args.split_at(args.len() - 4);
            let docs: Vec<(String, String)> = calendar
                .iter()
                .map(|a| (text(field(a, "name")), text(field(a, "token"))))
                .collect();
            let want = [
                ("every", "EVERY"),
                ("anchor", "ON"),
                ("time", "AT"),
                ("zone", "TZ"),
            ];
            assert_eq!(docs, want.map(|(n, t)| (n.to_string(), t.to_string())));
            for a in calendar {
                let flags: Vec<String> = items(field(a, "flags")).iter().map(text).collect();
                assert_eq!(flags, ["optional"]);
            }
            rest
        } else {
            args
        };
        let names: Vec<String> = args.iter().map(|a| text(field(a, "name"))).collect();
        assert_eq!(names, want, "{}", lim.name);
        assert_eq!(text(field(&args[0], "type")), "key");
        let amount = match args.split_last() {
            Some((shadow, rest)) if takes_shadow => {
                assert_eq!(text(field(shadow, "token")), "SHADOW");
                assert_eq!(text(field(shadow, "type")), "pure-token");
                rest.last().unwrap()
            }
            _ => args.last().unwrap(),
        };
        match lim.style {
            // [COST n | REFUND n], and DEBIT n where the command takes it: a choice
            // of integer options.
            Style::Rl => {
                assert_eq!(text(field(amount, "type")), "oneof");
                let options: Vec<(String, String, String)> = items(field(amount, "arguments"))
                    .iter()
                    .map(|o| {
                        (
                            text(field(o, "name")),
                            text(field(o, "token")),
                            text(field(o, "type")),
                        )
                    })
                    .collect();
                let mut want = vec![("cost", "COST", "integer"), ("refund", "REFUND", "integer")];
                if lim.debit() {
                    want.push(("debit", "DEBIT", "integer"));
                }
                let want: Vec<(String, String, String)> = want
                    .into_iter()
                    .map(|(n, t, ty)| (n.to_string(), t.to_string(), ty.to_string()))
                    .collect();
                assert_eq!(options, want, "{}", lim.name);
            }
            // [COST n] alone: the integer option.
            Style::CostOnly => {
                assert_eq!(text(field(amount, "token")), "COST", "{}", lim.name);
                assert_eq!(text(field(amount, "type")), "integer");
            }
            // Positional: no token to type.
            Style::Throttle => {
                assert!(
                    fields(amount).iter().all(|(k, _)| k != "token"),
                    "{}: {amount:?}",
                    lim.name
                );
                assert_eq!(text(field(amount, "type")), "integer");
            }
        }
        let flags: Vec<String> = items(field(amount, "flags")).iter().map(text).collect();
        assert!(flags.contains(&"optional".to_string()), "{flags:?}");
    }
}

/// RL.ALL's policies as COMMAND DOCS shows them: a block per policy, GCRA's ending
/// with its optional `DELAY max`.
#[test]
fn command_docs_show_rl_all_s_gcra_policy_with_its_delay() {
    if module_only("COMMAND DOCS describes module commands") {
        return;
    }
    let s = Server::start();
    let mut c = s.conn();
    let docs: Value = cmd("COMMAND")
        .arg("DOCS")
        .arg("RL.ALL")
        .query(&mut c)
        .unwrap();
    let (_, doc) = fields(&docs).into_iter().next().expect("one entry");
    let args = items(field(doc, "arguments"));
    let policy = args
        .iter()
        .find(|a| text(field(a, "name")) == "policy")
        .expect("a policy argument");
    let blocks: Vec<(String, Vec<String>)> = items(field(policy, "arguments"))
        .iter()
        .map(|b| {
            let names = items(field(b, "arguments"))
                .iter()
                .map(|a| text(field(a, "name")))
                .collect();
            (text(field(b, "token")), names)
        })
        .collect();
    let gcra = blocks
        .iter()
        .find(|(token, _)| token == "GCRA")
        .expect("GCRA");
    assert_eq!(
        gcra.1,
        ["capacity", "tokens", "period", "delay"],
        "{blocks:?}"
    );
    let others = blocks.iter().filter(|(token, _)| token != "GCRA");
    for (token, names) in others {
        assert!(!names.contains(&"delay".to_string()), "{token}: {names:?}");
    }
}

#[test]
fn module_list_names_the_module_rl() {
    if module_only("MODULE LIST") {
        return;
    }
    // Some servers list built-in modules of their own (Valkey 9: `lua`): loading RL
    // adds exactly `rl` to what the server lists without it.
    let names = |s: &Server| -> Vec<String> {
        let list: Value = cmd("MODULE").arg("LIST").query(&mut s.conn()).unwrap();
        let mut names: Vec<String> = items(&list)
            .iter()
            .map(|m| text(field(m, "name")))
            .collect();
        names.sort();
        names
    };
    let mut expected = names(&Server::with(Options {
        without_module: true,
        ..Options::default()
    }));
    assert!(!expected.contains(&"rl".to_string()), "{expected:?}");
    expected.push("rl".to_string());
    expected.sort();
    assert_eq!(names(&Server::start()), expected);
}

#[test]
fn multi_exec_returns_the_replies_of_queued_calls() {
    let s = Server::start();
    let mut c = s.conn();
    for lim in COMMANDS {
        let _: () = cmd("MULTI").query(&mut c).unwrap();
        for extra in [vec![], lim.cost("2"), lim.cost("0")] {
            let line = lim.line(b"k", &lim.valid_params(), &extra);
            assert_eq!(text(&run(&mut c, &line).unwrap()), "QUEUED");
        }
        let replies: Vec<Vec<i64>> = cmd("EXEC").query(&mut c).unwrap();
        let head: Vec<(i64, i64, i64)> = replies
            .iter()
            .map(|r| lim.reply_of(r))
            .map(|r| (r.allowed, r.limit, r.remaining))
            .collect();
        assert_eq!(head, [(1, 5, 4), (1, 5, 2), (1, 5, 2)], "{}", lim.name);
        assert_eq!(lim.invoke(&mut c, b"k", &lim.cost("0")).remaining, 2);
        let _: i64 = cmd("DEL").arg("k").query(&mut c).unwrap();
    }
}

#[test]
fn lua_scripts_can_call_the_commands() {
    if module_only("a script can call a module command, not FCALL") {
        return;
    }
    let s = Server::start();
    let mut c = s.conn();
    let v: Vec<i64> = cmd("EVAL")
        .arg("return redis.call('RL.FIXED', KEYS[1], '5', '60')")
        .arg(1)
        .arg("k")
        .query(&mut c)
        .unwrap();
    assert_eq!(&v[..4], [1, 5, 4, 0]);
    for lim in COMMANDS {
        let script = "return redis.call(ARGV[1], KEYS[1], unpack(ARGV, 2))";
        for remaining in [4, 3] {
            let mut eval = cmd("EVAL");
            eval.arg(script).arg(1).arg("s").arg(lim.name);
            eval.arg(lim.valid_params());
            let v: Vec<i64> = eval.query(&mut c).unwrap();
            let r = lim.reply_of(&v);
            assert_eq!(
                [r.allowed, r.limit, r.remaining, r.retry_after],
                [1, 5, remaining, 0],
                "{}",
                lim.name
            );
        }
        let _: i64 = cmd("DEL").arg("s").query(&mut c).unwrap();
    }
}

#[test]
fn watch_survives_calls_that_write_nothing_but_not_allowed_calls() {
    let s = Server::start();
    let mut c = s.conn();
    for lim in COMMANDS {
        let _: () = cmd("FLUSHALL").query(&mut c).unwrap();
        lim.fill_to_rejection(&mut c, b"k");
        lim.invoke(&mut c, b"live", &[]);
        let untouched = [
            ("rejected", lim.cost("2")),
            ("COST 0", lim.cost("0")),
            ("COST above limit", lim.cost("6")),
        ];
        for (what, extra) in untouched {
            let survived = exec_survives(&s, b"k", |a| {
                let r = lim.invoke(a, b"k", &extra);
                let allowed = what == "COST 0" && lim.peeks();
                assert_eq!(r.allowed, i64::from(allowed), "{what}: {r:?}");
            });
            assert!(survived, "{}: a {what} call aborted the WATCH", lim.name);
        }
        let survived = exec_survives(&s, b"k", |a| {
            error_of_line(a, &lim.line(b"k", &lim.valid_params(), &lim.cost("x")));
        });
        assert!(survived, "{}: an error aborted the WATCH", lim.name);
        let survived = exec_survives(&s, b"absent", |a| {
            lim.invoke(a, b"absent", &lim.cost("0"));
        });
        assert!(survived, "{}: COST 0 on an absent key", lim.name);

        let survived = exec_survives(&s, b"live", |a| {
            assert_eq!(lim.invoke(a, b"live", &[]).allowed, 1);
        });
        assert!(
            !survived,
            "{}: an allowed call must abort the WATCH",
            lim.name
        );
        let survived = exec_survives(&s, b"new", |a| {
            assert_eq!(lim.invoke(a, b"new", &[]).allowed, 1);
        });
        assert!(
            !survived,
            "{}: creating the key must abort the WATCH",
            lim.name
        );
    }
}

/// The keys of the next invalidation message.
fn next_invalidation(ps: &mut redis::PubSub<'_>) -> Vec<Vec<u8>> {
    let msg = ps
        .get_message()
        .expect("an invalidation before the deadline");
    assert_eq!(msg.get_channel_name(), "__redis__:invalidate");
    msg.get_payload().expect("a list of keys")
}

#[test]
fn tracking_clients_are_invalidated_by_allowed_calls_only() {
    let s = Server::start();
    let mut tracker = s.conn();
    let mut actor = s.conn();
    let mut subscriber = s.conn();
    let id: i64 = cmd("CLIENT").arg("ID").query(&mut subscriber).unwrap();
    let mut ps = subscriber.as_pubsub();
    ps.subscribe("__redis__:invalidate").unwrap();
    ps.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
    let _: () = cmd("CLIENT")
        .arg("TRACKING")
        .arg("on")
        .arg("REDIRECT")
        .arg(id)
        .query(&mut tracker)
        .unwrap();

    for lim in COMMANDS {
        // Keys of their own for each command, so no round hears of another.
        let key = format!("{}:k", lim.name).into_bytes();
        let live = format!("{}:live", lim.name).into_bytes();
        let sentinel = format!("{}:sentinel", lim.name).into_bytes();
        lim.fill_to_rejection(&mut actor, &key);
        lim.invoke(&mut actor, &live, &[]);
        let _: () = cmd("SET").arg(&sentinel).arg(1).query(&mut actor).unwrap();
        run(&mut tracker, &with_key(lim.read, &key)).unwrap();
        run(&mut tracker, &with_key(lim.read, &live)).unwrap();
        let _: String = cmd("GET").arg(&sentinel).query(&mut tracker).unwrap();

        // Calls that write nothing: no invalidation for the key. The sentinel's
        // write is the next thing the subscriber hears of.
        assert_eq!(lim.invoke(&mut actor, &key, &lim.cost("2")).allowed, 0);
        assert_eq!(
            lim.invoke(&mut actor, &key, &lim.cost("0")).allowed,
            i64::from(lim.peeks())
        );
        assert_eq!(lim.invoke(&mut actor, &key, &lim.cost("6")).allowed, 0);
        error_of_line(
            &mut actor,
            &lim.line(&key, &lim.valid_params(), &lim.cost("x")),
        );
        let _: () = cmd("SET").arg(&sentinel).arg(2).query(&mut actor).unwrap();
        assert_eq!(
            next_invalidation(&mut ps),
            [sentinel],
            "{}: a call that wrote nothing invalidated the key",
            lim.name
        );

        assert_eq!(lim.invoke(&mut actor, &live, &[]).allowed, 1);
        assert_eq!(
            next_invalidation(&mut ps),
            [live],
            "{}: an allowed call must invalidate the key",
            lim.name
        );
    }
}

#[test]
fn only_allowed_calls_count_as_changes_for_rdb() {
    let s = Server::start();
    let mut c = s.conn();
    for lim in COMMANDS {
        let _: () = cmd("FLUSHALL").query(&mut c).unwrap();
        let before = dirty(&mut c);
        lim.fill_to_rejection(&mut c, b"k");
        let after_allowed = dirty(&mut c);
        assert!(after_allowed > before, "{}: allowed call", lim.name);
        for extra in [lim.cost("2"), lim.cost("0"), lim.cost("6")] {
            lim.invoke(&mut c, b"k", &extra);
            assert_eq!(dirty(&mut c), after_allowed, "{} {extra:?}", lim.name);
        }
        lim.invoke(&mut c, b"absent", &lim.cost("0"));
        assert_eq!(dirty(&mut c), after_allowed, "{} COST 0 absent", lim.name);
        assert_eq!(lim.invoke(&mut c, b"new", &[]).allowed, 1);
        assert!(dirty(&mut c) > after_allowed, "{}: allowed call", lim.name);
        // A rejected call on an absent key: a tenant that joins writes (a change),
        // any other call nothing.
        let before = dirty(&mut c);
        assert_eq!(lim.invoke(&mut c, b"first", &lim.cost("6")).allowed, 0);
        assert_eq!(
            dirty(&mut c) > before,
            lim.joins || lim.blocks,
            "{}: a rejected first call",
            lim.name
        );
    }
}

/// An RL.FIXED call on the panic key: an error on a testing build, a reply otherwise.
fn lim_probe(c: &mut Connection) -> redis::RedisResult<Value> {
    run(
        c,
        &FIXED.line(b"__rl_panic__", &FIXED.valid_params(), &["COST", "0"]),
    )
}

#[test]
fn a_panic_inside_a_command_is_an_error_reply_and_the_server_lives_on() {
    if module_only("panic injection is a testing build of the module") {
        return;
    }
    // A build with the `testing` feature, where the key `__rl_panic__` makes the
    // command panic after parsing (the shipped module has no such hook).
    let mut s = Server::with(Options {
        module: Some(testing_module_path()),
        ..Options::default()
    });
    let mut c = s.conn();
    let probe = lim_probe(&mut c);
    assert!(
        probe.is_err(),
        "{} is not a build with --features testing: set RL_TESTING_MODULE (make test does)",
        testing_module_path().display()
    );
    for lim in COMMANDS {
        for _ in 0..3 {
            let e = error_of_line(&mut c, &lim.line(b"__rl_panic__", &lim.valid_params(), &[]));
            assert!(
                e.starts_with("ERR ") && e.contains("internal error"),
                "{}: {e}",
                lim.name
            );
        }
        assert!(!exists(&mut c, b"__rl_panic__"));
        let pong: String = cmd("PING").query(&mut c).unwrap();
        assert_eq!(pong, "PONG");
        let r = lim.invoke(&mut c, b"after", &[]);
        assert_eq!((r.allowed, r.remaining), (1, 4), "{}", lim.name);
        let _: i64 = cmd("DEL").arg("after").query(&mut c).unwrap();
    }
    assert!(s.alive(), "redis-server died:\n{}", s.log());
}

#[test]
fn a_read_only_replica_refuses_the_commands() {
    let primary = Server::start();
    let replica = primary.replica(true);
    let mut c = replica.conn();
    for lim in COMMANDS {
        for extra in [vec![], lim.cost("0")] {
            let e = error_of_line(&mut c, &lim.line(b"k", &lim.valid_params(), &extra));
            assert!(e.starts_with("READONLY "), "{}: {e}", lim.name);
        }
        assert!(!exists(&mut c, b"k"));
    }
}

#[test]
fn commands_are_refused_when_out_of_memory() {
    let s = Server::start();
    let mut c = s.conn();
    config_set(&mut c, "maxmemory", 1);
    for lim in COMMANDS {
        let e = error_of_line(&mut c, &lim.line(b"k", &lim.valid_params(), &[]));
        assert!(e.starts_with("OOM "), "{}: {e}", lim.name);
        assert!(!exists(&mut c, b"k"));
    }
}
