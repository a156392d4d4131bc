//! Writes the data parts of the Functions library (functions/rl.lua) from the
//! command table (`rl_core::table`) and the core's error texts: the header's usage
//! lines, the limits, the error lines with fixed texts, RL.ALL's policy list, the
//! map of functions and their registration. Each part sits between a
//! `-- <generated:NAME>` line and a `-- </generated:NAME>` line (the time zones
//! come from the bundled tz database: lua_zones/); everything else in
//! the file (the algorithms, the parsers, the calls) is written by hand.
//!
//!   cargo run -p rl-core --example lua_data            print every part
//!   cargo run -p rl-core --example lua_data -- --check functions/rl.lua
//!                                                       fail if a part is out of date
//!   cargo run -p rl-core --example lua_data -- --write functions/rl.lua

use std::ffi::CStr;

#[path = "lua_zones/mod.rs"]
mod lua_zones;

use rl_core::algorithms::acquire::MAX_ID_LEN;
use rl_core::algorithms::bucket::TokenBucket;
use rl_core::algorithms::fixed::FixedWindow;
use rl_core::algorithms::gcra::Gcra;
use rl_core::algorithms::penalty::EscalatingBlocks;
use rl_core::algorithms::quota::CalendarQuota;
use rl_core::algorithms::share::{DEFAULT_MAX_TENANTS, MAX_TENANT_LEN};
use rl_core::algorithms::sliding_counter::SlidingWindowCounter;
use rl_core::algorithms::{MAX_COUNT, MAX_DURATION_MS};
use rl_core::calendar::{Calendar, Unit};
use rl_core::codec::{self, StringState};
use rl_core::commands;
use rl_core::error::Error;
use rl_core::options::{Opt, Takes};
use rl_core::table::{self, Arg, ArgKind, Command, Keys, Max};

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    match args.as_slice() {
        [] => {
            for (name, text) in blocks() {
                println!("-- <generated:{name}>\n{text}-- </generated:{name}>");
            }
        }
        [flag, path] if flag == "--write" || flag == "--check" => {
            let on_disk =
                std::fs::read_to_string(path).unwrap_or_else(|e| fail(&format!("{path}: {e}")));
            let wanted =
                splice(&on_disk, &blocks()).unwrap_or_else(|e| fail(&format!("{path}: {e}")));
            if flag == "--write" {
                if wanted != on_disk {
                    std::fs::write(path, &wanted).unwrap_or_else(|e| fail(&format!("{path}: {e}")));
                }
            } else if wanted != on_disk {
                fail(&format!(
                    "{path}: its generated parts are out of date with the command table: run `make lua`"
                ));
            }
        }
        _ => fail("usage: lua_data [--check FILE | --write FILE]"),
    }
}

fn fail(message: &str) -> ! {
    eprintln!("lua_data: {message}");
    std::process::exit(1)
}

/// Every generated part: its name and its lines (each ending in a newline), in the
/// order they appear in the file.
fn blocks() -> Vec<(&'static str, String)> {
    vec![
        ("usage", usage()),
        (
            "calendar",
            lua_zones::block().unwrap_or_else(|e| fail(&format!("the tz database: {e}"))),
        ),
        ("limits", limits()),
        ("errors", errors()),
        ("policies", policies()),
        ("functions", functions()),
        ("register", register()),
    ]
}

