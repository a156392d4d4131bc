//! The last period computed for each calendar, so a call on a live limiter costs no
//! time-zone lookup: a pure function's memo, reused only while `start ≤ now < end`
//! for the very same calendar, so results are exactly [`Calendar::compute`]'s.

use std::cell::Cell;

use super::{Calendar, Period, Steps, Zone};
use crate::algorithms::Millis;

/// Slots of the memo: calendars in use at once (tenants in several zones, an
/// RL.ALL with several quotas) each keep theirs unless two share a slot.
const SLOTS: usize = 16;

thread_local! {
    static MEMO: [Cell<Option<(Calendar, Period)>>; SLOTS] = const {
        [const { Cell::new(None) }; SLOTS]
    };
}

pub(super) fn period(calendar: Calendar, now: Millis) -> Period {
    let slot = slot(&calendar);
    let hit = MEMO.with(|memo| {
        memo[slot]
            .get()
            .filter(|(c, p)| *c == calendar && p.start <= now && now < p.end)
    });
    if let Some((_, period)) = hit {
        return period;
    }
    let period = calendar.compute(now);
    MEMO.with(|memo| memo[slot].set(Some((calendar, period))));
    period
}

/// A calendar's slot: its fields mixed into a few bits.
fn slot(c: &Calendar) -> usize {
    let steps = match c.steps {
        Steps::Days { first, len } => (first as u64) ^ ((len as u64) << 24),
        Steps::Months { first, len, day } => {
            (first as u64) ^ ((len as u64) << 8) ^ ((day as u64) << 20) ^ (1 << 30)
        }
    };
    let zone = match c.zone {
        Zone::Fixed(seconds) => seconds as u64,
        Zone::Named(i) => u64::from(i) << 32,
    };
    let mixed = (steps ^ zone.rotate_left(17) ^ (u64::from(c.at) << 44))
        .wrapping_mul(0x9E37_79B9_7F4A_7C15);
    (mixed >> 60) as usize % SLOTS
}
