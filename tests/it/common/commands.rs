//! Every RL command, one row each, with what the cross-cutting tests (common rules,
//! ACL, cluster, replication, AOF, robustness, INFO, keyspace events) need to know
//! about it. Those tests iterate [`COMMANDS`]: a new command is covered by adding
//! its row here.

use super::helpers::{try_rl, Reply};
use redis::Connection;

/// What a positional parameter holds (docs/commands.md#counts and #durations).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kind {
    /// An integer 1 ..= 2^53−1 (`limit`, `capacity`, `tokens`, `count`).
    Count,
    /// An integer 0 ..= 2^53−2: CL.THROTTLE's `max_burst`, the capacity minus 1.
    Burst,
    /// A positive duration with an optional unit, 1 ms ..= 10 years.
    Duration,
    /// RL.SHARE's tenant: any bytes, 1 ..= 256 of them.
    Tenant,
    /// RL.SHARE's weight: an integer 1 ..= 10,000.
    Weight,
}

/// One positional parameter after the key.
#[derive(Clone, Copy, Debug)]
pub struct Param {
    /// As errors and COMMAND DOCS name it.
    pub name: &'static str,
    pub kind: Kind,
    /// A valid value, chosen so that [`Command::valid_params`] gives room for 5 units
    /// that barely come back during a test.
    pub valid: &'static str,
    /// The largest valid value (a [`Kind::Duration`]'s is 10 years, `3650d`).
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

impl Kind {
    /// A value of this kind that is out of range (the smallest count or duration
    /// minus one).
    pub fn invalid(self) -> &'static str {
        match self {
            Kind::Count => "0",
            Kind::Burst => "-1",
            Kind::Duration => "0ms",
            Kind::Tenant => "",
            Kind::Weight => "0",
        }
    }
}

/// Parameters a command refuses together: whether a list of parameters (after the
/// key) is refused, and a fragment of the error that says so.
pub type Conflict = (fn(&[String]) -> bool, &'static str);

/// One RL command and what the shared tests need to know about it.
///
/// A new command's row needs:
/// - `name`, and `short`: its INFO field prefix and its keys' prefix in tests
///   (`RL.GCRA` → `gcra`);
/// - `params`: its positional parameters (name, [`Kind`], a valid value, the maximum),
///   and `policy`: those parameters for "n units per window w";
/// - (arity and `fast` come from the command table, rl_core::table);
/// - `native_type` (TYPE of its key), `read` (a read-only command showing the whole
///   state) and, for a string state, `string_state` (whether a value is one it writes);
/// - `wrong_types` (keys of other types) and `foreign` (keys of the right type with
///   content it did not write), with `holds`, what their "does not hold" error names;
/// - `propagates` (native commands an allowed call propagates) and `events` (the
///   keyevents of an allowed call on an absent key);
/// - `too_fast`: the error for a rate it cannot hold, if any, and `conflict`: the
///   parameters it refuses together, if any;
/// - `style`: how it takes its cost and replies, and `blocks`: whether reaching the
///   limit blocks (RL.PENALTY) rather than rejects.
///
/// Setups and `read` use `k` as the key. Tests that send a cost use
/// [`Command::cost_args`]; tests that read replies use [`Command::reply_of`] (or
/// [`Command::call`]), so CL.THROTTLE's positional quantity and redis-cell's reply
/// ([`Style::Throttle`]) are handled in one place.
#[derive(Debug)]
pub struct Command {
    pub name: &'static str,
    /// INFO field prefix (`rl_<short>_allowed`) and key prefix in tests.
    pub short: &'static str,
    pub params: &'static [Param],
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
    /// The parameters for a limit (capacity) of `n` units per `window`: for a bucket,
    /// capacity `n` refilled with `n` tokens every `window`.
    pub policy: fn(n: u64, window: &str) -> Vec<String>,
    /// For a string state: whether a value is one the command writes.
    pub string_state: Option<fn(&str) -> bool>,
    /// The native commands an allowed call propagates (and the AOF records).
    pub propagates: &'static [&'static str],
    /// The keyevents of an allowed call on an absent key, in order.
    pub events: &'static [&'static str],
    /// The error for more than one `tokens` per ns of `period` (GCRA's emission
    /// interval is a whole number of ns); None when every rate is valid.
    pub too_fast: Option<&'static str>,
    /// Parameters the command refuses together (a predicate on the parameters
    /// after the key) and the error that names them; None when any combination of
    /// valid values is valid.
    pub conflict: Option<Conflict>,
    pub style: Style,
    /// RL.PENALTY's way: the limit counts strikes, and the call that reaches it is
    /// rejected and writes a block, during which every call (COST 0 too) is
    /// rejected and writes nothing. Otherwise (false) a call that would pass the
    /// limit is rejected and writes nothing, and COST 0 is always allowed.
    pub blocks: bool,
    /// RL.SHARE's way: the first call of a tenant the key does not remember writes
    /// it even when rejected (it joins the budget), so a key only ever rejected
    /// exists. Otherwise (false) a rejected call writes nothing (see `blocks`).
    pub joins: bool,
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

