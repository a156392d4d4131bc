//! Every command and option of the repository's commands.json has a typed method or
//! parameter here; the crate's version is the module's. No server needed.

use std::path::{Path, PathBuf};

use rl_client::{
    Acquire, All, Backend, Batch, Bucket, Error, Fixed, Gcra, Penalty, Policy, Share, Sliding,
    SlidingCounter, Throttle,
};
use serde_json::Value;

/// Each command of commands.json and the method that sends it (on `Limiter`,
/// `AsyncLimiter` and `Batch` alike).
const METHODS: &[(&str, &str)] = &[
    ("RL.FIXED", "fixed"),
    ("RL.SLIDING", "sliding"),
    ("RL.SLIDINGCOUNTER", "sliding_counter"),
    ("RL.BUCKET", "bucket"),
    ("RL.GCRA", "gcra"),
    ("CL.THROTTLE", "throttle"),
    ("RL.ALL", "all"),
    ("RL.ACQUIRE", "acquire"),
    ("RL.RELEASE", "release"),
    ("RL.PENALTY", "penalty"),
    ("RL.SHARE", "share"),
];

fn manifest_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// The repository's commands.json (generated from the command table by `make
/// commands-json`).
fn spec() -> Value {
    let path = manifest_dir().join("../../commands.json");
    let text = std::fs::read_to_string(&path)
        .unwrap_or_else(|e| panic!("cannot read {}: {e}", path.display()));
    serde_json::from_str(&text).unwrap_or_else(|e| panic!("{} is not JSON: {e}", path.display()))
}

fn commands(spec: &Value) -> &Vec<Value> {
    spec["commands"]
        .as_array()
        .expect("commands.json has a \"commands\" array")
}

fn words(batch: &Batch) -> Vec<String> {
    let cmd = batch.pipeline().cmd_iter().last().expect("one call");
    cmd.args_iter()
        .map(|a| match a {
            redis::Arg::Simple(b) => String::from_utf8_lossy(b).into_owned(),
            _ => "<cursor>".into(),
        })
        .collect()
}

/// Applies `option` (a name of commands.json) to a builder with charge methods.
macro_rules! with_option {
    ($p:expr, $option:expr, [$($name:literal => $method:ident),*]) => {
        match $option {
            None => $p,
            $(Some($name) => $p.$method(2),)*
            Some(other) => return Err(format!("no parameter for option {other}")),
        }
    };
}

/// Builds the call of `command` through its typed method, with `option` set, for
/// `backend`; the words it sends.
fn call(backend: Backend, command: &str, option: Option<&str>) -> Result<Vec<String>, String> {
    let mut b = Batch::new(backend);
    let typed_error = |b: &Batch| b.refusal().map_err(|e: Error| format!("{e}"));
    match command {
        "RL.FIXED" => {
            let p = with_option!(Fixed::new(5, "1m"), option, ["COST" => cost, "REFUND" => refund, "DEBIT" => debit]);
            b.fixed("k", &p);
        }
        "RL.SLIDING" => {
            let p =
                with_option!(Sliding::new(5, "1m"), option, ["COST" => cost, "REFUND" => refund]);
            b.sliding("k", &p);
        }
        "RL.SLIDINGCOUNTER" => {
            let p = with_option!(SlidingCounter::new(5, "1m"), option, ["COST" => cost, "REFUND" => refund, "DEBIT" => debit]);
            b.sliding_counter("k", &p);
        }
        "RL.BUCKET" => {
            let p = with_option!(Bucket::new(5, 1, "1s"), option, ["COST" => cost, "REFUND" => refund, "DEBIT" => debit]);
            b.bucket("k", &p);
        }
        "RL.GCRA" => {
            let p = Gcra::new(5, 1, "1s");
            let p = if option == Some("DELAY") {
                p.delay("2s")
            } else {
                with_option!(p, option, ["COST" => cost, "REFUND" => refund, "DEBIT" => debit])
            };
            b.gcra("k", &p);
        }
        "CL.THROTTLE" => {
            let p = match option {
                None => Throttle::new(0, 1, "1s"),
                Some(other) => return Err(format!("no parameter for option {other}")),
            };
            b.throttle("k", &p);
            typed_error(&b)?;
        }
        "RL.ALL" => {
            let gcra = if option == Some("DELAY") {
                Gcra::new(5, 1, "1s").delay("2s")
            } else {
                Gcra::new(5, 1, "1s")
            };
            let all = All::new().key("a", Fixed::new(5, "1m")).key("b", gcra);
            let all = if option == Some("DELAY") {
                all
            } else {
                with_option!(all, option, ["COST" => cost, "REFUND" => refund, "DEBIT" => debit])
            };
            b.all(&all);
            typed_error(&b)?;
        }
        "RL.ACQUIRE" => {
            let p = match option {
                None => Acquire::new(5, "1m", "id"),
                Some(other) => return Err(format!("no parameter for option {other}")),
            };
            b.acquire("k", &p);
        }
        "RL.RELEASE" => match option {
            None => {
                b.release("k", "id");
            }
            Some(other) => return Err(format!("no parameter for option {other}")),
        },
        "RL.PENALTY" => {
            let p = with_option!(Penalty::new(3, "1m", "1m", "1h"), option, ["COST" => cost]);
            b.penalty("k", &p);
        }
        "RL.SHARE" => {
            let p = with_option!(Share::new("t", 1, 5, 1, "1s"), option, ["COST" => cost, "REFUND" => refund, "DEBIT" => debit]);
            b.share("k", &p);
        }
        other => return Err(format!("no method for {other}")),
    }
    Ok(words(&b))
}

