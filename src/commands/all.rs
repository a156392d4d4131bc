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

use super::framework::{Handler, Inline};
use crate::config;
use crate::server::{self, Argv, Context};
use crate::stats::Counters;
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
    /// The combined decision, then each key's.
    type Decided = Vec<Decision>;

    /// The line parsed by the core, the keys opened here, the rest the core's one
    /// RL.ALL ([`exec::all`]) over the server's keys.
    fn run(ctx: Context, argv: &Argv) -> Result<Vec<Decision>> {
        let mut inline = Inline::default();
        let call = all::parse(inline.args_from(argv, 1), config::settings())?;
        let now = server::now_ms();
        let keys: Vec<Key> = (0..call.keys())
            .map(|i| ctx.open_key(argv, 2 + i))
            .collect();
        exec::all(&mut Server, &keys, &call, now)
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
