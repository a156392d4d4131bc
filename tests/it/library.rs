//! The Functions library (functions/rl.lua) held to the module call for call
//! (docs/library.md).
//!
//! One server runs both: the module and the library. Each scenario sets up two
//! keys identically (natively, with states near or far beyond 2^53, or by earlier
//! calls), then makes the same calls on one key with the module's command and on
//! the other with the library's function, in one MULTI that TIME shows ran within
//! one millisecond (retried otherwise). Every reply (or error text), every
//! resulting value and every absolute expiry must be identical. The commands and
//! RL.ALL policies are the command table's (every one the library has), their
//! parameters drawn by their kinds in it (rl_core::table::ArgKind) over the full
//! ranges: counts 1 ..= 2^53−1, durations 1 ms ..= 10 years, weights 1 ..= 10,000,
//! names (tenants, lease ids) of 1 ..= 256 bytes, costs, refunds and debits
//! 0 ..= 2^53−1, and stored states up to u64 counts, u128 TATs, bucket levels in
//! debt down to −(2^53−1) and past it, and RL.SHARE budgets of several tenants.
//! This is the proof behind docs/library.md's statement that the two agree
//! everywhere (and of the one difference it lists, which is not generated here).
//!
//! RL_SWEEP_SEED and RL_SWEEP_SCENARIOS replay or lengthen a run.

use crate::common::*;
use rl_core::algorithms::share::SLOTS;
use rl_core::table::{self, ArgKind, Keys, Opt};

const MAX: u64 = 9_007_199_254_740_991;
const MAX_DURATION_MS: u64 = 315_360_000_000;

/// A count argument 1 ..= 2^53−1.
fn count(rng: &mut Rng) -> u64 {
    match rng.below(4) {
        0 => 1 + rng.below(10),
        1 => 1 + rng.below(100_000),
        _ => rng.magnitude(MAX),
    }
}

/// A duration argument in one of its forms, and its length in ms.
fn duration(rng: &mut Rng) -> (String, u64) {
    let ms = match rng.below(4) {
        0 => 1 + rng.below(2000),
        1 => 1000 * (1 + rng.below(3600)),
        _ => rng.magnitude(MAX_DURATION_MS),
    };
    let text = if ms % 86_400_000 == 0 && rng.below(2) == 0 {
        format!("{}d", ms / 86_400_000)
    } else if ms % 1000 == 0 && rng.below(2) == 0 {
        format!("{}", ms / 1000)
    } else {
        format!("{ms}MS")
    };
    (text, ms)
}

/// COST n, REFUND n or DEBIT n (or nothing: COST 1), around the limit and at the
/// bounds.
fn amount(rng: &mut Rng, limit: u64) -> Vec<String> {
    let n = match rng.below(7) {
        0 => 0,
        1 => 1,
        2 => limit,
        3 => limit.saturating_add(1).min(MAX),
        4 => MAX,
        _ => rng.below(limit.min(1000) + 1),
    };
    match rng.below(7) {
        0 => vec![],
        1 => vec!["REFUND".into(), n.to_string()],
        2 => vec![rng.pick(&["DEBIT", "debit"]).to_string(), n.to_string()],
        _ => vec!["cost".into(), n.to_string()],
    }
}

/// A sliding log takes one member per unit: costs it accepts stay at most 20,
/// so that a scenario runs within one ms on servers without a frozen script time.
/// (`sliding`: a command in the call logs per unit, [`per_unit`].)
fn cheap(mut amount: Vec<String>, sliding: bool, limit: u64) -> Vec<String> {
    if let Some(n) = amount.get(1).and_then(|n| n.parse::<u64>().ok()) {
        if sliding && n > 20 && n <= limit {
            amount[1] = "20".to_string();
        }
    }
    amount
}

/// Names: RL.ACQUIRE's lease ids and RL.SHARE's tenants, the command table's text
/// arguments (the empty one, and one too long, are refused alike).
const IDS: &[&str] = &["a", "b", "c", "\u{0}é\n", "job-42"];

