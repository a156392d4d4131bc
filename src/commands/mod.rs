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

use crate::algorithms::{Cost, Count, Decision, Duration, Millis};
use crate::args;
use crate::error::{Error, Result};
use crate::server;
use crate::stats::{self, CommandId, Outcome};
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
    pub id: CommandId,
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

/// `limit window`: the parameters RL.FIXED and RL.SLIDING share.
#[derive(Debug, Clone, Copy)]
pub struct LimitWindow {
    pub limit: Count,
    pub window: Duration,
}

impl LimitWindow {
    fn parse(args: &[&[u8]]) -> Result<Self> {
        Ok(LimitWindow {
            limit: args::count("limit", args[0])?,
            window: args::duration("window", args[1])?,
        })
    }
}

/// One RL command: how it parses its parameters and how it applies them to a key.
pub trait Limiter {
    const SPEC: Spec;
    type Params;

    /// Parses the positional arguments after the key.
    fn parse(args: &[&[u8]]) -> Result<Self::Params>;

    /// Loads the key's state, decides, stores and propagates an allowed write.
    fn apply(key: &Key, params: &Self::Params, now: Millis, cost: Cost) -> Result<Decision>;
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
/// becomes an error reply instead of aborting the server.
pub extern "C" fn dispatch<L: Limiter>(
    ctx: *mut RedisModuleCtx,
    argv: *mut *mut RedisModuleString,
    argc: c_int,
) -> c_int {
    let argc = usize::try_from(argc).unwrap_or(0);
    if argv.is_null() || argc < L::SPEC.min_argc() {
        unsafe { rm!(RedisModule_WrongArity)(ctx) };
        return raw::REDISMODULE_OK as c_int;
    }
    let argv = Argv(unsafe { std::slice::from_raw_parts(argv, argc) });
    let outcome = catch_unwind(AssertUnwindSafe(|| run::<L>(ctx, &argv)));
    let result = match outcome {
        Ok(result) => result,
        Err(_) => Err(Error::Internal(L::SPEC.name_str())),
    };
    match result {
        Ok(decision) => {
            let counted = if decision.allowed {
                Outcome::Allowed
            } else {
                Outcome::Rejected
            };
            stats::record(L::SPEC.id, counted);
            reply(ctx, &decision);
        }
        Err(e) => {
            stats::record(L::SPEC.id, Outcome::Error);
            reply_error(ctx, &e);
        }
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
    unsafe {
        rm!(RedisModule_ReplyWithArray)(ctx, fields.len() as c_long);
        for f in fields {
            rm!(RedisModule_ReplyWithLongLong)(ctx, f as c_longlong);
        }
    }
}

fn reply_error(ctx: *mut RedisModuleCtx, e: &Error) {
    // Messages never hold NUL (arguments are escaped when echoed), but a CString
    // must not be able to fail here.
    let line = format!("{} {}", e.code(), e).replace('\0', " ");
    let line = std::ffi::CString::new(line).unwrap_or_default();
    unsafe { rm!(RedisModule_ReplyWithError)(ctx, line.as_ptr()) };
}

/// Registers one command with Redis, its key position, its documentation and, on
/// servers that have them (7.2+), its ACL categories. `ratelimit` is true when the
/// module's own `@ratelimit` category was created.
pub fn register<L: Limiter>(ctx: *mut RedisModuleCtx, ratelimit: bool) -> Result<(), String> {
    let spec = &L::SPEC;
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
