//! [`Keyspace::command`]: the commands `functions/rl.lua` sends, with Redis 7.0's
//! replies and error lines, and its order of checks (arity, then syntax and
//! numbers, then the key's type), since which error wins is part of the reply.

use std::ops::Bound;

use super::number::{c_str, format_g17, parse_bound, parse_i64, parse_score};
use super::zset::{Entry, Zset};
use super::{Keyspace, Slot, Stored, Value, WrongType, WRONGTYPE};

const SYNTAX: &str = "ERR syntax error";
const NOT_INTEGER: &str = "ERR value is not an integer or out of range";
const NOT_FLOAT: &str = "ERR value is not a valid float";
const RANGE_NOT_FLOAT: &str = "ERR min or max is not a float";

/// A command of the table: its name as Redis reports it (`fullname`), its arity
/// (n: exactly n arguments with the name; -n: at least n) and whether it writes
/// (a script flagged `no-writes` may not send it).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct CommandInfo {
    pub name: &'static str,
    pub arity: i32,
    pub write: bool,
}

impl CommandInfo {
    /// Whether `argc` arguments (the name included) fit the arity.
    pub fn arity_ok(&self, argc: usize) -> bool {
        let argc = i64::try_from(argc).unwrap_or(i64::MAX);
        let arity = i64::from(self.arity);
        if arity >= 0 {
            argc == arity
        } else {
            argc >= -arity
        }
    }
}

const fn cmd(name: &'static str, arity: i32, write: bool) -> CommandInfo {
    CommandInfo { name, arity, write }
}

/// Redis 7.0's arity and write flag for each command modelled.
const COMMANDS: &[CommandInfo] = &[
    cmd("type", 2, false),
    cmd("exists", -2, false),
    cmd("get", 2, false),
    cmd("set", -3, true),
    cmd("del", -2, true),
    cmd("pexpireat", -3, true),
    cmd("pexpiretime", 2, false),
    cmd("pttl", 2, false),
    cmd("persist", 2, true),
    cmd("hset", -4, true),
    cmd("hdel", -3, true),
    cmd("hget", 3, false),
    cmd("hmget", -3, false),
    cmd("hgetall", 2, false),
    cmd("zadd", -4, true),
    cmd("zcard", 2, false),
    cmd("zscore", 3, false),
    cmd("zmscore", -3, false),
    cmd("zcount", 4, false),
    cmd("zrange", -4, false),
    cmd("zrevrange", -4, false),
    cmd("zrangebyscore", -4, false),
    cmd("zrem", -3, true),
    cmd("zremrangebyscore", 4, true),
    cmd("time", 1, false),
];

/// The command a name denotes, case-insensitively (the whole name: Redis's
/// command table compares every byte).
pub fn lookup_command(name: &[u8]) -> Option<&'static CommandInfo> {
    COMMANDS
        .iter()
        .find(|c| c.name.as_bytes().eq_ignore_ascii_case(name))
}

/// An error line from bytes a client sent: lossy UTF-8, CR and LF as spaces (as
/// `addReplyErrorFormat` maps them, so the reply stays one line).
fn error_line(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes)
        .chars()
        .map(|c| if c == '\r' || c == '\n' { ' ' } else { c })
        .collect()
}

/// The client's "unknown command" error, with the first arguments quoted as
/// `processCommand` does (`%.128s`, then `'%.*s' ` while under 128 bytes).
fn unknown_command(argv: &[&[u8]]) -> String {
    let name = argv.first().map(|n| c_str(n)).unwrap_or_default();
    let mut line = b"ERR unknown command '".to_vec();
    line.extend_from_slice(&name[..name.len().min(128)]);
    line.extend_from_slice(b"', with args beginning with: ");
    let mut args = Vec::new();
    for arg in argv.iter().skip(1) {
        if args.len() >= 128 {
            break;
        }
        let arg = c_str(arg);
        let room = 128 - args.len();
        args.push(b'\'');
        args.extend_from_slice(&arg[..arg.len().min(room)]);
        args.extend_from_slice(b"' ");
    }
    line.extend_from_slice(&args);
    error_line(&line)
}

