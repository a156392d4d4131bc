//! The RL.* commands: the glue between Redis and the algorithms.
//!
//! Every command runs the same steps in [`dispatch`]: check the argument count,
//! parse, read the server clock once, open the key, load → decide → store and
//! propagate, reply. Each command supplies only its parsing and its storage pair.

mod all;
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

#[cfg(feature = "fuzzing")]
pub use all::parses as parses_all;
pub use all::All;
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
    /// One or more keys (RL.ALL's, counted by the argument before them).
    Keys,
    Integer,
    /// A duration such as `60`, `1500ms` or `1m`.
    Duration,
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
    /// [`Limiter::delayed`].
    pub delay: bool,
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
            keys: Keys::First,
            min_argc: 1 + args.len(),
            cost: CostArg::Option,
            optional: false,
            delay: false,
        }
    }

    /// The same command, taking `[DELAY max]` too.
    const fn with_delay(self) -> Spec {
        Spec {
            delay: true,
            ..self
        }
    }

    /// At most this many (a positional cost is the only optional argument).
    fn max_argc(&self) -> Option<usize> {
        match self.cost {
            CostArg::Option => None,
            CostArg::Positional(_) => Some(self.min_argc + 1),
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
    /// (`[COST n | REFUND n]`, and `[DELAY max]` if the SPEC says so). CL.THROTTLE
    /// replaces it (a positional quantity, no options).
    fn parse(args: &[&[u8]]) -> Result<(Self::Params, Amount)> {
        let (positional, options) = args.split_at(Self::SPEC.args.len() - 1);
        let params = Self::parse_params(positional)?;
        let options = args::options(options.iter().copied(), Self::SPEC.delay)?;
        let params = match options.delay {
            Some(max_ms) => Self::delayed(params, max_ms),
            None => params,
        };
        Ok((params, options.amount))
    }

    /// The parameters with `DELAY max` (ms) applied. Only called for a command
    /// whose SPEC takes DELAY, which must replace this.
    fn delayed(params: Self::Params, _max_ms: u64) -> Self::Params {
        params
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

/// What [`dispatch`] runs: a command that parses its arguments, decides and
/// writes, and replies. Every [`Limiter`] is one (on one key); RL.ALL is one on
/// several.
pub trait Handler {
    const SPEC: Spec;
    const STATS: &'static Counters;
    /// What the call decided, for [`Handler::reply`].
    type Decided;

    /// Everything after the argument count check, up to the reply.
    fn run(ctx: *mut RedisModuleCtx, argv: &Argv) -> Result<Self::Decided>;

    /// Whether the call was allowed (for the INFO counters).
    fn allowed(decided: &Self::Decided) -> bool;

    fn reply(ctx: *mut RedisModuleCtx, decided: &Self::Decided);
}

impl<L: Limiter> Handler for L {
    const SPEC: Spec = L::SPEC;
    const STATS: &'static Counters = L::STATS;
    type Decided = Decision;

    fn run(ctx: *mut RedisModuleCtx, argv: &Argv) -> Result<Decision> {
        let mut inline = Inline::default();
        let (params, amount) = L::parse(inline.args_from(argv, 2))?;
        #[cfg(feature = "testing")]
        if argv.bytes(1) == b"__rl_panic__" {
            panic!("injected by the testing feature");
        }
        let now = server::now_ms();
        // SAFETY: `ctx` and the key name are the running command's.
        let key = unsafe { Key::open(ctx, argv.0[1]) };
        apply::<L>(&key, &params, now, amount)
    }

    fn allowed(d: &Decision) -> bool {
        d.allowed
    }

    fn reply(ctx: *mut RedisModuleCtx, d: &Decision) {
        <L as Limiter>::reply(ctx, d)
    }
}

/// One row of [`COMMANDS`].
pub struct Command {
    pub spec: &'static Spec,
    pub stats: &'static Counters,
    register: fn(*mut RedisModuleCtx, bool) -> Result<(), String>,
}

impl Command {
    const fn of<H: Handler>() -> Command {
        Command {
            spec: &H::SPEC,
            stats: H::STATS,
            register: register::<H>,
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
    Command::of::<All>(),
];

/// Registers every command in [`COMMANDS`].
pub fn register_all(ctx: *mut RedisModuleCtx, ratelimit: bool) -> Result<(), String> {
    COMMANDS
        .iter()
        .try_for_each(|c| (c.register)(ctx, ratelimit))
}

/// The argument vector of the running command.
pub struct Argv<'a>(&'a [*mut RedisModuleString]);

impl<'a> Argv<'a> {
    fn bytes(&self, i: usize) -> &'a [u8] {
        // SAFETY: the argument vector of the running command: its strings stay alive
        // and unmodified until the command returns, which outlives 'a.
        unsafe { storage::bytes_of(self.0[i]) }
    }
}

/// The entry point Redis calls for command `H`. No panic gets past it: a bug
/// becomes an error reply instead of aborting the server, and everything that
/// could panic (counting, replying) runs inside the guard.
pub extern "C" fn dispatch<H: Handler>(
    ctx: *mut RedisModuleCtx,
    argv: *mut *mut RedisModuleString,
    argc: c_int,
) -> c_int {
    let guarded = catch_unwind(AssertUnwindSafe(|| {
        let argc = usize::try_from(argc).unwrap_or(0);
        if matches!(H::SPEC.keys, Keys::Counted)
            // SAFETY: `ctx` is the running command's context.
            && unsafe { rm!(RedisModule_IsKeysPositionRequest)(ctx) } != 0
        {
            report_counted_keys(ctx, argv, argc);
            return;
        }
        if argv.is_null() || !H::SPEC.accepts_argc(argc) {
            // SAFETY: `ctx` is the running command's context.
            unsafe { rm!(RedisModule_WrongArity)(ctx) };
            H::STATS.record(Verdict::Error);
            return;
        }
        // SAFETY: the server passes `argc` valid argument strings that live for
        // the whole call.
        let argv = Argv(unsafe { std::slice::from_raw_parts(argv, argc) });
        match H::run(ctx, &argv) {
            Ok(decided) => {
                H::STATS.record(if H::allowed(&decided) {
                    Verdict::Allowed
                } else {
                    Verdict::Rejected
                });
                H::reply(ctx, &decided);
            }
            Err(e) => {
                H::STATS.record(Verdict::Error);
                reply_error(ctx, &e);
            }
        }
    }));
    if guarded.is_err() {
        // A bug: the key was opened but nothing reached the reply. Whatever the
        // panic left half-done, the client gets an error, never a dead server.
        reply_error(ctx, &Error::Internal(H::SPEC.name_str()));
    }
    raw::REDISMODULE_OK as c_int
}

/// Answers the server's question "where are the keys?" for `numkeys key [key …]`
/// (the `getkeys-api` call Cluster routing uses: it reads no key specs). A bad
/// numkeys reports none; the call itself then answers the error.
fn report_counted_keys(ctx: *mut RedisModuleCtx, argv: *mut *mut RedisModuleString, argc: usize) {
    if argv.is_null() || argc < 2 {
        return;
    }
    // SAFETY: the server passes `argc` valid argument strings for the call.
    let argv = Argv(unsafe { std::slice::from_raw_parts(argv, argc) });
    let numkeys = args::integer("numkeys", argv.bytes(1), 1, MAX_COUNTED_KEYS).unwrap_or(0);
    for pos in (2..argc).take(numkeys as usize) {
        // SAFETY: `ctx` is the keys-position request's context; `pos` < argc.
        unsafe { rm!(RedisModule_KeyAtPos)(ctx, pos as c_int) };
    }
}

/// At most this many keys in one RL.ALL call.
pub const MAX_COUNTED_KEYS: u64 = 16;

/// How many arguments a call may have after its key without allocating.
const INLINE_ARGS: usize = 8;

/// The arguments from some position on as byte slices: on the stack for every
/// well-formed single-key call, on the heap beyond [`INLINE_ARGS`].
#[derive(Default)]
struct Inline<'a> {
    inline: [&'a [u8]; INLINE_ARGS],
    spilled: Vec<&'a [u8]>,
}

impl<'a> Inline<'a> {
    fn args_from(&mut self, argv: &Argv<'a>, first: usize) -> &[&'a [u8]] {
        let rest = first.min(argv.0.len())..argv.0.len();
        if rest.len() <= INLINE_ARGS {
            for (slot, i) in self.inline.iter_mut().zip(rest.clone()) {
                *slot = argv.bytes(i);
            }
            &self.inline[..rest.len()]
        } else {
            self.spilled = rest.map(|i| argv.bytes(i)).collect();
            &self.spilled
        }
    }
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
pub fn register<H: Handler>(ctx: *mut RedisModuleCtx, ratelimit: bool) -> Result<(), String> {
    let spec = &H::SPEC;
    // Counted keys have no (first, last, step) form: the key spec COMMAND INFO
    // shows (set by info::describe) is how the server finds them.
    let (first, last, step) = match spec.keys {
        Keys::First => (1, 1, 1),
        Keys::Counted => (0, 0, 0),
    };
    // SAFETY: `ctx` is the load context; name and flags are NUL-terminated
    // statics; `dispatch::<H>` has the server's command signature.
    let created = unsafe {
        rm!(RedisModule_CreateCommand)(
            ctx,
            spec.name.as_ptr(),
            Some(dispatch::<H>),
            spec.flags.as_ptr(),
            first,
            last,
            step,
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
