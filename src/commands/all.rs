//! `RL.ALL numkeys key [key …] policy [policy …] [COST n | REFUND n | DEBIT n]`
//!
//! Several limits at once, all or nothing: every key is decided at one instant as
//! its own command would decide it, and written (and propagated) exactly as its own
//! command writes it only if every key allows. A policy is one of
//! `FIXED limit window`, `SLIDING limit window`, `BUCKET capacity tokens period`,
//! `GCRA capacity tokens period [DELAY max]`, `SLIDINGCOUNTER limit window`,
//! `ACQUIRE limit ttl id`, `PENALTY strikes window block max`, one per key in key
//! order; COST (or REFUND, or DEBIT) applies to every key but an ACQUIRE (one
//! lease; REFUND is an error there). DEBIT always allows, so it writes every key; a
//! SLIDING or ACQUIRE policy takes none (an error naming the policy). A PENALTY
//! policy is only looked at, never struck: a blocked offender rejects a COST call
//! (REFUND and DEBIT ignore the block), and its key is never written. A GCRA policy
//! with DELAY schedules its key as RL.GCRA does: an allowed call's combined
//! retry_after is the longest wait, when every key's turn has come.
//!
//! Reply: numkeys + 1 arrays of RL's five integers, the combined decision first,
//! then each key's.

use super::acquire::Acquire;
use super::bucket::Bucket;
use super::fixed::Fixed;
use super::framework::{Handler, Inline, Limiter};
use super::gcra::Gcra;
use super::penalty::Penalty;
use super::sliding::Sliding;
use super::sliding_counter::SlidingCounter;
use crate::config;
use crate::server::{self, Argv, Context};
use crate::stats::Counters;
use crate::storage::Key;
use rl_core::algorithms::{Amount, Cost, Decision, Millis, Outcome};
use rl_core::all::{self, Policy};
use rl_core::error::Result;
use rl_core::table::{self, Command};

pub struct All;

static COUNTERS: Counters = Counters::new();

/// Runs each policy of rl_core::all with its command's handler: decided and
/// written by that command.
macro_rules! policies {
    ($($variant:ident),* $(,)?) => {
        /// The commands handled as policies, for the test that holds them to the table.
        #[cfg(test)]
        const HANDLED: &[&Command] = &[$(<$variant as Limiter>::COMMAND),*];

        /// What one key's command writes when the call is allowed.
        enum Write {
            $($variant(<$variant as Limiter>::Write)),*
        }

        /// Decides on `key` as the policy's command would; writes nothing.
        fn decide(policy: &Policy, key: &Key, now: Millis, amount: Amount) -> Result<Outcome<Write>> {
            match policy {
                $(Policy::$variant(params) => {
                    let out = <$variant as Limiter>::decide(key, params, now, amount)?;
                    Ok(Outcome {
                        decision: out.decision,
                        write: out.write.map(Write::$variant),
                    })
                })*
            }
        }

        impl Write {
            fn store(self, key: &Key) -> Result<()> {
                match self {
                    $(Write::$variant(w) => <$variant as Limiter>::store(key, w)),*
                }
            }
        }
    };
}

// The handler of each command the table offers as a policy (a test checks the two
// lists agree).
policies! {
    Fixed,
    Sliding,
    Bucket,
    Gcra,
    SlidingCounter,
    Acquire,
    Penalty,
}

impl Handler for All {
    const COMMAND: &'static Command = &table::ALL;
    const STATS: &'static Counters = &COUNTERS;
    /// The combined decision, then each key's.
    type Decided = Vec<Decision>;

    fn run(ctx: Context, argv: &Argv) -> Result<Vec<Decision>> {
        let mut inline = Inline::default();
        let call = all::parse(inline.args_from(argv, 1), config::sliding_max_limit())?;
        let now = server::now_ms();
        let keys: Vec<Key> = (0..call.keys())
            .map(|i| ctx.open_key(argv, 2 + i))
            .collect();
        let mut outcomes = Vec::with_capacity(call.keys());
        for (key, policy) in keys.iter().zip(&call.policies) {
            outcomes.push(decide(policy, key, now, policy.amount(call.amount))?);
        }
        let mut decisions: Vec<Decision> = Vec::with_capacity(call.keys() + 1);
        let verdicts: Vec<Decision> = outcomes.iter().map(|o| o.decision).collect();
        if call.allows(&verdicts) {
            for (key, outcome) in keys.iter().zip(outcomes) {
                if let Some(write) = outcome.write {
                    write.store(key)?;
                }
                decisions.push(outcome.decision);
            }
        } else {
            // Nothing is written. Each key answers its real state, as COST 0 reads
            // it, and its own verdict on this cost.
            for ((key, policy), outcome) in keys.iter().zip(&call.policies).zip(outcomes) {
                let state = decide(policy, key, now, Amount::Take(Cost::ZERO))?.decision;
                decisions.push(all::unchanged(outcome.decision, state));
            }
        }
        decisions.insert(0, call.combine(&decisions));
        Ok(decisions)
    }

    fn allowed(decided: &Vec<Decision>) -> bool {
        decided.first().is_some_and(|d| d.allowed)
    }

    fn reply(ctx: Context, decided: &Vec<Decision>) {
        ctx.reply_array(decided.len());
        for d in decided {
            ctx.reply_integers(d.fields());
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_policy_of_the_table_has_its_handler_in_order() {
        let handled: Vec<_> = HANDLED.iter().map(|c| c.name).collect();
        let table: Vec<_> = table::policies().map(|c| c.name).collect();
        assert_eq!(handled, table);
    }
}
