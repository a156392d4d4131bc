//! Each command's parameters from its arguments after the key: the one parser the
//! module's commands, RL.ALL's policies and the in-memory executor share.

use crate::algorithms::acquire::{LeaseId, Leases};
use crate::algorithms::gcra::Emission;
use crate::algorithms::penalty::Penalty;
use crate::algorithms::quota::Quota;
use crate::algorithms::share::{Share, Tenant, Weight, MAX_WEIGHT};
use crate::algorithms::{Amount, Cost, Count, Rate, WindowLimit, MAX_COUNT};
use crate::args::{self, Options};
use crate::calendar::Calendar;
use crate::error::{Error, Result};
use crate::table::{Command, Opt};

/// A call's arguments after the key, as every command with options reads them: its
/// positional parameters first (by `parse`, so a bad parameter is the error even
/// when an option is bad too), then its options.
pub fn with_options<P>(
    command: &Command,
    args: &[&[u8]],
    parse: impl FnOnce(&[&[u8]]) -> Result<P>,
) -> Result<(P, Options)> {
    let (positional, options) = args.split_at(command.params().len().min(args.len()));
    let params = parse(positional)?;
    let options = args::options(options.iter().copied(), command.takes())?;
    Ok((params, options))
}

/// RL.PENALTY's `strikes window block max`: block at most max.
pub fn penalty(args: &[&[u8]]) -> Result<Penalty> {
    Penalty::new(
        args::count("strikes", args[0])?,
        args::duration("window", args[1])?,
        args::duration("block", args[2])?,
        args::duration("max", args[3])?,
    )
    .ok_or(Error::BlockAboveMax)
}

/// `limit window`: RL.FIXED's and RL.SLIDINGCOUNTER's parameters.
pub fn window_limit(args: &[&[u8]]) -> Result<WindowLimit> {
    Ok(WindowLimit::new(
        args::count("limit", args[0])?,
        args::duration("window", args[1])?,
    ))
}

/// RL.SLIDING's `limit window`: memory is one entry per unit, so a limit above
/// `max` (the `rl.sliding-max-limit` setting) belongs to RL.BUCKET.
pub fn sliding(args: &[&[u8]], max: u64) -> Result<WindowLimit> {
    let limit = window_limit(args)?;
    if limit.limit.get() > max {
        return Err(Error::SlidingLimit { max });
    }
    Ok(limit)
}

/// `capacity tokens period`: RL.BUCKET's parameters.
pub fn rate(args: &[&[u8]]) -> Result<Rate> {
    Ok(Rate {
        capacity: args::count("capacity", args[0])?,
        tokens: args::count("tokens", args[1])?,
        period: args::duration("period", args[2])?,
    })
}

/// RL.GCRA's `capacity tokens period`, as its emission interval: an error past one
/// token per nanosecond.
pub fn emission(args: &[&[u8]]) -> Result<Emission> {
    Emission::new(rate(args)?).ok_or(Error::RateTooHigh)
}

/// CL.THROTTLE's `max_burst count period [quantity]` (redis-cell's: no options): the
/// emission interval of capacity max_burst + 1, and the quantity to take.
pub fn throttle(args: &[&[u8]]) -> Result<(Emission, Amount)> {
    // max_burst + 1 is the capacity, which must stay within 2^53 - 1.
    let burst = args::integer("max_burst", args[0], 0, MAX_COUNT - 1)?;
    let rate = Rate {
        capacity: Count::new(burst + 1).ok_or(Error::Internal("CL.THROTTLE"))?,
        tokens: args::count("count", args[1])?,
        period: args::duration("period", args[2])?,
    };
    let emission = Emission::new(rate).ok_or(Error::RateTooHigh)?;
    let quantity = match args.get(3) {
        Some(q) => args::cost("quantity", q)?,
        None => Cost::ONE,
    };
    Ok((emission, Amount::Take(quantity)))
}

