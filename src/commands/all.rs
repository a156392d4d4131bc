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
use crate::stats::{Counters, Verdict};
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

    /// The call under RL.ALL by its combined decision; each SHADOW policy under its
    /// own command by its own reply (an enforced policy's command counts nothing
    /// but `near_limit`: the call is RL.ALL's). RL.TOP: a SHADOW key its own reply
    /// rejects, in its SHADOW report; when the call is rejected, each enforced key
    /// whose own reply rejects.
    fn count(argv: &Argv, (call, decided): &(Call, Vec<Decision>), now: Millis) {
        let Some((combined, per_key)) = decided.split_first() else {
            return;
        };
        COUNTERS.record(Verdict::of(combined.allowed));
        if combined.allowed && combined.near_limit() {
            COUNTERS.near_limit();
        }
        for (i, (policy, d)) in call.policies.iter().zip(per_key).enumerate() {
            let key = argv.bytes(2 + i);
            if call.shadow(i) {
                if let Some(counters) = registry::counters_of(policy.command()) {
                    counters.record_shadow(d.allowed);
                }
                if !d.allowed {
                    top::shadow_rejected(key, now);
                }
            } else if !combined.allowed {
                if !d.allowed {
                    top::rejected(key, now);
                }
            } else if !policy.watches() && d.near_limit() {
                // A charged key left near its limit (a watched PENALTY key takes nothing).
                if let Some(counters) = registry::counters_of(policy.command()) {
                    counters.near_limit();
                }
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
