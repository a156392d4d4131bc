//! Writes `commands.json`, the machine-readable spec of every RL command, from the
//! command table (`rl_core::table`): names, arguments with their kinds and ranges,
//! options, replies, error codes, RL.ALL's policy words and the Functions library's
//! function names. The typed clients and the docs read it.
//!
//!   cargo run -p rl-core --example commands_json            print it
//!   cargo run -p rl-core --example commands_json -- --check commands.json
//!                                                            fail if that file differs
//!   cargo run -p rl-core --example commands_json -- --write commands.json

use rl_core::algorithms::{MAX_COUNT, MAX_DURATION_MS};
use rl_core::commands;
use rl_core::options::Opt;
use rl_core::table::{Arg, ArgKind, Command, Keys, Max, Reply};
use serde_json::{json, Value};

fn main() {
    let text = render();
    let args: Vec<String> = std::env::args().skip(1).collect();
    match args.as_slice() {
        [] => print!("{text}"),
        [flag, path] if flag == "--write" => {
            std::fs::write(path, &text).unwrap_or_else(|e| fail(&format!("{path}: {e}")));
        }
        [flag, path] if flag == "--check" => {
            let on_disk = std::fs::read_to_string(path).unwrap_or_default();
            if on_disk != text {
                fail(&format!(
                    "{path} is out of date with the command table: run `make commands-json`"
                ));
            }
        }
        _ => fail("usage: commands_json [--check FILE | --write FILE]"),
    }
}

fn fail(message: &str) -> ! {
    eprintln!("commands_json: {message}");
    std::process::exit(1)
}

/// The whole file, ending in a newline.
fn render() -> String {
    let spec = json!({
        "comment": "Generated from RL's command table (core/src/table.rs) by `make commands-json`; `make lint` fails when it is out of date. Do not edit by hand.",
        "version": env!("CARGO_PKG_VERSION"),
        "library": "rl",
        "replies": {
            "decision": {
                "type": "array",
                "fields": ["allowed", "limit", "remaining", "retry_after_ms", "reset_after_ms"],
                "description": "allowed 1 or 0; retry_after_ms 0 when allowed (with DELAY: the wait before acting), -1 when the call can never pass; reset_after_ms until the limiter is back to its initial state"
            },
            "throttle": {
                "type": "array",
                "fields": ["limited", "limit", "remaining", "retry_after_s", "reset_after_s"],
                "description": "redis-cell's reply: limited 0 or 1; retry_after_s -1 when allowed"
            },
            "all": {
                "type": "array",
                "items": "decision",
                "description": "numkeys + 1 decisions: the combined one, then each key's in key order"
            },
            "released": {
                "type": "integer",
                "description": "1 if the lease was held and is now released, else 0"
            }
        },
        "errors": [
            {"code": "ERR", "when": "a bad argument, option or argument count, or a key whose content is not this limiter's state; nothing is changed"},
            {"code": "WRONGTYPE", "when": "the key holds another Redis type; nothing is changed"},
            {"code": "OOM", "when": "the server is at maxmemory (commands flagged deny-oom)"},
            {"code": "NOPERM", "when": "ACL refuses the command or the key"},
            {"code": "CROSSSLOT", "when": "RL.ALL keys in several cluster slots"}
        ],
        "durations": {
            "units": ["ms", "s", "m", "h", "d"],
            "bare": "s",
            "max_ms": MAX_DURATION_MS,
            "description": "a positive integer with an optional unit (case-insensitive); a bare integer means seconds"
        },
        "commands": commands::COMMANDS.iter().map(|c| command(c)).collect::<Vec<_>>(),
        "policies": commands::policies().map(policy).collect::<Vec<_>>(),
    });
    let mut text = serde_json::to_string_pretty(&spec).unwrap_or_else(|e| fail(&e.to_string()));
    text.push('\n');
    text
}

