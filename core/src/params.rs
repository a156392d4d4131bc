//! Each command's parameters from its arguments after the key: the one parser the
//! module's commands, RL.ALL's policies and the in-memory executor share.

use crate::algorithms::acquire::{LeaseId, Leases};
use crate::algorithms::gcra::Emission;
use crate::algorithms::penalty::Penalty;
use crate::algorithms::{Amount, Cost, Count, Quota, Rate, MAX_COUNT};
use crate::args::{self, Options};
use crate::error::{Error, Result};
use crate::table::{Command, CostArg};

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
    let options = match command.cost {
        CostArg::Cost => Options {
            amount: Amount::Take(cost_only(command, options)?),
            delay: None,
        },
        _ => args::options(options.iter().copied(), command.takes())?,
    };
    Ok((params, options))
}

/// Options other RL commands take, which a COST-only command (RL.PENALTY) refuses
/// by name.
const NOT_HERE: [&str; 3] = ["REFUND", "DEBIT", "DELAY"];

/// `[COST n]` alone: the other commands' options are named as not applying,
/// anything else is an unknown option; the value, a repeat or a missing value are
/// checked as every command checks COST.
fn cost_only(command: &Command, options: &[&[u8]]) -> Result<Cost> {
    // No options, the usual call: COST 1, what `args::options` answers for none,
    // without walking its parser.
    if options.is_empty() {
        return Ok(Cost::ONE);
    }
    // Names sit at even positions, each followed by its value.
    for name in options.iter().step_by(2) {
        if let Some(other) = NOT_HERE
            .iter()
            .find(|o| name.eq_ignore_ascii_case(o.as_bytes()))
        {
            return Err(Error::PenaltyOption(other));
        }
        if !name.eq_ignore_ascii_case(b"COST") {
            return Err(Error::UnknownOption {
                option: args::printable(name),
                expected: "COST n",
            });
        }
    }
    match args::options(options.iter().copied(), command.takes())?.amount {
        Amount::Take(n) => Ok(n),
        Amount::Refund(_) => Err(Error::PenaltyOption("REFUND")),
        Amount::Debit(_) => Err(Error::PenaltyOption("DEBIT")),
    }
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
pub fn quota(args: &[&[u8]]) -> Result<Quota> {
    Ok(Quota::new(
        args::count("limit", args[0])?,
        args::duration("window", args[1])?,
    ))
}

/// RL.SLIDING's `limit window`: memory is one entry per unit, so a limit above
/// `max` (the `rl.sliding-max-limit` setting) belongs to RL.BUCKET.
pub fn sliding(args: &[&[u8]], max: u64) -> Result<Quota> {
    let quota = quota(args)?;
    if quota.limit.get() > max {
        return Err(Error::SlidingLimit { max });
    }
    Ok(quota)
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
            ("5 15m 1m 1h REFUND 1", "syntax error: REFUND does not apply to RL.PENALTY, which takes only COST n"),
            ("5 15m 1m 1h COST 1 refund 1", "syntax error: REFUND does not apply to RL.PENALTY, which takes only COST n"),
            ("5 15m 1m 1h DEBIT 1", "syntax error: DEBIT does not apply to RL.PENALTY, which takes only COST n"),
            ("5 15m 1m 1h Delay 1s", "syntax error: DELAY does not apply to RL.PENALTY, which takes only COST n"),
            ("5 15m 1m 1h WEIGHT 1", "syntax error: unknown option 'WEIGHT', expected COST n"),
            ("5 15m 1m 1h COST", "syntax error: COST needs a value"),
            ("5 15m 1m 1h COST 1 COST 2", "syntax error: COST given more than once"),
            ("5 15m 1m 1h COST REFUND", "COST must be an integer from 0 to 9007199254740991"),
            ("5 15m 1m 1h COST -1", "COST must be an integer from 0 to 9007199254740991"),
            ("0 15m 1m 1h", "strikes must be an integer from 1 to 9007199254740991"),
            ("5 0 1m 1h", "window must be a duration from 1ms to 10 years: an integer with an optional unit ms, s, m, h or d (a bare integer means seconds)"),
            ("5 15m x 1h", "block must be a duration from 1ms to 10 years: an integer with an optional unit ms, s, m, h or d (a bare integer means seconds)"),
            ("5 15m 1m 3651d", "max must be a duration from 1ms to 10 years: an integer with an optional unit ms, s, m, h or d (a bare integer means seconds)"),
            ("5 15m 2h 1h", "block must be at most max"),
        ] {
            assert_eq!(error_of(line), want, "{line}");
        }
        assert!(parse_line("5 15m 1h 1h").is_ok(), "block = max is fine");
    }
}