/// `text` with the lines between each part's markers replaced by the part, indented
/// as its opening marker is. Every part must have its markers once, in order, and
/// no other marker may be there.
fn splice(text: &str, blocks: &[(&str, String)]) -> Result<String, String> {
    let mut out = String::with_capacity(text.len());
    let mut lines = text.split_inclusive('\n');
    let mut expected = blocks.iter();
    while let Some(line) = lines.next() {
        out.push_str(line);
        let Some(name) = marker(line, "<generated:") else {
            if let Some(name) = marker(line, "</generated:") {
                return Err(format!(
                    "a closing marker for {name} without its opening one"
                ));
            }
            continue;
        };
        let Some((wanted, part)) = expected.next() else {
            return Err(format!("no part is called {name}"));
        };
        if name != *wanted {
            return Err(format!("found the part {name} where {wanted} was expected"));
        }
        let indent = &line[..line.len() - line.trim_start().len()];
        for l in part.lines() {
            if !l.is_empty() {
                out.push_str(indent);
            }
            out.push_str(l);
            out.push('\n');
        }
        loop {
            let Some(line) = lines.next() else {
                return Err(format!("no closing marker for {name}"));
            };
            if let Some(closing) = marker(line, "</generated:") {
                if closing != name {
                    return Err(format!("{name} closed as {closing}"));
                }
                out.push_str(line);
                break;
            }
            if marker(line, "<generated:").is_some() {
                return Err(format!("no closing marker for {name}"));
            }
        }
    }
    if let Some((name, _)) = expected.next() {
        return Err(format!("no markers for the part {name}"));
    }
    Ok(out)
}

/// The name in a marker line `-- <generated:NAME>` (`open` is `<generated:` or
/// `</generated:`).
fn marker<'l>(line: &'l str, open: &str) -> Option<&'l str> {
    line.trim()
        .strip_prefix("-- ")?
        .strip_prefix(open)?
        .strip_suffix('>')
}

// -- what the parts say -----------------------------------------------------------

fn text(c: &CStr) -> &str {
    c.to_str().unwrap_or("?")
}

/// The commands the library has, in the list's order (`rl_core::commands::COMMANDS`).
fn library() -> impl Iterator<Item = (&'static str, &'static Command)> {
    commands::COMMANDS
        .iter()
        .copied()
        .filter_map(|c| c.function.map(|f| (f, c)))
}

/// The Lua name of a command's limiter (`FIXED`) or, lower case, of the body of a
/// function without options (`acquire`): its name after the prefix.
fn limiter(c: &Command) -> &'static str {
    let name = c.name_str();
    name.split_once('.').map_or(name, |(_, short)| short)
}

/// What a function is: a one-key call with options (a limiter), a one-key call
/// without options (written by hand), or one over several keys (RL.ALL, by hand).
enum Shape {
    Single,
    Exact,
    Counted,
}

fn shape(c: &Command) -> Shape {
    match c.keys {
        Keys::Counted => Shape::Counted,
        Keys::First if c.options.is_empty() && c.quantity.is_none() => Shape::Exact,
        Keys::First => Shape::Single,
    }
}

/// A positional argument as a usage line shows it.
fn arg_usage(a: &Arg) -> String {
    let name = text(a.name);
    match a.kind {
        ArgKind::Keys | ArgKind::Policies => format!("{name} [{name} ...]"),
        _ => name.to_string(),
    }
}

/// Its parameters after the key, as a policy or a usage line names them.
fn param_names(c: &Command) -> String {
    let names: Vec<&str> = c.params().iter().map(|a| text(a.name)).collect();
    names.join(" ")
}

fn option_usage(o: Opt) -> String {
    let value = if o == Opt::Delay { "max" } else { "n" };
    format!("{} {value}", o.word())
}

/// `[COST n | REFUND n | DEBIT n] [DELAY max] [SHADOW]`, as the row takes them
/// ("" for none).
fn options_usage(c: &Command) -> String {
    let options = c.options;
    let amounts: Vec<String> = options
        .iter()
        .filter(|o| o.is_amount())
        .map(|o| option_usage(*o))
        .collect();
    let mut parts = Vec::new();
    if options.contains(&Opt::Every) {
        parts.push("[EVERY n] [ON anchor] [AT hh:mm] [TZ zone]".to_string());
    }
    if !amounts.is_empty() {
        parts.push(format!("[{}]", amounts.join(" | ")));
    }
    if options.contains(&Opt::Delay) {
        parts.push(format!("[{}]", option_usage(Opt::Delay)));
    }
    if options.contains(&Opt::Shadow) {
        parts.push(format!("[{}]", Opt::Shadow.word()));
    }
    parts.join(" ")
}

