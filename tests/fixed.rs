//! RL.FIXED against a real redis-server.

mod common;
use common::*;

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
    let at: i64 = cmd("PEXPIRETIME").arg("user:42").query(&mut c).unwrap();
    assert_eq!(at, end, "the key expires exactly at the window's end");
    let v: i64 = cmd("GET").arg("user:42").query(&mut c).unwrap();
    assert_eq!(v, 1);
}
