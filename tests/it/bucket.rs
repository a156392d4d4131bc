//! RL.BUCKET against a real redis-server: the reply, the `{tokens, ts}` hash and its TTL.
//!
//! Every call goes through [`Bucket::call`], which reads the hash, TIME, the call,
//! TIME and the hash again inside one MULTI, so the call's server time is bracketed
//! however noisy the machine is. Replies are checked against the reference's formulas (docs/commands.md#rlbucket) in
//! exact integer arithmetic (units of 10^-6 token / period), applied to the hash as it
//! actually was before the call.

use crate::common::*;

use std::collections::HashMap;

const MICROS: i128 = 1_000_000;

/// The parameters of `RL.BUCKET key capacity tokens period`, the period in ms.
#[derive(Debug, Clone, Copy)]
struct Bucket {
    capacity: i64,
    tokens: i64,
    period: i64,
}

/// What the hash holds: the level in millionths of a token at `ts`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Level {
    micros: i128,
    ts: i64,
}

/// One call and what surrounded it.
#[derive(Debug)]
struct Step {
    reply: Reply,
    /// Bounds on the server time the call read.
    lo: i64,
    hi: i64,
    /// The hash after the call, and its `tokens` field as stored.
    after: Option<Level>,
    tokens_field: Option<String>,
    expires_at: i64,
}

impl Step {
    /// The stored bucket (after a write).
    fn stored(&self) -> Level {
        self.after.expect("a stored bucket")
    }
}

impl Bucket {
    fn args(&self, key: &str, cost: i64) -> Vec<String> {
        let period = if self.period % 1000 == 0 {
            format!("{}s", self.period / 1000)
        } else {
            format!("{}ms", self.period)
        };
        let mut args = vec![
            "RL.BUCKET".to_string(),
            key.to_string(),
            self.capacity.to_string(),
            self.tokens.to_string(),
            period,
        ];
        // COST 1 is the default: leave it out to exercise that too.
        if cost != 1 {
            args.extend(["COST".to_string(), cost.to_string()]);
        }
        args
    }

    /// One token, in units of 10^-6 token / period.
    fn token(&self) -> i128 {
        MICROS * i128::from(self.period)
    }

    fn full(&self) -> i128 {
        i128::from(self.capacity) * self.token()
    }

    /// Whole ms until `deficit` units have refilled, rounded up.
    fn ms_to_gain(&self, deficit: i128) -> i64 {
        let per_ms = i128::from(self.tokens) * MICROS;
        ((deficit + per_ms - 1) / per_ms) as i64
    }

    /// The exact level at `now`: a missing key is full; refill, clamped to capacity.
    fn level_at(&self, stored: Option<Level>, now: i64) -> i128 {
        match stored {
            None => self.full(),
            Some(b) => {
                let base = (b.micros * i128::from(self.period)).min(self.full());
                let elapsed = i128::from((now - b.ts).max(0));
                (base + elapsed * i128::from(self.tokens) * MICROS).min(self.full())
            }
        }
    }

    /// The reference's reply to a call that writes nothing, at `now`.
    fn expect(&self, stored: Option<Level>, now: i64, cost: i64) -> Reply {
        let level = self.level_at(stored, now);
        let wanted = i128::from(cost) * self.token();
        let allowed = wanted <= level;
        let after = if allowed { level - wanted } else { level };
        let retry_after = if allowed {
            0
        } else if cost > self.capacity {
            -1
        } else {
            self.ms_to_gain(wanted - level)
        };
        Reply {
            allowed: i64::from(allowed),
            limit: self.capacity,
            remaining: (after / self.token()) as i64,
            retry_after,
            reset_after: self.ms_to_gain(self.full() - after),
        }
    }