/// `limit window`, as RL.FIXED and RL.SLIDING take them.
const LIMIT_WINDOW: &[Param] = &[
    Param {
        name: "limit",
        kind: Kind::Count,
        valid: "5",
        max: MAX_COUNT,
    },
    Param {
        name: "window",
        kind: Kind::Duration,
        valid: "1h",
        max: MAX_DURATION,
    },
];

/// `capacity tokens period`, as RL.BUCKET takes them.
const CAPACITY_TOKENS_PERIOD: &[Param] = &[
    Param {
        name: "capacity",
        kind: Kind::Count,
        valid: "5",
        max: MAX_COUNT,
    },
    Param {
        name: "tokens",
        kind: Kind::Count,
        valid: "1",
        max: MAX_COUNT,
    },
    Param {
        name: "period",
        kind: Kind::Duration,
        valid: "1h",
        max: MAX_DURATION,
    },
];

/// A decimal integer as RL writes it: digits only, no leading zero.
fn canonical(v: &str) -> bool {
    !v.is_empty() && v.bytes().all(|b| b.is_ascii_digit()) && (v == "0" || !v.starts_with('0'))
}

fn limit_window(n: u64, window: &str) -> Vec<String> {
    vec![n.to_string(), window.to_string()]
}

fn capacity_tokens_period(n: u64, period: &str) -> Vec<String> {
    vec![n.to_string(), n.to_string(), period.to_string()]
}

pub const FIXED: Command = Command {
    name: "RL.FIXED",
    short: "fixed",
    params: LIMIT_WINDOW,
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
    policy: limit_window,
    string_state: Some(|v| canonical(v) && v.parse::<u64>().is_ok()),
    propagates: &["SET"],
    events: &["set", "expire"],
    too_fast: None,
    conflict: None,
    style: Style::Rl,
    blocks: false,
    joins: false,
};

pub const SLIDING: Command = Command {
    name: "RL.SLIDING",
    short: "sliding",
    params: &[
        Param {
            name: "limit",
            kind: Kind::Count,
            valid: "5",
            // rl.sliding-max-limit's default.
            max: "100000",
        },
        LIMIT_WINDOW[1],
    ],
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
    policy: limit_window,
    string_state: None,
    propagates: &["ZREMRANGEBYSCORE", "ZADD", "PEXPIREAT"],
    events: &["zadd", "expire"],
    too_fast: None,
    conflict: None,
    style: Style::Rl,
    blocks: false,
    joins: false,
};

pub const BUCKET: Command = Command {
    name: "RL.BUCKET",
    short: "bucket",
    params: CAPACITY_TOKENS_PERIOD,
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
    policy: capacity_tokens_period,
    string_state: None,
    propagates: &["HSET", "PEXPIREAT"],
    events: &["hset", "expire"],
    too_fast: None,
    conflict: None,
    style: Style::Rl,
    blocks: false,
    joins: false,
};

pub const GCRA: Command = Command {
    name: "RL.GCRA",
    short: "gcra",
    params: CAPACITY_TOKENS_PERIOD,
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
    policy: capacity_tokens_period,
    string_state: Some(|v| canonical(v) && v.parse::<u128>().is_ok()),
    propagates: &["SET"],
    events: &["set", "expire"],
    too_fast: Some("tokens per period is too high"),
    conflict: None,
    style: Style::Rl,
    blocks: false,
    joins: false,
};

/// `max_burst count period`, as CL.THROTTLE takes them: max_burst 4 is a capacity
/// of 5.
const BURST_COUNT_PERIOD: &[Param] = &[
    Param {
        name: "max_burst",
        kind: Kind::Burst,
        valid: "4",
        // The capacity max_burst + 1 stays within 2^53−1.
        max: "9007199254740990",
    },
    Param {
        name: "count",
        ..CAPACITY_TOKENS_PERIOD[1]
    },
    CAPACITY_TOKENS_PERIOD[2],
];

/// A capacity of `n` (max_burst `n − 1`) refilled with `n` every `period`.
fn burst_count_period(n: u64, period: &str) -> Vec<String> {
    assert!(n >= 1, "CL.THROTTLE's capacity is at least 1");
    vec![(n - 1).to_string(), n.to_string(), period.to_string()]
}

