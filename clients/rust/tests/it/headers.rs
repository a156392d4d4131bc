//! clients/headers.json: the HTTP fields every RL client gives for the same calls
//! (fresh calls, fail modes, policy names, RL.ALL one member per policy, SHADOW calls
//! and policies), on both backends. Every field produced is also written to RL_HEADERS_DUMP (one JSON object
//! a line) when it is set, for test.sh to check with a structured-field parser.

use std::io::Write;
use std::time::Duration;

use rl_client::{
    Acquire, All, Bucket, FailMode, Fixed, Gcra, Limiter, Penalty, Policy, Sliding, SlidingCounter,
    Throttle,
};
use serde_json::Value;

use crate::common::{dead_connection, key, shared, targets};

type Fields = Vec<(&'static str, String)>;

fn cases() -> Value {
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../headers.json");
    serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap()
}

fn num(v: &Value) -> u64 {
    v.as_u64().unwrap()
}

fn ms(v: &Value) -> Duration {
    Duration::from_millis(v.as_u64().unwrap())
}

/// The typed policy of a case's call (`["gcra", 5, 1, 1000]`; `["shadow", "gcra", …]`
/// with SHADOW on); None (said on stderr) for a command this test does not know yet,
/// whose case is then left out.
fn policy(p: &[Value]) -> Option<Policy> {
    let shadow = p[0] == "shadow";
    let p = if shadow { &p[1..] } else { p };
    let a = &p[1..];
    // The typed policy, with SHADOW when the case says so.
    macro_rules! on {
        ($p:expr) => {
            if shadow {
                $p.shadow().into()
            } else {
                $p.into()
            }
        };
    }
    Some(match p[0].as_str().unwrap() {
        "gcra" => on!(Gcra::new(num(&a[0]), num(&a[1]), ms(&a[2]))),
        "bucket" => on!(Bucket::new(num(&a[0]), num(&a[1]), ms(&a[2]))),
        "fixed" => on!(Fixed::new(num(&a[0]), ms(&a[1]))),
        "sliding" => on!(Sliding::new(num(&a[0]), ms(&a[1]))),
        "slidingCounter" => on!(SlidingCounter::new(num(&a[0]), ms(&a[1]))),
        "penalty" => on!(Penalty::new(num(&a[0]), ms(&a[1]), ms(&a[2]), ms(&a[3]))),
        "acquire" => on!(Acquire::new(num(&a[0]), ms(&a[1]), a[2].as_str().unwrap())),
        other => {
            eprintln!(
                "note: headers.json's case of {other} left out: this test has no call for it yet"
            );
            return None;
        }
    })
}

/// What a case's call answered: allowed, SHADOW, each RL.ALL member's (allowed,
/// shadow), and the fields.
struct Made {
    allowed: bool,
    shadow: bool,
    members: Vec<(bool, bool)>,
    fields: Fields,
}

impl Made {
    fn of(d: &rl_client::Decision, fields: Fields) -> Made {
        Made {
            allowed: d.allowed,
            shadow: d.shadow,
            members: Vec::new(),
            fields,
        }
    }
}

/// Makes the case's call on key `k`; what it answered, its fields named `name` if
/// given (None: a call this test does not know).
fn make<C>(
    rl: &mut Limiter<C>,
    call: &[Value],
    k: &str,
    name: Option<&str>,
) -> Option<rl_client::Result<Made>>
where
    C: redis::ConnectionLike + rl_client::Deadline,
{
    let named = |d: rl_client::Decision| {
        let fields = match name {
            Some(n) => d.headers_named(n)?,
            None => d.headers(),
        };
        Ok(Made::of(&d, fields))
    };
    Some(match call[0].as_str().unwrap() {
        "all" => {
            let mut all = All::new();
            for (j, p) in call[1..].iter().enumerate() {
                all.push(format!("{{{k}}}:{j}"), policy(p.as_array().unwrap())?);
            }
            rl.all(&all).map(|d| Made {
                members: d.keys.iter().map(|m| (m.allowed, m.shadow)).collect(),
                ..Made::of(&d.combined, d.headers())
            })
        }
        "throttle" => {
            let a = &call[1..];
            let t = Throttle::new(num(&a[0]), num(&a[1]), ms(&a[2]));
            rl.throttle(k, &t).and_then(|t| named(t.decision()))
        }
        _ => match policy(call)? {
            Policy::Gcra(p) => rl.gcra(k, &p),
            Policy::Bucket(p) => rl.bucket(k, &p),
            Policy::Fixed(p) => rl.fixed(k, &p),
            Policy::Sliding(p) => rl.sliding(k, &p),
            Policy::SlidingCounter(p) => rl.sliding_counter(k, &p),
            Policy::Penalty(p) => rl.penalty(k, &p),
            Policy::Acquire(p) => rl.acquire(k, &p),
            Policy::Share(p) => rl.share(k, &p),
            #[allow(unreachable_patterns)] // a policy added to the table
            _ => return None,
        }
        .and_then(named),
    })
}

/// Makes the case's call on a new key; its fields, named `name` if given (None: a
/// call this test does not know).
fn fields<C>(
    rl: &mut Limiter<C>,
    call: &[Value],
    name: Option<&str>,
) -> Option<rl_client::Result<Fields>>
where
    C: redis::ConnectionLike + rl_client::Deadline,
{
    make(rl, call, &key("headers"), name).map(|r| r.map(|m| m.fields))
}

fn field<'a>(f: &'a Fields, name: &str) -> Option<&'a str> {
    f.iter().find(|(n, _)| *n == name).map(|(_, v)| v.as_str())
}

