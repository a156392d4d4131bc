//! REFUND n on every RL command (docs/commands.md#refund).
//!
//! Contract: a refund gives back up to n units taken earlier, never beyond the
//! initial state; a key that reaches it is deleted (RL.SHARE's once no tenant is
//! remembered: [`Command::joins`]); a refund on a key already there (or absent)
//! writes nothing. The reply is the state after it, allowed 1,
//! retry_after 0. CL.THROTTLE (redis-cell's syntax) has no REFUND.

use crate::common::*;

const HOUR_MS: i64 = 3_600_000;

/// The RL commands (CL.THROTTLE takes no options).
fn rl_commands() -> impl Iterator<Item = &'static Command> {
    COMMANDS.iter().copied().filter(|l| l.style == Style::Rl)
}

/// `name key params REFUND n`.
fn refund(l: &Command, c: &mut Connection, key: &str, n: u64) -> Reply {
    let mut args = l.args(key, &l.per(5, "1h"), None);
    args.extend(["REFUND".to_string(), n.to_string()]);
    l.run(c, &args)
}

fn take(l: &Command, c: &mut Connection, key: &str, n: u64) -> Reply {
    l.call(c, key, &l.per(5, "1h"), Some(n))
}

/// Whether EXEC ran: a WATCH on the key survived what happened since.
fn watch_survived(c: &mut Connection) -> bool {
    let exec: Option<Vec<String>> = redis::pipe().atomic().cmd("PING").query(c).unwrap();
    exec.is_some()
}

#[test]
fn a_refund_gives_units_back_and_deletes_the_key_at_the_initial_state() {
    let s = Server::start();
    let mut c = s.conn();
    align_to_window(&mut c, HOUR_MS, 60_000);
    for l in rl_commands() {
        let key = l.short;
        assert_eq!(take(l, &mut c, key, 3).remaining, 2, "{}", l.name);
        let r = refund(l, &mut c, key, 1);
        assert_eq!(
            (r.allowed, r.limit, r.remaining, r.retry_after),
            (1, 5, 3, 0),
            "{}: {r:?}",
            l.name
        );
        assert!(r.reset_after > 0, "{}: {r:?}", l.name);
        assert!(exists(&mut c, key), "{}: two units still taken", l.name);
        // The next call sees the units given back.
        assert_eq!(take(l, &mut c, key, 3).remaining, 0, "{}", l.name);
        // More than was taken: back to the initial state, not beyond it.
        let r = refund(l, &mut c, key, 100);
        assert_eq!(
            (r.allowed, r.limit, r.remaining, r.retry_after),
            (1, 5, 5, 0),
            "{}: {r:?}",
            l.name
        );
        if l.joins {
            // The budget still remembers its tenant, until a period after its last
            // write: the key stays until then, and reset_after says when.
            let period = HOUR_MS + l.outlives(&l.per(5, "1h"));
            assert!((1..=period).contains(&r.reset_after), "{}: {r:?}", l.name);
            let pttl: i64 = cmd("PTTL").arg(key).query(&mut c).unwrap();
            l.assert_expiry(&l.per(5, "1h"), r.reset_after, pttl, 50);
        } else {
            assert_eq!(r.reset_after, 0, "{}: {r:?}", l.name);
            assert!(!exists(&mut c, key), "{}: the key is deleted", l.name);
        }
        assert_eq!(
            take(l, &mut c, key, 5).allowed,
            1,
            "{}: all five again",
            l.name
        );
        assert_eq!(
            take(l, &mut c, key, 1).allowed,
            0,
            "{}: and no more",
            l.name
        );
    }
}

#[test]
fn a_refund_that_changes_nothing_writes_nothing() {
    let s = Server::start();
    let mut c = s.conn();
    align_to_window(&mut c, HOUR_MS, 60_000);
    for l in rl_commands() {
        let key = l.short;
        // An absent key is at its initial state already.
        let _: () = cmd("WATCH").arg(key).query(&mut c).unwrap();
        let r = refund(l, &mut c, key, 3);
        assert_eq!(
            (r.allowed, r.remaining, r.retry_after, r.reset_after),
            (1, 5, 0, 0),
            "{}",
            l.name
        );
        assert!(!exists(&mut c, key), "{}", l.name);
        assert!(watch_survived(&mut c), "{}: nothing written", l.name);
        // REFUND 0 on a live key: no change at all, not even the expiry.
        take(l, &mut c, key, 2);
        let before = snapshot(&mut c, key.as_bytes());
        let _: () = cmd("WATCH").arg(key).query(&mut c).unwrap();
        assert_eq!(refund(l, &mut c, key, 0).remaining, 3, "{}", l.name);
        assert_eq!(snapshot(&mut c, key.as_bytes()), before, "{}", l.name);
        assert!(
            watch_survived(&mut c),
            "{}: REFUND 0 writes nothing",
            l.name
        );
        // A refund that gives something back is a write.
        let _: () = cmd("WATCH").arg(key).query(&mut c).unwrap();
        refund(l, &mut c, key, 1);
        assert!(
            !watch_survived(&mut c),
            "{}: a refund that wrote aborts the WATCH",
            l.name
        );
    }
}

