//! RL.QUOTA on real servers whose clock is set (libfaketime): every calendar vector
//! at its instant, a call just before and just after a local midnight, days of 23,
//! 25 and 23.5 hours, Feb 28/29 with ON 31, weeks ON sun, quarters, a replica
//! without the module, an AOF restart, and errors that change nothing.
//!
//! A server's clock is set with Debian's `faketime` package
//! (`LD_PRELOAD=…/libfaketime.so.1 FAKETIME="@2026-03-08 06:59:50"`): the server
//! starts at that instant and its clock ticks on. Debian's redis-server 7.0.15 does
//! not start under it; Valkey 8.1.8 / 9.1.2 and Redis 8.2.3 (which `make compat`
//! fetches into RL_COMPAT_CACHE) do. Without libfaketime or such a server, the
//! clock tests skip, saying what is missing. Calls run at one known millisecond
//! ([`instant::at_one_instant`]), so replies are checked exactly.

use std::path::PathBuf;
use std::sync::LazyLock;
use std::time::Duration;

use crate::common::instant;
use crate::common::*;

/// libfaketime, where Debian's `faketime` package puts it.
fn libfaketime() -> Option<PathBuf> {
    std::fs::read_dir("/usr/lib")
        .ok()?
        .flatten()
        .find_map(|arch| {
            let p = arch.path().join("faketime/libfaketime.so.1");
            p.exists().then_some(p)
        })
}

/// A server that starts under libfaketime: `RL_FAKETIME_SERVER`, the server a
/// `make compat` row runs when it is one of those, or one of them in the compat
/// cache.
fn clock_server() -> Option<PathBuf> {
    const WORKS: [&str; 3] = ["valkey-9.1.2", "valkey-8.1.8", "redis-8.2.3"];
    if let Some(p) = std::env::var_os("RL_FAKETIME_SERVER").filter(|p| !p.is_empty()) {
        return Some(PathBuf::from(p));
    }
    if let Some(p) = std::env::var_os("RL_REDIS_SERVER").filter(|p| !p.is_empty()) {
        let p = PathBuf::from(p);
        return WORKS
            .iter()
            .any(|w| p.to_string_lossy().contains(w))
            .then_some(p);
    }
    let cache = std::env::var_os("RL_COMPAT_CACHE")
        .map(PathBuf::from)
        .or_else(|| std::env::var_os("HOME").map(|h| PathBuf::from(h).join(".cache/rl-compat")))?;
    WORKS.iter().find_map(|id| {
        ["valkey-server", "redis-server"]
            .iter()
            .map(|s| cache.join(id).join("bin").join(s))
            .find(|p| p.exists())
    })
}

/// What a clock test needs, or None (and why, once per test) when it cannot run.
fn clock() -> Option<(PathBuf, PathBuf)> {
    if library_lacking("rl_quota") {
        return None;
    }
    match (libfaketime(), clock_server()) {
        (Some(lib), Some(server)) => Some((lib, server)),
        (None, _) => {
            eprintln!("skipped: libfaketime is missing (apt-get install faketime, or make deps)");
            None
        }
        (_, None) => {
            eprintln!(
                "skipped: no server that starts under libfaketime (Valkey 8.1.8/9.1.2 or Redis \
                 8.2.3): run scripts/compat.sh to fetch them, or set RL_FAKETIME_SERVER"
            );
            None
        }
    }
}

/// A server whose clock starts at `utc` (`2026-03-08 06:59:50`, UTC).
fn server_at((lib, binary): &(PathBuf, PathBuf), utc: &str, more: Options) -> Server {
    let mut env = vec![
        ("LD_PRELOAD".to_string(), lib.display().to_string()),
        ("DONT_FAKE_MONOTONIC".to_string(), "1".to_string()),
        ("FAKETIME".to_string(), format!("@{utc}")),
        ("TZ".to_string(), "UTC".to_string()),
    ];
    env.extend(more.env.iter().cloned());
    Server::with(Options {
        binary: Some(binary.clone()),
        env,
        ..more
    })
}

/// ms since the epoch of an RFC 3339 instant.
fn ms(instant: &str) -> i64 {
    instant
        .parse::<jiff::Timestamp>()
        .unwrap_or_else(|e| panic!("{instant}: {e}"))
        .as_millisecond()
}

/// Key `k`'s value and absolute expiry (PEXPIRETIME).
fn value_and_expiry(c: &mut Connection) -> (String, i64) {
    let value: Option<String> = cmd("GET").arg("k").query(c).expect("GET");
    (value.unwrap_or_default(), pexpiretime(c, "k"))
}

