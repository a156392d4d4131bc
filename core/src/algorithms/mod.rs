//! The limiters as pure arithmetic.
//!
//! Nothing here touches Redis or reads a clock: each algorithm is a function of
//! (stored state, `now`, quota, cost) that returns a [`Decision`] and, when the call
//! is allowed and consumes something, the state to store. That keeps every rule of
//! the contract testable with explicit times.

pub mod acquire;
pub mod bucket;
pub mod fixed;
pub mod gcra;
#[cfg(test)]
mod models;
pub mod penalty;
pub mod quota;
pub mod share;
pub mod sliding;
pub mod sliding_counter;
pub mod values;

pub use values::{Cost, Count, Interval, Rate, WindowLimit, MAX_COUNT, MAX_DURATION_MS};

/// Server time in milliseconds since the Unix epoch.
pub type Millis = i64;

/// The reply's `retry_after`: when the caller may act. For a rejected call, when
/// the same call could succeed if nothing else happens; for an allowed one, at
/// once or, when it was scheduled (RL.GCRA's `DELAY`), after its wait.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RetryAfter {
    /// Allowed now (the reply's `0`).
    Now,
    /// Allowed and scheduled: act after this many ms (rounded up, never 0). Only
    /// RL.GCRA with `DELAY max` answers it, with a wait of at most `max`.
    Delayed(u64),
    /// Rejected: milliseconds until the same call would be allowed, rounded up.
    Ms(u64),
    /// The cost exceeds the limit: no amount of waiting helps (the reply's `-1`).
    Never,
}

/// What one call decided, and the write it makes when it consumes something
/// (`write` is None for a rejected call and for COST 0). Every algorithm returns
/// this shape; `S` is what its storage writes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Outcome<S> {
    pub decision: Decision,
    pub write: Option<S>,
}

/// What a call asks of a limiter: take units (`COST n`, the default `COST 1`),
/// give back units taken earlier (`REFUND n`), or charge units after the fact
/// whatever is left, into debt if need be (`DEBIT n`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Amount {
    Take(Cost),
    Refund(Cost),
    Debit(Count),
}

/// The write a call makes to its key: store a new state, or delete the key because
/// the limiter is back to its initial state (a refund that gave everything back).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Change<S> {
    Set(S),
    Delete,
}

impl<S> Outcome<S> {
    /// The same outcome, its write as a [`Change::Set`].
    pub fn into_change(self) -> Outcome<Change<S>> {
        Outcome {
            decision: self.decision,
            write: self.write.map(Change::Set),
        }
    }
}

/// The outcome of a refund: its write (None when nothing changes) and the state
/// it leaves, as `COST 0` reads it (`report`). A refund is always "allowed"
/// and never waits, even on a limiter that stays over a lowered limit.
pub(crate) fn refunded<W>(change: Option<W>, report: Decision) -> Outcome<W> {
    Outcome {
        decision: Decision {
            allowed: true,
            retry_after: RetryAfter::Now,
            ..report
        },
        write: change,
    }
}

/// The state a write leaves: the stored one, none after a delete, the old one when
/// nothing is written. `state` reads it out of a store.
pub(crate) fn after<S, T>(
    change: &Option<Change<S>>,
    old: Option<T>,
    state: impl FnOnce(&S) -> T,
) -> Option<T> {
    match change {
        Some(Change::Set(s)) => Some(state(s)),
        Some(Change::Delete) => None,
        None => old,
    }
}

/// The outcome of a debit: always allowed, never waits, and always writes; the
/// reply is the state it leaves as `COST 0` reads it (`report`), which may be in
/// debt (remaining 0, a reset_after that covers the debt).
pub(crate) fn debited<S>(write: S, report: Decision) -> Outcome<S> {
    refunded(Some(write), report)
}

/// A limiter's arithmetic: a pure function of (stored state, now, parameters,
/// amount) that decides a call and says what it writes. Each algorithm is a unit
/// type implementing this; the module loads `State` from a native key and stores
/// `Write`, the in-memory executor and the tests do the same without a server.
pub trait Algorithm {
    /// What the key holds, as the algorithm reads it (None or a view for an absent key).
    type State;
    /// A call's parameters, valid by construction.
    type Params: Copy;
    /// What a call writes: a new state, or a delete back at the initial state.
    type Write;