/// One draw of a command's parameters after the key, each by its kind in the
/// command table ([`Kind::of`]): (words, the first count, the first duration in
/// ms).
fn draw(rng: &mut Rng, row: &table::Command) -> (Vec<String>, u64, u64) {
    let (mut words, mut limit, mut window) = (Vec::new(), None, None);
    for arg in row.params() {
        words.push(match (Kind::of(row.name_str(), arg), arg.kind) {
            (Kind::Count | Kind::Burst, ArgKind::Integer { min, max }) => {
                // Small, up to the default bound (rl.sliding-max-limit's for an
                // RL.SLIDING limit), or anywhere to 2^53 − 1 (past that bound: the
                // same error from both).
                let v = match rng.below(4) {
                    0 => min.max(1) + rng.below(5),
                    1 => min.max(1) + rng.below(max.default_value().min(100_000)),
                    _ => count(rng),
                };
                limit.get_or_insert(v);
                v.to_string()
            }
            (Kind::Weight, ArgKind::Integer { max, .. }) => {
                // Mostly in its range, 1 ..= 10000, sometimes at its bound or past
                // it (the same error from both).
                let max = max.default_value();
                match rng.below(16) {
                    0 => max + 1,
                    1 => count(rng),
                    2 => max,
                    3..=7 => 1 + rng.below(5),
                    _ => 1 + rng.below(max),
                }
                .to_string()
            }
            (Kind::Duration, _) => {
                let (text, ms) = duration(rng);
                window.get_or_insert(ms);
                text
            }
            (Kind::Text, ArgKind::Text { max }) => match rng.below(32) {
                0 => String::new(),
                1 => "x".repeat(max),
                2 => "x".repeat(max + 1),
                _ => rng.pick(IDS).to_string(),
            },
            (Kind::Unit, ArgKind::Word { words }) => {
                // The calendar unit's length as the window (a month as 28 days).
                let word = rng.pick(words);
                let days = [("day", 1), ("week", 7), ("month", 28), ("year", 365)];
                let days = days.iter().find(|(w, _)| w == word).map_or(1, |(_, d)| *d);
                window.get_or_insert(days * 86_400_000);
                word.to_string()
            }
            _ => panic!("{}: no draw for {:?}", row.name_str(), arg.name),
        });
    }
    let (Some(limit), Some(window)) = (limit, window) else {
        panic!("{}: no count or no duration to draw", row.name_str())
    };
    (words, limit, window)
}

/// The position of the parameter `name` after the key.
fn position(row: &table::Command, name: &str) -> Option<usize> {
    row.params()
        .iter()
        .position(|a| a.name.to_bytes() == name.as_bytes())
}

/// The words of one command after the key, drawn by their kinds in the command
/// table: (words, limit, window ms). Parameters the command refuses together (its
/// test row's `conflict`, `too_fast`) are drawn mostly not, sometimes (the same
/// error from both); a command that takes DELAY gets one half the time (a policy's
/// in RL.ALL, an option of RL.GCRA's).
fn params(rng: &mut Rng, name: &str) -> (Vec<String>, u64, u64) {
    let row = table::find(name.as_bytes()).expect("a command of the table");
    let known = command(name);
    let (mut words, mut limit, mut window) = draw(rng, row);
    if let Some((refused, _)) = known.conflict {
        let lower =
            |words: &[String]| -> Vec<String> { words.iter().map(|w| w.to_lowercase()).collect() };
        for _ in 0..20 {
            if !refused(&lower(&words)) || rng.below(8) == 0 {
                break;
            }
            (words, limit, window) = draw(rng, row);
        }
    }
    if known.too_fast.is_some() && rng.below(8) != 0 {
        // Mostly rates it can hold (at most 1 token per ns of the period).
        if let (Some(tokens), Some(period)) = (position(row, "tokens"), position(row, "period")) {
            let ns = duration_ms(&words[period].to_lowercase()) * 1_000_000;
            words[tokens] = rng.magnitude(ns.min(MAX)).to_string();
        }
    }
    if row.takes_option(Opt::Every) && rng.below(4) != 0 {
        let unit = position(row, "unit").map_or("day", |i| words[i].as_str());
        let calendar = calendar_options(rng, unit);
        words.extend(calendar);
    }
    if row.delay() && rng.below(2) == 0 {
        words.push(rng.pick(&["DELAY", "delay"]).to_string());
        words.push(match rng.below(4) {
            0 => rng.pick(&["0", "0ms"]).to_string(),
            _ => duration(rng).0,
        });
    }
    (words, limit, window)
}

/// RL.QUOTA's calendar options for `unit`, each given or not: values it takes
/// (any zone of the tz database, anchors that clamp, start times in DST gaps) and
/// now and then one it refuses (the same error from both).
fn calendar_options(rng: &mut Rng, unit: &str) -> Vec<String> {
    let zones: Vec<&str> = rl_core::calendar::zone_names().collect();
    let every = match rng.below(8) {
        0 => "0".to_string(),
        1..=3 => (1 + rng.below(3)).to_string(),
        _ => "1".to_string(),
    };
    let on = match (unit.to_ascii_lowercase().as_str(), rng.below(16)) {
        (_, 0) => "32".to_string(),
        ("week", _) => rng.pick(&["mon", "SUN", "wed"]).to_string(),
        ("year", _) => rng.pick(&["02-29", "12-31", "03-08"]).to_string(),
        _ => (1 + rng.below(31)).to_string(),
    };
    let at = match rng.below(16) {
        0 => "24:00".to_string(),
        _ => format!("{:02}:{:02}", rng.below(4), rng.below(60)),
    };
    let tz = match rng.below(16) {
        0 => "Mars/Olympus".to_string(),
        1 => "UTC".to_string(),
        2 => format!("-{:02}:{:02}", rng.below(24), rng.below(60)),
        _ => rng.pick(&zones).to_uppercase(),
    };
    let mut out = Vec::new();
    for (word, value) in [("EVERY", every), ("ON", on), ("AT", at), ("TZ", tz)] {
        if rng.below(2) == 0 {
            out.extend([word.to_string(), value]);
        }
    }
    out
}

