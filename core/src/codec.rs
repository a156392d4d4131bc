//! How numbers look inside the keys: plain decimals that `GET`, `HGETALL` and
//! `ZRANGE` show as users expect (read back by [`crate::decimal`]). Formatting goes
//! into stack buffers so the hot path allocates nothing.

use crate::algorithms::bucket::MICROS;

/// Room for any level this module stores: 2^53 · 10^6 has 22 digits, plus a dot.
pub type MicrosBuf = [u8; 48];

/// Formats millionths of a token as a plain decimal without trailing zeros.
pub fn format_micros(micros: u128, buf: &mut MicrosBuf) -> &[u8] {
    let mut int = itoa::Buffer::new();
    let whole = int.format(micros / MICROS).as_bytes();
    let mut len = whole.len().min(buf.len() - 8);
    buf[..len].copy_from_slice(&whole[..len]);
    let mut frac = (micros % MICROS) as u32;
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

    fn fmt(micros: u128) -> String {
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
        let max = u128::from(crate::algorithms::MAX_COUNT) * MICROS + 999_999;
        assert_eq!(fmt(max), "9007199254740991.999999");
    }

    #[test]
    fn levels_round_trip() {
        for m in [0, 1, 10, 999_999, 1_000_000, 2_500_000, 123_456_789_012] {
            assert_eq!(crate::decimal::micros(fmt(m).as_bytes()), Some(m));
        }
    }
}
