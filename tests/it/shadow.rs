//! SHADOW (docs/commands.md#shadow), on a real server, with the module and with the
//! library: try a limit without enforcing it.
//!
//! Contract: on a single command SHADOW changes nothing but the accounting (the
//! reply and the writes are the enforced call's; INFO counts it as shadow). Before
//! an RL.ALL policy it makes the policy advisory: it never vetoes; when the call is
//! allowed, it takes its units only if it would allow on its own, else it is left
//! unwritten; a rejected call writes nothing; a call of SHADOW policies only is
//! always allowed. Errors change nothing.

use crate::common::*;
use rl_core::options::Opt;

/// The commands of the backend that take SHADOW alone.
fn shadow_commands() -> impl Iterator<Item = &'static Command> {
    COMMANDS
        .iter()
        .copied()
        .filter(|l| l.row().takes_option(Opt::Shadow))
}

/// The commands offered as RL.ALL policies (on this backend).
fn policy_commands() -> impl Iterator<Item = &'static Command> {
    EVERY_ROW
        .iter()
        .copied()
        .filter(|l| l.row().policy.is_some())
        .filter(|l| !is_library() || l.row().function.is_some())
}

/// `WORD params…` of command `l` for a limit of `n` per hour.
fn policy_words(l: &Command, n: u64) -> Vec<String> {
    let mut words = vec![l.row().policy_word().to_string()];
    words.extend(l.per(n, "1h"));
    words
}

fn info_rl(c: &mut Connection) -> std::collections::HashMap<String, i64> {
    let text: String = cmd("INFO").arg("rl").query(c).unwrap();
    text.lines()
        .filter_map(|l| l.split_once(':'))
        .filter_map(|(k, v)| Some((k.to_string(), v.trim().parse().ok()?)))
        .collect()
}

/// How much each of `fields` grew from `before` to `after`.
fn grew(
    before: &std::collections::HashMap<String, i64>,
    after: &std::collections::HashMap<String, i64>,
    fields: &[String],
) -> Vec<i64> {
    fields
        .iter()
        .map(|f| after.get(f).copied().unwrap_or(-1) - before.get(f).copied().unwrap_or(0))
        .collect()
}

/// Runs `calls` in one MULTI between two TIMEs, on `keys` deleted first, until
/// both TIMEs fall in one millisecond (every call then ran at that instant); the
/// replies, and how many tries that took. (A try that spans two ms wrote, and was
/// counted: the next starts afresh.)
fn at_one_ms(c: &mut Connection, keys: &[&str], calls: &[Vec<String>]) -> (Vec<Vec<i64>>, i64) {
    for tries in 1..=200 {
        let mut p = redis::pipe();
        p.atomic().cmd("DEL").arg(keys).ignore().cmd("TIME");
        for call in calls {
            p.add_command(command_of(call));
        }
        p.cmd("TIME");
        let mut v: Vec<Value> = p.query(c).unwrap_or_else(|e| panic!("{calls:?}: {e}"));
        let t1: (i64, i64) = redis::from_redis_value(&v.pop().unwrap()).unwrap();
        let t0: (i64, i64) = redis::from_redis_value(&v.remove(0)).unwrap();
        if ms_of(t0) == ms_of(t1) {
            let replies = v
                .iter()
                .map(|r| redis::from_redis_value(r).unwrap())
                .collect();
            return (replies, tries);
        }
    }
    panic!("{calls:?}: no run within one millisecond in 200 tries");
}

#[test]
fn a_shadow_call_replies_and_writes_as_the_enforced_one() {
    let s = Server::start();
    let mut c = s.conn();
    for l in shadow_commands() {
        let before = info_rl(&mut c);
        let (enforced, shadow) = (format!("e:{}", l.short), format!("s:{}", l.short));
        let params = l.per(2, "1h");
        // Allowed, allowed, rejected, a look, a cost above the limit: each pair at
        // one instant, the second with SHADOW (first or last, any case).
        let mut calls = Vec::new();
        let mut shadows = (0, 0);
        for (i, cost) in [1, 1, 1, 0, 5].into_iter().enumerate() {
            calls.push(l.args(&enforced, &params, Some(cost)));
            let mut line = l.args(&shadow, &params, None);
            let flag = if i % 2 == 0 { "SHADOW" } else { "shadow" };
            if i == 1 {
                line.push(flag.to_string());
                line.extend(l.cost_args(cost));
            } else {
                line.extend(l.cost_args(cost));
                line.push(flag.to_string());
            }
            calls.push(line);
        }
        let (replies, tries) = at_one_ms(&mut c, &[&enforced, &shadow], &calls);
        for pair in replies.chunks(2) {
            assert_eq!(pair[0], pair[1], "{}: {calls:?}", l.name);
            if pair[1][0] == 1 {
                shadows.0 += 1;
            } else {
                shadows.1 += 1;
            }
        }
        // Both verdicts were met (RL.PENALTY blocks at its second strike).
        assert!(shadows.0 >= 1 && shadows.1 >= 2, "{}: {replies:?}", l.name);
        assert_eq!(
            snapshot(&mut c, enforced.as_bytes()),
            snapshot(&mut c, shadow.as_bytes()),
            "{}: the same writes",
            l.name
        );
        if module_only("INFO rl counts") {
            continue;
        }
        let after = info_rl(&mut c);
        let field = |f: &str| format!("rl_{}_{f}", l.short);
        let fields: Vec<String> = ["allowed", "rejected", "shadow_allowed", "shadow_rejected"]
            .iter()
            .map(|f| field(f))
            .collect();
        // The enforced calls in allowed / rejected, the SHADOW ones apart (each try
        // on fresh keys decides alike).
        let (a, r) = (shadows.0 * tries, shadows.1 * tries);
        assert_eq!(grew(&before, &after, &fields), [a, r, a, r], "{}", l.name);
    }
}

