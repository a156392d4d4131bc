//! `RL.FIXED key limit window [COST n]`
//!
//! Fixed window counter: at most `limit` units per epoch-aligned window of length
//! `window`. The key is a native integer string expiring at the window's end.
//! Reply: `[allowed, limit, remaining, retry_after_ms, reset_after_ms]`.

use super::{Arg, ArgKind, Limiter, Spec};
use crate::algorithms::{fixed, Cost, Count, Decision, Duration, Millis};
use crate::args;
use crate::error::Result;
use crate::stats::CommandId;
use crate::storage::{counter, Key};

pub struct Fixed;

pub struct Params {
    limit: Count,
    window: Duration,
}

impl Limiter for Fixed {
    const SPEC: Spec = Spec {
        id: CommandId::Fixed,
        name: c"RL.FIXED",
        flags: c"write deny-oom fast",
        summary:
            c"Counts units in an epoch-aligned fixed window and admits at most limit per window",
        complexity: c"O(1)",
        args: &[
            Arg {
                name: c"key",
                kind: ArgKind::Key,
            },
            Arg {
                name: c"limit",
                kind: ArgKind::Integer,
            },
            Arg {
                name: c"window",
                kind: ArgKind::Duration,
            },
        ],
    };
    type Params = Params;

    fn parse(args: &[&[u8]]) -> Result<Params> {
        Ok(Params {
            limit: args::count("limit", args[0])?,
            window: args::duration("window", args[1])?,
        })
    }

    fn apply(key: &Key, p: &Params, now: Millis, cost: Cost) -> Result<Decision> {
        let outcome = fixed::decide(counter::load(key)?, now, p.limit, p.window, cost);
        if let Some(c) = outcome.store {
            counter::store(key, c);
        }
        Ok(outcome.decision)
    }
}
