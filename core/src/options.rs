//! The options after a command's positional arguments (`COST n`, `REFUND n`,
//! `DEBIT n`, `DELAY max`, RL.QUOTA's calendar): the words, which a command takes (its table row's
//! list), and the one parser that reads them.

use std::ffi::CStr;

use crate::algorithms::{Amount, Cost};
use crate::args::{cost, count, delay_option, printable};
use crate::error::{Error, Result};

/// An option some commands take after their positional arguments.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Opt {
    /// `COST n`: take n (0 ..= 2^53 − 1, default 1; 0 only looks).
    Cost,
    /// `REFUND n`: give back up to n (0 ..= 2^53 − 1).
    Refund,
    /// `DEBIT n`: take n whatever is left, into debt (1 ..= 2^53 − 1).
    Debit,
    /// `DELAY max`: schedule instead of reject (a duration from 0).
    Delay,
    /// RL.QUOTA's calendar: `EVERY n` units a period, `ON anchor` (its start day),
    /// `AT hh:mm` (its local start time), `TZ zone`. Read by the calendar's parser
    /// (`params::calendar_words`), which knows the unit they depend on; in RL.ALL
    /// they follow their QUOTA policy.
    Every,
    On,
    At,
    Tz,
    /// `SHADOW`: a flag, no value. Alone, the call is counted as a trial; before
    /// an RL.ALL policy, the policy never vetoes the call.
    Shadow,
}

impl Opt {
    /// Every option, in the order errors and docs name them.
    pub const ALL: [Opt; 9] = [
        Opt::Cost,
        Opt::Refund,
        Opt::Debit,
        Opt::Delay,
        Opt::Every,
        Opt::On,
        Opt::At,
        Opt::Tz,
        Opt::Shadow,
    ];

    /// The calendar's options, in the order docs name them.
    pub const CALENDAR: [Opt; 4] = [Opt::Every, Opt::On, Opt::At, Opt::Tz];

    /// COST, REFUND or DEBIT: what a call takes or gives back.
    pub const fn is_amount(self) -> bool {
        matches!(self, Opt::Cost | Opt::Refund | Opt::Debit)
    }

    /// EVERY, ON, AT or TZ.
    pub const fn is_calendar(self) -> bool {
        matches!(self, Opt::Every | Opt::On | Opt::At | Opt::Tz)
    }

    /// The option `word` names (any case), if it is one.
    pub fn named(word: &[u8]) -> Option<Opt> {
        Opt::ALL
            .into_iter()
            .find(|o| word.eq_ignore_ascii_case(o.word().as_bytes()))
    }

    pub const fn word(self) -> &'static str {
        match self {
            Opt::Cost => "COST",
            Opt::Refund => "REFUND",
            Opt::Debit => "DEBIT",
            Opt::Delay => "DELAY",
            Opt::Every => "EVERY",
            Opt::On => "ON",
            Opt::At => "AT",
            Opt::Tz => "TZ",
            Opt::Shadow => "SHADOW",
        }
    }

    /// Its token and its value's name, as COMMAND DOCS shows them.
    pub const fn doc(self) -> (&'static CStr, &'static CStr) {
        match self {
            Opt::Cost => (c"COST", c"cost"),
            Opt::Refund => (c"REFUND", c"refund"),
            Opt::Debit => (c"DEBIT", c"debit"),
            Opt::Delay => (c"DELAY", c"delay"),
            Opt::Every => (c"EVERY", c"every"),
            Opt::On => (c"ON", c"anchor"),
            Opt::At => (c"AT", c"time"),
            Opt::Tz => (c"TZ", c"zone"),
            Opt::Shadow => (c"SHADOW", c"shadow"),
        }
    }

    /// What it does, in a line: COMMAND DOCS-like help for commands.json and the
    /// typed clients' documentation (their generators read it there).
    pub const fn summary(self) -> &'static str {
        match self {
            Opt::Cost => "how many units the call takes, all or nothing (default 1; 0 looks without taking)",
            Opt::Refund => "give back up to n units taken earlier (the work they paid for did not happen)",
            Opt::Debit => "charge n units after the fact, into debt if need be (a cost known only once the work is done)",
            Opt::Delay => "schedule instead of reject: an allowed call's retry_after is how long to wait before acting",
            Opt::Every => "a period of n units (month EVERY 3: the calendar quarter; default 1)",
            Opt::On => "the day a period starts: mon ... sun for week, 1 ... 31 for month (clamped to its last day), MM-DD for year",
            Opt::At => "the local time of day a period starts, hh:mm (default 00:00)",
            Opt::Tz => "the time zone the calendar is kept in: UTC (default), +hh:mm or a tz database name",
            Opt::Shadow => "try the limit without enforcing it: the same reply and writes, counted apart in INFO rl; in RL.ALL the policy never vetoes the call",
        }
    }

    /// The options it cannot be given with.
    pub const fn excludes(self) -> &'static [Opt] {
        match self {
            Opt::Cost => &[Opt::Refund, Opt::Debit],
            Opt::Refund => &[Opt::Cost, Opt::Debit, Opt::Delay],
            Opt::Debit => &[Opt::Cost, Opt::Refund, Opt::Delay],
            Opt::Delay => &[Opt::Refund, Opt::Debit],
            Opt::Every | Opt::On | Opt::At | Opt::Tz => &[],
            Opt::Shadow => &[],
        }
    }

    /// Whether it is a flag, given without a value (SHADOW).
    pub const fn is_flag(self) -> bool {
        matches!(self, Opt::Shadow)
    }
}