/// ARGV[1]: `fresh` (delete the key) or `keep`; the calls follow.
static SCRIPT: LazyLock<String> = LazyLock::new(|| {
    instant::script(
        r#"
first = 2
if ARGV[1] == 'fresh' then redis.call('DEL', key) end"#,
        "state = redis.call('GET', key) or ''",
    )
});

/// `calls` (each an RL.QUOTA or RL.ALL line) at one server millisecond.
fn at_once(
    c: &mut Connection,
    key: &str,
    fresh: bool,
    calls: &[&[&str]],
) -> instant::Instant<String> {
    let calls: Vec<Vec<String>> = calls.iter().map(|call| strings(call)).collect();
    let setup = strings(&[if fresh { "fresh" } else { "keep" }]);
    instant::at_one_instant(c, &SCRIPT, key, &setup, &calls)
}

/// `RL.QUOTA k 10 <calendar>` on a fresh key at the server's current instant:
/// asserts the first call of a period (count 1, expiry at the period's `end`) and
/// returns when it ran.
fn first_call(c: &mut Connection, calendar: &str, end: i64) -> i64 {
    let mut line = vec!["RL.QUOTA", "k", "10"];
    line.extend(calendar.split(' '));
    let i = at_once(c, "k", true, &[&line]);
    assert!(
        i.now < end,
        "{calendar}: the server's clock {} is past {end}",
        i.now
    );
    assert_eq!(
        i.reply(0),
        [1, 10, 9, 0, end - i.now],
        "{calendar} at {}",
        i.now
    );
    assert_eq!((i.state.as_str(), i.pexpiretime), ("1", end), "{calendar}");
    i.now
}

/// Each documented vector at its instant (UTC), the period's end in the zone's
/// local time, and the period's start where the vector gives it.
#[test]
fn every_vector_at_its_instant() {
    let Some(clock) = clock() else { return };
    let ny = "TZ America/New_York";
    for (calendar, at, end) in [
        (
            format!("month ON 31 {ny}"),
            "2026-02-10 17:00:00",
            "2026-02-28T00:00-05:00",
        ),
        (
            format!("month ON 31 {ny}"),
            "2026-03-31 16:00:00",
            "2026-04-30T00:00-04:00",
        ),
        (
            format!("day AT 02:30 {ny}"),
            "2026-03-08 16:00:00",
            "2026-03-09T02:30-04:00",
        ),
        (
            format!("day AT 02:30 {ny}"),
            "2026-03-08 06:00:00",
            "2026-03-08T03:30-04:00",
        ),
        (
            format!("day AT 01:30 {ny}"),
            "2026-11-01 17:00:00",
            "2026-11-02T01:30-05:00",
        ),
        (
            format!("week ON sun {ny}"),
            "2026-03-10 14:00:00",
            "2026-03-15T00:00-04:00",
        ),
        (
            "month EVERY 3".to_string(),
            "2026-05-10 00:00:00",
            "2026-07-01T00:00Z",
        ),
        (
            "year ON 02-29".to_string(),
            "2027-03-01 00:00:00",
            "2028-02-29T00:00Z",
        ),
    ] {
        let s = server_at(&clock, at, Options::default());
        let mut c = s.conn();
        let now = first_call(&mut c, &calendar, ms(end));
        let start = ms(&format!("{}Z", at.replace(' ', "T")));
        assert!(
            now - start < 10_000,
            "{calendar}: the call ran {} ms late",
            now - start
        );
    }
}

/// A local day is 23, 25 or 23.5 hours: a call at a local midnight (or at AT)
/// gets the whole day's real length as its reset_after.
#[test]
fn days_last_23_25_and_23_and_a_half_hours() {
    let Some(clock) = clock() else { return };
    const H: i64 = 3_600_000;
    for (calendar, midnight, hours) in [
        ("day TZ America/New_York", "2026-03-08T00:00-05:00", 23 * H),
        ("day TZ America/New_York", "2026-11-01T00:00-04:00", 25 * H),
        (
            "day AT 02:30 TZ America/New_York",
            "2026-03-08T03:30-04:00",
            23 * H,
        ),
        (
            "day AT 01:30 TZ America/New_York",
            "2026-11-01T01:30-04:00",
            25 * H,
        ),
        (
            "day TZ Australia/Lord_Howe",
            "2026-10-04T00:00+10:30",
            23 * H + H / 2,
        ),
        (
            "day TZ Australia/Lord_Howe",
            "2027-04-04T00:00+11:00",
            24 * H + H / 2,
        ),
    ] {
        let start = ms(midnight);
        let utc = jiff::Timestamp::from_millisecond(start).unwrap();
        let s = server_at(
            &clock,
            &utc.strftime("%Y-%m-%d %H:%M:%S").to_string(),
            Options::default(),
        );
        let mut c = s.conn();
        first_call(&mut c, calendar, start + hours);
    }
}

