//! `unit [EVERY n] [ON anchor] [AT hh:mm] [TZ zone]` into a [`Calendar`].

use super::zone::two_digits;
use super::{Calendar, Steps, Zone};
use crate::args;
use crate::error::{Error, Result};

/// A calendar's unit, with the most of it one period may hold (ten years).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Unit {
    Day,
    Week,
    Month,
    Year,
}

impl Unit {
    /// Reads `day`, `week`, `month` or `year`, case-insensitively.
    pub fn parse(bytes: &[u8]) -> Result<Unit> {
        [Unit::Day, Unit::Week, Unit::Month, Unit::Year]
            .into_iter()
            .find(|u| bytes.eq_ignore_ascii_case(u.name().as_bytes()))
            .ok_or(Error::BadUnit)
    }

    pub const fn name(self) -> &'static str {
        match self {
            Unit::Day => "day",
            Unit::Week => "week",
            Unit::Month => "month",
            Unit::Year => "year",
        }
    }

    /// The largest `EVERY`: a period of at most ten years.
    pub const fn max_every(self) -> u64 {
        match self {
            Unit::Day => 3650,
            Unit::Week => 521,
            Unit::Month => 120,
            Unit::Year => 10,
        }
    }
}

/// Weekday names in ISO order (Monday = 0), as `ON` takes them for `week`.
const WEEKDAYS: [&[u8]; 7] = [b"mon", b"tue", b"wed", b"thu", b"fri", b"sat", b"sun"];

/// 1970-01-01 was a Thursday (ISO index 3).
const EPOCH_WEEKDAY: i64 = 3;

/// Days in each month of a leap year: the `MM-DD` a year's `ON` accepts.
const MONTH_DAYS: [i32; 12] = [31, 29, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31];

pub(super) fn calendar(
    unit: &[u8],
    every: Option<&[u8]>,
    on: Option<&[u8]>,
    at: Option<&[u8]>,
    tz: Option<&[u8]>,
) -> Result<Calendar> {
    let words = [Some(unit), every, on, at, tz];
    if let Some(calendar) = recent::get(&words) {
        return Ok(calendar);
    }
    let calendar = read(unit, [every, on, at, tz])?;
    recent::put(&words, calendar);
    Ok(calendar)
}

/// Reads a calendar from its unit and its options' values, every one checked.
fn read(unit: &[u8], [every, on, at, tz]: [Option<&[u8]>; 4]) -> Result<Calendar> {
    let unit = Unit::parse(unit)?;
    let every = match every {
        Some(n) => args::integer("EVERY", n, 1, unit.max_every())?,
        None => 1,
    } as i64;
    let steps = match (unit, on) {
        (Unit::Day, Some(_)) => return Err(Error::OnForDay),
        (Unit::Day, None) => Steps::Days {
            first: 0,
            len: every,
        },
        (Unit::Week, on) => {
            let weekday = match on {
                Some(on) => weekday(on)?,
                None => 0,
            };
            Steps::Days {
                first: -(EPOCH_WEEKDAY - weekday).rem_euclid(7),
                len: 7 * every,
            }
        }
        (Unit::Month, on) => Steps::Months {
            first: 0,
            len: every,
            day: match on {
                Some(on) => month_day(on)?,
                None => 1,
            },
        },
        (Unit::Year, on) => {
            let (month, day) = match on {
                Some(on) => year_day(on)?,
                None => (0, 1),
            };
            Steps::Months {
                first: month,
                len: 12 * every,
                day,
            }
        }
    };
    let at = match at {
        Some(at) => time_of_day(at)?,
        None => 0,
    };
    let zone = match tz {
        Some(tz) => Zone::parse(tz)?,
        None => Zone::UTC,
    };
    Ok(Calendar {
        unit,
        steps,
        at,
        zone,
    })
}

/// `mon` … `sun`, any case: its ISO index (Monday = 0).
fn weekday(bytes: &[u8]) -> Result<i64> {
    WEEKDAYS
        .iter()
        .position(|w| bytes.eq_ignore_ascii_case(w))
        .map(|i| i as i64)
        .ok_or(Error::BadAnchor {
            unit: "week",
            accepted: "mon, tue, wed, thu, fri, sat or sun",
        })
}