/// The options after the positional arguments: `COST n` (take n units, 1 by
/// default), `REFUND n` (give back up to n) or `DEBIT n` (charge n after the fact,
/// into debt if need be), and for RL.GCRA `DELAY max` (wait up to max for a turn
/// instead of being rejected), and `SHADOW` (a flag: the call is a trial, counted
/// apart); case-insensitive, each at most once, at most one of COST, REFUND and
/// DEBIT, DELAY with neither REFUND nor DEBIT.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Options {
    pub amount: Amount,
    /// `DELAY max` in ms, when given (only if the command takes it).
    pub delay: Option<u64>,
    /// `SHADOW` was given: the same reply and writes, counted as a trial.
    pub shadow: bool,
}

impl Options {
    /// A call of `amount` with no other option (a command that takes none).
    pub const fn of(amount: Amount) -> Options {
        Options {
            amount,
            delay: None,
            shadow: false,
        }
    }

    /// No option given: take one unit, no DELAY, not SHADOW.
    pub const NONE: Options = Options::of(Amount::Take(Cost::ONE));
}

/// Which options a command takes (its row's list), and the name an error gives it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Takes {
    /// The command (`RL.SLIDING`) or RL.ALL policy (`SLIDING`).
    pub name: &'static CStr,
    /// The options it takes.
    pub options: &'static [Opt],
}

impl Takes {
    pub fn has(self, o: Opt) -> bool {
        self.options.contains(&o)
    }

    /// What an error says is accepted: "COST n, REFUND n or DEBIT n, or DELAY max".
    pub fn expected(self) -> String {
        // SHADOW, a flag any limiter takes, is left out of the list.
        let amounts: Vec<String> = self
            .options
            .iter()
            .filter(|o| o.is_amount())
            .map(|o| format!("{} n", o.word()))
            .collect();
        let mut text = match amounts.split_last() {
            None => String::new(),
            Some((last, [])) => last.clone(),
            Some((last, rest)) => format!("{} or {last}", rest.join(", ")),
        };
        if self.has(Opt::Delay) {
            text.push_str(if text.is_empty() {
                "DELAY max"
            } else {
                ", or DELAY max"
            });
        }
        if self.has(Opt::Every) {
            text.push_str(", and EVERY n, ON anchor, AT hh:mm or TZ zone");
        }
        if text.is_empty() {
            text.push_str("no options");
        }
        text
    }

    /// The error for option `o` given to a command that does not take it.
    pub fn refuses(self, o: Opt) -> Error {
        Error::NotApplicable {
            option: o.word(),
            // Read as text only here, when the error is made.
            to: self.name.to_str().unwrap_or("RL"),
            takes: self.expected(),
        }
    }
}