/// Just before a local midnight the day's count holds (rejected until the
/// midnight); at the midnight a fresh count starts, expiring a day later.
#[test]
fn a_local_midnight_starts_a_fresh_count() {
    let Some(clock) = clock() else { return };
    // 23:59:58 EDT on 2026-03-08, the 23-hour day.
    let s = server_at(&clock, "2026-03-09 03:59:58", Options::default());
    let mut c = s.conn();
    let midnight = ms("2026-03-09T00:00-04:00");
    let line = ["RL.QUOTA", "k", "3", "day", "TZ", "America/New_York"];
    let cost3: Vec<&str> = line.iter().copied().chain(["COST", "3"]).collect();
    let before = at_once(&mut c, "k", true, &[&cost3, &line]);
    assert!(
        before.now < midnight,
        "the server's clock started late: {}",
        before.now
    );
    assert_eq!(before.reply(0), [1, 3, 0, 0, midnight - before.now]);
    assert_eq!(
        before.reply(1),
        [0, 3, 0, midnight - before.now, midnight - before.now]
    );
    assert_eq!((before.state.as_str(), before.pexpiretime), ("3", midnight));
    wait_until(&mut c, midnight);
    let after = at_once(&mut c, "k", false, &[&line]);
    let next = ms("2026-03-10T00:00-04:00");
    assert!(after.now >= midnight);
    assert_eq!(after.reply(0), [1, 3, 2, 0, next - after.now]);
    assert_eq!((after.state.as_str(), after.pexpiretime), ("1", next));
}

/// ON 31 starts on the month's last day when it is shorter (Feb 28, Feb 29 in a
/// leap year) and on the 31st again in March: no drift.
#[test]
fn on_31_clamps_to_february_without_drift() {
    let Some(clock) = clock() else { return };
    for (at, end) in [
        // 2027: the period from Jan 31 ends on Feb 28; Feb 28's ends on Mar 31.
        ("2027-02-27 23:59:59", "2027-02-28T00:00Z"),
        ("2027-02-28 00:00:00", "2027-03-31T00:00Z"),
        // 2028 is a leap year: Feb 29.
        ("2028-02-28 12:00:00", "2028-02-29T00:00Z"),
        ("2028-02-29 12:00:00", "2028-03-31T00:00Z"),
    ] {
        let s = server_at(&clock, at, Options::default());
        first_call(&mut s.conn(), "month ON 31", ms(end));
    }
}

/// Weeks ON sun across the spring change (167 h), calendar quarters, and a year
/// anchored on a date, in RL.ALL with a per-second limit beside them.
#[test]
fn weeks_quarters_and_rl_all() {
    let Some(clock) = clock() else { return };
    let s = server_at(&clock, "2026-03-08 05:00:00", Options::default());
    let mut c = s.conn();
    first_call(
        &mut c,
        "week ON sun TZ America/New_York",
        ms("2026-03-15T00:00-04:00"),
    );
    first_call(
        &mut c,
        "month EVERY 3 TZ America/New_York",
        ms("2026-04-01T00:00-04:00"),
    );
    let end = ms("2026-03-09T00:00-04:00");
    let i = at_once(
        &mut c,
        "k",
        true,
        &[&[
            "RL.ALL",
            "2",
            "s",
            "k",
            "FIXED",
            "10",
            "1s",
            "QUOTA",
            "5",
            "day",
            "TZ",
            "America/New_York",
            "COST",
            "2",
        ]],
    );
    let all = i.all_reply(0);
    assert_eq!(all[2], [1, 5, 3, 0, end - i.now]);
    assert_eq!((i.state.as_str(), i.pexpiretime), ("2", end));
}

