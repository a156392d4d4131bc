//! Every command RL has, written once: name, flags, arity, where its keys are,
//! the arguments and options it takes, its RL.ALL policy word and its name in the
//! Functions library. Plain data: the module registers, documents (COMMAND DOCS,
//! ACL categories), counts (INFO) and dispatches by it; RL.ALL parses its policies
//! and words its errors from it; the tests iterate it. A new command is a row here
//! and a name in `each_command!`, whose list (`commands::COMMANDS`) is the one
//! enumeration of the rows.

use std::ffi::CStr;

use crate::algorithms::acquire::MAX_ID_LEN;
use crate::algorithms::share::{MAX_TENANT_LEN, MAX_WEIGHT};
use crate::algorithms::MAX_COUNT;
use crate::error::Error;
use crate::options::{Opt, Takes};

/// A positional argument as COMMAND DOCS shows it.
pub struct Arg {
    pub name: &'static CStr,
    /// `name` as text, as an error names the argument.
    pub text: &'static str,
    pub kind: ArgKind,
}

impl Arg {
    pub const fn new(name: &'static CStr, kind: ArgKind) -> Self {
        let Ok(text) = std::str::from_utf8(name.to_bytes()) else {
            panic!("an argument's name is ASCII")
        };
        Arg { name, text, kind }
    }
}

#[derive(Clone, Copy)]
pub enum ArgKind {
    Key,
    /// One or more keys (RL.ALL's, counted by the argument before them).
    Keys,
    /// One of these words, any case (RL.QUOTA's unit).
    Word {
        words: &'static [&'static str],
    },
    /// A decimal integer from `min` to `max`.
    Integer {
        min: u64,
        max: Max,
    },
    /// A duration such as `60`, `1500ms` or `1m`, from 1 ms to
    /// [`MAX_DURATION_MS`].
    Duration,
    /// Any bytes, 1 ..= `max` of them (RL.ACQUIRE's lease id).
    Text {
        max: usize,
    },
    /// One or more RL.ALL policies (`FIXED limit window | …`).
    Policies,
}

/// The largest value an integer argument takes.
#[derive(Clone, Copy)]
pub enum Max {
    Value(u64),
    /// A module setting's value (`rl.sliding-max-limit`), `default` unless
    /// configured; the library always uses the default.
    Setting {
        name: &'static str,
        default: u64,
    },
}

impl Max {
    /// The bound with every setting at its default.
    pub const fn default_value(self) -> u64 {
        match self {
            Max::Value(v) | Max::Setting { default: v, .. } => v,
        }
    }
}

/// A count: 1 ..= 2^53 − 1.
const COUNT: ArgKind = ArgKind::Integer {
    min: 1,
    max: Max::Value(MAX_COUNT),
};

/// RL.SLIDING's limit and RL.ACQUIRE's: one entry per unit or lease.
const ENTRIES: ArgKind = ArgKind::Integer {
    min: 1,
    max: Max::Setting {
        name: "rl.sliding-max-limit",
        default: SLIDING_MAX_LIMIT,
    },
};

/// `rl.sliding-max-limit`'s default: the largest RL.SLIDING limit and RL.ACQUIRE
/// lease count (the library has no settings and always uses it).
pub const SLIDING_MAX_LIMIT: u64 = 100_000;

/// What a command answers.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Reply {
    /// RL's five integers: allowed, limit, remaining, retry_after_ms, reset_after_ms.
    Decision,
    /// redis-cell's five: limited, limit, remaining, retry_after_s, reset_after_s.
    Throttle,
    /// numkeys + 1 decisions: the combined one, then each key's.
    All,
    /// An integer: 1 if a lease was released, else 0.
    Released,
}

/// Where a command's keys are.
#[derive(Clone, Copy)]
pub enum Keys {
    /// One key, the first argument.
    First,
    /// `numkeys key [key …]`: the first argument counts the keys that follow.
    Counted,
}

