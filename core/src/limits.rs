//! The contract's bounds on every number RL reads or answers: below the
//! algorithms, so that errors can name them without depending on the algorithms.

/// Largest count, cost and reply duration: 2^53 - 1, the largest integer every
/// client language (including JavaScript's doubles) represents exactly.
pub const MAX_COUNT: u64 = (1 << 53) - 1;

/// Longest window or period: ten years of 365 days.
pub const MAX_DURATION_MS: u64 = 10 * 365 * 24 * 60 * 60 * 1000;
