//! SHADOW: a limit tried without being enforced. The flag is sent where the server
//! reads it (after a command's arguments, before an RL.ALL policy's word), counted
//! apart in `INFO rl`, refused by the client where it does not apply, and a shadow
//! call never uses the blocked-key cache or the fallback limiter.

use std::time::Duration;

use rl_client::{Acquire, All, Backend, Batch, Error, FailMode, Fixed, Gcra, Limiter, Penalty};

use crate::common::{calls, dead_connection, key, shared, targets};

/// The batch's last call as sent.
fn sent(batch: &Batch) -> Vec<u8> {
    let cmd = batch.pipeline().cmd_iter().last().expect("one call");
    cmd.get_packed_command()
}

/// The command of these words.
fn command(words: &[&str]) -> Vec<u8> {
    redis::cmd(words[0]).arg(&words[1..]).get_packed_command()
}

#[test]
fn shadow_is_sent_after_the_options_or_before_the_policy_word() {
    let mut b = Batch::new(Backend::Module);
    b.gcra("k", &Gcra::new(10, 1, "1s").shadow().cost(2));
    let want = ["RL.GCRA", "k", "10", "1", "1000ms", "COST", "2", "SHADOW"];
    assert_eq!(sent(&b), command(&want));
    let mut b = Batch::new(Backend::Library);
    b.fixed("k", &Fixed::new(100, "1m").shadow());
    let want = ["FCALL", "rl_fixed", "1", "k", "100", "60000ms", "SHADOW"];
    assert_eq!(sent(&b), command(&want));
    // Without it, nothing is sent for it.
    b.fixed("k", &Fixed::new(100, "1m"));
    assert_eq!(sent(&b), command(&want[..6]));
    let all = All::new()
        .key("{u}:a", Gcra::new(10, 1, "1s").delay("1s"))
        .key("{u}:b", Fixed::new(1000, "1d").shadow())
        .key("{u}:c", Acquire::new(2, "1m", "job").shadow())
        .cost(2);
    let policies = [
        "GCRA",
        "10",
        "1",
        "1000ms",
        "DELAY",
        "1000ms",
        "SHADOW",
        "FIXED",
        "1000",
        "86400000ms",
        "SHADOW",
        "ACQUIRE",
        "2",
        "60000ms",
        "job",
        "COST",
        "2",
    ];
    let keys = ["3", "{u}:a", "{u}:b", "{u}:c"];
    for (backend, head) in [
        (Backend::Module, &["RL.ALL"][..]),
        (Backend::Library, &["FCALL", "rl_all"][..]),
    ] {
        let mut b = Batch::new(backend);
        b.all(&all);
        let want = [head, &keys, &policies].concat();
        assert_eq!(sent(&b), command(&want), "{backend:?}");
    }
}

/// The client's argument error for the batch's call, before anything is sent.
#[track_caller]
fn refused(b: &Batch, why: &str) {
    let err = b.refusal().unwrap_err();
    assert!(
        matches!(&err, Error::InvalidArgument(m) if m.contains(why)),
        "{err:?}"
    );
}

#[test]
fn shadow_is_refused_twice_and_where_it_does_not_apply() {
    let mut b = Batch::new(Backend::Module);
    b.gcra("k", &Gcra::new(10, 1, "1s").shadow().shadow());
    refused(&b, "SHADOW given twice");
    let mut b = Batch::new(Backend::Module);
    b.all(&All::new().key("k", Penalty::new(3, "1m", "1m", "1h").shadow().shadow()));
    refused(&b, "SHADOW given twice");
    // RL.ACQUIRE takes it only as an RL.ALL policy.
    let mut b = Batch::new(Backend::Module);
    b.acquire("k", &Acquire::new(2, "1m", "job").shadow());
    refused(&b, "SHADOW does not apply to RL.ACQUIRE");
}

/// `rl_<field>` of `INFO rl` (0 when absent).
fn info_rl(con: &mut redis::Connection, field: &str) -> u64 {
    let info: String = redis::cmd("INFO").arg("rl").query(con).unwrap();
    let prefix = format!("rl_{field}:");
    info.lines()
        .find_map(|l| l.strip_prefix(&prefix).and_then(|n| n.trim().parse().ok()))
        .unwrap_or(0)
}

const COUNTERS: [&str; 4] = [
    "gcra_allowed",
    "gcra_rejected",
    "gcra_shadow_allowed",
    "gcra_shadow_rejected",
];

fn counters(con: &mut redis::Connection) -> [u64; 4] {
    COUNTERS.map(|f| info_rl(con, f))
}

