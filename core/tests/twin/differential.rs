//! The Functions library (functions/rl.lua, run in-process by Lua 5.1) against the
//! Rust core (the in-memory executor: the module's parsers, algorithms and state
//! formats), call by call: random sequences of calls on a few keys — every command
//! and option (COST, REFUND, DEBIT, DELAY), policies that change on live keys, clock steps
//! both ways, foreign and wrong-type states — must get equal replies (or error
//! lines) and leave equal keys: bytes, scores and expiries.
//!
//! `RL_DIFF_CASES` sets how many sequences run (100,000 by default, which `make
//! test` runs; `make fuzz` runs more); proptest shrinks a failing one to a short
//! sequence and saves its seed under proptest-regressions/.

use crate::twin::{library_runs, LuaTwin};
use crate::vectors_file as vectors;
use proptest::prelude::*;
use proptest::test_runner::{Config, TestRunner};
use rl_core::commands;
use rl_core::keyspace::Keyspace;
use rl_core::memory;
use rl_core::options::Opt;
use rl_core::table::{self, ArgKind, Command, Keys};

/// Keys the calls share, so limiters meet each other's states.
const KEYS: &[&str] = &["{k}a", "{k}b", "{k}c"];

/// One step: move the clock by `dt` ms (back when negative), then run `argv`.
#[derive(Clone, Debug)]
struct Step {
    dt: i64,
    argv: Vec<String>,
}

fn key() -> impl Strategy<Value = String> {
    prop::sample::select(KEYS).prop_map(str::to_string)
}

/// A count: small ones most, then the edges.
fn count() -> impl Strategy<Value = String> {
    prop_oneof![
        6 => (1u64..=6).prop_map(|n| n.to_string()),
        1 => Just("100000".to_string()),
        1 => Just("9007199254740991".to_string()),
        1 => prop::sample::select(vec!["0", "-1", "x", "07", "9007199254740992"]).prop_map(str::to_string),
    ]
}

/// A duration in one of its forms.
fn duration() -> impl Strategy<Value = String> {
    prop_oneof![
        4 => prop::sample::select(vec!["1s", "2s", "100ms", "1500ms", "1m", "1"]).prop_map(str::to_string),
        1 => prop::sample::select(vec!["3650d", "1ms", "10h", "7D"]).prop_map(str::to_string),
        1 => prop::sample::select(vec!["0", "0ms", "1w", "-1s", "3651d", ""]).prop_map(str::to_string),
    ]
}

/// A cost or refund amount.
fn amount() -> impl Strategy<Value = String> {
    prop_oneof![
        6 => (0u64..=7).prop_map(|n| n.to_string()),
        1 => Just("9007199254740991".to_string()),
        1 => prop::sample::select(vec!["-1", "1.5", "9007199254740992"]).prop_map(str::to_string),
    ]
}

/// The options after a command's parameters.
fn options(delay: bool) -> impl Strategy<Value = Vec<String>> {
    let base = prop_oneof![
        4 => Just(vec![]),
        4 => amount().prop_map(|n| vec!["COST".to_string(), n]),
        2 => amount().prop_map(|n| vec!["REFUND".to_string(), n]),
        2 => amount().prop_map(|n| vec!["DEBIT".to_string(), n]),
        1 => (amount(), amount()).prop_map(|(a, b)| vec!["DEBIT".into(), a, "COST".into(), b]),
        1 => (amount(), amount()).prop_map(|(a, b)| vec!["COST".into(), a, "REFUND".into(), b]),
        1 => Just(vec!["COST".to_string()]),
        1 => Just(vec!["BOGUS".to_string(), "1".to_string()]),
    ];
    (
        base,
        prop::bool::weighted(if delay { 0.4 } else { 0.05 }),
        duration(),
        shadow(),
    )
        .prop_map(|(mut o, with_delay, d, shadow)| {
            if with_delay {
                o.extend(["DELAY".to_string(), d]);
            }
            // SHADOW first, last or twice (an error), in any case.
            if let Some((first, words)) = shadow {
                let words = words.split(' ').map(str::to_string);
                let at = if first { 0 } else { o.len() };
                o.splice(at..at, words);
            }
            o
        })
}

