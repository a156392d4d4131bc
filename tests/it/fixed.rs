//! RL.FIXED against a real redis-server.
//!
//! The server's clock is read with TIME just before and just after a call, so the
//! call's own clock lies within [t0, t1]: exact values (the window end, PEXPIRETIME)
//! are checked exactly, and durations measured from the call's clock are checked to
//! lie within what that bracket allows.

use crate::common::*;

use std::time::Duration;

/// End of the epoch-aligned window of `w` ms that contains `now`.
fn window_end(now: i64, w: i64) -> i64 {
    now - now.rem_euclid(w) + w
}

/// An RL.FIXED call bracketed by TIME reads: (reply, t0, t1).
fn timed(c: &mut Connection, args: &[&str]) -> (Reply, i64, i64) {
    let t0 = server_ms(c);
    let r = rl(c, args);
    let t1 = server_ms(c);
    (r, t0, t1)
}

fn get(c: &mut Connection, key: &str) -> Option<String> {
    cmd("GET").arg(key).query(c).expect("GET")
}

/// A call with limit 5 under `window` on a key `k` holding 2 units from another
/// window: allowed, it keeps the count (3 now). Returns the TIME bracket [t0, t1].
fn call_keeping_count_of_two(c: &mut Connection, window: &str) -> (i64, i64) {
    let (r, t0, t1) = timed(c, &["RL.FIXED", "k", "5", window]);
    assert_eq!((r.allowed, r.remaining), (1, 2), "{r:?}");
    assert_eq!(get(c, "k").as_deref(), Some("3"));
    (t0, t1)
}

/// `ms` is what a call made at some instant in [t0, t1] measures until `end`.
fn assert_ms_until(ms: i64, end: i64, t0: i64, t1: i64, what: &str) {
    assert!(
        (end - t1..=end - t0).contains(&ms),
        "{what} = {ms}, expected {}..={} (window end {end}, call between {t0} and {t1})",
        end - t1,
        end - t0
    );
}

/// The key expires at the end of the `w`-ms epoch window that held the call made
/// in [t0, t1], exactly; returns that end.
fn assert_expires_at_window_end(c: &mut Connection, key: &str, w: i64, t0: i64, t1: i64) -> i64 {
    let at = pexpiretime(c, key);
    assert_eq!(at % w, 0, "PEXPIRETIME {at} is not a multiple of {w}");
    assert!(
        at > t0 && at - w <= t1,
        "PEXPIRETIME {at} is not the end of the {w} ms window of a call in [{t0}, {t1}]"
    );
    at
}

#[test]
fn replies_with_five_fields_and_counts_down() {
    let s = Server::start();
    let mut c = s.conn();
    let now = align_to_window(&mut c, 60_000, 5_000);
    let r = rl(&mut c, &["RL.FIXED", "user:42", "5", "1m"]);
    assert_eq!(
        (r.allowed, r.limit, r.remaining, r.retry_after),
        (1, 5, 4, 0)
    );
    let end = now - now % 60_000 + 60_000;
    assert!(r.reset_after > 0 && r.reset_after <= end - now, "{r:?}");
    assert_eq!(
        pexpiretime(&mut c, "user:42"),
        end,
        "the key expires exactly at the window's end"
    );
    let v: i64 = cmd("GET").arg("user:42").query(&mut c).unwrap();
    assert_eq!(v, 1);
}

#[test]
fn admits_limit_then_rejects_until_the_window_end() {
    let s = Server::start();
    let mut c = s.conn();
    let start = align_to_window(&mut c, 60_000, 10_000);
    let end = window_end(start, 60_000);
    for remaining in [2, 1, 0] {
        let (r, t0, t1) = timed(&mut c, &["RL.FIXED", "k", "3", "1m"]);
        assert_eq!(
            (r.allowed, r.limit, r.remaining, r.retry_after),
            (1, 3, remaining, 0),
            "{r:?}"
        );
        assert_ms_until(r.reset_after, end, t0, t1, "reset_after");
    }
    assert_eq!(pexpiretime(&mut c, "k"), end);
    for _ in 0..2 {
        let (r, t0, t1) = timed(&mut c, &["RL.FIXED", "k", "3", "1m"]);
        assert_eq!((r.allowed, r.limit, r.remaining), (0, 3, 0), "{r:?}");
        assert_ms_until(r.retry_after, end, t0, t1, "retry_after");
        assert_eq!(
            r.reset_after, r.retry_after,
            "both are the window end - now of the same call"
        );
    }
    assert_eq!(
        get(&mut c, "k").as_deref(),
        Some("3"),
        "rejections add nothing"
    );
    assert_eq!(pexpiretime(&mut c, "k"), end);
}

