//! Every RL command the cross-cutting tests (common rules, ACL, cluster,
//! replication, AOF, robustness, INFO, keyspace events) call, with what they need
//! to know about it. What the command table (rl_core::table) says is taken from it:
//! the name, the parameters' names, kinds and ranges, a valid call, the parameters
//! for "n units per window", how the cost is given and the reply read, and which
//! commands there are. The rest is written here, one row per command: what the
//! tests know of its keys and effects. A table row without its test row fails the
//! tests that iterate [`COMMANDS`] (and `every_table_row_has_its_test_row`).

use std::ops::Deref;
use std::sync::{Mutex, OnceLock};

use super::helpers::{try_rl, Reply};
use redis::Connection;
use rl_core::algorithms::share::{self, MAX_WEIGHT, SLOTS};
use rl_core::algorithms::{MAX_COUNT as MAX_COUNT_N, MAX_DURATION_MS};
use rl_core::options::Opt;
use rl_core::table::{self, ArgKind, Keys, Max};

/// What a positional parameter holds (docs/commands.md#counts and #durations), by
/// its kind in the command table.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kind {
    /// An integer from 1 (`limit`, `capacity`, `tokens`, `count`, `strikes`).
    Count,
    /// An integer from 0: CL.THROTTLE's `max_burst`, the capacity minus 1.
    Burst,
    /// A positive duration with an optional unit, 1 ms ..= 10 years.
    Duration,
    /// An integer from 1 to [`MAX_WEIGHT`] that sets no limit: RL.SHARE's `weight`,
    /// its tenant's share of the budget (a lone tenant has the whole budget,
    /// whatever its weight).
    Weight,
    /// Any bytes, 1 ..= the table's `max` of them: RL.SHARE's `tenant`, RL.ACQUIRE's
    /// lease `id`.
    Text,
    /// One of the table's words: RL.QUOTA's calendar `unit` (`day` … `year`).
    Unit,
}

/// One positional parameter after the key, as the command table has it.
#[derive(Clone, Copy, Debug)]
pub struct Param {
    /// As errors and COMMAND DOCS name it.
    pub name: &'static str,
    pub kind: Kind,
    /// A valid value, chosen so that [`Command::valid_params`] gives room for 5 units
    /// that barely come back during a test: the first count 5 (a max_burst 4, a
    /// capacity of 5), a later count (a refill) 1, a duration an hour, a weight 1, a
    /// text `job`.
    pub valid: &'static str,
    /// The largest valid value (with every setting at its default; a
    /// [`Kind::Duration`]'s is 10 years, `3650d`; a [`Kind::Text`]'s is its longest,
    /// all `x`).
    pub max: &'static str,
}

/// How a command takes its cost and what it replies.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Style {
    /// `[COST n]` after the parameters; the reply is RL's five integers
    /// `[allowed, limit, remaining, retry_after_ms, reset_after_ms]`.
    Rl,
    /// CL.THROTTLE's (redis-cell's): the quantity is an optional last positional
    /// argument (no options: 5 or 6 arguments), and the reply is
    /// `[limited, limit, remaining, retry_after_s, reset_after_s]`, limited 1 when
    /// rejected, retry_after -1 when allowed, times in whole seconds rounded up.
    /// [`Command::reply_of`] reads it in RL's shape, its times still in seconds.
    Throttle,
    /// `[COST n]` alone (no REFUND), RL's five integers (RL.PENALTY).
    CostOnly,
}

impl Style {
    /// A row's style, as the table says: redis-cell's reply, COST alone, or RL's.
    const fn of(row: &table::Command) -> Style {
        match row.reply {
            table::Reply::Throttle => Style::Throttle,
            _ if row.takes_option(Opt::Cost) && !row.takes_option(Opt::Refund) => Style::CostOnly,
            _ => Style::Rl,
        }
    }
}

impl Kind {
    /// A value of this kind that is out of range (the smallest count, weight or
    /// duration minus one; an empty text).
    pub fn invalid(self) -> &'static str {
        match self {
            Kind::Count | Kind::Weight => "0",
            Kind::Burst => "-1",
            Kind::Duration => "0ms",
            Kind::Text => "",
            Kind::Unit => "hour",
        }
    }

    /// Whether the parameter sets the limit (capacity) or the refill: a count, or
    /// CL.THROTTLE's max_burst.
    pub fn counts(self) -> bool {
        matches!(self, Kind::Count | Kind::Burst)
    }

    /// The kind of a table argument after the key, by its kind in the table: an
    /// integer from 1 up to 2^53 − 1 (or a setting's bound) a count, one from 0 a
    /// max_burst, one from 1 to [`MAX_WEIGHT`] a weight. Panics (failing the test)
    /// for a kind the tests do not know yet.
    pub fn of(command: &str, arg: &table::Arg) -> Kind {
        match arg.kind {
            ArgKind::Integer {
                min: 1,
                max: Max::Value(MAX_COUNT_N) | Max::Setting { .. },
            } => Kind::Count,
            ArgKind::Integer { min: 0, .. } => Kind::Burst,
            ArgKind::Integer {
                min: 1,
                max: Max::Value(MAX_WEIGHT),
            } => Kind::Weight,
            ArgKind::Duration => Kind::Duration,
            ArgKind::Text { .. } => Kind::Text,
            ArgKind::Word { .. } => Kind::Unit,
            _ => panic!(
                "{command}: no test kind for its argument {:?}: add one to tests/it/common/commands.rs",
                arg.name
            ),
        }
    }
}