/// Now and then a SHADOW, where it goes (first or last), and its spelling
/// (`SHADOW SHADOW` now and then: given twice).
fn shadow() -> impl Strategy<Value = Option<(bool, String)>> {
    prop::option::weighted(
        0.3,
        (
            any::<bool>(),
            prop::sample::select(vec!["SHADOW", "shadow", "Shadow", "SHADOW SHADOW"]),
        ),
    )
    .prop_map(|s| s.map(|(first, w)| (first, w.to_string())))
}

/// A value for one positional argument, by its kind in the command table.
fn arg(kind: ArgKind) -> BoxedStrategy<String> {
    match kind {
        ArgKind::Integer { .. } => count().boxed(),
        ArgKind::Duration => duration().boxed(),
        ArgKind::Text { .. } => prop::sample::select(vec!["a", "b", "c", ""])
            .prop_map(str::to_string)
            .boxed(),
        ArgKind::Word { words } => {
            let mut choices: Vec<&str> = words.to_vec();
            choices.extend(["MONTH", "hour"]);
            prop::sample::select(choices)
                .prop_map(str::to_string)
                .boxed()
        }
        ArgKind::Key | ArgKind::Keys | ArgKind::Policies => key().boxed(),
    }
}

/// RL.QUOTA's calendar options (some of them, and now and then a bad value): zones
/// with DST changes, anchors that clamp, start times in a gap.
fn calendar() -> impl Strategy<Value = Vec<String>> {
    let pair = |word: &'static str, values: Vec<&'static str>| {
        prop::option::weighted(0.4, prop::sample::select(values))
            .prop_map(move |v| v.map(|v| [word.to_string(), v.to_string()]))
    };
    (
        pair("EVERY", vec!["1", "2", "3", "12", "0"]),
        pair("ON", vec!["1", "29", "31", "sun", "02-29", "12-31", "32"]),
        pair("AT", vec!["00:00", "02:30", "01:30", "23:59", "24:00"]),
        pair(
            "TZ",
            vec![
                "UTC",
                "America/New_York",
                "australia/lord_howe",
                "+05:30",
                "Mars/Base",
            ],
        ),
    )
        .prop_map(|(a, b, c, d)| [a, b, c, d].into_iter().flatten().flatten().collect())
}

/// A command's parameters after its key, each by its kind.
fn params(command: &'static Command) -> Vec<BoxedStrategy<String>> {
    command.params().iter().map(|a| arg(a.kind)).collect()
}

/// An RL.ALL policy: every policy the table offers (that the library runs), with
/// its parameters (and, for GCRA, maybe its DELAY).
fn policy() -> impl Strategy<Value = Vec<String>> {
    let words: Vec<_> = commands::policies()
        .filter(|c| library_runs(c))
        .map(|c| {
            (
                params(c),
                prop::bool::weighted(if c.delay() { 0.3 } else { 0.0 }),
                duration(),
                calendar(),
                shadow(),
            )
                .prop_map(move |(p, delay, d, cal, shadow)| {
                    // A SHADOW before the policy (twice now and then: an error).
                    let mut v: Vec<String> = shadow
                        .map(|(_, w)| w.split(' ').map(str::to_string).collect())
                        .unwrap_or_default();
                    v.push(c.policy_word().to_string());
                    v.extend(p);
                    if c.takes_option(Opt::Every) {
                        v.extend(cal);
                    }
                    if delay {
                        v.extend(["DELAY".to_string(), d]);
                    }
                    v
                })
                .boxed()
        })
        .collect();
    prop::strategy::Union::new(words)
}

/// The options a single-key command's line ends with, as its row takes them (and
/// now and then one it does not take, for the error).
fn options_of(command: &'static Command) -> BoxedStrategy<Vec<String>> {
    if command.quantity.is_some() {
        return prop::option::weighted(0.5, amount())
            .prop_map(|q| q.into_iter().collect())
            .boxed();
    }
    if !command.options.is_empty() {
        return options(command.delay()).boxed();
    }
    prop_oneof![
        9 => Just(vec![]),
        1 => amount().prop_map(|n| vec!["COST".to_string(), n]),
    ]
    .boxed()
}

