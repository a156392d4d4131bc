//! RL.ALL's line and its combined reply, apart from any key: the policies (each a
//! single-key command's parameters, parsed by that command's parser from the
//! table's row), the amount, and how the keys' decisions combine. Running a call
//! is `exec::all`'s, once for every backend: each key decided as its policy's
//! command decides it (`Runs`), all written only if every key allows.

use crate::algorithms::{Amount, Cost, Decision, RetryAfter};
use crate::args;
use crate::command::Settings;
use crate::commands;
use crate::error::{Error, Result};
use crate::options::{self, Opt, Takes};
use crate::table::{self, Command};

pub use crate::table::MAX_KEYS;

pub use crate::commands::Policy;

/// One policy read from an RL.ALL line.
struct Next {
    policy: Policy,
    /// The arguments it took: a SHADOW, its word, its parameters, its DELAY.
    used: usize,
    /// It carries its own DELAY.
    delayed: bool,
    /// SHADOW came before it.
    shadow: bool,
}

impl Policy {
    /// The policy at the start of `args` (after a SHADOW, if one comes first);
    /// None when `args` starts with neither a policy name nor SHADOW.
    fn next(args: &[&[u8]], settings: Settings) -> Option<Result<Next>> {
        let shadow = args.first().is_some_and(|w| is_shadow(w));
        if shadow {
            match args.get(1) {
                Some(w) if is_shadow(w) => return Some(Err(Error::DuplicateOption("SHADOW"))),
                Some(w) if is_policy(w) => {}
                _ => return Some(Err(Error::ShadowWithoutPolicy)),
            }
        }
        let skipped = usize::from(shadow);
        let args = &args[skipped..];
        let word = args.first()?;
        let (command, parse) = crate::commands::POLICIES
            .iter()
            .find(|(c, _)| word.eq_ignore_ascii_case(c.policy_token().to_bytes()))?;
        let n = command.params().len();
        let Some(p) = args.get(1..=n) else {
            return Some(Err(policy_args(command)));
        };
        let parsed = parse(p, settings)
            .map_err(|e| {
                // `PENALTY 5 15m 1m COST 0`: a parameter is missing, and the option
                // (or the next policy) was read in its place.
                if p.iter().any(|w| is_option(w) || is_policy(w)) {
                    policy_args(command)
                } else {
                    e
                }
            })
            .and_then(|policy| policy.trailing(&args[1 + n..]))
            .and_then(|(policy, own)| {
                let (policy, delay) = policy_delay(policy, &args[1 + n + own..])?;
                Ok((policy, own + delay, delay > 0))
            });
        Some(parsed.map(|(policy, used, delayed)| Next {
            policy,
            used: skipped + 1 + n + used,
            delayed,
            shadow,
        }))
    }

    /// Whether the policy is only looked at, never charged (PENALTY: "is this
    /// offender blocked?"): it is decided with COST 0 whatever the call's amount,
    /// and its key is never written by RL.ALL (strikes are RL.PENALTY's).
    pub fn watches(&self) -> bool {
        self.command().looked_at
    }

    /// What this policy's key is decided with, in a call for `amount`.
    pub fn amount(&self, amount: Amount) -> Amount {
        if self.watches() {
            Amount::Take(Cost::ZERO)
        } else {
            amount
        }
    }

    /// Whether the policy takes `DELAY max` (GCRA).
    pub fn takes_delay(&self) -> bool {
        self.command().delay()
    }
}

/// A policy's `DELAY max` at the start of `rest`, if it takes one (GCRA): the
/// policy with it applied, and the arguments it took (0 or 2).
fn policy_delay(policy: Policy, rest: &[&[u8]]) -> Result<(Policy, usize)> {
    match rest {
        [word, rest @ ..] if policy.takes_delay() && Opt::named(word) == Some(Opt::Delay) => {
            let max_ms = args::delay_option(rest.first().copied())?;
            if rest
                .get(1)
                .is_some_and(|w| Opt::named(w) == Some(Opt::Delay))
            {
                return Err(Error::DuplicateOption(Opt::Delay.word()));
            }
            Ok((policy.delayed(max_ms), 2))
        }
        _ => Ok((policy, 0)),
    }
}

