//! Which clock a call uses: the server's time for the running command.
//!
//! Since Redis 7.2 (and in every Valkey) a MULTI/EXEC, a Lua script and an FCALL run
//! at one frozen instant, the one `TIME` and key expiry use; every RL call inside
//! must use that instant too. Redis 7.0 has no such instant: there RL uses the live
//! clock. Each test first asks the server which of the two it does (is `TIME`
//! frozen across a 50 ms pause inside a transaction?) and checks RL against that,
//! so the same tests hold on every server.

use crate::common::*;

/// A server whose transactions can pause (DEBUG SLEEP) for a measurable time.
fn server() -> Server {
    Server::with(Options {
        args: vec!["--enable-debug-command".into(), "yes".into()],
        ..Options::default()
    })
}

fn ms(t: &Value) -> i64 {
    let pair: (i64, i64) = redis::from_redis_value(t).expect("TIME reply");
    ms_of(pair)
}

/// The score RL.SLIDING logged for its only unit.
fn logged_at(c: &mut Connection, key: &str) -> i64 {
    let scores: Vec<(String, i64)> = cmd("ZRANGE")
        .arg(key)
        .arg(0)
        .arg(-1)
        .arg("WITHSCORES")
        .query(c)
        .expect("ZRANGE");
    assert_eq!(scores.len(), 1, "{scores:?}");
    scores[0].1
}

/// Runs `TIME; DEBUG SLEEP 0.05; <call>; TIME` in one MULTI/EXEC and returns the
/// two TIME readings in ms.
fn in_transaction(c: &mut Connection, call: &[&str]) -> (i64, i64) {
    let replies: Vec<Value> = redis::pipe()
        .atomic()
        .cmd("TIME")
        .cmd("DEBUG")
        .arg("SLEEP")
        .arg("0.05")
        .add_command(command_of(call))
        .cmd("TIME")
        .query(c)
        .expect("MULTI/EXEC");
    (ms(&replies[0]), ms(&replies[3]))
}

/// Where the server freezes time in transactions, the instant; otherwise None.
fn frozen(before: i64, after: i64) -> Option<i64> {
    if before == after {
        Some(before)
    } else {
        assert!(
            after >= before + 50,
            "DEBUG SLEEP 0.05 took {before}..{after}"
        );
        None
    }
}

#[test]
fn a_call_inside_multi_exec_uses_the_transaction_s_instant() {
    let s = server();
    let mut c = s.conn();
    let (before, after) = in_transaction(&mut c, &["RL.SLIDING", "log", "10", "60s"]);
    let at = logged_at(&mut c, "log");
    match frozen(before, after) {
        Some(instant) => assert_eq!(at, instant, "logged at the frozen instant"),
        // Redis 7.0: the live clock, after the pause.
        None => assert!((before + 50..=after).contains(&at), "{before} {at} {after}"),
    }
}

#[test]
fn bucket_time_inside_multi_exec_is_the_transaction_s_instant() {
    let s = server();
    let mut c = s.conn();
    let (before, after) = in_transaction(&mut c, &["RL.BUCKET", "b", "5", "1", "1s"]);
    let ts: i64 = cmd("HGET").arg("b").arg("ts").query(&mut c).unwrap();
    match frozen(before, after) {
        Some(instant) => assert_eq!(ts, instant),
        None => assert!((before + 50..=after).contains(&ts), "{before} {ts} {after}"),
    }
}