    /// Takes `cost` units (COST 0 inspects and writes nothing).
    fn take(
        state: Self::State,
        now: Millis,
        params: Self::Params,
        cost: Cost,
    ) -> Outcome<Self::Write>;

    /// One call: take, give back or charge, as the call's amount says — one of
    /// [`takes_any`], [`takes_refunds`] or [`takes_only`], as the algorithm is also
    /// [`Refunds`] and [`Debits`]. Inlined, so a take costs what the algorithm's
    /// own `take` costs.
    fn call(
        state: Self::State,
        now: Millis,
        params: Self::Params,
        amount: Amount,
    ) -> Outcome<Self::Write>;
}

/// An algorithm whose command takes `REFUND n`.
pub trait Refunds: Algorithm {
    /// Gives back up to `n` units taken earlier, never beyond the initial state.
    fn refund(
        state: Self::State,
        now: Millis,
        params: Self::Params,
        n: Cost,
    ) -> Outcome<Self::Write>;
}

/// An algorithm whose command takes `DEBIT n`.
pub trait Debits: Algorithm {
    /// Charges `n` units after the fact, into debt: always allowed, always writes.
    fn debit(
        state: Self::State,
        now: Millis,
        params: Self::Params,
        n: Count,
    ) -> Outcome<Self::Write>;
}

/// What a call decides on: the state, `now` and the parameters.
pub type On<A> = (<A as Algorithm>::State, Millis, <A as Algorithm>::Params);

/// [`Algorithm::call`] of an algorithm that takes every amount.
#[inline]
pub fn takes_any<A: Refunds + Debits>((s, now, p): On<A>, amount: Amount) -> Outcome<A::Write> {
    match amount {
        Amount::Debit(n) => A::debit(s, now, p, n),
        other => takes_refunds::<A>((s, now, p), other),
    }
}

/// [`Algorithm::call`] of an algorithm that takes REFUND but no DEBIT.
#[inline]
pub fn takes_refunds<A: Refunds>((s, now, p): On<A>, amount: Amount) -> Outcome<A::Write> {
    match amount {
        Amount::Refund(n) => A::refund(s, now, p, n),
        other => takes_only::<A>((s, now, p), other),
    }
}

/// [`Algorithm::call`] of an algorithm that takes neither REFUND nor DEBIT. An
/// amount it does not take only looks, as `COST 0`: its command's parser refuses
/// that option, and RL.ALL asks no policy for what its row does not take.
#[inline]
pub fn takes_only<A: Algorithm>((s, now, p): On<A>, amount: Amount) -> Outcome<A::Write> {
    let cost = match amount {
        Amount::Take(n) => n,
        Amount::Refund(_) | Amount::Debit(_) => Cost::ZERO,
    };
    A::take(s, now, p, cost)
}