/// redis-cell's command: RL.GCRA's limiter and state (docs/commands.md#clthrottle).
pub const THROTTLE: Command = Command {
    name: "CL.THROTTLE",
    short: "throttle",
    params: BURST_COUNT_PERIOD,
    native_type: "string",
    read: &["GET", "k"],
    wrong_types: GCRA.wrong_types,
    foreign: GCRA.foreign,
    holds: "GCRA state",
    policy: burst_count_period,
    string_state: GCRA.string_state,
    propagates: &["SET"],
    events: &["set", "expire"],
    too_fast: Some("tokens per period is too high"),
    conflict: None,
    style: Style::Throttle,
    blocks: false,
    joins: false,
};

pub const SLIDINGCOUNTER: Command = Command {
    name: "RL.SLIDINGCOUNTER",
    short: "slidingcounter",
    params: LIMIT_WINDOW,
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
    policy: limit_window,
    string_state: Some(|v| {
        let fields: Vec<&str> = v.split(' ').collect();
        fields.len() == 3
            && fields
                .iter()
                .all(|f| canonical(f) && f.parse::<u64>().is_ok())
    }),
    propagates: &["SET"],
    events: &["set", "expire"],
    too_fast: None,
    conflict: None,
    style: Style::Rl,
    blocks: false,
    joins: false,
};

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

/// `strikes window block max`, as RL.PENALTY takes them.
const STRIKES_WINDOW_BLOCK_MAX: &[Param] = &[
    Param {
        name: "strikes",
        kind: Kind::Count,
        valid: "5",
        max: MAX_COUNT,
    },
    LIMIT_WINDOW[1],
    Param {
        name: "block",
        kind: Kind::Duration,
        valid: "1h",
        max: MAX_DURATION,
    },
    Param {
        name: "max",
        kind: Kind::Duration,
        valid: "1h",
        max: MAX_DURATION,
    },
];

/// `n` strikes in `window`, blocking for `window` (block and max alike).
fn strikes_window(n: u64, window: &str) -> Vec<String> {
    vec![
        n.to_string(),
        window.to_string(),
        window.to_string(),
        window.to_string(),
    ]
}

/// RL.PENALTY (docs/commands.md#rlpenalty): its limit counts strikes, and the one
/// that reaches it blocks ([`Command::blocks`]).
pub const PENALTY: Command = Command {
    name: "RL.PENALTY",
    short: "penalty",
    params: STRIKES_WINDOW_BLOCK_MAX,
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
    policy: strikes_window,
    string_state: Some(|v| {
        let fields: Vec<&str> = v.split(' ').collect();
        fields.len() == 4
            && fields
                .iter()
                .all(|f| canonical(f) && f.parse::<u64>().is_ok_and(|n| n < 1 << 53))
    }),
    propagates: &["SET"],
    events: &["set", "expire"],
    too_fast: None,
    conflict: Some((
        |params| duration_ms(&params[2]) > duration_ms(&params[3]),
        "block must be at most max",
    )),
    style: Style::CostOnly,
    blocks: true,
    joins: false,
};

/// A tenant of the longest name, 256 bytes.
pub const LONGEST_TENANT: &str = "xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx";

/// A tenant name one byte too long, 257 bytes.
pub const TOO_LONG_TENANT: &str = "xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx";

/// `tenant weight capacity tokens period`, as RL.SHARE takes them.
const TENANT_WEIGHT_CAPACITY_TOKENS_PERIOD: &[Param] = &[
    Param {
        name: "tenant",
        kind: Kind::Tenant,
        valid: "t",
        max: LONGEST_TENANT,
    },
    Param {
        name: "weight",
        kind: Kind::Weight,
        valid: "1",
        max: "10000",
    },
    CAPACITY_TOKENS_PERIOD[0],
    CAPACITY_TOKENS_PERIOD[1],
    CAPACITY_TOKENS_PERIOD[2],
];

/// Tenant `t` of weight 1, alone on a budget of capacity `n` refilled with `n`
/// every `period`: the whole budget is its share.
fn tenant_capacity_tokens_period(n: u64, period: &str) -> Vec<String> {
    let mut p = vec!["t".to_string(), "1".to_string()];
    p.extend(capacity_tokens_period(n, period));
    p
}

