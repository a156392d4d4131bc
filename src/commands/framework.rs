//! The steps every command runs, in [`dispatch`]: check the argument count,
//! parse, read the server clock once, open the key, load → decide → store and
//! propagate, reply. Each command supplies only its parsing and its storage pair
//! (a [`Limiter`]), or the whole run (a [`Handler`], RL.ALL).

use std::panic::{catch_unwind, AssertUnwindSafe};

use crate::server::{self, Argv, Context, Key};
use crate::stats::{Counters, Verdict};
use crate::storage::Storage;
use rl_core::algorithms::{Algorithm, Amount, Decision, Millis, Outcome};
use rl_core::error::{Error, Result};
use rl_core::table::{Command, Keys};
use rl_core::{args, params};

/// One RL command: how it parses its parameters, decides on a key's state and
/// writes what it decided.
pub trait Limiter {
    const COMMAND: &'static Command;
    type Params;
    /// What an allowed call (or a refund) writes to the key.
    type Write;

    /// Parses the positional arguments after the key (not the cost).
    fn parse_params(args: &[&[u8]]) -> Result<Self::Params>;

    /// Parses every argument after the key: the positional ones, then the options
    /// (`[COST n | REFUND n]`, and `[DELAY max]` if its definition takes it). CL.THROTTLE
    /// replaces it (a positional quantity, no options).
    fn parse(args: &[&[u8]]) -> Result<(Self::Params, Amount)> {
        let (params, options) = params::with_options(Self::COMMAND, args, Self::parse_params)?;
        let params = match options.delay {
            Some(max_ms) => Self::delayed(params, max_ms),
            None => params,
        };
        Ok((params, options.amount))
    }

    /// The parameters with `DELAY max` (ms) applied. Only called for a command
    /// whose definition takes DELAY, which must replace this.
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
    fn reply(ctx: Context, d: &Decision) {
        ctx.reply_integers(d.fields());
    }

    /// This command's INFO counters.
    const STATS: &'static Counters;
}

/// A command on one key whose state a [`Storage`] loads and stores: its definition
/// and its parser are the whole command. Deciding (the algorithm's `call` on the
/// loaded state), storing and replying follow; a command that needs more (RL.SLIDING's
/// log, CL.THROTTLE's reply) implements [`Limiter`] itself.
pub trait Stored {
    const COMMAND: &'static Command;
    const STATS: &'static Counters;
    type Storage: Storage;

    /// Parses the positional arguments after the key.
    fn parse_params(args: &[&[u8]]) -> Result<ParamsOf<Self>>;

    /// The parameters with `DELAY max` (ms) applied: see [`Limiter::delayed`].
    fn delayed(params: ParamsOf<Self>, _max_ms: u64) -> ParamsOf<Self> {
        params
    }
}

/// The algorithm of a [`Stored`] command.
type AlgorithmOf<C> = <<C as Stored>::Storage as Storage>::Algorithm;
/// Its parameters.
pub type ParamsOf<C> = <AlgorithmOf<C> as Algorithm>::Params;

impl<C: Stored> Limiter for C {
    const COMMAND: &'static Command = C::COMMAND;
    const STATS: &'static Counters = C::STATS;
    type Params = ParamsOf<C>;
    type Write = <AlgorithmOf<C> as Algorithm>::Write;

    fn parse_params(args: &[&[u8]]) -> Result<Self::Params> {
        C::parse_params(args)
    }

    fn delayed(params: Self::Params, max_ms: u64) -> Self::Params {
        C::delayed(params, max_ms)
    }

    fn decide(
        key: &Key,
        params: &Self::Params,
        now: Millis,
        amount: Amount,
    ) -> Result<Outcome<Self::Write>> {
        let state = C::Storage::load(key)?;
        Ok(AlgorithmOf::<C>::call(state, now, *params, amount))
    }

    fn store(key: &Key, write: Self::Write) -> Result<()> {
        C::Storage::store(key, write)
    }
}

/// Decides on one key and stores what an allowed call writes.
fn apply<L: Limiter>(
    key: &Key,
    params: &L::Params,
    now: Millis,
    amount: Amount,
) -> Result<Decision> {
    let outcome = L::decide(key, params, now, amount)?;
    if let Some(write) = outcome.write {
        L::store(key, write)?;
    }
    Ok(outcome.decision)
}

/// What [`dispatch`] runs: a command that parses its arguments, decides and
/// writes, and replies. Every [`Limiter`] is one (on one key); RL.ALL is one on
/// several.
pub trait Handler {
    const COMMAND: &'static Command;
    const STATS: &'static Counters;
    /// What the call decided, for [`Handler::reply`].
    type Decided;

    /// Everything after the argument count check, up to the reply.
    fn run(ctx: Context, argv: &Argv) -> Result<Self::Decided>;

    /// Whether the call was allowed (for the INFO counters).
    fn allowed(decided: &Self::Decided) -> bool;

    fn reply(ctx: Context, decided: &Self::Decided);
}

impl<L: Limiter> Handler for L {
    const COMMAND: &'static Command = L::COMMAND;
    const STATS: &'static Counters = L::STATS;
    type Decided = Decision;

    fn run(ctx: Context, argv: &Argv) -> Result<Decision> {
        let mut inline = Inline::default();
        let (params, amount) = L::parse(inline.args_from(argv, 2))?;
        #[cfg(feature = "testing")]
        if argv.bytes(1) == b"__rl_panic__" {
            panic!("injected by the testing feature");
        }
        let now = server::now_ms();
        let key = ctx.open_key(argv, 1);
        apply::<L>(&key, &params, now, amount)
    }

    fn allowed(d: &Decision) -> bool {
        d.allowed
    }

    fn reply(ctx: Context, d: &Decision) {
        <L as Limiter>::reply(ctx, d)
    }
}

/// What the server runs for every command: [`dispatch`].
impl<H: Handler> server::Command for H {
    fn call(ctx: Context, argv: Option<Argv<'_>>) {
        dispatch::<H>(ctx, argv);
    }
}

/// Runs one call of command `H`. No panic gets past it: a bug becomes an error
/// reply instead of aborting the server, and everything that could panic
/// (counting, replying) runs inside the guard.
fn dispatch<H: Handler>(ctx: Context, argv: Option<Argv>) {
    let guarded = catch_unwind(AssertUnwindSafe(|| {
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
                ctx.reply_error(&e);
            }
        }
    }));
    if guarded.is_err() {
        // A bug: the key was opened but nothing reached the reply. Whatever the
        // panic left half-done, the client gets an error, never a dead server.
        ctx.reply_error(&Error::Internal(H::COMMAND.name_str()));
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
