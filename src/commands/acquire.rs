//! `RL.ACQUIRE key limit ttl id` and `RL.RELEASE key id`
//!
//! A concurrency limiter: at most `limit` leases held at once, each named by the
//! caller and ending by itself `ttl` after it was taken or last renewed, so a
//! crashed holder never leaks its slot. The key is a native sorted set, member =
//! id, score = the lease's end in ms.
//! ACQUIRE replies RL's five integers; RELEASE replies 1 if `id` held a live lease
//! (now removed), else 0.

use super::framework::{Handler, Limiter};
use crate::config;
use crate::server::{self, Argv, Context};
use crate::stats::Counters;
use crate::storage::{self, Key};
use rl_core::algorithms::acquire::{self, Grant, LeaseId};
use rl_core::algorithms::{Amount, Cost, Millis, Outcome};
use rl_core::error::{Error, Result};
use rl_core::params::{self, Lease};
use rl_core::table::{self, Command};

pub struct Acquire;
pub struct Release;

static ACQUIRE_COUNTERS: Counters = Counters::new();
static RELEASE_COUNTERS: Counters = Counters::new();

impl Limiter for Acquire {
    const COMMAND: &'static Command = &table::ACQUIRE;
    const STATS: &'static Counters = &ACQUIRE_COUNTERS;
    type Params = Lease;
    /// The lease's id and what the call writes.
    type Write = (LeaseId, Grant);

    fn parse_params(args: &[&[u8]]) -> Result<Lease> {
        params::lease(args, config::sliding_max_limit())
    }

    fn parse(args: &[&[u8]]) -> Result<(Lease, Amount)> {
        // Arity is checked before: exactly the three parameters.
        Ok((Self::parse_params(args)?, Amount::Take(Cost::ONE)))
    }

    fn decide(key: &Key, p: &Lease, now: Millis, amount: Amount) -> Result<Outcome<Self::Write>> {
        // In RL.ALL, COST 0 inspects and any other cost counts one lease.
        let cost = match amount {
            Amount::Take(cost) => cost,
            Amount::Refund(_) => return Err(Error::LeaseRefund),
            // RL.ALL refuses DEBIT with an ACQUIRE policy before deciding any key.
            Amount::Debit(_) => {
                return Err(Error::NotApplicable {
                    option: "DEBIT",
                    to: "ACQUIRE",
                })
            }
        };
        let set = storage::acquire::load(key)?;
        let out = acquire::acquire(&set, now, p.leases, p.id.as_bytes(), cost);
        Ok(Outcome {
            decision: out.decision,
            write: out.write.map(|g| (p.id.clone(), g)),
        })
    }

    fn store(key: &Key, (id, grant): Self::Write) -> Result<()> {
        storage::acquire::store(key, id.as_bytes(), grant)
    }
}

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
        let set = storage::acquire::load(&key)?;
        let Some(release) = acquire::release(&set, now, id.as_bytes()) else {
            return Ok(false);
        };
        storage::acquire::release(&key, id.as_bytes(), release)?;
        Ok(true)
    }

    fn allowed(released: &bool) -> bool {
        *released
    }

    fn reply(ctx: Context, released: &bool) {
        ctx.reply_integer(i64::from(*released));
    }
}
