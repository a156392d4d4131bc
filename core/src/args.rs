//! Argument parsing shared by every RL command: counts, durations, integers and
//! lease ids; the options after them are `options`'s.
//!
//! Arguments are raw bytes (keys and values are binary-safe); anything that is not
//! exactly the accepted form is an error naming the argument.
//!
//! Each error is made only when the argument is bad (`ok_or_else`): an `Error` has
//! drop glue (its variants with text), so `ok_or(Error::…)` would build and drop
//! one for every good argument of every call.
#![allow(clippy::unnecessary_lazy_evaluations)]

use crate::algorithms::{Cost, Count, Interval, MAX_DURATION_MS};
use crate::decimal;
use crate::error::{Error, Result};

/// A limit, capacity or refill amount: 1 ..= 2^53 - 1.
pub fn count(name: &'static str, bytes: &[u8]) -> Result<Count> {
    decimal::canonical_u64(bytes)
        .and_then(Count::new)
        .ok_or_else(|| Error::BadCount { name, min: 1 })
}

/// An integer argument within `min ..= max` (CL.THROTTLE's max_burst).
pub fn integer(name: &'static str, bytes: &[u8], min: u64, max: u64) -> Result<u64> {
    decimal::canonical_u64(bytes)
        .filter(|v| (min..=max).contains(v))
        .ok_or_else(|| Error::BadInteger { name, min, max })
}

/// A cost given as a positional argument (CL.THROTTLE's quantity): 0 ..= 2^53 - 1.
pub fn cost(name: &'static str, bytes: &[u8]) -> Result<Cost> {
    decimal::canonical_u64(bytes)
        .and_then(Cost::new)
        .ok_or_else(|| Error::BadCount { name, min: 0 })
}

/// A window or period: an integer with an optional unit (ms, s, m, h, d; any case);
/// a bare integer means seconds, as in EXPIRE. 1 ms ..= 10 years.
pub fn duration(name: &'static str, bytes: &[u8]) -> Result<Interval> {
    duration_ms(bytes)
        .and_then(Interval::from_ms)
        .ok_or_else(|| Error::BadDuration { name, min: "1ms" })
}

/// A `DELAY`: a duration as for [`duration`], but `0` (no wait) is allowed, in ms.
pub fn delay(name: &'static str, bytes: &[u8]) -> Result<u64> {
    duration_ms(bytes).ok_or_else(|| Error::BadDuration { name, min: "0" })
}

/// The value after a `DELAY` (RL.GCRA's option, an RL.ALL GCRA policy's): the
/// one place DELAY's value is read.
pub fn delay_option(value: Option<&[u8]>) -> Result<u64> {
    delay("DELAY", value.ok_or(Error::MissingValue("DELAY"))?)
}

/// A duration's ms, 0 ..= 10 years; None if it is not one.
fn duration_ms(bytes: &[u8]) -> Option<u64> {
    // The unit from the last bytes (case-insensitive, no lowered copy: this runs for
    // every duration of every call); the rest must be the number, all digits.
    let is = |b: &u8, unit: u8| b.eq_ignore_ascii_case(&unit);
    let (number, ms_per_unit): (&[u8], u64) = match bytes {
        [number @ .., m, s] if is(m, b'm') && is(s, b's') => (number, 1),
        [number @ .., u] if !u.is_ascii_digit() => match u.to_ascii_lowercase() {
            b's' => (number, 1000),
            b'm' => (number, 60_000),
            b'h' => (number, 3_600_000),
            b'd' => (number, 86_400_000),
            _ => return None,
        },
        number => (number, 1000),
    };
    // Canonical (no leading zero), and no longer than the longest duration's ms: a
    // longer one is too long in any unit, and a shorter one cannot overflow.
    const MAX_DIGITS: usize = MAX_DURATION_MS.ilog10() as usize + 1;
    if number.len() > MAX_DIGITS || (number.len() > 1 && number[0] == b'0') {
        return None;
    }
    decimal::fold_u64(number)?
        .checked_mul(ms_per_unit)
        .filter(|&ms| ms <= MAX_DURATION_MS)
}

/// A user-supplied argument made safe to echo in an error line: escaped, and cut
/// short so a huge argument cannot make a huge reply.
pub fn printable(bytes: &[u8]) -> String {
    const SHOWN: usize = 32;
    let mut s: String = bytes[..bytes.len().min(SHOWN)].escape_ascii().to_string();
    if bytes.len() > SHOWN {
        s.push_str("...");
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::algorithms::MAX_COUNT;

    #[test]
    fn counts_accept_only_plain_integers_in_range() {
        for (input, want) in [
            ("1", Some(1)),
            ("5", Some(5)),
            ("007", None),
            ("00", None),
            ("9007199254740991", Some(MAX_COUNT)),
            ("0", None),
            ("9007199254740992", None),
            ("18446744073709551616", None),
            ("99999999999999999999999", None),
            ("-1", None),
            ("+1", None),
            ("1.0", None),
            ("1e3", None),
            (" 1", None),
            ("1 ", None),
            ("", None),
            ("abc", None),
            ("0x10", None),
        ] {
            assert_eq!(
                count("limit", input.as_bytes()).ok().map(Count::get),
                want,
                "{input:?}"
            );
        }
        assert_eq!(
            count("capacity", b"0"),
            Err(Error::BadCount {
                name: "capacity",
                min: 1
            })
        );
        assert_eq!(
            count("limit", b"\xff\x00"),
            Err(Error::BadCount {
                name: "limit",
                min: 1
            })
        );
    }

    #[test]
    fn durations_take_units_in_any_case_and_bare_seconds() {
        for (input, want) in [
            ("1500ms", Some(1500)),
            ("60", Some(60_000)),
            ("60s", Some(60_000)),
            ("60S", Some(60_000)),
            ("1m", Some(60_000)),
            ("1M", Some(60_000)),
            ("24h", Some(86_400_000)),
            ("2H", Some(7_200_000)),
            ("1d", Some(86_400_000)),
            ("060s", None),
            ("1MS", Some(1)),
            ("1Ms", Some(1)),
            ("1mS", Some(1)),
            ("7D", Some(604_800_000)),
            ("1sm", None),
            ("1hs", None),
            ("1ss", None),
            ("1s\0", None),
            ("3650d", Some(315_360_000_000)),
            ("315360000s", Some(315_360_000_000)),
            ("315360000000ms", Some(315_360_000_000)),
            ("315360000001ms", None),
            ("3651d", None),
            ("0", None),
            ("0ms", None),
            ("ms", None),
            ("", None),
            ("-1", None),
            ("1.5s", None),
            ("1 s", None),
            ("1sec", None),
            ("1w", None),
            ("1y", None),
            ("1mss", None),
            ("99999999999999999999d", None),
            ("18446744073709551615d", None),
        ] {
            assert_eq!(
                duration("window", input.as_bytes()).ok().map(Interval::ms),
                want,
                "{input:?}"
            );
        }
        assert_eq!(
            duration("period", b"x"),
            Err(Error::BadDuration {
                name: "period",
                min: "1ms"
            })
        );
    }
}
