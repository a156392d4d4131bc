//! RL.SLIDING against a real redis-server: the reply, the sorted-set log and its TTL.
//!
//! Every call goes through [`Sliding::call`], which reads the log, TIME, the call,
//! TIME and the log again inside one MULTI, so the call's server time is bracketed
//! to a millisecond or two however noisy the machine is. Each reply is then checked
//! against the reference's formulas (docs/commands.md#rlsliding) applied to the log as it actually was, and each write
//! against what the reference says an allowed call stores.

use crate::common::*;

use std::time::Instant;

/// The log as ZRANGE WITHSCORES shows it: (member, score in ms), oldest first.
type Units = Vec<(String, i64)>;

/// The parameters of `RL.SLIDING key limit window`, the window in ms.
#[derive(Debug, Clone, Copy)]
struct Sliding {
    limit: i64,
    window: i64,
}

/// One call and what surrounded it.
#[derive(Debug)]
struct Step {
    reply: Reply,
    /// Bounds on the server time the call read.
    lo: i64,
    hi: i64,
    before: Units,
    after: Units,
    /// The key's PEXPIRETIME after the call.
    expires_at: i64,
}

impl Step {
    /// The time the call logged its units at (only meaningful for a write).
    fn at(&self) -> i64 {
        self.after.last().expect("a logged unit").1
    }
}

impl Sliding {
    fn args(&self, key: &str, cost: i64) -> Vec<String> {
        let mut args = vec![
            "RL.SLIDING".to_string(),
            key.to_string(),
            self.limit.to_string(),
            window_arg(self.window),
        ];
        // COST 1 is the default: leave it out to exercise that too.
        if cost != 1 {
            args.extend(["COST".to_string(), cost.to_string()]);
        }
        args
    }

    /// The reference's reply to a call at `now` against a log holding `log` (scores, sorted).
    fn expect(&self, log: &[i64], now: i64, cost: i64) -> Reply {
        let counted: Vec<i64> = log
            .iter()
            .copied()
            .filter(|&t| t > now - self.window)
            .collect();
        let n = counted.len() as i64;
        let allowed = n + cost <= self.limit;
        let after = if allowed { n + cost } else { n };
        let newest = if allowed && cost > 0 {
            Some(now)
        } else {
            counted.last().copied()
        };
        let retry_after = if allowed {
            0
        } else if cost > self.limit {
            -1
        } else {
            // The k-th oldest counted unit must leave, k = counted + n - limit.
            counted[(n + cost - self.limit - 1) as usize] + self.window - now
        };
        Reply {
            allowed: i64::from(allowed),
            limit: self.limit,
            remaining: (self.limit - after).max(0),
            retry_after,
            reset_after: match newest {
                Some(t) if after > 0 => t + self.window - now,
                _ => 0,
            },
        }
    }