/// One command: what Redis needs to know about it, and what RL's own parts do with it.
pub struct Command {
    pub name: &'static CStr,
    pub flags: &'static CStr,
    pub summary: &'static CStr,
    pub complexity: &'static CStr,
    /// Positional arguments, the key first; the cost follows them all.
    pub args: &'static [Arg],
    pub keys: Keys,
    /// The fewest arguments a call has, its name included.
    pub min_argc: usize,
    /// The options it takes after its positional arguments, in [`Opt::ALL`]'s
    /// order: one parser reads them, and any other option is named as not
    /// applying to it.
    pub options: &'static [Opt],
    /// A last optional positional amount with this name (CL.THROTTLE's quantity,
    /// redis-cell's): no options then.
    pub quantity: Option<&'static CStr>,
    /// Another module may own this name (CL.THROTTLE, redis-cell's): if it is
    /// taken, RL loads without it and logs so.
    pub optional: bool,
    /// Its word as an RL.ALL policy (`FIXED`), if it is one.
    pub policy: Option<&'static CStr>,
    /// The options of an RL.ALL call (after its last policy) it takes as a policy,
    /// when they are not its own [`options`](Command::options) (ACQUIRE takes none
    /// alone, but counts the call's COST: 0 looks, any other takes one lease).
    pub policy_options: Option<&'static [Opt]>,
    /// Its function in the Functions library (`rl_fixed`), if the library has it.
    pub function: Option<&'static str>,
    /// What it answers.
    pub reply: Reply,
    /// As an RL.ALL policy, only looked at (as COST 0) and never written, whatever
    /// the call's amount (PENALTY: "is this offender blocked?").
    pub looked_at: bool,
    /// A plain rate on one key: its limit and window (or refill), read from its
    /// arguments, are all a client needs to stand in for it while the server is
    /// away, and its retry_after is exact, so a client may remember a rejection
    /// until then (the typed clients' fallback limiter and blocked-key cache).
    pub plain_rate: bool,
}

/// COST and REFUND, and SHADOW: what every RL.* limiter takes.
const COST_REFUND: &[Opt] = &[Opt::Cost, Opt::Refund, Opt::Shadow];
/// COST, REFUND and DEBIT, and SHADOW.
const COST_REFUND_DEBIT: &[Opt] = &[Opt::Cost, Opt::Refund, Opt::Debit, Opt::Shadow];

impl Command {
    /// An RL.* command: `[COST n]` after its positional arguments, registered always.
    const fn rl(
        name: &'static CStr,
        flags: &'static CStr,
        summary: &'static CStr,
        complexity: &'static CStr,
        args: &'static [Arg],
    ) -> Command {
        Command {
            name,
            flags,
            summary,
            complexity,
            args,
            keys: Keys::First,
            min_argc: 1 + args.len(),
            options: COST_REFUND,
            quantity: None,
            optional: false,
            policy: None,
            policy_options: None,
            function: None,
            reply: Reply::Decision,
            looked_at: false,
            plain_rate: false,
        }
    }

    /// The same command, a plain rate (see [`plain_rate`](Command::plain_rate)).
    const fn plain_rate(self) -> Command {
        Command {
            plain_rate: true,
            ..self
        }
    }

    /// Whether it takes option `o`.
    pub const fn takes_option(&self, o: Opt) -> bool {
        let mut i = 0;
        while i < self.options.len() {
            if self.options[i] as u8 == o as u8 {
                return true;
            }
            i += 1;
        }
        false
    }

    /// Takes `DELAY max` (RL.GCRA; in RL.ALL, its GCRA policy).
    pub const fn delay(&self) -> bool {
        self.takes_option(Opt::Delay)
    }

    /// Takes `DEBIT n` (not RL.SLIDING, whose log holds one entry per unit).
    pub const fn debit(&self) -> bool {
        self.takes_option(Opt::Debit)
    }

    /// The same command, taking `options` after its positional arguments.
    const fn taking(self, options: &'static [Opt]) -> Command {
        Command { options, ..self }
    }

    /// What the options parser needs: the options it takes, and the name an error
    /// gives it (the command, or its RL.ALL policy word).
    pub const fn takes(&self) -> Takes {
        Takes {
            name: self.name,
            options: self.options,
        }
    }

    /// What RL.ALL's options parser needs of it as a policy: the options of the
    /// call it takes, and its policy word for an error.
    pub fn policy_takes(&self) -> Takes {
        Takes {
            name: self.policy_token(),
            options: self.policy_options.unwrap_or(self.options),
        }
    }