/// RL.SHARE (docs/commands.md#rlshare): one budget shared by weight; its rows call
/// as one tenant, `t`, alone. A hash whose `g` field RL.SHARE did not write (or
/// whose record of the tenant `t`) is content it refuses; other fields are not
/// read.
pub const SHARE: Command = Command {
    name: "RL.SHARE",
    short: "share",
    params: TENANT_WEIGHT_CAPACITY_TOKENS_PERIOD,
    native_type: "hash",
    read: &["HGETALL", "k"],
    wrong_types: &[LIST, SET, STRING, ZSET, STREAM],
    foreign: &[
        &["HSET", "k", "g", "abc"],
        &["HSET", "k", "g", ""],
        &["HSET", "k", "g", "1 2 3"],
        &["HSET", "k", "g", "0 0 0 0 0 0 0 0 0 0 0 0 0"],
        &["HSET", "k", "g", "0 0 0 0 0 0 0 0 0 0 0 -1"],
        &["HSET", "k", "g", "0 0 0 0 0 0 0 0 0 0 0 9007199254740992"],
        &["HSET", "k", "g", "0 0 0 0 0 0 0 0 0 0 0 0", "t:t", "x"],
        &["HSET", "k", "g", "0 0 0 0 0 0 0 0 0 0 0 0", "t:t", "1 2 3"],
        &["HSET", "k", "g", "0 0 0 0 0 0 0 0 0 0 00 0"],
    ],
    holds: "RL.SHARE",
    policy: tenant_capacity_tokens_period,
    string_state: None,
    propagates: &["HSET", "PEXPIREAT"],
    events: &["hset", "expire"],
    too_fast: Some("tokens per period is too high"),
    conflict: None,
    style: Style::Rl,
    blocks: false,
    joins: true,
};

/// The module's commands outside the table, each with its own test file: RL.ALL
/// (several keys, tests/it/all.rs), RL.ACQUIRE and RL.RELEASE (no COST; RL.RELEASE
/// replies an integer; tests/it/acquire.rs, which uses the [`ACQUIRE`] row).
pub const OUTSIDE_TABLE: &[&str] = &["RL.ALL", "RL.ACQUIRE", "RL.RELEASE"];

/// `limit ttl id`, as RL.ACQUIRE takes them.
const LIMIT_TTL_ID: &[Param] = &[
    Param {
        name: "limit",
        kind: Kind::Count,
        valid: "5",
        // rl.sliding-max-limit's default.
        max: "100000",
    },
    Param {
        name: "ttl",
        kind: Kind::Duration,
        valid: "1h",
        max: MAX_DURATION,
    },
];

/// A limit of `n` leases lasting `ttl`, for the lease `job`.
fn limit_ttl_job(n: u64, ttl: &str) -> Vec<String> {
    vec![n.to_string(), ttl.to_string(), "job".to_string()]
}

/// RL.ACQUIRE (docs/commands.md#rlacquire-and-rlrelease): not in [`COMMANDS`], whose
/// tests send COST; tests/it/acquire.rs reads its fields. `params` leaves out the id,
/// which [`Command::per`] adds (`job`).
pub const ACQUIRE: Command = Command {
    name: "RL.ACQUIRE",
    short: "acquire",
    params: LIMIT_TTL_ID,
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
    policy: limit_ttl_job,
    string_state: None,
    propagates: &["ZREMRANGEBYSCORE", "ZADD", "PEXPIREAT"],
    events: &["zadd", "expire"],
    too_fast: None,
    conflict: None,
    style: Style::Rl,
    blocks: false,
    joins: false,
};

/// Every RL command. A new command is one row: see [`Command`] for its fields.
/// CL.THROTTLE, the module's alone, stays last, and RL.SHARE just before it
/// ([`Table`]).
const EVERY: &[&Command] = &[
    &FIXED,
    &SLIDING,
    &BUCKET,
    &GCRA,
    &SLIDINGCOUNTER,
    &PENALTY,
    &SHARE,
    &THROTTLE,
];

/// Every row, whatever the backend, RL.ACQUIRE's included.
pub const EVERY_ROW: &[&Command] = &[
    &FIXED,
    &SLIDING,
    &BUCKET,
    &GCRA,
    &SLIDINGCOUNTER,
    &PENALTY,
    &SHARE,
    &THROTTLE,
    &ACQUIRE,
];

/// The commands of the backend under test ([`super::backend`]): every row for the
/// module; for the library all but CL.THROTTLE (and RL.SHARE while the library
/// has no `rl_share`, [`super::backend::PENDING`]). Used as a slice.
#[derive(Clone, Copy, Debug)]
pub struct Table;

/// The commands the cross-cutting tests iterate.
pub const COMMANDS: Table = Table;

impl Table {
    fn rows(self) -> &'static [&'static Command] {
        if super::library_lacks("rl_share") {
            // RL.SHARE comes just before CL.THROTTLE.
            &EVERY[..EVERY.len() - 2]
        } else if super::is_library() {
            &EVERY[..EVERY.len() - 1]
        } else {
            EVERY
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
        rl_core::table::find(self.name.as_bytes())
            .unwrap_or_else(|| panic!("{} is not in the command table", self.name))
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

    /// The parameters for `n` units per `window`.
    pub fn per(&self, n: u64, window: &str) -> Vec<String> {
        (self.policy)(n, window)
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
    EVERY
        .iter()
        .copied()
        .find(|c| c.is(name))
        .unwrap_or_else(|| panic!("no command {name} in the table"))
}

/// Strings from string slices.
pub fn strings(items: &[&str]) -> Vec<String> {
    items.iter().map(|s| s.to_string()).collect()
}