/// The [`Algorithm`] of a limiter whose state is one value (None for an absent key),
/// written as `Change<Stored>`, from its module's `decide`, `refund` and `debit`
/// functions: RL.FIXED, RL.BUCKET, RL.GCRA and RL.SLIDINGCOUNTER.
macro_rules! one_value_algorithm {
    ($(#[$doc:meta])* $name:ident, $state:ty, $params:ty) => {
        $(#[$doc])*
        pub struct $name;

        impl $crate::algorithms::Algorithm for $name {
            type State = Option<$state>;
            type Params = $params;
            type Write = $crate::algorithms::Change<Stored>;

            fn take(state: Option<$state>, now: Millis, params: $params, cost: Cost) -> Outcome<Self::Write> {
                decide(state, now, params, cost).into_change()
            }

            #[inline]
            fn call(state: Option<$state>, now: Millis, params: $params, amount: $crate::algorithms::Amount) -> Outcome<Self::Write> {
                $crate::algorithms::takes_any::<Self>((state, now, params), amount)
            }
        }

        impl $crate::algorithms::Refunds for $name {
            fn refund(state: Option<$state>, now: Millis, params: $params, n: Cost) -> Outcome<Self::Write> {
                refund(state, now, params, n)
            }
        }

        impl $crate::algorithms::Debits for $name {
            fn debit(state: Option<$state>, now: Millis, params: $params, n: Count) -> Outcome<Self::Write> {
                debit(state, now, params, n).into_change()
            }
        }
    };
}
pub(crate) use one_value_algorithm;

/// What a call decided: the five fields of the reply.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Decision {
    pub allowed: bool,
    pub limit: u64,
    /// Units that could still be taken right now, after this call; never above `limit`.
    pub remaining: u64,
    pub retry_after: RetryAfter,
    /// Milliseconds until the limiter is back to its initial state; 0 if it is.
    pub reset_after_ms: u64,
}

impl Decision {
    /// An allowed call that left at most a tenth of the limit: a caller about to
    /// hit it (INFO's `near_limit`).
    pub fn near_limit(&self) -> bool {
        self.allowed && u128::from(self.remaining) * 10 <= u128::from(self.limit)
    }

    /// The reply's five integers: allowed, limit, remaining, retry_after_ms,
    /// reset_after_ms.
    pub fn fields(&self) -> [i64; 5] {
        [
            i64::from(self.allowed),
            // Counts and durations are at most 2^53 − 1: they fit an i64.
            self.limit as i64,
            self.remaining as i64,
            self.retry_after_ms(),
            self.reset_after_ms as i64,
        ]
    }

    /// CL.THROTTLE's five integers, as redis-cell answers: limited (0 allowed, 1
    /// limited), limit, remaining, retry_after and reset_after in seconds rounded up
    /// (retry_after −1 when allowed, and when it never can be).
    pub fn throttle_fields(&self) -> [i64; 5] {
        let seconds = |ms: u64| i64::try_from(ms.div_ceil(1000)).unwrap_or(i64::MAX);
        let retry = match self.retry_after {
            RetryAfter::Ms(ms) => seconds(ms),
            // Allowed (CL.THROTTLE takes no DELAY: never Delayed), or never.
            RetryAfter::Now | RetryAfter::Delayed(_) | RetryAfter::Never => -1,
        };
        [
            i64::from(!self.allowed),
            self.limit as i64,
            self.remaining as i64,
            retry,
            seconds(self.reset_after_ms),
        ]
    }

    /// `retry_after` as the reply's integer: 0 allowed now, the wait of a
    /// scheduled call, -1 never.
    pub fn retry_after_ms(&self) -> i64 {
        match self.retry_after {
            RetryAfter::Now => 0,
            // cap() keeps every duration at or below 2^53 - 1, which fits an i64.
            RetryAfter::Delayed(ms) | RetryAfter::Ms(ms) => i64::try_from(ms).unwrap_or(i64::MAX),
            RetryAfter::Never => -1,
        }
    }
}

/// Caps a computed duration at 2^53 - 1 ms, the contract's "very long time".
pub(crate) fn cap(ms: u128) -> u64 {
    // MAX_COUNT is 2^53 - 1 and fits any integer type used here.
    ms.min(MAX_COUNT as u128) as u64
}

/// `until - now` in ms, 0 if `until` is not later, capped like every reply duration.
pub(crate) fn ms_until(until: Millis, now: Millis) -> u64 {
    let diff = i128::from(until) - i128::from(now);
    if diff <= 0 {
        0
    } else {
        cap(diff as u128)
    }
}

/// `at + ms` as an absolute time, saturating instead of overflowing.
pub(crate) fn at_plus(at: Millis, ms: u64) -> Millis {
    at.saturating_add(i64::try_from(ms).unwrap_or(i64::MAX))
}

/// The invariants every reply of RL's five integers keeps, whatever the call:
/// allowed 0 or 1; remaining within 0 ..= limit; when allowed, retry_after 0 or the
/// wait of a scheduled call; when rejected, a wait of at least 1 ms or −1 (never);
/// every duration at most 2^53 − 1 ms. The property tests and the fuzzer check
/// every reply with it; the reason when one is broken.
pub fn check_fields(f: &[i64]) -> Result<(), String> {
    let max = MAX_COUNT as i64;
    let [allowed, limit, remaining, retry, reset] = f else {
        return Err(format!("not five fields: {f:?}"));
    };
    let ok = (*allowed == 0 || *allowed == 1)
        && (0..=max).contains(limit)
        && (0..=*limit).contains(remaining)
        && (0..=max).contains(reset)
        && if *allowed == 1 {
            (0..=max).contains(retry)
        } else {
            *retry == -1 || (1..=max).contains(retry)
        };
    if ok {
        Ok(())
    } else {
        Err(format!("a reply breaks the invariants: {f:?}"))
    }
}