    /// The same command, offered as an RL.ALL policy under `word`.
    const fn policy(self, word: &'static CStr) -> Command {
        Command {
            policy: Some(word),
            ..self
        }
    }

    /// The same command, offered as an RL.ALL policy under `word` that is only
    /// looked at.
    const fn looked_at_policy(self, word: &'static CStr) -> Command {
        Command {
            looked_at: true,
            ..self.policy(word)
        }
    }

    /// The same command, in the Functions library as `function`.
    const fn function(self, function: &'static str) -> Command {
        Command {
            function: Some(function),
            ..self
        }
    }

    /// At most this many (a positional quantity is the only optional argument).
    fn max_argc(&self) -> Option<usize> {
        if self.quantity.is_some() {
            Some(self.min_argc + 1)
        } else if self.options.is_empty() {
            Some(self.min_argc)
        } else {
            None
        }
    }

    /// Whether a call of `argc` arguments (the command name included) has the
    /// command's arity.
    pub fn accepts_argc(&self, argc: usize) -> bool {
        argc >= self.min_argc && self.max_argc().is_none_or(|max| argc <= max)
    }

    pub fn name_str(&self) -> &'static str {
        self.name.to_str().unwrap_or("RL")
    }

    /// Its RL.ALL policy word (its name if it is none), as COMMAND DOCS shows it.
    pub fn policy_token(&self) -> &'static CStr {
        self.policy.unwrap_or(self.name)
    }

    /// Its RL.ALL policy word as text.
    pub fn policy_word(&self) -> &'static str {
        self.policy_token().to_str().unwrap_or("?")
    }

    /// The error naming an option given to a command that takes none (RL.ACQUIRE,
    /// RL.RELEASE), when `extra`, the first argument past its last one, is an
    /// option; None for any other call with the wrong argument count (CL.THROTTLE
    /// keeps redis-cell's arity error).
    pub fn refused_option(&self, extra: Option<&[u8]>) -> Option<Error> {
        if !self.options.is_empty() || self.quantity.is_some() {
            return None;
        }
        let word = extra?;
        let option = Opt::named(word)?;
        Some(self.takes().refuses(option))
    }

    /// Its arity as COMMAND INFO shows it: at least `min_argc` arguments, the name
    /// included (negative). A command without options (RL.ACQUIRE, RL.RELEASE)
    /// checks for more itself, to name an option given to it.
    pub const fn arity(&self) -> i32 {
        -(self.min_argc as i32)
    }

    /// Its positional parameters after the key, as a policy or an error names them.
    pub fn params(&self) -> &'static [Arg] {
        self.args.split_at(1).1
    }
}

/// `key limit window`: RL.FIXED's and RL.SLIDINGCOUNTER's arguments.
const QUOTA_ARGS: &[Arg] = &[
    Arg::new(c"key", ArgKind::Key),
    Arg::new(c"limit", COUNT),
    Arg::new(c"window", ArgKind::Duration),
];

/// `key capacity tokens period`: RL.BUCKET's and RL.GCRA's arguments.
const RATE_ARGS: &[Arg] = &[
    Arg::new(c"key", ArgKind::Key),
    Arg::new(c"capacity", COUNT),
    Arg::new(c"tokens", COUNT),
    Arg::new(c"period", ArgKind::Duration),
];

/// A lease's name: RL.ACQUIRE's and RL.RELEASE's last argument.
const ID: Arg = Arg::new(c"id", ArgKind::Text { max: MAX_ID_LEN });

pub const FIXED: Command = Command::rl(
    c"RL.FIXED",
    c"write deny-oom fast",
    c"Counts units in an epoch-aligned fixed window and admits at most limit per window",
    c"O(1)",
    QUOTA_ARGS,
)
.taking(COST_REFUND_DEBIT)
.policy(c"FIXED")
.function("rl_fixed")
.plain_rate();

pub const SLIDING: Command = Command::rl(
    c"RL.SLIDING",
    c"write deny-oom",
    c"Logs accepted units in a sorted set and admits at most limit in any window-long interval",
    c"O(log N + M) with N the units logged and M those that left the window or the cost",
    &[
        Arg::new(c"key", ArgKind::Key),
        Arg::new(c"limit", ENTRIES),
        Arg::new(c"window", ArgKind::Duration),
    ],
)
.policy(c"SLIDING")
.function("rl_sliding")
.plain_rate();

