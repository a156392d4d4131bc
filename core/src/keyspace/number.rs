//! Numbers as Redis 7.0 reads and writes them: `string2ll` for integer arguments,
//! glibc's `strtod` (through `string2d` and `zslParseRange`) for scores, and
//! `%.17g` for the scores it replies with. Each copies the C function's edge cases
//! (which inputs it refuses, where a C string stops), since a model that accepted
//! more or less than the server would hide the differences it exists to find.

/// Redis's `string2ll`: an optional `-`, then digits without a leading zero (`0`
/// alone is fine), within i64, at most 20 bytes. No `+`, no spaces, no `-0`.
pub fn parse_i64(bytes: &[u8]) -> Option<i64> {
    // LONG_STR_SIZE is 21: longer strings are refused before any digit is read.
    if bytes.is_empty() || bytes.len() >= 21 {
        return None;
    }
    if bytes == b"0" {
        return Some(0);
    }
    let (negative, digits) = match bytes.split_first() {
        Some((b'-', rest)) => (true, rest),
        _ => (false, bytes),
    };
    match digits.first() {
        Some(b'1'..=b'9') => {}
        _ => return None,
    }
    let magnitude = digits.iter().try_fold(0u64, |acc, &b| {
        let digit = b.is_ascii_digit().then(|| u64::from(b - b'0'))?;
        acc.checked_mul(10)?.checked_add(digit)
    })?;
    if negative {
        // -(2^63) is the one magnitude that only fits negated.
        0i64.checked_sub_unsigned(magnitude)
    } else {
        i64::try_from(magnitude).ok()
    }
}

/// The bytes C sees of an argument: everything before the first NUL. Redis hands
/// `sds` strings to `strtod` and `strcasecmp`, which stop there.
pub fn c_str(bytes: &[u8]) -> &[u8] {
    match bytes.iter().position(|&b| b == 0) {
        Some(end) => &bytes[..end],
        None => bytes,
    }
}

/// What glibc's `strtod` makes of the start of a C string.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Strtod {
    pub value: f64,
    /// Bytes consumed (0 when nothing converted: strtod then points at the start).
    pub end: usize,
    /// `errno == ERANGE`, as far as Redis looks at it: the result overflowed to
    /// ±inf or underflowed to zero.
    pub out_of_range: bool,
}

/// C's `isspace` in the C locale.
fn is_c_space(b: u8) -> bool {
    matches!(b, b' ' | b'\t' | b'\n' | 0x0b | 0x0c | b'\r')
}

/// glibc's `strtod` on `bytes` taken as a C string (it stops at a NUL): leading
/// white space, a sign, then `inf`/`infinity`, `nan`/`nan(chars)`, a hexadecimal
/// float (`0x1.8p3`) or a decimal with an optional exponent; the longest prefix
/// that reads as one. Rounds to nearest like glibc.
pub fn strtod(bytes: &[u8]) -> Strtod {
    let s = c_str(bytes);
    let none = Strtod {
        value: 0.0,
        end: 0,
        out_of_range: false,
    };
    let mut i = s.iter().take_while(|&&b| is_c_space(b)).count();
    let negative = match s.get(i) {
        Some(b'-') => {
            i += 1;
            true
        }
        Some(b'+') => {
            i += 1;
            false
        }
        _ => false,
    };
    let sign = |v: f64| if negative { -v } else { v };
    let rest = &s[i..];
    if starts_with_ignore_case(rest, b"inf") {
        let len = if starts_with_ignore_case(rest, b"infinity") {
            8
        } else {
            3
        };
        return Strtod {
            value: sign(f64::INFINITY),
            end: i + len,
            out_of_range: false,
        };
    }
    if starts_with_ignore_case(rest, b"nan") {
        let mut len = 3;
        if rest.get(3) == Some(&b'(') {
            let chars = rest[4..]
                .iter()
                .take_while(|b| b.is_ascii_alphanumeric() || **b == b'_')
                .count();
            if rest.get(4 + chars) == Some(&b')') {
                len = 5 + chars;
            }
        }
        return Strtod {
            value: f64::NAN,
            end: i + len,
            out_of_range: false,
        };
    }
    let parsed = if rest.len() > 2 && rest[0] == b'0' && (rest[1] | 0x20) == b'x' {
        hexadecimal(&rest[2..]).map(|(v, len, oor)| (v, len + 2, oor))
    } else {
        None
    };
    match parsed.or_else(|| decimal(rest)) {
        Some((value, len, out_of_range)) => Strtod {
            value: sign(value),
            end: i + len,
            out_of_range,
        },
        None => none,
    }
}

fn starts_with_ignore_case(s: &[u8], prefix: &[u8]) -> bool {
    s.len() >= prefix.len() && s[..prefix.len()].eq_ignore_ascii_case(prefix)
}