/// One RL command line (or a native write that plants a foreign state): every
/// command of the table, its arguments drawn by their kinds.
fn command() -> impl Strategy<Value = Vec<String>> {
    let mut lines: Vec<(u32, BoxedStrategy<Vec<String>>)> = commands::COMMANDS
        .iter()
        .copied()
        .filter(|c| matches!(c.keys, Keys::First))
        .map(|c| {
            let line =
                (key(), params(c), options_of(c), calendar()).prop_map(move |(k, p, o, cal)| {
                    let mut v = vec![c.name_str().to_string(), k];
                    v.extend(p);
                    if c.takes_option(Opt::Every) {
                        v.extend(cal);
                    }
                    v.extend(o);
                    v
                });
            (3, line.boxed())
        })
        .collect();
    let all = (prop::collection::vec(policy(), 1..=3), options(false)).prop_map(|(policies, o)| {
        let mut v = vec!["RL.ALL".to_string(), policies.len().to_string()];
        v.extend(KEYS[..policies.len()].iter().map(|k| k.to_string()));
        v.extend(policies.into_iter().flatten());
        v.extend(o);
        v
    });
    lines.push((3, all.boxed()));
    let foreign = (key(), foreign()).prop_map(|(k, mut f)| {
        f.insert(1, k);
        f
    });
    lines.push((1, foreign.boxed()));
    prop::strategy::Union::new_weighted(lines)
}

/// A native write: a value RL did not write, or a key of another type.
fn foreign() -> impl Strategy<Value = Vec<String>> {
    prop::sample::select(vec![
        vec!["SET", "x"],
        vec!["SET", "12"],
        vec!["SET", "1800000000000000000"],
        vec!["SET", "1800000000000 3 8"],
        vec!["SET", "-3"],
        vec!["SET", "2 1800000060000 1 1800000030000"],
        vec!["HSET", "tokens", "2.5", "ts", "1800000000000"],
        vec!["HSET", "tokens", "x", "ts", "1"],
        vec!["HSET", "tokens", "-3.5", "ts", "1800000000000"],
        vec!["HSET", "tokens", "-9007199254740992", "ts", "1800000000000"],
        vec!["ZADD", "1800000000000", "0"],
        vec!["ZADD", "1.5", "a"],
        vec!["ZADD", "1800000005000", "a", "1800000009000", "b"],
        vec!["DEL"],
    ])
    .prop_map(|v| v.into_iter().map(str::to_string).collect())
}

fn steps() -> impl Strategy<Value = Vec<Step>> {
    let dt = prop_oneof![
        6 => Just(0i64),
        6 => 1i64..=1500,
        2 => 1500i64..=120_000,
        1 => -2000i64..0,
    ];
    prop::collection::vec(
        (dt, command()).prop_map(|(dt, argv)| Step { dt, argv }),
        1..12,
    )
}

