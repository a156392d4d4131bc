//! `RL.ALL numkeys key [key …] policy [policy …] [COST n | REFUND n | DEBIT n]`
//!
//! Several limits at once, all or nothing: every key is decided at one instant as
//! its own command would decide it, and written (and propagated) exactly as its own
//! command writes it only if every key allows. A policy is a single-key command's
//! RL.ALL word and its parameters (`FIXED limit window`, `GCRA capacity tokens
//! period [DELAY max]`, `SHARE tenant weight capacity tokens period`, …: every row
//! of the table with a policy word, `rl_core::commands::policies()`), one per key
//! in key order; COST (or REFUND, or DEBIT) applies to every key but an ACQUIRE (one
//! lease; REFUND is an error there). DEBIT always allows, so it writes every key; a
//! SLIDING or ACQUIRE policy takes none (an error naming the policy). A PENALTY
//! policy is only looked at, never struck: a blocked offender rejects a COST call
//! (REFUND and DEBIT ignore the block), and its key is never written. A GCRA policy
//! with DELAY schedules its key as RL.GCRA does: an allowed call's combined
//! retry_after is the longest wait, when every key's turn has come.
//!
//! Reply: numkeys + 1 arrays of RL's five integers, the combined decision first,
//! then each key's.
//!
//! INFO: the call counts under RL.ALL; its `near_limit` also under each charged
//! policy's own command (a key left near its limit). RL.TOP counts each key whose
//! own decision rejected.

use super::framework::{Handler, Inline};
use super::registry;
use crate::config;
use crate::server::{self, Argv, Context};
use crate::stats::Counters;
use crate::storage::{Key, Server};
use crate::top;
use rl_core::algorithms::{Decision, Millis};
use rl_core::all::Call;
use rl_core::error::Result;
use rl_core::table::{self, Command};
use rl_core::{all, exec};

pub struct All;

static COUNTERS: Counters = Counters::new();

impl Handler for All {
    const COMMAND: &'static Command = &table::ALL;
    const STATS: &'static Counters = &COUNTERS;
    /// The call, and the combined decision, then each key's.
    type Decided = (Call, Vec<Decision>);

    /// The line parsed by the core, the keys opened here, the rest the core's one
    /// RL.ALL ([`exec::all`]) over the server's keys.
    fn run(ctx: Context, argv: &Argv) -> Result<((Call, Vec<Decision>), Millis)> {
        let mut inline = Inline::default();
        let call = all::parse(inline.args_from(argv, 1), config::settings())?;
        let now = server::now_ms();
        let keys: Vec<Key> = (0..call.keys())
            .map(|i| ctx.open_key(argv, 2 + i))
            .collect();
        let decided = exec::all(&mut Server, &keys, &call, now)?;
        Ok(((call, decided), now))
    }

    fn allowed((_, decided): &(Call, Vec<Decision>)) -> bool {
        decided.first().is_some_and(|d| d.allowed)
    }

    /// The combined decision under RL.ALL, each charged key's under its command
    /// (a watched PENALTY key takes nothing).
    fn count_near_limit((call, decided): &(Call, Vec<Decision>)) {
        let Some((combined, per_key)) = decided.split_first() else {
            return;
        };
        if combined.near_limit() {
            COUNTERS.near_limit();
        }
        for (policy, d) in call.policies.iter().zip(per_key) {
            if !policy.watches() && d.near_limit() {
                if let Some(counters) = registry::counters_of(policy.command()) {
                    counters.near_limit();
                }
            }
        }
    }

    fn feed_top(argv: &Argv, (_, decided): &(Call, Vec<Decision>), now: Millis) {
        for (i, d) in decided.iter().skip(1).enumerate() {
            if !d.allowed {
                top::rejected(argv.bytes(2 + i), now);
            }
        }
    }

    fn reply(ctx: Context, (_, decided): &(Call, Vec<Decision>)) {
        ctx.reply_array(decided.len());
        for d in decided {
            ctx.reply_integers(d.fields());
        }
    }
}
