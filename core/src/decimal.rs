//! Unsigned decimals as RL reads them, from arguments and from stored state: ASCII
//! digits only (no sign, no spaces, no exponent). One parser, with the variants its
//! callers need:
//!
//! - [`canonical`]: no leading zeros, the form RL writes and Redis reads integer
//!   arguments in (arguments, the records of RL.FIXED, RL.GCRA and
//!   RL.SLIDINGCOUNTER);
//! - [`digits`]: leading zeros read, for stored fields the library backend reads
//!   the same way (a bucket's `ts`, a sliding log's sequence members);
//! - [`micros`]: a plain decimal with a fraction (a bucket's token level), and
//!   [`signed_micros`], the same with an optional leading `-` (a bucket in debt).

/// Millionths: the resolution of [`micros`] (a bucket's token level).
pub const MICROS: u128 = 1_000_000;

/// The value of a run of ASCII digits, None for anything else or an overflow.
fn fold(bytes: &[u8]) -> Option<u128> {
    // The first 19 digits in a u64, unchecked: 10^19 − 1 < 2^64, so they cannot
    // overflow it. Every argument and stored field of a call (at most 2^53 − 1, 16
    // digits) is read there, at a few instructions a digit instead of a checked u128
    // multiply; longer runs go on below, checked, with the same result.
    let (head, tail) = bytes.split_at(bytes.len().min(19));
    let value = fold_u64(head)?;
    tail.iter().try_fold(u128::from(value), |acc, &b| {
        let digit = b.is_ascii_digit().then(|| u128::from(b - b'0'))?;
        acc.checked_mul(10)?.checked_add(digit)
    })
}

/// The value of at most 19 ASCII digits (none: None), which cannot overflow a
/// u64. Eight digits at a time where it can: a TAT in ns (19 digits), a time in
/// ms (13) or a large limit is read on every call.
#[inline]
pub(crate) fn fold_u64(head: &[u8]) -> Option<u64> {
    if head.is_empty() {
        return None;
    }
    let mut value = 0u64;
    let mut rest = head;
    while let Some((chunk, tail)) = rest.split_first_chunk::<8>() {
        value = value * 100_000_000 + eight_digits(chunk)?;
        rest = tail;
    }
    for &b in rest {
        let digit = b.wrapping_sub(b'0');
        if digit > 9 {
            return None;
        }
        value = value * 10 + u64::from(digit);
    }
    Some(value)
}

/// The value of eight ASCII digits, None if any byte is not one: read as one
/// little-endian u64 (the first digit in the low byte) and combined in three
/// multiplications (pairs, then fours, then eight) instead of eight.
#[inline]
pub(crate) fn eight_digits(bytes: &[u8]) -> Option<u64> {
    const ZEROS: u64 = 0x3030_3030_3030_3030;
    const HIGH: u64 = 0xF0F0_F0F0_F0F0_F0F0;
    let w = u64::from_le_bytes(bytes.try_into().ok()?);
    // Each byte 0x30 ..= 0x39: its high nibble 3, and adding 6 keeps it 3.
    if w & HIGH != ZEROS || w.wrapping_add(0x0606_0606_0606_0606) & HIGH != ZEROS {
        return None;
    }
    let d = w - ZEROS;
    // Each 16-bit lane: 10 · first + second.
    let pairs = (d.wrapping_mul(10) + (d >> 8)) & 0x00FF_00FF_00FF_00FF;
    // Each 32-bit lane: 100 · first pair + second.
    let fours = (pairs.wrapping_mul(100) + (pairs >> 16)) & 0x0000_FFFF_0000_FFFF;
    Some((fours & 0xFFFF) * 10_000 + (fours >> 32))
}

/// A canonical decimal: digits without a leading zero (`0` itself is fine).
pub fn canonical(bytes: &[u8]) -> Option<u128> {
    if bytes.len() > 1 && bytes[0] == b'0' {
        return None;
    }
    fold(bytes)
}

