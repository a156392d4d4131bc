//! The steps every command runs, in [`dispatch`]: check the argument count,
//! parse, read the server clock once, open the key, load → decide → store and
//! propagate, reply. A single-key command is the core's type run as a [`Single`]
//! (its parsing and algorithm are the core's, its storage `crate::storage`'s); a
//! command with a flow of its own (RL.ALL) is a [`Handler`].

use std::marker::PhantomData;
use std::panic::{catch_unwind, AssertUnwindSafe};

use crate::config;
use crate::server::{self, Argv, Context};
use crate::stats::{Counters, Verdict};
use crate::storage::Server;
use crate::top;
use rl_core::algorithms::{Decision, Millis};
use rl_core::args;
use rl_core::command::{self, Answer, Runs};
use rl_core::error::{Error, Result};
use rl_core::table::{Command, Keys, Reply};

/// What [`dispatch`] runs: a command that parses its arguments, decides and
/// writes, and replies. Every [`Single`] is one (on one key); RL.ALL is one on
/// several.
pub trait Handler {
    const COMMAND: &'static Command;
    const STATS: &'static Counters;
    /// What the call decided, for [`Handler::reply`].
    type Decided;

    /// Everything after the argument count check, up to the reply: what the call
    /// decided, at the `now` it read.
    fn run(ctx: Context, argv: &Argv) -> Result<(Self::Decided, Millis)>;

    /// Counts the decided call: in INFO (allowed or rejected, or as a SHADOW trial;
    /// `near_limit` after an allowed one) and, for the keys it rejected, in RL.TOP
    /// (its SHADOW report for a SHADOW call or policy).
    fn count(argv: &Argv, decided: &Self::Decided, now: Millis);

    fn reply(ctx: Context, decided: &Self::Decided);
}

/// A single-key command of the core's list ([`rl_core::each_command!`]), run on the
/// server's keys: parse, read the clock once, open the key, decide, store, reply.
pub struct Single<C>(PhantomData<C>);

/// A command's INFO counters.
pub trait Counted {
    const STATS: &'static Counters;
}

impl<C: Runs + Counted> Handler for Single<C> {
    const COMMAND: &'static Command = C::ROW;
    const STATS: &'static Counters = C::STATS;
    /// The decision, and whether the call was SHADOW.
    type Decided = (Decision, bool);

    fn run(ctx: Context, argv: &Argv) -> Result<((Decision, bool), Millis)> {
        let mut inline = Inline::default();
        let (params, options) = C::parse(inline.args_from(argv, 2), config::settings())?;
        #[cfg(feature = "testing")]
        if argv.bytes(1) == b"__rl_panic__" {
            panic!("injected by the testing feature");
        }
        let now = server::now_ms();
        let key = ctx.open_key(argv, 1);
        // SHADOW changes only how the call is counted: the same decision and writes.
        let decision =
            command::apply::<C, Server>(&mut Server, &key, &params, now, options.amount)?;
        Ok(((decision, options.shadow), now))
    }

    /// RL.RELEASE's decision is no limit's: it counts no `near_limit`, and a release
    /// of no lease is no rejection for RL.TOP. A SHADOW call counts apart, and no
    /// `near_limit` (no caller is held to its limit).
    fn count(argv: &Argv, &(d, shadow): &(Decision, bool), now: Millis) {
        let limit = C::ROW.reply != Reply::Released;
        if shadow {
            C::STATS.record_shadow(d.allowed);
            if !d.allowed {
                top::shadow_rejected(argv.bytes(1), now);
            }
        } else if d.allowed {
            C::STATS.record(Verdict::Allowed);
            if limit && d.near_limit() {
                C::STATS.near_limit();
            }
        } else {
            C::STATS.record(Verdict::Rejected);
            if limit {
                top::rejected(argv.bytes(1), now);
            }
        }
    }

    fn reply(ctx: Context, (d, _): &(Decision, bool)) {
        match C::reply(d) {
            Answer::Five(fields) => ctx.reply_integers(fields),
            Answer::One(n) => ctx.reply_integer(n),
        }
    }
}

/// What the server runs for every command: [`dispatch`].
impl<H: Handler> server::Entry for H {
    fn call(ctx: Context, argv: Option<Argv<'_>>) {
        dispatch::<H>(ctx, argv);
    }
}

/// Runs one call of command `H`. No panic gets past it: a bug becomes an error
/// reply instead of aborting the server, and everything that could panic
/// (counting, replying) runs inside the guard.
fn dispatch<H: Handler>(ctx: Context, argv: Option<Argv>) {
    guarded(
        ctx,
        || H::COMMAND.name_str(),
        || {
            if matches!(H::COMMAND.keys, Keys::Counted) && ctx.is_keys_position_request() {
                if let Some(argv) = &argv {
                    report_counted_keys(ctx, argv);
                }
                return;
            }
            let argv = match argv {
                Some(argv) if H::COMMAND.accepts_argc(argv.count()) => argv,
                other => {
                    let refused = other.and_then(|a| {
                        let first_extra = H::COMMAND.min_argc;
                        H::COMMAND
                            .refused_option((first_extra < a.count()).then(|| a.bytes(first_extra)))
                    });
                    match refused {
                        Some(e) => ctx.reply_error(&e),
                        None => ctx.reply_wrong_arity(),
                    }
                    H::STATS.record(Verdict::Error);
                    return;
                }
            };
            match H::run(ctx, &argv) {
                Ok((decided, now)) => {
                    H::count(&argv, &decided, now);
                    H::reply(ctx, &decided);
                }
                Err(e) => {
                    H::STATS.record(Verdict::Error);
                    ctx.reply_error(&e);
                }
            }
        },
    );
}

/// Runs `body`, one call of the command `name` names, so that no panic gets past
/// it. The name is only worked out for the error (a CStr's check costs every call
/// otherwise).
pub(super) fn guarded(ctx: Context, name: impl FnOnce() -> &'static str, body: impl FnOnce()) {
    if catch_unwind(AssertUnwindSafe(body)).is_err() {
        // A bug: nothing reached the reply (a key may have been opened). Whatever
        // the panic left half-done, the client gets an error, never a dead server.
        ctx.reply_error(&Error::Internal(name()));
    }
}

/// Answers the server's question "where are the keys?" for `numkeys key [key …]`
/// (the `getkeys-api` call Cluster routing uses: it reads no key specs). A bad
/// numkeys reports none; the call itself then answers the error.
fn report_counted_keys(ctx: Context, argv: &Argv) {
    if argv.count() < 2 {
        return;
    }
    let numkeys = args::integer("numkeys", argv.bytes(1), 1, rl_core::all::MAX_KEYS).unwrap_or(0);
    for pos in (2..argv.count()).take(numkeys as usize) {
        ctx.key_at(pos);
    }
}

/// How many arguments a call may have after its key without allocating.
const INLINE_ARGS: usize = 8;

/// The arguments from some position on as byte slices: on the stack for every
/// well-formed single-key call, on the heap beyond [`INLINE_ARGS`].
#[derive(Default)]
pub(super) struct Inline<'a> {
    inline: [&'a [u8]; INLINE_ARGS],
    spilled: Vec<&'a [u8]>,
}

impl<'a> Inline<'a> {
    pub(super) fn args_from(&mut self, argv: &Argv<'a>, first: usize) -> &[&'a [u8]] {
        let rest = first.min(argv.count())..argv.count();
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