#[test]
fn windows_are_aligned_to_the_epoch() {
    let s = Server::start();
    let mut c = s.conn();
    for (window, w) in [
        ("1m", 60_000),
        ("10s", 10_000),
        ("1500ms", 1_500),
        ("1h", 3_600_000),
        ("1d", 86_400_000),
    ] {
        align_to_window(&mut c, w, 300);
        let key = format!("epoch:{window}");
        let (r, t0, t1) = timed(&mut c, &["RL.FIXED", &key, "5", window]);
        assert_eq!((r.allowed, r.remaining), (1, 4), "{window}: {r:?}");
        let end = assert_expires_at_window_end(&mut c, &key, w, t0, t1);
        assert_ms_until(r.reset_after, end, t0, t1, window);
    }
}

#[test]
fn durations_take_units_in_any_case_and_bare_integers_are_seconds() {
    let s = Server::start();
    let mut c = s.conn();
    for (window, w) in [
        ("500ms", 500),
        ("500MS", 500),
        ("60", 60_000),
        ("60s", 60_000),
        ("60S", 60_000),
        ("1m", 60_000),
        ("1M", 60_000),
        ("2h", 7_200_000),
        ("2H", 7_200_000),
        ("1d", 86_400_000),
        ("1D", 86_400_000),
    ] {
        align_to_window(&mut c, w, 200);
        let key = format!("unit:{window}");
        let (r, t0, t1) = timed(&mut c, &["RL.FIXED", &key, "5", window]);
        assert_eq!(r.allowed, 1, "{window}: {r:?}");
        let end = assert_expires_at_window_end(&mut c, &key, w, t0, t1);
        assert!(
            (1..=w).contains(&r.reset_after),
            "{window}: reset_after {} outside the window",
            r.reset_after
        );
        assert_ms_until(r.reset_after, end, t0, t1, window);
    }
}

#[test]
fn cost_consumes_several_units_all_or_nothing() {
    let s = Server::start();
    let mut c = s.conn();
    align_to_window(&mut c, 60_000, 10_000);
    let r = rl(&mut c, &["RL.FIXED", "k", "10", "1m", "COST", "3"]);
    assert_eq!((r.allowed, r.remaining), (1, 7), "{r:?}");
    assert_eq!(get(&mut c, "k").as_deref(), Some("3"));
    let r = rl(&mut c, &["RL.FIXED", "k", "10", "1m", "cost", "6"]);
    assert_eq!((r.allowed, r.remaining), (1, 1), "{r:?}");
    let before = snapshot(&mut c, b"k");
    let r = rl(&mut c, &["RL.FIXED", "k", "10", "1m", "COST", "2"]);
    assert_eq!(
        (r.allowed, r.remaining),
        (0, 1),
        "9 + 2 > 10 is rejected whole: {r:?}"
    );
    assert!(r.retry_after > 0, "{r:?}");
    assert_eq!(snapshot(&mut c, b"k"), before);
    let r = rl(&mut c, &["RL.FIXED", "k", "10", "1m", "COST", "1"]);
    assert_eq!((r.allowed, r.remaining, r.retry_after), (1, 0, 0), "{r:?}");
    assert_eq!(get(&mut c, "k").as_deref(), Some("10"));
}

#[test]
fn cost_above_limit_is_never_allowed_and_writes_nothing() {
    let s = Server::start();
    let mut c = s.conn();
    align_to_window(&mut c, 60_000, 10_000);
    let r = rl(&mut c, &["RL.FIXED", "absent", "5", "1m", "COST", "6"]);
    assert_eq!(
        (
            r.allowed,
            r.limit,
            r.remaining,
            r.retry_after,
            r.reset_after
        ),
        (0, 5, 5, -1, 0)
    );
    assert!(!exists(&mut c, "absent"), "a rejected call creates no key");

    rl(&mut c, &["RL.FIXED", "k", "5", "1m", "COST", "2"]);
    let end = pexpiretime(&mut c, "k");
    let before = snapshot(&mut c, b"k");
    let (r, t0, t1) = timed(&mut c, &["RL.FIXED", "k", "5", "1m", "COST", "6"]);
    assert_eq!(
        (r.allowed, r.limit, r.remaining, r.retry_after),
        (0, 5, 3, -1)
    );
    assert_ms_until(r.reset_after, end, t0, t1, "reset_after");
    assert_eq!(snapshot(&mut c, b"k"), before);
}

#[test]
fn cost_zero_on_an_absent_key_reports_a_fresh_limiter_and_creates_nothing() {
    let s = Server::start();
    let mut c = s.conn();
    let r = rl(&mut c, &["RL.FIXED", "k", "5", "1m", "COST", "0"]);
    assert_eq!(
        (
            r.allowed,
            r.limit,
            r.remaining,
            r.retry_after,
            r.reset_after
        ),
        (1, 5, 5, 0, 0)
    );
    assert!(!exists(&mut c, "k"));
}

