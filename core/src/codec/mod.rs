//! How limiter states look inside keys: plain decimals that `GET`, `HGETALL` and
//! `ZRANGE` show as users expect (read back by [`crate::decimal`]). The module's
//! storage and the in-memory executor both read and write states through here, so
//! a state's bytes have one definition. Formatting goes into stack buffers so the
//! hot path allocates nothing.

use crate::algorithms::bucket::{self, TokenBucket, MICROS};
use crate::algorithms::fixed::{Counter, FixedWindow};
use crate::algorithms::gcra::{self, Gcra, Tat};
use crate::algorithms::penalty::{self, EscalatingBlocks};
use crate::algorithms::quota::CalendarQuota;
use crate::algorithms::sliding_counter::{self, Counts, SlidingWindowCounter};
use crate::algorithms::{Millis, MAX_COUNT};
use crate::decimal::{self, eight_digits};

pub mod share;

/// Room for any state string: four u64 decimals and their spaces.
pub type StateBuf = [u8; 96];

/// A limiter whose state is one string value on a key with an expiry
/// (`SET key value PXAT t`): how the value reads and writes.
pub trait StringState {
    /// What the "does not hold" error says the key should hold.
    const WHAT: &'static str;
    /// Whether `decode` reads the key's expiry (RL.FIXED's count is of the window
    /// that ends then); the others' values carry their whole state, and a reader
    /// skips asking the server for it.
    const READS_EXPIRY: bool = false;
    /// A state read from a key.
    type Value;
    /// A state a call writes, with its absolute expiry.
    type Stored;
    /// Reads a value and the key's expiry (None: the key has none); None when the
    /// value is not a state this limiter writes.
    fn decode(value: &[u8], expires_at: Option<Millis>) -> Option<Self::Value>;
    /// Hands `write` the bytes to store and the absolute expiry to set. A callback
    /// rather than a returned slice: each format stays in its own stack buffer, with
    /// no copy on the hot path.
    fn encode<R>(stored: &Self::Stored, write: impl FnOnce(&[u8], Millis) -> R) -> R;
}

/// Writes a canonical decimal into `buf` at `at`, returning the end.
fn put(buf: &mut StateBuf, at: usize, v: impl itoa::Integer) -> usize {
    let mut digits = itoa::Buffer::new();
    let d = digits.format(v).as_bytes();
    let end = (at + d.len()).min(buf.len());
    buf[at..end].copy_from_slice(&d[..end - at]);
    end
}

/// Writes decimals one space apart.
fn put_fields(buf: &mut StateBuf, fields: &[u64]) -> usize {
    let mut len = 0;
    for (i, &v) in fields.iter().enumerate() {
        if i > 0 {
            buf[len] = b' ';
            len += 1;
        }
        len = put(buf, len, v);
    }
    len
}

/// Reads exactly `N` canonical decimals one space apart, as [`decimal::canonical`]
/// reads each, in one pass over the bytes (RL.SHARE reads a record of twelve on
/// every call): a field of up to 19 digits is summed as it goes (it cannot
/// overflow a u64), a longer one is read again, checked.
pub fn fields<const N: usize>(bytes: &[u8]) -> Option<[u128; N]> {
    let mut out = [0u128; N];
    let (mut k, mut start, mut value) = (0, 0, 0u64);
    let mut i = 0;
    while let Some(&b) = bytes.get(i) {
        // Eight digits at once where there are (a TAT's nineteen digits are most
        // of a record); past 19 digits the sum wraps, and the field is read again.
        if let Some(eight) = bytes.get(i..i + 8).and_then(eight_digits) {
            value = value.wrapping_mul(100_000_000).wrapping_add(eight);
            i += 8;
            continue;
        }
        let digit = b.wrapping_sub(b'0');
        if digit <= 9 {
            value = value.wrapping_mul(10).wrapping_add(u64::from(digit));
        } else if b == b' ' {
            *out.get_mut(k)? = field_value(&bytes[start..i], value)?;
            (k, start, value) = (k + 1, i + 1, 0);
        } else {
            return None;
        }
        i += 1;
    }
    *out.get_mut(k)? = field_value(&bytes[start..], value)?;
    (k + 1 == N).then_some(out)
}

/// One field of [`fields`]: its digits and, when there are at most 19, their value.
#[inline]
fn field_value(digits: &[u8], value: u64) -> Option<u128> {
    match digits {
        [] | [b'0', _, ..] => None,
        _ if digits.len() <= 19 => Some(u128::from(value)),
        _ => decimal::canonical(digits),
    }
}