/// Whether a command logs one sorted-set member per unit of its cost (RL.SLIDING;
/// not RL.ACQUIRE, one per lease, which takes no cost).
fn per_unit(name: &str) -> bool {
    let takes_cost = table::find(name.as_bytes()).is_some_and(|c| c.takes_option(Opt::Refund));
    command(name).native_type == "zset" && takes_cost
}

/// A native state for the key of `name`, as a recipe for [`SETUP`]: values may
/// hold `@ms+D` (server ms + D, anywhere in the value) or be `@ns+D,NNNNNN` (a ns
/// time: ms + D, then 6 digits).
fn native_state(rng: &mut Rng, name: &str, window_ms: u64) -> Vec<String> {
    let w = window_ms as i64;
    // At least a minute away: no setup key expires during a scenario (see Scenario).
    let offset =
        |rng: &mut Rng| -> i64 { 60_000 + rng.below(window_ms.min(MAX_DURATION_MS) * 2) as i64 };
    let big = |rng: &mut Rng| -> String {
        match rng.below(3) {
            0 => rng.next().to_string(),
            1 => u64::MAX.to_string(),
            _ => (rng.next() % 1000).to_string(),
        }
    };
    let expiry = offset(rng);
    match name {
        "RL.FIXED" | "RL.QUOTA" => {
            let used = match rng.below(3) {
                0 => big(rng),
                _ => rng.below(20).to_string(),
            };
            strings(&["string", &used, &format!("@ms+{expiry}")])
        }
        "RL.GCRA" => {
            let tat = match rng.below(5) {
                0 => u128::MAX.to_string(),
                1 => ((rng.next() as u128) << 64 | rng.next() as u128).to_string(),
                _ => {
                    let d = rng.below(window_ms * 3) as i64 - w;
                    format!("@ns+{d},{:06}", rng.below(1_000_000))
                }
            };
            strings(&["string", &tat, &format!("@ms+{expiry}")])
        }
        "RL.SLIDINGCOUNTER" => {
            let start = match rng.below(3) {
                0 => format!("@ms+{}", -(rng.below(window_ms * 2) as i64)),
                1 => format!("@ms+{}", rng.below(1000)),
                _ => (rng.next() % MAX).to_string(),
            };
            let c = |rng: &mut Rng| -> String {
                if rng.below(4) == 0 {
                    big(rng)
                } else {
                    rng.below(30).to_string()
                }
            };
            let value = format!("{start} {} {}", c(rng), c(rng));
            strings(&["string", &value, &format!("@ms+{expiry}")])
        }
        "RL.PENALTY" => {
            // Times around now (a window open or over, a block on or over, a block
            // ended about max ago), zero, or anywhere; counts and levels small,
            // at 2^53 − 1, or one past it (not a state).
            let time = |rng: &mut Rng| -> String {
                match rng.below(5) {
                    0 => "0".to_string(),
                    1 => (rng.next() % MAX).to_string(),
                    2 => format!("@ms+{}", rng.below(2000) as i64 - 1000),
                    _ => format!("@ms+{}", rng.below(window_ms * 2) as i64 - w),
                }
            };
            let number = |rng: &mut Rng| -> String {
                match rng.below(8) {
                    0 => MAX.to_string(),
                    1 => (MAX + 1).to_string(),
                    2 => (60 + rng.below(10)).to_string(),
                    _ => rng.below(6).to_string(),
                }
            };
            let value = format!(
                "{} {} {} {}",
                number(rng),
                time(rng),
                number(rng),
                time(rng)
            );
            strings(&["string", &value, &format!("@ms+{expiry}")])
        }
        "RL.BUCKET" => {
            let int = match rng.below(4) {
                0 => "123456789012345678901234567890".to_string(),
                1 => big(rng),
                _ => rng.below(50).to_string(),
            };
            let tokens = match rng.below(3) {
                0 => int,
                1 => format!("{int}.{}", rng.below(1_000_000)),
                _ => format!("{int}.{:09}", rng.below(1_000_000_000)),
            };
            // A bucket in debt: down to −(2^53−1) tokens, and past it (an error).
            let tokens = match rng.below(8) {
                0 | 1 => format!("-{tokens}"),
                2 => rng
                    .pick(&[
                        "-9007199254740991",
                        "-9007199254740991.000001",
                        "-9007199254740990.9999999",
                        "-0",
                        "-0.0000001",
                    ])
                    .to_string(),
                _ => tokens,
            };
            let ts = match rng.below(4) {
                0 => (rng.next() % MAX).to_string(),
                1 => format!("@ms+{}", rng.below(5000)),
                _ => format!("@ms+{}", -(rng.below(window_ms * 2) as i64)),
            };
            strings(&[
                "hash",
                "tokens",
                &tokens,
                "ts",
                &ts,
                &format!("@ms+{expiry}"),
            ])
        }
        "RL.SLIDING" | "RL.ACQUIRE" => {
            let mut recipe = strings(&["zset"]);
            for i in 0..1 + rng.below(6) {
                let d = -(rng.below(window_ms * 2) as i64);
                let member = match rng.below(4) {
                    0 => i.to_string(),
                    1 => format!("x{i}"),
                    // Big sequence numbers, and the last ones (the call fails once
                    // none is left).
                    2 => (u64::MAX / 2 - i).to_string(),
                    _ => (u64::MAX - i).to_string(),
                };
                recipe.extend([format!("@ms+{d}"), member]);
            }
            recipe.push(format!("@ms+{}", expiry));
            recipe
        }
        "RL.SHARE" => share_state(rng, window_ms),
        other => panic!("no native state for {other}: add one to native_state"),
    }
}

