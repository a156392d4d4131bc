//! Typed replies and the HTTP fields they give.

use std::time::Duration;

use redis::{FromRedisValue, ParsingError, Value};

use crate::command::AllExpect;
use crate::error::{Error, Result};

/// The largest structured-field integer: larger numbers are given as this.
pub const MAX_FIELD_INTEGER: u64 = 999_999_999_999_999;

/// The retry_after and reset_after of a fail-closed (deny) decision.
pub(crate) const FAIL_CLOSED_RETRY: Duration = Duration::from_secs(1);

/// A policy name as a structured-field string (`"` and `\` escaped); refused when it
/// has a byte outside printable ASCII.
pub fn field_string(name: &str) -> Result<String> {
    if let Some(c) = name.chars().find(|c| !(' '..='~').contains(c)) {
        return Err(Error::InvalidArgument(format!(
            "policy name {name:?} has {c:?}, which an HTTP structured field cannot carry (printable ASCII only)"
        )));
    }
    let mut out = String::with_capacity(name.len() + 2);
    out.push('"');
    for c in name.chars() {
        if c == '"' || c == '\\' {
            out.push('\\');
        }
        out.push(c);
    }
    out.push('"');
    Ok(out)
}

fn ceil_secs(d: Duration) -> u64 {
    u64::try_from(d.as_millis())
        .unwrap_or(u64::MAX)
        .div_ceil(1000)
}

fn field_int(n: u64) -> u64 {
    n.min(MAX_FIELD_INTEGER)
}

/// `"name";q=<limit>;w=<window s>`, `w` left out when unknown (never 0).
fn policy_member(name: &str, d: &Decision) -> String {
    match d.window.map(ceil_secs).filter(|w| *w > 0) {
        Some(w) => format!("{name};q={};w={}", field_int(d.limit), field_int(w)),
        None => format!("{name};q={}", field_int(d.limit)),
    }
}

/// `"name";r=<remaining>;t=<reset s>`.
fn limit_member(name: &str, d: &Decision) -> String {
    format!(
        "{name};r={};t={}",
        field_int(d.remaining),
        field_int(ceil_secs(d.reset_after))
    )
}

/// The fields of a call: `RateLimit-Policy` and `RateLimit` with one member per
/// (name, decision), then `Retry-After` and `X-RateLimit-*` from `overall`.
fn fields(members: &[(String, &Decision)], overall: &Decision) -> Vec<(&'static str, String)> {
    let join = |f: fn(&str, &Decision) -> String| {
        members
            .iter()
            .map(|(n, d)| f(n, d))
            .collect::<Vec<_>>()
            .join(", ")
    };
    let reset = field_int(ceil_secs(overall.reset_after));
    let mut headers = Vec::with_capacity(6);
    headers.push(("RateLimit-Policy", join(policy_member)));
    headers.push(("RateLimit", join(limit_member)));
    if !overall.allowed {
        if let Some(retry) = overall.retry_after {
            headers.push(("Retry-After", field_int(ceil_secs(retry)).to_string()));
        }
    }
    headers.push(("X-RateLimit-Limit", overall.limit.to_string()));
    headers.push(("X-RateLimit-Remaining", overall.remaining.to_string()));
    headers.push(("X-RateLimit-Reset", reset.to_string()));
    headers
}

