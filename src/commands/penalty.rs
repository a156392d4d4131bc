//! `RL.PENALTY key strikes window block max [COST n]`
//!
//! Escalating blocks for repeat offenders: `strikes` within `window` block the key
//! for `block`, each further block while the offender is remembered twice as long,
//! up to `max`. `COST n` records n strikes, `COST 0` only looks. The key is a
//! native string `"<count> <window_end> <level> <blocked_until>"`.
//! Reply: `[allowed, strikes, remaining, retry_after_ms, reset_after_ms]`.

use super::framework::Limiter;
use super::spec::{Arg, ArgKind, CostArg, Spec};
use crate::algorithms::penalty::{self, Penalty as Params, Store};
use crate::algorithms::{Amount, Cost, Millis, Outcome};
use crate::args;
use crate::error::{Error, Result};
use crate::stats::Counters;
use crate::storage::{self, Key};

pub struct Penalty;

static COUNTERS: Counters = Counters::new();

/// Options other RL commands take, refused here by name.
const NOT_HERE: [&str; 3] = ["REFUND", "DEBIT", "DELAY"];

/// `[COST n]`: the other commands' options are named as not applying, anything
/// else is an unknown option; the value, a repeat or a missing value are checked
/// as every command checks COST.
fn cost(options: &[&[u8]]) -> Result<Cost> {
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
    match args::options(options.iter().copied(), false)?.amount {
        Amount::Take(n) => Ok(n),
        Amount::Refund(_) => Err(Error::PenaltyOption("REFUND")),
    }
}

impl Limiter for Penalty {
    const DEFINITION: Spec = Spec {
        cost: CostArg::Cost,
        ..Spec::rl(
            c"RL.PENALTY",
            c"write deny-oom fast",
            c"Counts an offender's strikes and blocks the key for escalating periods, from block doubling up to max",
            c"O(1)",
            &[
                Arg::new(c"key", ArgKind::Key),
                Arg::new(c"strikes", ArgKind::Integer),
                Arg::new(c"window", ArgKind::Duration),
                Arg::new(c"block", ArgKind::Duration),
                Arg::new(c"max", ArgKind::Duration),
            ],
        )
    };
    const STATS: &'static Counters = &COUNTERS;
    type Params = Params;
    type Write = Store;

    fn parse_params(args: &[&[u8]]) -> Result<Params> {
        Params::new(
            args::count("strikes", args[0])?,
            args::duration("window", args[1])?,
            args::duration("block", args[2])?,
            args::duration("max", args[3])?,
        )
        .ok_or(Error::BlockAboveMax)
    }

    fn parse(args: &[&[u8]]) -> Result<(Params, Amount)> {
        let (positional, options) = args.split_at(Self::DEFINITION.args.len() - 1);
        Ok((
            Self::parse_params(positional)?,
            Amount::Take(cost(options)?),
        ))
    }

    fn decide(key: &Key, p: &Params, now: Millis, amount: Amount) -> Result<Outcome<Store>> {
        // Parsing (here and in RL.ALL) lets no refund through.
        let Amount::Take(n) = amount else {
            return Err(Error::PenaltyOption("REFUND"));
        };
        Ok(penalty::decide(storage::penalty::load(key)?, now, *p, n))
    }

    fn store(key: &Key, write: Store) -> Result<()> {
        storage::penalty::store(key, write)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse_line(line: &str) -> Result<Amount> {
        let args: Vec<&[u8]> = line.split(' ').map(str::as_bytes).collect();
        Penalty::parse(&args).map(|(_, amount)| amount)
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
