//! Durations: a window, period, ttl or DELAY.

use std::fmt;
use std::time::Duration;

/// A duration argument (window, period, ttl, block, DELAY).
///
/// Made from a [`Duration`] (whole milliseconds, a fraction rounded up so a window
/// never shrinks) or from text as RL reads it: an integer with an optional unit
/// `ms`, `s`, `m`, `h` or `d`, case-insensitive, a bare integer meaning seconds
/// (`"1500ms"`, `"60"`, `"1m"`, `"24h"`). Both are sent as `<n>ms`. Text that is
/// not such a duration is sent as it is, so the server answers its own error
/// ([`Error::BadArgument`](crate::Error::BadArgument)).
///
/// ```
/// use rl_client::Period;
/// use std::time::Duration;
///
/// assert_eq!(Period::from("1m").as_millis(), Some(60_000));
/// assert_eq!(Period::from("90").as_millis(), Some(90_000));
/// assert_eq!(Period::from(Duration::from_millis(1500)).as_millis(), Some(1500));
/// assert_eq!(Period::from("soon").as_millis(), None);
/// ```
#[derive(Clone, PartialEq, Eq, Hash)]
pub struct Period(Repr);

#[derive(Clone, PartialEq, Eq, Hash)]
enum Repr {
    Ms(u64),
    Text(Box<str>),
}

impl Period {
    /// `ms` milliseconds.
    pub const fn ms(ms: u64) -> Self {
        Period(Repr::Ms(ms))
    }

    /// `secs` seconds (saturating).
    pub const fn secs(secs: u64) -> Self {
        Period(Repr::Ms(secs.saturating_mul(1000)))
    }

    /// The duration in milliseconds, or `None` for text that is not a duration.
    pub fn as_millis(&self) -> Option<u64> {
        match self.0 {
            Repr::Ms(ms) => Some(ms),
            Repr::Text(_) => None,
        }
    }

    /// The duration, or `None` for text that is not a duration.
    pub fn as_duration(&self) -> Option<Duration> {
        self.as_millis().map(Duration::from_millis)
    }

    /// Appends the argument as sent: `<n>ms`, or the text as given.
    pub(crate) fn write_arg(&self, cmd: &mut redis::Cmd) {
        match &self.0 {
            Repr::Ms(ms) => {
                let mut buf = [0u8; 22];
                let len = ms_text(*ms, &mut buf);
                cmd.arg(&buf[..len]);
            }
            Repr::Text(text) => {
                cmd.arg(text.as_bytes());
            }
        }
    }
}

/// The longest refill time reported, in ms (about 292 years); the same in every RL client.
pub(crate) const MAX_REFILL_MS: u64 = 9_223_372_036_854;