/// RL.FIXED: the units used, on a key expiring at the window's end. The expiry is
/// part of the state (it says which window the count is of): a count without one
/// is not a state RL wrote.
impl StringState for FixedWindow {
    const WHAT: &'static str = "an RL.FIXED counter (a non-negative integer with an expiry)";
    const READS_EXPIRY: bool = true;
    type Value = Counter;
    type Stored = Counter;

    fn decode(value: &[u8], expires_at: Option<Millis>) -> Option<Counter> {
        Some(Counter {
            used: decimal::canonical_u64(value)?,
            expires_at: expires_at?,
        })
    }

    fn encode<R>(c: &Counter, write: impl FnOnce(&[u8], Millis) -> R) -> R {
        write(itoa::Buffer::new().format(c.used).as_bytes(), c.expires_at)
    }
}

/// RL.QUOTA: RL.FIXED's counter, on a key expiring at the period's end.
impl StringState for CalendarQuota {
    const WHAT: &'static str = "an RL.QUOTA counter (a non-negative integer with an expiry)";
    const READS_EXPIRY: bool = true;
    type Value = Counter;
    type Stored = Counter;

    fn decode(value: &[u8], expires_at: Option<Millis>) -> Option<Counter> {
        FixedWindow::decode(value, expires_at)
    }

    fn encode<R>(c: &Counter, write: impl FnOnce(&[u8], Millis) -> R) -> R {
        FixedWindow::encode(c, write)
    }
}

/// RL.GCRA and CL.THROTTLE: the TAT in ns since the epoch, redis-cell's format. The
/// value alone is the state: a TAT on a key without an expiry (`RESTORE key 0 …` of
/// a redis-cell key, `PERSIST`) is read like any other.
impl StringState for Gcra {
    const WHAT: &'static str = "a GCRA state (a non-negative integer TAT in ns)";
    type Value = Tat;
    type Stored = gcra::Stored;

    fn decode(value: &[u8], _expires_at: Option<Millis>) -> Option<Tat> {
        decimal::canonical(value).map(Tat)
    }

    fn encode<R>(s: &gcra::Stored, write: impl FnOnce(&[u8], Millis) -> R) -> R {
        write(itoa::Buffer::new().format(s.tat.0).as_bytes(), s.expires_at)
    }
}

/// RL.SLIDINGCOUNTER: `"<start> <current> <previous>"`. The value alone is the state
/// (its start says which window it counts).
impl StringState for SlidingWindowCounter {
    const WHAT: &'static str = "an RL.SLIDINGCOUNTER (a string \"<start> <current> <previous>\")";
    type Value = Counts;
    type Stored = sliding_counter::Stored;

    fn decode(value: &[u8], _expires_at: Option<Millis>) -> Option<Counts> {
        let [start, current, previous] = fields::<3>(value)?;
        Some(Counts {
            // A start RL could have written: a server time in ms.
            start: i64::try_from(start)
                .ok()
                .filter(|&s| s as u64 <= MAX_COUNT)?,
            current: u64::try_from(current).ok()?,
            previous: u64::try_from(previous).ok()?,
        })
    }

    fn encode<R>(s: &sliding_counter::Stored, write: impl FnOnce(&[u8], Millis) -> R) -> R {
        let c = s.counts;
        let mut buf: StateBuf = [0; 96];
        let len = put_fields(&mut buf, &[c.start.max(0) as u64, c.current, c.previous]);
        write(&buf[..len], s.expires_at)
    }
}

/// RL.PENALTY: `"<count> <window_end> <level> <blocked_until>"`. The value alone is
/// the state (its times are absolute).
impl StringState for EscalatingBlocks {
    const WHAT: &'static str =
        "an RL.PENALTY state (a string \"<count> <window_end> <level> <blocked_until>\")";
    type Value = penalty::State;
    type Stored = penalty::Stored;

    fn decode(value: &[u8], _expires_at: Option<Millis>) -> Option<penalty::State> {
        penalty::State::parse(value)
    }

    fn encode<R>(s: &penalty::Stored, write: impl FnOnce(&[u8], Millis) -> R) -> R {
        let mut buf: StateBuf = [0; 96];
        write(s.state.format(&mut buf), s.expires_at)
    }
}

/// What the "does not hold" error names for a sorted set that is no RL.SLIDING log.
pub const SLIDING_WHAT: &str = "an RL.SLIDING log (a sorted set of ms timestamps)";
/// The same for a sorted set that is no RL.ACQUIRE lease set.
pub const LEASES_WHAT: &str = "an RL.ACQUIRE lease set (a sorted set of lease ends in ms)";