pub const BUCKET: Command = Command::rl(
    c"RL.BUCKET",
    c"write deny-oom fast",
    c"Takes cost tokens from a bucket of capacity tokens that refills tokens per period",
    c"O(1)",
    RATE_ARGS,
)
.taking(COST_REFUND_DEBIT)
.policy(c"BUCKET")
.function("rl_bucket")
.plain_rate();

pub const GCRA: Command = Command::rl(
    c"RL.GCRA",
    c"write deny-oom fast",
    c"Token bucket of capacity units refilling tokens per period, kept as one integer (GCRA)",
    c"O(1)",
    RATE_ARGS,
)
.taking(&[Opt::Cost, Opt::Refund, Opt::Debit, Opt::Delay, Opt::Shadow])
.policy(c"GCRA")
.function("rl_gcra")
.plain_rate();

pub const SLIDINGCOUNTER: Command = Command::rl(
    c"RL.SLIDINGCOUNTER",
    c"write deny-oom fast",
    c"Estimates a sliding window from two fixed-window counts and admits at most limit in it",
    c"O(1)",
    QUOTA_ARGS,
)
.taking(COST_REFUND_DEBIT)
.policy(c"SLIDINGCOUNTER")
.function("rl_slidingcounter")
.plain_rate();

/// redis-cell's command, its arguments and reply: not in the library (the library
/// is for servers without modules; redis-cell is a module).
pub const THROTTLE: Command = Command {
    name: c"CL.THROTTLE",
    flags: c"write deny-oom fast",
    summary:
        c"redis-cell's rate limiter: max_burst + 1 units at once, count more per period (GCRA)",
    complexity: c"O(1)",
    args: &[
        Arg::new(c"key", ArgKind::Key),
        Arg::new(
            c"max_burst",
            ArgKind::Integer {
                min: 0,
                max: Max::Value(MAX_COUNT - 1),
            },
        ),
        Arg::new(c"count", COUNT),
        Arg::new(c"period", ArgKind::Duration),
    ],
    keys: Keys::First,
    // The command name, the key and three parameters; then an optional quantity.
    min_argc: 5,
    options: &[],
    quantity: Some(c"quantity"),
    optional: true,
    policy: None,
    policy_options: None,
    function: None,
    reply: Reply::Throttle,
    looked_at: false,
    plain_rate: false,
};

pub const ALL: Command = Command {
    name: c"RL.ALL",
    // getkeys-api: Cluster finds the keys by asking (the module answers from numkeys).
    flags: c"write deny-oom getkeys-api",
    summary: c"Checks several limits at one instant and consumes from all of them or none",
    complexity: c"The sum of each key's command's complexity",
    args: &[
        Arg::new(
            c"numkeys",
            ArgKind::Integer {
                min: 1,
                max: Max::Value(MAX_KEYS),
            },
        ),
        Arg::new(c"key", ArgKind::Keys),
        Arg::new(c"policy", ArgKind::Policies),
    ],
    keys: Keys::Counted,
    // RL.ALL 1 key FIXED limit window
    min_argc: 6,
    // DEBIT applies to every key: a policy that takes none is an error naming it.
    // (A GCRA policy's DELAY follows it, or comes after the last policy; SHADOW
    // comes before a policy, never after the last one.)
    options: &[Opt::Cost, Opt::Refund, Opt::Debit],
    quantity: None,
    optional: false,
    policy: None,
    policy_options: None,
    function: Some("rl_all"),
    reply: Reply::All,
    looked_at: false,
    plain_rate: false,
};

/// At most this many keys in one RL.ALL call.
pub const MAX_KEYS: u64 = 16;

