//! Parameter values whose invalid forms cannot be constructed: counts, costs, durations, and the limits built from them.

pub use crate::limits::{MAX_COUNT, MAX_DURATION_MS};

/// A limit, capacity or refill amount: 1 ..= 2^53 - 1.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub struct Count(u64);

impl Count {
    pub const fn new(value: u64) -> Option<Self> {
        if value >= 1 && value <= MAX_COUNT {
            Some(Self(value))
        } else {
            None
        }
    }

    pub const fn get(self) -> u64 {
        self.0
    }
}

/// Units one call consumes: 0 ..= 2^53 - 1. Zero inspects without writing.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub struct Cost(u64);

impl Cost {
    pub const ONE: Cost = Cost(1);
    pub const ZERO: Cost = Cost(0);

    pub const fn new(value: u64) -> Option<Self> {
        if value <= MAX_COUNT {
            Some(Self(value))
        } else {
            None
        }
    }

    pub const fn get(self) -> u64 {
        self.0
    }

    /// A cost of zero asks for the state and must write nothing.
    pub const fn is_inspection(self) -> bool {
        self.0 == 0
    }
}

/// A window or refill period: 1 ms ..= 10 years.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub struct Interval(u64);

impl Interval {
    pub const fn from_ms(ms: u64) -> Option<Self> {
        if ms >= 1 && ms <= MAX_DURATION_MS {
            Some(Self(ms))
        } else {
            None
        }
    }

    pub const fn ms(self) -> u64 {
        self.0
    }

    /// As a signed time span; every valid duration fits an i64.
    pub const fn ms_i64(self) -> i64 {
        self.0 as i64
    }
}

/// At most `limit` units per `window`: the parameters of RL.FIXED and RL.SLIDING.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct WindowLimit {
    pub limit: Count,
    pub window: Interval,
}

impl WindowLimit {
    pub const fn new(limit: Count, window: Interval) -> Self {
        WindowLimit { limit, window }
    }
}

/// A bucket of `capacity` units that regains `tokens` every `period`: the
/// parameters of RL.BUCKET.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Rate {
    pub capacity: Count,
    pub tokens: Count,
    pub period: Interval,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn count_accepts_exactly_one_to_two_pow_53_minus_one() {
        assert_eq!(Count::new(0), None);
        assert_eq!(Count::new(1).map(Count::get), Some(1));
        assert_eq!(Count::new(MAX_COUNT).map(Count::get), Some(MAX_COUNT));
        assert_eq!(Count::new(MAX_COUNT + 1), None);
    }

    #[test]
    fn cost_accepts_zero_to_two_pow_53_minus_one() {
        assert!(Cost::new(0).is_some_and(Cost::is_inspection));
        assert_eq!(Cost::new(MAX_COUNT).map(Cost::get), Some(MAX_COUNT));
        assert_eq!(Cost::new(MAX_COUNT + 1), None);
    }

    #[test]
    fn duration_accepts_one_ms_to_ten_years() {
        assert_eq!(Interval::from_ms(0), None);
        assert_eq!(Interval::from_ms(1).map(Interval::ms), Some(1));
        assert_eq!(MAX_DURATION_MS, 315_360_000_000);
        assert!(Interval::from_ms(MAX_DURATION_MS).is_some());
        assert_eq!(Interval::from_ms(MAX_DURATION_MS + 1), None);
    }
}
