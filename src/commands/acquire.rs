//! `RL.ACQUIRE key limit ttl id` and `RL.RELEASE key id`
//!
//! A concurrency limiter: at most `limit` leases held at once, each named by the
//! caller and ending by itself `ttl` after it was taken or last renewed, so a
//! crashed holder never leaks its slot. The key is a native sorted set, member =
//! id, score = the lease's end in ms.
//! ACQUIRE replies RL's five integers; RELEASE replies 1 if `id` held a live lease
//! (now removed), else 0.

use super::framework::{Handler, Limiter};
use super::spec::{Arg, ArgKind, CostArg, Spec};
use crate::algorithms::acquire::{self, Grant, LeaseId, Leases};
use crate::algorithms::{Amount, Cost, Millis, Outcome};
use crate::args;
use crate::config;
use crate::error::{Error, Result};
use crate::server::{self, Argv, Context};
use crate::stats::Counters;
use crate::storage::{self, Key};

pub struct Acquire;
pub struct Release;

static ACQUIRE_COUNTERS: Counters = Counters::new();
static RELEASE_COUNTERS: Counters = Counters::new();

const ID: Arg = Arg::new(c"id", ArgKind::Text);

/// What an ACQUIRE asks for: a lease named `id` under `leases`.
pub struct Params {
    pub(crate) leases: Leases,
    pub(crate) id: LeaseId,
}

fn lease_id(bytes: &[u8]) -> Result<LeaseId> {
    LeaseId::new(bytes).ok_or(Error::BadLeaseId)
}

impl Limiter for Acquire {
    const DEFINITION: Spec = Spec {
        // Exactly key limit ttl id: no COST, no REFUND.
        cost: CostArg::None,
        ..Spec::rl(
            c"RL.ACQUIRE",
            c"write deny-oom",
            c"Takes or renews a named lease that ends by itself after ttl, at most limit held at once",
            c"O(log N + M) with N the leases held and M those that expired",
            &[
                Arg::new(c"key", ArgKind::Key),
                Arg::new(c"limit", ArgKind::Integer),
                Arg::new(c"ttl", ArgKind::Duration),
                ID,
            ],
        )
    };
    const STATS: &'static Counters = &ACQUIRE_COUNTERS;
    type Params = Params;
    /// The lease's id and what the call writes.
    type Write = (LeaseId, Grant);

    fn parse_params(args: &[&[u8]]) -> Result<Params> {
        // One entry per lease: the same bound as RL.SLIDING's one entry per unit.
        let max = config::sliding_max_limit();
        let limit = args::count("limit", args[0])
            .ok()
            .filter(|l| l.get() <= max)
            .ok_or(Error::LeaseLimit { max })?;
        Ok(Params {
            leases: Leases {
                limit,
                ttl: args::duration("ttl", args[1])?,
            },
            id: lease_id(args[2])?,
        })
    }

    fn parse(args: &[&[u8]]) -> Result<(Params, Amount)> {
        // Arity is checked before: exactly the three parameters.
        Ok((Self::parse_params(args)?, Amount::Take(Cost::ONE)))
    }

    fn decide(key: &Key, p: &Params, now: Millis, amount: Amount) -> Result<Outcome<Self::Write>> {
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
            store: out.store.map(|g| (p.id.clone(), g)),
        })
    }

    fn store(key: &Key, (id, grant): Self::Write) -> Result<()> {
        storage::acquire::store(key, id.as_bytes(), grant)
    }
}

impl Handler for Release {
    const DEFINITION: Spec = Spec {
        cost: CostArg::None,
        ..Spec::rl(
            // Not deny-oom: like DEL, it must free a slot on a server at maxmemory.
            c"RL.RELEASE",
            c"write fast",
            c"Ends the lease named id early, freeing its slot",
            c"O(log N) with N the leases held",
            &[Arg::new(c"key", ArgKind::Key), ID],
        )
    };
    const STATS: &'static Counters = &RELEASE_COUNTERS;
    /// Whether a live lease was released.
    type Decided = bool;

    fn run(ctx: Context, argv: &Argv) -> Result<bool> {
        let id = lease_id(argv.bytes(2))?;
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