/// A command's parameters after the key, from its table row; used as a slice.
#[derive(Clone, Copy)]
pub struct Params(&'static table::Command);

impl Params {
    fn get(self) -> &'static [Param] {
        /// Each command's parameters, made once: (its name, them).
        type Made = Vec<(&'static str, &'static [Param])>;
        static MADE: OnceLock<Mutex<Made>> = OnceLock::new();
        let name = self.0.name_str();
        let mut made = MADE
            .get_or_init(Default::default)
            .lock()
            .unwrap_or_else(|e| e.into_inner());
        if let Some((_, params)) = made.iter().find(|(n, _)| *n == name) {
            return params;
        }
        let mut counts = 0;
        let params: Vec<Param> = self
            .0
            .params()
            .iter()
            .map(|arg| {
                let kind = Kind::of(name, arg);
                let (valid, max) = match arg.kind {
                    ArgKind::Integer { max, .. } => {
                        let valid = match kind {
                            Kind::Weight => "1",
                            _ => {
                                counts += 1;
                                match (counts, kind) {
                                    (1, Kind::Burst) => "4",
                                    (1, _) => "5",
                                    _ => "1",
                                }
                            }
                        };
                        (valid, leak(max.default_value().to_string()))
                    }
                    ArgKind::Text { max } => ("job", leak("x".repeat(max))),
                    // A day: a period much longer than any test.
                    ArgKind::Word { words } => (words[0], words[words.len() - 1]),
                    _ => ("1h", MAX_DURATION),
                };
                Param {
                    name: arg.name.to_str().expect("a UTF-8 name"),
                    kind,
                    valid,
                    max,
                }
            })
            .collect();
        let params: &'static [Param] = Box::leak(params.into_boxed_slice());
        made.push((name, params));
        params
    }
}

fn leak(s: String) -> &'static str {
    Box::leak(s.into_boxed_str())
}

impl Deref for Params {
    type Target = [Param];
    fn deref(&self) -> &[Param] {
        self.get()
    }
}

impl IntoIterator for Params {
    type Item = &'static Param;
    type IntoIter = std::slice::Iter<'static, Param>;
    fn into_iter(self) -> Self::IntoIter {
        self.get().iter()
    }
}

impl std::fmt::Debug for Params {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_list().entries(self.get()).finish()
    }
}

/// Parameters a command refuses together: whether a list of parameters (after the
/// key) is refused, and a fragment of the error that says so.
pub type Conflict = (fn(&[String]) -> bool, &'static str);

/// Whether the fields and values of an `HSET` (in pairs) are ones a command writes.
pub type HashState = fn(&[(&str, &str)]) -> bool;

/// One RL command and what the shared tests need to know about it: its table row's
/// data ([`Command::of`]) and the test's own ([`Known`], read through the command:
/// `c.short`, `c.events` …).
///
/// Setups and `read` use `k` as the key. Tests that send a cost use
/// [`Command::cost_args`]; tests that read replies use [`Command::reply_of`] (or
/// [`Command::call`]), so CL.THROTTLE's positional quantity and redis-cell's reply
/// ([`Style::Throttle`]) are handled in one place.
#[derive(Debug)]
pub struct Command {
    /// From the table: its name.
    pub name: &'static str,
    /// From the table: its positional parameters after the key.
    pub params: Params,
    /// From the table: how it takes its cost and replies.
    pub style: Style,
    /// What the table does not say.
    pub known: Known,
}

impl Deref for Command {
    type Target = Known;
    fn deref(&self) -> &Known {
        &self.known
    }
}

/// What the tests know of a command that the table does not say: its keys, its
/// effects, what it refuses. Every field is needed: a new command's row gives all.
#[derive(Debug)]
pub struct Known {
    /// INFO field prefix (`rl_<short>_allowed`) and key prefix in tests.
    pub short: &'static str,
    /// TYPE of the key it writes.
    pub native_type: &'static str,
    /// A read-only command that reads the whole key `k` (for client tracking).
    pub read: &'static [&'static str],
    /// Keys of other types, as the commands that create them at key `k`.
    pub wrong_types: &'static [&'static [&'static str]],
    /// Keys of the right type at `k` with content the command did not write.
    pub foreign: &'static [&'static [&'static str]],
    /// What the "does not hold" error for [`Command::foreign`] keys names: the
    /// command, or the state it shares with another command.
    pub holds: &'static str,
    /// For a string state: whether a value is one the command writes.
    pub string_state: Option<fn(&str) -> bool>,
    /// For a hash state: whether the fields and values of an `HSET` it propagates
    /// are ones the command writes.
    pub hash_state: Option<HashState>,
    /// The native commands an allowed call propagates (and the AOF records).
    pub propagates: &'static [&'static str],
    /// Native commands some allowed calls propagate besides (RL.SHARE's `HDEL` of
    /// the fields of the slots and tenants it forgets).
    pub also_propagates: &'static [&'static str],
    /// The keyevents of an allowed call on an absent key, in order.
    pub events: &'static [&'static str],
    /// The error for more than one `tokens` per ns of `period` (GCRA's emission
    /// interval is a whole number of ns); None when every rate is valid.
    pub too_fast: Option<&'static str>,
    /// Parameters the command refuses together (a predicate on the parameters
    /// after the key) and the error that names them; None when any combination of
    /// valid values is valid.
    pub conflict: Option<Conflict>,
    /// RL.PENALTY's way: the limit counts strikes, and the call that reaches it is
    /// rejected and writes a block, during which every call (COST 0 too) is
    /// rejected and writes nothing. Otherwise (false) a call that would pass the
    /// limit is rejected and writes nothing, and COST 0 is always allowed.
    pub blocks: bool,
    /// RL.SHARE's way: the key remembers its tenants, each from its first call with
    /// a cost until a period after its last write. A rejected call (a cost above
    /// 0) by a tenant the key does not remember yet writes: it joins the budget, so
    /// its share counts from its first call; a rejected call by a remembered tenant
    /// writes nothing. A refund back to the initial state leaves the key while a
    /// tenant is remembered (its reset_after covers that time). Otherwise (false) a
    /// rejected call never writes, and a full refund deletes the key.
    pub joins: bool,
    /// RL.SHARE's way: the key's expiry may be rounded up to a whole time slot (a
    /// multiple of period / `slots`, rounded up, at least 1 ms), so the key may
    /// outlive the reply's reset_after by less than a slot ([`Command::outlives`]);
    /// the reply's reset_after stays exact. None: the key expires exactly at
    /// reset_after.
    pub slots: Option<u64>,
}