/// One limiter's answer: `[allowed, limit, remaining, retry_after_ms, reset_after_ms]`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Decision {
    /// The call was accepted and its units taken (a rejected call takes nothing).
    pub allowed: bool,
    /// The limit (a bucket's capacity, a penalty's strikes) of this call.
    pub limit: u64,
    /// Units that could still be taken now, after this call.
    pub remaining: u64,
    /// Zero when allowed (with DELAY: the wait before acting); when rejected, how
    /// long until the same call would pass; `None` when it never can (COST above
    /// the limit).
    pub retry_after: Option<Duration>,
    /// How long until the limiter is back to its initial state (remaining = limit).
    pub reset_after: Duration,
    /// The `w` of the `RateLimit-Policy` field: the call's window or ttl; for a
    /// bucket the time it takes to refill from empty, `ceil(capacity × period /
    /// tokens)` in whole ms, at most about 292 years (`None` when unknown: the
    /// decision was parsed without its call, or the command has no window).
    pub window: Option<Duration>,
    /// The decision was made by the limiter's [`FailMode`](crate::FailMode), not by
    /// the server.
    pub fallback: bool,
    /// A rejection the limiter's cache of blocked keys gave without asking the server
    /// ([`Limiter::cache`](crate::Limiter::cache)); `retry_after` is what is left of the
    /// server's.
    pub cached: bool,
    /// For a fallback decision: the error that caused it, to log.
    pub error: Option<Box<str>>,
    /// The call (or the RL.ALL policy) was made with `SHADOW`: the limit is tried, not
    /// enforced. The other fields are what it decided, so not `allowed` means "would
    /// have rejected": log it, do not act on it. Such a decision gives no HTTP fields.
    pub shadow: bool,
}

impl Decision {
    /// The decision of the reply's five integers; `None` if they are not a decision.
    pub fn from_fields(fields: [i64; 5]) -> Option<Decision> {
        let [allowed, limit, remaining, retry, reset] = fields;
        let allowed = match allowed {
            0 => false,
            1 => true,
            _ => return None,
        };
        let retry_after = match retry {
            -1 => None,
            ms => Some(Duration::from_millis(u64::try_from(ms).ok()?)),
        };
        Some(Decision {
            allowed,
            limit: u64::try_from(limit).ok()?,
            remaining: u64::try_from(remaining).ok()?,
            retry_after,
            reset_after: Duration::from_millis(u64::try_from(reset).ok()?),
            window: None,
            fallback: false,
            cached: false,
            error: None,
            shadow: false,
        })
    }

    /// `retry_after` in milliseconds, -1 when it never can pass (the reply's field).
    pub fn retry_after_ms(&self) -> i64 {
        self.retry_after.map_or(-1, millis_i64)
    }

    /// `reset_after` in milliseconds (the reply's field).
    pub fn reset_after_ms(&self) -> i64 {
        millis_i64(self.reset_after)
    }

    /// The HTTP response fields for this decision, the policy named `default`
    /// ([`headers_named`](Self::headers_named) to name it), in this order:
    ///
    /// - `RateLimit-Policy: "default";q=<limit>;w=<window s>` (the IETF draft; `w`
    ///   only when [`window`](Self::window) is known), `RateLimit:
    ///   "default";r=<remaining>;t=<reset s>`;
    /// - `Retry-After: <s>` only when rejected and a retry can pass;
    /// - `X-RateLimit-Limit`, `X-RateLimit-Remaining`, `X-RateLimit-Reset: <reset s>`.
    ///
    /// Seconds are whole, rounded up; integers above 999,999,999,999,999 are given as
    /// that number. Answer `429` when [`allowed`](Self::allowed) is false. A
    /// [`shadow`](Self::shadow) decision gives none: its limit is not in force.
    ///
    /// ```
    /// use rl_client::Decision;
    ///
    /// let d = Decision::from_fields([0, 5, 0, 1500, 4200]).unwrap();
    /// let h = d.headers();
    /// assert_eq!(h[1], ("RateLimit", "\"default\";r=0;t=5".to_string()));
    /// assert_eq!(h[2], ("Retry-After", "2".to_string()));
    /// ```
    pub fn headers(&self) -> Vec<(&'static str, String)> {
        self.named_fields("\"default\"".to_string())
    }

    /// [`headers`](Self::headers) with the policy named `name`: a structured-field
    /// string (`"` and `\` escaped); [`Error::InvalidArgument`] for a name with a byte
    /// outside printable ASCII.
    ///
    /// ```
    /// use rl_client::Decision;
    ///
    /// let d = Decision::from_fields([1, 5, 4, 0, 1000]).unwrap();
    /// assert_eq!(d.headers_named("api").unwrap()[1].1, "\"api\";r=4;t=1");
    /// assert!(d.headers_named("caf\u{e9}").is_err());
    /// ```
    pub fn headers_named(&self, name: &str) -> Result<Vec<(&'static str, String)>> {
        Ok(self.named_fields(field_string(name)?))
    }

