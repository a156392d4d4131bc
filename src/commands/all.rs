//! `RL.ALL numkeys key [key …] policy [policy …] [COST n | REFUND n | DEBIT n]`
//!
//! Several limits at once, all or nothing: every key is decided at one instant as
//! its own command would decide it, and written (and propagated) exactly as its own
//! command writes it only if every key allows. A policy is one of
//! `FIXED limit window`, `SLIDING limit window`, `BUCKET capacity tokens period`,
//! `GCRA capacity tokens period [DELAY max]`, `SLIDINGCOUNTER limit window`,
//! `ACQUIRE limit ttl id`, one per key in key order; COST (or REFUND, or DEBIT)
//! applies to every key but an ACQUIRE (one lease; REFUND is an error there).
//! DEBIT always allows, so it writes every key; a SLIDING or ACQUIRE policy takes
//! none (an error naming the policy). A GCRA policy
//! with DELAY schedules its key as RL.GCRA does: an allowed call's combined
//! retry_after is the longest wait, when every key's turn has come.
//!
//! Reply: numkeys + 1 arrays of RL's five integers, the combined decision first,
//! then each key's.

use super::acquire::Acquire;
use super::bucket::Bucket;
use super::fixed::Fixed;
use super::framework::{fields, Handler, Inline, Limiter, MAX_COUNTED_KEYS};
use super::gcra::Gcra;
use super::sliding::Sliding;
use super::sliding_counter::SlidingCounter;
use super::spec::{Arg, ArgKind, CostArg, Keys, Spec};
use crate::algorithms::{Amount, Cost, Decision, Millis, Outcome, RetryAfter};
use crate::args;
use crate::error::{Error, Result};
use crate::server::{self, Argv, Context};
use crate::stats::Counters;
use crate::storage::Key;

pub struct All;

static COUNTERS: Counters = Counters::new();

/// The policies RL.ALL takes: each is a single-key command's parameters, parsed,
/// decided and written by that command.
macro_rules! policies {
    ($($variant:ident = $word:literal),* $(,)?) => {
        /// Each policy's name (its token in COMMAND DOCS), parameters, and whether
        /// it takes `[DELAY max]`.
        pub(super) const POLICIES: &[(&std::ffi::CStr, &[Arg], bool)] = &[
            $((
                $word,
                <$variant as Limiter>::DEFINITION.args.split_at(1).1,
                <$variant as Limiter>::DEFINITION.delay,
            )),*
        ];

        /// One key's limit: a command and its parameters.
        enum Policy {
            $($variant(<$variant as Limiter>::Params)),*
        }

        /// What one key's command writes when the call is allowed.
        enum Write {
            $($variant(<$variant as Limiter>::Write)),*
        }

        impl Policy {
            /// The policy at the start of `args`, how many arguments it takes and
            /// whether it carries a DELAY; None when `args` does not start with a
            /// policy name.
            fn parse(args: &[&[u8]]) -> Option<Result<(Policy, usize, bool)>> {
                let word = args.first()?;
                $(
                    if word.eq_ignore_ascii_case($word.to_bytes()) {
                        let spec = &<$variant as Limiter>::DEFINITION;
                        let n = spec.args.len() - 1;
                        let Some(params) = args.get(1..=n) else {
                            return Some(Err(policy_args($word, spec)));
                        };
                        let parsed = <$variant as Limiter>::parse_params(params).and_then(|p| {
                            policy_delay::<$variant>(p, &args[1 + n..])
                        });
                        return Some(parsed.map(|(p, used)| {
                            (Policy::$variant(p), 1 + n + used, used > 0)
                        }));
                    }
                )*
                None
            }

            /// The policy's name, and whether its command takes `DEBIT n`.
            fn debit(&self) -> (&'static std::ffi::CStr, bool) {
                match self {
                    $(Policy::$variant(_) => ($word, <$variant as Limiter>::DEFINITION.debit)),*
                }
            }

            /// Decides on `key` as its command would; writes nothing.
            fn decide(&self, key: &Key, now: Millis, amount: Amount) -> Result<Outcome<Write>> {
                match self {
                    $(Policy::$variant(params) => {
                        let out = <$variant as Limiter>::decide(key, params, now, amount)?;
                        Ok(Outcome {
                            decision: out.decision,
                            store: out.store.map(Write::$variant),
                        })
                    })*
                }
            }
        }

        impl Write {
            fn store(self, key: &Key) -> Result<()> {
                match self {
                    $(Write::$variant(w) => <$variant as Limiter>::store(key, w)),*
                }
            }
        }
    };
}

