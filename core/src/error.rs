//! Every way a call can fail, with the RESP error code it is reported under.
//!
//! Messages carry no code: [`Error::code`] supplies it, so each reply starts with a
//! proper code word (`ERR`, `WRONGTYPE`) that INFO errorstats counts.

use thiserror::Error;

use crate::limits::MAX_COUNT;

#[derive(Debug, Clone, PartialEq, Eq, Error)]
pub enum Error {
    #[error("{name} must be an integer from {min} to {MAX_COUNT}")]
    BadCount { name: &'static str, min: u64 },

    #[error("{name} must be an integer from {min} to {max}")]
    BadInteger {
        name: &'static str,
        min: u64,
        max: u64,
    },

    #[error(
        "tokens per period is too high for a GCRA limiter: at most one token per \
         nanosecond (1000000 per ms)"
    )]
    RateTooHigh,

    /// `min` is `1ms` for a window or period, `0` for a DELAY.
    #[error(
        "{name} must be a duration from {min} to 3650d: an integer with an optional \
         unit ms, s, m, h or d (a bare integer means seconds)"
    )]
    BadDuration {
        name: &'static str,
        min: &'static str,
    },

    #[error(
        "limit must be an integer from 1 to {max} for RL.SLIDING, which keeps one entry \
         per unit (rl.sliding-max-limit); use RL.BUCKET for larger limits"
    )]
    SlidingLimit { max: u64 },

    #[error("id must be 1 to 256 bytes")]
    BadLeaseId,

    #[error(
        "limit must be an integer from 1 to {max} for RL.ACQUIRE, which keeps one entry \
         per lease (rl.sliding-max-limit)"
    )]
    LeaseLimit { max: u64 },

    #[error("syntax error: REFUND does not apply to ACQUIRE: end a lease with RL.RELEASE")]
    LeaseRefund,

    /// RL.ALL: a DELAY after a policy other than GCRA.
    #[error("syntax error: DELAY must follow a GCRA policy")]
    DelayWithoutGcra,

    #[error("block must be at most max")]
    BlockAboveMax,

    /// `expected` lists the command's options (RL.GCRA's include DELAY).
    #[error("syntax error: unknown option '{option}', expected {expected}")]
    UnknownOption { option: String, expected: String },

    #[error("syntax error: RL.TOP takes [COUNT k] [SHADOW], or RESET alone")]
    TopSyntax,

    #[error("tenant must be 1 to 256 bytes")]
    BadTenant,

    #[error(
        "tokens per period is too high for an RL.SHARE budget: at most one token per \
         nanosecond (1000000 per ms)"
    )]
    ShareRateTooHigh,

    /// RL.SHARE: a new tenant on a budget that remembers its maximum.
    #[error(
        "the budget already remembers {max} tenants (rl.share-max-tenants): a new \
         tenant is refused until one is forgotten, a period after its last call"
    )]
    ShareTenants { max: u64 },

    #[error("unit must be day, week, month or year")]
    BadUnit,

    #[error("syntax error: ON does not apply to unit day, whose periods start every day at AT")]
    OnForDay,

    #[error("ON must be {accepted} for unit {unit}")]
    BadAnchor {
        unit: &'static str,
        accepted: &'static str,
    },

    #[error("AT must be a time of day hh:mm from 00:00 to 23:59")]
    BadTime,

    #[error(
        "unknown time zone '{0}': TZ takes UTC, an offset +HH:MM or -HH:MM up to 23:59, \
         or a tz database name such as America/New_York"
    )]
    BadZone(String),

    #[error("syntax error: {0} given more than once")]
    DuplicateOption(&'static str),

    /// RL.ALL: a SHADOW that no policy follows.
    #[error("syntax error: SHADOW must come before a policy")]
    ShadowWithoutPolicy,

    #[error("syntax error: {0} needs a value")]
    MissingValue(&'static str),

    /// COST and REFUND; DELAY and REFUND; COST, REFUND or DELAY and DEBIT.
    #[error("syntax error: {0} and {1} exclude each other")]
    Exclusive(&'static str, &'static str),

    /// An option RL has that the command (or RL.ALL policy) `to` does not take:
    /// DEBIT on RL.SLIDING, REFUND on RL.PENALTY, COST on RL.ACQUIRE; `takes` lists
    /// what it does take.
    #[error("syntax error: {option} does not apply to {to}, which takes {takes}")]
    NotApplicable {
        option: &'static str,
        to: &'static str,
        takes: String,
    },

    #[error("numkeys is {0}, but fewer keys follow it")]
    TooFewKeys(u64),

    /// RL.ALL: the arguments read as `fits` keys and as many policies, not
    /// `numkeys` of each.
    #[error("numkeys is {numkeys}, but the keys and policies given match numkeys {fits}")]
    NumkeysMismatch { numkeys: usize, fits: usize },

    #[error("key '{0}' is given more than once")]
    DuplicateKey(String),

    /// `expected` lists the policy words (from the command table).
    #[error("syntax error: unknown policy '{word}', expected {expected}")]
    UnknownPolicy { word: String, expected: String },

    #[error("syntax error: policy {policy} takes {params}")]
    PolicyArgs {
        policy: &'static str,
        params: String,
    },

    #[error("one policy per key, in key order: numkeys is {keys}, policies given {policies}")]
    PolicyCount { keys: usize, policies: usize },

    #[error("Operation against a key holding the wrong kind of value")]
    WrongType,

    /// The key has the right type but content RL did not write.
    #[error("key does not hold {0}")]
    NotALimiter(&'static str),

    /// A write to the key failed. Nothing that failed was propagated; see the store
    /// functions for what a partial write leaves.
    #[error("could not update the key ({0})")]
    WriteFailed(&'static str),

    /// A panic caught by the command guard: reported, never propagated into Redis.
    #[error("internal error in {0}; nothing was changed (please report this)")]
    Internal(&'static str),
}

impl Error {
    /// The RESP error code this error is reported under.
    pub fn code(&self) -> &'static str {
        match self {
            Error::WrongType => "WRONGTYPE",
            _ => "ERR",
        }
    }
}

pub type Result<T, E = Error> = std::result::Result<T, E>;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn messages_name_the_argument_and_the_accepted_range() {
        let e = Error::BadCount {
            name: "limit",
            min: 1,
        };
        assert_eq!(
            e.to_string(),
            "limit must be an integer from 1 to 9007199254740991"
        );
        assert_eq!(e.code(), "ERR");
        assert_eq!(Error::WrongType.code(), "WRONGTYPE");
        assert!(!Error::WrongType.to_string().starts_with("WRONGTYPE"));
    }
}