#[test]
fn cost_zero_on_a_present_key_reports_its_state_and_leaves_it_untouched() {
    let s = Server::start();
    let mut c = s.conn();
    align_to_window(&mut c, 60_000, 10_000);
    rl(&mut c, &["RL.FIXED", "k", "5", "1m", "COST", "2"]);
    let end = pexpiretime(&mut c, "k");
    let before = snapshot(&mut c, b"k");
    let (r, t0, t1) = timed(&mut c, &["RL.FIXED", "k", "5", "1m", "COST", "0"]);
    assert_eq!(
        (r.allowed, r.limit, r.remaining, r.retry_after),
        (1, 5, 3, 0)
    );
    assert_ms_until(r.reset_after, end, t0, t1, "reset_after");
    assert_eq!(snapshot(&mut c, b"k"), before);
    assert_eq!(get(&mut c, "k").as_deref(), Some("2"));
}

#[test]
fn rejected_call_leaves_key_untouched() {
    let s = Server::start();
    let mut c = s.conn();
    align_to_window(&mut c, 60_000, 10_000);
    rl(&mut c, &["RL.FIXED", "k", "2", "1m", "COST", "2"]);
    let before = snapshot(&mut c, b"k");
    assert!(before.0.is_some() && before.1 > 0, "{before:?}");
    for _ in 0..3 {
        let r = rl(&mut c, &["RL.FIXED", "k", "2", "1m"]);
        assert_eq!(r.allowed, 0, "{r:?}");
        assert_eq!(snapshot(&mut c, b"k"), before);
    }
}

#[test]
fn the_counter_is_a_native_integer_string() {
    let s = Server::start();
    let mut c = s.conn();
    align_to_window(&mut c, 60_000, 10_000);
    rl(&mut c, &["RL.FIXED", "k", "10", "1m", "COST", "7"]);
    let kind: String = cmd("TYPE").arg("k").query(&mut c).unwrap();
    assert_eq!(kind, "string");
    assert_eq!(get(&mut c, "k").as_deref(), Some("7"));
    let pttl: i64 = cmd("PTTL").arg("k").query(&mut c).unwrap();
    assert!((1..=60_000).contains(&pttl), "PTTL {pttl}");
    // Native commands read and write the same counter.
    let n: i64 = cmd("INCRBY").arg("k").arg(2).query(&mut c).unwrap();
    assert_eq!(n, 9);
    let r = rl(&mut c, &["RL.FIXED", "k", "10", "1m"]);
    assert_eq!((r.allowed, r.remaining), (1, 0), "{r:?}");
    assert_eq!(get(&mut c, "k").as_deref(), Some("10"));
}

#[test]
fn a_counter_written_natively_with_an_expiry_is_honoured() {
    let s = Server::start();
    let mut c = s.conn();
    let now = align_to_window(&mut c, 60_000, 10_000);
    let end = window_end(now, 60_000);
    let _: () = cmd("SET")
        .arg("k")
        .arg(4)
        .arg("PXAT")
        .arg(end)
        .query(&mut c)
        .unwrap();
    let r = rl(&mut c, &["RL.FIXED", "k", "5", "1m"]);
    assert_eq!((r.allowed, r.remaining), (1, 0), "{r:?}");
    assert_eq!(rl(&mut c, &["RL.FIXED", "k", "5", "1m"]).allowed, 0);
    assert_eq!(pexpiretime(&mut c, "k"), end);
}

#[test]
fn limit_is_available_again_once_a_short_window_has_passed() {
    let s = Server::start();
    let mut c = s.conn();
    let w = 300;
    let start = align_to_window(&mut c, w, 200);
    let end = window_end(start, w);
    for remaining in [1, 0] {
        let r = rl(&mut c, &["RL.FIXED", "k", "2", "300ms"]);
        assert_eq!((r.allowed, r.remaining), (1, remaining), "{r:?}");
    }
    let (r, t0, t1) = timed(&mut c, &["RL.FIXED", "k", "2", "300ms"]);
    assert_eq!(r.allowed, 0, "{r:?}");
    assert_ms_until(r.retry_after, end, t0, t1, "retry_after");
    assert_eq!(pexpiretime(&mut c, "k"), end);

    // Redis keeps a key through the millisecond of its expiry (it expires once the
    // clock is past it), so wait for the next one.
    wait_for(Duration::from_secs(5), "the window to pass", || {
        (server_ms(&mut c) > end).then_some(())
    });
    assert!(!exists(&mut c, "k"), "the counter expired with its window");
    let (r, t0, t1) = timed(&mut c, &["RL.FIXED", "k", "2", "300ms"]);
    assert_eq!(
        (r.allowed, r.remaining, r.retry_after),
        (1, 1, 0),
        "a call after the window end counts in a new window: {r:?}"
    );
    let next = assert_expires_at_window_end(&mut c, "k", w, t0, t1);
    assert!(next > end, "the new counter belongs to a later window");
    assert_eq!(get(&mut c, "k").as_deref(), Some("1"));
}