    /// Calls `RL.BUCKET key … COST cost` and checks it against the reference: an allowed
    /// call with a cost stores `ts` = its server time and `tokens` = the level at `ts`
    /// minus the cost (within 10^-6 token) and expires the key when that level would
    /// be full again; anything else leaves the key byte-identical.
    fn call(&self, c: &mut Connection, key: &str, cost: i64) -> Step {
        let args = self.args(key, cost);
        let o: Observed<HashMap<String, String>> = observe(c, &args, |p, k| {
            p.cmd("HGETALL").arg(k);
        });
        let (reply, lo, hi) = (o.reply, o.lo, o.hi);
        let (hash_before, hash_after, at_after) = (o.before, o.after, o.expires_at);
        let before = parse_hash(&hash_before);
        let step = Step {
            reply,
            lo,
            hi,
            after: parse_hash(&hash_after),
            tokens_field: hash_after.get("tokens").cloned(),
            expires_at: at_after,
        };
        if !o.wrote {
            // Nothing written: the reply is the reference's at some instant of the bracket.
            let fits = (lo..=hi).any(|now| {
                let want = self.expect(before, now, cost);
                want == reply && !(want.allowed == 1 && cost > 0)
            });
            assert!(
                fits,
                "{args:?} wrote nothing and replied {reply:?}; the reference says {:?} (now in {lo}..={hi}, hash {hash_before:?})",
                self.expect(before, hi, cost)
            );
            return step;
        }
        let stored = step.after.unwrap_or_else(|| {
            panic!("{args:?} left {hash_after:?}, not a bucket (before: {hash_before:?})")
        });
        let at = stored.ts;
        assert!(
            (lo..=hi).contains(&at),
            "{args:?} stored ts {at}, outside the call's server time {lo}..={hi}"
        );
        let level = self.level_at(before, at);
        let wanted = i128::from(cost) * self.token();
        assert!(
            cost > 0 && wanted <= level,
            "{args:?} at {at} changed the key though the reference says {:?} writes nothing\nbefore {hash_before:?}\nafter {hash_after:?}",
            self.expect(before, at, cost)
        );
        let written = stored.micros * i128::from(self.period);
        assert!(
            (written - (level - wanted)).abs() <= i128::from(self.period),
            "{args:?} at {at}: stored tokens {:?}, the exact level is {} micro-tokens (before {hash_before:?})",
            step.tokens_field,
            (level - wanted) as f64 / self.period as f64
        );
        // The reply describes the exact level after the call (the stored copy is
        // only rounded down): remaining, and when it is full again, which is also
        // when the key expires.
        let exact = level - wanted;
        let reset = self.ms_to_gain(self.full() - exact);
        assert_eq!(
            reply,
            Reply {
                allowed: 1,
                limit: self.capacity,
                remaining: (exact / self.token()) as i64,
                retry_after: 0,
                reset_after: reset
            },
            "{args:?} at {at}, hash before {hash_before:?}, after {hash_after:?}"
        );
        assert_eq!(
            at_after,
            at + reset,
            "the key expires when the bucket would be full again"
        );
        step
    }
}

/// The bucket a hash holds: exactly the fields `tokens` (a plain decimal with at
/// most six places, no trailing zeros) and `ts` (integer ms). None for an absent key.
fn parse_hash(h: &HashMap<String, String>) -> Option<Level> {
    if h.is_empty() {
        return None;
    }
    let mut fields: Vec<&str> = h.keys().map(String::as_str).collect();
    fields.sort_unstable();
    assert_eq!(fields, ["tokens", "ts"], "the bucket hash: {h:?}");
    let tokens = &h["tokens"];
    let micros =
        parse_decimal(tokens).unwrap_or_else(|| panic!("tokens {tokens:?} is not a plain decimal"));
    assert_eq!(
        format_micros(micros),
        *tokens,
        "tokens is written as a plain decimal"
    );
    let ts = h["ts"]
        .parse()
        .unwrap_or_else(|_| panic!("ts {:?} is not integer ms", h["ts"]));
    Some(Level { micros, ts })
}

/// `4`, `2.5`, `0.333333` → millionths; None for anything else.
fn parse_decimal(s: &str) -> Option<i128> {
    let (int, frac) = s.split_once('.').unwrap_or((s, ""));
    let digits = |d: &str| !d.is_empty() && d.bytes().all(|b| b.is_ascii_digit());
    if !digits(int) || (s.contains('.') && !digits(frac)) || frac.len() > 6 {
        return None;
    }
    let frac_micros = format!("{frac:0<6}").parse::<i128>().ok()?;
    Some(int.parse::<i128>().ok()? * MICROS + frac_micros)
}

/// The canonical plain decimal of a level: no trailing zeros, no dot for integers.
fn format_micros(micros: i128) -> String {
    let frac = format!("{:06}", micros % MICROS);
    let frac = frac.trim_end_matches('0');
    if frac.is_empty() {
        (micros / MICROS).to_string()
    } else {
        format!("{}.{frac}", micros / MICROS)
    }
}