/// [`canonical`], within u64.
pub fn canonical_u64(bytes: &[u8]) -> Option<u64> {
    // Up to 19 digits fit a u64 unchecked (see `fold`): every argument and stored
    // count of a call is read here without going through u128.
    if bytes.len() > 19 {
        return canonical(bytes).and_then(|v| u64::try_from(v).ok());
    }
    if bytes.len() > 1 && bytes[0] == b'0' {
        return None;
    }
    fold_u64(bytes)
}

/// Digits, leading zeros allowed, at most 20 of them, within u64.
pub fn digits(bytes: &[u8]) -> Option<u64> {
    if bytes.len() > 20 {
        return None;
    }
    fold(bytes).and_then(|v| u64::try_from(v).ok())
}

/// A plain decimal such as `4`, `2.5` or `0.333333`, in millionths. Digits past the
/// sixth decimal place are dropped (rounding down, never up); the whole part has
/// at most 30 digits (leading zeros read); a dot needs digits on both sides.
pub fn micros(bytes: &[u8]) -> Option<u128> {
    let (whole, frac) = match bytes.iter().position(|&b| b == b'.') {
        Some(dot) => (&bytes[..dot], Some(&bytes[dot + 1..])),
        None => (bytes, None),
    };
    if whole.len() > 30 {
        return None;
    }
    let whole = fold(whole)?;
    let fraction = match frac {
        None => 0,
        Some(frac) => {
            if frac.is_empty() || !frac.iter().all(u8::is_ascii_digit) {
                return None;
            }
            frac.iter()
                .take(6)
                .zip((0..6).rev())
                .map(|(&b, power)| u128::from(b - b'0') * 10u128.pow(power))
                .sum()
        }
    };
    whole.checked_mul(MICROS)?.checked_add(fraction)
}