/// The RL.ALL policy of each policy word, with a policy option set.
fn policy(word: &str, option: Option<&str>) -> Result<Policy, String> {
    let p: Policy = match (word, option) {
        ("FIXED", None) => Fixed::new(5, "1m").into(),
        ("SLIDING", None) => Sliding::new(5, "1m").into(),
        ("SLIDINGCOUNTER", None) => SlidingCounter::new(5, "1m").into(),
        ("BUCKET", None) => Bucket::new(5, 1, "1s").into(),
        ("GCRA", None) => Gcra::new(5, 1, "1s").into(),
        ("GCRA", Some("DELAY")) => Gcra::new(5, 1, "1s").delay("2s").into(),
        ("ACQUIRE", None) => Acquire::new(5, "1m", "id").into(),
        ("PENALTY", None) => Penalty::new(3, "1m", "1m", "1h").into(),
        ("SHARE", None) => Share::new("t", 1, 5, 1, "1s").into(),
        (word, None) => return Err(format!("no Policy for {word}")),
        (word, Some(o)) => return Err(format!("no parameter for {word}'s option {o}")),
    };
    Ok(p)
}

/// The words RL.ALL sends for one key with policy `p`, after the key.
fn policy_words(p: Policy) -> Vec<String> {
    let mut b = Batch::new(Backend::Module);
    b.all(&All::new().key("k", p));
    b.refusal().unwrap();
    // RL.ALL 1 k <policy words…>
    words(&b)[3..].to_vec()
}

fn name(v: &Value) -> &str {
    v["name"].as_str().expect("every entry has a name")
}

#[test]
fn every_command_has_a_method() {
    let spec = spec();
    let mut missing = Vec::new();
    for c in commands(&spec) {
        let command = name(c);
        if !METHODS.iter().any(|(n, _)| *n == command) {
            missing.push(format!("{command}: no method in METHODS"));
            continue;
        }
        if let Err(e) = call(Backend::Module, command, None) {
            missing.push(format!("{command}: {e}"));
        }
    }
    assert!(
        missing.is_empty(),
        "commands without a typed method: {missing:#?}"
    );
    for (command, _) in METHODS {
        assert!(
            commands(&spec).iter().any(|c| name(c) == *command),
            "METHODS lists {command}, which commands.json does not have"
        );
    }
}