#[test]
fn seed_vector_holds_back_to_back_and_time_scaled() {
    let s = Server::start();
    let mut c = connect(&s);
    // The reference's vector: seven calls at once, (allowed, remaining).
    let burst = [(1, 4), (1, 3), (1, 2), (1, 1), (1, 0), (0, 0), (0, 0)];
    for period in [1000, 100] {
        let b = Bucket {
            capacity: 5,
            tokens: 1,
            period,
        };
        let mut done = false;
        for attempt in 1..=5 {
            let key = format!("seed:{period}:{attempt}");
            let steps: Vec<Step> = (0..7).map(|_| b.call(&mut c, &key, 1)).collect();
            // "At once" means within less than one token's refill.
            let t1 = steps[0].stored().ts;
            if steps[6].hi - t1 >= period {
                eprintln!("{period} ms: the burst took too long, retrying");
                continue;
            }
            let got: Vec<(i64, i64)> = steps
                .iter()
                .map(|s| (s.reply.allowed, s.reply.remaining))
                .collect();
            assert_eq!(got, burst, "RL.BUCKET 5 1 {period}ms, seven calls");
            // The 6th and 7th wait for one token. The bucket has been refilling since
            // the first call emptied it from full, so that is a period minus the time
            // since the first call (not the fifth).
            for s in &steps[5..] {
                let r = s.reply.retry_after;
                assert!(
                    r > 0 && r <= period && t1 + period - s.hi <= r && r <= t1 + period - s.lo,
                    "retry_after {r} at {}..={}, first call at {t1}",
                    s.lo,
                    s.hi
                );
            }
            if period == 100 {
                // Three periods after the first call three tokens are back.
                wait_until(&mut c, t1 + 3 * period);
                let later = b.call(&mut c, &key, 1).reply;
                assert_eq!(later.allowed, 1);
                assert!(later.remaining >= 2, "{later:?}");
            }
            done = true;
            break;
        }
        assert!(done, "every burst was too slow: the machine is too busy");
    }
}

#[test]
fn state_is_a_hash_of_tokens_and_ts_expiring_when_full_again() {
    let s = Server::start();
    let mut c = connect(&s);
    // (bucket, cost, stored tokens, ms until full again) on a new key.
    let table = [
        ((5, 1, 1000), 1, "4", 1000),
        ((5, 1, 1000), 3, "2", 3000),
        ((5, 2, 1000), 5, "0", 2500),
        ((10, 3, 1000), 1, "9", 334),
        ((2, 1, 3), 1, "1", 3),
        ((7, 7, 60_000), 7, "0", 60_000),
    ];
    for (i, ((capacity, tokens, period), cost, level, ttl)) in table.into_iter().enumerate() {
        let b = Bucket {
            capacity,
            tokens,
            period,
        };
        let key = format!("b{i}");
        // Read inside the call's MULTI (HGETALL would fail on another type): a
        // TYPE sent afterwards could find the 3 ms bucket already expired.
        let step = b.call(&mut c, &key, cost);
        let ts = step.stored().ts;
        assert_eq!(
            (step.tokens_field.as_deref(), step.expires_at - ts),
            (Some(level), ttl),
            "{:?}: (tokens, PEXPIRETIME - ts)",
            b.args(&key, cost)
        );
        assert_eq!(
            (step.reply.remaining, step.reply.reset_after),
            (capacity - cost, ttl)
        );
    }
}

#[test]
fn fractional_refill_is_stored_as_a_decimal() {
    let s = Server::start();
    let mut c = connect(&s);
    // 1 token per second: after e ms (0 < e < 1000) the level has gained e/1000.
    let b = Bucket {
        capacity: 10,
        tokens: 1,
        period: 1000,
    };
    let t0 = b.call(&mut c, "frac", 9).stored().ts;
    wait_until(&mut c, t0 + 150);
    let step = b.call(&mut c, "frac", 1);
    let e = step.stored().ts - t0;
    let tokens = step.tokens_field.clone().unwrap();
    assert_eq!(
        tokens,
        format_micros(i128::from(e) * 1000),
        "1 + {e}/1000 - 1 tokens"
    );
    assert!(
        tokens.starts_with("0.") || e >= 1000,
        "a fraction of a token after {e} ms: {tokens}"
    );

    // 1 token per 3 ms: thirds, stored within a millionth (0.333333 / 1.666666 …).
    let thirds = Bucket {
        capacity: 1000,
        tokens: 1,
        period: 3,
    };
    let mut ts = thirds.call(&mut c, "thirds", 999).stored().ts;
    let mut seen = Vec::new();
    while seen.len() < 20 {
        wait_until(&mut c, ts + 4);
        let step = thirds.call(&mut c, "thirds", 1);
        ts = step.stored().ts;
        let tokens = step.tokens_field.unwrap();
        let done = tokens.split_once('.').is_some_and(|(_, f)| f.len() == 6);
        seen.push(tokens);
        if done {
            return;
        }
    }
    panic!("no third of a token was ever stored: {seen:?}");
}

