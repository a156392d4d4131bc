//! An AOF replayed after every window has passed brings back no live limiter: the
//! propagated expiries are absolute, so time spent down counts.

use crate::common::*;

use std::time::Duration;

#[test]
fn an_aof_replayed_after_the_windows_passed_yields_no_live_keys() {
    let aof = |dir: Option<std::path::PathBuf>| Options {
        args: ["--appendonly", "yes", "--appendfsync", "always"]
            .map(String::from)
            .to_vec(),
        dir,
        ..Options::default()
    };
    let s = Server::with(aof(None));
    let mut c = s.conn();
    // RL.QUOTA's periods last a day at least: tests/it/quota.rs replays its AOF.
    let commands: Vec<&Command> = COMMANDS.iter().copied().filter(|l| !l.calendar()).collect();
    let keys: Vec<String> = commands.iter().map(|l| format!("rl:{}", l.short)).collect();
    // Each command takes 1 (by default), 2 or all 5 of its units in a 300 ms window.
    for (i, (l, key)) in commands.iter().zip(&keys).enumerate() {
        let cost = [None, Some(2), Some(5)][i % 3];
        l.call(&mut c, key, &l.per(5, "300ms"), cost);
    }
    let last_expiry = keys
        .iter()
        .map(|k| snapshot(&mut c, k.as_bytes()).1)
        .max()
        .unwrap();
    assert!(
        last_expiry > server_ms(&mut c),
        "every key is live before the restart"
    );
    let dir = s.shutdown(false);

    // The server is down while its windows pass (same machine, same clock).
    wait_for(Duration::from_secs(5), "the windows to pass", || {
        let now = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .ok()?
            .as_millis() as i64;
        (now > last_expiry).then_some(())
    });
    let restarted = Server::with(aof(Some(dir.clone())));
    let mut c = restarted.conn();
    let live: Vec<String> = cmd("KEYS").arg("*").query(&mut c).unwrap();
    assert!(live.is_empty(), "live keys after replay: {live:?}");
    for k in &keys {
        let exists: i64 = cmd("EXISTS").arg(k).query(&mut c).unwrap();
        assert_eq!(exists, 0, "{k}");
    }
    // And the limiters start afresh.
    for (l, key) in commands.iter().zip(&keys) {
        let r = l.call(&mut c, key, &l.per(5, "300ms"), None);
        assert_eq!((r.allowed, r.remaining), (1, 4), "{}", l.name);
    }
    drop(restarted);
    let _ = std::fs::remove_dir_all(dir);
}