/// RL.QUOTA's `limit unit`, on the unit's default calendar (an RL.ALL policy's
/// calendar options follow it: [`calendar_words`]).
pub fn quota(args: &[&[u8]]) -> Result<Quota> {
    Ok(Quota {
        limit: args::count("limit", args[0])?,
        calendar: Calendar::parse(args[1], None, None, None, None)?,
    })
}

/// A quota's calendar options (`EVERY n`, `ON anchor`, `AT hh:mm`, `TZ zone`, each
/// at most once) among the name-value pairs of `rest`: anywhere among the
/// command's options (`among_others`), or, for an RL.ALL policy, only those right
/// after it. Their values (None: not given), and the arguments they took.
pub fn calendar_words<'a>(
    rest: &[&'a [u8]],
    among_others: bool,
) -> Result<([Option<&'a [u8]>; 4], usize)> {
    let mut values: [Option<&[u8]>; 4] = [None; 4];
    let mut used = 0;
    let mut at = 0;
    while let Some(word) = rest.get(at) {
        let found = Opt::CALENDAR
            .iter()
            .position(|o| word.eq_ignore_ascii_case(o.word().as_bytes()));
        match found {
            Some(i) => {
                let word = Opt::CALENDAR[i].word();
                let value = rest.get(at + 1).ok_or(Error::MissingValue(word))?;
                if values[i].replace(value).is_some() {
                    return Err(Error::DuplicateOption(word));
                }
                used += 2;
                at += 2;
            }
            // Another option: a flag (SHADOW) stands alone, the rest take a value.
            None if among_others => {
                let flag = word.eq_ignore_ascii_case(Opt::Shadow.word().as_bytes());
                at += if flag { 1 } else { 2 };
            }
            None => break,
        }
    }
    Ok((values, used))
}

/// What an RL.ACQUIRE asks for: a lease named `id` under `leases`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Lease {
    pub leases: Leases,
    pub id: LeaseId,
}

/// RL.ACQUIRE's `limit ttl id`. One entry per lease: the limit has RL.SLIDING's
/// bound (`max`).
pub fn lease(args: &[&[u8]], max: u64) -> Result<Lease> {
    let limit = args::count("limit", args[0])
        .ok()
        .filter(|l| l.get() <= max)
        .ok_or(Error::LeaseLimit { max })?;
    Ok(Lease {
        leases: Leases {
            limit,
            ttl: args::duration("ttl", args[1])?,
        },
        id: lease_id(args[2])?,
    })
}

/// A lease's name: 1 ..= 256 bytes.
pub fn lease_id(bytes: &[u8]) -> Result<LeaseId> {
    LeaseId::new(bytes).ok_or(Error::BadLeaseId)
}