#[test]
fn call_at_now_plus_retry_after_is_allowed() {
    let s = Server::start();
    let mut c = connect(&s);
    // 3 tokens per second: a token every 333⅓ ms, so retry_after rounds up.
    let b = Bucket {
        capacity: 3,
        tokens: 3,
        period: 1000,
    };
    for cost in [1, 2, 3] {
        let key = format!("retry:{cost}");
        b.call(&mut c, &key, 3);
        let rejected = b.call(&mut c, &key, cost);
        let r = rejected.reply.retry_after;
        assert_eq!(rejected.reply.allowed, 0);
        assert!(
            r > 0 && r <= (cost * 1000 + 2) / 3,
            "COST {cost}: retry_after {r}"
        );
        wait_until(&mut c, rejected.hi + r);
        let retried = b.call(&mut c, &key, cost).reply;
        assert_eq!(retried.allowed, 1, "COST {cost} after {r} ms: {retried:?}");
    }
}

#[test]
fn cost_above_capacity_and_cost_zero_write_nothing() {
    let s = Server::start();
    let mut c = connect(&s);
    let b = Bucket {
        capacity: 5,
        tokens: 1,
        period: 10_000,
    };
    // (cost, allowed, retry_after): on an absent (full) key.
    for (cost, allowed, retry) in [(6, 0, -1), (100, 0, -1), (0, 1, 0)] {
        let r = b.call(&mut c, "absent", cost).reply;
        assert_eq!(
            r,
            Reply {
                allowed,
                limit: 5,
                remaining: 5,
                retry_after: retry,
                reset_after: 0
            },
            "COST {cost} on an absent key"
        );
        assert!(!exists(&mut c, "absent"), "COST {cost} created the key");
    }
    // On an empty bucket: (cost, allowed, retry_after is -1).
    b.call(&mut c, "empty", 5);
    let snap = snapshot(&mut c, b"empty");
    for (cost, allowed, never) in [(6, 0, true), (0, 1, false), (1, 0, false)] {
        // call() asserts DUMP and PEXPIRETIME are unchanged.
        let r = b.call(&mut c, "empty", cost).reply;
        assert_eq!(
            (r.allowed, r.remaining, r.retry_after == -1),
            (allowed, 0, never),
            "COST {cost} on an empty bucket: {r:?}"
        );
        assert!(r.reset_after > 40_000, "{r:?}");
    }
    assert_eq!(snapshot(&mut c, b"empty"), snap);
}

#[test]
fn lowered_capacity_clamps_the_level() {
    let s = Server::start();
    let mut c = connect(&s);
    let wide = Bucket {
        capacity: 10,
        tokens: 1,
        period: 10_000,
    };
    let narrow = Bucket {
        capacity: 3,
        ..wide
    };
    let step = wide.call(&mut c, "policy", 2);
    assert_eq!(step.tokens_field.as_deref(), Some("8"));
    // 8 tokens seen with capacity 3: full, nothing to reset.
    let seen = narrow.call(&mut c, "policy", 0).reply;
    assert_eq!((seen.limit, seen.remaining, seen.reset_after), (3, 3, 0));
    let taken = narrow.call(&mut c, "policy", 1);
    assert_eq!(
        (taken.reply.remaining, taken.tokens_field.as_deref()),
        (2, Some("2"))
    );
    assert_eq!(taken.expires_at - taken.stored().ts, 10_000);
    // Back at capacity 10 the clamp stays: what was taken is not given back.
    let back = wide.call(&mut c, "policy", 0).reply;
    assert_eq!(back.remaining, 2);
}

#[test]
fn key_vanishes_when_the_bucket_is_full_again() {
    let s = Server::start();
    let mut c = connect(&s);
    let b = Bucket {
        capacity: 3,
        tokens: 1,
        period: 100,
    };
    let step = b.call(&mut c, "refill", 2);
    let full_at = step.stored().ts + 200;
    assert_eq!(step.reply.reset_after, 200);
    assert_eq!(step.expires_at, full_at);
    let gone = wait_for(PATIENCE, "the bucket's key to expire", || {
        let (t, exists): ((i64, i64), i64) = redis::pipe()
            .atomic()
            .cmd("TIME")
            .cmd("EXISTS")
            .arg("refill")
            .query(&mut c)
            .expect("TIME + EXISTS");
        (exists == 0).then_some(ms_of(t))
    });
    assert!(
        gone >= full_at - 1,
        "the key vanished at {gone}, before the bucket was full at {full_at}"
    );
    let r = b.call(&mut c, "refill", 0).reply;
    assert_eq!(
        (r.remaining, r.reset_after),
        (3, 0),
        "a missing key is full"
    );
}