#[test]
fn a_fixed_counter_the_server_still_sees_inside_a_transaction_is_live_for_rl_too() {
    // A counter that expires during the transaction's pause: the server keeps it
    // live for the whole transaction (frozen time), so RL must still count it and
    // reject. On 7.0 (no instant a module can read) RL uses the live clock.
    let s = server();
    let mut c = s.conn();
    let window = 200;
    // Fill the current 200 ms window with at least 60 ms of it left.
    let start = align_to_window(&mut c, window, 60);
    let filled = rl(&mut c, &["RL.FIXED", "f", "1", "200ms"]);
    assert_eq!(filled.allowed, 1);
    let end = pexpiretime(&mut c, "f");
    assert_eq!(end, start - start.rem_euclid(window) + window);
    // Sleep in a transaction until past the window's end, then call.
    let sleep = format!("{:.3}", (end - server_ms(&mut c) + 30) as f64 / 1000.0);
    let replies: Vec<Value> = redis::pipe()
        .atomic()
        .cmd("TIME")
        .cmd("DEBUG")
        .arg("SLEEP")
        .arg(&sleep)
        .cmd("EXISTS")
        .arg("f")
        .add_command(on_backend(cmd("RL.FIXED").arg("f").arg("1").arg("200ms")))
        .cmd("TIME")
        .query(&mut c)
        .unwrap();
    let exists: i64 = redis::from_redis_value(&replies[2]).unwrap();
    let reply: Vec<i64> = redis::from_redis_value(&replies[3]).unwrap();
    match frozen(ms(&replies[0]), ms(&replies[4])) {
        Some(_) => {
            assert_eq!(exists, 1, "the server still sees the counter");
            assert_eq!(reply[0], 0, "so RL still counts it: {reply:?}");
        }
        // Redis 7.0 expires keys inside a transaction against the instant it
        // started too, but offers modules no way to read that instant: RL decides
        // on the live clock, past the window's end, so the counter is over.
        None => assert_eq!(reply[0], 1, "exists {exists}, {reply:?}"),
    }
}

/// A Lua body that reads TIME, spins for at least 50 ms of the live clock, calls
/// RL.SLIDING on KEYS[1] and reads TIME again.
const SPIN_THEN_CALL: &str = r#"
    local t0 = redis.call('TIME')
    local x = 0
    for i = 1, 20000000 do x = x + i end
    redis.call('RL.SLIDING', KEYS[1], '10', '60s')
    local t1 = redis.call('TIME')
    return {t0[1], t0[2], t1[1], t1[2]}
"#;

fn spun(reply: Vec<i64>) -> (i64, i64) {
    (ms_of((reply[0], reply[1])), ms_of((reply[2], reply[3])))
}

/// Scripts: frozen where TIME is frozen; the live clock (somewhere between the two
/// readings) where it is not.
fn check_script_time(c: &mut Connection, key: &str, (before, after): (i64, i64)) {
    let at = logged_at(c, key);
    if before == after {
        assert_eq!(at, before, "logged at the script's instant");
    } else {
        assert!((before..=after).contains(&at), "{before} {at} {after}");
    }
}

#[test]
fn a_call_from_a_lua_script_uses_the_script_s_instant() {
    if module_only("a script can call a module command, not FCALL") {
        return;
    }
    let s = server();
    let mut c = s.conn();
    let reply: Vec<i64> = cmd("EVAL")
        .arg(SPIN_THEN_CALL)
        .arg(1)
        .arg("lua-log")
        .query(&mut c)
        .unwrap();
    check_script_time(&mut c, "lua-log", spun(reply));
}

#[test]
fn a_call_from_a_function_uses_the_function_s_instant() {
    if module_only("a function can call a module command, not FCALL") {
        return;
    }
    let s = server();
    let mut c = s.conn();
    let library = format!(
        "#!lua name=rltime\nredis.register_function('spin_then_call', function(KEYS, ARGV) {SPIN_THEN_CALL} end)"
    );
    let _: String = cmd("FUNCTION")
        .arg("LOAD")
        .arg(library)
        .query(&mut c)
        .unwrap();
    let reply: Vec<i64> = cmd("FCALL")
        .arg("spin_then_call")
        .arg(1)
        .arg("fn-log")
        .query(&mut c)
        .unwrap();
    check_script_time(&mut c, "fn-log", spun(reply));
}