fn wrong_type(_: WrongType) -> String {
    WRONGTYPE.to_string()
}

fn int_arg(arg: &[u8]) -> Result<i64, String> {
    parse_i64(arg).ok_or_else(|| NOT_INTEGER.to_string())
}

/// An option word, as `strcasecmp` compares it (up to a NUL).
fn is(arg: &[u8], word: &str) -> bool {
    c_str(arg).eq_ignore_ascii_case(word.as_bytes())
}

fn bound(arg: &[u8]) -> Result<Bound<f64>, String> {
    match parse_bound(arg) {
        Some((v, true)) => Ok(Bound::Excluded(v)),
        Some((v, false)) => Ok(Bound::Included(v)),
        None => Err(RANGE_NOT_FLOAT.to_string()),
    }
}

fn bulk_score(score: f64) -> Value {
    Value::Bulk(format_g17(score).into_bytes())
}

fn int(n: usize) -> Value {
    Value::Int(i64::try_from(n).unwrap_or(i64::MAX))
}

/// Members (and with `scores`, each followed by its score), as RESP2 replies.
fn entries<'a>(list: impl Iterator<Item = &'a Entry>, scores: bool) -> Value {
    let mut out = Vec::new();
    for e in list {
        out.push(Value::Bulk(e.member.clone()));
        if scores {
            out.push(bulk_score(e.score));
        }
    }
    Value::Array(out)
}

/// SET's expiry options.
#[derive(Clone, Copy, PartialEq, Eq)]
enum ExpireArg {
    Ex,
    Px,
    ExAt,
    PxAt,
}

impl ExpireArg {
    fn parse(opt: &[u8]) -> Option<Self> {
        [
            ("ex", Self::Ex),
            ("px", Self::Px),
            ("exat", Self::ExAt),
            ("pxat", Self::PxAt),
        ]
        .into_iter()
        .find(|(word, _)| is(opt, word))
        .map(|(_, e)| e)
    }

    /// `getExpireMillisecondsOrReply`: the absolute expiry in ms.
    fn at(self, arg: &[u8], now: i64) -> Result<i64, String> {
        let invalid = || "ERR invalid expire time in 'set' command".to_string();
        let n = int_arg(arg)?;
        let seconds = matches!(self, Self::Ex | Self::ExAt);
        if n <= 0 || (seconds && n > i64::MAX / 1000) {
            return Err(invalid());
        }
        let ms = if seconds { n * 1000 } else { n };
        let at = match self {
            Self::Ex | Self::Px => ms.checked_add(now).ok_or_else(invalid)?,
            Self::ExAt | Self::PxAt => ms,
        };
        if at <= 0 {
            return Err(invalid());
        }
        Ok(at)
    }
}

/// The rank or score form of the ZRANGE family.
#[derive(Clone, Copy, PartialEq, Eq)]
enum RangeBy {
    Rank,
    Score,
}

