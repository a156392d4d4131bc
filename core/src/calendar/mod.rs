//! Calendar periods in a time zone: RL.QUOTA's "per day / week / month / year,
//! starting at a local time of day in the customer's zone".
//!
//! A [`Calendar`] is parsed once from `unit [EVERY n] [ON anchor] [AT hh:mm] [TZ
//! zone]` and is valid by construction; [`Calendar::period`] maps an instant (ms)
//! to the period `[start, end)` holding it. Pure: the time comes in as `now`.
//!
//! Rules: periods are numbered from 1970-01-01 in local time (`month EVERY 3` is the
//! calendar quarter); a month's anchor day is clamped to the month's last day with
//! no drift (`ON 31`: Jan 31, Feb 28, Mar 31); a local start time that does not exist
//! (a DST gap) moves forward by the gap, one that occurs twice (an overlap) is the
//! earlier instant; the boundary instant belongs to the new period.

mod civil;
mod memo;
mod parse;
#[cfg(test)]
mod tests;
mod zone;

use jiff::civil::{Date, DateTime};
use jiff::tz::TimeZone;
use jiff::Timestamp;

use crate::algorithms::Millis;

pub use parse::Unit;
pub use zone::{names as zone_names, tzdb_version, Zone};

/// One period of a calendar: `[start, end)` in ms since the Unix epoch.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Period {
    pub start: Millis,
    pub end: Millis,
}

/// A parsed `unit [EVERY n] [ON anchor] [AT hh:mm] [TZ zone]`. Small and `Copy`,
/// so a call's parameters carry it and the memo keys on it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Calendar {
    unit: Unit,
    steps: Steps,
    /// Local time of day a period starts, in minutes (0 ..= 23·60 + 59).
    at: u16,
    zone: Zone,
}

/// How period k's start day is found.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
enum Steps {
    /// Day `first + k·len` counted from 1970-01-01 (`day`, and `week` from the
    /// anchor weekday of the week holding 1970-01-01).
    Days { first: i64, len: i64 },
    /// Month `first + k·len` counted from 1970-01 (`month`; `year` as 12·n months
    /// from its anchor month), on `day` clamped to the month's last day.
    Months { first: i64, len: i64, day: i8 },
}

/// Instants are clamped into years ~1020 ..= ~8940 before any calendar arithmetic,
/// so every date computed (at most ten years away) stays within the calendar
/// library's range; a real server clock is never near either bound.
const EARLIEST: Millis = -30_000_000_000_000;
const LATEST: Millis = 220_000_000_000_000;

impl Calendar {
    /// Reads a calendar from its unit and the values of its options (None: not
    /// given). Each bad value is an error naming its argument; `day` takes no ON.
    pub fn parse(
        unit: &[u8],
        every: Option<&[u8]>,
        on: Option<&[u8]>,
        at: Option<&[u8]>,
        tz: Option<&[u8]>,
    ) -> crate::error::Result<Calendar> {
        parse::calendar(unit, every, on, at, tz)
    }

    /// Its unit (`day`, `week`, `month`, `year`).
    pub fn unit(self) -> Unit {
        self.unit
    }

    /// The time zone periods are computed in.
    pub fn zone(self) -> Zone {
        self.zone
    }

    /// The period holding `now`: `start ≤ now < end`, `end` the next period's start.
    /// Remembers the last period of each calendar it computed, so calls within one
    /// period never consult the time zone rules again.
    pub fn period(self, now: Millis) -> Period {
        memo::period(self, now)
    }

    /// [`Calendar::period`] without the memo: the time zone rules every time.
    pub fn compute(self, now: Millis) -> Period {
        let now = now.clamp(EARLIEST, LATEST);
        self.try_compute(now).unwrap_or(Period {
            start: now,
            end: now.saturating_add(1),
        })
    }

    /// The period holding `now` (already clamped). None only if the calendar
    /// library refuses a date, which the clamp rules out.
    fn try_compute(self, now: Millis) -> Option<Period> {
        let rules = self.zone.rules();
        let local = rules
            .to_datetime(Timestamp::from_millisecond(now).ok()?)
            .date();
        let mut k = self.index_of(local);
        let mut start = self.start(&rules, k)?;
        // The local date's period estimate can be one late around a start time of
        // day (before AT) or a DST change: step back, then forward, a bounded
        // number of times (a zone that skips a whole day gives an empty period).
        for _ in 0..4 {
            if start <= now {
                break;
            }
            k -= 1;
            start = self.start(&rules, k)?;
        }
        let mut end = self.start(&rules, k + 1)?;
        for _ in 0..4 {
            if end > now {
                break;
            }
            k += 1;
            start = end;
            end = self.start(&rules, k + 1)?;
        }
        (start <= now && now < end).then_some(Period { start, end })
    }

    /// The number of the period whose start day is the latest on or before `date`.
    fn index_of(self, date: Date) -> i64 {
        match self.steps {
            Steps::Days { first, len } => (civil::epoch_day(date) - first).div_euclid(len),
            Steps::Months { first, len, .. } => (civil::epoch_month(date) - first).div_euclid(len),
        }
    }

    /// Period k's start instant: its start day at `AT`, resolved in the zone (a gap
    /// moves forward, an overlap takes the earlier instant).
    fn start(self, rules: &TimeZone, k: i64) -> Option<Millis> {
        let date = match self.steps {
            Steps::Days { first, len } => civil::from_epoch_day(first + k * len)?,
            Steps::Months { first, len, day } => civil::clamped(first + k * len, day)?,
        };
        let hour = i8::try_from(self.at / 60).ok()?;
        let minute = i8::try_from(self.at % 60).ok()?;
        let local: DateTime = date.at(hour, minute, 0, 0);
        let instant = rules.to_ambiguous_timestamp(local).compatible().ok()?;
        Some(instant.as_millisecond())
    }
}