impl Command {
    /// The test row of the table's `row`: its name, parameters and style from the
    /// table, the rest from `known`.
    pub const fn of(row: &'static table::Command, known: Known) -> Command {
        let name = match row.name.to_str() {
            Ok(name) => name,
            Err(_) => panic!("a command name is UTF-8"),
        };
        Command {
            name,
            params: Params(row),
            style: Style::of(row),
            known,
        }
    }
}

/// Setups of keys of each type at `k`.
pub const LIST: &[&str] = &["RPUSH", "k", "a"];
pub const SET: &[&str] = &["SADD", "k", "a"];
pub const STRING: &[&str] = &["SET", "k", "3", "EX", "1000"];
pub const HASH: &[&str] = &["HSET", "k", "tokens", "1", "ts", "1"];
pub const ZSET: &[&str] = &["ZADD", "k", "1", "a"];
pub const STREAM: &[&str] = &["XADD", "k", "*", "a", "1"];

/// 2^53−1, the largest count.
pub const MAX_COUNT: &str = "9007199254740991";
/// 10 years, the longest duration.
pub const MAX_DURATION: &str = "3650d";

/// A decimal integer as RL writes it: digits only, no leading zero.
fn canonical(v: &str) -> bool {
    !v.is_empty() && v.bytes().all(|b| b.is_ascii_digit()) && (v == "0" || !v.starts_with('0'))
}

/// RL.BUCKET's `HSET`: `tokens <level> ts <ms>`, the level a decimal RL writes (a
/// `-` in debt, up to six decimals), the time a whole ms.
fn bucket_state(pairs: &[(&str, &str)]) -> bool {
    let level = |v: &str| {
        let v = v.strip_prefix('-').unwrap_or(v);
        match v.split_once('.') {
            Some((int, frac)) => {
                canonical(int)
                    && (1..=6).contains(&frac.len())
                    && frac.bytes().all(|b| b.is_ascii_digit())
            }
            None => canonical(v),
        }
    };
    matches!(pairs, [("tokens", t), ("ts", ts)] if level(t) && canonical(ts) && ts.parse::<u64>().is_ok())
}

/// RL.SHARE's `HSET`: fields of its budget (rl_core::algorithms::share), each
/// value as RL formats it (read back and written again, the same bytes): the
/// global record `g`, tenant records `t:<tenant>`, closed slots `s:<0..8>`, and
/// index entries `i:<n>` naming a tenant.
fn share_state(pairs: &[(&str, &str)]) -> bool {
    let name = |t: &str| (1..=share::MAX_TENANT_LEN).contains(&t.len());
    let same = |v: &str, formatted: Option<Vec<u8>>| formatted.as_deref() == Some(v.as_bytes());
    !pairs.is_empty()
        && pairs
            .iter()
            .all(|&(field, value)| match field.split_once(':') {
                None => {
                    field == "g"
                        && same(
                            value,
                            share::Global::parse(value.as_bytes()).map(|g| g.format()),
                        )
                }
                Some(("t", tenant)) => {
                    name(tenant)
                        && same(
                            value,
                            share::Member::parse(value.as_bytes()).map(|m| m.format()),
                        )
                }
                Some(("s", n)) => {
                    canonical(n)
                        && n.parse::<u64>().is_ok_and(|n| n < SLOTS)
                        && same(
                            value,
                            share::Slot::parse(value.as_bytes()).map(|s| s.format()),
                        )
                }
                Some(("i", n)) => canonical(n) && n.parse::<u64>().is_ok() && name(value),
                _ => false,
            })
}

/// RL.FIXED's counter (a decimal integer expiring at its window's end): RL.QUOTA
/// stores the same.
const COUNTER: Known = Known {
    short: "fixed",
    native_type: "string",
    read: &["GET", "k"],
    wrong_types: &[LIST, SET, HASH, ZSET, STREAM],
    foreign: &[
        &["SET", "k", "abc", "EX", "1000"],
        &["SET", "k", "-3", "EX", "1000"],
        &["SET", "k", "1.5", "EX", "1000"],
        &["SET", "k", "", "EX", "1000"],
        &["SET", "k", "18446744073709551616", "EX", "1000"],
        &["SET", "k", "3"],
    ],
    holds: "RL.FIXED",
    string_state: Some(|v| canonical(v) && v.parse::<u64>().is_ok()),
    hash_state: None,
    propagates: &["SET"],
    also_propagates: &[],
    events: &["set", "expire"],
    too_fast: None,
    conflict: None,
    blocks: false,
    joins: false,
    slots: None,
};