impl Keyspace {
    /// Runs one command at `now` (ms) and answers as Redis 7.0 answers a client:
    /// the reply, or the full error line (`WRONGTYPE …`, `ERR …`). `argv[0]` is the
    /// command name, in any case.
    pub fn command(&mut self, now: i64, argv: &[&[u8]]) -> Result<Value, String> {
        let info = argv
            .first()
            .and_then(|name| lookup_command(name))
            .ok_or_else(|| unknown_command(argv))?;
        if !info.arity_ok(argv.len()) {
            return Err(format!(
                "ERR wrong number of arguments for '{}' command",
                info.name
            ));
        }
        let key = argv[1..].first().copied().unwrap_or_default();
        match info.name {
            "type" => Ok(Value::Status(self.type_name(key, now).to_string())),
            "exists" => Ok(int(argv[1..]
                .iter()
                .filter(|k| self.get(k, now).is_some())
                .count())),
            "get" => self.get_cmd(key, now),
            "set" => self.set_cmd(argv, now),
            "del" => Ok(int(argv[1..]
                .iter()
                .filter(|k| self.delete(k, now))
                .count())),
            "pexpireat" => self.pexpireat(argv, now),
            "pexpiretime" => Ok(self.ttl(key, now, |at| at)),
            "pttl" => Ok(self.ttl(key, now, |at| at.saturating_sub(now))),
            "persist" => {
                let had = self.get_mut(key, now).and_then(|s| s.expires_at.take());
                Ok(Value::Int(i64::from(had.is_some())))
            }
            "hset" => self.hset(argv, now),
            "hdel" => {
                self.hash(key, now).map_err(wrong_type)?;
                let mut removed = 0;
                for field in &argv[2..] {
                    removed += usize::from(self.hash_del(key, field, now).map_err(wrong_type)?);
                }
                Ok(int(removed))
            }
            "hget" => {
                let v = self.hash_get(key, argv[2], now).map_err(wrong_type)?;
                Ok(v.map_or(Value::Nil, |v| Value::Bulk(v.to_vec())))
            }
            "hmget" => self.hmget(argv, now),
            "hgetall" => {
                let fields = self.hash_fields(key, now).map_err(wrong_type)?;
                let flat = fields
                    .into_iter()
                    .flat_map(|(f, v)| [Value::Bulk(f.to_vec()), Value::Bulk(v.to_vec())]);
                Ok(Value::Array(flat.collect()))
            }
            "zadd" => self.zadd(argv, now),
            "zcard" => {
                let z = self.zset(key, now).map_err(wrong_type)?;
                Ok(int(z.map_or(0, Zset::len)))
            }
            "zscore" => {
                let s = self.zset_score(key, argv[2], now).map_err(wrong_type)?;
                Ok(s.map_or(Value::Nil, bulk_score))
            }
            "zmscore" => {
                let z = self.zset(key, now).map_err(wrong_type)?;
                let scores = argv[2..]
                    .iter()
                    .map(|m| z.and_then(|z| z.score(m)).map_or(Value::Nil, bulk_score));
                Ok(Value::Array(scores.collect()))
            }
            "zcount" => {
                let (min, max) = (bound(argv[2])?, bound(argv[3])?);
                let z = self.zset(key, now).map_err(wrong_type)?;
                Ok(int(z.map_or(0, |z| z.by_score(min, max).count())))
            }
            "zrange" => self.zrange(argv, now, None, None),
            "zrevrange" => self.zrange(argv, now, Some(RangeBy::Rank), Some(true)),
            "zrangebyscore" => self.zrange(argv, now, Some(RangeBy::Score), Some(false)),
            "zrem" => self.zrem(argv, now),
            "zremrangebyscore" => self.zremrangebyscore(argv, now),
            "time" => {
                let (secs, micros) = (now.div_euclid(1000), now.rem_euclid(1000) * 1000);
                Ok(Value::Array(vec![
                    Value::Bulk(secs.to_string().into_bytes()),
                    Value::Bulk(micros.to_string().into_bytes()),
                ]))
            }
            _ => Err(unknown_command(argv)),
        }
    }

