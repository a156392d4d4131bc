//! Durations: a window, period, ttl, block or DELAY — the client's one duration parser.

use std::fmt;
use std::time::Duration;

/// A duration argument (window, period, ttl, block, DELAY).
///
/// Made from a [`Duration`], from a bare integer (**seconds**, as on the server), or
/// from text as RL reads it: an integer with an optional unit `ms`, `s`, `m`, `h` or
/// `d`, case-insensitive, a bare integer meaning seconds (`"1500ms"`, `"60"`, `"1m"`,
/// `"24h"`). It must be a whole number of milliseconds: `Duration::from_nanos(1)`,
/// `"1.5ms"` or `-1` are not rounded but refused with
/// [`Error::InvalidArgument`](crate::Error::InvalidArgument) when the call is made,
/// before anything is sent (as is a duration outside the argument's range). Sent as
/// `<n>ms`.
///
/// ```
/// use rl_client::Period;
/// use std::time::Duration;
///
/// assert_eq!(Period::from("1m").as_millis(), Some(60_000));
/// assert_eq!(Period::from(90).as_millis(), Some(90_000)); // seconds
/// assert_eq!(Period::from(Duration::from_millis(1500)).as_millis(), Some(1500));
/// assert_eq!(Period::from("soon").as_millis(), None);
/// assert_eq!(Period::from(Duration::from_nanos(1)).as_millis(), None);
/// ```
#[derive(Clone, PartialEq, Eq, Hash)]
pub struct Period(Repr);

#[derive(Clone, PartialEq, Eq, Hash)]
enum Repr {
    Ms(u64),
    /// What was given and why it is not a duration (refused when the call is made).
    Invalid(Box<str>),
}

impl Period {
    /// `ms` milliseconds.
    pub const fn ms(ms: u64) -> Self {
        Period(Repr::Ms(ms))
    }

    /// `secs` seconds (refused when sent if it overflows).
    pub fn secs(secs: u64) -> Self {
        match secs.checked_mul(1000) {
            Some(ms) => Period(Repr::Ms(ms)),
            None => invalid(format!("{secs} s is too long")),
        }
    }

    /// The duration in milliseconds, or `None` when it is not a whole number of them.
    pub fn as_millis(&self) -> Option<u64> {
        match self.0 {
            Repr::Ms(ms) => Some(ms),
            Repr::Invalid(_) => None,
        }
    }

    /// The duration, or `None` when it is not a whole number of milliseconds.
    pub fn as_duration(&self) -> Option<Duration> {
        self.as_millis().map(Duration::from_millis)
    }

    /// The milliseconds, or why this is not a duration.
    pub(crate) fn millis(&self) -> Result<u64, &str> {
        match &self.0 {
            Repr::Ms(ms) => Ok(*ms),
            Repr::Invalid(why) => Err(why),
        }
    }

    /// Appends `<n>ms` (an invalid period is refused before any call is built).
    pub(crate) fn write_arg(&self, cmd: &mut redis::Cmd) {
        if let Repr::Ms(ms) = self.0 {
            let mut buf = [0u8; 22];
            let len = ms_text(ms, &mut buf);
            cmd.arg(&buf[..len]);
        }
    }
}

fn invalid(why: String) -> Period {
    Period(Repr::Invalid(why.into()))
}

/// The `w` of `RateLimit-Policy`, for the generated commands.
pub(crate) mod window {
    use super::Period;
    use std::time::Duration;

    /// The longest refill time reported, in ms (about 292 years); the same in every RL client.
    pub(crate) const MAX_REFILL_MS: u64 = 9_223_372_036_854;

    /// A window argument (a fixed or sliding window, a lease's ttl).
    pub(crate) fn of(p: &Period) -> Option<Duration> {
        p.as_duration()
    }

