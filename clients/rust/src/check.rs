//! The argument checks the generated code runs before anything is sent: the ranges of
//! the command table, each option at most once, the exclusive options alone.

use crate::error::{Error, Result};
use crate::period::Period;

fn refused(text: String) -> Error {
    Error::InvalidArgument(text)
}

pub(crate) fn integer(name: &str, v: u64, min: u64, max: u64) -> Result<()> {
    if (min..=max).contains(&v) {
        Ok(())
    } else {
        Err(refused(format!(
            "{name} must be an integer from {min} to {max}, not {v}"
        )))
    }
}

pub(crate) fn duration(name: &str, p: &Period, min_ms: u64, max_ms: u64) -> Result<()> {
    match p.millis() {
        Ok(ms) if (min_ms..=max_ms).contains(&ms) => Ok(()),
        Ok(ms) => Err(refused(format!(
            "{name} must be a duration from {min_ms} ms to {max_ms} ms, not {ms} ms"
        ))),
        Err(why) => Err(refused(format!("{name}: {why}"))),
    }
}

pub(crate) fn text(name: &str, v: &[u8], min: u64, max: u64) -> Result<()> {
    let len = u64::try_from(v.len()).unwrap_or(u64::MAX);
    if (min..=max).contains(&len) {
        Ok(())
    } else {
        Err(refused(format!(
            "{name} must be {min} to {max} bytes, not {len}"
        )))
    }
}

pub(crate) fn twice(option: &str) -> Error {
    refused(format!("{option} given twice: each option at most once"))
}

pub(crate) fn excluded(a: &str, b: &str) -> Error {
    refused(format!("{a} and {b} exclude one another: give one"))
}

pub(crate) fn not_in_policy(option: &str, word: &str) -> Error {
    refused(format!(
        "{option} is not an option of RL.ALL's {word} policy (COST, REFUND and DEBIT go on the call: All::cost, refund, debit)"
    ))
}

pub(crate) fn only_in_policy(flag: &str, command: &str) -> Error {
    refused(format!(
        "{flag} does not apply to {command} itself, only to its RL.ALL policy (All::key)"
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ranges() {
        assert!(integer("limit", 1, 1, 5).is_ok());
        let e = integer("limit", 0, 1, 5).unwrap_err();
        assert!(
            matches!(&e, Error::InvalidArgument(m) if m == "limit must be an integer from 1 to 5, not 0")
        );
        assert!(duration("window", &Period::ms(1), 1, 10).is_ok());
        assert!(duration("window", &Period::ms(0), 1, 10).is_err());
        assert!(duration("window", &Period::from("1.5ms"), 0, 10).is_err());
        assert!(text("id", b"", 1, 256).is_err());
        assert!(text("id", &[b'x'; 257], 1, 256).is_err());
        assert!(text("id", b"x", 1, 256).is_ok());
    }
}