/// The arguments after `FCALL function`: `1 key limit window` for a one-key
/// function, `numkeys key [key ...] policy [policy ...]` for RL.ALL.
fn call_args(c: &Command) -> String {
    let args: Vec<String> = c.args.iter().map(arg_usage).collect();
    match c.keys {
        Keys::First => format!("1 {}", args.join(" ")),
        Keys::Counted => args.join(" "),
    }
}

/// `FCALL rl_fixed 1 key limit window [COST n | REFUND n | DEBIT n]`.
fn usage_line(function: &str, c: &Command) -> String {
    let line = format!("FCALL {function} {} {}", call_args(c), options_usage(c));
    line.trim_end().to_string()
}

/// A Lua string literal (double-quoted unless the text holds double quotes only).
fn lua_string(s: &str) -> String {
    let quote = if s.contains('"') && !s.contains('\'') {
        '\''
    } else {
        '"'
    };
    let mut out = String::from(quote);
    for ch in s.chars() {
        match ch {
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            c if c == quote => {
                out.push('\\');
                out.push(c);
            }
            c if (c as u32) < 32 => out.push_str(&format!("\\{:03}", c as u32)),
            c => out.push(c),
        }
    }
    out.push(quote);
    out
}

/// An error as the reply line says it: its code word, then its text.
fn line(e: &Error) -> String {
    format!("{} {e}", e.code())
}

/// The hole a template's argument fills: no error text holds this character.
const HOLE: &str = "\u{1}";

/// An error line with a hole, as a Lua function of what fills it:
/// `function(name) return "ERR " .. name .. " must be …" end`.
fn template(arg: &str, e: &Error) -> String {
    template_of(arg, &line(e))
}

/// An error line whose hole is a number (`max`): made with `u64::MAX` there, which
/// no error text holds otherwise.
fn number_template(arg: &str, e: impl FnOnce(u64) -> Error) -> String {
    template_of(
        arg,
        &line(&e(u64::MAX)).replace(&u64::MAX.to_string(), HOLE),
    )
}

/// [`template`] of a line with its hole.
fn template_of(arg: &str, line: &str) -> String {
    let pieces: Vec<&str> = line.split(HOLE).collect();
    assert_eq!(pieces.len(), 2, "one hole in {line:?}");
    let mut parts = Vec::new();
    for (i, piece) in pieces.iter().enumerate() {
        if i > 0 {
            parts.push(arg.to_string());
        }
        if !piece.is_empty() {
            parts.push(lua_string(piece));
        }
    }
    format!("function({arg}) return {} end", parts.join(" .. "))
}

fn duration_usage(ms: u64) -> String {
    const DAY: u64 = 86_400_000;
    if ms.is_multiple_of(DAY) {
        format!("{}d", ms / DAY)
    } else {
        format!("{ms}ms")
    }
}

// -- the parts --------------------------------------------------------------------

/// The header's usage lines: one per function, padded into columns, RL.ALL's with
/// what its policies take, and the library's own rl_version.
fn usage() -> String {
    let mut singles: Vec<(String, String, String)> = Vec::new();
    let mut rows: Vec<Result<usize, String>> = Vec::new();
    for (function, c) in library() {
        match c.keys {
            Keys::First => {
                rows.push(Ok(singles.len()));
                singles.push((function.to_string(), call_args(c), options_usage(c)));
            }
            Keys::Counted => {
                let mut lines = vec![
                    usage_line(function, c),
                    "  (SHADOW before a policy makes it advisory: it never vetoes the call)"
                        .to_string(),
                ];
                for p in commands::policies() {
                    let word = p.policy_word();
                    if p.delay() {
                        lines.push(format!(
                            "  (a {word} policy may carry DELAY max: {word} {} [DELAY max])",
                            param_names(p)
                        ));
                    }
                    if p.looked_at {
                        let writer = p.function.unwrap_or(p.name_str());
                        lines.push(format!(
                            "  (in {function}, {word} {} is only looked at, as COST 0; {writer} writes it)",
                            param_names(p)
                        ));
                    }
                }
                rows.push(Err(lines.join("\n")));
            }
        }
    }
    let version = singles.len();
    singles.push((
        "rl_version".to_string(),
        "0".to_string(),
        "the library's version".to_string(),
    ));
    rows.push(Ok(version));
    let width_fn = singles.iter().map(|s| s.0.len()).max().unwrap_or(0);
    let width_args = singles.iter().map(|s| s.1.len()).max().unwrap_or(0);
    let mut out = String::new();
    for row in rows {
        let l = match row {
            Ok(i) => {
                let (f, a, o) = &singles[i];
                format!("  FCALL {f:<width_fn$} {a:<width_args$} {o}")
                    .trim_end()
                    .to_string()
            }
            Err(lines) => lines
                .lines()
                .map(|l| format!("  {l}"))
                .collect::<Vec<_>>()
                .join("\n"),
        };
        out.push_str(&l);
        out.push('\n');
    }
    out
}