pub const FIXED: Command = Command::of(&table::FIXED, COUNTER);

pub const SLIDING: Command = Command::of(
    &table::SLIDING,
    Known {
        short: "sliding",
        native_type: "zset",
        read: &["ZRANGE", "k", "0", "-1", "WITHSCORES"],
        wrong_types: &[LIST, SET, STRING, HASH, STREAM],
        foreign: &[
            &["ZADD", "k", "+inf", "a"],
            &["ZADD", "k", "-inf", "a"],
            &["ZADD", "k", "-5", "a"],
            &["ZADD", "k", "1", "a", "+inf", "b"],
            &["ZADD", "k", "-1", "a", "1", "b"],
            &["ZADD", "k", "1e300", "a"],
            &["ZADD", "k", "9007199254740992", "a"],
            &["ZADD", "k", "1.5", "a"],
            &["ZADD", "k", "1", "a", "2.5", "b"],
            &["ZADD", "k", "0.5", "a", "2", "b"],
        ],
        holds: "RL.SLIDING",
        string_state: None,
        hash_state: None,
        propagates: &["ZREMRANGEBYSCORE", "ZADD", "PEXPIREAT"],
        also_propagates: &[],
        events: &["zadd", "expire"],
        too_fast: None,
        conflict: None,
        blocks: false,
        joins: false,
        slots: None,
    },
);

pub const BUCKET: Command = Command::of(
    &table::BUCKET,
    Known {
        short: "bucket",
        native_type: "hash",
        read: &["HGETALL", "k"],
        wrong_types: &[LIST, SET, STRING, ZSET, STREAM],
        foreign: &[
            &["HSET", "k", "a", "1"],
            &["HSET", "k", "tokens", "1"],
            &["HSET", "k", "ts", "1"],
            &["HSET", "k", "tokens", "abc", "ts", "1"],
            &["HSET", "k", "tokens", "1", "ts", "abc"],
            // A level in debt goes down to −(2^53−1) tokens, no further.
            &["HSET", "k", "tokens", "-9007199254740991.000001", "ts", "1"],
            &["HSET", "k", "tokens", "--1", "ts", "1"],
            &["HSET", "k", "tokens", "-", "ts", "1"],
            &["HSET", "k", "tokens", "1", "ts", "-1"],
            &["HSET", "k", "tokens", "inf", "ts", "1"],
            &["HSET", "k", "tokens", "nan", "ts", "1"],
        ],
        holds: "RL.BUCKET",
        string_state: None,
        hash_state: Some(bucket_state),
        propagates: &["HSET", "PEXPIREAT"],
        also_propagates: &[],
        events: &["hset", "expire"],
        too_fast: None,
        conflict: None,
        blocks: false,
        joins: false,
        slots: None,
    },
);

pub const GCRA: Command = Command::of(
    &table::GCRA,
    Known {
        short: "gcra",
        native_type: "string",
        read: &["GET", "k"],
        wrong_types: &[LIST, SET, HASH, ZSET, STREAM],
        foreign: &[
            &["SET", "k", "abc", "EX", "1000"],
            &["SET", "k", "-3", "EX", "1000"],
            &["SET", "k", "+3", "EX", "1000"],
            &["SET", "k", "03", "EX", "1000"],
            &["SET", "k", "1.5", "EX", "1000"],
            &["SET", "k", "", "EX", "1000"],
            &[
                "SET",
                "k",
                "340282366920938463463374607431768211456",
                "EX",
                "1000",
            ],
        ],
        holds: "GCRA state",
        string_state: Some(|v| canonical(v) && v.parse::<u128>().is_ok()),
        hash_state: None,
        propagates: &["SET"],
        also_propagates: &[],
        events: &["set", "expire"],
        too_fast: Some("tokens per period is too high"),
        conflict: None,
        blocks: false,
        joins: false,
        slots: None,
    },
);

/// redis-cell's command: RL.GCRA's limiter and state (docs/commands.md#clthrottle).
pub const THROTTLE: Command = Command::of(
    &table::THROTTLE,
    Known {
        short: "throttle",
        native_type: "string",
        read: &["GET", "k"],
        wrong_types: GCRA.known.wrong_types,
        foreign: GCRA.known.foreign,
        holds: "GCRA state",
        string_state: GCRA.known.string_state,
        hash_state: None,
        propagates: &["SET"],
        also_propagates: &[],
        events: &["set", "expire"],
        too_fast: Some("tokens per period is too high"),
        conflict: None,
        blocks: false,
        joins: false,
        slots: None,
    },
);

pub const SLIDINGCOUNTER: Command = Command::of(
    &table::SLIDINGCOUNTER,
    Known {
        short: "slidingcounter",
        native_type: "string",
        read: &["GET", "k"],
        wrong_types: &[LIST, SET, HASH, ZSET, STREAM],
        foreign: &[
            &["SET", "k", "abc", "EX", "1000"],
            &["SET", "k", "3", "EX", "1000"],
            &["SET", "k", "1 2", "EX", "1000"],
            &["SET", "k", "1 2 3 4", "EX", "1000"],
            &["SET", "k", "1  2 3", "EX", "1000"],
            &["SET", "k", "-1 2 3", "EX", "1000"],
            &["SET", "k", "1 2 x", "EX", "1000"],
            &["SET", "k", "", "EX", "1000"],
        ],
        holds: "RL.SLIDINGCOUNTER",
        string_state: Some(|v| {
            let fields: Vec<&str> = v.split(' ').collect();
            fields.len() == 3
                && fields
                    .iter()
                    .all(|f| canonical(f) && f.parse::<u64>().is_ok())
        }),
        hash_state: None,
        propagates: &["SET"],
        also_propagates: &[],
        events: &["set", "expire"],
        too_fast: None,
        conflict: None,
        blocks: false,
        joins: false,
        slots: None,
    },
);