/// Parses the options of a command that takes what `takes` says: one parser for
/// every command. An option RL has but this command does not take is named as not
/// applying to it; anything else is an unknown option.
pub fn options<'a>(rest: impl IntoIterator<Item = &'a [u8]>, takes: Takes) -> Result<Options> {
    let mut amount: Option<(Opt, Amount)> = None;
    let mut delay = None;
    let mut shadow = false;
    let mut it = rest.into_iter();
    while let Some(name) = it.next() {
        let Some(option) = Opt::named(name) else {
            return Err(Error::UnknownOption {
                option: printable(name),
                expected: takes.expected(),
            });
        };
        if !takes.has(option) {
            return Err(takes.refuses(option));
        }
        if option.is_flag() {
            if shadow {
                return Err(Error::DuplicateOption(option.word()));
            }
            shadow = true;
            continue;
        }
        let value = it.next();
        if option.is_calendar() {
            // Read with the unit they depend on, by the calendar's parser.
            value.ok_or(Error::MissingValue(option.word()))?;
            continue;
        }
        if option == Opt::Delay {
            if delay.is_some() && value.is_some() {
                return Err(Error::DuplicateOption("DELAY"));
            }
            delay = Some(delay_option(value)?);
            continue;
        }
        let word = option.word();
        let value = value.ok_or(Error::MissingValue(word))?;
        if let Some((given, _)) = amount {
            if given == option {
                return Err(Error::DuplicateOption(word));
            }
            // Named in a fixed order: COST, REFUND, DEBIT.
            return Err(match (given, option) {
                (Opt::Debit, first) | (first, Opt::Debit) => {
                    Error::Exclusive(first.word(), "DEBIT")
                }
                _ => Error::Exclusive("COST", "REFUND"),
            });
        }
        amount = Some((
            option,
            match option {
                Opt::Refund => Amount::Refund(cost(word, value)?),
                Opt::Debit => Amount::Debit(count(word, value)?),
                _ => Amount::Take(cost(word, value)?),
            },
        ));
    }
    match (delay, amount.map(|(_, a)| a)) {
        (Some(_), Some(Amount::Refund(_))) => Err(Error::Exclusive("DELAY", "REFUND")),
        (Some(_), Some(Amount::Debit(_))) => Err(Error::Exclusive("DELAY", "DEBIT")),
        (delay, amount) => Ok(Options {
            amount: amount.unwrap_or(Options::NONE.amount),
            delay,
            shadow,
        }),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::algorithms::{Count, MAX_COUNT};

    /// RL.SLIDING's options (COST, REFUND), RL.FIXED's (and DEBIT), RL.GCRA's (and DELAY).
    const SLIDING: Takes = crate::table::SLIDING.takes();
    const FIXED: Takes = crate::table::FIXED.takes();
    const GCRA: Takes = crate::table::GCRA.takes();

    #[test]
    fn shadow_is_a_flag_given_once_anywhere_among_the_options() {
        let parsed = |args: &[&str], takes| {
            let bytes: Vec<&[u8]> = args.iter().map(|a| a.as_bytes()).collect();
            options(bytes, takes).map(|o| (o.amount, o.delay, o.shadow))
        };
        let take = |n| Amount::Take(Cost::new(n).unwrap());
        assert_eq!(parsed(&[], FIXED), Ok((take(1), None, false)));
        assert_eq!(parsed(&["SHADOW"], SLIDING), Ok((take(1), None, true)));
        assert_eq!(
            parsed(&["shadow", "COST", "3"], FIXED),
            Ok((take(3), None, true))
        );
        assert_eq!(
            parsed(&["COST", "0", "DELAY", "1s", "Shadow"], GCRA),
            Ok((take(0), Some(1000), true))
        );
        assert_eq!(
            parsed(&["SHADOW", "COST", "1", "SHADOW"], FIXED),
            Err(Error::DuplicateOption("SHADOW"))
        );
        // Not read as COST's value, nor listed among what is expected.
        assert_eq!(
            parsed(&["COST", "SHADOW"], FIXED),
            Err(Error::BadCount {
                name: "COST",
                min: 0
            })
        );
        assert_eq!(
            parsed(&["SHADOW", "1"], FIXED),
            Err(Error::UnknownOption {
                option: "1".into(),
                expected: "COST n, REFUND n or DEBIT n".into()
            })
        );
        let acquire = crate::table::ACQUIRE.takes();
        assert_eq!(
            parsed(&["SHADOW"], acquire),
            Err(acquire.refuses(Opt::Shadow))
        );
    }

    #[test]
    fn cost_or_refund_is_optional_case_insensitive_and_given_once() {
        let amount = |args: &[&str]| {
            let bytes: Vec<&[u8]> = args.iter().map(|a| a.as_bytes()).collect();
            options(bytes, SLIDING).map(|o| match o.amount {
                Amount::Take(n) => ("COST", n.get()),
                Amount::Refund(n) => ("REFUND", n.get()),
                Amount::Debit(n) => ("DEBIT", n.get()),
            })
        };
        assert_eq!(amount(&[]), Ok(("COST", 1)));
        assert_eq!(amount(&["COST", "3"]), Ok(("COST", 3)));
        assert_eq!(amount(&["cost", "0"]), Ok(("COST", 0)));
        assert_eq!(
            amount(&["CoSt", "9007199254740991"]),
            Ok(("COST", MAX_COUNT))
        );
        assert_eq!(amount(&["REFUND", "2"]), Ok(("REFUND", 2)));
        assert_eq!(amount(&["refund", "0"]), Ok(("REFUND", 0)));
        let bad = |name| Err(Error::BadCount { name, min: 0 });
        assert_eq!(amount(&["COST", "9007199254740992"]), bad("COST"));
        assert_eq!(amount(&["COST", "-1"]), bad("COST"));
        assert_eq!(amount(&["COST", "1.5"]), bad("COST"));
        assert_eq!(amount(&["REFUND", "-1"]), bad("REFUND"));
        assert_eq!(amount(&["COST"]), Err(Error::MissingValue("COST")));
        assert_eq!(amount(&["REFUND"]), Err(Error::MissingValue("REFUND")));
        assert_eq!(
            amount(&["COST", "1", "COST", "2"]),
            Err(Error::DuplicateOption("COST"))
        );
        assert_eq!(
            amount(&["REFUND", "1", "refund", "2"]),
            Err(Error::DuplicateOption("REFUND"))
        );
        assert_eq!(
            amount(&["COST", "1", "REFUND", "2"]),
            Err(Error::Exclusive("COST", "REFUND"))
        );
        assert_eq!(
            amount(&["REFUND", "1", "COST", "2"]),
            Err(Error::Exclusive("COST", "REFUND"))
        );
        assert_eq!(
            amount(&["COST", "1", "cost"]),
            Err(Error::MissingValue("COST"))
        );
        assert_eq!(
            amount(&["WEIGHT", "2"]),
            Err(Error::UnknownOption {
                option: "WEIGHT".into(),
                expected: "COST n or REFUND n".into()
            })
        );
        assert_eq!(
            amount(&["COST", "1", "EX"]),
            Err(Error::UnknownOption {
                option: "EX".into(),
                expected: "COST n or REFUND n".into()
            })
        );
    }

    #[test]
    fn delay_takes_a_duration_from_zero_and_excludes_refund() {
        let parsed = |args: &[&str], takes_delay| {
            let bytes: Vec<&[u8]> = args.iter().map(|a| a.as_bytes()).collect();
            let takes = if takes_delay { GCRA } else { FIXED };
            options(bytes, takes).map(|o| (o.amount, o.delay))
        };
        let take = |n| Amount::Take(Cost::new(n).unwrap());
        assert_eq!(parsed(&[], true), Ok((take(1), None)));
        assert_eq!(parsed(&["DELAY", "250ms"], true), Ok((take(1), Some(250))));
        assert_eq!(parsed(&["delay", "0"], true), Ok((take(1), Some(0))));
        assert_eq!(parsed(&["Delay", "0ms"], true), Ok((take(1), Some(0))));
        assert_eq!(
            parsed(&["COST", "3", "DELAY", "3650d"], true),
            Ok((take(3), Some(315_360_000_000)))
        );
        assert_eq!(
            parsed(&["DELAY", "2s", "cost", "0"], true),
            Ok((take(0), Some(2000)))
        );
        let bad = Err(Error::BadDuration {
            name: "DELAY",
            min: "0",
        });
        for value in ["-1", "1.5s", "00", "3651d", "1w", "", "x"] {
            assert_eq!(parsed(&["DELAY", value], true), bad, "{value:?}");
        }
        assert_eq!(parsed(&["DELAY"], true), Err(Error::MissingValue("DELAY")));
        assert_eq!(
            parsed(&["DELAY", "1s", "DELAY", "1s"], true),
            Err(Error::DuplicateOption("DELAY"))
        );
        for line in [
            &["DELAY", "1s", "REFUND", "1"],
            &["REFUND", "1", "DELAY", "0"],
        ] {
            assert_eq!(
                parsed(line, true),
                Err(Error::Exclusive("DELAY", "REFUND")),
                "{line:?}"
            );
        }
        assert_eq!(
            parsed(&["DELAY", "1s"], false),
            Err(Error::NotApplicable {
                option: "DELAY",
                to: "RL.FIXED",
                takes: "COST n, REFUND n or DEBIT n".into()
            })
        );
        assert_eq!(
            parsed(&["WAIT", "1s"], true),
            Err(Error::UnknownOption {
                option: "WAIT".into(),
                expected: "COST n, REFUND n or DEBIT n, or DELAY max".into()
            })
        );
    }

    #[test]
    fn debit_takes_a_count_from_one_and_excludes_cost_refund_and_delay() {
        let parsed = |args: &[&str], takes| {
            let bytes: Vec<&[u8]> = args.iter().map(|a| a.as_bytes()).collect();
            options(bytes, takes).map(|o| (o.amount, o.delay))
        };
        let debit = |n| Ok((Amount::Debit(Count::new(n).unwrap()), None));
        assert_eq!(parsed(&["DEBIT", "6"], FIXED), debit(6));
        assert_eq!(parsed(&["debit", "1"], GCRA), debit(1));
        assert_eq!(
            parsed(&["Debit", "9007199254740991"], FIXED),
            debit(MAX_COUNT)
        );
        let bad = Err(Error::BadCount {
            name: "DEBIT",
            min: 1,
        });
        for value in ["0", "-1", "9007199254740992", "1.5", "01", "", "x"] {
            assert_eq!(parsed(&["DEBIT", value], FIXED), bad, "{value:?}");
        }
        assert_eq!(parsed(&["DEBIT"], FIXED), Err(Error::MissingValue("DEBIT")));
        assert_eq!(
            parsed(&["DEBIT", "1", "debit", "2"], FIXED),
            Err(Error::DuplicateOption("DEBIT"))
        );
        for (line, first) in [
            (&["COST", "1", "DEBIT", "1"], "COST"),
            (&["DEBIT", "1", "COST", "1"], "COST"),
            (&["REFUND", "1", "DEBIT", "1"], "REFUND"),
            (&["DEBIT", "1", "refund", "1"], "REFUND"),
        ] {
            assert_eq!(
                parsed(line, GCRA),
                Err(Error::Exclusive(first, "DEBIT")),
                "{line:?}"
            );
        }
        for line in [
            &["DELAY", "1s", "DEBIT", "1"],
            &["DEBIT", "1", "DELAY", "0"],
        ] {
            assert_eq!(
                parsed(line, GCRA),
                Err(Error::Exclusive("DELAY", "DEBIT")),
                "{line:?}"
            );
        }
        // A command without DEBIT names the option and itself, whatever follows.
        for line in [
            &["DEBIT", "1"][..],
            &["DEBIT"],
            &["COST", "1", "DEBIT", "x"],
        ] {
            let e = parsed(line, SLIDING).unwrap_err();
            assert_eq!(
                e,
                Error::NotApplicable {
                    option: "DEBIT",
                    to: "RL.SLIDING",
                    takes: "COST n or REFUND n".into()
                },
                "{line:?}"
            );
            assert_eq!(
                e.to_string(),
                "syntax error: DEBIT does not apply to RL.SLIDING, which takes COST n or REFUND n"
            );
        }
        assert_eq!(
            parsed(&["WEIGHT", "1"], SLIDING),
            Err(Error::UnknownOption {
                option: "WEIGHT".into(),
                expected: "COST n or REFUND n".into()
            })
        );
    }

    #[test]
    fn echoed_options_are_escaped_and_truncated() {
        let long = [b'x'; 100];
        let e = options([&long[..]], SLIDING).unwrap_err().to_string();
        assert!(e.len() < 100, "{e}");
        assert!(e.contains("xxx..."));
        let e = options([&b"a\r\nb\x00\xff"[..]], SLIDING)
            .unwrap_err()
            .to_string();
        assert!(
            !e.contains('\r') && !e.contains('\n') && !e.contains('\0'),
            "{e:?}"
        );
    }
}
