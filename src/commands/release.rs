//! `RL.RELEASE key id`: ends the lease named `id` early, freeing its slot (RL.ACQUIRE,
//! which takes them, is a single-key command of the core's list). Replies 1 if `id`
//! held a live lease (now removed), else 0.

use super::framework::Handler;
use crate::server::{self, Argv, Context};
use crate::stats::Counters;
use crate::storage::Server;
use rl_core::error::Result;
use rl_core::params;
use rl_core::store;
use rl_core::table::{self, Command};

pub struct Release;

static RELEASE_COUNTERS: Counters = Counters::new();

impl Handler for Release {
    const COMMAND: &'static Command = &table::RELEASE;
    const STATS: &'static Counters = &RELEASE_COUNTERS;
    /// Whether a live lease was released.
    type Decided = bool;

    fn run(ctx: Context, argv: &Argv) -> Result<bool> {
        let id = params::lease_id(argv.bytes(2))?;
        #[cfg(feature = "testing")]
        if argv.bytes(1) == b"__rl_panic__" {
            panic!("injected by the testing feature");
        }
        let now = server::now_ms();
        let key = ctx.open_key(argv, 1);
        store::release(&mut Server, &key, now, id.as_bytes())
    }

    fn allowed(released: &bool) -> bool {
        *released
    }

    fn reply(ctx: Context, released: &bool) {
        ctx.reply_integer(i64::from(*released));
    }
}
