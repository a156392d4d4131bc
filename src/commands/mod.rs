//! The RL.* commands: the glue between Redis and the algorithms.
//!
//! Every command runs the same steps in [`dispatch`]: check the argument count,
//! parse, read the server clock once, open the key, load → decide → store and
//! propagate, reply. Each command supplies only its parsing and its storage pair.

mod bucket;
mod fixed;
mod gcra;
pub mod info;
mod sliding;
mod sliding_counter;
mod throttle;

use std::ffi::CStr;
use std::os::raw::{c_int, c_long, c_longlong};
use std::panic::{catch_unwind, AssertUnwindSafe};

use redis_module::raw::{self, RedisModuleCtx, RedisModuleString};

use crate::algorithms::{Amount, Decision, Millis, Outcome, Quota, Rate};
use crate::args;
use crate::error::{Error, Result};
use crate::server::{self, optional};
use crate::stats::{Counters, Verdict};
use crate::storage::{self, rm, Key};

pub use bucket::Bucket;
pub use fixed::Fixed;
pub use gcra::Gcra;
pub use sliding::Sliding;
pub use sliding_counter::SlidingCounter;
pub use throttle::Throttle;

/// A positional argument as COMMAND DOCS shows it.
pub struct Arg {
    pub name: &'static CStr,
    pub kind: ArgKind,
}

impl Arg {
    const fn new(name: &'static CStr, kind: ArgKind) -> Self {
        Arg { name, kind }
    }
}

#[derive(Clone, Copy)]
pub enum ArgKind {
    Key,
    Integer,
    /// A duration such as `60`, `1500ms` or `1m`.
    Duration,
}

/// What Redis needs to know about a command: name, flags and documentation.
pub struct Spec {
    pub name: &'static CStr,
    pub flags: &'static CStr,
    pub summary: &'static CStr,
    pub complexity: &'static CStr,
    /// Positional arguments, the key first; the cost follows them all.
    pub args: &'static [Arg],
    /// How the cost is given.
    pub cost: CostArg,
    /// Another module may own this name (CL.THROTTLE, redis-cell's): if it is
    /// taken, RL loads without it and logs so.
    pub optional: bool,
}

/// How a command takes its cost.
#[derive(Clone, Copy)]
pub enum CostArg {
    /// `[COST n]`, RL's option.
    Option,
    /// A last optional positional argument with this name (CL.THROTTLE's quantity).
    Positional(&'static CStr),
}

impl Spec {
    /// An RL.* command: `[COST n]` after its positional arguments, registered always.
    const fn rl(
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
            cost: CostArg::Option,
            optional: false,
        }
    }

    /// Arguments including the command name, as Redis counts them.
    fn min_argc(&self) -> usize {
        1 + self.args.len()
    }

    /// At most this many (a positional cost is the only optional argument).
    fn max_argc(&self) -> Option<usize> {
        match self.cost {
            CostArg::Option => None,
            CostArg::Positional(_) => Some(self.min_argc() + 1),
        }
    }

    /// Whether a call of `argc` arguments (the command name included) has the
    /// command's arity.
    pub fn accepts_argc(&self, argc: usize) -> bool {
        argc >= self.min_argc() && self.max_argc().is_none_or(|max| argc <= max)
    }

    pub fn name_str(&self) -> &'static str {
        self.name.to_str().unwrap_or("RL")
    }
}

/// `key limit window`: RL.FIXED's, RL.SLIDING's and RL.SLIDINGCOUNTER's arguments.
const QUOTA_ARGS: &[Arg] = &[
    Arg::new(c"key", ArgKind::Key),
    Arg::new(c"limit", ArgKind::Integer),
    Arg::new(c"window", ArgKind::Duration),
];

/// `key capacity tokens period`: RL.BUCKET's and RL.GCRA's arguments.
const RATE_ARGS: &[Arg] = &[
    Arg::new(c"key", ArgKind::Key),
    Arg::new(c"capacity", ArgKind::Integer),
    Arg::new(c"tokens", ArgKind::Integer),
    Arg::new(c"period", ArgKind::Duration),
];

/// Parses `limit window`, the parameters RL.FIXED, RL.SLIDING and
/// RL.SLIDINGCOUNTER share.
fn quota(args: &[&[u8]]) -> Result<Quota> {
    Ok(Quota::new(
        args::count("limit", args[0])?,
        args::duration("window", args[1])?,
    ))
}