    /// A bucket's window: the time a bucket of `capacity`, refilled by `tokens` per
    /// `period`, takes to refill from empty, `ceil(capacity × period / tokens)` ms (at
    /// most [`MAX_REFILL_MS`]), so that `q=capacity` per it never advertises more than
    /// the sustained rate.
    pub(crate) fn refill(capacity: u64, tokens: u64, period: &Period) -> Option<Duration> {
        refill_ms(capacity, tokens, period.as_millis()?).map(Duration::from_millis)
    }

    pub(crate) fn refill_ms(capacity: u64, tokens: u64, period_ms: u64) -> Option<u64> {
        if tokens == 0 {
            return None; // refused by the server: no window
        }
        // u64 arithmetic when the product fits (a u128 division costs more per call).
        let w = match capacity.checked_mul(period_ms) {
            Some(p) => p.div_ceil(tokens),
            None => {
                let w = (u128::from(capacity) * u128::from(period_ms)).div_ceil(u128::from(tokens));
                u64::try_from(w).unwrap_or(u64::MAX)
            }
        };
        Some(w.min(MAX_REFILL_MS))
    }
}

/// Writes `<n>ms` into `buf` (22 bytes hold u64::MAX and the unit); returns its length.
fn ms_text(mut n: u64, buf: &mut [u8; 22]) -> usize {
    let mut digits = [0u8; 20];
    let mut len = 0;
    loop {
        digits[len] = b'0' + (n % 10) as u8;
        len += 1;
        n /= 10;
        if n == 0 {
            break;
        }
    }
    for (i, d) in digits[..len].iter().rev().enumerate() {
        buf[i] = *d;
    }
    buf[len] = b'm';
    buf[len + 1] = b's';
    len + 2
}

/// Parses RL's duration syntax into milliseconds, or says why it is not one.
fn parse_millis(text: &str) -> Result<u64, String> {
    let bytes = text.as_bytes();
    let digits = bytes.iter().take_while(|b| b.is_ascii_digit()).count();
    let not = || {
        format!("{text:?} is not a duration (a whole number with an optional unit ms, s, m, h or d; a bare number is seconds)")
    };
    if digits == 0 || (digits > 1 && bytes[0] == b'0') {
        return Err(not());
    }
    let value: u64 = text[..digits].parse().map_err(|_| not())?;
    let factor: u64 = match text[digits..].to_ascii_lowercase().as_str() {
        "ms" => 1,
        "" | "s" => 1000,
        "m" => 60_000,
        "h" => 3_600_000,
        "d" => 86_400_000,
        _ => return Err(not()),
    };
    value
        .checked_mul(factor)
        .ok_or_else(|| format!("{text:?} is too long"))
}

impl From<Duration> for Period {
    fn from(d: Duration) -> Self {
        if !d.subsec_nanos().is_multiple_of(1_000_000) {
            return invalid(format!("{d:?} is not a whole number of milliseconds"));
        }
        match u64::try_from(d.as_millis()) {
            Ok(ms) => Period(Repr::Ms(ms)),
            Err(_) => invalid(format!("{d:?} is too long")),
        }
    }
}

impl From<&str> for Period {
    fn from(text: &str) -> Self {
        match parse_millis(text) {
            Ok(ms) => Period(Repr::Ms(ms)),
            Err(why) => invalid(why),
        }
    }
}

impl From<String> for Period {
    fn from(text: String) -> Self {
        Period::from(text.as_str())
    }
}

impl From<&String> for Period {
    fn from(text: &String) -> Self {
        Period::from(text.as_str())
    }
}

impl From<&Period> for Period {
    fn from(p: &Period) -> Self {
        p.clone()
    }
}

/// Bare integers are seconds, as on the server (`60` = one minute).
macro_rules! seconds {
    ($($t:ty),*) => {
        $(impl From<$t> for Period {
            fn from(secs: $t) -> Self {
                match u64::try_from(secs) {
                    Ok(secs) => Period::secs(secs),
                    Err(_) => invalid(format!("{secs} s is not a duration (negative)")),
                }
            }
        })*
    };
}
seconds!(i32, i64, u32, u64);