    /// Calls `RL.SLIDING key … COST cost` and checks the reply and the stored log
    /// against the reference: an allowed call with a cost logs `cost` new members at its
    /// server time, drops exactly the units that left the window and expires the key
    /// when its newest unit leaves; anything else leaves the key byte-identical.
    fn call(&self, c: &mut Connection, key: &str, cost: i64) -> Step {
        let args = self.args(key, cost);
        let o: Observed<Units> = observe(c, &args, |p, k| {
            p.cmd("ZRANGE").arg(k).arg(0).arg(-1).arg("WITHSCORES");
        });
        let (reply, lo, hi, wrote) = (o.reply, o.lo, o.hi, o.wrote);
        let (before, after, at_after) = (o.before, o.after, o.expires_at);
        // Redis 7.0 has no frozen instant in MULTI: a key whose last unit leaves the
        // window during the MULTI expires by itself between the reads around the
        // call (the library's FCALL is slow enough to cross that ms now and then).
        // A call here never deletes the log (an allowed call leaves its units), so a
        // key gone afterwards expired: it was not written.
        let wrote = wrote && !(after.is_empty() && at_after == -2);
        let scores: Vec<i64> = before.iter().map(|u| u.1).collect();
        let step = Step {
            reply,
            lo,
            hi,
            before,
            after,
            expires_at: at_after,
        };
        if !wrote {
            // Nothing written: the reply is the reference's at some instant of the bracket.
            let fits = (lo..=hi).any(|now| {
                let want = self.expect(&scores, now, cost);
                want == reply && !(want.allowed == 1 && cost > 0)
            });
            assert!(
                fits,
                "{args:?} wrote nothing and replied {reply:?}; the reference says {:?} (now in {lo}..={hi}, log {:?})",
                self.expect(&scores, hi, cost),
                step.before
            );
            return step;
        }
        // Written: the new units carry the call's server time.
        let at = step.at();
        assert!(
            (lo..=hi).contains(&at),
            "{args:?} logged at {at}, outside the call's server time {lo}..={hi}"
        );
        let want = self.expect(&scores, at, cost);
        assert!(
            want.allowed == 1 && cost > 0,
            "{args:?} at {at} changed the key though the reference says {want:?} writes nothing\nbefore {:?}\nafter {:?}",
            step.before,
            step.after
        );
        assert_eq!(
            reply, want,
            "{args:?} at {at}, log before {:?}",
            step.before
        );
        let kept: Units = step
            .before
            .iter()
            .filter(|u| u.1 > at - self.window)
            .cloned()
            .collect();
        let added: Units = step
            .after
            .iter()
            .filter(|u| !kept.contains(u))
            .cloned()
            .collect();
        assert!(
            kept.iter().all(|u| step.after.contains(u)),
            "{args:?} at {at} lost counted units: before {:?}, after {:?}",
            step.before,
            step.after
        );
        assert_eq!(
            (added.len() as i64, added.iter().all(|u| u.1 == at)),
            (cost, true),
            "{args:?} at {at} must add {cost} members scored {at} and keep only units after {}: before {:?}, after {:?}",
            at - self.window,
            step.before,
            step.after
        );
        assert_eq!(
            at_after,
            at + self.window,
            "the key expires when its newest unit leaves the window"
        );
        step
    }
}

fn window_arg(ms: i64) -> String {
    if ms % 1000 == 0 {
        format!("{}s", ms / 1000)
    } else {
        format!("{ms}ms")
    }
}

/// Like [`wait_until`] but reads the clock back to back for the last stretch, so
/// it returns within a fraction of a millisecond of `t`.
fn spin_until(c: &mut Connection, t: i64) -> i64 {
    wait_until(c, t - 30);
    let deadline = Instant::now() + PATIENCE;
    loop {
        let now = server_ms(c);
        if now >= t {
            return now;
        }
        assert!(Instant::now() < deadline, "timed out waiting for {t}");
    }
}

/// Polls until `key` is gone; returns the server time read just before the
/// EXISTS that saw it gone.
fn wait_until_gone(c: &mut Connection, key: &str) -> i64 {
    wait_for(PATIENCE, "the key to expire", || {
        let (t, exists): ((i64, i64), i64) = redis::pipe()
            .atomic()
            .cmd("TIME")
            .cmd("EXISTS")
            .arg(key)
            .query(c)
            .expect("TIME + EXISTS");
        (exists == 0).then_some(ms_of(t))
    })
}

fn zcard(c: &mut Connection, key: &str) -> i64 {
    cmd("ZCARD").arg(key).query(c).expect("ZCARD")
}