/// A duration argument in ms, for the forms these tests write (`1ms`, `2s`, `1m`,
/// `1h`, `3650d`, a bare number of seconds).
pub fn duration_ms(v: &str) -> u64 {
    let digits = v.bytes().take_while(u8::is_ascii_digit).count();
    let (n, unit) = v.split_at(digits);
    let per = match unit {
        "ms" => 1,
        "" | "s" => 1000,
        "m" => 60_000,
        "h" => 3_600_000,
        "d" => 86_400_000,
        _ => panic!("{v:?} is not a duration"),
    };
    n.parse::<u64>().expect("a duration's number") * per
}

/// RL.QUOTA (docs/commands.md#rlquota): RL.FIXED's counter over calendar periods.
pub const QUOTA: Command = Command::of(
    &table::QUOTA,
    Known {
        short: "quota",
        holds: "RL.QUOTA",
        ..COUNTER
    },
);

/// RL.PENALTY (docs/commands.md#rlpenalty): its limit counts strikes, and the one
/// that reaches it blocks ([`Command::blocks`]).
pub const PENALTY: Command = Command::of(
    &table::PENALTY,
    Known {
        short: "penalty",
        native_type: "string",
        read: &["GET", "k"],
        wrong_types: &[LIST, SET, HASH, ZSET, STREAM],
        foreign: &[
            &["SET", "k", "abc", "EX", "1000"],
            &["SET", "k", "3", "EX", "1000"],
            &["SET", "k", "1 2 3", "EX", "1000"],
            &["SET", "k", "1 2 3 4 5", "EX", "1000"],
            &["SET", "k", "1  2 3 4", "EX", "1000"],
            &["SET", "k", "1 2 3 4 ", "EX", "1000"],
            &["SET", "k", "01 2 3 4", "EX", "1000"],
            &["SET", "k", "-1 2 3 4", "EX", "1000"],
            &["SET", "k", "1 2 3 x", "EX", "1000"],
            &["SET", "k", "9007199254740992 0 0 0", "EX", "1000"],
            &["SET", "k", "", "EX", "1000"],
        ],
        holds: "RL.PENALTY",
        string_state: Some(|v| {
            let fields: Vec<&str> = v.split(' ').collect();
            fields.len() == 4
                && fields
                    .iter()
                    .all(|f| canonical(f) && f.parse::<u64>().is_ok_and(|n| n < 1 << 53))
        }),
        hash_state: None,
        propagates: &["SET"],
        also_propagates: &[],
        events: &["set", "expire"],
        too_fast: None,
        conflict: Some((
            |params| duration_ms(&params[2]) > duration_ms(&params[3]),
            "block must be at most max",
        )),
        blocks: true,
        joins: false,
        slots: None,
    },
);

/// RL.SHARE (docs/commands.md#rlshare): one budget shared by weight across the
/// tenants it remembers ([`Command::joins`]), its expiry possibly rounded up to a
/// time slot ([`Command::slots`]). Its content is checked field by field as a call reads it:
/// the global record `g` and the call's tenant's record (`t:job`, the tenant of
/// the valid parameters), and the closed slots the global record points to.
pub const SHARE: Command = Command::of(
    &table::SHARE,
    Known {
        short: "share",
        native_type: "hash",
        read: &["HGETALL", "k"],
        wrong_types: &[LIST, SET, STRING, ZSET, STREAM],
        foreign: &[
            &["HSET", "k", "g", "nonsense"],
            &["HSET", "k", "g", ""],
            &["HSET", "k", "g", "0 0 0 0 0 0 0 0 0 0 0"],
            &["HSET", "k", "g", "0 0 0 0 0 0 0 0 0 0 0 0 0"],
            &["HSET", "k", "g", "0  0 0 0 0 0 0 0 0 0 0 0"],
            &["HSET", "k", "g", "-1 0 0 0 0 0 0 0 0 0 0 0"],
            &["HSET", "k", "g", "01 0 0 0 0 0 0 0 0 0 0 0"],
            // A count past 2^53 − 1.
            &["HSET", "k", "g", "0 0 9007199254740992 0 0 0 0 0 0 0 0 0"],
            // One closed slot, slot 0, which the hash lacks (it ended long ago).
            &["HSET", "k", "g", "0 0 1 1 1 0 1 1 0 0 1 1"],
            &["HSET", "k", "t:job", "nonsense"],
            &["HSET", "k", "t:job", "1 2 3"],
            &[
                "HSET",
                "k",
                "g",
                "0 0 0 0 0 0 0 0 0 0 0 0",
                "t:job",
                "x 1 0 0",
            ],
        ],
        holds: rl_core::codec::share::WHAT,
        string_state: None,
        hash_state: Some(share_state),
        propagates: &["HSET", "PEXPIREAT"],
        also_propagates: &["HDEL"],
        events: &["hset", "expire"],
        too_fast: Some("tokens per period is too high"),
        conflict: None,
        blocks: false,
        joins: true,
        slots: Some(SLOTS),
    },
);