    fn named_fields(&self, name: String) -> Vec<(&'static str, String)> {
        if self.shadow {
            return Vec::new();
        }
        fields(&[(name, self)], self)
    }

    pub(crate) fn with_window(mut self, window: Option<Duration>) -> Self {
        self.window = window;
        self
    }

    /// The decision a [`FailMode`](crate::FailMode) makes without the server.
    pub(crate) fn fallback(
        allowed: bool,
        limit: u64,
        window: Option<Duration>,
        error: Box<str>,
    ) -> Decision {
        let wait = if allowed {
            Duration::ZERO
        } else {
            FAIL_CLOSED_RETRY
        };
        Decision {
            allowed,
            limit,
            remaining: if allowed { limit } else { 0 },
            retry_after: Some(wait),
            reset_after: wait,
            window,
            fallback: true,
            cached: false,
            error: Some(error),
            shadow: false,
        }
    }
}

fn millis_i64(d: Duration) -> i64 {
    i64::try_from(d.as_millis()).unwrap_or(i64::MAX)
}

/// RL.ALL's answer: the combined decision, then each key's in key order.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct AllDecision {
    /// Allowed iff every enforced key allows; the smallest remaining (first key on a
    /// tie) with that key's limit; the largest retry_after among rejecting keys (None
    /// if any never can), the largest reset_after. SHADOW policies take no part
    /// (with only SHADOW policies: allowed, the rest over all of them); its `shadow`
    /// is false.
    pub combined: Decision,
    /// Each key's decision; the keys that reject are those with `allowed` false (a
    /// SHADOW policy's, with `shadow` true, would have rejected: it vetoed nothing).
    pub keys: Vec<Decision>,
    /// Each key's policy word (`GCRA`, …; empty when parsed without the call).
    pub words: Vec<&'static str>,
}

impl AllDecision {
    /// Whether the call was accepted (every key allows).
    pub fn allowed(&self) -> bool {
        self.combined.allowed
    }