/// Appends every field to RL_HEADERS_DUMP, if set.
fn dump(f: &Fields) {
    let Ok(path) = std::env::var("RL_HEADERS_DUMP") else {
        return;
    };
    let mut out = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(path)
        .unwrap();
    for (n, v) in f {
        writeln!(out, "{}", serde_json::json!({"name": n, "value": v})).unwrap();
    }
}

/// Every field the case expects, as it expects it.
#[track_caller]
fn expect(got: &Fields, want: &Value, what: &str) {
    for (n, v) in want.as_object().unwrap() {
        assert_eq!(field(got, n), v.as_str(), "{n} of {what}: {got:?}");
    }
    if want.get("Retry-After").is_none() {
        assert_eq!(field(got, "Retry-After"), None, "{what}");
    }
    dump(got);
}

/// The fields headers.json speaks of: the IETF pair and Retry-After (the
/// X-RateLimit-* fields, this client's own, follow the same decision).
const CASE_FIELDS: [&str; 3] = ["RateLimit-Policy", "RateLimit", "Retry-After"];

/// Exactly the fields the case expects: `{}` is no field at all; otherwise each of
/// [`CASE_FIELDS`] present exactly when the case lists it, with its value.
#[track_caller]
fn expect_exactly(got: &Fields, want: &Value, what: &str) {
    let want = want.as_object().unwrap();
    if want.is_empty() {
        assert_eq!(got, &Fields::new(), "{what}: no field expected");
    }
    let listed: Vec<(&str, &str)> = CASE_FIELDS
        .iter()
        .filter_map(|n| field(got, n).map(|v| (*n, v)))
        .collect();
    let wanted: Vec<(&str, &str)> = CASE_FIELDS
        .iter()
        .filter_map(|n| want.get(*n).map(|v| (*n, v.as_str().unwrap())))
        .collect();
    assert_eq!(listed, wanted, "{what}: {got:?}");
    dump(got);
}

