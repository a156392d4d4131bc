//! Compiled only for tests: `#[cfg(test)] mod models;` in algorithms/mod.rs.
//! Property tests: each algorithm against a reference model written as plainly as
//! possible (a per-window counter, a list of every accepted timestamp, a bucket in
//! exact rational arithmetic), over random call sequences with random costs, time
//! steps and parameters at the bounds; plus invariants that must hold even when the
//! clock steps backwards.

use num_bigint::BigInt;
use num_rational::BigRational;
use num_traits::{One, Signed, ToPrimitive, Zero};
use proptest::prelude::*;

use super::acquire::{self, Leases, VecLeases};
use super::bucket::{self, Rate, State};
use super::fixed::{self, Counter};
use super::gcra::{self, Emission, Tat};
use super::sliding::{self, VecLog};
use super::sliding_counter::{self, Counts};
use super::{
    Cost, Count, Decision, Interval, Millis, RetryAfter, WindowLimit, MAX_COUNT, MAX_DURATION_MS,
};

pub(super) const START: Millis = 1_700_000_000_000;

pub(super) fn count() -> impl Strategy<Value = u64> {
    prop_oneof![4 => 1u64..=10, 1 => 1u64..=1000, 1 => Just(MAX_COUNT), 1 => (MAX_COUNT - 3)..=MAX_COUNT]
}

pub(super) fn duration() -> impl Strategy<Value = u64> {
    prop_oneof![4 => 1u64..=2000, 1 => 1u64..=100_000, 1 => Just(MAX_DURATION_MS)]
}

/// Costs relative to the limit: mostly small, sometimes 0, at or past the limit, or huge.
pub(super) fn cost(limit: u64) -> impl Strategy<Value = u64> {
    prop_oneof![
        4 => 1u64..=3,
        1 => Just(0u64),
        1 => Just(limit),
        1 => Just(limit.saturating_add(1).min(MAX_COUNT)),
        1 => Just(MAX_COUNT),
    ]
}

/// Forward steps only (zero included): where the model must agree exactly.
pub(super) fn forward_step(window: u64) -> impl Strategy<Value = i64> {
    let w = i64::try_from(window).unwrap_or(i64::MAX).min(1 << 40);
    prop_oneof![2 => Just(0i64), 4 => 0..=w.min(5000), 1 => 0..=w.saturating_mul(3)]
}

/// Steps that may go backwards.
pub(super) fn any_step(window: u64) -> impl Strategy<Value = i64> {
    let w = i64::try_from(window).unwrap_or(i64::MAX).min(1 << 40);
    prop_oneof![4 => forward_step(window), 1 => -w.saturating_mul(2)..=0]
}

pub(super) fn calls(
    limit: u64,
    window: u64,
    step: fn(u64) -> BoxedStrategy<i64>,
) -> impl Strategy<Value = Vec<(i64, u64)>> {
    proptest::collection::vec((step(window), cost(limit)), 1..48)
}

pub(super) fn fwd(w: u64) -> BoxedStrategy<i64> {
    forward_step(w).boxed()
}
pub(super) fn back(w: u64) -> BoxedStrategy<i64> {
    any_step(w).boxed()
}

pub(super) fn c(n: u64) -> Count {
    Count::new(n).unwrap()
}
pub(super) fn k(n: u64) -> Cost {
    Cost::new(n).unwrap()
}
pub(super) fn d(ms: u64) -> Interval {
    Interval::from_ms(ms).unwrap()
}

pub(super) fn ms_between(until: i128, now: i128) -> u64 {
    (until - now).clamp(0, i128::from(MAX_COUNT)) as u64
}

/// Invariants every reply must satisfy (the ones every reply keeps, and: "never"
/// only for a cost above the limit).
pub(super) fn check_reply(dec: &Decision, limit: u64, n: u64) {
    if let Err(why) = super::check_fields(&dec.fields()) {
        panic!("{why}");
    }
    assert_eq!(dec.limit, limit);
    if dec.retry_after == RetryAfter::Never {
        assert!(n > limit, "never for a cost within the limit: {dec:?}");
    }
}

mod fixed_window;
mod generic_cell_rate;
mod leases;
mod penalty;
mod refunds;
mod share;
mod sliding_log;
mod token_bucket;
mod window_counter;

use fixed_window::*;
use generic_cell_rate::*;
use sliding_log::*;
use token_bucket::*;
use window_counter::*;

#[test]
fn models_agree_on_the_seed_vectors() {
    // Cross-check the models themselves against the contract's vectors.
    let mut m = SlidingModel::default();
    let got: Vec<_> = [10, 20, 30, 40, 50, 55, 121]
        .iter()
        .map(|t| {
            let dec = m.call(t * 1000, 5, 60_000, 1);
            (dec.allowed, dec.remaining)
        })
        .collect();
    assert_eq!(
        got,
        [
            (true, 4),
            (true, 3),
            (true, 2),
            (true, 1),
            (true, 0),
            (false, 0),
            (true, 4)
        ]
    );
    let mut b = BucketModel::new(5);
    let rejected = (0..7)
        .map(|_| b.call(0, 5, 1, 1000, 1))
        .filter(|dec| !dec.allowed)
        .count();
    assert_eq!(rejected, 2);
    assert!(b.call(3000, 5, 1, 1000, 1).allowed);
    assert!(BigRational::one() > BigRational::zero());
}
