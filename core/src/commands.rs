//! Every command as a type, and the one list of them ([`each_command!`]) from which
//! the rest follows: RL.ALL's [`Policy`] (its variants, parsing, deciding and
//! writing, over any store), the dispatch by name ([`visit`]) the in-memory
//! executor and the fuzzer use, and the module's registration (the module expands
//! the same list). A command missing from the list is a compile error wherever it
//! is used, never a name that fails at run time.

use crate::algorithms::acquire::{self, Grant, LeaseId};
use crate::algorithms::bucket::TokenBucket;
use crate::algorithms::fixed::FixedWindow;
use crate::algorithms::gcra::{self as gcra_algorithm, Emission};
use crate::algorithms::penalty::{self, EscalatingBlocks};
use crate::algorithms::quota::{self, CalendarQuota};
use crate::algorithms::share;
use crate::algorithms::sliding;
use crate::algorithms::sliding_counter::SlidingWindowCounter;
use crate::algorithms::{Algorithm, Amount, Cost, Decision, Millis, Outcome, Rate, WindowLimit};
use crate::calendar::Calendar;
use crate::command::{Runs, Settings, Spec};
use crate::error::{Error, Result};
use crate::options::Options;
use crate::params::{self, Lease};
use crate::store::Store;
use crate::table::{self, Command};

/// The list of RL's commands, handed to `$callback`: the single-key commands that
/// are RL.ALL policies, the other single-key commands, and the commands with a flow
/// of their own (each with its row in the table and the method of [`Visit`] that
/// runs it; the module names its handler for RL.ALL `All`). Every row of the
/// table is here once (checked at compile time and by a test).
#[macro_export]
macro_rules! each_command {
    ($callback:ident) => {
        $callback! {
            policies: [Fixed, Sliding, Bucket, Gcra, SlidingCounter, Acquire, Penalty, Share, Quota],
            singles: [Throttle, Release],
            others: [All(ALL) => all],
        }
    };
}

