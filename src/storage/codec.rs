//! How numbers look inside the keys: plain decimals that `GET`, `HGETALL` and
//! `ZRANGE` show as users expect. Formatting goes into stack buffers so the hot path
//! allocates nothing.

use crate::algorithms::bucket::MICROS;

/// Parses a stored non-negative integer (a counter, a timestamp).
pub fn parse_uint(bytes: &[u8]) -> Option<u64> {
    if bytes.is_empty() || bytes.len() > 20 {
        return None;
    }
    bytes.iter().try_fold(0u64, |acc, &b| {
        let digit = char::from(b).to_digit(10)?;
        acc.checked_mul(10)?.checked_add(u64::from(digit))
    })
}

/// Parses a stored token level, a plain decimal such as `4`, `2.5` or `0.333333`,
/// into millionths of a token. Digits past the sixth decimal place are dropped
/// (rounding down, never up). Signs, exponents, `inf` and `nan` are refused.
pub fn parse_micros(bytes: &[u8]) -> Option<u128> {
    let (int, frac) = match bytes.iter().position(|&b| b == b'.') {
        Some(dot) => (&bytes[..dot], &bytes[dot + 1..]),
        None => (bytes, &b""[..]),
    };
    if int.is_empty() || int.len() > 30 || (bytes.contains(&b'.') && frac.is_empty()) {
        return None;
    }
    let whole = int.iter().try_fold(0u128, |acc, &b| {
        Some(acc * 10 + u128::from(char::from(b).to_digit(10)?))
    })?;
    let mut micros = 0u128;
    for (i, &b) in frac.iter().enumerate() {
        let digit = u128::from(char::from(b).to_digit(10)?);
        if i < 6 {
            micros += digit * 10u128.pow(5 - i as u32);
        }
    }
    whole.checked_mul(MICROS)?.checked_add(micros)
}

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
    fn levels_round_trip_and_parse_strictly() {
        for m in [0, 1, 10, 999_999, 1_000_000, 2_500_000, 123_456_789_012] {
            assert_eq!(parse_micros(fmt(m).as_bytes()), Some(m));
        }
        assert_eq!(parse_micros(b"0.3333339"), Some(333_333));
        assert_eq!(parse_micros(b"7.00"), Some(7_000_000));
        for bad in [
            "", ".", "1.", ".5", "-1", "+1", "1e3", "inf", "nan", "1.2.3", " 1", "0x1",
        ] {
            assert_eq!(parse_micros(bad.as_bytes()), None, "{bad:?}");
        }
    }

    #[test]
    fn integers_parse_strictly() {
        assert_eq!(parse_uint(b"0"), Some(0));
        assert_eq!(parse_uint(b"18446744073709551615"), Some(u64::MAX));
        for bad in ["", "-1", "1.0", "18446744073709551616", "abc", " 1"] {
            assert_eq!(parse_uint(bad.as_bytes()), None, "{bad:?}");
        }
    }
}