    /// The indexes of the enforced keys that rejected the call.
    pub fn rejected(&self) -> impl Iterator<Item = usize> + '_ {
        self.keys
            .iter()
            .enumerate()
            .filter(|(_, d)| !d.allowed && !d.shadow)
            .map(|(i, _)| i)
    }

    /// The policies' default names: each word in lower case (`"gcra"`), followed by
    /// `-N` (its position, from 1) when the call has that word more than once.
    pub fn names(&self) -> Vec<String> {
        (0..self.keys.len())
            .map(|i| {
                let word = self.words.get(i).copied().unwrap_or("");
                let word = if word.is_empty() { "policy" } else { word };
                let repeats = self
                    .words
                    .iter()
                    .filter(|w| w.eq_ignore_ascii_case(word))
                    .count();
                if repeats > 1 || self.words.len() != self.keys.len() {
                    format!("{}-{}", word.to_ascii_lowercase(), i + 1)
                } else {
                    word.to_ascii_lowercase()
                }
            })
            .collect()
    }

    /// The HTTP fields: `RateLimit-Policy` and `RateLimit` with one member per
    /// enforced policy (its own key's numbers, named as [`names`](Self::names) says,
    /// by its place among all the call's policies), then `Retry-After` and
    /// `X-RateLimit-*` from the combined decision. SHADOW policies are left out; a
    /// call with only SHADOW policies gives no field.
    pub fn headers(&self) -> Vec<(&'static str, String)> {
        let names = self.names();
        let named: Vec<&str> = names.iter().map(String::as_str).collect();
        // The default names are lower-case words: always valid field strings.
        self.headers_named(&named).unwrap_or_default()
    }

    /// [`headers`](Self::headers) with a name of yours for each policy, in key order
    /// ([`Error::InvalidArgument`] if the count differs or a name is not printable
    /// ASCII).
    pub fn headers_named(&self, names: &[&str]) -> Result<Vec<(&'static str, String)>> {
        if names.len() != self.keys.len() {
            return Err(Error::InvalidArgument(format!(
                "{} names for {} policies",
                names.len(),
                self.keys.len()
            )));
        }
        let members = names
            .iter()
            .map(|n| field_string(n))
            .zip(&self.keys)
            .filter(|(_, d)| !d.shadow)
            .map(|(n, d)| Ok((n?, d)))
            .collect::<Result<Vec<_>>>()?;
        if members.is_empty() {
            return Ok(Vec::new());
        }
        Ok(fields(&members, &self.combined))
    }

    /// The key the combined decision reports: the enforced one with the smallest
    /// remaining (the first on a tie); with only SHADOW policies, the same over all.
    pub(crate) fn reported(keys: &[Decision]) -> Option<usize> {
        let enforced = keys.iter().any(|d| !d.shadow);
        keys.iter()
            .enumerate()
            .filter(|(_, d)| !(enforced && d.shadow))
            .min_by_key(|(i, d)| (d.remaining, *i))
            .map(|(i, _)| i)
    }

    /// Sets each key's window, word and SHADOW flag, and the combined one's window from
    /// the key it reports.
    pub(crate) fn with_policies(mut self, call: &AllExpect) -> Self {
        for ((d, w), s) in self.keys.iter_mut().zip(&call.windows).zip(&call.shadows) {
            d.window = *w;
            d.shadow = *s;
        }
        self.combined.window =
            Self::reported(&self.keys).and_then(|i| call.windows.get(i).copied().flatten());
        self.words = call.words.clone();
        self
    }

    pub(crate) fn from_value(v: &Value) -> Option<AllDecision> {
        let Value::Array(items) = v else {
            return None;
        };
        if items.len() < 2 {
            return None;
        }
        let mut decisions = items.iter().map(decision_of);
        let combined = decisions.next()??;
        let keys = decisions.collect::<Option<Vec<_>>>()?;
        Some(AllDecision {
            combined,
            keys,
            words: Vec::new(),
        })
    }
}

/// CL.THROTTLE's answer, as redis-cell gives it: `[limited, limit, remaining,
/// retry_after_s, reset_after_s]`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ThrottleDecision {
    /// The call was rejected (the reverse of RL's `allowed`).
    pub limited: bool,
    /// max_burst + 1.
    pub limit: u64,
    /// Calls that could still pass now.
    pub remaining: u64,
    /// When limited, how long until the same call passes (whole seconds); `None`
    /// when allowed, and when it never can (the reply's -1).
    pub retry_after: Option<Duration>,
    /// How long until the limiter is back to its initial state (whole seconds).
    pub reset_after: Duration,
    /// The `w` of `RateLimit-Policy`: the time the bucket of max_burst + 1 takes to
    /// refill from empty at count per period (`None` when parsed without its call).
    pub window: Option<Duration>,
}

impl ThrottleDecision {
    /// Whether the call was accepted.
    pub fn allowed(&self) -> bool {
        !self.limited
    }

    /// RL's decision for the same answer (`Retry-After` only when limited).
    pub fn decision(&self) -> Decision {
        Decision {
            allowed: !self.limited,
            limit: self.limit,
            remaining: self.remaining,
            retry_after: if self.limited {
                self.retry_after
            } else {
                Some(Duration::ZERO)
            },
            reset_after: self.reset_after,
            window: self.window,
            fallback: false,
            cached: false,
            error: None,
            shadow: false,
        }
    }

    /// The HTTP fields, as [`Decision::headers`].
    pub fn headers(&self) -> Vec<(&'static str, String)> {
        self.decision().headers()
    }

    /// The HTTP fields with the policy named `name`, as [`Decision::headers_named`].
    pub fn headers_named(&self, name: &str) -> Result<Vec<(&'static str, String)>> {
        self.decision().headers_named(name)
    }