/// A case's call (made `calls` times, default once, on the same keys) gives exactly
/// its `fields`, and its last decision the case's `allowed`, SHADOW flag and
/// members; false when the call is unknown here.
fn all_fields<C>(rl: &mut Limiter<C>, case: &Value, what: &str) -> bool
where
    C: redis::ConnectionLike + rl_client::Deadline,
{
    let call = case["call"].as_array().unwrap();
    let k = key("headers");
    let mut last = None;
    for _ in 0..case["calls"].as_u64().unwrap_or(1) {
        let Some(made) = make(rl, call, &k, None) else {
            return false;
        };
        last = Some(made.unwrap_or_else(|e| panic!("{call:?} {what}: {e}")));
    }
    let made = last.expect("at least one call");
    let what = format!("{call:?} {what}");
    expect_exactly(&made.fields, &case["fields"], &what);
    assert_eq!(made.shadow, call[0] == "shadow", "shadow of {what}");
    if let Some(allowed) = case["allowed"].as_bool() {
        assert_eq!(made.allowed, allowed, "allowed of {what}");
    }
    if let Some(members) = case["members"].as_array() {
        let want: Vec<(bool, bool)> = members
            .iter()
            .map(|m| (m["allowed"] == true, m["shadow"] == true))
            .collect();
        assert_eq!(made.members, want, "members (allowed, shadow) of {what}");
    } else if call[0] == "all" {
        // A failure case: each member is SHADOW as its policy says.
        let want: Vec<bool> = call[1..].iter().map(|p| p[0] == "shadow").collect();
        let got: Vec<bool> = made.members.iter().map(|m| m.1).collect();
        assert_eq!(got, want, "members' shadow of {what}");
    }
    true
}

#[test]
fn every_case_of_headers_json() {
    let _g = shared();
    let file = cases();
    for t in targets("every_case_of_headers_json") {
        let mut rl = t.limiter();
        let mut checked = 0;
        for case in file["calls"].as_array().unwrap() {
            if case["module_only"] == true && t.backend == rl_client::Backend::Library {
                continue;
            }
            let call = case["call"].as_array().unwrap();
            let Some(got) = fields(&mut rl, call, None) else {
                continue;
            };
            let got = got.unwrap();
            let what = format!("{call:?} on {:?}", t.backend);
            expect(
                &got,
                &serde_json::json!({"RateLimit-Policy": case["policy"]}),
                &what,
            );
            checked += 1;
        }
        for case in file["fresh"].as_array().unwrap() {
            checked += usize::from(all_fields(
                &mut rl,
                case,
                &format!("fresh on {:?}", t.backend),
            ));
        }
        let mut shadow = 0;
        for case in file["shadow"].as_array().unwrap() {
            shadow += usize::from(all_fields(
                &mut rl,
                case,
                &format!("shadow on {:?}", t.backend),
            ));
        }
        assert_eq!(shadow, file["shadow"].as_array().unwrap().len());
        checked += shadow;
        for case in file["names"].as_array().unwrap() {
            let call = case["call"].as_array().unwrap();
            let name = case["name"].as_str().unwrap();
            let Some(result) = fields(&mut rl, call, Some(name)) else {
                continue;
            };
            match result {
                Ok(got) => {
                    assert_ne!(case["error"], true, "{name:?} was not refused");
                    expect(
                        &got,
                        &serde_json::json!({"RateLimit-Policy": case["policy"]}),
                        name,
                    );
                }
                Err(e) => {
                    assert_eq!(case["error"], true, "{name:?}: {e}");
                    assert!(matches!(e, rl_client::Error::InvalidArgument(_)), "{e:?}");
                }
            }
            checked += 1;
        }
        assert!(checked >= 20, "{checked}");
    }
}

#[test]
fn fail_mode_fields() {
    let Some(con) = dead_connection() else {
        return;
    };
    let mut rl = Limiter::with_backend(con, rl_client::Backend::Module);
    let file = cases();
    let failures = file["failures"].as_array().unwrap();
    assert!(failures.iter().any(|c| c["call"][0] == "shadow"));
    for case in failures {
        let mode = match case["mode"].as_str().unwrap() {
            "allow" => FailMode::Open,
            "deny" => FailMode::Closed,
            other => panic!("mode {other}"),
        };
        rl.set_fail_mode(mode);
        assert!(all_fields(&mut rl, case, &format!("failing with {mode:?}")));
    }
}