impl fmt::Debug for Period {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Display::fmt(self, f)
    }
}

impl fmt::Display for Period {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.0 {
            Repr::Ms(ms) => write!(f, "{ms}ms"),
            Repr::Invalid(why) => write!(f, "<{why}>"),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::window::{refill_ms, MAX_REFILL_MS};
    use super::*;

    fn sent(p: &Period) -> Vec<u8> {
        let mut cmd = redis::cmd("X");
        p.write_arg(&mut cmd);
        let arg = cmd.args_iter().nth(1).map(|a| match a {
            redis::Arg::Simple(b) => b.to_vec(),
            _ => Vec::new(),
        });
        arg.unwrap_or_default()
    }

    #[test]
    fn a_buckets_window_is_its_time_to_refill_from_empty() {
        assert_eq!(refill_ms(5, 1, 1000), Some(5000));
        assert_eq!(refill_ms(10, 3, 1000), Some(3334));
        assert_eq!(refill_ms(5, 10, 1000), Some(500));
        assert_eq!(
            refill_ms((1 << 53) - 1, 1, 315_360_000_000),
            Some(MAX_REFILL_MS)
        );
        assert_eq!(refill_ms(u64::MAX, 1, u64::MAX), Some(MAX_REFILL_MS));
        assert_eq!(refill_ms(1 << 52, 10_000, 3), Some(1_351_079_888_212));
        assert_eq!(refill_ms(5, 0, 1000), None);
    }

    #[test]
    fn units() {
        for (text, ms) in [
            ("1500ms", 1500),
            ("1500MS", 1500),
            ("60", 60_000),
            ("60s", 60_000),
            ("1m", 60_000),
            ("24h", 86_400_000),
            ("3650d", 315_360_000_000),
            ("0", 0),
            ("0ms", 0),
        ] {
            assert_eq!(parse_millis(text), Ok(ms), "{text}");
        }
        for text in [
            "",
            "ms",
            "1w",
            "-1s",
            "+1s",
            "01s",
            " 1s",
            "1s ",
            "1.5s",
            "1.5ms",
            "99999999999999999999",
            "18446744073709551615d",
        ] {
            assert!(parse_millis(text).is_err(), "{text:?}");
            assert_eq!(Period::from(text).as_millis(), None, "{text:?}");
        }
    }

    #[test]
    fn bare_integers_are_seconds() {
        assert_eq!(Period::from(60).as_millis(), Some(60_000));
        assert_eq!(Period::from(2u64).as_millis(), Some(2000));
        assert_eq!(Period::from(-1).as_millis(), None);
        assert_eq!(Period::from(u64::MAX).as_millis(), None);
    }

    #[test]
    fn sent_as_milliseconds() {
        assert_eq!(sent(&Period::from("1m")), b"60000ms");
        assert_eq!(sent(&Period::from(Duration::from_secs(2))), b"2000ms");
        assert_eq!(sent(&Period::ms(0)), b"0ms");
        assert_eq!(sent(&Period::ms(u64::MAX)), b"18446744073709551615ms");
        assert_eq!(sent(&Period::secs(3)), b"3000ms");
    }

    #[test]
    fn fractions_of_a_millisecond_are_refused_not_rounded() {
        assert_eq!(Period::from(Duration::from_nanos(1)).as_millis(), None);
        assert_eq!(Period::from(Duration::from_micros(1500)).as_millis(), None);
        let why = Period::from(Duration::from_nanos(1))
            .millis()
            .unwrap_err()
            .to_string();
        assert!(why.contains("whole number of milliseconds"), "{why}");
        assert_eq!(Period::from(Duration::from_millis(7)).as_millis(), Some(7));
        assert_eq!(Period::from(Duration::ZERO).as_millis(), Some(0));
        assert_eq!(Period::from(Duration::MAX).as_millis(), None);
    }
}