/// One RL command: how it parses its parameters, decides on a key's state and
/// writes what it decided.
pub trait Limiter {
    const SPEC: Spec;
    type Params;
    /// What an allowed call (or a refund) writes to the key.
    type Write;

    /// Parses the positional arguments after the key (not the cost).
    fn parse_params(args: &[&[u8]]) -> Result<Self::Params>;

    /// Parses every argument after the key: the positional ones, then the options
    /// (`[COST n | REFUND n]`). CL.THROTTLE replaces it (a positional quantity, no
    /// options).
    fn parse(args: &[&[u8]]) -> Result<(Self::Params, Amount)> {
        let (positional, options) = args.split_at(Self::SPEC.args.len() - 1);
        let params = Self::parse_params(positional)?;
        Ok((params, args::options(options.iter().copied())?.amount))
    }

    /// Loads the key's state and decides; writes nothing. RL.ALL decides every key
    /// this way before it writes any.
    fn decide(
        key: &Key,
        params: &Self::Params,
        now: Millis,
        amount: Amount,
    ) -> Result<Outcome<Self::Write>>;

    /// Writes what [`Limiter::decide`] returned, and propagates it.
    fn store(key: &Key, write: Self::Write) -> Result<()>;

    /// Replies with the decision: RL's five integers unless the command says
    /// otherwise (CL.THROTTLE).
    fn reply(ctx: *mut RedisModuleCtx, d: &Decision) {
        reply_integers(ctx, fields(d));
    }

    /// This command's INFO counters.
    const STATS: &'static Counters;
}

/// A decision as RL's five reply integers.
fn fields(d: &Decision) -> [i64; 5] {
    [
        i64::from(d.allowed),
        d.limit as i64,
        d.remaining as i64,
        d.retry_after_ms(),
        d.reset_after_ms as i64,
    ]
}

/// Decides on one key and stores what an allowed call writes.
fn apply<L: Limiter>(
    key: &Key,
    params: &L::Params,
    now: Millis,
    amount: Amount,
) -> Result<Decision> {
    let outcome = L::decide(key, params, now, amount)?;
    if let Some(write) = outcome.store {
        L::store(key, write)?;
    }
    Ok(outcome.decision)
}

/// One row of [`COMMANDS`].
pub struct Command {
    pub spec: &'static Spec,
    pub stats: &'static Counters,
    register: fn(*mut RedisModuleCtx, bool) -> Result<(), String>,
}

impl Command {
    const fn of<L: Limiter>() -> Command {
        Command {
            spec: &L::SPEC,
            stats: L::STATS,
            register: register::<L>,
        }
    }
}

/// Every command the module registers. Registration and INFO iterate this list,
/// so a new command is one row here (and its file).
pub static COMMANDS: &[Command] = &[
    Command::of::<Fixed>(),
    Command::of::<Sliding>(),
    Command::of::<Bucket>(),
    Command::of::<Gcra>(),
    Command::of::<SlidingCounter>(),
    Command::of::<Throttle>(),
];

/// Registers every command in [`COMMANDS`].
pub fn register_all(ctx: *mut RedisModuleCtx, ratelimit: bool) -> Result<(), String> {
    COMMANDS
        .iter()
        .try_for_each(|c| (c.register)(ctx, ratelimit))
}

/// The argument vector of the running command.
struct Argv<'a>(&'a [*mut RedisModuleString]);

impl<'a> Argv<'a> {
    fn bytes(&self, i: usize) -> &'a [u8] {
        // SAFETY: the argument vector of the running command: its strings stay alive
        // and unmodified until the command returns, which outlives 'a.
        unsafe { storage::bytes_of(self.0[i]) }
    }
}

/// The entry point Redis calls for command `L`. No panic gets past it: a bug
/// becomes an error reply instead of aborting the server, and everything that
/// could panic (counting, replying) runs inside the guard.
pub extern "C" fn dispatch<L: Limiter>(
    ctx: *mut RedisModuleCtx,
    argv: *mut *mut RedisModuleString,
    argc: c_int,
) -> c_int {
    let guarded = catch_unwind(AssertUnwindSafe(|| {
        let argc = usize::try_from(argc).unwrap_or(0);
        if argv.is_null() || !L::SPEC.accepts_argc(argc) {
            // SAFETY: `ctx` is the running command's context.
            unsafe { rm!(RedisModule_WrongArity)(ctx) };
            L::STATS.record(Verdict::Error);
            return;
        }
        // SAFETY: the server passes `argc` valid argument strings that live for
        // the whole call.
        let argv = Argv(unsafe { std::slice::from_raw_parts(argv, argc) });
        match run::<L>(ctx, &argv) {
            Ok(decision) => {
                L::STATS.record(if decision.allowed {
                    Verdict::Allowed
                } else {
                    Verdict::Rejected
                });
                L::reply(ctx, &decision);
            }
            Err(e) => {
                L::STATS.record(Verdict::Error);
                reply_error(ctx, &e);
            }
        }
    }));
    if guarded.is_err() {
        // A bug: the key was opened but nothing reached the reply. Whatever the
        // panic left half-done, the client gets an error, never a dead server.
        reply_error(ctx, &Error::Internal(L::SPEC.name_str()));
    }
    raw::REDISMODULE_OK as c_int
}

