//! Each command's parameters from its arguments after the key: the one parser the
//! module's commands, RL.ALL's policies and the in-memory executor share. Errors
//! are made only on failure, as in [`crate::args`].
#![allow(clippy::unnecessary_lazy_evaluations)]

use crate::algorithms::acquire::{LeaseId, Leases};
use crate::algorithms::gcra::Emission;
use crate::algorithms::penalty::Penalty;
use crate::algorithms::quota::Quota;
use crate::algorithms::share::{Share, Tenant, Weight};
use crate::algorithms::{Amount, Cost, Count, Interval, Rate, WindowLimit};
use crate::args;
use crate::calendar::{Calendar, Unit};
use crate::error::{Error, Result};
use crate::options::{self, Opt, Options};
use crate::table::{Arg, ArgKind, Command, Max};

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
    // Most calls give no option: the defaults, without the options' parser.
    if options.is_empty() {
        return Ok((params, Options::NONE));
    }
    let options = options::options(options.iter().copied(), command.takes())?;
    Ok((params, options))
}

/// A command's positional parameters after the key, read one by one as its row
/// says: each argument's name (for its error), kind and range come from the table,
/// so a parser below says only what it builds of them.
pub struct Positional<'a> {
    params: std::slice::Iter<'static, Arg>,
    args: std::slice::Iter<'a, &'a [u8]>,
}

impl<'a> Positional<'a> {
    #[inline]
    pub fn new(row: &Command, args: &'a [&'a [u8]]) -> Self {
        Positional {
            params: row.params().iter(),
            args: args.iter(),
        }
    }

    /// The next parameter, read as its argument's kind says.
    #[inline]
    pub fn read<T: Param<'a>>(&mut self) -> Result<T> {
        match (self.params.next(), self.args.next()) {
            (Some(arg), Some(bytes)) => T::read(arg, bytes),
            // The arity is checked before any parser runs.
            _ => Err(Error::Internal("a parameter past the row's arguments")),
        }
    }

    /// What is left past the row's arguments (CL.THROTTLE's quantity).
    pub fn rest(self) -> &'a [&'a [u8]] {
        self.args.as_slice()
    }
}

/// A value a positional argument reads as, from its kind in the table.
pub trait Param<'a>: Sized {
    fn read(arg: &Arg, bytes: &'a [u8]) -> Result<Self>;
}

/// An argument the table says is not this value's kind: a parser and its row
/// disagree, which the tests of every parser would show.
fn mismatch(arg: &Arg) -> Error {
    Error::Internal(arg.text)
}

/// A count (an integer argument from 1): 1 ..= 2^53 − 1, its bound if the row sets
/// a smaller one by a setting, which the parser checks with its own error.
impl Param<'_> for Count {
    #[inline]
    fn read(arg: &Arg, bytes: &[u8]) -> Result<Count> {
        match arg.kind {
            ArgKind::Integer { min: 1, .. } => args::count(arg.text, bytes),
            _ => Err(mismatch(arg)),
        }
    }
}

/// An integer within the row's range (CL.THROTTLE's max_burst, RL.SHARE's weight).
impl Param<'_> for u64 {
    #[inline]
    fn read(arg: &Arg, bytes: &[u8]) -> Result<u64> {
        match arg.kind {
            ArgKind::Integer {
                min,
                max: Max::Value(max),
            } => args::integer(arg.text, bytes, min, max),
            _ => Err(mismatch(arg)),
        }
    }
}

/// A duration: 1 ms ..= 10 years.
impl Param<'_> for Interval {
    #[inline]
    fn read(arg: &Arg, bytes: &[u8]) -> Result<Interval> {
        match arg.kind {
            ArgKind::Duration => args::duration(arg.text, bytes),
            _ => Err(mismatch(arg)),
        }
    }
}

/// One of the row's words (RL.QUOTA's unit): day, week, month or year.
impl Param<'_> for Unit {
    #[inline]
    fn read(arg: &Arg, bytes: &[u8]) -> Result<Unit> {
        match arg.kind {
            ArgKind::Word { .. } => Unit::parse(bytes),
            _ => Err(mismatch(arg)),
        }
    }
}

/// Bytes (a lease id, a tenant): the parser checks them, with its own error.
impl<'a> Param<'a> for &'a [u8] {
    #[inline]
    fn read(arg: &Arg, bytes: &'a [u8]) -> Result<&'a [u8]> {
        match arg.kind {
            ArgKind::Text { .. } => Ok(bytes),
            _ => Err(mismatch(arg)),
        }
    }
}

/// RL.PENALTY's `strikes window block max`: block at most max.
#[inline]
pub fn penalty(row: &Command, args: &[&[u8]]) -> Result<Penalty> {
    let mut p = Positional::new(row, args);
    Penalty::new(p.read()?, p.read()?, p.read()?, p.read()?).ok_or_else(|| Error::BlockAboveMax)
}

/// `limit window`: RL.FIXED's and RL.SLIDINGCOUNTER's parameters.
#[inline]
pub fn window_limit(row: &Command, args: &[&[u8]]) -> Result<WindowLimit> {
    let mut p = Positional::new(row, args);
    Ok(WindowLimit::new(p.read()?, p.read()?))
}

/// RL.SLIDING's `limit window`: memory is one entry per unit, so a limit above
/// `max` (the `rl.sliding-max-limit` setting) belongs to RL.BUCKET.
#[inline]
pub fn sliding(row: &Command, args: &[&[u8]], max: u64) -> Result<WindowLimit> {
    let limit = window_limit(row, args)?;
    if limit.limit.get() > max {
        return Err(Error::SlidingLimit { max });
    }
    Ok(limit)
}