/// An integer argument's bounds, by its name in the row; the generator stops if the
/// row has no such argument.
fn integer_arg(c: &Command, name: &str) -> (u64, Max) {
    match c.args.iter().find(|a| text(a.name) == name).map(|a| a.kind) {
        Some(ArgKind::Integer { min, max }) => (min, max),
        _ => fail(&format!("{} has no integer argument {name}", c.name_str())),
    }
}

/// The bounds the library checks, and the option words.
fn limits() -> String {
    let words: Vec<String> = Opt::ALL
        .iter()
        .map(|o| format!("{} = true", o.word()))
        .collect();
    let count = if MAX_COUNT == (1 << 53) - 1 {
        "2^53 - 1: "
    } else {
        ""
    };
    let (_, max_keys) = integer_arg(&table::ALL, "numkeys");
    let (_, max_weight) = integer_arg(&table::SHARE, "weight");
    let sliding_max = match integer_arg(&table::SLIDING, "limit").1 {
        Max::Setting { name, default } => {
            format!("{default} -- {name}'s default (a library has no settings)")
        }
        Max::Value(v) => v.to_string(),
    };
    format!(
        "local MAX_COUNT = {MAX_COUNT} -- {count}the largest count, cost and reply field\n\
         local MAX_DURATION = {MAX_DURATION_MS} -- {} in ms\n\
         local SLIDING_MAX = {sliding_max}\n\
         local MAX_KEYS = {} -- keys in one rl_all call\n\
         local MAX_ID = {MAX_ID_LEN} -- bytes in a lease id\n\
         local MAX_TENANT = {MAX_TENANT_LEN} -- bytes in an RL.SHARE tenant\n\
         local MAX_WEIGHT = {} -- an RL.SHARE tenant's largest weight\n\
         local SHARE_MAX_TENANTS = {DEFAULT_MAX_TENANTS} -- rl.share-max-tenants' default (a library has no settings)\n\
         local OPTION_WORDS = {{ {} }}\n",
        duration_usage(MAX_DURATION_MS),
        max_keys.default_value(),
        max_weight.default_value(),
        words.join(", ")
    )
}