policies! {
    Fixed = c"FIXED",
    Sliding = c"SLIDING",
    Bucket = c"BUCKET",
    Gcra = c"GCRA",
    SlidingCounter = c"SLIDINGCOUNTER",
    Acquire = c"ACQUIRE",
}

/// A policy's `DELAY max` at the start of `rest`, if its command takes one
/// (GCRA): the parameters with it applied, and the arguments it took (0 or 2).
fn policy_delay<L: Limiter>(params: L::Params, rest: &[&[u8]]) -> Result<(L::Params, usize)> {
    match rest {
        [word, rest @ ..] if L::DEFINITION.delay && word.eq_ignore_ascii_case(b"DELAY") => {
            let value = rest.first().ok_or(Error::MissingValue("DELAY"))?;
            let max_ms = args::delay("DELAY", value)?;
            if rest
                .get(1)
                .is_some_and(|w| w.eq_ignore_ascii_case(b"DELAY"))
            {
                return Err(Error::DuplicateOption("DELAY"));
            }
            Ok((L::delayed(params, max_ms), 2))
        }
        _ => Ok((params, 0)),
    }
}

/// "policy FIXED takes limit window".
fn policy_args(policy: &'static std::ffi::CStr, spec: &Spec) -> Error {
    let names: Vec<&str> = spec.args[1..]
        .iter()
        .map(|a| a.name.to_str().unwrap_or("?"))
        .collect();
    Error::PolicyArgs {
        policy: policy.to_str().unwrap_or("?"),
        params: names.join(" "),
    }
}

/// A parsed call: a policy per key (the keys follow numkeys in argv, in the same
/// order), and what to take or give back.
struct Call {
    policies: Vec<Policy>,
    amount: Amount,
}

impl Call {
    /// numkeys: parsing checked there is exactly one policy per key.
    fn keys(&self) -> usize {
        self.policies.len()
    }
}

/// The options of the call, after the policies: COST, REFUND or DEBIT.
const TAKES: args::Takes = All::DEFINITION.takes();

/// Parses everything after the command name.
fn parse(args: &[&[u8]]) -> Result<Call> {
    let (numkeys, rest) = args.split_first().ok_or(Error::TooFewKeys(0))?;
    let numkeys = args::integer("numkeys", numkeys, 1, MAX_COUNTED_KEYS)?;
    // numkeys <= 16: it fits a usize.
    let keys = numkeys as usize;
    if rest.len() < keys {
        return Err(Error::TooFewKeys(numkeys));
    }
    let (names, mut rest) = rest.split_at(keys);
    for (i, name) in names.iter().enumerate() {
        if names[..i].contains(name) {
            return Err(Error::DuplicateKey(args::printable(name)));
        }
    }
    let mut policies = Vec::with_capacity(keys);
    let mut delayed = false;
    while let Some(parsed) = Policy::parse(rest) {
        let (policy, used, delay) = parsed?;
        policies.push(policy);
        delayed |= delay;
        rest = &rest[used..];
    }
    if policies.len() != keys {
        // Short of policies and not at an option: a word that is no policy.
        let at_option = rest.first().is_none_or(|w| {
            w.eq_ignore_ascii_case(b"COST")
                || w.eq_ignore_ascii_case(b"REFUND")
                || w.eq_ignore_ascii_case(b"DEBIT")
        });
        return Err(match rest.first() {
            Some(word) if policies.len() < keys && !at_option => {
                Error::UnknownPolicy(args::printable(word))
            }
            _ => Error::PolicyCount {
                keys,
                policies: policies.len(),
            },
        });
    }
    let amount = args::options(rest.iter().copied(), TAKES)?.amount;
    match amount {
        Amount::Refund(_) if delayed => return Err(Error::Exclusive("DELAY", "REFUND")),
        Amount::Debit(_) if delayed => return Err(Error::Exclusive("DELAY", "DEBIT")),
        Amount::Debit(_) => {
            if let Some((word, _)) = policies.iter().map(Policy::debit).find(|(_, d)| !d) {
                return Err(Error::NotApplicable {
                    option: "DEBIT",
                    to: word.to_str().unwrap_or("?"),
                });
            }
        }
        Amount::Take(_) | Amount::Refund(_) => {}
    }
    Ok(Call { policies, amount })
}