/// RL.ACQUIRE (docs/commands.md#rlacquire-and-rlrelease): not in [`COMMANDS`], whose
/// tests send COST; tests/it/acquire.rs reads its fields. Its `params` leave out the
/// id, which [`Command::per`] adds (`job`).
pub const ACQUIRE: Command = Command::of(
    &table::ACQUIRE,
    Known {
        short: "acquire",
        native_type: "zset",
        read: &["ZRANGE", "k", "0", "-1", "WITHSCORES"],
        wrong_types: &[LIST, SET, STRING, HASH, STREAM],
        foreign: &[
            &["ZADD", "k", "+inf", "a"],
            &["ZADD", "k", "-inf", "a"],
            &["ZADD", "k", "-5", "a"],
            &["ZADD", "k", "1.5", "a"],
            &["ZADD", "k", "1", "a", "2.5", "b"],
            &["ZADD", "k", "-1", "a", "1", "b"],
            &["ZADD", "k", "1e300", "a"],
            &["ZADD", "k", "9007199254740992", "a"],
            &["ZADD", "k", "0.5", "a", "2", "b"],
        ],
        holds: "RL.ACQUIRE",
        string_state: None,
        hash_state: None,
        propagates: &["ZREMRANGEBYSCORE", "ZADD", "PEXPIREAT"],
        also_propagates: &[],
        events: &["zadd", "expire"],
        too_fast: None,
        conflict: None,
        blocks: false,
        joins: false,
        slots: None,
    },
);

/// Every test row: what the tests know of each one-key command of the table. A new
/// command of the table needs one here (see [`Known`]).
const KNOWN: &[&Command] = &[
    &FIXED,
    &SLIDING,
    &BUCKET,
    &GCRA,
    &SLIDINGCOUNTER,
    &THROTTLE,
    &ACQUIRE,
    &PENALTY,
    &SHARE,
    &QUOTA,
];

/// Whether a table row is a one-key command answering a decision, which the tests
/// know by a row here (not RL.ALL, several keys; not RL.RELEASE, which answers an
/// integer: each has a test file of its own).
fn has_test_row(row: &table::Command) -> bool {
    matches!(row.keys, Keys::First)
        && matches!(row.reply, table::Reply::Decision | table::Reply::Throttle)
}

/// The test row of a table row; panics (failing the test) when it has none.
fn test_row(row: &table::Command) -> &'static Command {
    KNOWN
        .iter()
        .copied()
        .find(|c| c.name == row.name_str())
        .unwrap_or_else(|| {
            panic!(
                "{} has no row in tests/it/common/commands.rs (see Known)",
                row.name_str()
            )
        })
}

/// The table's commands as the lists below take them: every row with a test row
/// (in the list's order); those the cross-cutting tests iterate, for the module
/// and for the library (a one-key command with a cost: not RL.ACQUIRE; for the
/// library, those it has a function for: not CL.THROTTLE); the rest.
struct Lists {
    every_row: Vec<&'static Command>,
    module: Vec<&'static Command>,
    library: Vec<&'static Command>,
    outside: Vec<&'static str>,
}

fn lists() -> &'static Lists {
    static LISTS: OnceLock<Lists> = OnceLock::new();
    LISTS.get_or_init(|| {
        let every_row: Vec<&Command> = rl_core::commands::COMMANDS
            .iter()
            .filter(|row| has_test_row(row))
            .map(|row| test_row(row))
            .collect();
        let module: Vec<&Command> = every_row
            .iter()
            .copied()
            .filter(|c| !c.row().options.is_empty() || c.row().quantity.is_some())
            .collect();
        let library = module
            .iter()
            .copied()
            .filter(|c| c.row().function.is_some())
            .collect();
        let outside = rl_core::commands::COMMANDS
            .iter()
            .map(|row| row.name_str())
            .filter(|name| !module.iter().any(|c| c.name == *name))
            .collect();
        Lists {
            every_row,
            module,
            library,
            outside,
        }
    })
}

/// A list of the table's commands, built from it on first use ([`lists`]); used
/// as a slice.
#[derive(Clone, Copy, Debug)]
pub struct List<T: 'static>(fn(&'static Lists) -> &'static [T]);

impl<T> Deref for List<T> {
    type Target = [T];
    fn deref(&self) -> &[T] {
        (self.0)(lists())
    }
}

impl<T> IntoIterator for List<T> {
    type Item = &'static T;
    type IntoIter = std::slice::Iter<'static, T>;
    fn into_iter(self) -> Self::IntoIter {
        (self.0)(lists()).iter()
    }
}

/// Every row, whatever the backend, RL.ACQUIRE's included.
pub const EVERY_ROW: List<&Command> = List(|l| &l.every_row);

/// The commands outside [`COMMANDS`], each with its own test file: RL.ALL (several
/// keys, tests/all.rs), RL.ACQUIRE and RL.RELEASE (no COST; RL.RELEASE replies an
/// integer; tests/acquire.rs, which uses the [`ACQUIRE`] row).
pub const OUTSIDE_TABLE: List<&str> = List(|l| &l.outside);

/// The module's commands on node-wide state, registered beside the table (no
/// key, no row): RL.TOP (tests/top.rs).
pub const NODE_COMMANDS: &[&str] = &["RL.TOP"];

/// Whether `name` (any case) is one of [`NODE_COMMANDS`].
pub fn is_node_command(name: &str) -> bool {
    NODE_COMMANDS.iter().any(|n| n.eq_ignore_ascii_case(name))
}

/// The commands of the backend under test ([`super::backend`]): every one-key
/// command with a cost for the module; for the library all but CL.THROTTLE. Used
/// as a slice.
#[derive(Clone, Copy, Debug)]
pub struct Table;

