//! A command is a type: [`Spec`] brings a command's table row, its parameters and
//! how they parse, and what an allowed call writes; [`Runs`] how it decides on and
//! writes its key in any [`Store`] (the server's keys in the module, the in-memory
//! model here). Everything else — the single-key flow ([`apply`]), RL.ALL
//! ([`crate::exec::all`]), the policies, the dispatch by name — is written once,
//! over any store, from the one list in [`crate::commands`].

use crate::algorithms::{share, Amount, Decision, Millis, Outcome};
use crate::error::Result;
use crate::options::Options;
use crate::params;
use crate::store::Store;
use crate::table::{Command, Reply, SLIDING_MAX_LIMIT};

/// The settings a call is parsed under: the module's (`rl.sliding-max-limit`,
/// `rl.share-max-tenants`, configurable), or their defaults (the library, the
/// in-memory executor).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Settings {
    /// The largest RL.SLIDING limit and RL.ACQUIRE lease count.
    pub sliding_max: u64,
    /// The most tenants an RL.SHARE budget remembers at once.
    pub share_max_tenants: u64,
}

impl Settings {
    pub const DEFAULT: Settings = Settings {
        sliding_max: SLIDING_MAX_LIMIT,
        share_max_tenants: share::DEFAULT_MAX_TENANTS,
    };
}

/// One RL command on one key.
pub trait Spec {
    /// Its row of the command table.
    const ROW: &'static Command;
    /// Its parameters after the key, valid by construction.
    type Params;
    /// What an allowed call (or a refund, or a debit) writes to its key.
    type Write;

    /// Parses the positional arguments after the key (not the options).
    fn params(args: &[&[u8]], settings: Settings) -> Result<Self::Params>;

    /// The parameters with `DELAY max` (ms) applied: only called for a row that
    /// takes DELAY, which must replace this.
    fn delayed(params: Self::Params, _max_ms: u64) -> Self::Params {
        params
    }

    /// As an RL.ALL policy, options of its own that follow its parameters (RL.QUOTA's
    /// calendar) at the start of `rest`: the parameters with them applied, and
    /// how many arguments they took.
    fn trailing(params: Self::Params, _rest: &[&[u8]]) -> Result<(Self::Params, usize)> {
        Ok((params, 0))
    }

    /// Parses everything after the key: the parameters, then the options the row
    /// takes (a DELAY applied to the parameters). CL.THROTTLE replaces it (a
    /// positional quantity, no options), and so do the commands that take no
    /// options.
    fn parse(args: &[&[u8]], settings: Settings) -> Result<(Self::Params, Options)> {
        let (p, options) = params::with_options(Self::ROW, args, |a| Self::params(a, settings))?;
        let p = match options.delay {
            Some(max_ms) => Self::delayed(p, max_ms),
            None => p,
        };
        Ok((p, options))
    }

    /// Its reply's integers: RL's five unless the command answers otherwise
    /// (CL.THROTTLE, redis-cell's).
    #[inline]
    fn fields(d: &Decision) -> [i64; 5] {
        d.fields()
    }

    /// Its reply: five integers, or one for a command whose row answers
    /// [`Reply::Released`] (RL.RELEASE: 1 if it released a lease, else 0).
    #[inline]
    fn reply(d: &Decision) -> Answer {
        match Self::ROW.reply {
            Reply::Released => Answer::One(i64::from(d.allowed)),
            _ => Answer::Five(Self::fields(d)),
        }
    }
}

/// A single-key command's reply.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Answer {
    Five([i64; 5]),
    One(i64),
}

/// How command `C` decides on, and writes, its key in any [`Store`]: written once
/// (`crate::store`), for the server's keys and the in-memory model alike. Deciding
/// never writes, so RL.ALL needs no undo.
pub trait Runs: Spec {
    /// Reads the key's state and decides; writes nothing.
    fn decide<S: Store>(
        store: &S,
        key: &S::Key,
        params: &Self::Params,
        now: Millis,
        amount: Amount,
    ) -> Result<Outcome<Self::Write>>;

    /// Writes what [`Runs::decide`] returned (on the server, propagating it).
    fn store<S: Store>(store: &mut S, key: &S::Key, write: Self::Write) -> Result<()>;
}

/// One call of `C` on one key: decide, then store what an allowed call writes.
#[inline]
pub fn apply<C: Runs, S: Store>(
    store: &mut S,
    key: &S::Key,
    params: &C::Params,
    now: Millis,
    amount: Amount,
) -> Result<Decision> {
    let outcome = C::decide(store, key, params, now, amount)?;
    if let Some(write) = outcome.write {
        C::store(store, key, write)?;
    }
    Ok(outcome.decision)
}
