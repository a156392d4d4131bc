//! The RL.* commands: the glue between Redis and the algorithms.
//!
//! Every command runs the same steps in [`dispatch`]: check the argument count,
//! parse, read the server clock once, open the key, load → decide → store and
//! propagate, reply. Each command supplies only its parsing and its storage pair.

mod bucket;
mod fixed;
pub mod info;
mod sliding;

use std::ffi::CStr;
use std::os::raw::{c_int, c_long, c_longlong};
use std::panic::{catch_unwind, AssertUnwindSafe};

use redis_module::raw::{self, RedisModuleCtx, RedisModuleString};

use crate::algorithms::{Cost, Decision, Millis, Quota};
use crate::args;
use crate::error::{Error, Result};
use crate::server::{self, optional};
use crate::stats::{Counters, Verdict};
use crate::storage::{self, rm, Key};

pub use bucket::Bucket;
pub use fixed::Fixed;
pub use sliding::Sliding;

/// A positional argument as COMMAND DOCS shows it.
pub struct Arg {
    pub name: &'static CStr,
    pub kind: ArgKind,
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
    /// Positional arguments, the key first; `[COST n]` follows them all.
    pub args: &'static [Arg],
}

impl Spec {
    /// Arguments including the command name, as Redis counts them.
    fn min_argc(&self) -> usize {
        1 + self.args.len()
    }

    pub fn name_str(&self) -> &'static str {
        self.name.to_str().unwrap_or("RL")
    }
}

/// Parses `limit window`, the parameters RL.FIXED and RL.SLIDING share.
fn quota(args: &[&[u8]]) -> Result<Quota> {
    Ok(Quota::new(
        args::count("limit", args[0])?,
        args::duration("window", args[1])?,
    ))
}

/// One RL command: how it parses its parameters and how it applies them to a key.
pub trait Limiter {
    const SPEC: Spec;
    type Params;

    /// Parses the positional arguments after the key.
    fn parse(args: &[&[u8]]) -> Result<Self::Params>;

    /// Loads the key's state, decides, stores and propagates an allowed write.
    fn apply(key: &Key, params: &Self::Params, now: Millis, cost: Cost) -> Result<Decision>;

    /// This command's INFO counters.
    const STATS: &'static Counters;
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
        if argv.is_null() || argc < L::SPEC.min_argc() {
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
                reply(ctx, &decision);
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

fn run<L: Limiter>(ctx: *mut RedisModuleCtx, argv: &Argv) -> Result<Decision> {
    let positional = L::SPEC.args.len();
    let mut fixed_args: [&[u8]; 4] = [&[]; 4];
    for (i, slot) in fixed_args.iter_mut().enumerate().take(positional - 1) {
        *slot = argv.bytes(2 + i);
    }
    let params = L::parse(&fixed_args[..positional - 1])?;
    let options = args::options((1 + positional..argv.0.len()).map(|i| argv.bytes(i)))?;
    #[cfg(feature = "testing")]
    if argv.bytes(1) == b"__rl_panic__" {
        panic!("injected by the testing feature");
    }
    let now = server::now_ms();
    // SAFETY: `ctx` and the key name are the running command's.
    let key = unsafe { Key::open(ctx, argv.0[1]) };
    L::apply(&key, &params, now, options.cost)
}

fn reply(ctx: *mut RedisModuleCtx, d: &Decision) {
    let fields = [
        i64::from(d.allowed),
        d.limit as i64,
        d.remaining as i64,
        d.retry_after_ms(),
        d.reset_after_ms as i64,
    ];
    // SAFETY: `ctx` is the running command's context; one array of five integers.
    unsafe {
        rm!(RedisModule_ReplyWithArray)(ctx, fields.len() as c_long);
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
        return Err(format!("cannot register {}", spec.name_str()));
    }
    info::describe(ctx, spec)?;
    info::categorize(ctx, spec, ratelimit);
    Ok(())
}