#[test]
fn seed_vector_holds_time_scaled_to_a_600ms_window() {
    let s = Server::start();
    let mut c = connect(&s);
    let lim = Sliding {
        limit: 5,
        window: 600,
    };
    // The reference's vector, seconds scaled to 10 ms: (offset, allowed, remaining).
    let table = [
        (100, 1, 4),
        (200, 1, 3),
        (300, 1, 2),
        (400, 1, 1),
        (500, 1, 0),
        (550, 0, 0),
        (1210, 1, 4),
    ];
    for attempt in 1..=5 {
        let key = format!("seed:{attempt}");
        let start = server_ms(&mut c);
        let steps: Vec<Step> = table
            .iter()
            .map(|&(offset, ..)| {
                wait_until(&mut c, start + offset);
                lim.call(&mut c, &key, 1)
            })
            .collect();
        // The vector assumes the schedule held: the sixth call within the first
        // unit's window, the seventh after the fifth unit left.
        let (t1, t5) = (steps[0].at(), steps[4].at());
        if steps[5].hi >= t1 + lim.window || steps[6].lo < t5 + lim.window {
            eprintln!("attempt {attempt}: the schedule slipped, retrying");
            continue;
        }
        let got: Vec<(i64, i64)> = steps
            .iter()
            .map(|s| (s.reply.allowed, s.reply.remaining))
            .collect();
        let want: Vec<(i64, i64)> = table.iter().map(|&(_, a, r)| (a, r)).collect();
        assert_eq!(got, want, "(allowed, remaining) at offsets 100 … 1210 ms");
        let retry: Vec<i64> = steps.iter().map(|s| s.reply.retry_after).collect();
        assert_eq!(retry[..5], [0; 5]);
        assert_eq!(retry[6], 0);
        // The first unit leaves at t1 + 600 (≈ 150 ms after the call at 550).
        let r = retry[5];
        assert!(
            r > 0 && t1 + lim.window - steps[5].hi <= r && r <= t1 + lim.window - steps[5].lo,
            "retry_after {r} at {}..={} with the first unit at {t1}",
            steps[5].lo,
            steps[5].hi
        );
        assert_eq!(
            zcard(&mut c, &key),
            1,
            "only the last unit is still counted"
        );
        return;
    }
    panic!("the schedule slipped on every attempt: the machine is too busy");
}

#[test]
fn log_is_a_sorted_set_with_one_member_per_unit_at_server_ms() {
    let s = Server::start();
    let mut c = connect(&s);
    let lim = Sliding {
        limit: 20,
        window: 10_000,
    };
    let first = lim.call(&mut c, "log", 5);
    assert_eq!(first.reply.remaining, 15);
    let ty: String = cmd("TYPE").arg("log").query(&mut c).unwrap();
    assert_eq!(ty, "zset");
    assert_eq!(zcard(&mut c, "log"), 5, "COST 5 logs five members");

    // Ten calls in one MULTI: several land in the same millisecond.
    let before = server_ms(&mut c);
    let mut p = redis::pipe();
    p.atomic();
    for _ in 0..10 {
        p.add_command(on_backend(cmd("RL.SLIDING").arg("log").arg(20).arg("10s")));
    }
    let replies: Vec<Vec<i64>> = p.query(&mut c).unwrap();
    let after = server_ms(&mut c);
    let remaining: Vec<i64> = replies.iter().map(|r| r[2]).collect();
    assert_eq!(remaining, (5..15).rev().collect::<Vec<i64>>());

    let units: Units = cmd("ZRANGE")
        .arg("log")
        .arg(0)
        .arg(-1)
        .arg("WITHSCORES")
        .query(&mut c)
        .unwrap();
    assert_eq!(units.len(), 15, "no member was overwritten: {units:?}");
    let mut members: Vec<&str> = units.iter().map(|u| u.0.as_str()).collect();
    members.sort_unstable();
    members.dedup();
    assert_eq!(members.len(), 15);
    let batch: Vec<i64> = units.iter().map(|u| u.1).filter(|&t| t >= before).collect();
    assert!(
        units.iter().all(|u| u.1 >= first.lo && u.1 <= after),
        "scores are server ms: {units:?} not within {}..={after}",
        first.lo
    );
    let most_in_one_ms = batch
        .iter()
        .map(|t| batch.iter().filter(|u| *u == t).count())
        .max()
        .unwrap_or(0);
    assert!(
        most_in_one_ms >= 2,
        "setup: expected calls sharing a millisecond, got {batch:?}"
    );
    let newest = units.iter().map(|u| u.1).max().unwrap();
    assert_eq!(
        pexpiretime(&mut c, "log"),
        newest + 10_000,
        "PEXPIRETIME = newest score + window"
    );
}