/// An RL.SHARE budget (rl_core::algorithms::share): 1 to 3 remembered tenants of
/// the names the calls draw, one of them (of two or more) in a closed slot, and
/// sometimes a forgotten one still in the index (for the sweep); TATs around now,
/// zero or far beyond it, the current slot ending around now. Sometimes a record
/// no budget holds: a tenant's weight past 2^53 − 1, an index entry naming no
/// record (the same error from both).
fn share_state(rng: &mut Rng, window_ms: u64) -> Vec<String> {
    let w = window_ms as i64;
    let slot = window_ms.div_ceil(SLOTS).max(1) as i64;
    let tat = |rng: &mut Rng| -> String {
        match rng.below(6) {
            0 => "0".to_string(),
            1 => ((rng.next() as u128) << 64 | rng.next() as u128).to_string(),
            _ => format!(
                "@ns+{},{:06}",
                rng.below(window_ms.min(MAX_DURATION_MS) * 3) as i64 - w,
                rng.below(1_000_000)
            ),
        }
    };
    let mut names: Vec<&str> = IDS.to_vec();
    for i in 0..names.len() {
        let j = i + rng.below((names.len() - i) as u64) as usize;
        names.swap(i, j);
    }
    let remembered = 1 + rng.below(3) as usize;
    let forgotten = usize::from(rng.below(3) == 0);
    let closed = u64::from(remembered > 1 && rng.below(2) == 0);
    let seq = 3 + rng.below(20);
    let end = rng.below(3 * slot as u64) as i64 - 2 * slot;
    let mut fields: Vec<(String, String)> = Vec::new();
    let (mut weight, mut slot_weight, mut closed_weight) = (0u64, 0u64, 0u64);
    for (i, name) in names[..remembered + forgotten].iter().enumerate() {
        let wgt = match rng.below(16) {
            0 => 9_007_199_254_740_992,
            _ => 1 + rng.below(10_000),
        };
        let in_closed = closed == 1 && i == 0;
        let tenant_seq = if i >= remembered {
            seq - closed - 1 - rng.below(2)
        } else if in_closed {
            seq - 1
        } else {
            seq
        };
        if i < remembered {
            weight = weight.saturating_add(wgt);
            if in_closed {
                closed_weight = closed_weight.saturating_add(wgt);
            } else {
                slot_weight = slot_weight.saturating_add(wgt);
            }
        }
        fields.push((
            format!("t:{name}"),
            format!("{} {wgt} {tenant_seq} {i}", tat(rng)),
        ));
        if rng.below(24) != 0 {
            fields.push((format!("i:{i}"), name.to_string()));
        }
    }
    let oldest_end = if closed == 1 {
        let at = format!("@ms+{}", end - slot);
        fields.push((
            format!("s:{}", (seq - 1) % SLOTS),
            format!("{at} {closed_weight} 1"),
        ));
        at
    } else {
        "0".to_string()
    };
    let len = remembered + forgotten;
    let g = format!(
        "{} {} {weight} {remembered} {len} {} {seq} @ms+{end} {slot_weight} {} {closed} {oldest_end}",
        tat(rng),
        tat(rng),
        rng.below(len as u64),
        remembered as u64 - closed,
    );
    fields.push(("g".to_string(), g));
    let mut recipe = strings(&["hash"]);
    for (field, value) in fields {
        recipe.extend([field, value]);
    }
    // At least a minute away, as every setup key's.
    recipe.push(format!(
        "@ms+{}",
        60_000 + rng.below(window_ms.min(MAX_DURATION_MS) * 2)
    ));
    recipe
}