/// The commands the cross-cutting tests iterate.
pub const COMMANDS: Table = Table;

impl Table {
    fn rows(self) -> &'static [&'static Command] {
        if super::is_library() {
            &lists().library
        } else {
            &lists().module
        }
    }
}

impl std::ops::Deref for Table {
    type Target = [&'static Command];
    fn deref(&self) -> &Self::Target {
        self.rows()
    }
}

impl IntoIterator for Table {
    type Item = &'static &'static Command;
    type IntoIter = std::slice::Iter<'static, &'static Command>;
    fn into_iter(self) -> Self::IntoIter {
        self.rows().iter()
    }
}

/// Command lines and calls built from a row.
impl Command {
    /// The command's row in the command table (rl_core::table), which says what
    /// Redis is told about it.
    pub fn row(&self) -> &'static rl_core::table::Command {
        self.params.0
    }

    /// COMMAND INFO arity, as the table says.
    pub fn arity(&self) -> i64 {
        i64::from(self.row().arity())
    }

    /// Whether it takes `DEBIT n` (docs/commands.md#debit), as the table says: not
    /// RL.SLIDING (one entry per unit), RL.ACQUIRE, RL.PENALTY or CL.THROTTLE.
    pub fn debit(&self) -> bool {
        self.row().debit()
    }

    /// Whether its window is a calendar period (RL.QUOTA, as the table says: it
    /// takes EVERY): [`Command::per`] cannot make it shorter than a day, so tests
    /// that wait for a window to pass leave it out (tests/it/quota.rs sets a
    /// server's clock instead).
    pub fn calendar(&self) -> bool {
        self.row().takes_option(Opt::Every)
    }

    /// Whether the command is flagged `fast`, as the table says.
    pub fn fast(&self) -> bool {
        self.row()
            .flags
            .to_bytes()
            .split(|&b| b == b' ')
            .any(|f| f == b"fast")
    }

    /// The table's valid parameters, in order.
    pub fn valid_params(&self) -> Vec<&'static str> {
        self.params.iter().map(|p| p.valid).collect()
    }

    /// The parameters for a limit (capacity) of `n` units per `window`, by their
    /// kinds in the table: the first count is `n` (a max_burst `n − 1`, a capacity
    /// of `n`), a later one `n` too (a bucket refilled with `n` tokens every
    /// `window`), every duration `window` (RL.PENALTY's block and max too), a weight
    /// and a text their valid values (RL.SHARE's lone tenant `job`, whose budget is
    /// all its own whatever its weight; RL.ACQUIRE's lease `job`).
    pub fn per(&self, n: u64, window: &str) -> Vec<String> {
        let mut first = true;
        self.params
            .iter()
            .map(|p| match p.kind {
                Kind::Burst if first => {
                    first = false;
                    assert!(n >= 1, "{}: a capacity is at least 1", self.name);
                    (n - 1).to_string()
                }
                Kind::Burst | Kind::Count => {
                    first = false;
                    n.to_string()
                }
                Kind::Duration => window.to_string(),
                // A calendar period is not a duration: RL.QUOTA counts per day.
                Kind::Weight | Kind::Text | Kind::Unit => p.valid.to_string(),
            })
            .collect()
    }

    /// The parameter that sets the limit (capacity), the first count (or
    /// max_burst), and its position after the key.
    pub fn limit_param(&self) -> (usize, &'static Param) {
        self.params
            .into_iter()
            .enumerate()
            .find(|(_, p)| p.kind.counts())
            .unwrap_or_else(|| panic!("{}: no count in its parameters", self.name))
    }

    /// How long, at most, the key of a call with `params` may outlive the reply's
    /// reset_after (PTTL − reset_after, right after the call): 0, or where the
    /// expiry may be rounded up to a time slot ([`Command::slots`]), one slot of
    /// the call's period (its last duration): S = ceil(period / slots), at least 1.
    pub fn outlives(&self, params: &[String]) -> i64 {
        let Some(slots) = self.slots else { return 0 };
        let period = self
            .params
            .iter()
            .zip(params)
            .rfind(|(p, _)| p.kind == Kind::Duration)
            .map(|(_, v)| duration_ms(&v.to_lowercase()))
            .unwrap_or_else(|| panic!("{}: no period in {params:?}", self.name));
        period.div_ceil(slots).max(1) as i64
    }

    /// Asserts the key's time to live `ttl_ms` (PTTL, or PEXPIRETIME − now at the
    /// call's instant) against the reset_after of a call with `params`: at most it,
    /// and at least it less `early` ms (time spent since the call), plus up to
    /// [`Command::outlives`] for a command whose expiry is rounded up to a slot.
    pub fn assert_expiry(&self, params: &[String], reset_after: i64, ttl_ms: i64, early: i64) {
        let late = self.outlives(params);
        assert!(
            (reset_after - early..=reset_after + late).contains(&ttl_ms),
            "{} {params:?}: the key expires in {ttl_ms} ms, reset_after {reset_after} \
             (allowed: {early} ms earlier, {late} ms later)",
            self.name
        );
    }

    /// The arguments that charge `n` units after the fact (`DEBIT n`), for a
    /// command that takes it.
    pub fn debit_args(&self, n: u64) -> Vec<String> {
        assert!(self.debit(), "{} takes no DEBIT", self.name);
        vec!["DEBIT".to_string(), n.to_string()]
    }

    /// The arguments that make a call cost `n` units.
    pub fn cost_args(&self, n: u64) -> Vec<String> {
        match self.style {
            Style::Rl | Style::CostOnly => vec!["COST".to_string(), n.to_string()],
            Style::Throttle => vec![n.to_string()],
        }
    }

    /// A reply of this command in RL's shape. For [`Style::Throttle`]: allowed is
    /// 1 − limited, and retry_after is 0 when allowed (redis-cell's −1), −1 when it
    /// never can be, else its seconds; retry_after and reset_after stay in whole
    /// seconds rounded up, so a test comparing exact ms must convert for this style.
    pub fn reply_of(&self, v: &[i64]) -> Reply {
        assert_eq!(v.len(), 5, "{} replied {v:?}", self.name);
        match self.style {
            Style::Rl | Style::CostOnly => Reply::of(v),
            Style::Throttle => {
                assert!((0..=1).contains(&v[0]), "{} replied {v:?}", self.name);
                let allowed = 1 - v[0];
                if allowed == 1 {
                    assert_eq!(v[3], -1, "{}: retry_after when allowed: {v:?}", self.name);
                } else {
                    assert!(v[3] == -1 || v[3] > 0, "{} replied {v:?}", self.name);
                }
                Reply {
                    allowed,
                    limit: v[1],
                    remaining: v[2],
                    retry_after: if allowed == 1 { 0 } else { v[3] },
                    reset_after: v[4],
                }
            }
        }
    }

    /// `name key params…`, plus the cost arguments when `cost` is given.
    pub fn args(&self, key: &str, params: &[String], cost: Option<u64>) -> Vec<String> {
        let mut args = vec![self.name.to_string(), key.to_string()];
        args.extend(params.iter().cloned());
        if let Some(n) = cost {
            args.extend(self.cost_args(n));
        }
        args
    }

    /// [`Command::args`] as a command to send.
    pub fn cmd(&self, key: &str, params: &[String], cost: Option<u64>) -> redis::Cmd {
        super::command_of(&self.args(key, params, cost))
    }

    /// A call that must succeed; its reply.
    pub fn call(
        &self,
        c: &mut Connection,
        key: &str,
        params: &[String],
        cost: Option<u64>,
    ) -> Reply {
        self.run(c, &self.args(key, params, cost))
    }

    /// Runs a command line of this command, which must succeed; its reply in RL's
    /// shape ([`Command::reply_of`]).
    pub fn run(&self, c: &mut Connection, args: &[String]) -> Reply {
        let v = try_rl(c, &args.iter().map(String::as_str).collect::<Vec<_>>())
            .unwrap_or_else(|e| panic!("{args:?}: {e}"));
        self.reply_of(&v)
    }

    /// Whether a name is this command's, in any case.
    pub fn is(&self, name: &str) -> bool {
        self.name.eq_ignore_ascii_case(name)
    }
}