#[test]
fn a_shadow_call_is_counted_apart_in_info_rl() {
    let _g = shared();
    for t in targets("a_shadow_call_is_counted_apart_in_info_rl") {
        if t.backend != Backend::Module {
            continue; // the library keeps no counters
        }
        let mut admin = t.con();
        let mut rl = t.limiter();
        let k = key("shadow-info");
        let rate = Gcra::new(1, 1, "1m").shadow();
        let before = counters(&mut admin);
        let first = rl.gcra(&k, &rate).unwrap();
        let second = rl.gcra(&k, &rate).unwrap();
        assert!(first.allowed && first.shadow && !first.fallback);
        // Its other fields are the limit's: the second "would have rejected".
        assert!(!second.allowed && second.shadow);
        assert_eq!((second.remaining, second.limit), (0, 1));
        assert!(second
            .retry_after
            .is_some_and(|r| r > Duration::from_secs(50)));
        assert!(second.headers().is_empty());
        let after = counters(&mut admin);
        let delta: Vec<u64> = after.iter().zip(before).map(|(a, b)| a - b).collect();
        assert_eq!(delta, [0, 0, 1, 1], "{COUNTERS:?}");
    }
}

#[test]
fn shadow_calls_always_reach_the_server_and_are_never_cached() {
    let _g = shared();
    for t in targets("shadow_calls_always_reach_the_server") {
        let mut admin = t.con();
        let mut rl = Limiter::with_backend(t.con(), t.backend)
            .timeout(Duration::from_secs(2))
            .cache(100, Duration::from_secs(10));
        let command = match t.backend {
            Backend::Module => "RL.FIXED",
            Backend::Library => "FCALL",
        };
        let k = key("shadow-cache");
        let limit = Fixed::new(1, "1h");
        let before = calls(&mut admin, command);
        let counted = info_rl(&mut admin, "fixed_shadow_rejected");
        assert!(rl.fixed(&k, &limit.clone().shadow()).unwrap().allowed);
        let n = 50;
        for _ in 0..n {
            let d = rl.fixed(&k, &limit.clone().shadow()).unwrap();
            assert!(!d.allowed && d.shadow && !d.cached, "{d:?}");
        }
        assert_eq!(calls(&mut admin, command) - before, n + 1);
        if t.backend == Backend::Module {
            assert_eq!(info_rl(&mut admin, "fixed_shadow_rejected") - counted, n);
        }
        // The enforced call was not blocked by the shadow rejections: the server
        // decides it; only its own rejection is cached.
        let enforced = rl.fixed(&k, &limit).unwrap();
        assert!(!enforced.allowed && !enforced.cached && !enforced.shadow);
        assert_eq!(calls(&mut admin, command) - before, n + 2);
        assert!(rl.fixed(&k, &limit).unwrap().cached);
        // ... and a cached rejection does not answer a shadow call either.
        let d = rl.fixed(&k, &limit.clone().shadow()).unwrap();
        assert!(d.shadow && !d.cached);
        assert_eq!(calls(&mut admin, command) - before, n + 3);
    }
}

#[test]
fn a_shadow_call_to_a_dead_server_gets_the_fail_mode_not_the_fallback_limiter() {
    let Some(con) = dead_connection() else {
        return;
    };
    let mut rl = Limiter::with_backend(con, Backend::Module)
        .timeout(Duration::from_millis(200))
        .fallback(4, Duration::from_secs(60));
    let limit = Gcra::new(100, 100, "1s");
    // Without a fail mode the error is the caller's, as for any call the fallback
    // limiter does not cover.
    assert!(matches!(
        rl.gcra("k", &limit.clone().shadow()),
        Err(e) if e.is_connection()
    ));
    // The fallback limiter decides the enforced call at 100 / 4 ...
    let enforced = rl.gcra("k", &limit).unwrap();
    assert!(enforced.fallback && enforced.allowed && !enforced.shadow);
    assert_eq!(enforced.limit, 25);
    // ... while the fail mode answers the shadow one, at the call's own limit.
    for (mode, allowed) in [(FailMode::Closed, false), (FailMode::Open, true)] {
        rl.set_fail_mode(mode);
        let d = rl.gcra("k", &limit.clone().shadow()).unwrap();
        assert!(d.fallback && d.shadow && d.error.is_some(), "{d:?}");
        assert_eq!((d.allowed, d.limit), (allowed, 100), "{mode:?}");
        assert!(d.headers().is_empty());
        // RL.ALL: the combined decision is the enforced policy's; with SHADOW
        // policies only, allowed whatever the mode (nothing is enforced), while
        // each member is the mode's.
        let mixed = All::new()
            .key("a", Fixed::new(10, "1m"))
            .key("b", limit.clone().shadow());
        let d = rl.all(&mixed).unwrap();
        assert_eq!((d.allowed(), d.combined.limit), (allowed, 10), "{mode:?}");
        let only = All::new().key("b", limit.clone().shadow());
        let d = rl.all(&only).unwrap();
        assert!(d.allowed() && !d.combined.shadow, "{mode:?}: {d:?}");
        assert!(d.keys.iter().all(|k| k.shadow && k.allowed == allowed));
        assert!(d.headers().is_empty());
    }
}