/// A sorted-set score as a time RL could have written: a whole number of ms,
/// 0 ..= 2^53 − 1. Every reader of RL.SLIDING's log and RL.ACQUIRE's leases checks
/// the lowest and highest score with it, and refuses the key otherwise.
pub fn log_time(score: f64) -> Option<Millis> {
    (score.is_finite() && score.fract() == 0.0 && (0.0..=MAX_COUNT as f64).contains(&score))
        .then_some(score as Millis)
}

/// RL.BUCKET: a hash with the fields `tokens` (a decimal level) and `ts` (the ms
/// time of that level), expiring when the bucket would be full again.
impl TokenBucket {
    pub const WHAT: &'static str = "an RL.BUCKET (a hash with numeric fields tokens and ts)";

    /// Reads the two fields (None when missing); None when they are not a bucket.
    pub fn decode(tokens: Option<&[u8]>, ts: Option<&[u8]>) -> Option<bucket::State> {
        // A bucket in debt holds a negative level, down to −(2^53 − 1) tokens.
        let level_micros =
            decimal::signed_micros(tokens?).filter(|&l| l >= bucket::LOWEST_MICROS)?;
        let ts = decimal::digits(ts?).filter(|&t| t <= MAX_COUNT)?;
        Some(bucket::State {
            level_micros,
            ts: ts as i64,
        })
    }
}

/// Room for any level this module stores: 2^53 · 10^6 has 22 digits, plus a sign
/// and a dot.
pub type MicrosBuf = [u8; 48];

/// Formats millionths of a token as a plain decimal without trailing zeros, with a
/// leading `-` below zero (a bucket in debt).
pub fn format_micros(micros: i128, buf: &mut MicrosBuf) -> &[u8] {
    let mut len = 0;
    if micros < 0 {
        buf[0] = b'-';
        len = 1;
    }
    let magnitude = micros.unsigned_abs();
    let mut int = itoa::Buffer::new();
    let whole = int.format(magnitude / MICROS).as_bytes();
    let shown = whole.len().min(buf.len() - 8 - len);
    buf[len..len + shown].copy_from_slice(&whole[..shown]);
    len += shown;
    let mut frac = (magnitude % MICROS) as u32;
    if frac != 0 {
        buf[len] = b'.';
        len += 1;
        let mut digits = 6;
        while frac.is_multiple_of(10) {
            frac /= 10;
            digits -= 1;
        }
        for i in (0..digits).rev() {
            buf[len + i] = b'0' + (frac % 10) as u8;
            frac /= 10;
        }
        len += digits;
    }
    &buf[..len]
}

#[cfg(test)]
mod tests {
    use super::*;

    fn fmt(micros: i128) -> String {
        let mut buf = [0; 48];
        String::from_utf8(format_micros(micros, &mut buf).to_vec()).unwrap()
    }

    #[test]
    fn eight_digits_read_as_a_decimal() {
        assert_eq!(eight_digits(b"12345678"), Some(12_345_678));
        assert_eq!(eight_digits(b"00000000"), Some(0));
        assert_eq!(eight_digits(b"99999999"), Some(99_999_999));
        for bad in [
            &b"1234567 "[..],
            b"/2345678",
            b"1234567:",
            b"123\x005678",
            b"1234567",
        ] {
            assert_eq!(
                eight_digits(bad),
                None,
                "{:?}",
                bad.escape_ascii().to_string()
            );
        }
    }

    proptest::proptest! {
        #[test]
        fn eight_digits_are_their_decimal_value(v in 0u64..100_000_000) {
            let text = format!("{v:08}");
            proptest::prop_assert_eq!(eight_digits(text.as_bytes()), Some(v));
        }

        /// Eight bytes not all digits are refused, whatever they are.
        #[test]
        fn eight_bytes_with_a_non_digit_are_refused(b in proptest::array::uniform8(proptest::num::u8::ANY)) {
            let all = b.iter().all(u8::is_ascii_digit);
            proptest::prop_assert_eq!(eight_digits(&b).is_some(), all);
        }

        /// The one-pass reader answers as splitting at each space and reading each
        /// part with decimal::canonical.
        #[test]
        fn fields_read_as_canonical_decimals_split_at_spaces(
            bytes in proptest::collection::vec(
                proptest::sample::select(b"0123456789 x".to_vec()), 0..70),
        ) {
            let parts: Vec<&[u8]> = bytes.split(|&b| b == b' ').collect();
            let want = (parts.len() == 3)
                .then(|| parts.iter().map(|p| decimal::canonical(p)).collect::<Option<Vec<_>>>())
                .flatten();
            proptest::prop_assert_eq!(fields::<3>(&bytes).map(|f| f.to_vec()), want);
        }
    }