/// A single-key command whose state and write are its algorithm's own.
macro_rules! plain {
    ($(#[$doc:meta])* $name:ident, $row:expr, $algorithm:ty, $params:ty, $parse:expr) => {
        $(#[$doc])*
        pub struct $name;

        impl Spec for $name {
            const ROW: &'static Command = &$row;
            type Params = $params;
            type Write = <$algorithm as Algorithm>::Write;

            #[inline]
            fn params(args: &[&[u8]], _: Settings) -> Result<$params> {
                $parse(Self::ROW, args)
            }
        }
    };
}

plain!(
    /// `RL.FIXED key limit window`.
    Fixed, table::FIXED, FixedWindow, WindowLimit, params::window_limit
);
plain!(
    /// `RL.BUCKET key capacity tokens period`.
    Bucket, table::BUCKET, TokenBucket, Rate, params::rate
);
plain!(
    /// `RL.SLIDINGCOUNTER key limit window`.
    SlidingCounter, table::SLIDINGCOUNTER, SlidingWindowCounter, WindowLimit, params::window_limit
);
plain!(
    /// `RL.PENALTY key strikes window block max`.
    Penalty, table::PENALTY, EscalatingBlocks, penalty::Penalty, params::penalty
);

/// `RL.GCRA key capacity tokens period [DELAY max]`.
pub struct Gcra;

impl Spec for Gcra {
    const ROW: &'static Command = &table::GCRA;
    type Params = Emission;
    type Write = <gcra_algorithm::Gcra as Algorithm>::Write;

    #[inline]
    fn params(args: &[&[u8]], _: Settings) -> Result<Emission> {
        params::emission(Self::ROW, args)
    }

    fn delayed(e: Emission, max_ms: u64) -> Emission {
        e.with_delay(max_ms)
    }
}

/// `RL.QUOTA key limit unit [EVERY n] [ON anchor] [AT hh:mm] [TZ zone]`.
pub struct Quota;

impl Spec for Quota {
    const ROW: &'static Command = &table::QUOTA;
    type Params = quota::Quota;
    type Write = <CalendarQuota as Algorithm>::Write;

    /// `limit unit` on the unit's defaults (an RL.ALL policy's calendar options
    /// follow it: [`Spec::trailing`]).
    #[inline]
    fn params(args: &[&[u8]], _: Settings) -> Result<quota::Quota> {
        params::quota(Self::ROW, args)
    }

    /// The parameters, COST, REFUND or DEBIT, and the calendar's options (in any
    /// order among them).
    fn parse(args: &[&[u8]], _: Settings) -> Result<(quota::Quota, Options)> {
        // The errors in the order of every command's: parameters (the limit, the
        // unit), then the amount's options, then the calendar's.
        let ((limit, unit), options) =
            params::with_options(Self::ROW, args, |p| params::quota_limit_unit(Self::ROW, p))?;
        let rest = args.get(Self::ROW.params().len()..).unwrap_or_default();
        let ([every, on, at, tz], _) = params::calendar_words(rest, true)?;
        let calendar = Calendar::parse(unit.name().as_bytes(), every, on, at, tz)?;
        Ok((quota::Quota { limit, calendar }, options))
    }

    /// An RL.ALL policy's calendar options, right after it.
    fn trailing(q: quota::Quota, rest: &[&[u8]]) -> Result<(quota::Quota, usize)> {
        let unit = q.calendar.unit().name().as_bytes();
        match params::calendar_words(rest, false)? {
            (_, 0) => Ok((q, 0)),
            ([every, on, at, tz], used) => {
                let calendar = Calendar::parse(unit, every, on, at, tz)?;
                Ok((quota::Quota { calendar, ..q }, used))
            }
        }
    }
}

/// `CL.THROTTLE key max_burst count period [quantity]`: RL.GCRA's limiter on the
/// same keys, with redis-cell's arguments and reply.
pub struct Throttle;

impl Spec for Throttle {
    const ROW: &'static Command = &table::THROTTLE;
    type Params = Emission;
    type Write = <gcra_algorithm::Gcra as Algorithm>::Write;

    fn params(args: &[&[u8]], _: Settings) -> Result<Emission> {
        Ok(params::throttle(Self::ROW, args)?.0)
    }

    /// The three parameters, then an optional quantity (no options).
    fn parse(args: &[&[u8]], _: Settings) -> Result<(Emission, Options)> {
        let (emission, amount) = params::throttle(Self::ROW, args)?;
        Ok((emission, Options::of(amount)))
    }

    fn fields(d: &Decision) -> [i64; 5] {
        d.throttle_fields()
    }
}

/// `RL.SLIDING key limit window`: one sorted-set member per unit.
pub struct Sliding;

impl Spec for Sliding {
    const ROW: &'static Command = &table::SLIDING;
    type Params = WindowLimit;
    /// The write, and the newest unit logged before it (where new units' sequence
    /// numbers continue from).
    type Write = (Option<Millis>, sliding::Write);

    fn params(args: &[&[u8]], settings: Settings) -> Result<WindowLimit> {
        params::sliding(Self::ROW, args, settings.sliding_max)
    }
}

/// `RL.ACQUIRE key limit ttl id`: a named lease.
pub struct Acquire;

impl Spec for Acquire {
    const ROW: &'static Command = &table::ACQUIRE;
    type Params = Lease;
    /// The lease's id and what the call writes.
    type Write = (LeaseId, Grant);

    fn params(args: &[&[u8]], settings: Settings) -> Result<Lease> {
        params::lease(Self::ROW, args, settings.sliding_max)
    }

    /// Exactly the three parameters (the arity is checked before): one lease.
    fn parse(args: &[&[u8]], settings: Settings) -> Result<(Lease, Options)> {
        Ok((Self::params(args, settings)?, Options::NONE))
    }
}

/// `RL.RELEASE key id`: ends a lease early. Its decision is allowed when `id` held
/// a live lease, now removed (the reply's one integer); it takes no amount.
pub struct Release;

impl Spec for Release {
    const ROW: &'static Command = &table::RELEASE;
    type Params = LeaseId;
    /// The lease's id, and when the key expires after (None: no lease is left).
    type Write = (LeaseId, acquire::Release);

    fn params(args: &[&[u8]], _: Settings) -> Result<LeaseId> {
        params::lease_id(args.first().copied().unwrap_or_default())
    }

    /// Exactly the id (the arity is checked before).
    fn parse(args: &[&[u8]], settings: Settings) -> Result<(LeaseId, Options)> {
        Ok((Self::params(args, settings)?, Options::NONE))
    }
}

/// `RL.SHARE key tenant weight capacity tokens period`: one budget shared by
/// weight, its state a hash read field by field.
pub struct Share;

impl Spec for Share {
    const ROW: &'static Command = &table::SHARE;
    type Params = share::Share;
    type Write = share::Write;

    fn params(args: &[&[u8]], settings: Settings) -> Result<share::Share> {
        params::share(Self::ROW, args, settings.share_max_tenants)
    }
}

/// What an RL.ACQUIRE key takes for `amount`: COST 0 inspects, any other cost
/// counts one lease; REFUND and DEBIT do not apply to a lease.
pub fn lease_cost(amount: Amount) -> Result<Cost> {
    match amount {
        Amount::Take(cost) => Ok(cost),
        Amount::Refund(_) => Err(Error::LeaseRefund),
        // RL.ALL refuses DEBIT with an ACQUIRE policy before deciding any key.
        Amount::Debit(_) => Err(table::ACQUIRE
            .policy_takes()
            .refuses(crate::options::Opt::Debit)),
    }
}

/// What runs a command found by name ([`visit`]).
pub trait Visit {
    type Output;
    /// A single-key command.
    fn single<C: Runs>(self) -> Self::Output;
    /// RL.ALL.
    fn all(self) -> Self::Output;
}

macro_rules! generate {
    (
        policies: [$($policy:ident),*],
        singles: [$($single:ident),*],
        others: [$($other:ident($row:ident) => $method:ident),*],
    ) => {
        // The list and the table agree: a policy has a policy word, a single-key
        // command has none.
        const _: () = {
            $(assert!($policy::ROW.policy.is_some());)*
            $(assert!($single::ROW.policy.is_none());)*
        };

        /// One RL.ALL key's limit: its command's parameters. A SHARE policy holds
        /// its tenant's name inline (up to 256 bytes, so its parameters are
        /// `Copy` like every command's): a call has at most 16 policies, and
        /// boxing would cost every RL.SHARE call an allocation.
        #[allow(clippy::large_enum_variant)]
        #[derive(Debug, Clone, PartialEq, Eq)]
        pub enum Policy {
            $($policy(<$policy as Spec>::Params)),*
        }

        /// What one RL.ALL key's command writes when the call is allowed.
        pub enum PolicyWrite {
            $($policy(<$policy as Spec>::Write)),*
        }

        /// Each policy's row and parser, in the list's order.
        pub static POLICIES: &[(&Command, fn(&[&[u8]], Settings) -> Result<Policy>)] = &[
            $(($policy::ROW, |args, settings| Ok(Policy::$policy($policy::params(args, settings)?)))),*
        ];

        impl Policy {
            /// The command this policy runs.
            pub fn command(&self) -> &'static Command {
                match self {
                    $(Policy::$policy(_) => $policy::ROW),*
                }
            }

            /// The policy with its own options at the start of `rest` applied
            /// (RL.QUOTA's calendar), and how many arguments they took.
            pub fn trailing(self, rest: &[&[u8]]) -> Result<(Policy, usize)> {
                match self {
                    $(Policy::$policy(p) => {
                        let (p, used) = $policy::trailing(p, rest)?;
                        Ok((Policy::$policy(p), used))
                    })*
                }
            }
            /// The policy with `DELAY max` (ms) applied (its row takes DELAY).
            pub fn delayed(self, max_ms: u64) -> Policy {
                match self {
                    $(Policy::$policy(p) => Policy::$policy($policy::delayed(p, max_ms))),*
                }
            }

            /// Decides on `key` as the policy's command would; writes nothing.
            pub fn decide<S: Store>(
                &self,
                store: &S,
                key: &S::Key,
                now: Millis,
                amount: Amount,
            ) -> Result<Outcome<PolicyWrite>> {
                match self {
                    $(Policy::$policy(p) => {
                        let out = $policy::decide(store, key, p, now, amount)?;
                        Ok(Outcome {
                            decision: out.decision,
                            write: out.write.map(PolicyWrite::$policy),
                        })
                    })*
                }
            }
        }

        impl PolicyWrite {
            /// Writes it as its command writes.
            pub fn store<S: Store>(self, store: &mut S, key: &S::Key) -> Result<()> {
                match self {
                    $(PolicyWrite::$policy(w) => $policy::store(store, key, w)),*
                }
            }
        }

        /// Runs `visitor` for the command `row` is the row of; None for a row the
        /// list does not have (none: the list and the table are held to each other).
        pub fn visit<V: Visit>(row: &Command, visitor: V) -> Option<V::Output> {
            let name = row.name.to_bytes();
            $(if name == $policy::ROW.name.to_bytes() {
                return Some(visitor.single::<$policy>());
            })*
            $(if name == $single::ROW.name.to_bytes() {
                return Some(visitor.single::<$single>());
            })*
            $(if name == table::$row.name.to_bytes() {
                return Some(visitor.$method());
            })*
            None
        }

        /// Every command, by its row, in the list's order: the order the module
        /// registers them, INFO lists them, `commands.json` and the Functions
        /// library name them.
        pub static COMMANDS: &[&Command] = &[
            $($policy::ROW,)* $($single::ROW,)* $(&table::$row,)*
        ];
    };
}

each_command!(generate);

/// The commands RL.ALL takes as policies, in the list's order.
pub fn policies() -> impl Iterator<Item = &'static Command> {
    POLICIES.iter().map(|(row, _)| *row)
}