#[test]
fn a_shadow_policy_never_vetoes_and_is_written_only_when_it_would_allow() {
    let s = Server::start();
    let mut c = s.conn();
    for l in policy_commands() {
        let sh = format!("{{t}}sh:{}", l.short);
        let full = format!("{{t}}full:{}", l.short);
        let en = format!("{{t}}en:{}", l.short);
        let looked_at = l.row().looked_at;
        // A SHADOW key that would reject: filled by its own command.
        fill(&mut c, l, &full);
        let full_before = snapshot(&mut c, full.as_bytes());
        let mut line = vec![
            "2",
            en.as_str(),
            full.as_str(),
            "FIXED",
            "10",
            "1h",
            "SHADOW",
        ]
        .into_iter()
        .map(str::to_string)
        .collect::<Vec<_>>();
        line.extend(policy_words(l, 1));
        let r = all(&mut c, &line);
        assert_eq!(
            r[0][..3],
            [1, 10, 9],
            "{}: the FIXED policy decides: {r:?}",
            l.name
        );
        assert_eq!(
            r[2][0], 0,
            "{}: its own reply says it would reject: {r:?}",
            l.name
        );
        assert_eq!(
            snapshot(&mut c, full.as_bytes()),
            full_before,
            "{}: left unwritten",
            l.name
        );
        assert_eq!(
            rl(&mut c, &["RL.FIXED", &en, "10", "1h", "COST", "0"]).remaining,
            9
        );

        // A SHADOW key that would allow takes its units when the call is allowed.
        let mut line = strings(&["2", &en, &sh, "FIXED", "10", "1h", "shadow"]);
        line.extend(policy_words(l, 5));
        let r = all(&mut c, &line);
        assert_eq!(r[0][..3], [1, 10, 8], "{}: {r:?}", l.name);
        assert_eq!(r[2][0], 1, "{}: {r:?}", l.name);
        assert_eq!(
            exists(&mut c, &sh),
            !looked_at,
            "{}: written as its own command writes (a looked-at policy never is)",
            l.name
        );
        let sh_before = snapshot(&mut c, sh.as_bytes());

        // A rejected call writes nothing, the SHADOW key included.
        let blocked = format!("{{t}}blocked:{}", l.short);
        rl(&mut c, &["RL.FIXED", &blocked, "1", "1h"]);
        let blocked_before = snapshot(&mut c, blocked.as_bytes());
        let mut line = strings(&["2", &blocked, &sh, "FIXED", "1", "1h", "SHADOW"]);
        line.extend(policy_words(l, 5));
        let r = all(&mut c, &line);
        assert_eq!(r[0][0], 0, "{}: the FIXED policy rejects: {r:?}", l.name);
        assert_eq!(
            r[0][1], 1,
            "{}: the combined limit is the enforced one's",
            l.name
        );
        assert_eq!(snapshot(&mut c, sh.as_bytes()), sh_before, "{}", l.name);
        assert_eq!(snapshot(&mut c, blocked.as_bytes()), blocked_before);

        // SHADOW policies only: always allowed, described by them.
        let mut line = strings(&["1", &full, "SHADOW"]);
        line.extend(policy_words(l, 1));
        let r = all(&mut c, &line);
        assert_eq!(r[0][0], 1, "{}: {r:?}", l.name);
        assert_eq!(r[0][3], 0, "{}: no wait: {r:?}", l.name);
        assert_eq!(
            r[0][1..3],
            r[1][1..3],
            "{}: its limit and remaining: {r:?}",
            l.name
        );
        assert_eq!(r[1][0], 0, "{}: {r:?}", l.name);
        assert_eq!(snapshot(&mut c, full.as_bytes()), full_before, "{}", l.name);
    }
}