/// Parses an RL.ALL line after the command name, for the fuzzer: Ok or an error,
/// never a panic.
#[cfg(feature = "fuzzing")]
pub fn parses(args: &[&[u8]]) -> Result<usize> {
    Ok(parse(args)?.keys())
}

/// The combined decision over every key's reply: allowed if all are; the
/// smallest remaining (the first such key's, with its limit); retry_after when
/// allowed the longest wait of a scheduled key (a GCRA policy with DELAY: act when
/// every key's turn has come), else 0; when rejected -1 if some key never allows,
/// else the longest wait among the keys that reject; the longest reset_after.
fn combine(per_key: &[Decision]) -> Decision {
    let allowed = per_key.iter().all(|d| d.allowed);
    let tightest = per_key.iter().min_by_key(|d| d.remaining);
    let retry_after = if allowed {
        let longest = per_key
            .iter()
            .filter_map(|d| match d.retry_after {
                RetryAfter::Delayed(ms) => Some(ms),
                RetryAfter::Now | RetryAfter::Ms(_) | RetryAfter::Never => None,
            })
            .max();
        longest.map_or(RetryAfter::Now, RetryAfter::Delayed)
    } else if per_key.iter().any(|d| d.retry_after == RetryAfter::Never) {
        RetryAfter::Never
    } else {
        let longest = per_key
            .iter()
            .filter_map(|d| match d.retry_after {
                RetryAfter::Ms(ms) => Some(ms),
                RetryAfter::Now | RetryAfter::Delayed(_) | RetryAfter::Never => None,
            })
            .max();
        RetryAfter::Ms(longest.unwrap_or(0))
    };
    Decision {
        allowed,
        limit: tightest.map_or(0, |d| d.limit),
        remaining: tightest.map_or(0, |d| d.remaining),
        retry_after,
        reset_after_ms: per_key.iter().map(|d| d.reset_after_ms).max().unwrap_or(0),
    }
}

impl Handler for All {
    const DEFINITION: Spec = Spec {
        name: c"RL.ALL",
        // getkeys-api: Cluster finds the keys by asking (report_counted_keys).
        flags: c"write deny-oom getkeys-api",
        summary: c"Checks several limits at one instant and consumes from all of them or none",
        complexity: c"The sum of each key's command's complexity",
        args: &[
            Arg::new(c"numkeys", ArgKind::Integer),
            Arg::new(c"key", ArgKind::Keys),
            Arg::new(c"policy", ArgKind::Policies),
        ],
        keys: Keys::Counted,
        // RL.ALL 1 key FIXED limit window
        min_argc: 6,
        cost: CostArg::Option,
        optional: false,
        // A GCRA policy carries its own DELAY: not an option of the call.
        delay: false,
        debit: true,
    };
    const STATS: &'static Counters = &COUNTERS;
    /// The combined decision, then each key's.
    type Decided = Vec<Decision>;

    fn run(ctx: Context, argv: &Argv) -> Result<Vec<Decision>> {
        let mut inline = Inline::default();
        let call = parse(inline.args_from(argv, 1))?;
        let now = server::now_ms();
        let keys: Vec<Key> = (0..call.keys())
            .map(|i| ctx.open_key(argv, 2 + i))
            .collect();
        let mut outcomes = Vec::with_capacity(call.keys());
        for (key, policy) in keys.iter().zip(&call.policies) {
            outcomes.push(policy.decide(key, now, call.amount)?);
        }
        let mut decisions: Vec<Decision> = Vec::with_capacity(call.keys() + 1);
        if outcomes.iter().all(|o| o.decision.allowed) {
            for (key, outcome) in keys.iter().zip(outcomes) {
                if let Some(write) = outcome.store {
                    write.store(key)?;
                }
                decisions.push(outcome.decision);
            }
        } else {
            // Nothing is written. Each key answers its real state, as COST 0 reads
            // it, and its own verdict on this cost.
            for ((key, policy), outcome) in keys.iter().zip(&call.policies).zip(outcomes) {
                let state = policy.decide(key, now, Amount::Take(Cost::ZERO))?.decision;
                decisions.push(Decision {
                    remaining: state.remaining,
                    reset_after_ms: state.reset_after_ms,
                    ..outcome.decision
                });
            }
        }
        decisions.insert(0, combine(&decisions));
        Ok(decisions)
    }

