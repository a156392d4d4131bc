//! Argument parsing shared by every RL command: counts, durations and options.
//!
//! Arguments are raw bytes (keys and values are binary-safe); anything that is not
//! exactly the accepted form is an error naming the argument.

use crate::algorithms::{Cost, Count, Interval};
use crate::error::{Error, Result};

/// Parses an unsigned decimal integer the way Redis reads integer arguments:
/// ASCII digits only, no sign, no spaces, no leading zeros.
fn parse_u64(bytes: &[u8]) -> Option<u64> {
    if bytes.is_empty() || (bytes.len() > 1 && bytes[0] == b'0') {
        return None;
    }
    bytes.iter().try_fold(0u64, |acc, &b| {
        let digit = char::from(b).to_digit(10)?;
        acc.checked_mul(10)?.checked_add(u64::from(digit))
    })
}

/// A limit, capacity or refill amount: 1 ..= 2^53 - 1.
pub fn count(name: &'static str, bytes: &[u8]) -> Result<Count> {
    parse_u64(bytes)
        .and_then(Count::new)
        .ok_or(Error::BadCount { name, min: 1 })
}

/// An integer argument within `min ..= max` (CL.THROTTLE's max_burst).
pub fn integer(name: &'static str, bytes: &[u8], min: u64, max: u64) -> Result<u64> {
    parse_u64(bytes)
        .filter(|v| (min..=max).contains(v))
        .ok_or(Error::BadInteger { name, min, max })
}

/// A cost given as a positional argument (CL.THROTTLE's quantity): 0 ..= 2^53 - 1.
pub fn cost(name: &'static str, bytes: &[u8]) -> Result<Cost> {
    parse_u64(bytes)
        .and_then(Cost::new)
        .ok_or(Error::BadCount { name, min: 0 })
}

/// A window or period: an integer with an optional unit (ms, s, m, h, d; any case);
/// a bare integer means seconds, as in EXPIRE. 1 ms ..= 10 years.
pub fn duration(name: &'static str, bytes: &[u8]) -> Result<Interval> {
    let digits = bytes.iter().take_while(|b| b.is_ascii_digit()).count();
    let (number, unit) = bytes.split_at(digits);
    // Case-insensitive without allocating: units are at most two letters.
    let mut lower = [0u8; 2];
    if unit.len() > lower.len() {
        return Err(Error::BadDuration(name));
    }
    for (l, u) in lower.iter_mut().zip(unit) {
        *l = u.to_ascii_lowercase();
    }
    let ms_per_unit: u64 = match &lower[..unit.len()] {
        b"" | b"s" => 1000,
        b"ms" => 1,
        b"m" => 60_000,
        b"h" => 3_600_000,
        b"d" => 86_400_000,
        _ => return Err(Error::BadDuration(name)),
    };
    parse_u64(number)
        .and_then(|n| n.checked_mul(ms_per_unit))
        .and_then(Interval::from_ms)
        .ok_or(Error::BadDuration(name))
}

/// The options after the positional arguments. Today only `COST n`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Options {
    pub cost: Cost,
}

pub fn options<'a>(rest: impl IntoIterator<Item = &'a [u8]>) -> Result<Options> {
    let mut cost = None;
    let mut it = rest.into_iter();
    while let Some(name) = it.next() {
        if !name.eq_ignore_ascii_case(b"COST") {
            return Err(Error::UnknownOption(printable(name)));
        }
        let value = it.next().ok_or(Error::MissingValue)?;
        if cost.is_some() {
            return Err(Error::DuplicateOption);
        }
        cost = Some(self::cost("COST", value)?);
    }
    Ok(Options {
        cost: cost.unwrap_or(Cost::ONE),
    })
}

/// A user-supplied argument made safe to echo in an error line: escaped, and cut
/// short so a huge argument cannot make a huge reply.
fn printable(bytes: &[u8]) -> String {
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
        assert_eq!(duration("period", b"x"), Err(Error::BadDuration("period")));
    }

    #[test]
    fn cost_is_optional_case_insensitive_and_given_once() {
        let cost = |args: &[&str]| {
            let bytes: Vec<&[u8]> = args.iter().map(|a| a.as_bytes()).collect();
            options(bytes).map(|o| o.cost.get())
        };
        assert_eq!(cost(&[]), Ok(1));
        assert_eq!(cost(&["COST", "3"]), Ok(3));
        assert_eq!(cost(&["cost", "0"]), Ok(0));
        assert_eq!(cost(&["CoSt", "9007199254740991"]), Ok(MAX_COUNT));
        let bad_cost = Err(Error::BadCount {
            name: "COST",
            min: 0,
        });
        assert_eq!(cost(&["COST", "9007199254740992"]), bad_cost);
        assert_eq!(cost(&["COST", "-1"]), bad_cost);
        assert_eq!(cost(&["COST", "1.5"]), bad_cost);
        assert_eq!(cost(&["COST"]), Err(Error::MissingValue));
        assert_eq!(
            cost(&["COST", "1", "COST", "2"]),
            Err(Error::DuplicateOption)
        );
        assert_eq!(cost(&["COST", "1", "cost"]), Err(Error::MissingValue));
        assert_eq!(
            cost(&["WEIGHT", "2"]),
            Err(Error::UnknownOption("WEIGHT".into()))
        );
        assert_eq!(
            cost(&["COST", "1", "EX"]),
            Err(Error::UnknownOption("EX".into()))
        );
    }

    #[test]
    fn echoed_options_are_escaped_and_truncated() {
        let long = [b'x'; 100];
        let e = options([&long[..]]).unwrap_err().to_string();
        assert!(e.len() < 100, "{e}");
        assert!(e.contains("xxx..."));
        let e = options([&b"a\r\nb\x00\xff"[..]]).unwrap_err().to_string();
        assert!(
            !e.contains('\r') && !e.contains('\n') && !e.contains('\0'),
            "{e:?}"
        );
    }
}