/// The option `word` names, if an RL.ALL line may end with it: the call's own (its
/// row's), or a policy's (GCRA's DELAY). RL.QUOTA's calendar options follow their
/// policy, never the line's end: in a policy's place they are a bad parameter.
fn line_option(word: &[u8]) -> Option<Opt> {
    Opt::named(word).filter(|&o| {
        !o.is_calendar()
            && (table::ALL.takes_option(o) || commands::policies().any(|p| p.takes_option(o)))
    })
}

/// Whether `word` names an option RL.ALL takes after its policies.
fn is_option(word: &[u8]) -> bool {
    line_option(word).is_some()
}

/// Whether `word` is SHADOW, the word that makes the policy after it advisory.
fn is_shadow(word: &[u8]) -> bool {
    Opt::named(word) == Some(Opt::Shadow)
}

/// Whether `word` names a policy.
fn is_policy(word: &[u8]) -> bool {
    commands::policies().any(|c| word.eq_ignore_ascii_case(c.policy_token().to_bytes()))
}

/// "policy FIXED takes limit window".
fn policy_args(command: &Command) -> Error {
    let names: Vec<&str> = command
        .params()
        .iter()
        .map(|a| a.name.to_str().unwrap_or("?"))
        .collect();
    Error::PolicyArgs {
        policy: command.policy_word(),
        params: names.join(" "),
    }
}

/// A parsed call: a policy per key (the keys follow numkeys in argv, in the same
/// order), which of them are SHADOW, and what to take or give back.
#[derive(Debug)]
pub struct Call {
    pub policies: Vec<Policy>,
    /// Bit i: key i's policy came after SHADOW (at most [`MAX_KEYS`] keys).
    pub shadows: u32,
    pub amount: Amount,
}

impl Call {
    /// numkeys: parsing checked there is exactly one policy per key.
    pub fn keys(&self) -> usize {
        self.policies.len()
    }

    /// Whether key `i`'s policy is SHADOW: advisory, it never vetoes the call.
    pub fn shadow(&self, i: usize) -> bool {
        i < 32 && self.shadows & (1 << i) != 0
    }

    /// Whether key `i`'s policy decides the call (it is not SHADOW), or, when every
    /// policy is SHADOW, describes it.
    fn enforced(&self, i: usize) -> bool {
        !self.shadow(i) || self.shadows.count_ones() as usize == self.keys()
    }
}

/// Parses everything after the command name, under `settings`
/// (`rl.sliding-max-limit` bounds the SLIDING and ACQUIRE policies).
pub fn parse(args: &[&[u8]], settings: Settings) -> Result<Call> {
    let (numkeys, rest) = args.split_first().ok_or(Error::TooFewKeys(0))?;
    let numkeys = args::integer("numkeys", numkeys, 1, MAX_KEYS)?;
    // numkeys <= 16: it fits a usize.
    let keys = numkeys as usize;
    if rest.len() < keys {
        return Err(Error::TooFewKeys(numkeys));
    }
    let (names, mut tail) = rest.split_at(keys);
    for (i, name) in names.iter().enumerate() {
        if names[..i].contains(name) {
            return Err(Error::DuplicateKey(args::printable(name)));
        }
    }
    let mut policies = Vec::with_capacity(keys);
    let mut shadows = 0u32;
    let mut delayed = false;
    // Whether the last policy carries its own DELAY.
    let mut last_delayed = false;
    while let Some(parsed) = Policy::next(tail, settings) {
        let next = parsed?;
        if next.shadow && policies.len() < 32 {
            shadows |= 1 << policies.len();
        }
        policies.push(next.policy);
        delayed |= next.delayed;
        last_delayed = next.delayed;
        tail = &tail[next.used..];
    }
    if policies.len() != keys {
        return Err(count_error(rest, keys, policies.len(), tail.first()));
    }
    // The options after the last policy, in any order: the call's (COST n, REFUND n
    // or DEBIT n), and when that policy takes DELAY (GCRA), its own, DELAY max among
    // them; never SHADOW, which comes before a policy.
    let takes = Takes {
        options: match policies.last() {
            Some(last) if last.takes_delay() => &[Opt::Cost, Opt::Refund, Opt::Debit, Opt::Delay],
            _ => table::ALL.options,
        },
        ..table::ALL.takes()
    };
    let options = options::options(tail.iter().copied(), takes).map_err(|e| match e {
        Error::NotApplicable { option, .. } if option == Opt::Delay.word() => {
            Error::DelayWithoutGcra
        }
        e => e,
    })?;
    if let Some(max_ms) = options.delay {
        if last_delayed {
            return Err(Error::DuplicateOption(Opt::Delay.word()));
        }
        if let Some(last) = policies.pop() {
            policies.push(last.delayed(max_ms));
        }
        delayed = true;
    }
    match options.amount {
        Amount::Refund(_) if delayed => {
            return Err(Error::Exclusive(Opt::Delay.word(), Opt::Refund.word()))
        }
        Amount::Debit(_) if delayed => {
            return Err(Error::Exclusive(Opt::Delay.word(), Opt::Debit.word()))
        }
        // DEBIT applies to every key but a watched one: each policy must take it as
        // a policy (its row's policy options).
        Amount::Debit(_) => {
            if let Some(takes) = policies
                .iter()
                .filter(|p| !p.watches())
                .map(|p| p.command().policy_takes())
                .find(|takes| !takes.has(Opt::Debit))
            {
                return Err(takes.refuses(Opt::Debit));
            }
        }
        Amount::Take(_) | Amount::Refund(_) => {}
    }
    Ok(Call {
        policies,
        shadows,
        amount: options.amount,
    })
}