pub const ACQUIRE: Command = Command {
    // Exactly key limit ttl id: no options. In RL.ALL, the call's COST (a lease or,
    // COST 0, a look), but no REFUND (RL.RELEASE ends a lease) and no DEBIT.
    options: &[],
    policy_options: Some(&[Opt::Cost]),
    ..Command::rl(
        c"RL.ACQUIRE",
        c"write deny-oom",
        c"Takes or renews a named lease that ends by itself after ttl, at most limit held at once",
        c"O(log N + M) with N the leases held and M those that expired",
        &[
            Arg::new(c"key", ArgKind::Key),
            Arg::new(c"limit", ENTRIES),
            Arg::new(c"ttl", ArgKind::Duration),
            ID,
        ],
    )
    .policy(c"ACQUIRE")
    .function("rl_acquire")
};

pub const RELEASE: Command = Command {
    options: &[],
    reply: Reply::Released,
    ..Command::rl(
        // Not deny-oom: like DEL, it must free a slot on a server at maxmemory.
        c"RL.RELEASE",
        c"write fast",
        c"Ends the lease named id early, freeing its slot",
        c"O(log N) with N the leases held",
        &[Arg::new(c"key", ArgKind::Key), ID],
    )
    .function("rl_release")
};

/// Escalating blocks for repeat offenders: COST only (strikes are never given back).
pub const PENALTY: Command = Command {
    options: &[Opt::Cost, Opt::Shadow],
    ..Command::rl(
        c"RL.PENALTY",
        c"write deny-oom fast",
        c"Counts an offender's strikes and blocks the key for escalating periods, from block doubling up to max",
        c"O(1)",
        &[
            Arg::new(c"key", ArgKind::Key),
            Arg::new(c"strikes", COUNT),
            Arg::new(c"window", ArgKind::Duration),
            Arg::new(c"block", ArgKind::Duration),
            Arg::new(c"max", ArgKind::Duration),
        ],
    )
    .looked_at_policy(c"PENALTY")
    .function("rl_penalty")
};

/// One budget shared by weight across tenants.
pub const SHARE: Command = Command::rl(
    c"RL.SHARE",
    c"write deny-oom fast",
    c"Shares one budget of capacity units refilling tokens per period across tenants by weight, lending idle shares",
    c"O(1): a bounded number of fields, whatever the number of tenants",
    &[
        Arg::new(c"key", ArgKind::Key),
        Arg::new(c"tenant", ArgKind::Text { max: MAX_TENANT_LEN }),
        Arg::new(
            c"weight",
            ArgKind::Integer {
                min: 1,
                max: Max::Value(MAX_WEIGHT),
            },
        ),
        Arg::new(c"capacity", COUNT),
        Arg::new(c"tokens", COUNT),
        Arg::new(c"period", ArgKind::Duration),
    ],
)
.taking(COST_REFUND_DEBIT)
.policy(c"SHARE")
.function("rl_share");

/// A calendar quota: RL.FIXED's counter over periods of a calendar in a time zone.
pub const QUOTA: Command = Command {
    // In RL.ALL the call's COST, REFUND or DEBIT; its calendar options follow the
    // policy itself.
    policy_options: Some(COST_REFUND_DEBIT),
    ..Command::rl(
        c"RL.QUOTA",
        c"write deny-oom fast",
        c"Counts units per calendar period (day, week, month or year) starting at a local time in a time zone, and admits at most limit per period",
        c"O(1)",
        &[
            Arg::new(c"key", ArgKind::Key),
            Arg::new(c"limit", COUNT),
            Arg::new(
                c"unit",
                ArgKind::Word {
                    words: &["day", "week", "month", "year"],
                },
            ),
        ],
    )
    .taking(&[
        Opt::Cost,
        Opt::Refund,
        Opt::Debit,
        Opt::Every,
        Opt::On,
        Opt::At,
        Opt::Tz,
        Opt::Shadow,
    ])
    .policy(c"QUOTA")
    .function("rl_quota")
};

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn arity_follows_the_arguments() {
        assert!(FIXED.accepts_argc(4) && FIXED.accepts_argc(6) && !FIXED.accepts_argc(3));
        assert!(THROTTLE.accepts_argc(5) && THROTTLE.accepts_argc(6) && !THROTTLE.accepts_argc(7));
        assert!(ACQUIRE.accepts_argc(5) && !ACQUIRE.accepts_argc(6));
        assert!(RELEASE.accepts_argc(3) && !RELEASE.accepts_argc(4));
    }
}