/// On the server's clock: an allowed call made once the oldest units left the
/// window removes them from the set (the exact times are a unit test in
/// core/src/algorithms/sliding.rs). [`Sliding::call`] checks every step against the
/// reference at the time the call really ran, so a slow machine changes what is
/// expected, never whether it is checked. The window is long enough for the usual
/// case (the second call inside the first one's window, the trim by the third);
/// when the machine stalls so long that the log expired before the third call,
/// nothing was left to trim and the test tries again on a new key.
#[test]
fn allowed_call_trims_units_that_left_the_window() {
    let s = Server::start();
    let mut c = connect(&s);
    let lim = Sliding {
        limit: 10,
        window: 1000,
    };
    for attempt in 1..=10 {
        let key = format!("trim:{attempt}");
        let a = lim.call(&mut c, &key, 3).at();
        wait_until(&mut c, a + lim.window / 2);
        let second = lim.call(&mut c, &key, 2);
        let b = second.at();
        let inside = b < a + lim.window;
        assert_eq!(
            zcard(&mut c, &key),
            if inside { 5 } else { 2 },
            "units at {a} and {b}, window {}",
            lim.window
        );
        wait_until(&mut c, a + lim.window);
        let step = lim.call(&mut c, &key, 1);
        assert!(
            step.after.iter().all(|u| u.1 > a),
            "the units at {a} left the window and must be removed: {:?}",
            step.after
        );
        let still = if b > step.at() - lim.window { 2 } else { 0 };
        assert_eq!(zcard(&mut c, &key), still + 1);
        assert_eq!(step.reply.remaining, lim.limit - still - 1);
        // A call that found the units at a stored after they had left removed them
        // (the second one if it came that late, else the third), unless the whole
        // log expired first.
        let found = |s: &Step| s.before.iter().any(|u| u.1 == a);
        if found(&step) || (!inside && found(&second)) {
            return;
        }
        eprintln!(
            "attempt {attempt}: the log expired before the third call (a slow machine); again"
        );
    }
    panic!("in 10 attempts no call found units that had left the window to remove");
}

#[test]
fn unit_counts_until_exactly_window_ms_after_it() {
    let s = Server::start();
    let mut c = connect(&s);
    let lim = Sliding {
        limit: 1,
        window: 200,
    };
    // Inspect (COST 0) in a tight loop around the moment the unit leaves; a call
    // whose bracket is a single ms shows the boundary exactly: counted at
    // t + window - 1, gone at t + window. A busy machine may step over those
    // milliseconds (Redis 7.0 reads a live clock inside MULTI, so a slow call
    // spans two), so try up to 20 units.
    for attempt in 1..=20 {
        let key = format!("edge:{attempt}");
        let t = lim.call(&mut c, &key, 1).at();
        let leaves = t + lim.window;
        spin_until(&mut c, leaves - 3);
        let (mut before_edge, mut at_edge) = (false, false);
        loop {
            let step = lim.call(&mut c, &key, 0);
            if step.lo > leaves {
                break;
            }
            if step.lo == step.hi {
                let remaining = step.reply.remaining;
                // call() already checked these against the reference; state them plainly.
                if step.lo == leaves - 1 {
                    assert_eq!(remaining, 0, "the unit at {t} counts at {}", step.lo);
                    before_edge = true;
                } else if step.lo == leaves {
                    assert_eq!(remaining, 1, "the unit at {t} is gone at {leaves}");
                    at_edge = true;
                }
            }
        }
        if before_edge && at_edge {
            return;
        }
        eprintln!("attempt {attempt}: missed the boundary milliseconds, retrying");
    }
    panic!("never observed the boundary: the machine is too busy");
}

