//! Calls and observations the tests share: RL replies, errors, key snapshots, the
//! server clock, INFO fields, and polling with a deadline.

use std::time::{Duration, Instant};

use redis::{cmd, Connection, Value};

use super::backend::translate;

/// How long a test waits for the server clock or a key to change.
pub const PATIENCE: Duration = Duration::from_secs(20);

/// Polls `f` until it returns Some, or panics after `limit` with `what`.
pub fn wait_for<T>(limit: Duration, what: &str, mut f: impl FnMut() -> Option<T>) -> T {
    let deadline = Instant::now() + limit;
    loop {
        if let Some(v) = f() {
            return v;
        }
        if Instant::now() > deadline {
            panic!("timed out after {limit:?} waiting for {what}");
        }
        std::thread::sleep(Duration::from_millis(10));
    }
}

/// The five reply fields of an RL call.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Reply {
    pub allowed: i64,
    pub limit: i64,
    pub remaining: i64,
    pub retry_after: i64,
    pub reset_after: i64,
}

impl Reply {
    /// The reply from its five integers, in order.
    pub fn of(v: &[i64]) -> Reply {
        Reply {
            allowed: v[0],
            limit: v[1],
            remaining: v[2],
            retry_after: v[3],
            reset_after: v[4],
        }
    }
}

/// Runs an RL command and returns its reply, panicking on an error reply.
pub fn rl(c: &mut Connection, args: &[&str]) -> Reply {
    let v: Vec<i64> = try_rl(c, args).unwrap_or_else(|e| panic!("{args:?}: {e}"));
    assert_eq!(v.len(), 5, "{args:?} replied {v:?}");
    Reply::of(&v)
}

/// Runs an RL command and returns the raw integers or the error.
pub fn try_rl(c: &mut Connection, args: &[&str]) -> redis::RedisResult<Vec<i64>> {
    command_of(args).query(c)
}

/// A command from its name and arguments.
pub fn command_of(args: &[impl redis::ToRedisArgs]) -> redis::Cmd {
    let mut line = Vec::new();
    for a in args {
        line.extend(a.to_redis_args());
    }
    let mut command = redis::Cmd::new();
    for a in translate(line) {
        command.arg(a);
    }
    command
}

/// The error reply of a command that must fail, as "CODE message".
pub fn error_of(c: &mut Connection, args: &[&[u8]]) -> String {
    match command_of(args).query::<Value>(c) {
        Ok(v) => panic!("{args:?} should fail but replied {v:?}"),
        Err(e) => {
            let code = e.code().unwrap_or("?").to_string();
            let detail = e.detail().unwrap_or("").to_string();
            format!("{code} {detail}").trim().to_string()
        }
    }
}

/// A key's full serialized value and absolute expiry: equal means untouched.
pub fn snapshot(c: &mut Connection, key: &[u8]) -> (Option<Vec<u8>>, i64) {
    let mut p = redis::pipe();
    comparable_dump(&mut p, key);
    p.cmd("PEXPIRETIME").arg(key);
    p.query(c).expect("DUMP and PEXPIRETIME")
}

