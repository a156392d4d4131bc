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

use super::framework::{Handler, Inline};
use super::registry::stats_of;
use crate::config;
use crate::server::{self, Argv, Context};
use crate::stats::{Counters, Verdict};
use crate::storage::{Key, Server};
use rl_core::algorithms::Decision;
use rl_core::error::Result;
use rl_core::table::{self, Command};
use rl_core::{all, exec};

pub struct All;

static COUNTERS: Counters = Counters::new();

impl Handler for All {
    const COMMAND: &'static Command = &table::ALL;
    const STATS: &'static Counters = &COUNTERS;
    /// The combined decision, then each key's; and the call (its SHADOW policies
    /// are counted under their own commands).
    type Decided = (Vec<Decision>, all::Call);

    /// The line parsed by the core, the keys opened here, the rest the core's one
    /// RL.ALL ([`exec::all`]) over the server's keys.
    fn run(ctx: Context, argv: &Argv) -> Result<(Vec<Decision>, all::Call)> {
        let mut inline = Inline::default();
        let call = all::parse(inline.args_from(argv, 1), config::settings())?;
        let now = server::now_ms();
        let keys: Vec<Key> = (0..call.keys())
            .map(|i| ctx.open_key(argv, 2 + i))
            .collect();
        let decided = exec::all(&mut Server, &keys, &call, now)?;
        Ok((decided, call))
    }

    /// The call under RL.ALL; each SHADOW policy under its own command, by its
    /// own reply (an enforced policy's command counts nothing: the call is RL.ALL's).
    fn count((decided, call): &(Vec<Decision>, all::Call)) {
        Self::STATS.record(Verdict::of(decided.first().is_some_and(|d| d.allowed)));
        for (i, (policy, d)) in call.policies.iter().zip(decided.iter().skip(1)).enumerate() {
            if call.shadow(i) {
                if let Some(stats) = stats_of(policy.command()) {
                    stats.record_shadow(d.allowed);
                }
            }
        }
    }

    fn reply(ctx: Context, (decided, _): &(Vec<Decision>, all::Call)) {
        ctx.reply_array(decided.len());
        for d in decided {
            ctx.reply_integers(d.fields());
        }
    }
}
