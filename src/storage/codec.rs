//! How numbers look inside the keys: plain decimals that `GET`, `HGETALL` and
//! `ZRANGE` show as users expect (read back by [`crate::decimal`]). Formatting goes
//! into stack buffers so the hot path allocates nothing.

use crate::algorithms::bucket::MICROS;

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
}