#[test]
fn rejected_calls_are_not_logged_and_do_not_extend_the_ban() {
    let s = Server::start();
    let mut c = connect(&s);
    let lim = Sliding {
        limit: 2,
        window: 10_000,
    };
    let t1 = lim.call(&mut c, "hammer", 1).at();
    lim.call(&mut c, "hammer", 1);
    let snap = snapshot(&mut c, b"hammer");
    let mut last = i64::MAX;
    for _ in 0..20 {
        // call() asserts the key stays byte-identical with the same expiry.
        let step = lim.call(&mut c, "hammer", 1);
        let r = step.reply;
        assert_eq!((r.allowed, r.remaining), (0, 0));
        assert!(
            t1 + lim.window - step.hi <= r.retry_after
                && r.retry_after <= t1 + lim.window - step.lo,
            "retry_after {} must count down to the first unit leaving at {}",
            r.retry_after,
            t1 + lim.window
        );
        assert!(r.retry_after <= last, "retry_after grew: {last} then {r:?}");
        last = r.retry_after;
    }
    assert_eq!(zcard(&mut c, "hammer"), 2);
    assert_eq!(snapshot(&mut c, b"hammer"), snap);
}

#[test]
fn retry_after_waits_for_the_kth_oldest_unit() {
    let s = Server::start();
    let mut c = connect(&s);
    let lim = Sliding {
        limit: 5,
        window: 10_000,
    };
    // Units: one at t1, two at t2, two at t3 (full).
    let mut times = Vec::new();
    for cost in [1, 2, 2] {
        if let Some(&prev) = times.last() {
            wait_until(&mut c, prev + 2);
        }
        times.push(lim.call(&mut c, "k", cost).at());
    }
    let (t1, t2, t3) = (times[0], times[1], times[2]);
    // (cost, the unit that must leave: the (counted + cost - limit)-th oldest)
    let table = [(1, t1), (2, t2), (3, t2), (4, t3), (5, t3)];
    for (cost, leaves) in table {
        let step = lim.call(&mut c, "k", cost);
        let r = step.reply.retry_after;
        assert!(
            leaves + lim.window - step.hi <= r && r <= leaves + lim.window - step.lo,
            "COST {cost}: retry_after {r}, but the unit at {leaves} leaves at {}",
            leaves + lim.window
        );
        assert_eq!(step.reply.allowed, 0);
    }
}