/// The mantissa at the start of `s`: digits `[.digits]`, at least one digit in all
/// (`is_digit` says what a digit is). Returns (its length, the integer part's).
fn mantissa_len(s: &[u8], is_digit: impl Fn(u8) -> bool) -> Option<(usize, usize)> {
    let int = s.iter().take_while(|&&b| is_digit(b)).count();
    let mut len = int;
    let mut frac = 0;
    if s.get(len) == Some(&b'.') {
        frac = s[len + 1..].iter().take_while(|&&b| is_digit(b)).count();
        if int + frac > 0 {
            len += 1 + frac;
        }
    }
    (int + frac > 0).then_some((len, int))
}

/// The length of an exponent `e[+-]digits` at the start of `s`, 0 if there is none.
fn exponent_len(s: &[u8], marker: u8) -> usize {
    if s.first().map(|b| b | 0x20) != Some(marker) {
        return 0;
    }
    let sign = usize::from(matches!(s.get(1), Some(b'+' | b'-')));
    let digits = s[1 + sign..]
        .iter()
        .take_while(|b| b.is_ascii_digit())
        .count();
    if digits == 0 {
        0
    } else {
        1 + sign + digits
    }
}

fn decimal(s: &[u8]) -> Option<(f64, usize, bool)> {
    let (mantissa, _) = mantissa_len(s, |b| b.is_ascii_digit())?;
    let len = mantissa + exponent_len(&s[mantissa..], b'e');
    let text = std::str::from_utf8(&s[..len]).ok()?;
    // Rust's parser is correctly rounded, like glibc's; it saturates where C
    // reports ERANGE, so the range check is redone here.
    let value: f64 = text.parse().ok()?;
    let nonzero = s[..mantissa].iter().any(|b| (b'1'..=b'9').contains(b));
    let out_of_range = value.is_infinite() || (value == 0.0 && nonzero);
    Some((value, len, out_of_range))
}

/// A hexadecimal float after its `0x`: hex digits `[.hexdigits]`, then `p[+-]digits`.
fn hexadecimal(s: &[u8]) -> Option<(f64, usize, bool)> {
    let (mantissa, int_len) = mantissa_len(s, |b| b.is_ascii_hexdigit())?;
    let exp_len = exponent_len(&s[mantissa..], b'p');
    let exp = if exp_len == 0 {
        0i64
    } else {
        let text = &s[mantissa + 1..mantissa + exp_len];
        let (negative, digits) = match text.split_first() {
            Some((b'-', d)) => (true, d),
            Some((b'+', d)) => (false, d),
            _ => (false, text),
        };
        // Saturates far beyond any double's range.
        let magnitude = digits.iter().fold(0i64, |acc, &b| {
            (acc * 10 + i64::from(b - b'0')).min(1 << 40)
        });
        if negative {
            -magnitude
        } else {
            magnitude
        }
    };
    let digits = s[..mantissa].iter().filter(|&&b| b != b'.');
    let frac_len = (mantissa - int_len).saturating_sub(1) as i64;
    // The first 16 significant hex digits, exact; the rest only as "dropped" and
    // "any non-zero" (sticky), which is all round-to-nearest needs.
    let (mut m, mut kept, mut dropped, mut sticky) = (0u64, 0u32, 0i64, false);
    for &b in digits {
        let d = u64::from((b as char).to_digit(16).unwrap_or(0));
        if kept < 16 {
            if m != 0 || d != 0 {
                m = m << 4 | d;
                kept += 1;
            }
        } else {
            dropped += 1;
            sticky |= d != 0;
        }
    }
    let len = mantissa + exp_len;
    if m == 0 {
        return Some((0.0, len, false));
    }
    let e2 = exp + 4 * (dropped - frac_len);
    let (value, out_of_range) = round_binary(m, e2, sticky);
    Some((value, len, out_of_range))
}

/// `m · 2^e2` (plus a sticky bit below `m`) rounded to the nearest double, ties to
/// even: (value, overflowed or underflowed to zero).
fn round_binary(m: u64, e2: i64, sticky: bool) -> (f64, bool) {
    let bits = i64::from(64 - m.leading_zeros());
    let top = bits - 1 + e2; // the exponent of m's leading bit
    if top > 1023 {
        return (f64::INFINITY, true);
    }
    // Significant bits a double keeps at this magnitude: 53, fewer when subnormal.
    let keep = if top >= -1022 { 53 } else { top + 1075 };
    if keep <= 0 {
        // Below half the smallest subnormal, or exactly half with nothing more: 0.
        let above_half = keep == 0 && (m.count_ones() > 1 || sticky);
        return if above_half {
            (f64::from_bits(1), false)
        } else {
            (0.0, true)
        };
    }
    let shift = bits - keep;
    let (q, exp) = if shift <= 0 {
        (m, e2)
    } else {
        let shift = shift as u32;
        let q = m >> shift;
        let rest = m & ((1u64 << shift) - 1);
        let half = 1u64 << (shift - 1);
        let up = rest > half || (rest == half && (sticky || q & 1 == 1));
        (q + u64::from(up), e2 + i64::from(shift))
    };
    let value = scale(q as f64, exp);
    (value, value.is_infinite())
}