/// A bucket's window for `RateLimit-Policy`: the time a bucket of `capacity`, refilled
/// by `tokens` per `period_ms`, takes to refill from empty, `ceil(capacity × period /
/// tokens)` ms (at most [`MAX_REFILL_MS`]), so that `q=capacity` per it never advertises
/// more than the sustained rate. The period itself when a count is 0 (the server refuses
/// such a call).
pub(crate) fn refill_ms(capacity: u64, tokens: u64, period_ms: u64) -> u64 {
    if capacity == 0 || tokens == 0 {
        return period_ms;
    }
    let w = (u128::from(capacity) * u128::from(period_ms)).div_ceil(u128::from(tokens));
    u64::try_from(w).map_or(MAX_REFILL_MS, |w| w.min(MAX_REFILL_MS))
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

/// Parses RL's duration syntax into milliseconds; `None` if it is not one (or does
/// not fit a u64).
pub(crate) fn parse_millis(text: &str) -> Option<u64> {
    let bytes = text.as_bytes();
    let digits = bytes.iter().take_while(|b| b.is_ascii_digit()).count();
    if digits == 0 || (digits > 1 && bytes[0] == b'0') {
        return None;
    }
    let value: u64 = text[..digits].parse().ok()?;
    let unit = text[digits..].to_ascii_lowercase();
    let factor: u64 = match unit.as_str() {
        "ms" => 1,
        "" | "s" => 1000,
        "m" => 60_000,
        "h" => 3_600_000,
        "d" => 86_400_000,
        _ => return None,
    };
    value.checked_mul(factor)
}

impl From<Duration> for Period {
    fn from(d: Duration) -> Self {
        let ms = d.as_millis();
        let ms = if !d.subsec_nanos().is_multiple_of(1_000_000) {
            ms.saturating_add(1)
        } else {
            ms
        };
        Period(Repr::Ms(u64::try_from(ms).unwrap_or(u64::MAX)))
    }
}

impl From<&str> for Period {
    fn from(text: &str) -> Self {
        match parse_millis(text) {
            Some(ms) => Period(Repr::Ms(ms)),
            None => Period(Repr::Text(text.into())),
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

impl fmt::Debug for Period {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Display::fmt(self, f)
    }
}

impl fmt::Display for Period {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.0 {
            Repr::Ms(ms) => write!(f, "{ms}ms"),
            Repr::Text(text) => write!(f, "{text:?}"),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sent(p: &Period) -> Vec<u8> {
        let mut cmd = redis::cmd("X");
        p.write_arg(&mut cmd);
        let arg = cmd.args_iter().nth(1).map(|a| match a {
            redis::Arg::Simple(b) => b.to_vec(),
            redis::Arg::Cursor => Vec::new(),
        });
        arg.unwrap_or_default()
    }

    #[test]
    fn a_buckets_window_is_its_time_to_refill_from_empty() {
        assert_eq!(refill_ms(5, 1, 1000), 5000);
        assert_eq!(refill_ms(10, 3, 1000), 3334);
        assert_eq!(refill_ms(5, 10, 1000), 500);
        assert_eq!(refill_ms(1, 1, 0), 0);
        assert_eq!(refill_ms((1 << 53) - 1, 1, 315_360_000_000), MAX_REFILL_MS);
        assert_eq!(refill_ms(u64::MAX, 1, u64::MAX), MAX_REFILL_MS);
        assert_eq!(refill_ms(1 << 52, 10_000, 3), 1_351_079_888_212);
        // A count of 0 (refused by the server): the period.
        assert_eq!(refill_ms(0, 1, 1000), 1000);
        assert_eq!(refill_ms(5, 0, 1000), 1000);
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
            assert_eq!(parse_millis(text), Some(ms), "{text}");
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
            "99999999999999999999",
        ] {
            assert_eq!(parse_millis(text), None, "{text:?}");
        }
        // Overflow after the unit: not a duration (the server answers its error).
        assert_eq!(parse_millis("18446744073709551615d"), None);
    }

    #[test]
    fn sent_as_milliseconds() {
        assert_eq!(sent(&Period::from("1m")), b"60000ms");
        assert_eq!(sent(&Period::from(Duration::from_secs(2))), b"2000ms");
        assert_eq!(sent(&Period::ms(0)), b"0ms");
        assert_eq!(sent(&Period::ms(u64::MAX)), b"18446744073709551615ms");
        assert_eq!(sent(&Period::secs(3)), b"3000ms");
        // Not a duration: sent as given.
        assert_eq!(sent(&Period::from("11y")), b"11y");
    }

    #[test]
    fn durations_round_up_to_whole_milliseconds() {
        assert_eq!(Period::from(Duration::from_micros(1)).as_millis(), Some(1));
        assert_eq!(
            Period::from(Duration::from_micros(1500)).as_millis(),
            Some(2)
        );
        assert_eq!(Period::from(Duration::from_millis(7)).as_millis(), Some(7));
        assert_eq!(Period::from(Duration::ZERO).as_millis(), Some(0));
        assert_eq!(Period::from(Duration::MAX).as_millis(), Some(u64::MAX));
    }
}