#[test]
fn cost_above_limit_and_cost_zero_write_nothing() {
    let s = Server::start();
    let mut c = connect(&s);
    let lim = Sliding {
        limit: 5,
        window: 10_000,
    };
    // (cost, allowed, retry_after) on an absent key and on a key holding 2 units.
    let table = [(6, 0, -1), (100, 0, -1), (0, 1, 0)];
    for (cost, allowed, retry) in table {
        let step = lim.call(&mut c, "absent", cost);
        assert_eq!(
            step.reply,
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
    let t = lim.call(&mut c, "live", 2).at();
    let snap = snapshot(&mut c, b"live");
    for (cost, allowed, retry) in table {
        // call() asserts DUMP and PEXPIRETIME are unchanged.
        let step = lim.call(&mut c, "live", cost);
        let r = step.reply;
        assert_eq!(
            (r.allowed, r.remaining, r.retry_after),
            (allowed, 3, retry),
            "COST {cost} on a live key"
        );
        assert!(
            t + lim.window - step.hi <= r.reset_after && r.reset_after <= t + lim.window - step.lo
        );
    }
    assert_eq!(snapshot(&mut c, b"live"), snap);
}

#[test]
fn reset_after_counts_down_to_the_newest_unit_leaving_and_the_key_goes_then() {
    let s = Server::start();
    let mut c = connect(&s);
    let lim = Sliding {
        limit: 3,
        window: 300,
    };
    // The inspection must run between the two units' exits (200 ms apart at
    // best); a machine that stalls past the second one tries again on a new key
    // (every call is still checked against the reference at its own time).
    for attempt in 1..=10 {
        let key = format!("r:{attempt}");
        let first = lim.call(&mut c, &key, 1);
        assert_eq!(first.reply.reset_after, lim.window);
        wait_until(&mut c, first.at() + 100);
        let second = lim.call(&mut c, &key, 1);
        let newest = second.at();
        assert_eq!(
            second.reply.reset_after, lim.window,
            "newest + window - now"
        );
        assert_eq!(second.expires_at, newest + lim.window);

        // Past the first unit's exit: one unit left, and reset_after keeps counting down.
        wait_until(&mut c, first.at() + lim.window);
        let inspect = lim.call(&mut c, &key, 0);
        if inspect.hi >= newest + lim.window {
            eprintln!("attempt {attempt}: the inspection came after both units left; again");
            continue;
        }
        let r = inspect.reply;
        assert_eq!(r.remaining, 2);
        assert!(
            newest + lim.window - inspect.hi <= r.reset_after
                && r.reset_after <= newest + lim.window - inspect.lo
                && r.reset_after < lim.window,
            "reset_after {r:?} with the newest unit at {newest}"
        );

        let gone = wait_until_gone(&mut c, &key);
        assert!(
            gone >= newest + lim.window - 1,
            "the key vanished at {gone}, before its newest unit left at {}",
            newest + lim.window
        );
        let fresh = lim.call(&mut c, &key, 0).reply;
        assert_eq!((fresh.remaining, fresh.reset_after), (3, 0));
        return;
    }
    panic!("in 10 attempts no inspection ran while one unit was left");
}

#[test]
fn lowered_limit_on_a_live_log_leaves_zero_remaining_and_rejects() {
    let s = Server::start();
    let mut c = connect(&s);
    let wide = Sliding {
        limit: 5,
        window: 10_000,
    };
    let narrow = Sliding { limit: 2, ..wide };
    let mut times = Vec::new();
    for _ in 0..4 {
        if let Some(&prev) = times.last() {
            wait_until(&mut c, prev + 1);
        }
        times.push(wide.call(&mut c, "policy", 1).at());
    }
    let step = narrow.call(&mut c, "policy", 1);
    let r = step.reply;
    assert_eq!((r.allowed, r.limit, r.remaining), (0, 2, 0));
    // 4 counted + 1 - 2: the third oldest unit must leave.
    let leaves = times[2] + wide.window;
    assert!(
        leaves - step.hi <= r.retry_after && r.retry_after <= leaves - step.lo,
        "retry_after {r:?}, the third unit leaves at {leaves}"
    );
    assert_eq!(narrow.call(&mut c, "policy", 0).reply.remaining, 0);
    assert_eq!(zcard(&mut c, "policy"), 4, "what was consumed is kept");
    // Back under the old limit the consumed units still count.
    let back = wide.call(&mut c, "policy", 1).reply;
    assert_eq!((back.allowed, back.remaining), (1, 0));
}

/// A foreign member holding the last sequence number (2^64 − 1) at the newest time:
/// it can be taken once, then the call is an error instead of a loop that never
/// ends; the server keeps serving, and what was logged is what was replicated.
#[test]
fn the_last_sequence_number_is_an_error_not_an_endless_loop() {
    let s = Server::start();
    let mut c = connect(&s);
    let now = server_ms(&mut c);
    let _: i64 = cmd("ZADD")
        .arg("log")
        .arg(now + 60_000)
        .arg("18446744073709551614")
        .query(&mut c)
        .unwrap();
    // 18446744073709551615 is still free: one unit logs under it.
    let r = rl(&mut c, &["RL.SLIDING", "log", "10", "1h"]);
    assert_eq!((r.allowed, r.remaining), (1, 8));
    let members: Vec<String> = cmd("ZRANGE")
        .arg("log")
        .arg(0)
        .arg(-1)
        .query(&mut c)
        .unwrap();
    assert_eq!(members, ["18446744073709551614", "18446744073709551615"]);
    // No number is left: an error, nothing more logged.
    let e = error_of(
        &mut c,
        &[b"RL.SLIDING", b"log", b"10", b"1h", b"COST", b"2"],
    );
    assert_eq!(e, "ERR could not update the key (logging the new units)");
    let card: i64 = cmd("ZCARD").arg("log").query(&mut c).unwrap();
    assert_eq!(card, 2);
    let pong: String = cmd("PING").query(&mut c).unwrap();
    assert_eq!(pong, "PONG");
}