fn command(c: &Command) -> Value {
    let mut arguments: Vec<Value> = c.args.iter().map(argument).collect();
    if let Some(name) = c.quantity {
        arguments.push(json!({
            "name": text(name), "type": "integer", "min": 0, "max": MAX_COUNT,
            "default": 1, "optional": true,
        }));
    }
    json!({
        "name": c.name_str(),
        "summary": text(c.summary),
        "complexity": text(c.complexity),
        "flags": text(c.flags).split(' ').collect::<Vec<_>>(),
        "arity": c.arity(),
        "keys": match c.keys { Keys::First => "first", Keys::Counted => "counted" },
        "optional": c.optional,
        "function": c.function,
        "policy": c.policy.map(text),
        "arguments": arguments,
        "options": c.options.iter().copied().map(option).collect::<Vec<_>>(),
        // A plain rate on one key: a client may stand in for it (docs/clients.md).
        "plain_rate": c.plain_rate,
        "reply": match c.reply {
            Reply::Decision => "decision",
            Reply::Throttle => "throttle",
            Reply::All => "all",
            Reply::Released => "released",
        },
    })
}

fn policy(c: &'static Command) -> Value {
    let options: Vec<Value> = c
        .options
        .iter()
        .copied()
        .filter(|o| !o.is_amount() && !o.is_flag())
        .map(option)
        .collect();
    json!({
        "word": c.policy_word(),
        "command": c.name_str(),
        "arguments": c.params().iter().map(argument).collect::<Vec<_>>(),
        "options": options,
        // What may come before the policy's word: SHADOW, before any policy (ACQUIRE's
        // too, though RL.ACQUIRE alone takes no SHADOW: a lease is no rate).
        "before": [option(Opt::Shadow)],
        "looked_at": c.looked_at,
    })
}

fn argument(a: &Arg) -> Value {
    let name = text(a.name);
    match a.kind {
        ArgKind::Key => json!({"name": name, "type": "key"}),
        ArgKind::Keys => json!({"name": name, "type": "key", "multiple": true}),
        ArgKind::Integer { min, max } => {
            let mut v = json!({"name": name, "type": "integer", "min": min});
            match max {
                Max::Value(m) => v["max"] = json!(m),
                Max::Setting { name, default } => {
                    v["max"] = json!(default);
                    v["max_setting"] = json!(name);
                }
            }
            v
        }
        ArgKind::Duration => {
            json!({"name": name, "type": "duration", "min_ms": 1, "max_ms": MAX_DURATION_MS})
        }
        ArgKind::Text { max } => {
            json!({"name": name, "type": "text", "min_bytes": 1, "max_bytes": max})
        }
        ArgKind::Policies => json!({"name": name, "type": "policy", "multiple": true}),
        ArgKind::Word { words } => json!({"name": name, "type": "word", "values": words}),
    }
}

fn option(o: Opt) -> Value {
    let mut v = option_value(o);
    if !o.is_flag() {
        // The value's name, as COMMAND DOCS and the docs write it (`ON anchor`).
        v["value"] = json!(o.doc().1.to_str().unwrap_or_default());
    }
    v["summary"] = json!(o.summary());
    v
}

fn option_value(o: Opt) -> Value {
    let excludes: Vec<&str> = o.excludes().iter().map(|x| x.word()).collect();
    match o {
        Opt::Cost => {
            json!({"name": "COST", "type": "integer", "min": 0, "max": MAX_COUNT, "default": 1, "excludes": excludes})
        }
        Opt::Refund => {
            json!({"name": "REFUND", "type": "integer", "min": 0, "max": MAX_COUNT, "excludes": excludes})
        }
        Opt::Debit => {
            json!({"name": "DEBIT", "type": "integer", "min": 1, "max": MAX_COUNT, "excludes": excludes})
        }
        Opt::Delay => {
            json!({"name": "DELAY", "type": "duration", "min_ms": 0, "max_ms": MAX_DURATION_MS, "excludes": excludes})
        }
        Opt::Every => {
            json!({"name": "EVERY", "type": "integer", "min": 1, "max_by_unit": {"day": 3650, "week": 521, "month": 120, "year": 10}, "default": 1})
        }
        Opt::On => {
            json!({"name": "ON", "type": "anchor", "by_unit": {"week": "mon ... sun", "month": "1 ... 31", "year": "MM-DD"}})
        }
        Opt::At => json!({"name": "AT", "type": "time", "format": "hh:mm", "default": "00:00"}),
        Opt::Tz => json!({"name": "TZ", "type": "zone", "default": "UTC"}),
        Opt::Shadow => json!({"name": "SHADOW", "type": "flag", "excludes": excludes}),
    }
}

fn text(c: &std::ffi::CStr) -> &str {
    c.to_str().unwrap_or("?")
}