/// A replica without the module, and an AOF replayed by a restarted server, hold
/// the same bytes and absolute expiry: only `SET key n PXAT end` travels.
#[test]
fn a_replica_without_the_module_and_an_aof_restart_agree() {
    let Some(clock) = clock() else { return };
    // 2027-03-14 is New York's spring-forward day; later than any real clock here,
    // so the replica (on its own clock) sees the key live.
    let dir = std::env::temp_dir().join(format!("rl-quota-aof-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    let s = server_at(
        &clock,
        "2027-03-14 06:59:50",
        Options {
            dir: Some(dir.clone()),
            args: strings(&["--appendonly", "yes", "--appendfsync", "always"]),
            ..Options::default()
        },
    );
    let replica = Server::with(Options {
        without_module: true,
        binary: Some(clock.1.clone()),
        args: vec!["--replicaof".into(), "127.0.0.1".into(), s.port.to_string()],
        ..Options::default()
    });
    let mut r = replica.conn();
    wait_for(Duration::from_secs(20), "master_link_status:up", || {
        (try_info_str(&mut r, "replication", "master_link_status")? == "up").then_some(())
    });
    let mut c = s.conn();
    let end = ms("2027-03-15T00:00-04:00");
    let line = [
        "RL.QUOTA",
        "k",
        "1000",
        "day",
        "TZ",
        "america/new_york",
        "COST",
        "7",
    ];
    let i = at_once(&mut c, "k", true, &[&line]);
    assert_eq!(i.reply(0), [1, 1000, 993, 0, end - i.now]);
    s.sync(&replica);
    assert_eq!(value_and_expiry(&mut c), ("7".to_string(), end));
    assert_eq!(value_and_expiry(&mut r), ("7".to_string(), end));
    assert_eq!(snapshot(&mut r, b"k"), snapshot(&mut c, b"k"));
    let dir = s.shutdown(true);
    let restarted = server_at(
        &clock,
        "2027-03-14 07:00:00",
        Options {
            dir: Some(dir.clone()),
            args: strings(&["--appendonly", "yes"]),
            ..Options::default()
        },
    );
    let mut c = restarted.conn();
    assert_eq!(value_and_expiry(&mut c), ("7".to_string(), end));
    drop(restarted);
    let _ = std::fs::remove_dir_all(&dir);
}

/// Every bad unit, EVERY, ON, AT and zone is an ERR naming it and leaves a live
/// key as it was (no clock needed).
#[test]
fn bad_calendars_are_errors_that_change_nothing() {
    if library_lacking("rl_quota") {
        return;
    }
    let s = Server::start();
    let mut c = s.conn();
    rl(
        &mut c,
        &[
            "RL.QUOTA",
            "k",
            "10",
            "month",
            "TZ",
            "Europe/Berlin",
            "COST",
            "4",
        ],
    );
    let before = snapshot(&mut c, b"k");
    for (args, want) in [
        (&["hour"][..], "ERR unit must be day, week, month or year"),
        (
            &["day", "ON", "1"],
            "ERR syntax error: ON does not apply to unit day",
        ),
        (
            &["week", "ON", "sunday"],
            "ERR ON must be mon, tue, wed, thu, fri, sat or sun for unit week",
        ),
        (
            &["month", "ON", "32"],
            "ERR ON must be a day of the month from 1 to 31 for unit month",
        ),
        (
            &["year", "ON", "02-30"],
            "ERR ON must be a date MM-DD from 01-01 to 12-31 for unit year",
        ),
        (
            &["day", "AT", "24:00"],
            "ERR AT must be a time of day hh:mm from 00:00 to 23:59",
        ),
        (
            &["day", "AT", "7:00"],
            "ERR AT must be a time of day hh:mm from 00:00 to 23:59",
        ),
        (
            &["day", "EVERY", "3651"],
            "ERR EVERY must be an integer from 1 to 3650",
        ),
        (
            &["month", "EVERY", "0"],
            "ERR EVERY must be an integer from 1 to 120",
        ),
        (
            &["day", "TZ", "Europe/Berlín"],
            "ERR unknown time zone 'Europe/Berl\\xc3\\xadn'",
        ),
        (&["day", "TZ", "+24:00"], "ERR unknown time zone '+24:00'"),
        (
            &["day", "TZ", "Mars/Olympus"],
            "ERR unknown time zone 'Mars/Olympus'",
        ),
        (
            &["day", "TZ", "UTC", "TZ", "UTC"],
            "ERR syntax error: TZ given more than once",
        ),
        (&["day", "TZ"], "ERR syntax error: TZ needs a value"),
    ] {
        let mut line: Vec<&[u8]> = vec![b"RL.QUOTA", b"k", b"10"];
        line.extend(args.iter().map(|a| a.as_bytes()));
        let err = error_of(&mut c, &line);
        assert!(err.starts_with(want), "{args:?}: {err}");
        assert_eq!(snapshot(&mut c, b"k"), before, "{args:?} changed the key");
    }
    let err = error_of(
        &mut c,
        &[
            b"RL.ALL", b"1", b"k", b"QUOTA", b"10", b"week", b"ON", b"32",
        ],
    );
    assert!(err.starts_with("ERR ON must be mon"), "{err}");
    assert_eq!(snapshot(&mut c, b"k"), before);
}
