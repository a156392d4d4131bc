//! Calls made at one known server millisecond: a script reads TIME, sets the key up
//! with times relative to that instant (`{+60000}` is 60 s later, `{-D}` D earlier),
//! makes the calls and reads TIME again, and the run is retried until both reads
//! fall in one millisecond, so the calls ran at a known `now`. The module's
//! commands run inside the script; the library's FCALLs cannot, so they run in the
//! same MULTI between two runs of the script (the second keeps the key and reads it
//! back). Each test file's script sets up and reads back its kind of key.

use super::backend::is_library;
use super::helpers::command_of;
use redis::{cmd, Connection, FromRedisValue, Value};

/// A script for [`at_one_instant`]: reads TIME (t0) and defines `at(s)`, which
/// replaces each `{+D}` / `{-D}` in s with t0 ± D ms; runs `setup`, Lua that sets
/// the key up from ARGV and sets `first`, the index in ARGV of the calls; runs the
/// calls (each ended by `|`); runs `read`, Lua that sets `state` to what it reads
/// of the key; returns t0, TIME again, the replies, `state` and PEXPIRETIME.
pub fn script(setup: &str, read: &str) -> String {
    format!(
        r#"
local function ms()
  local t = redis.call('TIME')
  return tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
end
local key = KEYS[1]
local t0 = ms()
local function at(s)
  return (s:gsub('{{([+-]%d+)}}', function(d) return string.format('%d', t0 + tonumber(d)) end))
end
local first
{setup}
local replies, call = {{}}, {{}}
for j = first, #ARGV do
  if ARGV[j] == '|' then
    replies[#replies + 1] = redis.call(unpack(call))
    call = {{}}
  else
    call[#call + 1] = ARGV[j]
  end
end
local t1 = ms()
local state
{read}
return {{t0, t1, replies, state, redis.call('PEXPIRETIME', key)}}
"#
    )
}

/// The calls' replies, at `now`, and what the script read back after them.
#[derive(Debug)]
pub struct Instant<S> {
    pub now: i64,
    pub replies: Vec<Value>,
    /// The key after the calls, as the script reads it.
    pub state: S,
    pub pexpiretime: i64,
}

impl<S> Instant<S> {
    /// Reply `i`: RL's five integers.
    pub fn reply(&self, i: usize) -> [i64; 5] {
        let v: Vec<i64> = redis::from_redis_value(&self.replies[i])
            .unwrap_or_else(|e| panic!("reply {i} {:?}: {e}", self.replies[i]));
        v.try_into()
            .unwrap_or_else(|v| panic!("reply {i} is not five integers: {v:?}"))
    }

    /// An RL.ALL reply: the combined decision, then each key's.
    pub fn all_reply(&self, i: usize) -> Vec<[i64; 5]> {
        let v: Vec<Vec<i64>> = redis::from_redis_value(&self.replies[i])
            .unwrap_or_else(|e| panic!("reply {i} {:?}: {e}", self.replies[i]));
        v.into_iter()
            .map(|r| r.try_into().expect("five integers"))
            .collect()
    }

    /// `template` with its `{±D}` made absolute at this instant.
    pub fn at(&self, template: &str) -> String {
        absolute(template, self.now)
    }
}

/// `template` with each `{+D}` / `{-D}` replaced by now ± D.
pub fn absolute(template: &str, now: i64) -> String {
    let mut out = String::new();
    let mut rest = template;
    while let Some(open) = rest.find('{') {
        let close = rest[open..].find('}').expect("a closing brace") + open;
        let d: i64 = rest[open + 1..close].parse().expect("{+D} or {-D}");
        out.push_str(&rest[..open]);
        out.push_str(&(now + d).to_string());
        rest = &rest[close + 1..];
    }
    out.push_str(rest);
    out
}

/// What `script` returns: t0, t1, the replies, the key read back, PEXPIRETIME.
type Read<S> = (i64, i64, Value, S, i64);

/// Runs `calls` on `key` at one server millisecond after `script` set the key up
/// from `setup` (its ARGV before the calls; `keep` keeps the key).
pub fn at_one_instant<S: FromRedisValue>(
    c: &mut Connection,
    script: &str,
    key: &str,
    setup: &[String],
    calls: &[Vec<String>],
) -> Instant<S> {
    for _ in 0..200 {
        let instant = if is_library() {
            in_multi(c, script, key, setup, calls)
        } else {
            in_a_script(c, script, key, setup, calls)
        };
        if let Some(i) = instant {
            return i;
        }
    }
    panic!("{calls:?}: no run within one millisecond in 200 tries");
}

/// The script with the calls in it (the module's commands).
fn in_a_script<S: FromRedisValue>(
    c: &mut Connection,
    script: &str,
    key: &str,
    setup: &[String],
    calls: &[Vec<String>],
) -> Option<Instant<S>> {
    let mut command = cmd("EVAL");
    command.arg(script).arg(1).arg(key).arg(setup);
    for call in calls {
        command.arg(call).arg("|");
    }
    let (t0, t1, replies, state, pexpiretime): (i64, i64, Vec<Value>, S, i64) = command
        .query(c)
        .unwrap_or_else(|e| panic!("{calls:?} in a script: {e}"));
    (t0 == t1).then_some(Instant {
        now: t0,
        replies,
        state,
        pexpiretime,
    })
}

/// For the library, whose FCALL a script cannot make: the script sets the key up,
/// the calls follow in the same MULTI, and the script runs again (key kept) to read
/// TIME, the key and its expiry.
fn in_multi<S: FromRedisValue>(
    c: &mut Connection,
    script: &str,
    key: &str,
    setup: &[String],
    calls: &[Vec<String>],
) -> Option<Instant<S>> {
    let mut p = redis::pipe();
    p.atomic();
    p.cmd("EVAL").arg(script).arg(1).arg(key).arg(setup);
    for call in calls {
        p.add_command(command_of(call));
    }
    p.cmd("EVAL").arg(script).arg(1).arg(key).arg("keep");
    let mut v: Vec<Value> = p
        .query(c)
        .unwrap_or_else(|e| panic!("{calls:?} in a MULTI: {e}"));
    let (t0, ..): Read<Value> = redis::from_redis_value(&v[0]).expect("setup");
    let (_, t1, _, state, pexpiretime): Read<S> =
        redis::from_redis_value(&v[v.len() - 1]).expect("read-back");
    v.pop();
    v.remove(0);
    (t0 == t1).then_some(Instant {
        now: t0,
        replies: v,
        state,
        pexpiretime,
    })
}