/// KEYS = the two keys; ARGV = a recipe from [`native_state`]: writes it to both.
/// A hash's recipe is its fields and values in turn.
const SETUP: &str = r#"
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local function ms(d) return string.format('%d', now + tonumber(d)) end
local function value(v)
  v = v:gsub('@ns%+(%-?%d+),(%d%d%d%d%d%d)', function(d, ns) return ms(d) .. ns end)
  return (v:gsub('@ms%+(%-?%d+)', ms))
end
for _, key in ipairs(KEYS) do
  redis.call('DEL', key)
  local kind, at = ARGV[1], value(ARGV[#ARGV])
  if kind == 'string' then
    redis.call('SET', key, value(ARGV[2]), 'PXAT', at)
  elseif kind == 'hash' then
    for i = 2, #ARGV - 1, 2 do
      redis.call('HSET', key, ARGV[i], value(ARGV[i + 1]))
    end
    redis.call('PEXPIREAT', key, at)
  elseif kind == 'zset' then
    for i = 2, #ARGV - 1, 2 do
      redis.call('ZADD', key, value(ARGV[i]), ARGV[i + 1])
    end
    redis.call('PEXPIREAT', key, at)
  end
end
return now
"#;

/// KEYS = keys: for each, its type, its whole content and its absolute expiry, read
/// at one instant. A hash kept as a hash table (an RL.SHARE budget) lists its
/// fields in its table's order, which two keys need not share: sorted by field.
const READ: &str = r#"
local out = {}
for _, key in ipairs(KEYS) do
  local kind = redis.call('TYPE', key).ok
  local content = {}
  if kind == 'string' then content = {redis.call('GET', key)}
  elseif kind == 'hash' then
    content = redis.call('HGETALL', key)
    if redis.call('OBJECT', 'ENCODING', key) == 'hashtable' then
      local fields = {}
      for i = 1, #content, 2 do fields[#fields + 1] = {content[i], content[i + 1]} end
      table.sort(fields, function(a, b) return a[1] < b[1] end)
      content = {}
      for _, f in ipairs(fields) do
        content[#content + 1] = f[1]
        content[#content + 1] = f[2]
      end
    end
  elseif kind == 'zset' then content = redis.call('ZRANGE', key, 0, -1, 'WITHSCORES') end
  out[#out + 1] = {kind, content, redis.call('PEXPIRETIME', key)}
end
return out
"#;

/// A reply as text, with the arity error's name made the same for both.
fn shown(v: &Value) -> String {
    match v {
        Value::ServerError(e) => same_names(format!("{} {}", e.code(), e.details().unwrap_or(""))),
        other => format!("{other:?}"),
    }
}

/// The module's and the library's form of one call on keys `a` and `b` (the
/// module's as it is, whatever the backend under test: [`command_of`] would make it
/// the library's).
fn pair(line: &[String], a: &[String], b: &[String]) -> (redis::Cmd, redis::Cmd) {
    let mut module = redis::Cmd::new();
    module.arg(&line[0]).arg(a).arg(&line[1..]);
    let function = function_of(line[0].as_bytes()).expect("an RL command");
    let mut library = redis::Cmd::new();
    library.arg("FCALL").arg(function);
    if line[0] != "RL.ALL" {
        library.arg(1);
    }
    library.arg(b).arg(&line[1..]);
    (module, library)
}

/// One scenario: setups (each written to a module key and a library key), then
/// `calls` (each: the command line without its keys) with the argument prefixes
/// `a` (module) and `b` (library), then the states of `keys`.
struct Scenario<'s> {
    setups: Vec<(String, String, Vec<String>)>,
    calls: &'s [Vec<String>],
    a: &'s [String],
    b: &'s [String],
    keys: (&'s [String], &'s [String]),
    /// A window under a minute: a key may expire while the MULTI runs. On Redis 7.0
    /// the module then still reads it (the transaction's time) while deciding at
    /// the live clock, and the library does not (the script's time): docs/library.md lists
    /// this. Such a scenario is compared only when the whole MULTI ran in one ms.
    strict: bool,
}

/// Runs a scenario in one MULTI: each call's pair between two TIMEs, retried until
/// every pair ran within one millisecond (always, where the server freezes the
/// time in a transaction), then compares replies and states. False when no try
/// fit (a loaded machine on a server without the frozen time): not compared.
fn run(c: &mut Connection, s: Scenario) -> bool {
    let (ka, kb) = s.keys;
    for _ in 0..100 {
        let mut p = redis::pipe();
        p.atomic();
        for key in ka.iter().chain(kb) {
            p.cmd("DEL").arg(key);
        }
        for (x, y, recipe) in &s.setups {
            p.cmd("EVAL").arg(SETUP).arg(2).arg(x).arg(y).arg(recipe);
        }
        for line in s.calls {
            let (m, l) = pair(line, s.a, s.b);
            p.cmd("TIME").add_command(m).add_command(l).cmd("TIME");
        }
        // Both sets in one script: read at one instant (key expiry included).
        p.cmd("EVAL")
            .arg(READ)
            .arg(ka.len() + kb.len())
            .arg(ka)
            .arg(kb);
        let base = ka.len() + kb.len() + s.setups.len();
        let queued = base + 4 * s.calls.len() + 1;
        let raw =
            redis::ConnectionLike::req_packed_commands(c, &p.get_packed_pipeline(), queued + 1, 1)
                .expect("MULTI");
        let Value::Array(v) = &raw[0] else {
            panic!("EXEC replied {raw:?}")
        };
        let t = |x: &Value| -> i64 { ms_of(redis::from_redis_value(x).expect("TIME")) };
        let step = |i: usize| &v[base + 4 * i..base + 4 * i + 4];
        if (0..s.calls.len()).any(|i| t(&step(i)[0]) != t(&step(i)[3])) {
            continue;
        }
        if s.strict && t(&step(0)[0]) != t(&step(s.calls.len() - 1)[3]) {
            continue;
        }
        let setups: Vec<&Vec<String>> = s.setups.iter().map(|(_, _, r)| r).collect();
        for (i, line) in s.calls.iter().enumerate() {
            assert_eq!(
                shown(&step(i)[1]),
                shown(&step(i)[2]),
                "call {i} {line:?} after setup {setups:?}; calls {:?}",
                s.calls
            );
        }
        let Value::Array(states) = &v[v.len() - 1] else {
            panic!("READ replied {:?}", v[v.len() - 1])
        };
        let (sa, sb) = states.split_at(ka.len());
        assert_eq!(sa, sb, "state after {:?} from setup {setups:?}", s.calls);
        return true;
    }
    eprintln!(
        "not compared: no run of {:?} with each call within one ms",
        s.calls
    );
    false
}

/// Most scenarios must have been compared.
fn enough(compared: u64, scenarios: u64) {
    assert!(
        compared * 10 >= scenarios * 9,
        "only {compared} of {scenarios} scenarios ran with each call within one ms"
    );
}

/// The library's one-key functions with a cost, from the command table (RL.ACQUIRE
/// and RL.RELEASE, without, are compared in leases_agree_with_the_module).
fn singles() -> Vec<&'static str> {
    table::COMMANDS
        .iter()
        .filter(|c| c.function.is_some() && matches!(c.keys, Keys::First))
        .filter(|c| c.takes_option(Opt::Cost) && !lacks(c))
        .map(|c| c.name_str())
        .collect()
}

/// RL.ALL's policies, from the command table: (command, word).
fn policies() -> Vec<(&'static str, &'static str)> {
    table::policies()
        .filter(|c| !lacks(c))
        .map(|c| (c.name_str(), c.policy_word()))
        .collect()
}

/// The library's functions, from the command table.
fn with_functions() -> Vec<&'static str> {
    table::COMMANDS
        .iter()
        .filter(|c| c.function.is_some() && !lacks(c))
        .map(|c| c.name_str())
        .collect()
}

/// Whether the library under test does not have the command's function yet (one
/// of the PENDING ones): left out of the comparisons until it does.
fn lacks(c: &table::Command) -> bool {
    c.function.is_some_and(library_source_lacks)
}

fn env(name: &str, default: u64) -> u64 {
    std::env::var(name)
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(default)
}

/// A server with the module and the library.
fn both() -> Server {
    let s = Server::with(Options {
        module: Some(module_path()),
        ..Options::default()
    });
    load_library(&mut s.conn());
    s
}

#[test]
fn every_command_agrees_with_the_module_over_the_full_ranges() {
    let seed = env("RL_SWEEP_SEED", 0x0dd_ba11);
    let scenarios = env("RL_SWEEP_SCENARIOS", 2500);
    let s = both();
    let mut c = s.conn();
    let mut rng = Rng(seed);
    let (a, b) = (strings(&["m"]), strings(&["l"]));
    let mut compared = 0;
    let singles = singles();
    for _ in 0..scenarios {
        let name = *rng.pick(&singles);
        let (mut words, mut limit, mut window) = params(&mut rng, name);
        let mut shortest = window;
        let setup = if rng.below(2) == 0 {
            vec![native_state(&mut rng, name, window)]
        } else {
            vec![]
        };
        let mut calls = Vec::new();
        for _ in 0..1 + rng.below(4) {
            if rng.below(4) == 0 {
                (words, limit, window) = params(&mut rng, name);
                shortest = shortest.min(window);
            }
            let mut line = vec![name.to_string()];
            line.extend(words.iter().cloned());
            line.extend(cheap(amount(&mut rng, limit), per_unit(name), limit));
            calls.push(line);
        }
        let _ = window;
        let setups = setup
            .into_iter()
            .map(|r| (a[0].clone(), b[0].clone(), r))
            .collect();
        compared += u64::from(run(
            &mut c,
            Scenario {
                setups,
                calls: &calls,
                a: &a,
                b: &b,
                keys: (&a, &b),
                strict: shortest < 60_000,
            },
        ));
    }
    enough(compared, scenarios);
}

#[test]
fn rl_all_agrees_with_the_module_over_the_full_ranges() {
    let seed = env("RL_SWEEP_SEED", 0xa11_a11);
    let scenarios = env("RL_SWEEP_SCENARIOS", 2500) / 2;
    let s = both();
    let mut c = s.conn();
    let mut rng = Rng(seed);
    let mut compared = 0;
    let all_policies = policies();
    for _ in 0..scenarios {
        let n = 1 + rng.below(3) as usize;
        let a: Vec<String> = (0..n).map(|i| format!("{{t}}m{i}")).collect();
        let b: Vec<String> = (0..n).map(|i| format!("{{t}}l{i}")).collect();
        let mut setup = Vec::new();
        let mut policies = Vec::new();
        let mut smallest = MAX;
        let mut shortest = u64::MAX;
        let mut sliding = false;
        for i in 0..n {
            let (name, word) = *rng.pick(&all_policies);
            let (words, limit, window) = params(&mut rng, name);
            smallest = smallest.min(limit);
            shortest = shortest.min(window);
            sliding |= per_unit(name);
            if setup.len() == i && rng.below(2) == 0 {
                setup.push(native_state(&mut rng, name, window));
            }
            policies.push(word.to_string());
            policies.extend(words);
        }
        let mut calls = Vec::new();
        for _ in 0..1 + rng.below(3) {
            let mut line = vec!["RL.ALL".to_string(), n.to_string()];
            line.extend(policies.iter().cloned());
            line.extend(cheap(amount(&mut rng, smallest), sliding, MAX));
            calls.push(line);
        }
        // `line` holds numkeys, then the keys go in: the pair() splice puts the
        // keys right after the name, so numkeys moves in front of them here.
        let calls: Vec<Vec<String>> = calls
            .into_iter()
            .map(|mut l| {
                l.remove(1);
                l
            })
            .collect();
        let with_count = |keys: &[String]| -> Vec<String> {
            let mut k = vec![n.to_string()];
            k.extend(keys.iter().cloned());
            k
        };
        let setups = setup
            .into_iter()
            .enumerate()
            .map(|(i, r)| (a[i].clone(), b[i].clone(), r))
            .collect();
        compared += u64::from(run(
            &mut c,
            Scenario {
                setups,
                calls: &calls,
                a: &with_count(&a),
                b: &with_count(&b),
                keys: (&a, &b),
                strict: shortest < 60_000,
            },
        ));
    }
    enough(compared, scenarios);
}

/// Arguments no valid call has: the same error, and no Lua error ever.
#[test]
fn bad_input_gets_the_module_s_error_texts() {
    let s = both();
    let mut c = s.conn();
    let mut pool: Vec<&[u8]> = vec![
        b"0",
        b"1",
        b"5",
        b"-1",
        b"+1",
        b"01",
        b"1.5",
        b"1e3",
        b"",
        b" 1",
        b"abc",
        b"9007199254740991",
        b"9007199254740992",
        b"18446744073709551616",
        b"99999999999999999999999999999999999999999",
        b"1ms",
        b"1MS",
        b"1Ms",
        b"60s",
        b"1m",
        b"1h",
        b"1d",
        b"3650d",
        b"3651d",
        b"315360000000ms",
        b"315360000001ms",
        b"1w",
        b"1mss",
        b"ms",
        b"COST",
        b"cost",
        b"REFUND",
        b"refund",
        b"DELAY",
        b"delay",
        b"DEBIT",
        b"Debit",
        b"0ms",
        b"Cost",
        b"EX",
        b"\xff\xfe",
        b"\x00",
        b"a\r\nb",
        b"FIXED",
        b"acquire",
        b"sliding",
        b"BUCKET",
        b"GCRA",
        b"slidingcounter",
        b"PENALTY",
        b"DEBIT",
        b"2000000",
        b"1000000",
        b"k",
        b"100001",
        b"100000",
        b"\"quoted'\\",
        b"xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx",
    ];
    // Every policy word and option word of the command table's.
    pool.extend(table::policies().map(|c| c.policy_token().to_bytes()));
    pool.extend(Opt::ALL.map(|o| o.word().as_bytes()));
    let mut rng = Rng(env("RL_SWEEP_SEED", 0xbad));
    let setup: Vec<Vec<&str>> = vec![
        vec!["RPUSH", "list", "x"],
        vec!["SET", "text", "abc"],
        vec!["HSET", "hash", "a", "1"],
        // A sorted set RL did not write (a fractional score): refused alike.
        vec!["ZADD", "zfrac", "1.5", "a"],
    ];
    for cmdline in &setup {
        let _: () = command_of(cmdline).query(&mut c).unwrap();
    }
    let keys = ["k", "list", "text", "hash", "zfrac", "absent"];
    let names = with_functions();
    for _ in 0..env("RL_SWEEP_SCENARIOS", 2500) * 2 {
        let name = *rng.pick(&names);
        let mut args: Vec<Vec<u8>> = Vec::new();
        let key = rng.pick(&keys).to_string();
        let n = rng.below(8) as usize;
        for _ in 0..n {
            args.push(rng.pick(&pool).to_vec());
        }
        let mut module = redis::cmd(name);
        let mut library = redis::cmd("FCALL");
        library.arg(function_of(name.as_bytes()).unwrap());
        if matches!(
            table::find(name.as_bytes()).map(|c| c.keys),
            Some(Keys::Counted)
        ) {
            // numkeys 1 or 2 (FCALL's own numkeys errors are documented apart).
            let k = 1 + rng.below(2) as usize;
            module.arg(k).arg(&key);
            library.arg(k).arg(&key);
            if k == 2 {
                module.arg("other");
                library.arg("other");
            }
            if 2 + k + args.len() < 6 {
                // Too short for the module's arity check to be the first error
                // for FCALL too: FCALL's numkeys check may come first.
                continue;
            }
        } else {
            module.arg(&key);
            library.arg(1).arg(&key);
        }
        module.arg(&args);
        library.arg(&args);
        let m = error_text(module.query::<Value>(&mut c));
        let l = error_text(library.query::<Value>(&mut c));
        if let Some(l) = &l {
            assert!(
                !l.contains("internal error") && !l.contains("user_function"),
                "{name} {key} {args:?}: {l}"
            );
        }
        // Calls that pass (allowed or not) ran at different ms: only errors, which do
        // not depend on time, are compared.
        assert_eq!(m, l, "{name} {key} {args:?}");
    }
}

/// An error reply as text (the arity error's name made the same), None for a reply.
fn error_text(r: redis::RedisResult<Value>) -> Option<String> {
    let e = r.err()?;
    let text = format!("{} {}", e.code().unwrap_or("?"), e.detail().unwrap_or(""));
    Some(same_names(text))
}

/// The arity error names the command (module) or the function (library).
fn same_names(mut text: String) -> String {
    for c in table::COMMANDS {
        let Some(function) = c.function else { continue };
        let name = c.name_str().to_lowercase();
        text = text.replace(&format!("'{function}'"), &format!("'{name}'"));
        text = text.replace(&format!("'{}'", c.name_str()), &format!("'{name}'"));
    }
    text
}

#[test]
fn leases_agree_with_the_module() {
    let seed = env("RL_SWEEP_SEED", 0x1ea5e);
    let scenarios = env("RL_SWEEP_SCENARIOS", 2500) / 2;
    let s = both();
    let mut c = s.conn();
    let mut rng = Rng(seed);
    let (a, b) = (strings(&["m"]), strings(&["l"]));
    let ids = IDS;
    let mut compared = 0;
    for _ in 0..scenarios {
        // Leases set up by hand: ends around now, some already over.
        let mut setups = Vec::new();
        if rng.below(2) == 0 {
            let mut recipe = strings(&["zset"]);
            for id in &ids[..1 + rng.below(ids.len() as u64) as usize] {
                let offset = rng.below(4000) as i64 - 1000;
                recipe.extend([format!("@ms+{offset}"), id.to_string()]);
            }
            recipe.push("@ms+100000000".to_string());
            setups.push((a[0].clone(), b[0].clone(), recipe));
        }
        let limit = match rng.below(3) {
            0 => 1 + rng.below(4),
            1 => 1 + rng.below(100_000),
            _ => 100_000,
        };
        // Leases that end within seconds can expire the key while the MULTI runs.
        let mut strict = !setups.is_empty();
        let mut calls = Vec::new();
        for _ in 0..1 + rng.below(6) {
            let id = rng.pick(ids).to_string();
            if rng.below(3) == 0 {
                calls.push(strings(&["RL.RELEASE", &id]));
                continue;
            }
            let ttl = match rng.below(3) {
                0 => 1 + rng.below(3000),
                _ => rng.magnitude(MAX_DURATION_MS),
            };
            strict = strict || ttl < 60_000;
            calls.push(vec![
                "RL.ACQUIRE".to_string(),
                limit.to_string(),
                format!("{ttl}ms"),
                id,
            ]);
        }
        compared += u64::from(run(
            &mut c,
            Scenario {
                setups,
                calls: &calls,
                a: &a,
                b: &b,
                keys: (&a, &b),
                strict,
            },
        ));
    }
    enough(compared, scenarios);
}