/// Fills `key` to its limit of 1 with its own command (RL.ACQUIRE: another
/// lease), so that the policy of [`policy_words`] for 1 rejects.
fn fill(c: &mut Connection, l: &Command, key: &str) {
    if l.row().policy_word() == "ACQUIRE" {
        let reply = rl(c, &["RL.ACQUIRE", key, "1", "1h", "other"]);
        assert_eq!(reply.allowed, 1);
        return;
    }
    for _ in 0..5 {
        if l.call(c, key, &l.per(1, "1h"), Some(1)).allowed == 0 {
            return;
        }
    }
    panic!("{}: {key} never rejects", l.name);
}

/// RL.ALL with these arguments: each array of the reply.
fn all(c: &mut Connection, args: &[String]) -> Vec<Vec<i64>> {
    on_backend(cmd("RL.ALL").arg(args))
        .query(c)
        .unwrap_or_else(|e| panic!("RL.ALL {args:?}: {e}"))
}

#[test]
fn rl_all_counts_each_shadow_policy_under_its_own_command() {
    if module_only("INFO rl counts") {
        return;
    }
    let s = Server::start();
    let mut c = s.conn();
    rl(&mut c, &["RL.GCRA", "{u}g", "1", "1", "1h"]);
    let before = info_rl(&mut c);
    let line = strings(&[
        "2", "{u}f", "{u}g", "FIXED", "10", "1h", "SHADOW", "GCRA", "1", "1", "1h",
    ]);
    assert_eq!(all(&mut c, &line)[0][0], 1);
    let line = strings(&[
        "2", "{u}f", "{u}g", "SHADOW", "FIXED", "10", "1h", "SHADOW", "GCRA", "5", "1", "1h",
    ]);
    assert_eq!(all(&mut c, &line)[0][0], 1);
    let after = info_rl(&mut c);
    let fields = strings(&[
        "rl_all_allowed",
        "rl_gcra_shadow_rejected",
        "rl_gcra_shadow_allowed",
        "rl_fixed_shadow_allowed",
        "rl_fixed_allowed",
        "rl_gcra_rejected",
    ]);
    // An enforced policy's command counts nothing: the call is RL.ALL's.
    assert_eq!(grew(&before, &after, &fields), [2, 1, 1, 1, 0, 0]);
    // A command that takes no SHADOW has no shadow fields.
    assert!(!after.contains_key("rl_throttle_shadow_allowed"));
    assert!(!after.contains_key("rl_all_shadow_allowed"));
}

#[test]
fn shadow_errors_name_the_mistake_and_change_nothing() {
    let s = Server::start();
    let mut c = s.conn();
    let cases: &[(&[&str], &str)] = &[
        (
            &["RL.FIXED", "k", "5", "1h", "SHADOW", "COST", "1", "shadow"],
            "ERR syntax error: SHADOW given more than once",
        ),
        (
            &["RL.GCRA", "k", "5", "1", "1s", "SHADOW", "COST", "-1"],
            "ERR COST must be an integer from 0 to 9007199254740991",
        ),
        (
            &["RL.ACQUIRE", "k", "5", "1h", "id", "SHADOW"],
            "ERR syntax error: SHADOW does not apply to RL.ACQUIRE, which takes no options",
        ),
        (
            &["RL.ALL", "1", "k", "SHADOW", "SHADOW", "FIXED", "5", "1h"],
            "ERR syntax error: SHADOW given more than once",
        ),
        (
            &["RL.ALL", "1", "k", "FIXED", "5", "1h", "SHADOW"],
            "ERR syntax error: SHADOW must come before a policy",
        ),
        (
            &["RL.ALL", "2", "k", "j", "FIXED", "5", "1h", "SHADOW", "COST", "1"],
            "ERR syntax error: SHADOW must come before a policy",
        ),
        (
            &["RL.ALL", "1", "k", "FIXED", "5", "1h", "COST", "1", "SHADOW"],
            "ERR syntax error: SHADOW does not apply to RL.ALL, which takes COST n, REFUND n or DEBIT n",
        ),
        (
            &["RL.ALL", "1", "k", "FIXED", "5", "SHADOW"],
            "ERR syntax error: policy FIXED takes limit window",
        ),
    ];
    for (line, want) in cases {
        let args: Vec<&[u8]> = line.iter().map(|a| a.as_bytes()).collect();
        assert_eq!(error_of(&mut c, &args), *want, "{line:?}");
        for key in ["k", "j"] {
            assert!(!exists(&mut c, key), "{line:?} wrote {key}");
        }
    }
}