    pub(crate) fn from_value(v: &Value) -> Option<ThrottleDecision> {
        let [limited, limit, remaining, retry, reset] = five_ints(v)?;
        Some(ThrottleDecision {
            limited: match limited {
                0 => false,
                1 => true,
                _ => return None,
            },
            limit: u64::try_from(limit).ok()?,
            remaining: u64::try_from(remaining).ok()?,
            retry_after: match retry {
                -1 => None,
                s => Some(Duration::from_secs(u64::try_from(s).ok()?)),
            },
            reset_after: Duration::from_secs(u64::try_from(reset).ok()?),
            window: None,
        })
    }
}

fn five_ints(v: &Value) -> Option<[i64; 5]> {
    match v {
        Value::Array(items) if items.len() == 5 => {
            let mut out = [0i64; 5];
            for (o, item) in out.iter_mut().zip(items) {
                match item {
                    Value::Int(n) => *o = *n,
                    _ => return None,
                }
            }
            Some(out)
        }
        _ => None,
    }
}

pub(crate) fn decision_of(v: &Value) -> Option<Decision> {
    Decision::from_fields(five_ints(v)?)
}

/// RL.RELEASE's answer: 1 if the lease was held and is now released.
pub(crate) fn released_of(v: &Value) -> Option<bool> {
    match v {
        Value::Int(0) => Some(false),
        Value::Int(1) => Some(true),
        _ => None,
    }
}

fn not_a(what: &str, v: &Value) -> ParsingError {
    format!("not {what}: {v:?}").into()
}

/// Parses a raw reply, for calls made without this crate's limiters:
/// `redis::cmd("RL.GCRA")….query::<Decision>(&mut con)`.
impl FromRedisValue for Decision {
    fn from_redis_value(v: Value) -> Result<Self, ParsingError> {
        decision_of(&v).ok_or_else(|| not_a("an RL decision", &v))
    }
}

impl FromRedisValue for AllDecision {
    fn from_redis_value(v: Value) -> Result<Self, ParsingError> {
        AllDecision::from_value(&v).ok_or_else(|| not_a("an RL.ALL reply", &v))
    }
}