/// The policy words, as an error lists them: "FIXED, SLIDING, … or SHARE".
pub fn policy_words() -> String {
    let words: Vec<&str> = policies().map(Command::policy_word).collect();
    match words.split_last() {
        Some((last, [])) => (*last).to_string(),
        Some((last, rest)) => format!("{} or {last}", rest.join(", ")),
        None => String::new(),
    }
}

/// The command named `name` (any case), if RL has it.
pub fn find(name: &[u8]) -> Option<&'static Command> {
    COMMANDS
        .iter()
        .copied()
        .find(|c| c.name.to_bytes().eq_ignore_ascii_case(name))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::options::Opt;

    #[test]
    fn names_policies_and_functions_are_unique() {
        for (i, a) in COMMANDS.iter().enumerate() {
            for b in &COMMANDS[i + 1..] {
                assert_ne!(a.name, b.name);
                assert!(a.policy.is_none() || a.policy != b.policy);
                assert!(a.function.is_none() || a.function != b.function);
            }
        }
    }

    #[test]
    fn the_policies_are_the_rows_with_a_policy_word() {
        let listed: Vec<_> = policies().map(|c| c.name).collect();
        let rows: Vec<_> = COMMANDS
            .iter()
            .filter(|c| c.policy.is_some())
            .map(|c| c.name)
            .collect();
        assert_eq!(listed, rows);
        assert_eq!(
            policy_words(),
            "FIXED, SLIDING, BUCKET, GCRA, SLIDINGCOUNTER, ACQUIRE, PENALTY, SHARE or QUOTA"
        );
    }

    #[test]
    fn every_policy_counts_the_calls_cost() {
        for c in policies() {
            assert!(c.policy_takes().has(Opt::Cost), "{}", c.policy_word());
            assert_eq!(c.policy_takes().name, c.policy_token());
        }
        // Alone, RL.ACQUIRE takes no options; in RL.ALL, COST only.
        assert_eq!(table::ACQUIRE.takes().expected(), "no options");
        assert_eq!(table::ACQUIRE.policy_takes().expected(), "COST n");
        assert_eq!(table::FIXED.policy_takes().options, table::FIXED.options);
    }

    #[test]
    fn commands_are_found_by_name_in_any_case() {
        assert_eq!(find(b"rl.gcra").map(|c| c.name), Some(table::GCRA.name));
        assert_eq!(
            find(b"CL.THROTTLE").map(|c| c.name),
            Some(table::THROTTLE.name)
        );
        assert!(find(b"rl.nothing").is_none());
    }
}