/// The error lines the library answers with, as the core words them.
fn errors() -> String {
    let holds = |what: &'static str| line(&Error::NotALimiter(what));
    let (min, max) = integer_arg(&table::ALL, "numkeys");
    let numkeys = Error::BadInteger {
        name: "numkeys",
        min,
        max: max.default_value(),
    };
    let (min, max) = integer_arg(&table::SHARE, "weight");
    let weight = Error::BadInteger {
        name: "weight",
        min,
        max: max.default_value(),
    };
    let fixed: Vec<(&str, String)> = vec![
        ("wrong_type", line(&Error::WrongType)),
        ("not_fixed", holds(<FixedWindow as StringState>::WHAT)),
        ("not_sliding", holds(codec::SLIDING_WHAT)),
        ("not_bucket", holds(TokenBucket::WHAT)),
        ("not_gcra", holds(<Gcra as StringState>::WHAT)),
        (
            "not_slidingcounter",
            holds(<SlidingWindowCounter as StringState>::WHAT),
        ),
        ("not_leases", holds(codec::LEASES_WHAT)),
        (
            "not_penalty",
            holds(<EscalatingBlocks as StringState>::WHAT),
        ),
        ("not_quota", holds(<CalendarQuota as StringState>::WHAT)),
        ("rate_too_high", line(&Error::RateTooHigh)),
        (
            "sliding_limit",
            line(&Error::SlidingLimit {
                max: table::SLIDING_MAX_LIMIT,
            }),
        ),
        (
            "lease_limit",
            line(&Error::LeaseLimit {
                max: table::SLIDING_MAX_LIMIT,
            }),
        ),
        ("lease_id", line(&Error::BadLeaseId)),
        ("lease_refund", line(&Error::LeaseRefund)),
        ("block_above_max", line(&Error::BlockAboveMax)),
        ("delay_without_gcra", line(&Error::DelayWithoutGcra)),
        ("shadow_without_policy", line(&Error::ShadowWithoutPolicy)),
        ("numkeys", line(&numkeys)),
        ("not_share", holds(codec::share::WHAT)),
        ("tenant", line(&Error::BadTenant)),
        ("weight", line(&weight)),
        ("share_rate_too_high", line(&Error::ShareRateTooHigh)),
    ];
    let templates: Vec<(&str, String)> = vec![
        (
            "count",
            template("name", &Error::BadCount { name: HOLE, min: 1 }),
        ),
        (
            "cost",
            template("name", &Error::BadCount { name: HOLE, min: 0 }),
        ),
        (
            "duration",
            template(
                "name",
                &Error::BadDuration {
                    name: HOLE,
                    min: "1ms",
                },
            ),
        ),
        (
            "delay",
            template(
                "name",
                &Error::BadDuration {
                    name: HOLE,
                    min: "0",
                },
            ),
        ),
        (
            "unknown_policy",
            template(
                "word",
                &Error::UnknownPolicy {
                    word: HOLE.to_string(),
                    expected: commands::policy_words(),
                },
            ),
        ),
        (
            "share_tenants",
            number_template("max", |max| Error::ShareTenants { max }),
        ),
    ];
    let mut out = String::from("local ERRORS = {\n");
    for (name, l) in fixed {
        out.push_str(&format!("  {name} = {},\n", lua_string(&l)));
    }
    out.push_str("  -- With the argument named.\n");
    for (name, t) in templates {
        out.push_str(&format!("  {name} = {t},\n"));
    }
    out.push_str(&calendar_errors());
    out.push_str("}\n");
    out
}

/// The error line the calendar's parser gives `unit` with these EVERY, ON, AT and
/// TZ values; the generator stops if it accepts them.
fn calendar_line(
    unit: &str,
    every: Option<&str>,
    on: Option<&str>,
    at: Option<&str>,
    tz: Option<&str>,
) -> String {
    let bytes = |v: Option<&str>| v.map(|s| s.as_bytes().to_vec());
    let (every, on, at, tz) = (bytes(every), bytes(on), bytes(at), bytes(tz));
    match Calendar::parse(
        unit.as_bytes(),
        every.as_deref(),
        on.as_deref(),
        at.as_deref(),
        tz.as_deref(),
    ) {
        Err(e) => line(&e),
        Ok(_) => fail(&format!(
            "the calendar accepts {unit} {every:?} {on:?} {at:?} {tz:?}"
        )),
    }
}

/// RL.QUOTA's calendar errors, as its parser words them: by what is wrong, and for
/// EVERY and ON by unit.
fn calendar_errors() -> String {
    let units = [Unit::Day, Unit::Week, Unit::Month, Unit::Year];
    let by_unit = |bad: &dyn Fn(Unit) -> Option<String>| -> String {
        let lines: Vec<String> = units
            .iter()
            .filter_map(|u| bad(*u).map(|l| format!("{} = {}", u.name(), lua_string(&l))))
            .collect();
        format!("{{ {} }}", lines.join(", "))
    };
    let every = by_unit(&|u| Some(calendar_line(u.name(), Some("0"), None, None, None)));
    let on = by_unit(&|u| {
        (u != Unit::Day).then(|| calendar_line(u.name(), None, Some("-"), None, None))
    });
    // A zone name no database has, standing for the one given.
    const ZONE: &str = "No/Such_Zone";
    let tz = calendar_line("day", None, None, None, Some(ZONE)).replace(ZONE, HOLE);
    let mut out = String::from("  -- RL.QUOTA's calendar (EVERY and ON by unit).\n");
    for (name, l) in [
        (
            "quota_unit",
            lua_string(&calendar_line("fortnight", None, None, None, None)),
        ),
        (
            "quota_on_day",
            lua_string(&calendar_line("day", None, Some("mon"), None, None)),
        ),
        (
            "quota_at",
            lua_string(&calendar_line("day", None, None, Some("24:00"), None)),
        ),
        ("quota_every", every),
        ("quota_on", on),
        ("quota_tz", template_of("zone", &tz)),
    ] {
        out.push_str(&format!("  {name} = {l},\n"));
    }
    out
}