/// How many arguments after the key a call may have without allocating.
const INLINE_ARGS: usize = 8;

fn run<L: Limiter>(ctx: *mut RedisModuleCtx, argv: &Argv) -> Result<Decision> {
    let rest = 2..argv.0.len();
    // The arguments after the key, on the stack for every well-formed call.
    let mut inline: [&[u8]; INLINE_ARGS] = [&[]; INLINE_ARGS];
    let spilled: Vec<&[u8]>;
    let args: &[&[u8]] = if rest.len() <= INLINE_ARGS {
        for (slot, i) in inline.iter_mut().zip(rest.clone()) {
            *slot = argv.bytes(i);
        }
        &inline[..rest.len()]
    } else {
        spilled = rest.map(|i| argv.bytes(i)).collect();
        &spilled
    };
    let (params, amount) = L::parse(args)?;
    #[cfg(feature = "testing")]
    if argv.bytes(1) == b"__rl_panic__" {
        panic!("injected by the testing feature");
    }
    let now = server::now_ms();
    // SAFETY: `ctx` and the key name are the running command's.
    let key = unsafe { Key::open(ctx, argv.0[1]) };
    apply::<L>(&key, &params, now, amount)
}

/// Replies with an array of integers.
fn reply_integers<const N: usize>(ctx: *mut RedisModuleCtx, fields: [i64; N]) {
    // SAFETY: `ctx` is the running command's context; one array of N integers.
    unsafe {
        rm!(RedisModule_ReplyWithArray)(ctx, N as c_long);
        for f in fields {
            rm!(RedisModule_ReplyWithLongLong)(ctx, f as c_longlong);
        }
    }
}

/// Replies with `e`. Never panics: it also runs after the guard caught a panic.
fn reply_error(ctx: *mut RedisModuleCtx, e: &Error) {
    // Messages never hold NUL (arguments are escaped when echoed), but a CString
    // must not be able to fail here.
    let line = format!("{} {}", e.code(), e).replace('\0', " ");
    let line = std::ffi::CString::new(line).unwrap_or_default();
    if let Some(reply) = optional!(RedisModule_ReplyWithError) {
        // SAFETY: `ctx` is the running command's context; `line` is NUL-terminated.
        unsafe { reply(ctx, line.as_ptr()) };
    }
}

/// Registers one command with Redis, its key position, its documentation and, on
/// servers that have them (7.2+), its ACL categories. `ratelimit` is true when the
/// module's own `@ratelimit` category was created.
pub fn register<L: Limiter>(ctx: *mut RedisModuleCtx, ratelimit: bool) -> Result<(), String> {
    let spec = &L::SPEC;
    // SAFETY: `ctx` is the load context; name and flags are NUL-terminated
    // statics; `dispatch::<L>` has the server's command signature.
    let created = unsafe {
        rm!(RedisModule_CreateCommand)(
            ctx,
            spec.name.as_ptr(),
            Some(dispatch::<L>),
            spec.flags.as_ptr(),
            1,
            1,
            1,
        )
    };
    if created != raw::REDISMODULE_OK as c_int {
        if spec.optional {
            server::log_warning(
                ctx,
                &format!(
                    "rl: {} is already registered (by redis-cell?): loading without RL's",
                    spec.name_str()
                ),
            );
            return Ok(());
        }
        return Err(format!("cannot register {}", spec.name_str()));
    }
    info::describe(ctx, spec)?;
    info::categorize(ctx, spec, ratelimit);
    Ok(())
}

/// Parses `capacity tokens period`, the parameters RL.BUCKET and RL.GCRA share.
fn rate(args: &[&[u8]]) -> Result<Rate> {
    Ok(Rate {
        capacity: args::count("capacity", args[0])?,
        tokens: args::count("tokens", args[1])?,
        period: args::duration("period", args[2])?,
    })
}