/// Why a line with `keys` keys does not hold as many policies (`parsed` were read,
/// and the next word is `next`): numkeys itself when another numkeys fits the
/// arguments; a DELAY after a policy that takes none; a word that is no policy;
/// else the count.
fn count_error(rest: &[&[u8]], keys: usize, parsed: usize, next: Option<&&[u8]>) -> Error {
    if let Some(fits) = fitting_numkeys(rest, keys) {
        return Error::NumkeysMismatch {
            numkeys: keys,
            fits,
        };
    }
    match next {
        Some(w) if parsed > 0 && Opt::named(w) == Some(Opt::Delay) => Error::DelayWithoutGcra,
        Some(w) if parsed < keys && !Opt::named(w).is_some_and(|o| table::ALL.takes_option(o)) => {
            Error::UnknownPolicy {
                word: args::printable(w),
                expected: commands::policy_words(),
            }
        }
        _ => Error::PolicyCount {
            keys,
            policies: parsed,
        },
    }
}

/// The smallest numkeys other than `numkeys` under which `rest` (the arguments
/// after numkeys) reads as that many keys, then as many policies, then nothing or
/// options: the shape alone, parameters unchecked.
fn fitting_numkeys(rest: &[&[u8]], numkeys: usize) -> Option<usize> {
    let most = rest.len().min(MAX_KEYS as usize);
    (1..=most).find(|&k| k != numkeys && policies_in(&rest[k..]) == Some(k))
}

/// How many policies `tail` starts with, by their names and parameter counts (a
/// GCRA's DELAY included), if only options or nothing follow them.
fn policies_in(tail: &[&[u8]]) -> Option<usize> {
    let mut count = 0;
    let mut i = 0;
    while let Some(mut word) = tail.get(i) {
        if is_shadow(word) {
            i += 1;
            let Some(after) = tail.get(i) else { break };
            word = after;
        }
        let Some(policy) =
            commands::policies().find(|p| word.eq_ignore_ascii_case(p.policy_token().to_bytes()))
        else {
            break;
        };
        i += 1 + policy.params().len();
        if policy.delay()
            && tail
                .get(i)
                .is_some_and(|w| Opt::named(w) == Some(Opt::Delay))
        {
            i += 2;
        }
        if i > tail.len() {
            return None;
        }
        count += 1;
    }
    tail.get(i).is_none_or(|w| is_option(w)).then_some(count)
}