    fn allowed(decided: &Vec<Decision>) -> bool {
        decided.first().is_some_and(|d| d.allowed)
    }

    fn reply(ctx: Context, decided: &Vec<Decision>) {
        ctx.reply_array(decided.len());
        for d in decided {
            ctx.reply_integers(fields(d));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse_line(line: &str) -> Result<Call> {
        let args: Vec<&[u8]> = line.split(' ').map(str::as_bytes).collect();
        parse(&args)
    }

    fn decision(
        allowed: bool,
        limit: u64,
        remaining: u64,
        retry: RetryAfter,
        reset: u64,
    ) -> Decision {
        Decision {
            allowed,
            limit,
            remaining,
            retry_after: retry,
            reset_after_ms: reset,
        }
    }

    #[test]
    fn parses_keys_then_one_policy_per_key_then_the_amount() {
        let call =
            parse_line("3 a b c fixed 10 1s BUCKET 5 1 1m SlidingCounter 100 1d REFUND 2").unwrap();
        assert_eq!(call.keys(), 3);
        assert!(matches!(
            call.policies[..],
            [
                Policy::Fixed(_),
                Policy::Bucket(_),
                Policy::SlidingCounter(_)
            ]
        ));
        assert_eq!(call.amount, Amount::Refund(Cost::new(2).unwrap()));
        let call = parse_line("1 k GCRA 5 1 1s").unwrap();
        assert_eq!(call.amount, Amount::Take(Cost::ONE));
        let call = parse_line(
            "4 a b c d FIXED 5 1s BUCKET 5 1 1s GCRA 5 1 1s SLIDINGCOUNTER 5 1s DEBIT 6",
        )
        .unwrap();
        assert_eq!(
            call.amount,
            Amount::Debit(crate::algorithms::Count::new(6).unwrap())
        );
        // A GCRA policy carries its DELAY; the next policy follows it.
        let call = parse_line("2 a b gcra 5 1 1s delay 3s FIXED 10 1m COST 2").unwrap();
        assert!(matches!(
            call.policies[..],
            [Policy::Gcra(_), Policy::Fixed(_)]
        ));
        assert_eq!(call.amount, Amount::Take(Cost::new(2).unwrap()));
        let delayed = |line| match parse_line(line).unwrap().policies[0] {
            Policy::Gcra(e) => e,
            _ => unreachable!(),
        };
        assert_ne!(
            delayed("1 a GCRA 5 1 1s DELAY 3s"),
            delayed("1 a GCRA 5 1 1s")
        );
        assert_eq!(
            delayed("1 a GCRA 5 1 1s DELAY 0"),
            delayed("1 a GCRA 5 1 1s")
        );
    }

    #[test]
    fn names_what_is_wrong_with_a_bad_line() {
        let cases = [
            ("0 a FIXED 1 1s", "numkeys must be an integer from 1 to 16"),
            ("3 a b", "numkeys is 3, but fewer keys follow it"),
            ("2 a a FIXED 1 1s FIXED 1 1s", "key 'a' is given more than once"),
            ("2 a b FIXED 1 1s", "one policy per key, in key order: numkeys is 2, policies given 1"),
            ("1 a FIXED 1 1s SLIDING 1 1s", "one policy per key, in key order: numkeys is 1, policies given 2"),
            ("2 a b FIXED 1 1s TOKEN 1 1s", "syntax error: unknown policy 'TOKEN', expected FIXED, SLIDING, BUCKET, GCRA, SLIDINGCOUNTER or ACQUIRE"),
            ("1 a GCRA 1 1", "syntax error: policy GCRA takes capacity tokens period"),
            ("1 a FIXED 1 1s COST 1 REFUND 1", "syntax error: COST and REFUND exclude each other"),
            ("1 a GCRA 5 1 1s DELAY 1s REFUND 1", "syntax error: DELAY and REFUND exclude each other"),
            ("1 a GCRA 5 1 1s DELAY", "syntax error: DELAY needs a value"),
            ("1 a GCRA 5 1 1s DELAY 1s DELAY 2s", "syntax error: DELAY given more than once"),
            ("1 a GCRA 5 1 1s DELAY -1", "DELAY must be a duration from 0 to 10 years: an integer with an optional unit ms, s, m, h or d (a bare integer means seconds)"),
            ("1 a FIXED 5 1s DELAY 1s", "syntax error: unknown option 'DELAY', expected COST n, REFUND n or DEBIT n"),
            ("1 a GCRA 5 1 1s COST 1 DELAY 1s", "syntax error: unknown option 'DELAY', expected COST n, REFUND n or DEBIT n"),
            ("2 a b FIXED 5 1s SLIDING 5 1s DEBIT 1", "syntax error: DEBIT does not apply to SLIDING"),
            ("2 a b ACQUIRE 5 1s id GCRA 5 1 1s debit 1", "syntax error: DEBIT does not apply to ACQUIRE"),
            ("1 a GCRA 5 1 1s DELAY 1s DEBIT 1", "syntax error: DELAY and DEBIT exclude each other"),
            ("1 a FIXED 5 1s COST 1 DEBIT 1", "syntax error: COST and DEBIT exclude each other"),
            ("1 a FIXED 5 1s DEBIT 0", "DEBIT must be an integer from 1 to 9007199254740991"),
            ("2 a b FIXED 5 1s DEBIT 1", "one policy per key, in key order: numkeys is 2, policies given 1"),
            ("2 a b FIXED 5 1s DELAY 1s GCRA 5 1 1s", "syntax error: unknown policy 'DELAY', expected FIXED, SLIDING, BUCKET, GCRA, SLIDINGCOUNTER or ACQUIRE"),
        ];
        for (line, want) in cases {
            assert_eq!(
                parse_line(line).err().map(|e| e.to_string()).as_deref(),
                Some(want),
                "{line}"
            );
        }
    }

    #[test]
    fn combines_the_tightest_remaining_the_longest_wait_and_reset() {
        let per_key = [
            decision(true, 10, 4, RetryAfter::Now, 900),
            decision(true, 3, 1, RetryAfter::Now, 5000),
            decision(true, 7, 1, RetryAfter::Now, 100),
        ];
        // Ties for the smallest remaining: the first such key's limit.
        assert_eq!(
            combine(&per_key),
            decision(true, 3, 1, RetryAfter::Now, 5000)
        );
        let per_key = [
            decision(false, 10, 0, RetryAfter::Ms(300), 900),
            decision(true, 3, 2, RetryAfter::Now, 5000),
            decision(false, 7, 0, RetryAfter::Ms(700), 700),
        ];
        assert_eq!(
            combine(&per_key),
            decision(false, 10, 0, RetryAfter::Ms(700), 5000)
        );
        let never = [per_key[0], decision(false, 2, 2, RetryAfter::Never, 0)];
        assert_eq!(combine(&never).retry_after, RetryAfter::Never);
        // Allowed with scheduled keys (GCRA with DELAY): act after the longest wait.
        let scheduled = [
            decision(true, 10, 4, RetryAfter::Delayed(300), 900),
            decision(true, 3, 2, RetryAfter::Now, 5000),
            decision(true, 7, 0, RetryAfter::Delayed(700), 1700),
        ];
        assert_eq!(
            combine(&scheduled),
            decision(true, 7, 0, RetryAfter::Delayed(700), 5000)
        );
        // Rejected: a key that would be scheduled does not set the wait.
        let rejected = [
            scheduled[2],
            decision(false, 3, 0, RetryAfter::Ms(200), 900),
        ];
        assert_eq!(combine(&rejected).retry_after, RetryAfter::Ms(200));
    }
}