/// The options a row takes (`takes`: alone, or as an RL.ALL policy), as the
/// library's option parser reads them (COST always; `refund = false` when it takes
/// no REFUND; `debit`, `delay` when it takes them).
fn takes_fields(takes: Takes) -> Vec<String> {
    if !takes.options.is_empty() && !takes.has(Opt::Cost) {
        fail("the library's option parser takes COST wherever it takes any option");
    }
    let mut fields = Vec::new();
    if !takes.has(Opt::Refund) {
        fields.push("refund = false".to_string());
    }
    if takes.has(Opt::Debit) {
        fields.push("debit = true".to_string());
    }
    if takes.has(Opt::Delay) {
        fields.push("delay = true".to_string());
    }
    if takes.has(Opt::Shadow) {
        fields.push("shadow = true".to_string());
    }
    if takes.has(Opt::Every) {
        fields.push("calendar = true".to_string());
    }
    fields
}

/// RL.ALL's policies, in the list's order.
fn policies() -> String {
    let mut out = String::from("local POLICIES = {\n");
    for c in commands::policies() {
        let word = c.policy_word();
        let takes = Error::PolicyArgs {
            policy: word,
            params: param_names(c),
        };
        let mut fields = vec![
            format!("word = {}", lua_string(word)),
            format!("limiter = {}", limiter(c)),
            format!("n = {}", c.params().len()),
            format!("takes = {}", lua_string(&line(&takes))),
        ];
        fields.extend(takes_fields(c.policy_takes()));
        if c.looked_at {
            fields.push("watches = true".to_string());
        }
        out.push_str(&format!("  {{ {} }},\n", fields.join(", ")));
    }
    out.push_str("}\n");
    out
}

/// The map of functions `build` returns: a limiter's through `single`, a function
/// without options through `exact`, RL.ALL's as written.
fn functions() -> String {
    let mut out = String::from("return {\n");
    for (function, c) in library() {
        let usage = lua_string(&usage_line(function, c));
        let name = lua_string(c.name_str());
        let f = lua_string(function);
        let n = c.params().len();
        match shape(c) {
            Shape::Single => {
                let mut row = vec![format!("name = {name}")];
                row.extend(takes_fields(c.takes()));
                row.push(format!("usage = {usage}"));
                out.push_str(&format!(
                    "  {function} = single({f}, {}, {n}, {{\n    {},\n  }}),\n",
                    limiter(c),
                    row.join(",\n    ")
                ));
            }
            Shape::Exact => {
                out.push_str(&format!(
                    "  {function} = exact({f}, {}, {n}, {{\n    name = {name},\n    usage = {usage},\n  }}),\n",
                    limiter(c).to_lowercase(),
                ));
            }
            Shape::Counted => out.push_str(&format!("  {function} = {function},\n")),
        }
    }
    out.push_str("}\n");
    out
}

/// One `register` a function: `allow-oom` when its command is not `deny-oom`.
fn register() -> String {
    let mut out = String::new();
    for (function, c) in library() {
        let denies_oom = text(c.flags).split(' ').any(|f| f == "deny-oom");
        if denies_oom {
            out.push_str(&format!("register({})\n", lua_string(function)));
        } else {
            out.push_str(&format!(
                "register({}, {{ \"allow-oom\" }})\n",
                lua_string(function)
            ));
        }
    }
    out
}