/// `capacity tokens period`, the next three parameters: RL.BUCKET's, RL.GCRA's and
/// RL.SHARE's budget.
#[inline]
fn next_rate(p: &mut Positional) -> Result<Rate> {
    Ok(Rate {
        capacity: p.read()?,
        tokens: p.read()?,
        period: p.read()?,
    })
}

/// `capacity tokens period`: RL.BUCKET's parameters.
#[inline]
pub fn rate(row: &Command, args: &[&[u8]]) -> Result<Rate> {
    next_rate(&mut Positional::new(row, args))
}

/// RL.GCRA's `capacity tokens period`, as its emission interval: an error past one
/// token per nanosecond.
#[inline]
pub fn emission(row: &Command, args: &[&[u8]]) -> Result<Emission> {
    Emission::new(rate(row, args)?).ok_or_else(|| Error::RateTooHigh)
}

/// CL.THROTTLE's `max_burst count period [quantity]` (redis-cell's: no options): the
/// emission interval of capacity max_burst + 1, and the quantity to take.
#[inline]
pub fn throttle(row: &Command, args: &[&[u8]]) -> Result<(Emission, Amount)> {
    let mut p = Positional::new(row, args);
    // max_burst + 1 is the capacity, which the row keeps within 2^53 - 1.
    let burst: u64 = p.read()?;
    let rate = Rate {
        capacity: Count::new(burst + 1).ok_or_else(|| Error::Internal("CL.THROTTLE"))?,
        tokens: p.read()?,
        period: p.read()?,
    };
    let emission = Emission::new(rate).ok_or_else(|| Error::RateTooHigh)?;
    let quantity = match (p.rest().first(), row.quantity) {
        (Some(q), Some(name)) => args::cost(name.to_str().unwrap_or("quantity"), q)?,
        _ => Cost::ONE,
    };
    Ok((emission, Amount::Take(quantity)))
}

/// RL.QUOTA's `limit unit`, on the unit's default calendar (an RL.ALL policy's
/// calendar options follow it: [`calendar_words`]).
#[inline]
pub fn quota(row: &Command, args: &[&[u8]]) -> Result<Quota> {
    let (limit, unit) = quota_limit_unit(row, args)?;
    Ok(Quota {
        limit,
        calendar: Calendar::parse(unit.name().as_bytes(), None, None, None, None)?,
    })
}

/// RL.QUOTA's `limit unit` as read before its options: the limit, then the unit.
pub fn quota_limit_unit(row: &Command, args: &[&[u8]]) -> Result<(Count, Unit)> {
    let mut p = Positional::new(row, args);
    let limit = p.read()?;
    Ok((limit, p.read()?))
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
        let found = Opt::named(word).and_then(|o| Opt::CALENDAR.iter().position(|c| *c == o));
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
                let flag = Opt::named(word) == Some(Opt::Shadow);
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
#[inline]
pub fn lease(row: &Command, args: &[&[u8]], max: u64) -> Result<Lease> {
    let mut p = Positional::new(row, args);
    let limit = p
        .read::<Count>()
        .ok()
        .filter(|l| l.get() <= max)
        .ok_or_else(|| Error::LeaseLimit { max })?;
    Ok(Lease {
        leases: Leases {
            limit,
            ttl: p.read()?,
        },
        id: lease_id(p.read()?)?,
    })
}

/// A lease's name: 1 ..= 256 bytes.
pub fn lease_id(bytes: &[u8]) -> Result<LeaseId> {
    LeaseId::new(bytes).ok_or_else(|| Error::BadLeaseId)
}

/// RL.SHARE's `tenant weight capacity tokens period`, remembering at most
/// `max_tenants` tenants (the `rl.share-max-tenants` setting): the tenant 1 ..= 256
/// bytes, the weight 1 ..= 10,000, the budget as RL.GCRA's (at most one token per
/// nanosecond).
#[inline]
pub fn share(row: &Command, args: &[&[u8]], max_tenants: u64) -> Result<Share> {
    let mut p = Positional::new(row, args);
    let tenant = Tenant::new(p.read()?).ok_or_else(|| Error::BadTenant)?;
    let weight = Weight::new(p.read()?).ok_or_else(|| Error::Internal("RL.SHARE"))?;
    let rate = next_rate(&mut p)?;
    Share::new(tenant, weight, rate, max_tenants).ok_or_else(|| Error::ShareRateTooHigh)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::algorithms::Cost;
    use crate::table;

    fn parse_line(line: &str) -> Result<Amount> {
        let args: Vec<&[u8]> = line.split(' ').map(str::as_bytes).collect();
        with_options(&table::PENALTY, &args, |a| penalty(&table::PENALTY, a)).map(|(_, o)| o.amount)
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
    fn parameters_read_as_their_row_says_and_a_mismatch_is_an_error() {
        // Names and ranges from the row: CL.THROTTLE's max_burst is 0 ..= 2^53 − 2.
        let burst = |b: &'static str| throttle(&table::THROTTLE, &[b.as_bytes(), b"1", b"1"]);
        assert!(burst("0").is_ok());
        assert_eq!(
            burst("9007199254740991").unwrap_err().to_string(),
            "max_burst must be an integer from 0 to 9007199254740990"
        );
        // RL.FIXED's window read as a count: the parser and the row disagree.
        let mut p = Positional::new(&table::FIXED, &[b"1", b"1s"]);
        assert!(p.read::<Count>().is_ok());
        assert_eq!(p.read::<Count>(), Err(Error::Internal("window")));
        // Past the row's arguments.
        assert!(matches!(p.read::<Interval>(), Err(Error::Internal(_))));
    }

    #[test]
    fn share_reads_tenant_weight_and_budget() {
        let parse = |line: &str| {
            let args: Vec<&[u8]> = line.split(' ').map(str::as_bytes).collect();
            share(&table::SHARE, &args, 7)
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
