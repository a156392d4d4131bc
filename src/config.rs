//! Module settings, registered as Redis module configs: `CONFIG GET/SET rl.<name>`,
//! or `--loadmodule librl.so <name> <value>` / a `loadmodule` line in redis.conf.

use std::sync::atomic::{AtomicI64, Ordering};

/// Default ceiling on RL.SLIDING's limit: one sorted-set entry per unit, so the
/// ceiling bounds the memory and the work of one key.
pub const DEFAULT_SLIDING_MAX_LIMIT: i64 = 100_000;

/// Highest value `sliding-max-limit` accepts (about 1 GB for one full log).
pub const SLIDING_MAX_LIMIT_CEILING: i64 = 10_000_000;

/// `rl.sliding-max-limit`.
pub static SLIDING_MAX_LIMIT: AtomicI64 = AtomicI64::new(DEFAULT_SLIDING_MAX_LIMIT);

pub fn sliding_max_limit() -> u64 {
    u64::try_from(SLIDING_MAX_LIMIT.load(Ordering::Relaxed)).unwrap_or(0)
}