    #[test]
    fn fields_are_exactly_n_canonical_decimals_one_space_apart() {
        assert_eq!(
            fields::<3>(b"1 0 340282366920938463463374607431768211455"),
            Some([1, 0, u128::MAX])
        );
        assert_eq!(fields::<1>(b"7"), Some([7]));
        for bad in [
            &b""[..],
            b"1 2",
            b"1 2 3 4",
            b"1 2 3 ",
            b" 1 2 3",
            b"1  2 3",
            b"1 02 3",
            b"1 2 x",
            b"1 2 -3",
            b"1 2 340282366920938463463374607431768211456",
        ] {
            assert_eq!(
                fields::<3>(bad),
                None,
                "{:?}",
                bad.escape_ascii().to_string()
            );
        }
    }

    #[test]
    fn levels_format_as_plain_decimals() {
        assert_eq!(fmt(0), "0");
        assert_eq!(fmt(4_000_000), "4");
        assert_eq!(fmt(2_500_000), "2.5");
        assert_eq!(fmt(333_333), "0.333333");
        assert_eq!(fmt(1), "0.000001");
        assert_eq!(fmt(10_000_010), "10.00001");
        let max = i128::from(crate::algorithms::MAX_COUNT) * MICROS as i128 + 999_999;
        assert_eq!(fmt(max), "9007199254740991.999999");
    }

    #[test]
    fn debts_format_with_a_leading_minus() {
        assert_eq!(fmt(-3_000_000), "-3");
        assert_eq!(fmt(-2_500_000), "-2.5");
        assert_eq!(fmt(-1), "-0.000001");
        assert_eq!(
            fmt(crate::algorithms::bucket::LOWEST_MICROS),
            "-9007199254740991"
        );
        assert_eq!(fmt(i128::MIN), "-170141183460469231731687303715884.105728");
    }

    #[test]
    fn levels_round_trip() {
        for m in [
            0,
            1,
            10,
            999_999,
            1_000_000,
            2_500_000,
            123_456_789_012,
            -1,
            -999_999,
            -2_500_000,
            -123_456_789_012,
            crate::algorithms::bucket::LOWEST_MICROS,
        ] {
            assert_eq!(crate::decimal::signed_micros(fmt(m).as_bytes()), Some(m));
        }
    }

    #[test]
    fn sliding_counts_round_trip_and_parse_strictly() {
        let c = Counts {
            start: 1_700_000_040_000,
            current: 3,
            previous: 8,
        };
        let store = |counts| sliding_counter::Stored {
            counts,
            expires_at: 7,
        };
        assert_eq!(
            SlidingWindowCounter::encode(&store(c), |b, _| b.to_vec()),
            b"1700000040000 3 8"
        );
        assert_eq!(
            SlidingWindowCounter::decode(b"1700000040000 3 8", None),
            Some(c)
        );
        let max = Counts {
            start: MAX_COUNT as i64,
            current: u64::MAX,
            previous: u64::MAX,
        };
        let bytes = SlidingWindowCounter::encode(&store(max), |b, _| b.to_vec());
        assert_eq!(SlidingWindowCounter::decode(&bytes, None), Some(max));
        for bad in [
            "",
            "1 2",
            "1 2 3 4",
            "1  2 3",
            " 1 2 3",
            "1 2 3 ",
            "01 2 3",
            "1 -2 3",
            "1 2 x",
            "a b c",
            "1,2,3",
            "9007199254740992 0 0",
            "1 18446744073709551616 0",
        ] {
            assert_eq!(
                SlidingWindowCounter::decode(bad.as_bytes(), None),
                None,
                "{bad:?}"
            );
        }
    }

    #[test]
    fn only_whole_ms_in_range_are_times_rl_writes() {
        for (score, want) in [
            (0.0, Some(0)),
            (-0.0, Some(0)),
            (1.0, Some(1)),
            (1_796_308_737_872.0, Some(1_796_308_737_872)),
            (MAX_COUNT as f64, Some(MAX_COUNT as i64)),
            (1.5, None),
            (0.5, None),
            (1_796_308_736_871.5, None),
            (1e-300, None),
            (-1.0, None),
            (-0.5, None),
            ((MAX_COUNT + 1) as f64, None),
            (1e300, None),
            (f64::INFINITY, None),
            (f64::NEG_INFINITY, None),
            (f64::NAN, None),
        ] {
            assert_eq!(log_time(score), want, "{score}");
        }
    }
}