/// `x · 2^n`, exact whenever the result is representable (steps keep every
/// intermediate value normal).
fn scale(mut x: f64, mut n: i64) -> f64 {
    while n > 1000 {
        x *= 2f64.powi(1000);
        n -= 1000;
    }
    while n < -1000 {
        x *= 2f64.powi(-1000);
        n += 1000;
    }
    x * 2f64.powi(n as i32)
}

/// A score argument of ZADD (`getDoubleFromObject` → `string2d`): the whole
/// string is one strtod number, no leading space, not NaN, and not a decimal that
/// overflowed or underflowed to zero. `inf` and `-inf` are fine.
pub fn parse_score(bytes: &[u8]) -> Option<f64> {
    let first = *bytes.first()?;
    if is_c_space(first) {
        return None;
    }
    let r = strtod(bytes);
    let bad_range = r.out_of_range && (r.value.is_infinite() || r.value == 0.0);
    (r.end == bytes.len() && !bad_range && !r.value.is_nan()).then_some(r.value)
}

/// One bound of a score range (`zslParseRange`): `(` makes it exclusive; the rest
/// of the C string must be one strtod number, not NaN. Unlike a ZADD score,
/// leading space, an empty string (0) and overflow to ±inf are accepted.
pub fn parse_bound(bytes: &[u8]) -> Option<(f64, bool)> {
    let s = c_str(bytes);
    let (exclusive, number) = match s.split_first() {
        Some((b'(', rest)) => (true, rest),
        _ => (false, s),
    };
    let r = strtod(number);
    (r.end == number.len() && !r.value.is_nan()).then_some((r.value, exclusive))
}