#[test]
fn every_option_has_a_parameter() {
    let spec = spec();
    let mut missing = Vec::new();
    for c in commands(&spec) {
        let command = name(c);
        for o in c["options"]
            .as_array()
            .map(Vec::as_slice)
            .unwrap_or_default()
        {
            let option = name(o);
            match call(Backend::Module, command, Some(option)) {
                Ok(words) if words.iter().any(|w| w == option) => {}
                Ok(words) => missing.push(format!("{command} {option}: not sent ({words:?})")),
                Err(e) => missing.push(format!("{command} {option}: {e}")),
            }
        }
    }
    assert!(
        missing.is_empty(),
        "options without a parameter: {missing:#?}"
    );
}

#[test]
fn arguments_are_sent_in_number() {
    let spec = spec();
    for c in commands(&spec) {
        let command = name(c);
        if c["keys"] == "counted" {
            continue; // RL.ALL: numkeys keys and policies
        }
        let args = c["arguments"].as_array().expect("arguments");
        let optional = args
            .iter()
            .filter(|a| a["optional"] == true || a.get("default").is_some())
            .count();
        let words = call(Backend::Module, command, None).unwrap();
        assert_eq!(words[0], command);
        let sent = words.len() - 1;
        assert!(
            (args.len() - optional..=args.len()).contains(&sent),
            "{command}: {sent} arguments sent, commands.json has {} ({optional} optional): {words:?}",
            args.len()
        );
    }
}

#[test]
fn library_functions_match() {
    let spec = spec();
    for c in commands(&spec) {
        let command = name(c);
        match c["function"].as_str() {
            Some(function) => {
                let words = call(Backend::Library, command, None).unwrap();
                assert_eq!(&words[..2], ["FCALL", function], "{command}");
            }
            None => {
                let err = call(Backend::Library, command, None).unwrap_err();
                assert!(
                    err.contains("no Functions-library equivalent"),
                    "{command}: {err}"
                );
            }
        }
    }
}

#[test]
fn every_policy_has_a_type() {
    let spec = spec();
    let mut missing = Vec::new();
    // Each command's policy word…
    for c in commands(&spec) {
        if let Some(word) = c["policy"].as_str() {
            match policy(word, None) {
                Ok(p) => assert_eq!(p.word(), word),
                Err(e) => missing.push(format!("{}: {e}", name(c))),
            }
        }
    }
    // …and the policies table: its arguments and options.
    let policies = spec["policies"]
        .as_array()
        .map(Vec::as_slice)
        .unwrap_or_default();
    for entry in policies {
        let word = entry["word"].as_str().expect("a policy has a word");
        let p = match policy(word, None) {
            Ok(p) => p,
            Err(e) => {
                missing.push(e);
                continue;
            }
        };
        let sent = policy_words(p);
        assert_eq!(sent[0], word);
        let args = entry["arguments"]
            .as_array()
            .map(Vec::len)
            .unwrap_or_default();
        assert_eq!(sent.len() - 1, args, "{word}: {sent:?}");
        for o in entry["options"]
            .as_array()
            .map(Vec::as_slice)
            .unwrap_or_default()
        {
            let option = name(o);
            match policy(word, Some(option)).map(policy_words) {
                Ok(sent) if sent.iter().any(|w| w == option) => {}
                Ok(sent) => missing.push(format!("{word} {option}: not sent ({sent:?})")),
                Err(e) => missing.push(e),
            }
        }
    }
    assert!(
        missing.is_empty(),
        "policies without a type or parameter: {missing:#?}"
    );
    assert!(
        policies.len() >= 7,
        "only {} policies in commands.json",
        policies.len()
    );
}

fn package_version(cargo_toml: &Path) -> String {
    let text = std::fs::read_to_string(cargo_toml).unwrap();
    let mut in_package = false;
    for line in text.lines() {
        let line = line.trim();
        if line.starts_with('[') {
            in_package = line == "[package]";
        } else if in_package {
            if let Some(v) = line.strip_prefix("version") {
                let v = v.trim_start().trim_start_matches('=').trim();
                return v.trim_matches('"').to_string();
            }
        }
    }
    panic!("no [package] version in {}", cargo_toml.display());
}

#[test]
fn version_is_the_modules() {
    let root = package_version(&manifest_dir().join("../../Cargo.toml"));
    assert_eq!(rl_client::VERSION, root);
    assert_eq!(package_version(&manifest_dir().join("Cargo.toml")), root);
}
