//! What Redis needs to know about each command: name, flags, arity, where its
//! keys are and the arguments COMMAND DOCS shows. Plain data: the framework
//! dispatches by it, the registry registers it, `docs` describes it.

use std::ffi::CStr;

use crate::args::Takes;

/// A positional argument as COMMAND DOCS shows it.
pub struct Arg {
    pub name: &'static CStr,
    pub kind: ArgKind,
}

impl Arg {
    pub(super) const fn new(name: &'static CStr, kind: ArgKind) -> Self {
        Arg { name, kind }
    }
}

#[derive(Clone, Copy)]
pub enum ArgKind {
    Key,
    /// One or more keys (RL.ALL's, counted by the argument before them).
    Keys,
    Integer,
    /// A duration such as `60`, `1500ms` or `1m`.
    Duration,
    /// Any bytes (RL.ACQUIRE's lease id).
    Text,
    /// One or more RL.ALL policies (`FIXED limit window | …`).
    Policies,
}

/// Where a command's keys are.
#[derive(Clone, Copy)]
pub enum Keys {
    /// One key, the first argument.
    First,
    /// `numkeys key [key …]`: the first argument counts the keys that follow.
    Counted,
}

/// What Redis needs to know about a command: name, flags and documentation.
pub struct Spec {
    pub name: &'static CStr,
    pub flags: &'static CStr,
    pub summary: &'static CStr,
    pub complexity: &'static CStr,
    /// Positional arguments, the key first; the cost follows them all.
    pub args: &'static [Arg],
    pub keys: Keys,
    /// The fewest arguments a call has, its name included.
    pub min_argc: usize,
    /// How the cost is given.
    pub cost: CostArg,
    /// Another module may own this name (CL.THROTTLE, redis-cell's): if it is
    /// taken, RL loads without it and logs so.
    pub optional: bool,
    /// Takes `[DELAY max]` (RL.GCRA; in RL.ALL, its GCRA policy): see
    /// `Limiter::delayed`.
    pub delay: bool,
    /// Takes `DEBIT n` in place of COST (every RL command whose state is a count or a
    /// level; not RL.SLIDING, whose log holds one entry per unit; in RL.ALL, its
    /// policy).
    pub debit: bool,
}

/// How a command takes its cost.
#[derive(Clone, Copy)]
pub enum CostArg {
    /// `[COST n]`, RL's option.
    Option,
    /// A last optional positional argument with this name (CL.THROTTLE's quantity).
    Positional(&'static CStr),
    /// None: the positional arguments are the whole call (RL.ACQUIRE, RL.RELEASE).
    None,
}

impl Spec {
    /// An RL.* command: `[COST n]` after its positional arguments, registered always.
    pub(super) const fn rl(
        name: &'static CStr,
        flags: &'static CStr,
        summary: &'static CStr,
        complexity: &'static CStr,
        args: &'static [Arg],
    ) -> Spec {
        Spec {
            name,
            flags,
            summary,
            complexity,
            args,
            keys: Keys::First,
            min_argc: 1 + args.len(),
            cost: CostArg::Option,
            optional: false,
            delay: false,
            debit: false,
        }
    }

    /// The same command, taking `[DELAY max]` too.
    pub(super) const fn with_delay(self) -> Spec {
        Spec {
            delay: true,
            ..self
        }
    }

    /// The same command, taking `DEBIT n` too.
    pub(super) const fn with_debit(self) -> Spec {
        Spec {
            debit: true,
            ..self
        }
    }

    /// The options the command takes besides COST and REFUND, for the parser.
    pub const fn takes(&self) -> Takes {
        Takes {
            name: match self.name.to_str() {
                Ok(name) => name,
                Err(_) => "RL",
            },
            delay: self.delay,
            debit: self.debit,
        }
    }

    /// At most this many (a positional cost is the only optional argument).
    fn max_argc(&self) -> Option<usize> {
        match self.cost {
            CostArg::Option => None,
            CostArg::Positional(_) => Some(self.min_argc + 1),
            CostArg::None => Some(self.min_argc),
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
}

/// `key limit window`: RL.FIXED's, RL.SLIDING's and RL.SLIDINGCOUNTER's arguments.
pub(super) const QUOTA_ARGS: &[Arg] = &[
    Arg::new(c"key", ArgKind::Key),
    Arg::new(c"limit", ArgKind::Integer),
    Arg::new(c"window", ArgKind::Duration),
];

/// `key capacity tokens period`: RL.BUCKET's and RL.GCRA's arguments.
pub(super) const RATE_ARGS: &[Arg] = &[
    Arg::new(c"key", ArgKind::Key),
    Arg::new(c"capacity", ArgKind::Integer),
    Arg::new(c"tokens", ArgKind::Integer),
    Arg::new(c"period", ArgKind::Duration),
];