/// C's `printf("%.17g", x)`, which is how Redis 7.0 replies with a score
/// (`addReplyDouble`; ±inf as `inf`/`-inf`) and turns a Lua number into a
/// command argument. Integral values below 10^17 print as integers (`1500`).
pub fn format_g17(x: f64) -> String {
    if x.is_nan() {
        // glibc prints the sign of a NaN too (Lua's 0/0 is a negative one).
        return if x.is_sign_negative() { "-nan" } else { "nan" }.to_string();
    }
    if x.is_infinite() {
        return if x > 0.0 { "inf" } else { "-inf" }.to_string();
    }
    if x == 0.0 {
        return if x.is_sign_negative() { "-0" } else { "0" }.to_string();
    }
    // 17 significant digits, correctly rounded: "d.dddddddddddddddde±X".
    let sci = format!("{:.16e}", x);
    let (mantissa, exp) = sci.split_once('e').unwrap_or((&sci, "0"));
    let exp: i32 = exp.parse().unwrap_or(0);
    let negative = mantissa.starts_with('-');
    let digits: String = mantissa.chars().filter(char::is_ascii_digit).collect();
    let mut out = String::with_capacity(24);
    if negative {
        out.push('-');
    }
    if (-4..17).contains(&exp) {
        // Fixed notation with 17 significant digits, trailing zeros dropped.
        if exp < 0 {
            out.push_str("0.");
            out.extend(std::iter::repeat_n('0', (-exp - 1) as usize));
            out.push_str(digits.trim_end_matches('0'));
        } else {
            let (int, frac) = digits.split_at(exp as usize + 1);
            out.push_str(int);
            let frac = frac.trim_end_matches('0');
            if !frac.is_empty() {
                out.push('.');
                out.push_str(frac);
            }
        }
    } else {
        let (first, rest) = digits.split_at(1);
        out.push_str(first);
        let rest = rest.trim_end_matches('0');
        if !rest.is_empty() {
            out.push('.');
            out.push_str(rest);
        }
        out.push_str(&format!(
            "e{}{:02}",
            if exp < 0 { '-' } else { '+' },
            exp.abs()
        ));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn integers_as_string2ll_reads_them() {
        assert_eq!(parse_i64(b"0"), Some(0));
        assert_eq!(parse_i64(b"-1"), Some(-1));
        assert_eq!(parse_i64(b"9223372036854775807"), Some(i64::MAX));
        assert_eq!(parse_i64(b"-9223372036854775808"), Some(i64::MIN));
        for bad in [
            &b""[..],
            b"-",
            b"-0",
            b"+1",
            b"01",
            b" 1",
            b"1 ",
            b"1.0",
            b"9223372036854775808",
            b"-9223372036854775809",
            b"000000000000000000001",
        ] {
            assert_eq!(parse_i64(bad), None, "{:?}", String::from_utf8_lossy(bad));
        }
    }

    #[test]
    fn scores_as_string2d_reads_them() {
        assert_eq!(parse_score(b"1500"), Some(1500.0));
        assert_eq!(parse_score(b"+1.5"), Some(1.5));
        assert_eq!(parse_score(b".5"), Some(0.5));
        assert_eq!(parse_score(b"5."), Some(5.0));
        assert_eq!(parse_score(b"1e3"), Some(1000.0));
        assert_eq!(parse_score(b"-inf"), Some(f64::NEG_INFINITY));
        assert_eq!(parse_score(b"+Infinity"), Some(f64::INFINITY));
        assert_eq!(parse_score(b"0x10"), Some(16.0));
        assert_eq!(parse_score(b"0x1.8p1"), Some(3.0));
        assert_eq!(parse_score(b"1e-310"), Some(1e-310)); // subnormal: accepted
        for bad in [
            &b""[..],
            b" 1",
            b"1 ",
            b"nan",
            b"1e",
            b"e1",
            b".",
            b"1e400",
            b"1e-400",
            b"1\x002",
            b"abc",
        ] {
            assert_eq!(parse_score(bad), None, "{:?}", String::from_utf8_lossy(bad));
        }
    }

    #[test]
    fn hexadecimal_floats_round_to_nearest_even() {
        // 2^53 + 1 is a tie between 2^53 and 2^53 + 2: even wins.
        assert_eq!(parse_score(b"0x20000000000001"), Some(9007199254740992.0));
        assert_eq!(parse_score(b"0x20000000000003"), Some(9007199254740996.0));
        // Anything after the tie breaks it upwards.
        assert_eq!(
            parse_score(b"0x20000000000001.01"),
            Some(9007199254740994.0)
        );
        assert_eq!(parse_score(b"0x1p-1074"), Some(f64::from_bits(1)));
        assert_eq!(parse_score(b"0x1p-1075"), None); // a tie with 0: underflows
        assert_eq!(parse_score(b"0x1.1p-1075"), Some(f64::from_bits(1)));
        assert_eq!(parse_score(b"0x1p1024"), None);
        assert_eq!(parse_score(b"0x.8"), Some(0.5));
    }

    #[test]
    fn range_bounds_as_zslparserange_reads_them() {
        assert_eq!(parse_bound(b"(5"), Some((5.0, true)));
        assert_eq!(parse_bound(b"-inf"), Some((f64::NEG_INFINITY, false)));
        assert_eq!(parse_bound(b"(+inf"), Some((f64::INFINITY, true)));
        assert_eq!(parse_bound(b""), Some((0.0, false)));
        assert_eq!(parse_bound(b"("), Some((0.0, true)));
        assert_eq!(parse_bound(b" 7"), Some((7.0, false)));
        assert_eq!(parse_bound(b"1e400"), Some((f64::INFINITY, false)));
        assert_eq!(parse_bound(b"5\0junk"), Some((5.0, false)));
        assert_eq!(parse_bound(b"[5"), None);
        assert_eq!(parse_bound(b"nan"), None);
        assert_eq!(parse_bound(b"5 "), None);
    }

    #[test]
    fn scores_print_as_percent_17g() {
        assert_eq!(format_g17(1500.0), "1500");
        assert_eq!(format_g17(-3.0), "-3");
        assert_eq!(format_g17(0.5), "0.5");
        assert_eq!(format_g17(0.1), "0.10000000000000001");
        assert_eq!(format_g17(1.5e-5), "1.5e-05");
        assert_eq!(format_g17(3.3e-5), "3.3000000000000003e-05");
        assert_eq!(format_g17(0.0001), "0.0001");
        assert_eq!(format_g17(1e16), "10000000000000000");
        assert_eq!(format_g17(1e17), "1e+17");
        assert_eq!(format_g17(123456789012345678.0), "1.2345678901234568e+17");
        assert_eq!(format_g17(9007199254740993.0), "9007199254740992");
        assert_eq!(format_g17(-0.0), "-0");
        assert_eq!(format_g17(f64::INFINITY), "inf");
        assert_eq!(format_g17(f64::NEG_INFINITY), "-inf");
        assert_eq!(format_g17(1e300), "1.0000000000000001e+300");
        assert_eq!(format_g17(f64::from_bits(1)), "4.9406564584124654e-324");
    }
}