/// An FCALL: the function, its keys, its arguments.
type Fcall = (&'static str, Vec<Vec<u8>>, Vec<Vec<u8>>);

/// The library's call for an RL command line: the function, its keys, its args;
/// None for a native command and one the library does not run (CL.THROTTLE; a
/// function not ported yet), which the core runs on the library's keys too.
fn fcall_of(argv: &[String]) -> Option<Fcall> {
    let command = commands::find(argv[0].as_bytes()).filter(|c| library_runs(c))?;
    let function = command.function?;
    let bytes = |s: &[String]| s.iter().map(|a| a.as_bytes().to_vec()).collect::<Vec<_>>();
    if command.name == table::ALL.name {
        let n: usize = argv.get(1)?.parse().ok()?;
        let keys = argv.get(2..2 + n)?;
        let mut args = vec![];
        args.extend(bytes(&argv[2 + n..]));
        return Some((function, bytes(keys), args));
    }
    Some((function, bytes(&argv[1..2]), bytes(&argv[2..])))
}

/// Runs a sequence on both, comparing after every step.
fn compare(lua: &mut LuaTwin, steps: &[Step]) -> Result<(), TestCaseError> {
    let mut now = vectors::epoch_ms() + 123;
    let (mut rust_ks, mut lua_ks) = (Keyspace::new(), Keyspace::new());
    for (i, step) in steps.iter().enumerate() {
        now += step.dt;
        let argv: Vec<&[u8]> = step.argv.iter().map(|a| a.as_bytes()).collect();
        let rust = memory::call(&mut rust_ks, now, &argv);
        let lua_reply = match fcall_of(&step.argv) {
            Some((function, keys, args)) => {
                let keys: Vec<&[u8]> = keys.iter().map(Vec::as_slice).collect();
                let args: Vec<&[u8]> = args.iter().map(Vec::as_slice).collect();
                lua.fcall(&mut lua_ks, now, function, &keys, &args)
            }
            None => memory::call(&mut lua_ks, now, &argv),
        };
        // Arity errors name the command (the module) or the function (the library).
        let same = match (&rust, &lua_reply) {
            (Err(a), Err(b)) if a.contains("wrong number of arguments") => {
                b.contains("wrong number of arguments")
            }
            (a, b) => a == b,
        };
        prop_assert!(
            same,
            "step {} {:?} at +{}: core {:?}, library {:?}",
            i + 1,
            step.argv,
            now - vectors::epoch_ms(),
            rust,
            lua_reply
        );
        prop_assert_eq!(
            rust_ks.snapshot(now),
            lua_ks.snapshot(now),
            "keys after step {} {:?}",
            i + 1,
            step.argv
        );
    }
    Ok(())
}

#[test]
fn the_library_matches_the_core_call_for_call() {
    // The strategies nest deeply and debug builds keep big frames: more stack than
    // a test thread's default.
    std::thread::Builder::new()
        .stack_size(256 << 20)
        .spawn(run)
        .expect("a thread")
        .join()
        .unwrap_or_else(|e| std::panic::resume_unwind(e));
}

fn run() {
    run_sequences(steps(), 1);
}

/// Runs `RL_DIFF_CASES / share` sequences (100,000 / share by default).
fn run_sequences(steps: impl Strategy<Value = Vec<Step>>, share: u32) {
    let all: u32 = std::env::var("RL_DIFF_CASES")
        .ok()
        .and_then(|n| n.parse().ok())
        .unwrap_or(100_000);
    let cases = (all / share).max(1);
    let lua = std::cell::RefCell::new(LuaTwin::rl());
    let mut runner = TestRunner::new(Config {
        cases,
        failure_persistence: Some(Box::new(
            proptest::test_runner::FileFailurePersistence::WithSource("regressions"),
        )),
        ..Config::default()
    });
    let result = runner.run(&steps, |steps| compare(&mut lua.borrow_mut(), &steps));
    if let Err(e) = result {
        panic!("{e}");
    }
}

// -- RL.SHARE budgets -----------------------------------------------------------
//
// Drawn among every command above, an RL.SHARE call seldom meets another tenant on
// the same budget, so borrowing, forgetting and the sweep would go untested: here
// whole sequences on one or two budgets, a rate kept for most of a sequence, up to
// seven tenants of varied weights, RL.ALL with SHARE policies, and hand-made hashes
// (corrupt fields, a budget at its most tenants, a crowded index, counts at 2^53).

/// A budget's `capacity tokens period`: mostly valid, now and then not.
fn share_rate() -> impl Strategy<Value = [String; 3]> {
    (
        prop::sample::select(vec!["1", "2", "4", "10", "100", "9007199254740991", "0"]),
        prop::sample::select(vec!["1", "2", "4", "10", "1000", "1000000", "1000001"]),
        prop::sample::select(vec![
            "1ms", "80ms", "1s", "1200ms", "10s", "1m", "3650d", "0",
        ]),
    )
        .prop_map(|(c, t, p)| [c.to_string(), t.to_string(), p.to_string()])
}

/// A tenant and its weight.
fn share_tenant() -> impl Strategy<Value = [String; 2]> {
    let long = "t".repeat(256);
    (
        prop_oneof![
            20 => prop::sample::select(vec!["a", "b", "c", "d", "e", "f", "x y"]).prop_map(str::to_string),
            1 => prop::sample::select(vec![String::new(), long.clone(), long + "t"]),
        ],
        prop_oneof![
            20 => prop::sample::select(vec!["1", "1", "2", "3", "7", "10000"]),
            1 => prop::sample::select(vec!["0", "10001", "01", "x"]),
        ],
    )
        .prop_map(|(t, w)| [t, w.to_string()])
}

/// A budget whose index holds 20,001 entries, one more than twice the most
/// tenants: the first forgotten tenant's debt (a's) is swept, and the last entry
/// (d, also forgotten in debt) moves into its place, where it is kept. c is
/// remembered, in the current slot.
const CROWDED: &[&str] = &[
    "HSET",
    "g",
    "0 0 1 1 20001 0 0 1800100000000 1 1 0 0",
    "i:0",
    "a",
    "t:a",
    "3600000000000000000 1 5 0",
    "i:20000",
    "d",
    "t:d",
    "3600000000000000000 1 9 20000",
    "i:19999",
    "c",
    "t:c",
    "0 1 0 19999",
];

/// A hash RL.SHARE did not write, or wrote and was then edited.
fn share_foreign() -> impl Strategy<Value = Vec<String>> {
    const MAX: &str = "9007199254740991";
    const U128: &str = "340282366920938463463374607431768211455";
    let max_g = format!("{U128} {U128} {MAX} {MAX} {MAX} {MAX} {MAX} {MAX} {MAX} {MAX} 0 0");
    let heavy_g = format!("0 0 {MAX} 1 1 0 0 {MAX} {MAX} 1 0 0");
    let heavy_a = format!("0 {MAX} 0 0");
    let lines: Vec<Vec<String>> = vec![
        vec!["HSET", "g", "x"],
        vec!["HSET", "g", "0 0 0 0 0 0 0 0 0 0 0 9007199254740992"],
        vec!["HSET", "t:a", "5"],
        vec!["HSET", "t:a", "01 1 0 0"],
        vec!["HSET", "s:0", "1 2"],
        vec!["HDEL", "s:0"],
        vec!["HDEL", "i:0"],
        // At the most tenants the library remembers (10,000), all in a slot that
        // ends long after the sequence.
        vec![
            "HSET",
            "g",
            "0 0 10000 10000 0 0 0 1800100000000 10000 10000 0 0",
        ],
        // An index past twice the most tenants: a forgotten debt is swept too,
        // until the index is back at twice the most.
        CROWDED.to_vec(),
        vec!["HSET", "g", &max_g],
        vec!["HSET", "g", &heavy_g, "i:0", "a", "t:a", &heavy_a],
    ]
    .into_iter()
    .map(|l| l.into_iter().map(str::to_string).collect())
    .collect();
    prop::sample::select(lines)
}

/// The options after a call: none, COST, REFUND or DEBIT.
fn share_amount() -> impl Strategy<Value = Vec<String>> {
    let n = prop_oneof![
        10 => (0u64..=6).prop_map(|n| n.to_string()),
        1 => prop::sample::select(vec!["100", "9007199254740991"]).prop_map(str::to_string),
    ];
    (
        prop::sample::select(vec!["", "", "COST", "REFUND", "DEBIT"]),
        n,
    )
        .prop_map(|(o, n)| {
            if o.is_empty() {
                vec![]
            } else {
                vec![o.to_string(), n]
            }
        })
}

fn share_steps() -> impl Strategy<Value = Vec<Step>> {
    let dt = prop_oneof![
        6 => Just(0i64),
        6 => 1i64..=200,
        3 => 200i64..=3000,
        1 => 3000i64..=120_000,
        1 => -2000i64..0,
    ];
    // One line: (the call's tenant, its own rate or the sequence's, which key, the
    // amount, RL.ALL with a second key, a foreign write instead).
    let line = (
        share_tenant(),
        prop::option::weighted(0.1, share_rate()),
        prop::bool::weighted(0.8),
        share_amount(),
        prop::option::weighted(0.1, (share_tenant(), share_rate(), prop::bool::ANY)),
        prop::option::weighted(0.03, share_foreign()),
    );
    (share_rate(), prop::collection::vec((dt, line), 1..40)).prop_map(|(rate, lines)| {
        lines
            .into_iter()
            .map(|(dt, (tenant, own_rate, first, amount, all, foreign))| {
                let key = KEYS[usize::from(!first)].to_string();
                let mut policy = vec!["SHARE".to_string()];
                policy.extend(tenant);
                policy.extend(own_rate.unwrap_or_else(|| rate.clone()));
                let argv = match (foreign, all) {
                    (Some(mut f), _) => {
                        f.insert(1, key);
                        f
                    }
                    (None, Some((other, other_rate, gcra))) => {
                        // RL.ALL on both budgets: this SHARE policy and another
                        // (a SHARE, or a GCRA on the second key).
                        let mut v =
                            vec!["RL.ALL".into(), "2".into(), KEYS[0].into(), KEYS[1].into()];
                        v.extend(policy);
                        if gcra {
                            v.push("GCRA".into());
                            v.extend(other_rate);
                        } else {
                            v.push("SHARE".into());
                            v.extend(other);
                            v.extend(rate.clone());
                        }
                        v.extend(amount);
                        v
                    }
                    (None, None) => {
                        let mut v = vec!["RL.SHARE".to_string(), key];
                        v.extend(policy.into_iter().skip(1));
                        v.extend(amount);
                        v
                    }
                };
                Step { dt, argv }
            })
            .collect()
    })
}

#[test]
fn rl_share_sequences_match_the_core() {
    std::thread::Builder::new()
        .stack_size(256 << 20)
        // A fifth of the cases: each sequence is a crowded budget, several times the
        // work of one above (`make fuzz` runs five times as many).
        .spawn(|| run_sequences(share_steps(), 5))
        .expect("a thread")
        .join()
        .unwrap_or_else(|e| std::panic::resume_unwind(e));
}

/// Budgets at the edges, each call checked: tenants whose weights sum past 2^53
/// (T_i · n past 2^128), counts stored at 2^53 − 1, the crowded index's bound.
#[test]
fn rl_share_edges_match_the_core() {
    const MAX: &str = "9007199254740991";
    const U128: &str = "340282366920938463463374607431768211455";
    let heavy_g = format!("0 0 {MAX} 1 1 0 0 {MAX} {MAX} 1 0 0");
    let heavy_a = format!("0 {MAX} 0 0");
    let max_g = format!("{U128} {U128} {MAX} {MAX} {MAX} {MAX} {MAX} {MAX} {MAX} {MAX} 0 0");
    let line = |words: &[&str]| Step {
        dt: 0,
        argv: words.iter().map(|w| w.to_string()).collect(),
    };
    let huge = ["RL.SHARE", "{k}a", "b", "1", MAX, "1", "3650d"];
    let with = |extra: &[&'static str]| {
        let mut v = huge.to_vec();
        v.extend_from_slice(extra);
        line(&v)
    };
    let sequences = vec![
        vec![
            line(&["HSET", "{k}a", "g", &heavy_g, "i:0", "a", "t:a", &heavy_a]),
            with(&["COST", MAX]),
            with(&["COST", "0"]),
            with(&["REFUND", "1"]),
            with(&["REFUND", MAX]),
            with(&["DEBIT", MAX]),
            with(&["DEBIT", MAX]),
            with(&[]),
        ],
        vec![
            line(&["HSET", "{k}a", "g", &max_g]),
            with(&["COST", "0"]),
            with(&["COST", "1"]),
            with(&["DEBIT", "1"]),
            with(&["REFUND", "1"]),
            with(&["REFUND", MAX]),
        ],
        vec![
            line(&[&["HSET", "{k}a"][..], &CROWDED[1..]].concat()),
            line(&["RL.SHARE", "{k}a", "c", "1", "10", "1", "1s"]),
            line(&["RL.SHARE", "{k}a", "c", "1", "10", "1", "1s"]),
            line(&["HGETALL", "{k}a"]),
        ],
    ];
    // A write in each of nine slots of 10 ms in a row keeps eight closed slots;
    // a longer period then keeps them all, and the current slot grows instead.
    let tenants = ["a", "b", "c", "d", "e", "f", "g", "h", "i", "j", "k"];
    let mut ring: Vec<Step> = tenants
        .iter()
        .map(|t| Step {
            dt: 10,
            argv: ["RL.SHARE", "{k}a", t, "1", "1000", "1000", "80ms"]
                .iter()
                .map(|w| w.to_string())
                .collect(),
        })
        .collect();
    ring.push(line(&[
        "RL.SHARE", "{k}a", "late", "1", "1000", "1000", "10s",
    ]));
    ring.push(line(&[
        "RL.SHARE", "{k}a", "a", "1", "1000", "1000", "80ms",
    ]));
    let mut sequences = sequences;
    sequences.push(ring);
    let mut lua = LuaTwin::rl();
    for steps in sequences {
        compare(&mut lua, &steps).unwrap_or_else(|e| panic!("{e}"));
    }
}