impl FromRedisValue for ThrottleDecision {
    fn from_redis_value(v: Value) -> Result<Self, ParsingError> {
        ThrottleDecision::from_value(&v).ok_or_else(|| not_a("a CL.THROTTLE reply", &v))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// An RL.ALL call's policies as the reply is read: their windows and words, none
    /// SHADOW.
    fn call(windows: &[Option<Duration>], words: &[&'static str]) -> AllExpect {
        AllExpect {
            limits: vec![0; windows.len()],
            windows: windows.to_vec(),
            words: words.to_vec(),
            shadows: vec![false; windows.len()],
        }
    }

    fn ints(xs: &[i64]) -> Value {
        Value::Array(xs.iter().map(|&x| Value::Int(x)).collect())
    }

    fn header<'a>(h: &'a [(&'static str, String)], name: &str) -> Option<&'a str> {
        h.iter().find(|(n, _)| *n == name).map(|(_, v)| v.as_str())
    }

    #[test]
    fn parses_a_decision() {
        let d = Decision::from_redis_value_ref(&ints(&[1, 5, 4, 0, 1000])).unwrap();
        assert!(d.allowed);
        assert_eq!((d.limit, d.remaining), (5, 4));
        assert_eq!(d.retry_after, Some(Duration::ZERO));
        assert_eq!(d.reset_after, Duration::from_millis(1000));
        assert_eq!((d.retry_after_ms(), d.reset_after_ms()), (0, 1000));
        let never = Decision::from_redis_value_ref(&ints(&[0, 5, 5, -1, 0])).unwrap();
        assert!(!never.allowed);
        assert_eq!(never.retry_after, None);
        assert_eq!(never.retry_after_ms(), -1);
    }

    #[test]
    fn refuses_what_is_not_a_decision() {
        for v in [
            ints(&[1, 5, 4, 0]),
            ints(&[1, 5, 4, 0, 1, 2]),
            ints(&[2, 5, 4, 0, 1]),
            ints(&[1, -5, 4, 0, 1]),
            ints(&[1, 5, -4, 0, 1]),
            ints(&[0, 5, 4, -2, 1]),
            ints(&[0, 5, 4, 1, -1]),
            Value::Int(1),
            Value::Nil,
            Value::Array(vec![
                Value::Int(1),
                Value::Int(5),
                Value::BulkString(b"4".to_vec()),
                Value::Int(0),
                Value::Int(0),
            ]),
        ] {
            assert!(Decision::from_redis_value_ref(&v).is_err(), "{v:?}");
        }
    }

    #[test]
    fn parses_rl_all() {
        let v = Value::Array(vec![
            ints(&[0, 1, 0, 1000, 1000]),
            ints(&[0, 1, 0, 1000, 1000]),
            ints(&[1, 5, 4, 0, 1000]),
        ]);
        let all = AllDecision::from_redis_value_ref(&v).unwrap();
        assert!(!all.allowed());
        assert_eq!(all.keys.len(), 2);
        assert_eq!(all.rejected().collect::<Vec<_>>(), vec![0]);
        let all = all.with_policies(&call(
            &[Some(Duration::from_secs(1)), Some(Duration::from_secs(60))],
            &["GCRA", "FIXED"],
        ));
        assert_eq!(all.combined.window, Some(Duration::from_secs(1)));
        assert_eq!(all.keys[1].window, Some(Duration::from_secs(60)));
        // Only the combined decision: not a reply of RL.ALL.
        assert!(
            AllDecision::from_redis_value_ref(&Value::Array(vec![ints(&[1, 1, 1, 0, 0])])).is_err()
        );
        assert!(AllDecision::from_redis_value_ref(&Value::Array(vec![
            ints(&[1, 1, 1, 0, 0]),
            Value::Nil
        ]))
        .is_err());
    }

    #[test]
    fn combined_window_follows_the_reported_key() {
        // The second key has the smallest remaining: the combined limit is its.
        let v = Value::Array(vec![
            ints(&[1, 3, 1, 0, 60000]),
            ints(&[1, 10, 9, 0, 1000]),
            ints(&[1, 3, 1, 0, 60000]),
            ints(&[1, 8, 1, 0, 500]),
        ]);
        let all = AllDecision::from_redis_value_ref(&v)
            .unwrap()
            .with_policies(&call(
                &[
                    Some(Duration::from_secs(1)),
                    Some(Duration::from_secs(60)),
                    None,
                ],
                &["GCRA", "FIXED", "FIXED"],
            ));
        // A tie between keys 1 and 2: the first.
        assert_eq!(all.combined.window, Some(Duration::from_secs(60)));
    }

    #[test]
    fn parses_throttle() {
        let t = ThrottleDecision::from_redis_value_ref(&ints(&[0, 1, 0, -1, 2])).unwrap();
        assert!(t.allowed());
        assert_eq!(t.retry_after, None);
        assert_eq!(t.reset_after, Duration::from_secs(2));
        let t = ThrottleDecision::from_redis_value_ref(&ints(&[1, 1, 0, 2, 2])).unwrap();
        assert!(!t.allowed());
        assert_eq!(t.retry_after, Some(Duration::from_secs(2)));
        assert!(ThrottleDecision::from_redis_value_ref(&ints(&[3, 1, 0, 2, 2])).is_err());
    }

    #[test]
    fn headers_of_an_allowed_call() {
        let d = Decision::from_fields([1, 100, 99, 0, 601])
            .unwrap()
            .with_window(Some(Duration::from_secs(60)));
        assert_eq!(
            d.headers(),
            vec![
                ("RateLimit-Policy", "\"default\";q=100;w=60".to_string()),
                ("RateLimit", "\"default\";r=99;t=1".to_string()),
                ("X-RateLimit-Limit", "100".to_string()),
                ("X-RateLimit-Remaining", "99".to_string()),
                ("X-RateLimit-Reset", "1".to_string()),
            ]
        );
    }

    #[test]
    fn headers_of_a_rejected_call() {
        let d = Decision::from_fields([0, 5, 0, 1001, 5000])
            .unwrap()
            .with_window(Some(Duration::from_millis(1500)));
        let h = d.headers();
        assert_eq!(header(&h, "Retry-After"), Some("2"));
        assert_eq!(header(&h, "RateLimit-Policy"), Some("\"default\";q=5;w=2"));
        assert_eq!(header(&h, "RateLimit"), Some("\"default\";r=0;t=5"));
        assert_eq!(header(&h, "X-RateLimit-Reset"), Some("5"));
        assert_eq!(h.len(), 6);
    }

    #[test]
    fn no_retry_after_when_it_never_can_pass_or_was_allowed() {
        let never = Decision::from_fields([0, 5, 5, -1, 0]).unwrap();
        assert_eq!(header(&never.headers(), "Retry-After"), None);
        assert_eq!(
            header(&never.headers(), "RateLimit-Policy"),
            Some("\"default\";q=5")
        );
        // With DELAY an allowed call carries a wait: still no Retry-After.
        let delayed = Decision::from_fields([1, 2, 0, 3000, 5000]).unwrap();
        assert_eq!(header(&delayed.headers(), "Retry-After"), None);
    }

    #[test]
    fn fallbacks() {
        let open = Decision::fallback(true, 10, None, "refused".into());
        assert!(open.allowed && open.fallback);
        assert_eq!(
            (open.remaining, open.retry_after),
            (10, Some(Duration::ZERO))
        );
        let closed = Decision::fallback(false, 10, None, "refused".into());
        assert!(!closed.allowed && closed.fallback);
        assert_eq!(closed.retry_after, Some(FAIL_CLOSED_RETRY));
        assert_eq!(header(&closed.headers(), "Retry-After"), Some("1"));
    }

    #[test]
    fn field_strings() {
        assert_eq!(field_string("api").unwrap(), "\"api\"");
        assert_eq!(field_string("my \"api\"").unwrap(), r#""my \"api\"""#);
        assert_eq!(field_string("back\\slash").unwrap(), r#""back\\slash""#);
        for bad in ["a\r\nb", "caf\u{e9}", "tab\t", "\u{7f}"] {
            assert!(
                matches!(field_string(bad), Err(Error::InvalidArgument(_))),
                "{bad:?}"
            );
        }
    }

    #[test]
    fn integers_are_clamped_and_w_is_never_zero() {
        let mut d = Decision::from_fields([1, i64::MAX, i64::MAX, 0, i64::MAX]).unwrap();
        d.window = Some(Duration::ZERO);
        let h = d.headers();
        assert_eq!(
            header(&h, "RateLimit-Policy"),
            Some("\"default\";q=999999999999999")
        );
        assert_eq!(
            header(&h, "RateLimit"),
            Some("\"default\";r=999999999999999;t=999999999999999")
        );
    }

    #[test]
    fn rl_all_gives_one_member_per_policy() {
        let v = Value::Array(vec![
            ints(&[1, 3, 2, 0, 60000]),
            ints(&[1, 10, 9, 0, 1000]),
            ints(&[1, 3, 2, 0, 60000]),
        ]);
        let all = AllDecision::from_redis_value_ref(&v)
            .unwrap()
            .with_policies(&call(
                &[Some(Duration::from_secs(1)), Some(Duration::from_secs(60))],
                &["FIXED", "FIXED"],
            ));
        assert_eq!(all.names(), ["fixed-1", "fixed-2"]);
        let h = all.headers();
        assert_eq!(
            header(&h, "RateLimit-Policy"),
            Some("\"fixed-1\";q=10;w=1, \"fixed-2\";q=3;w=60")
        );
        assert_eq!(
            header(&h, "RateLimit"),
            Some("\"fixed-1\";r=9;t=1, \"fixed-2\";r=2;t=60")
        );
        let named = all.headers_named(&["burst", "day"]).unwrap();
        assert_eq!(
            header(&named, "RateLimit"),
            Some("\"burst\";r=9;t=1, \"day\";r=2;t=60")
        );
        assert!(all.headers_named(&["one"]).is_err());
    }
}
