//! A state kept in one string with an expiry ([`StringState`]): RL.FIXED, RL.GCRA
//! (and CL.THROTTLE), RL.SLIDINGCOUNTER, RL.PENALTY, RL.QUOTA. Read whole, written with
//! `SET key value PXAT at`, deleted with `DEL` when a refund leaves the limiter at
//! its initial state.

use super::{Kind, Store};
use crate::algorithms::fixed::FixedWindow;
use crate::algorithms::gcra::Gcra;
use crate::algorithms::penalty::EscalatingBlocks;
use crate::algorithms::quota::CalendarQuota;
use crate::algorithms::sliding_counter::SlidingWindowCounter;
use crate::algorithms::{Algorithm, Amount, Change, Millis, Outcome};
use crate::codec::StringState;
use crate::command::{Runs, Spec};
use crate::commands;
use crate::error::{Error, Result};

/// The state in `key`: None for no key, WRONGTYPE for another type, the "does not
/// hold" error for a string this limiter did not write (made only then: see
/// [`crate::args`]).
#[inline]
#[allow(clippy::unnecessary_lazy_evaluations)]
fn load<A: StringState, S: Store>(store: &S, key: &S::Key) -> Result<Option<A::Value>> {
    match store.kind(key) {
        Kind::Empty => Ok(None),
        Kind::String => {
            let expires_at = if A::READS_EXPIRY {
                store.expires_at(key)
            } else {
                None
            };
            store
                .read_string(key, |value| A::decode(value, expires_at))
                .map(Some)
                .ok_or_else(|| Error::NotALimiter(A::WHAT))
        }
        _ => Err(Error::WrongType),
    }
}

/// Writes a call's change: the encoded state with its expiry, or no key.
#[inline]
fn store<A: StringState, S: Store>(
    store: &mut S,
    key: &S::Key,
    write: Change<A::Stored>,
) -> Result<()> {
    match write {
        Change::Set(stored) => A::encode(&stored, |value, expires_at| {
            store.set_pxat(key, value, expires_at)
        }),
        Change::Delete => store.del(key),
    }
}

/// The commands whose state is a string, each with the algorithm that reads and
/// writes it: one line each.
macro_rules! string_state {
    ($($command:ident => $algorithm:ty),* $(,)?) => {$(
        impl Runs for commands::$command {
            #[inline]
            fn decide<S: Store>(
                s: &S,
                key: &S::Key,
                params: &<Self as Spec>::Params,
                now: Millis,
                amount: Amount,
            ) -> Result<Outcome<<Self as Spec>::Write>> {
                let state = load::<$algorithm, S>(s, key)?;
                Ok(<$algorithm>::call(state, now, *params, amount))
            }

            #[inline]
            fn store<S: Store>(s: &mut S, key: &S::Key, write: <Self as Spec>::Write) -> Result<()> {
                store::<$algorithm, S>(s, key, write)
            }
        }
    )*};
}

string_state! {
    Fixed => FixedWindow,
    Gcra => Gcra,
    Throttle => Gcra,
    SlidingCounter => SlidingWindowCounter,
    Penalty => EscalatingBlocks,
    Quota => CalendarQuota,
}