/// [`micros`] with an optional leading `-`: a bucket in debt (`-3`, `-2.5`). Rounded
/// down like [`micros`], toward −∞: a negative value with a non-zero digit past
/// the sixth decimal place is one millionth lower. `-0` is 0.
pub fn signed_micros(bytes: &[u8]) -> Option<i128> {
    let Some((b'-', magnitude)) = bytes.split_first() else {
        return micros(bytes).and_then(|m| i128::try_from(m).ok());
    };
    let m = micros(magnitude)?;
    let cut = magnitude
        .iter()
        .position(|&b| b == b'.')
        .is_some_and(|dot| magnitude[dot + 1..].iter().skip(6).any(|&b| b != b'0'));
    // At most 30 whole digits: far inside i128.
    i128::try_from(m + u128::from(cut)).ok().map(|m| -m)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn canonical_refuses_leading_zeros_signs_and_overflow() {
        assert_eq!(canonical(b"0"), Some(0));
        assert_eq!(canonical(b"7"), Some(7));
        assert_eq!(canonical(u128::MAX.to_string().as_bytes()), Some(u128::MAX));
        assert_eq!(canonical_u64(b"18446744073709551615"), Some(u64::MAX));
        assert_eq!(canonical_u64(b"18446744073709551616"), None);
        // Across the 19 digits read in a u64 and the checked rest.
        assert_eq!(
            canonical(b"9999999999999999999"),
            Some(9_999_999_999_999_999_999)
        );
        assert_eq!(
            canonical(b"12345678901234567890123"),
            Some(12_345_678_901_234_567_890_123)
        );
        assert_eq!(canonical(b"1234567890123456789x"), None);
        assert_eq!(canonical(b"123456789012345678x0"), None);
        for bad in [
            "",
            "00",
            "007",
            "-1",
            "+1",
            "1.0",
            " 1",
            "1 ",
            "1e3",
            "0x1",
            "\u{661}",
            "340282366920938463463374607431768211456",
        ] {
            assert_eq!(canonical(bad.as_bytes()), None, "{bad:?}");
        }
    }

    #[test]
    fn eight_digits_at_a_time_read_as_one_at_a_time() {
        let slow = |b: &[u8]| -> Option<u64> {
            b.iter().try_fold(0u64, |n, &c| {
                c.is_ascii_digit().then(|| n * 10 + u64::from(c - b'0'))
            })
        };
        let mut cases: Vec<Vec<u8>> = vec![
            b"0".to_vec(),
            b"12345678".to_vec(),
            b"99999999".to_vec(),
            b"1000000000000".to_vec(),
            b"9999999999999999999".to_vec(),
            b"1234567890123456789".to_vec(),
        ];
        // Every byte value at every place of 8- and 16-digit runs, so each place of
        // a word meets a non-digit (either side of '0'..='9') with digits around it.
        for len in [8, 9, 16, 19] {
            for at in 0..len {
                for b in 0..=255u8 {
                    let mut v = vec![b'7'; len];
                    v[at] = b;
                    cases.push(v.clone());
                    v.iter_mut().take(at).for_each(|c| *c = b'0');
                    cases.push(v);
                }
            }
        }
        for case in cases {
            assert_eq!(
                fold_u64(&case),
                slow(&case),
                "{:?}",
                case.escape_ascii().to_string()
            );
        }
    }

    #[test]
    fn digits_read_leading_zeros_within_twenty() {
        assert_eq!(digits(b"0"), Some(0));
        assert_eq!(digits(b"007"), Some(7));
        assert_eq!(digits(b"18446744073709551615"), Some(u64::MAX));
        assert_eq!(digits(b"00000000000000000001"), Some(1));
        for bad in [
            "",
            "-1",
            "1.0",
            "18446744073709551616",
            "000000000000000000001",
            "abc",
            " 1",
        ] {
            assert_eq!(digits(bad.as_bytes()), None, "{bad:?}");
        }
    }

    #[test]
    fn micros_cut_extra_decimals_and_parse_strictly() {
        assert_eq!(micros(b"4"), Some(4_000_000));
        assert_eq!(micros(b"2.5"), Some(2_500_000));
        assert_eq!(micros(b"0.3333339"), Some(333_333));
        assert_eq!(micros(b"7.00"), Some(7_000_000));
        assert_eq!(micros(b"007.5"), Some(7_500_000));
        assert_eq!(micros(b"1.00000099999999"), Some(1_000_000));
        for bad in [
            "",
            ".",
            "1.",
            ".5",
            "-1",
            "+1",
            "1e3",
            "inf",
            "nan",
            "1.2.3",
            " 1",
            "0x1",
            "1.0000001x",
            "1234567890123456789012345678901",
        ] {
            assert_eq!(micros(bad.as_bytes()), None, "{bad:?}");
        }
    }

    #[test]
    fn signed_micros_read_a_leading_minus_and_round_down() {
        assert_eq!(signed_micros(b"4"), Some(4_000_000));
        assert_eq!(signed_micros(b"0.333333"), Some(333_333));
        assert_eq!(signed_micros(b"-3"), Some(-3_000_000));
        assert_eq!(signed_micros(b"-2.5"), Some(-2_500_000));
        assert_eq!(signed_micros(b"-0.000001"), Some(-1));
        assert_eq!(signed_micros(b"-0"), Some(0));
        assert_eq!(signed_micros(b"-0.0000000"), Some(0));
        assert_eq!(signed_micros(b"-007.5"), Some(-7_500_000));
        // Toward −∞: a cut-off fraction makes a negative level lower, never higher.
        assert_eq!(signed_micros(b"0.3333339"), Some(333_333));
        assert_eq!(signed_micros(b"-0.3333331"), Some(-333_334));
        assert_eq!(signed_micros(b"-1.0000000"), Some(-1_000_000));
        assert_eq!(
            signed_micros(b"-9007199254740991"),
            Some(-9_007_199_254_740_991_000_000)
        );
        for bad in [
            "", "-", "--1", "+1", "-+1", "- 1", "-.5", "-1.", "1-", "-1e3", "-inf", "-nan", " -1",
            "-1 ",
        ] {
            assert_eq!(signed_micros(bad.as_bytes()), None, "{bad:?}");
        }
        let deepest = format!("-{}", "9".repeat(30));
        assert!(signed_micros(deepest.as_bytes()).is_some_and(|m| m < 0));
    }
}