#[test]
fn refund_errors_change_nothing() {
    let s = Server::start();
    let mut c = s.conn();
    for l in rl_commands() {
        let key = l.short;
        take(l, &mut c, key, 2);
        let before = snapshot(&mut c, key.as_bytes());
        let base = l.args(key, &l.per(5, "1h"), None);
        for (extra, want) in [
            (&["REFUND"][..], "ERR syntax error: REFUND needs a value"),
            (
                &["REFUND", "-1"],
                "ERR REFUND must be an integer from 0 to 9007199254740991",
            ),
            (&["REFUND", "1.5"], "ERR REFUND must be an integer"),
            (
                &["REFUND", "9007199254740992"],
                "ERR REFUND must be an integer",
            ),
            (
                &["REFUND", "1", "REFUND", "1"],
                "ERR syntax error: REFUND given more than once",
            ),
            (
                &["REFUND", "1", "COST", "1"],
                "ERR syntax error: COST and REFUND exclude each other",
            ),
            (
                &["cost", "1", "refund", "1"],
                "ERR syntax error: COST and REFUND exclude each other",
            ),
            (
                &["REFUNDS", "1"],
                // … REFUND n (or DEBIT n, DELAY max where the command takes them).
                "ERR syntax error: unknown option 'REFUNDS', expected COST n",
            ),
        ] {
            let mut args: Vec<&[u8]> = base.iter().map(|a| a.as_bytes()).collect();
            args.extend(extra.iter().map(|a| a.as_bytes()));
            let e = error_of(&mut c, &args);
            assert!(e.starts_with(want), "{} {extra:?}: {e}", l.name);
            assert_eq!(
                snapshot(&mut c, key.as_bytes()),
                before,
                "{} {extra:?}",
                l.name
            );
        }
    }
    // CL.THROTTLE has redis-cell's syntax: no options (the module's alone).
    if is_library() {
        return;
    }
    let e = error_of(
        &mut c,
        &[b"CL.THROTTLE", b"t", b"4", b"1", b"1h", b"REFUND", b"1"],
    );
    assert!(
        e.to_lowercase()
            .starts_with("err wrong number of arguments"),
        "{e}"
    );
}

#[test]
fn a_sliding_refund_gives_back_the_newest_units_and_trims_the_old() {
    let s = Server::start();
    let mut c = s.conn();
    // Two units that leave a 300 ms window, then two more later.
    let window = ["3", "300ms"];
    let call = |c: &mut Connection, extra: &[&str]| {
        let mut args = vec!["RL.SLIDING", "log"];
        args.extend(window);
        args.extend(extra);
        rl(c, &args)
    };
    call(&mut c, &["COST", "2"]);
    let t = server_ms(&mut c);
    wait_until(&mut c, t + 200);
    call(&mut c, &["COST", "1"]);
    let newest = server_ms(&mut c);
    wait_until(&mut c, t + 320);
    // The first two have left; one counted unit, given back: the key is deleted.
    let r = call(&mut c, &["REFUND", "1"]);
    assert_eq!(
        (r.remaining, r.reset_after),
        (3, 0),
        "{r:?} (newest at {newest})"
    );
    assert!(!exists(&mut c, "log"));

    // Three units at three instants: REFUND 1 removes the newest, and the key then
    // expires when the newest unit left leaves the window.
    let long = ["RL.SLIDING", "log2", "3", "1h"];
    let mut times = Vec::new();
    for _ in 0..3 {
        let at = server_ms(&mut c);
        wait_until(&mut c, at + 2);
        let mut args = long.to_vec();
        args.extend(["COST", "1"]);
        rl(&mut c, &args);
        let scores: Vec<(String, i64)> = cmd("ZRANGE")
            .arg("log2")
            .arg(-1)
            .arg(-1)
            .arg("WITHSCORES")
            .query(&mut c)
            .unwrap();
        times.push(scores[0].1);
    }
    let mut args = long.to_vec();
    args.extend(["REFUND", "1"]);
    let r = rl(&mut c, &args);
    assert_eq!(r.remaining, 1, "two of three units still counted");
    let scores: Vec<(String, i64)> = cmd("ZRANGE")
        .arg("log2")
        .arg(0)
        .arg(-1)
        .arg("WITHSCORES")
        .query(&mut c)
        .unwrap();
    assert_eq!(scores.iter().map(|s| s.1).collect::<Vec<_>>(), times[..2]);
    assert_eq!(pexpiretime(&mut c, "log2"), times[1] + HOUR_MS);
}