/// RL.SHARE's `tenant weight capacity tokens period`, remembering at most
/// `max_tenants` tenants (the `rl.share-max-tenants` setting): the tenant 1 ..= 256
/// bytes, the weight 1 ..= 10,000, the budget as RL.GCRA's (at most one token per
/// nanosecond).
pub fn share(args: &[&[u8]], max_tenants: u64) -> Result<Share> {
    let tenant = Tenant::new(args[0]).ok_or(Error::BadTenant)?;
    let weight = args::integer("weight", args[1], 1, MAX_WEIGHT)?;
    let weight = Weight::new(weight).ok_or(Error::Internal("RL.SHARE"))?;
    let rate = rate(&args[2..5])?;
    Share::new(tenant, weight, rate, max_tenants).ok_or(Error::ShareRateTooHigh)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::algorithms::Cost;
    use crate::table;

    fn parse_line(line: &str) -> Result<Amount> {
        let args: Vec<&[u8]> = line.split(' ').map(str::as_bytes).collect();
        with_options(&table::PENALTY, &args, penalty).map(|(_, o)| o.amount)
    }

    fn error_of(line: &str) -> String {
        parse_line(line).unwrap_err().to_string()
    }

    #[test]
    fn takes_cost_alone_and_names_what_it_refuses() {
        let take = |n| Ok(Amount::Take(Cost::new(n).unwrap()));
        assert_eq!(parse_line("5 15m 1m 1h"), take(1));
        assert_eq!(parse_line("5 15m 1m 1h cost 0"), take(0));
        assert_eq!(parse_line("5 15m 1m 1h COST 7"), take(7));
        for (line, want) in [
            ("5 15m 1m 1h REFUND 1", "syntax error: REFUND does not apply to RL.PENALTY, which takes COST n"),
            ("5 15m 1m 1h COST 1 refund 1", "syntax error: REFUND does not apply to RL.PENALTY, which takes COST n"),
            ("5 15m 1m 1h DEBIT 1", "syntax error: DEBIT does not apply to RL.PENALTY, which takes COST n"),
            ("5 15m 1m 1h Delay 1s", "syntax error: DELAY does not apply to RL.PENALTY, which takes COST n"),
            ("5 15m 1m 1h WEIGHT 1", "syntax error: unknown option 'WEIGHT', expected COST n"),
            ("5 15m 1m 1h COST", "syntax error: COST needs a value"),
            ("5 15m 1m 1h COST 1 COST 2", "syntax error: COST given more than once"),
            ("5 15m 1m 1h COST REFUND", "COST must be an integer from 0 to 9007199254740991"),
            ("5 15m 1m 1h COST -1", "COST must be an integer from 0 to 9007199254740991"),
            ("0 15m 1m 1h", "strikes must be an integer from 1 to 9007199254740991"),
            ("5 0 1m 1h", "window must be a duration from 1ms to 3650d: an integer with an optional unit ms, s, m, h or d (a bare integer means seconds)"),
            ("5 15m x 1h", "block must be a duration from 1ms to 3650d: an integer with an optional unit ms, s, m, h or d (a bare integer means seconds)"),
            ("5 15m 1m 3651d", "max must be a duration from 1ms to 3650d: an integer with an optional unit ms, s, m, h or d (a bare integer means seconds)"),
            ("5 15m 2h 1h", "block must be at most max"),
        ] {
            assert_eq!(error_of(line), want, "{line}");
        }
        assert!(parse_line("5 15m 1h 1h").is_ok(), "block = max is fine");
    }

    #[test]
    fn share_reads_tenant_weight_and_budget() {
        let parse = |line: &str| {
            let args: Vec<&[u8]> = line.split(' ').map(str::as_bytes).collect();
            share(&args, 7)
        };
        let s = parse("acme 10000 100 10 1s").unwrap();
        assert_eq!(s.tenant().as_bytes(), b"acme");
        assert_eq!(
            (s.weight().get(), s.capacity(), s.period_ms()),
            (10_000, 100, 1000)
        );
        let long = "x".repeat(256);
        assert!(parse(&format!("{long} 1 1 1 1")).is_ok());
        for (line, want) in [
            (format!("{long}x 1 1 1 1"), "tenant must be 1 to 256 bytes"),
            (" 1 1 1 1".to_string(), "tenant must be 1 to 256 bytes"),
            ("a 0 1 1 1".to_string(), "weight must be an integer from 1 to 10000"),
            ("a 10001 1 1 1".to_string(), "weight must be an integer from 1 to 10000"),
            ("a 01 1 1 1".to_string(), "weight must be an integer from 1 to 10000"),
            ("a 1 0 1 1".to_string(), "capacity must be an integer from 1 to 9007199254740991"),
            ("a 1 1 1 0".to_string(), "period must be a duration from 1ms to 3650d: an integer with an optional unit ms, s, m, h or d (a bare integer means seconds)"),
            ("a 1 1 1000001 1ms".to_string(), "tokens per period is too high for an RL.SHARE budget: at most one token per nanosecond (1000000 per ms)"),
        ] {
            assert_eq!(parse(&line).unwrap_err().to_string(), want, "{line}");
        }
    }
}