/// `1` ..= `31`.
fn month_day(bytes: &[u8]) -> Result<i8> {
    crate::decimal::canonical_u64(bytes)
        .filter(|d| (1..=31).contains(d))
        .and_then(|d| i8::try_from(d).ok())
        .ok_or(Error::BadAnchor {
            unit: "month",
            accepted: "a day of the month from 1 to 31",
        })
}

/// `MM-DD`, a date of a leap year (`02-29` included): (month from 0, day).
fn year_day(bytes: &[u8]) -> Result<(i64, i8)> {
    let bad = Error::BadAnchor {
        unit: "year",
        accepted: "a date MM-DD from 01-01 to 12-31",
    };
    let [m1, m2, b'-', d1, d2] = *bytes else {
        return Err(bad);
    };
    let month = two_digits(m1, m2).filter(|m| (1..=12).contains(m));
    let day = two_digits(d1, d2);
    match (month, day) {
        (Some(m), Some(d)) if d >= 1 && d <= MONTH_DAYS[(m - 1) as usize] => {
            Ok((i64::from(m - 1), d as i8))
        }
        _ => Err(bad),
    }
}

/// `hh:mm`, 00:00 ..= 23:59: minutes after midnight.
fn time_of_day(bytes: &[u8]) -> Result<u16> {
    let minutes = match *bytes {
        [h1, h2, b':', m1, m2] => two_digits(h1, h2)
            .filter(|&h| h <= 23)
            .zip(two_digits(m1, m2).filter(|&m| m <= 59))
            .map(|(h, m)| h * 60 + m),
        _ => None,
    };
    minutes
        .and_then(|m| u16::try_from(m).ok())
        .ok_or(Error::BadTime)
}

/// The calendars last read, by the exact words a call gave (unit, then EVERY, ON,
/// AT and TZ's values or their absence): a call repeating a recent calendar, as
/// every call on a live limiter does, is not parsed again (the hot path).
mod recent {
    use std::cell::RefCell;

    use super::Calendar;

    const SLOTS: usize = 8;

    /// Words as one byte string: each a length byte then its bytes, `ABSENT` for an
    /// option not given. Words longer than 254 bytes are never remembered.
    const ABSENT: u8 = 255;

    /// The calendars by their words' key, and the slot the next one replaces.
    type Recent = (Vec<(Vec<u8>, Calendar)>, usize);

    thread_local! {
        static RECENT: RefCell<Recent> = const { RefCell::new((Vec::new(), 0)) };
    }

    fn matches(key: &[u8], words: &[Option<&[u8]>]) -> bool {
        let mut rest = key;
        for word in words {
            let Some((&len, tail)) = rest.split_first() else {
                return false;
            };
            rest = match word {
                None if len == ABSENT => tail,
                Some(w) if usize::from(len) == w.len() && tail.starts_with(w) => &tail[w.len()..],
                _ => return false,
            };
        }
        rest.is_empty()
    }

    pub(super) fn get(words: &[Option<&[u8]>]) -> Option<Calendar> {
        RECENT.with(|recent| {
            let recent = recent.try_borrow().ok()?;
            recent
                .0
                .iter()
                .find(|(key, _)| matches(key, words))
                .map(|(_, calendar)| *calendar)
        })
    }

    pub(super) fn put(words: &[Option<&[u8]>], calendar: Calendar) {
        let mut key = Vec::new();
        for word in words {
            match word {
                None => key.push(ABSENT),
                Some(w) => match u8::try_from(w.len()) {
                    Ok(len) if len != ABSENT => {
                        key.push(len);
                        key.extend_from_slice(w);
                    }
                    _ => return,
                },
            }
        }
        RECENT.with(|recent| {
            let Ok(mut recent) = recent.try_borrow_mut() else {
                return;
            };
            let (entries, next) = &mut *recent;
            if entries.len() < SLOTS {
                entries.push((key, calendar));
            } else {
                entries[*next] = (key, calendar);
                *next = (*next + 1) % SLOTS;
            }
        });
    }
}