impl Call {
    /// Whether the keys' decisions let the call write: every enforced key allows
    /// (a SHADOW key never vetoes; a call of SHADOW keys only always writes). A
    /// watched key (PENALTY) counts only for COST: REFUND and DEBIT settle what was
    /// already taken, whether or not the offender is blocked now.
    pub fn allows(&self, per_key: &[Decision]) -> bool {
        let charging = matches!(self.amount, Amount::Take(_));
        self.policies
            .iter()
            .zip(per_key)
            .enumerate()
            .all(|(i, (p, d))| self.shadow(i) || d.allowed || (p.watches() && !charging))
    }

    /// Whether key `i`, in a call that writes, is written: a SHADOW key only if it
    /// would allow on its own (as its own command would), every other key always.
    pub fn writes(&self, i: usize, own: &Decision) -> bool {
        !self.shadow(i) || own.allowed
    }

    /// The combined decision over every key's reply, from the enforced keys only
    /// (every key when all are SHADOW): allowed as [`Call::allows`] says; limit,
    /// remaining (the smallest: the first such key's, with its limit) and
    /// reset_after (the longest) from the limits alone, not from the watched keys
    /// (strikes are no rate limit, and RateLimit headers are built from these),
    /// unless every such policy is watched; retry_after when allowed the longest
    /// wait of a scheduled enforced key (a GCRA policy with DELAY: act when every
    /// key's turn has come), else 0; when rejected -1 if some key never allows,
    /// else the longest wait among the keys that reject (a block's end included).
    pub fn combine(&self, per_key: &[Decision]) -> Decision {
        let allowed = self.allows(per_key);
        // A SHADOW key schedules no one: only the enforced keys' waits count.
        let enforced = || {
            self.policies
                .iter()
                .zip(per_key)
                .enumerate()
                .filter(|(i, _)| !self.shadow(*i))
                .map(|(_, pd)| pd)
        };
        let described = || {
            self.policies
                .iter()
                .zip(per_key)
                .enumerate()
                .filter(|(i, _)| self.enforced(*i))
                .map(|(_, pd)| pd)
        };
        let limits = described().any(|(p, _)| !p.watches());
        let counted = || {
            described()
                .filter(move |(p, _)| !limits || !p.watches())
                .map(|(_, d)| d)
        };
        let tightest = counted().min_by_key(|d| d.remaining);
        let retry_after = if allowed {
            let longest = enforced()
                .filter_map(|(_, d)| match d.retry_after {
                    RetryAfter::Delayed(ms) => Some(ms),
                    RetryAfter::Now | RetryAfter::Ms(_) | RetryAfter::Never => None,
                })
                .max();
            longest.map_or(RetryAfter::Now, RetryAfter::Delayed)
        } else if enforced().any(|(_, d)| d.retry_after == RetryAfter::Never) {
            RetryAfter::Never
        } else {
            let longest = enforced()
                .filter_map(|(_, d)| match d.retry_after {
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
            reset_after_ms: counted().map(|d| d.reset_after_ms).max().unwrap_or(0),
        }
    }
}

/// A key's reply in a rejected call: its own verdict on this cost (allowed, limit,
/// retry_after), with its real state as COST 0 reads it (remaining, reset_after).
pub fn unchanged(own: Decision, state: Decision) -> Decision {
    Decision {
        remaining: state.remaining,
        reset_after_ms: state.reset_after_ms,
        ..own
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::params;

    fn parse_line(line: &str) -> Result<Call> {
        let args: Vec<&[u8]> = line.split(' ').map(str::as_bytes).collect();
        parse(&args, Settings::DEFAULT)
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
        // After the last policy, its DELAY and COST (or REFUND) come in any order.
        for line in [
            "1 a GCRA 5 1 1s DELAY 3s COST 2",
            "1 a GCRA 5 1 1s COST 2 DELAY 3s",
            "1 a GCRA 5 1 1s cost 2 delay 3s",
        ] {
            let call = parse_line(line).unwrap();
            assert_eq!(call.amount, Amount::Take(Cost::new(2).unwrap()), "{line}");
            assert_eq!(delayed(line), delayed("1 a GCRA 5 1 1s DELAY 3s"), "{line}");
        }
        let call = parse_line(
            "4 a b c d FIXED 5 1s BUCKET 5 1 1s GCRA 5 1 1s SLIDINGCOUNTER 5 1s DEBIT 6",
        )
        .unwrap();
        assert_eq!(
            call.amount,
            Amount::Debit(crate::algorithms::Count::new(6).unwrap())
        );
        let call = parse_line("2 a b PENALTY 5 15m 1m 1h fixed 10 1s cost 0").unwrap();
        assert!(matches!(
            call.policies[..],
            [Policy::Penalty(_), Policy::Fixed(_)]
        ));
        assert_eq!(call.amount, Amount::Take(Cost::ZERO));
        // A PENALTY policy is only looked at: any amount goes to the other keys.
        for line in [
            "2 a b PENALTY 5 15m 1m 1h FIXED 10 1s",
            "2 a b PENALTY 5 15m 1m 1h FIXED 10 1s REFUND 2",
            "2 a b PENALTY 5 15m 1m 1h FIXED 10 1s DEBIT 2",
            "1 a PENALTY 5 15m 1m 1h DEBIT 1",
        ] {
            assert!(parse_line(line).is_ok(), "{line}");
        }
        let call = parse_line("2 a b FIXED 5 1m GCRA 5 1 1s COST 0 DELAY 3s").unwrap();
        assert!(matches!(
            call.policies[..],
            [Policy::Fixed(_), Policy::Gcra(_)]
        ));
        assert_eq!(call.amount, Amount::Take(Cost::ZERO));
    }

    #[test]
    fn names_what_is_wrong_with_a_bad_line() {
        let cases = [
            ("0 a FIXED 1 1s", "numkeys must be an integer from 1 to 16"),
            ("3 a b", "numkeys is 3, but fewer keys follow it"),
            ("2 a a FIXED 1 1s FIXED 1 1s", "key 'a' is given more than once"),
            ("2 a b FIXED 1 1s", "one policy per key, in key order: numkeys is 2, policies given 1"),
            ("1 a FIXED 1 1s SLIDING 1 1s", "one policy per key, in key order: numkeys is 1, policies given 2"),
            ("2 a b FIXED 1 1s TOKEN 1 1s", "syntax error: unknown policy 'TOKEN', expected FIXED, SLIDING, BUCKET, GCRA, SLIDINGCOUNTER, ACQUIRE, PENALTY, SHARE or QUOTA"),
            ("1 a GCRA 1 1", "syntax error: policy GCRA takes capacity tokens period"),
            ("1 a FIXED 1 1s COST 1 REFUND 1", "syntax error: COST and REFUND exclude each other"),
            ("1 a GCRA 5 1 1s DELAY 1s REFUND 1", "syntax error: DELAY and REFUND exclude each other"),
            ("1 a GCRA 5 1 1s DELAY", "syntax error: DELAY needs a value"),
            ("1 a GCRA 5 1 1s DELAY 1s DELAY 2s", "syntax error: DELAY given more than once"),
            ("1 a GCRA 5 1 1s DELAY -1", "DELAY must be a duration from 0 to 3650d: an integer with an optional unit ms, s, m, h or d (a bare integer means seconds)"),
            ("1 a GCRA 5 1 1s DELAY 1s COST 1 DELAY 2s", "syntax error: DELAY given more than once"),
            ("1 a GCRA 5 1 1s COST 1 DELAY 1s DELAY 2s", "syntax error: DELAY given more than once"),
            ("1 a GCRA 5 1 1s REFUND 1 DELAY 1s", "syntax error: DELAY and REFUND exclude each other"),
            ("1 a GCRA 5 1 1s COST 1 DELAY", "syntax error: DELAY needs a value"),
            ("1 a FIXED 5 1s DELAY 1s", "syntax error: DELAY must follow a GCRA policy"),
            ("1 a FIXED 5 1s COST 1 delay 1s", "syntax error: DELAY must follow a GCRA policy"),
            ("2 a b GCRA 5 1 1s FIXED 5 1m COST 1 DELAY 1s", "syntax error: DELAY must follow a GCRA policy"),
            ("2 a b FIXED 5 1s DELAY 1s GCRA 5 1 1s", "syntax error: DELAY must follow a GCRA policy"),
            ("1 a FIXED 5 1s COST 1 WAIT 1s", "syntax error: unknown option 'WAIT', expected COST n, REFUND n or DEBIT n"),
            ("1 a GCRA 5 1 1s COST 1 WAIT 1s", "syntax error: unknown option 'WAIT', expected COST n, REFUND n or DEBIT n, or DELAY max"),
            ("2 a b FIXED 5 1s SLIDING 5 1s DEBIT 1", "syntax error: DEBIT does not apply to SLIDING, which takes COST n or REFUND n"),
            ("2 a b ACQUIRE 5 1s id GCRA 5 1 1s debit 1", "syntax error: DEBIT does not apply to ACQUIRE, which takes COST n"),
            ("1 a GCRA 5 1 1s DELAY 1s DEBIT 1", "syntax error: DELAY and DEBIT exclude each other"),
            ("1 a FIXED 5 1s COST 1 DEBIT 1", "syntax error: COST and DEBIT exclude each other"),
            ("1 a PENALTY 5 15m 1m", "syntax error: policy PENALTY takes strikes window block max"),
            ("1 a PENALTY 5 15m 2h 1h COST 0", "block must be at most max"),
            // A parameter missing: the option or the next policy is not read as it.
            ("1 a PENALTY 5 15m 1m COST 0", "syntax error: policy PENALTY takes strikes window block max"),
            ("2 a b PENALTY 5 15m 1m FIXED 5 1s", "syntax error: policy PENALTY takes strikes window block max"),
            ("1 a GCRA 5 1 COST 2", "syntax error: policy GCRA takes capacity tokens period"),
            ("1 a FIXED 5 REFUND 1", "syntax error: policy FIXED takes limit window"),
            ("2 a b SLIDINGCOUNTER 5 GCRA 5 1 1s", "syntax error: policy SLIDINGCOUNTER takes limit window"),
            // numkeys off by one or more: the keys and policies fit another numkeys.
            ("3 {a}x {a}y FIXED 5 1h FIXED 5 1h", "numkeys is 3, but the keys and policies given match numkeys 2"),
            ("1 a b FIXED 5 1h GCRA 5 1 1s DELAY 1s COST 2", "numkeys is 1, but the keys and policies given match numkeys 2"),
            ("2 a FIXED 5 1h", "numkeys is 2, but the keys and policies given match numkeys 1"),
            // Any option the line may end with, DEBIT too (as the library reads it).
            ("2 a FIXED 5 1h DEBIT 2", "numkeys is 2, but the keys and policies given match numkeys 1"),
            ("4 a b FIXED 5 1h SLIDING 5 1h", "numkeys is 4, but the keys and policies given match numkeys 2"),
            // No other numkeys fits: the count, or the word that is no policy.
            ("2 a b FIXED 5 1h FIXED 5", "syntax error: policy FIXED takes limit window"),
            ("2 a b 5 1h FIXED 5 1h", "syntax error: unknown policy '5', expected FIXED, SLIDING, BUCKET, GCRA, SLIDINGCOUNTER, ACQUIRE, PENALTY, SHARE or QUOTA"),
        ];
        for (line, want) in cases {
            assert_eq!(
                parse_line(line).err().map(|e| e.to_string()).as_deref(),
                Some(want),
                "{line}"
            );
        }
    }

    /// `combine` over limits only (FIXED policies), charging COST 1.
    fn combine(per_key: &[Decision]) -> Decision {
        let quota = params::window_limit(&table::FIXED, &[b"1", b"1s"]).unwrap();
        let call = Call {
            policies: vec![Policy::Fixed(quota); per_key.len()],
            shadows: 0,
            amount: Amount::Take(Cost::ONE),
        };
        call.combine(per_key)
    }

    #[test]
    fn a_watched_penalty_rejects_a_charge_but_never_sets_the_limit() {
        let call = parse_line("2 pen rate PENALTY 5 15m 1m 1h GCRA 10 1 1s").unwrap();
        assert_eq!(call.amount, Amount::Take(Cost::ONE));
        assert_eq!(
            call.policies[0].amount(call.amount),
            Amount::Take(Cost::ZERO)
        );
        assert_eq!(
            call.policies[1].amount(call.amount),
            Amount::Take(Cost::ONE)
        );
        let blocked = decision(false, 5, 0, RetryAfter::Ms(60_000), 3_660_000);
        let rate = decision(true, 10, 9, RetryAfter::Now, 100);
        // Blocked: rejected for the block's rest; the limit, remaining and reset
        // are the rate limit's.
        assert_eq!(
            call.combine(&[blocked, rate]),
            decision(false, 10, 9, RetryAfter::Ms(60_000), 100)
        );
        assert!(!call.allows(&[blocked, rate]));
        // Not blocked: the rate limit alone decides and describes.
        let open = decision(true, 5, 3, RetryAfter::Now, 50_000);
        assert_eq!(call.combine(&[open, rate]), rate);
        // REFUND and DEBIT settle whatever the block.
        for line in [
            "2 pen rate PENALTY 5 15m 1m 1h GCRA 10 1 1s REFUND 1",
            "2 pen rate PENALTY 5 15m 1m 1h GCRA 10 1 1s DEBIT 1",
        ] {
            let call = parse_line(line).unwrap();
            assert!(call.allows(&[blocked, rate]), "{line}");
            assert_eq!(call.combine(&[blocked, rate]), rate, "{line}");
        }
        // Penalties only: they describe the call.
        let call = parse_line("1 pen PENALTY 5 15m 1m 1h").unwrap();
        assert_eq!(call.combine(&[blocked]), blocked);
    }

    #[test]
    fn a_shadow_policy_never_vetoes_nor_describes_the_call() {
        let call = parse_line("3 a b c FIXED 10 1m shadow GCRA 5 1 1s SHADOW FIXED 3 1h").unwrap();
        assert_eq!(call.shadows, 0b110);
        assert!(!call.shadow(0) && call.shadow(1) && call.shadow(2));
        let rate = decision(true, 10, 9, RetryAfter::Now, 100);
        let tried = decision(false, 5, 0, RetryAfter::Ms(200), 5000);
        let scheduled = decision(true, 3, 1, RetryAfter::Delayed(700), 9000);
        // Allowed by the enforced key alone, described by it; the rejecting SHADOW
        // key is not written, the allowing one is.
        assert!(call.allows(&[rate, tried, scheduled]));
        assert_eq!(call.combine(&[rate, tried, scheduled]), rate);
        assert!(!call.writes(1, &tried) && call.writes(2, &scheduled));
        // Rejected by the enforced key: its wait, not a SHADOW key's.
        let full = decision(false, 10, 0, RetryAfter::Ms(50), 100);
        let never = decision(false, 5, 0, RetryAfter::Never, 5000);
        assert_eq!(
            call.combine(&[full, never, scheduled]),
            decision(false, 10, 0, RetryAfter::Ms(50), 100)
        );
        // SHADOW only: allowed, no wait, described by every key as usual.
        let call = parse_line("2 a b SHADOW FIXED 10 1m SHADOW GCRA 5 1 1s").unwrap();
        assert_eq!(
            call.combine(&[rate, tried]),
            decision(true, 5, 0, RetryAfter::Now, 5000)
        );
        for (line, want) in [
            ("1 a SHADOW SHADOW FIXED 1 1s", "syntax error: SHADOW given more than once"),
            ("1 a FIXED 1 1s SHADOW", "syntax error: SHADOW must come before a policy"),
            ("1 a SHADOW COST 1", "syntax error: SHADOW must come before a policy"),
            ("1 a FIXED 1 1s COST 1 SHADOW", "syntax error: SHADOW does not apply to RL.ALL, which takes COST n, REFUND n or DEBIT n"),
            ("1 a GCRA 1 1 1s COST 0 SHADOW", "syntax error: SHADOW does not apply to RL.ALL, which takes COST n, REFUND n or DEBIT n, or DELAY max"),
            ("1 a FIXED 1 SHADOW", "syntax error: policy FIXED takes limit window"),
            ("3 a b FIXED 1 1s SHADOW GCRA 1 1 1s", "numkeys is 3, but the keys and policies given match numkeys 2"),
        ] {
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