/// The command named `name` (any case).
pub fn command(name: &str) -> &'static Command {
    EVERY_ROW
        .iter()
        .copied()
        .find(|c| c.is(name))
        .unwrap_or_else(|| panic!("no command {name} in the table"))
}

/// Strings from string slices.
pub fn strings(items: &[&str]) -> Vec<String> {
    items.iter().map(|s| s.to_string()).collect()
}

/// Each one-key command of the table has its test row, and what the row takes from
/// the table reads as the tests expect.
#[test]
fn every_table_row_has_its_test_row() {
    assert_eq!(MAX_COUNT, MAX_COUNT_N.to_string());
    assert_eq!(duration_ms(MAX_DURATION), MAX_DURATION_MS);
    for row in rl_core::commands::COMMANDS
        .iter()
        .filter(|r| has_test_row(r))
    {
        let c = test_row(row);
        assert_eq!(c.row().name, row.name);
        assert!(!c.params.is_empty(), "{}", c.name);
        let per = c.per(5, "1h");
        assert_eq!(per.len(), row.params().len(), "{}", c.name);
        // The valid parameters are those of 5 units per hour, refilled 1 at a time.
        for (p, v) in c.params.iter().zip(&per) {
            match p.kind {
                Kind::Burst => assert_eq!((p.valid, v.as_str()), ("4", "4")),
                Kind::Duration | Kind::Weight | Kind::Text | Kind::Unit => assert_eq!(p.valid, v),
                Kind::Count => assert!(p.valid == "5" || p.valid == "1", "{p:?}"),
            }
        }
        // The limit is the first count: 5 units (a max_burst of 4), whatever comes
        // before it (RL.SHARE's tenant and weight).
        let (_, limit) = c.limit_param();
        let five = if limit.kind == Kind::Burst { "4" } else { "5" };
        assert_eq!(limit.valid, five, "{}", c.name);
        assert_eq!(
            c.string_state.is_some(),
            c.native_type == "string",
            "{}: a string state says which values are its own",
            c.name
        );
        assert_eq!(
            c.hash_state.is_some(),
            c.native_type == "hash",
            "{}: a hash state says which fields and values are its own",
            c.name
        );
        assert!(
            !c.wrong_types.is_empty() && !c.foreign.is_empty(),
            "{}",
            c.name
        );
    }
    // Every test row is a row of the table's.
    for c in KNOWN {
        assert!(
            rl_core::commands::find(c.name.as_bytes()).is_some(),
            "{}",
            c.name
        );
    }
    // Every command is iterated by the cross-cutting tests or has a file of its own.
    for row in rl_core::commands::COMMANDS {
        let name = row.name_str();
        let iterated = lists().module.iter().any(|c| c.name == name);
        assert_ne!(iterated, OUTSIDE_TABLE.contains(&name), "{name}");
    }
}