    fn type_name(&self, key: &[u8], now: i64) -> &'static str {
        match self.get(key, now).map(|slot| &slot.value) {
            None => "none",
            Some(Stored::String(_)) => "string",
            Some(Stored::Hash(_)) => "hash",
            Some(Stored::Zset(_)) => "zset",
        }
    }

    fn get_cmd(&self, key: &[u8], now: i64) -> Result<Value, String> {
        match self.get(key, now).map(|slot| &slot.value) {
            None => Ok(Value::Nil),
            Some(Stored::String(v)) => Ok(Value::Bulk(v.clone())),
            Some(_) => Err(WRONGTYPE.to_string()),
        }
    }

    /// SET key value [NX|XX] [GET] [EX s|PX ms|EXAT s|PXAT ms|KEEPTTL].
    fn set_cmd(&mut self, argv: &[&[u8]], now: i64) -> Result<Value, String> {
        let (key, value) = (argv[1], argv[2]);
        let (mut nx, mut xx, mut get, mut keepttl) = (false, false, false, false);
        let mut expire: Option<(ExpireArg, &[u8])> = None;
        let mut j = 3;
        while j < argv.len() {
            let opt = argv[j];
            let next = argv.get(j + 1).copied();
            let unit = ExpireArg::parse(opt);
            if is(opt, "nx") && !xx {
                nx = true;
            } else if is(opt, "xx") && !nx {
                xx = true;
            } else if is(opt, "get") {
                get = true;
            } else if is(opt, "keepttl") && expire.is_none() {
                keepttl = true;
            } else if let (Some(unit), Some(arg), false) = (unit, next, keepttl) {
                // The same option again replaces the value; another one is an error.
                if expire.is_some_and(|(u, _)| u != unit) {
                    return Err(SYNTAX.to_string());
                }
                expire = Some((unit, arg));
                j += 1;
            } else {
                return Err(SYNTAX.to_string());
            }
            j += 1;
        }
        let expires_at = match expire {
            Some((unit, arg)) => Some(unit.at(arg, now)?),
            None => None,
        };
        let old = if get {
            self.get_cmd(key, now)?
        } else {
            Value::Nil
        };
        let found = self.get_mut(key, now).map(|slot| slot.expires_at);
        if (nx && found.is_some()) || (xx && found.is_none()) {
            return Ok(old);
        }
        let kept = if keepttl { found.flatten() } else { None };
        self.set_string(key, value, expires_at.or(kept));
        Ok(if get {
            old
        } else {
            Value::Status("OK".to_string())
        })
    }

    /// PEXPIREAT key ms [NX|XX|GT|LT]; an expiry at or before `now` deletes.
    fn pexpireat(&mut self, argv: &[&[u8]], now: i64) -> Result<Value, String> {
        let (mut nx, mut xx, mut gt, mut lt) = (false, false, false, false);
        for opt in &argv[3..] {
            match () {
                _ if is(opt, "nx") => nx = true,
                _ if is(opt, "xx") => xx = true,
                _ if is(opt, "gt") => gt = true,
                _ if is(opt, "lt") => lt = true,
                _ => {
                    let mut line = b"ERR Unsupported option ".to_vec();
                    line.extend_from_slice(c_str(opt));
                    return Err(error_line(&line));
                }
            }
        }
        if nx && (xx || gt || lt) {
            return Err(
                "ERR NX and XX, GT or LT options at the same time are not compatible".into(),
            );
        }
        if gt && lt {
            return Err("ERR GT and LT options at the same time are not compatible".into());
        }
        let when = int_arg(argv[2])?;
        let key = argv[1];
        let Some(slot) = self.get_mut(key, now) else {
            return Ok(Value::Int(0));
        };
        let current = slot.expires_at;
        let refused = (nx && current.is_some())
            || (xx && current.is_none())
            || (gt && current.is_none_or(|c| when <= c))
            || (lt && current.is_some_and(|c| when >= c));
        if refused {
            return Ok(Value::Int(0));
        }
        if when <= now {
            self.keys.remove(key);
        } else {
            slot.expires_at = Some(when);
        }
        Ok(Value::Int(1))
    }

    /// PTTL and PEXPIRETIME: -2 for no key, -1 for no expiry, else `f(expiry)`
    /// floored at 0.
    fn ttl(&self, key: &[u8], now: i64, f: impl Fn(i64) -> i64) -> Value {
        match self.get(key, now) {
            None => Value::Int(-2),
            Some(Slot {
                expires_at: None, ..
            }) => Value::Int(-1),
            Some(Slot {
                expires_at: Some(at),
                ..
            }) => Value::Int(f(*at).max(0)),
        }
    }

    fn hset(&mut self, argv: &[&[u8]], now: i64) -> Result<Value, String> {
        if argv.len() % 2 == 1 {
            return Err("ERR wrong number of arguments for 'hset' command".to_string());
        }
        let key = argv[1];
        self.hash_mut_or_create(key, now).map_err(wrong_type)?;
        let mut added = 0;
        for pair in argv[2..].chunks_exact(2) {
            added += usize::from(
                self.hash_set(key, pair[0], pair[1], now)
                    .map_err(wrong_type)?,
            );
        }
        Ok(int(added))
    }

    fn hmget(&self, argv: &[&[u8]], now: i64) -> Result<Value, String> {
        let mut out = Vec::with_capacity(argv.len() - 2);
        for field in &argv[2..] {
            let v = self.hash_get(argv[1], field, now).map_err(wrong_type)?;
            out.push(v.map_or(Value::Nil, |v| Value::Bulk(v.to_vec())));
        }
        Ok(Value::Array(out))
    }

    /// ZADD key [NX|XX] [GT|LT] [CH] [INCR] score member [score member …]
    /// (`zaddGenericCommand` and `zsetAdd`).
    fn zadd(&mut self, argv: &[&[u8]], now: i64) -> Result<Value, String> {
        let (mut nx, mut xx, mut ch, mut incr, mut gt, mut lt) =
            (false, false, false, false, false, false);
        let mut i = 2;
        while let Some(opt) = argv.get(i) {
            match () {
                _ if is(opt, "nx") => nx = true,
                _ if is(opt, "xx") => xx = true,
                _ if is(opt, "ch") => ch = true,
                _ if is(opt, "incr") => incr = true,
                _ if is(opt, "gt") => gt = true,
                _ if is(opt, "lt") => lt = true,
                _ => break,
            }
            i += 1;
        }
        let rest = &argv[i..];
        if rest.is_empty() || rest.len() % 2 == 1 {
            return Err(SYNTAX.to_string());
        }
        if nx && xx {
            return Err("ERR XX and NX options at the same time are not compatible".into());
        }
        if (nx && (gt || lt)) || (gt && lt) {
            return Err("ERR GT, LT, and/or NX options at the same time are not compatible".into());
        }
        if incr && rest.len() > 2 {
            return Err("ERR INCR option supports a single increment-element pair".into());
        }
        let scores = rest
            .chunks_exact(2)
            .map(|pair| parse_score(pair[0]).ok_or_else(|| NOT_FLOAT.to_string()))
            .collect::<Result<Vec<f64>, String>>()?;
        let key = argv[1];
        let exists = self.zset(key, now).map_err(wrong_type)?.is_some();
        let (mut added, mut updated, mut last) = (0usize, 0usize, None);
        if exists || !xx {
            let z = self.zset_mut_or_create(key, now).map_err(wrong_type)?;
            for (pair, &score) in rest.chunks_exact(2).zip(&scores) {
                let member = pair[1];
                match z.score(member) {
                    Some(_) if nx => {}
                    Some(current) => {
                        let score = if incr { score + current } else { score };
                        if score.is_nan() {
                            return Err("ERR resulting score is not a number (NaN)".into());
                        }
                        if (lt && score >= current) || (gt && score <= current) {
                            continue;
                        }
                        last = Some(score);
                        if score != current {
                            z.insert(member, score);
                            updated += 1;
                        }
                    }
                    None if xx => {}
                    None => {
                        z.insert(member, score);
                        added += 1;
                        last = Some(score);
                    }
                }
            }
        }
        if incr {
            return Ok(last.map_or(Value::Nil, bulk_score));
        }
        Ok(int(if ch { added + updated } else { added }))
    }

    /// The ZRANGE family (`zrangeGenericCommand`): ZRANGE with its BYSCORE, REV,
    /// LIMIT and WITHSCORES options; ZREVRANGE and ZRANGEBYSCORE fix the form and
    /// direction, so those words are syntax errors there. BYLEX is not modelled.
    fn zrange(
        &self,
        argv: &[&[u8]],
        now: i64,
        mut by: Option<RangeBy>,
        mut reverse: Option<bool>,
    ) -> Result<Value, String> {
        let (mut withscores, mut offset, mut limit) = (false, 0i64, -1i64);
        let mut j = 4;
        while j < argv.len() {
            let opt = argv[j];
            let left = argv.len() - j - 1;
            if is(opt, "withscores") {
                withscores = true;
            } else if is(opt, "limit") && left >= 2 {
                offset = int_arg(argv[j + 1])?;
                limit = int_arg(argv[j + 2])?;
                j += 2;
            } else if reverse.is_none() && is(opt, "rev") {
                reverse = Some(true);
            } else if by.is_none() && is(opt, "byscore") {
                by = Some(RangeBy::Score);
            } else if by.is_none() && is(opt, "bylex") {
                return Err("ERR the keyspace model does not implement BYLEX".to_string());
            } else {
                return Err(SYNTAX.to_string());
            }
            j += 1;
        }
        let by = by.unwrap_or(RangeBy::Rank);
        let reverse = reverse.unwrap_or(false);
        if limit != -1 && by == RangeBy::Rank {
            return Err(
                "ERR syntax error, LIMIT is only supported in combination with either BYSCORE or BYLEX"
                    .to_string(),
            );
        }
        let key = argv[1];
        match by {
            RangeBy::Rank => {
                let (start, end) = (int_arg(argv[2])?, int_arg(argv[3])?);
                let Some(z) = self.zset(key, now).map_err(wrong_type)? else {
                    return Ok(Value::Array(Vec::new()));
                };
                let len = i64::try_from(z.len()).unwrap_or(i64::MAX);
                let start = if start < 0 {
                    (start + len).max(0)
                } else {
                    start
                };
                let end = if end < 0 { end + len } else { end };
                if start > end || start >= len {
                    return Ok(Value::Array(Vec::new()));
                }
                let end = end.min(len - 1);
                let (start, end) = (start as usize, end as usize);
                Ok(entries(
                    z.by_rank(start, end, reverse).into_iter(),
                    withscores,
                ))
            }
            RangeBy::Score => {
                // REV takes the range as max min.
                let (lo, hi) = if reverse {
                    (argv[3], argv[2])
                } else {
                    (argv[2], argv[3])
                };
                let (min, max) = (bound(lo)?, bound(hi)?);
                let Some(z) = self.zset(key, now).map_err(wrong_type)? else {
                    return Ok(Value::Array(Vec::new()));
                };
                // A negative offset walks off the end (`while (ln && offset--)`).
                if offset < 0 || usize::try_from(offset).is_ok_and(|o| o > 0 && o >= z.len()) {
                    return Ok(Value::Array(Vec::new()));
                }
                let skip = usize::try_from(offset).unwrap_or(usize::MAX);
                let take = usize::try_from(limit).unwrap_or(usize::MAX);
                let range = z.by_score(min, max);
                Ok(if reverse {
                    entries(range.rev().skip(skip).take(take), withscores)
                } else {
                    entries(range.skip(skip).take(take), withscores)
                })
            }
        }
    }

    fn zrem(&mut self, argv: &[&[u8]], now: i64) -> Result<Value, String> {
        let key = argv[1];
        self.zset(key, now).map_err(wrong_type)?;
        let mut removed = 0;
        for member in &argv[2..] {
            removed += usize::from(self.zset_remove(key, member, now).map_err(wrong_type)?);
        }
        Ok(int(removed))
    }

    fn zremrangebyscore(&mut self, argv: &[&[u8]], now: i64) -> Result<Value, String> {
        let (min, max) = (bound(argv[2])?, bound(argv[3])?);
        let key = argv[1];
        let Some(z) = self.zset(key, now).map_err(wrong_type)? else {
            return Ok(Value::Int(0));
        };
        let doomed: Vec<Vec<u8>> = z.by_score(min, max).map(|e| e.member.clone()).collect();
        for member in &doomed {
            self.zset_remove(key, member, now).map_err(wrong_type)?;
        }
        Ok(int(doomed.len()))
    }
}