#[test]
fn lowering_the_limit_keeps_the_count_and_remaining_stays_at_zero() {
    let s = Server::start();
    let mut c = s.conn();
    align_to_window(&mut c, 60_000, 10_000);
    rl(&mut c, &["RL.FIXED", "k", "5", "1m", "COST", "3"]);
    let end = pexpiretime(&mut c, "k");
    let before = snapshot(&mut c, b"k");
    let (r, t0, t1) = timed(&mut c, &["RL.FIXED", "k", "2", "1m"]);
    assert_eq!((r.allowed, r.limit, r.remaining), (0, 2, 0), "{r:?}");
    assert_ms_until(r.retry_after, end, t0, t1, "retry_after");
    // COST 0 too: used (3) + 0 > limit (2), and remaining is never negative.
    let r = rl(&mut c, &["RL.FIXED", "k", "2", "1m", "COST", "0"]);
    assert_eq!((r.allowed, r.limit, r.remaining), (0, 2, 0), "{r:?}");
    assert_eq!(snapshot(&mut c, b"k"), before);
}

#[test]
fn raising_the_limit_keeps_the_count() {
    let s = Server::start();
    let mut c = s.conn();
    align_to_window(&mut c, 60_000, 10_000);
    rl(&mut c, &["RL.FIXED", "k", "3", "1m", "COST", "3"]);
    let end = pexpiretime(&mut c, "k");
    assert_eq!(rl(&mut c, &["RL.FIXED", "k", "3", "1m"]).allowed, 0);
    let r = rl(&mut c, &["RL.FIXED", "k", "5", "1m"]);
    assert_eq!((r.allowed, r.limit, r.remaining), (1, 5, 1), "{r:?}");
    assert_eq!(get(&mut c, "k").as_deref(), Some("4"));
    assert_eq!(pexpiretime(&mut c, "k"), end, "same window, same end");
}

#[test]
fn a_longer_window_keeps_the_count_and_expires_at_its_own_end() {
    let s = Server::start();
    let mut c = s.conn();
    // 2 s left in the 10 s window, hence in the minute too.
    align_to_window(&mut c, 10_000, 2_000);
    rl(&mut c, &["RL.FIXED", "k", "5", "10s", "COST", "2"]);
    let (t0, t1) = call_keeping_count_of_two(&mut c, "1m");
    assert_expires_at_window_end(&mut c, "k", 60_000, t0, t1);
}

#[test]
fn a_shorter_window_keeps_the_count_and_expires_at_the_current_window_end() {
    let s = Server::start();
    let mut c = s.conn();
    // Stay clear of the hour's last minute, where the hour's end is close to the
    // end of the next 10 s window.
    wait_for(
        Duration::from_secs(75),
        "an hour with a minute left",
        || {
            let now = server_ms(&mut c);
            let ok = 3_600_000 - now % 3_600_000 > 60_000 && 10_000 - now % 10_000 > 2_000;
            ok.then_some(())
        },
    );
    rl(&mut c, &["RL.FIXED", "k", "5", "1h", "COST", "2"]);
    let (t0, t1) = call_keeping_count_of_two(&mut c, "10s");
    assert_expires_at_window_end(&mut c, "k", 10_000, t0, t1);
}

/// docs/commands.md#parameters-come-with-every-call: after a policy change "a fixed counter keeps its count (an allowed call
/// then expires it at the current window's end)" — also when the old window ends
/// exactly one new window after the current one (2 s → 1 s in the first half of a
/// 2 s window), which looks like a clock step back to a module that only sees the
/// count and the expiry.
#[test]
fn shorter_window_expires_at_the_current_window_end_even_one_window_before_the_old_end() {
    let s = Server::start();
    let mut c = s.conn();
    // In the first half of a 2 s window, with some slack.
    wait_for(Duration::from_secs(5), "the start of a 2 s window", || {
        (server_ms(&mut c) % 2_000 < 600).then_some(())
    });
    let (_, t0, t1) = timed(&mut c, &["RL.FIXED", "k", "5", "2000ms", "COST", "2"]);
    let old_end = assert_expires_at_window_end(&mut c, "k", 2_000, t0, t1);
    let (t0, t1) = call_keeping_count_of_two(&mut c, "1000ms");
    let at = pexpiretime(&mut c, "k");
    assert_eq!(
        at,
        old_end - 1_000,
        "an allowed call under a 1 s window made in [{t0}, {t1}] must expire the counter \
         at that second's end, not at the old 2 s window's end {old_end}"
    );
}
