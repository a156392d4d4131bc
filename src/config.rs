//! Module settings.

use std::sync::atomic::{AtomicU64, Ordering};

/// Default ceiling on RL.SLIDING's limit: one sorted-set entry per unit, so the
/// ceiling bounds the memory and the work of one key.
pub const DEFAULT_SLIDING_MAX_LIMIT: u64 = 100_000;

static SLIDING_MAX_LIMIT: AtomicU64 = AtomicU64::new(DEFAULT_SLIDING_MAX_LIMIT);

pub fn sliding_max_limit() -> u64 {
    SLIDING_MAX_LIMIT.load(Ordering::Relaxed)
}

pub fn set_sliding_max_limit(value: u64) {
    SLIDING_MAX_LIMIT.store(value, Ordering::Relaxed);
}