/// KEYS[1]'s DUMP as equal data compares equal: the DUMP itself, except for a hash
/// kept as a hash table (past the listpack limits: an RL.SHARE budget, whose `g`
/// is longer than hash-max-listpack-value), whose fields DUMP writes in an order
/// that differs from one server process to another (each seeds its hash function
/// at random) and, within one, as the table is rehashed (a lookup moves it on).
/// That one is the word `hashtable`, then its fields and values sorted by field,
/// each as `<length>:<bytes>`. Nil for an absent key. A read-only script: it runs
/// on read-only replicas too.
pub const COMPARABLE_DUMP: &str = r#"#!lua flags=no-writes
local k = KEYS[1]
if redis.call('TYPE', k).ok == 'hash' and redis.call('OBJECT', 'ENCODING', k) == 'hashtable' then
  local h, fields = redis.call('HGETALL', k), {}
  for i = 1, #h, 2 do fields[#fields + 1] = {h[i], h[i + 1]} end
  table.sort(fields, function(a, b) return a[1] < b[1] end)
  local out = {'hashtable'}
  for _, f in ipairs(fields) do
    out[#out + 1] = #f[1] .. ':' .. f[1] .. #f[2] .. ':' .. f[2]
  end
  return table.concat(out)
end
return redis.call('DUMP', k)
"#;

/// Adds to a pipeline the read of `key` that [`snapshot`] compares
/// ([`COMPARABLE_DUMP`]): an optional bulk string, as DUMP's.
pub fn comparable_dump(p: &mut redis::Pipeline, key: impl redis::ToRedisArgs) {
    p.cmd("EVAL").arg(COMPARABLE_DUMP).arg(1).arg(key);
}

/// [`COMPARABLE_DUMP`] of `key` as one command line (for the tests that build
/// their calls as words).
pub fn comparable_dump_line(key: &str) -> Vec<String> {
    vec![
        "EVAL".to_string(),
        COMPARABLE_DUMP.to_string(),
        "1".to_string(),
        key.to_string(),
    ]
}

/// The server's clock in ms, from TIME.
pub fn server_ms(c: &mut Connection) -> i64 {
    let (s, us): (i64, i64) = cmd("TIME").query(c).expect("TIME");
    s * 1000 + us / 1000
}

/// Waits until the server clock is just past a multiple of `window_ms`, with at
/// least `margin_ms` left in that window, so a short test runs inside one window.
pub fn align_to_window(c: &mut Connection, window_ms: i64, margin_ms: i64) -> i64 {
    wait_for(
        Duration::from_secs(window_ms as u64 / 1000 * 3 + 10),
        "window start",
        || {
            let now = server_ms(c);
            (window_ms - now % window_ms >= margin_ms).then_some(now)
        },
    )
}

/// A TIME reply in ms.
pub fn ms_of((s, us): (i64, i64)) -> i64 {
    s * 1000 + us / 1000
}

/// Polls the server clock until it reaches `t`; returns the time read.
pub fn wait_until(c: &mut Connection, t: i64) -> i64 {
    wait_for(PATIENCE, "the server clock", || {
        let now = server_ms(c);
        (now >= t).then_some(now)
    })
}

/// `MEMORY USAGE key` in bytes.
pub fn usage(c: &mut Connection, key: &str) -> i64 {
    cmd("MEMORY")
        .arg("USAGE")
        .arg(key)
        .query(c)
        .expect("MEMORY USAGE")
}

pub fn exists(c: &mut Connection, key: impl AsRef<[u8]>) -> bool {
    cmd("EXISTS")
        .arg(key.as_ref())
        .query::<i64>(c)
        .expect("EXISTS")
        == 1
}

/// A key's absolute expiry in ms (-1 without one, -2 when absent).
pub fn pexpiretime(c: &mut Connection, key: impl AsRef<[u8]>) -> i64 {
    cmd("PEXPIRETIME")
        .arg(key.as_ref())
        .query(c)
        .expect("PEXPIRETIME")
}

/// CONFIG SET `name` `value`, which must succeed.
pub fn config_set(c: &mut Connection, name: &str, value: impl redis::ToRedisArgs) {
    let _: () = cmd("CONFIG")
        .arg("SET")
        .arg(name)
        .arg(value)
        .query(c)
        .unwrap_or_else(|e| panic!("CONFIG SET {name}: {e}"));
}

/// The value of field `name` in INFO `section`, or None if the server did not
/// answer or has no such field.
pub fn try_info_str(c: &mut Connection, section: &str, name: &str) -> Option<String> {
    let info: String = cmd("INFO").arg(section).query(c).ok()?;
    info.lines()
        .find_map(|l| l.strip_prefix(name)?.strip_prefix(':'))
        .map(|v| v.trim().to_string())
}

/// The value of field `name` in INFO `section`, which must be there.
pub fn info_str(c: &mut Connection, section: &str, name: &str) -> String {
    let info: String = cmd("INFO").arg(section).query(c).expect("INFO");
    info.lines()
        .find_map(|l| l.strip_prefix(name)?.strip_prefix(':'))
        .map(|v| v.trim().to_string())
        .unwrap_or_else(|| panic!("no {name} in INFO {section}:\n{info}"))
}

/// An integer field of an INFO section, which must be there.
pub fn info_field(c: &mut Connection, section: &str, name: &str) -> i64 {
    let v = info_str(c, section, name);
    v.parse()
        .unwrap_or_else(|e| panic!("INFO {section} {name}:{v} is not an integer: {e}"))
}

/// One RL call observed atomically (inside MULTI): the key's content as read by
/// `content` (e.g. HGETALL or ZRANGE … WITHSCORES), its DUMP and PEXPIRETIME before
/// and after, and the server time just before and just after the call.
pub struct Observed<S> {
    pub reply: Reply,
    /// Bounds on the server time the call read.
    pub lo: i64,
    pub hi: i64,
    pub before: S,
    pub after: S,
    /// Whether DUMP or PEXPIRETIME changed.
    pub wrote: bool,
    /// PEXPIRETIME after the call.
    pub expires_at: i64,
}

pub fn observe<S: redis::FromRedisValue>(
    c: &mut Connection,
    args: &[String],
    content: fn(&mut redis::Pipeline, &str),
) -> Observed<S> {
    let key = args[1].as_str();
    let mut p = redis::pipe();
    p.atomic();
    let state = |p: &mut redis::Pipeline| {
        content(p, key);
        p.cmd("DUMP").arg(key).cmd("PEXPIRETIME").arg(key);
    };
    state(&mut p);
    p.cmd("TIME").add_command(command_of(args)).cmd("TIME");
    state(&mut p);
    #[allow(clippy::type_complexity)]
    let (before, dump_before, at_before, t0, raw, t1, after, dump_after, at_after): (
        S,
        Option<Vec<u8>>,
        i64,
        (i64, i64),
        Vec<i64>,
        (i64, i64),
        S,
        Option<Vec<u8>>,
        i64,
    ) = p
        .query(c)
        .unwrap_or_else(|e| panic!("{args:?} in MULTI: {e}"));
    assert_eq!(raw.len(), 5, "{args:?} replied {raw:?}");
    Observed {
        reply: Reply::of(&raw),
        lo: ms_of(t0),
        hi: ms_of(t1),
        before,
        after,
        wrote: (dump_after, at_after) != (dump_before, at_before),
        expires_at: at_after,
    }
}

/// `ver` of the module `rl` in MODULE LIST (major * 10000 + minor * 100 + patch), or
/// None when it is not loaded.
pub fn module_version(c: &mut Connection) -> Option<i64> {
    let list: Value = cmd("MODULE").arg("LIST").query(c).expect("MODULE LIST");
    let Value::Array(modules) = list else {
        panic!("MODULE LIST replied {list:?}");
    };
    // Each module is a flat name/value array (RESP2) or a map (RESP3).
    let pairs = |m: &Value| -> Vec<(Value, Value)> {
        match m {
            Value::Map(pairs) => pairs.clone(),
            Value::Array(items) => items
                .chunks(2)
                .filter(|p| p.len() == 2)
                .map(|p| (p[0].clone(), p[1].clone()))
                .collect(),
            other => panic!("a MODULE LIST entry {other:?}"),
        }
    };
    let is = |v: &Value, s: &str| matches!(v, Value::BulkString(b) if b == s.as_bytes());
    modules.iter().find_map(|m| {
        let pairs = pairs(m);
        pairs
            .iter()
            .any(|(k, v)| is(k, "name") && is(v, "rl"))
            .then(|| {
                pairs
                    .iter()
                    .find_map(|(k, v)| match v {
                        Value::Int(n) if is(k, "ver") => Some(*n),
                        _ => None,
                    })
                    .expect("MODULE LIST: rl without ver")
            })
    })
}

/// Cargo.toml's version as MODULE LIST shows it: 0.2.0 → 200.
pub fn cargo_version_number() -> i64 {
    env!("CARGO_PKG_VERSION")
        .split('.')
        .map(|p| p.parse::<i64>().expect("a numeric version part"))
        .fold(0, |n, p| n * 100 + p)
}
