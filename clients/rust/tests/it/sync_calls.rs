//! Every command and option through the blocking Limiter, on both backends.

use std::time::Duration;

use rl_client::{
    Acquire, All, Backend, Bucket, Decision, Error, Fixed, Gcra, Penalty, Quota, Share, Sliding,
    SlidingCounter, Throttle,
};

use crate::common::{between, exists, key, shared, targets};

const H: Duration = Duration::from_secs(3600);
/// The few ms that may pass between the calls of a test.
const SLACK: Duration = Duration::from_secs(10);

fn header(d: &Decision, name: &str) -> Option<String> {
    d.headers()
        .into_iter()
        .find(|(n, _)| *n == name)
        .map(|(_, v)| v)
}

#[test]
fn detects_each_backend() {
    let _g = shared();
    for t in targets("detects_each_backend") {
        let mut rl = t.limiter();
        assert_eq!(rl.backend().unwrap(), t.backend);
        assert!(rl.supports("RL.GCRA").unwrap());
        assert!(rl.supports("RL.ALL").unwrap());
        assert_eq!(
            rl.supports("CL.THROTTLE").unwrap(),
            t.backend == Backend::Module
        );
        assert!(!rl.supports("RL.NOSUCH").unwrap());
        // A borrowed connection works too, and stays the caller's.
        let mut con = t.con();
        let mut borrowed = rl_client::Limiter::new(&mut con);
        assert_eq!(borrowed.backend().unwrap(), t.backend);
        assert!(
            borrowed
                .gcra(key("borrowed"), &Gcra::new(1, 1, "1s"))
                .unwrap()
                .allowed
        );
        let pong: String = redis::cmd("PING").query(&mut con).unwrap();
        assert_eq!(pong, "PONG");
    }
}

#[test]
fn fixed_limit_two() {
    let _g = shared();
    for t in targets("fixed_limit_two") {
        let mut rl = t.limiter();
        let k = key("fixed");
        // A window of 10 years: no window boundary falls between the calls.
        let p = Fixed::new(2, "3650d");
        let d1 = rl.fixed(&k, &p).unwrap();
        assert!(d1.allowed, "{:?}", t.backend);
        assert_eq!(
            (d1.limit, d1.remaining, d1.retry_after),
            (2, 1, Some(Duration::ZERO))
        );
        assert!(d1.reset_after > Duration::ZERO);
        assert!(!d1.fallback);
        assert_eq!(d1.window, Some(Duration::from_secs(3650 * 86400)));
        let d2 = rl.fixed(&k, &p).unwrap();
        assert!(d2.allowed);
        assert_eq!(d2.remaining, 0);
        let d3 = rl.fixed(&k, &p).unwrap();
        assert!(!d3.allowed);
        assert_eq!(d3.remaining, 0);
        let retry = d3.retry_after.expect("a retry is possible");
        assert!(retry > Duration::ZERO && retry <= Duration::from_secs(3650 * 86400));
        // The headers of the rejection.
        assert_eq!(
            header(&d3, "RateLimit-Policy").as_deref(),
            Some("\"default\";q=2;w=315360000")
        );
        let retry_s = retry.as_millis().div_ceil(1000).to_string();
        assert_eq!(
            header(&d3, "Retry-After").as_deref(),
            Some(retry_s.as_str())
        );
        assert_eq!(header(&d3, "X-RateLimit-Remaining").as_deref(), Some("0"));
        assert_eq!(header(&d3, "X-RateLimit-Limit").as_deref(), Some("2"));
        assert!(header(&d1, "Retry-After").is_none());
        let used: String = redis::cmd("GET").arg(&k).query(rl.connection()).unwrap();
        assert_eq!(used, "2");
    }
}

#[test]
fn fixed_options() {
    let _g = shared();
    for t in targets("fixed_options") {
        let mut rl = t.limiter();
        let k = key("fixed-options");
        let p = Fixed::new(3, "3650d");
        // COST 0 inspects: nothing written.
        let look = rl.fixed(&k, &p.clone().cost(0)).unwrap();
        assert!(look.allowed);
        assert_eq!((look.remaining, look.reset_after), (3, Duration::ZERO));
        assert!(!exists(rl.connection(), &k));
        // COST above the limit can never pass.
        let never = rl.fixed(&k, &p.clone().cost(4)).unwrap();
        assert!(!never.allowed);
        assert_eq!(never.retry_after, None);
        assert_eq!(rl.fixed(&k, &p.clone().cost(3)).unwrap().remaining, 0);
        let refunded = rl.fixed(&k, &p.clone().refund(2)).unwrap();
        assert!(refunded.allowed);
        assert_eq!(refunded.remaining, 2);
        let debited = rl.fixed(&k, &p.clone().debit(5)).unwrap();
        assert!(debited.allowed);
        assert_eq!(debited.remaining, 0);
        assert!(!rl.fixed(&k, &p).unwrap().allowed);
        let used: String = redis::cmd("GET").arg(&k).query(rl.connection()).unwrap();
        assert_eq!(used, "6");
    }
}

#[test]
fn sliding() {
    let _g = shared();
    for t in targets("sliding") {
        let mut rl = t.limiter();
        let k = key("sliding");
        let p = Sliding::new(2, "1h");
        let d = rl.sliding(&k, &p).unwrap();
        assert!(d.allowed);
        assert_eq!(d.remaining, 1);
        between(Some(d.reset_after), H - SLACK, H);
        assert_eq!(rl.sliding(&k, &p).unwrap().remaining, 0);
        let rejected = rl.sliding(&k, &p).unwrap();
        assert!(!rejected.allowed);
        between(rejected.retry_after, H - SLACK, H);
        let refunded = rl.sliding(&k, &p.clone().refund(1)).unwrap();
        assert!(refunded.allowed);
        assert_eq!(refunded.remaining, 1);
        let look = rl.sliding(&k, &p.clone().cost(0)).unwrap();
        assert_eq!((look.allowed, look.remaining), (true, 1));
        assert!(!rl.sliding(&k, &p.clone().cost(2)).unwrap().allowed);
        let n: i64 = redis::cmd("ZCARD").arg(&k).query(rl.connection()).unwrap();
        assert_eq!(n, 1);
    }
}

#[test]
fn sliding_counter() {
    let _g = shared();
    for t in targets("sliding_counter") {
        let mut rl = t.limiter();
        let k = key("slidingcounter");
        let p = SlidingCounter::new(2, "3650d");
        assert_eq!(rl.sliding_counter(&k, &p).unwrap().remaining, 1);
        assert_eq!(rl.sliding_counter(&k, &p).unwrap().remaining, 0);
        let rejected = rl.sliding_counter(&k, &p).unwrap();
        assert!(!rejected.allowed);
        assert!(rejected.retry_after.is_some_and(|r| r > Duration::ZERO));
        let refunded = rl.sliding_counter(&k, &p.clone().refund(1)).unwrap();
        assert_eq!((refunded.allowed, refunded.remaining), (true, 1));
        let debited = rl.sliding_counter(&k, &p.clone().debit(3)).unwrap();
        assert_eq!((debited.allowed, debited.remaining), (true, 0));
        // In debt, COST 0 answers rejected.
        assert!(!rl.sliding_counter(&k, &p.clone().cost(0)).unwrap().allowed);
    }
}

#[test]
fn bucket() {
    let _g = shared();
    for t in targets("bucket") {
        let mut rl = t.limiter();
        let k = key("bucket");
        let p = Bucket::new(2, 1, "1h");
        let d = rl.bucket(&k, &p).unwrap();
        assert_eq!((d.allowed, d.limit, d.remaining), (true, 2, 1));
        between(Some(d.reset_after), H - SLACK, H);
        assert_eq!(rl.bucket(&k, &p).unwrap().remaining, 0);
        let rejected = rl.bucket(&k, &p).unwrap();
        assert!(!rejected.allowed);
        between(rejected.retry_after, H - SLACK, H);
        // A refund back to full deletes the key.
        let refunded = rl.bucket(&k, &p.clone().refund(2)).unwrap();
        assert_eq!((refunded.allowed, refunded.remaining), (true, 2));
        assert!(!exists(rl.connection(), &k));
        // A debit of 5 leaves a debt of 3: the next token is 4 h away.
        let debited = rl.bucket(&k, &p.clone().debit(5)).unwrap();
        assert_eq!((debited.allowed, debited.remaining), (true, 0));
        let tokens: String = redis::cmd("HGET")
            .arg(&k)
            .arg("tokens")
            .query(rl.connection())
            .unwrap();
        assert!(tokens.starts_with("-2.99") || tokens == "-3", "{tokens}");
        let after = rl.bucket(&k, &p.clone().cost(1)).unwrap();
        assert!(!after.allowed);
        between(after.retry_after, 4 * H - SLACK, 4 * H);
    }
}

#[test]
fn gcra_and_delay() {
    let _g = shared();
    for t in targets("gcra_and_delay") {
        let mut rl = t.limiter();
        let k = key("gcra");
        let p = Gcra::new(2, 1, "1h");
        let never = rl.gcra(&k, &p.clone().cost(3)).unwrap();
        assert_eq!((never.allowed, never.retry_after), (false, None));
        assert_eq!(never.retry_after_ms(), -1);
        assert_eq!(rl.gcra(&k, &p).unwrap().remaining, 1);
        assert_eq!(rl.gcra(&k, &p).unwrap().remaining, 0);
        let rejected = rl.gcra(&k, &p).unwrap();
        assert!(!rejected.allowed);
        between(rejected.retry_after, H - SLACK, H);
        let refunded = rl.gcra(&k, &p.clone().refund(1)).unwrap();
        assert_eq!((refunded.allowed, refunded.remaining), (true, 1));
        let debited = rl.gcra(&k, &p.clone().debit(2)).unwrap();
        assert_eq!((debited.allowed, debited.remaining), (true, 0));
        between(Some(debited.reset_after), 3 * H - SLACK, 3 * H);

        // DELAY: a queue of up to 3 h.
        let q = key("gcra-delay");
        let p = Gcra::new(2, 1, "1h").delay("3h");
        let first = rl.gcra(&q, &p.clone().cost(2)).unwrap();
        assert_eq!(
            (first.allowed, first.retry_after),
            (true, Some(Duration::ZERO))
        );
        for waits in 1..=3u32 {
            let d = rl.gcra(&q, &p).unwrap();
            assert!(d.allowed, "wait {waits}");
            between(d.retry_after, waits * H - SLACK, waits * H);
            // Allowed with a wait: act later, no Retry-After.
            assert!(header(&d, "Retry-After").is_none());
        }
        let full = rl.gcra(&q, &p).unwrap();
        assert!(!full.allowed);
        between(full.retry_after, H - SLACK, H);
    }
}

#[test]
fn throttle() {
    let _g = shared();
    for t in targets("throttle") {
        let mut rl = t.limiter();
        let k = key("throttle");
        let p = Throttle::new(0, 1, "1h");
        if t.backend == Backend::Library {
            let err = rl.throttle(&k, &p).unwrap_err();
            assert!(
                matches!(&err, Error::Unsupported(m) if m.contains("CL.THROTTLE")),
                "{err:?}"
            );
            continue;
        }
        let d = rl.throttle(&k, &p).unwrap();
        assert!(d.allowed() && !d.limited);
        assert_eq!((d.limit, d.remaining, d.retry_after), (1, 0, None));
        assert_eq!(d.reset_after, H);
        let limited = rl.throttle(&k, &p).unwrap();
        assert!(limited.limited);
        between(limited.retry_after, H - SLACK, H);
        let look = rl.throttle(&k, &p.clone().quantity(0)).unwrap();
        assert_eq!(look.remaining, 0);
    }
}

#[test]
fn quota_a_day_in_a_zone() {
    let _g = shared();
    for t in targets("quota_a_day_in_a_zone") {
        let mut rl = t.limiter();
        let d = rl
            .quota(key("quota"), &Quota::new(5, "day").tz("America/New_York"))
            .unwrap();
        assert!(d.allowed);
        assert_eq!((d.limit, d.remaining), (5, 4));
        // A local day lasts 23 to 25 hours.
        between(Some(d.reset_after), Duration::from_millis(1), 25 * H);
        let err = rl
            .quota(key("quota-zone"), &Quota::new(5, "day").tz("Mars/Olympus"))
            .unwrap_err();
        assert!(
            matches!(&err, Error::BadArgument(m) if m.contains("unknown time zone 'Mars/Olympus'")),
            "{err:?}"
        );
        let all = All::new().key(key("{q}:fixed"), Fixed::new(3, "1d")).key(
            key("{q}:quota"),
            Quota::new(5, "day").tz("America/New_York"),
        );
        let both = rl.all(&all).unwrap();
        assert!(both.allowed());
        assert_eq!(
            (
                both.keys[0].remaining,
                both.keys[1].limit,
                both.keys[1].remaining
            ),
            (2, 5, 4)
        );
    }
}

#[test]
fn all_or_nothing() {
    let _g = shared();
    for t in targets("all_or_nothing") {
        let mut rl = t.limiter();
        let (a, b) = (key("{all}:burst"), key("{all}:hour"));
        let all = All::new()
            .key(&a, Gcra::new(1, 1, "1h"))
            .key(&b, Gcra::new(5, 1, "1h"));
        let first = rl.all(&all).unwrap();
        assert!(first.allowed());
        assert_eq!(first.keys.len(), 2);
        assert_eq!((first.keys[0].remaining, first.keys[1].remaining), (0, 4));
        assert_eq!((first.combined.remaining, first.combined.limit), (0, 1));
        assert_eq!(first.combined.window, Some(H));
        let second = rl.all(&all).unwrap();
        assert!(!second.allowed());
        assert_eq!(second.rejected().collect::<Vec<_>>(), vec![0]);
        // The second key kept its unit.
        assert_eq!(second.keys[1].remaining, 4);
        between(second.combined.retry_after, H - SLACK, H);
        assert!(second.headers().iter().any(|(n, _)| *n == "Retry-After"));
        // REFUND and DEBIT on every key.
        let refunded = rl.all(&all.clone().refund(1)).unwrap();
        assert!(refunded.allowed());
        assert_eq!(
            (refunded.keys[0].remaining, refunded.keys[1].remaining),
            (1, 5)
        );
        let debited = rl.all(&all.clone().debit(2)).unwrap();
        assert!(debited.allowed());
        assert_eq!(
            (debited.keys[0].remaining, debited.keys[1].remaining),
            (0, 3)
        );
        // COST 2 is above the first key's capacity: never.
        let never = rl.all(&all.clone().cost(2)).unwrap();
        assert_eq!(never.combined.retry_after, None);
    }
}

#[test]
fn all_every_policy() {
    let _g = shared();
    for t in targets("all_every_policy") {
        let mut rl = t.limiter();
        let keys: Vec<String> = (0..8).map(|i| key(&format!("{{every}}:{i}"))).collect();
        let mut all = All::new()
            .key(&keys[0], Fixed::new(3, "1h"))
            .key(&keys[1], Sliding::new(3, "1h"))
            .key(&keys[2], SlidingCounter::new(3, "1h"))
            .key(&keys[3], Bucket::new(3, 1, "1h"))
            .key(&keys[4], Gcra::new(3, 1, "1h").delay("1s"))
            .key(&keys[5], Acquire::new(3, "1h", "job"))
            .key(&keys[6], Penalty::new(3, "1m", "1m", "1h"));
        if rl.supports("RL.SHARE").unwrap() {
            all.push(&keys[7], Share::new("t", 1, 3, 1, "1h"));
        } else {
            eprintln!(
                "note: RL.ALL's SHARE policy not checked on {:?}: this server's RL has no RL.SHARE",
                t.backend
            );
        }
        // COST 0 (the PENALTY policy needs it): every key looked at, none written.
        let look = rl.all(&all.clone().cost(0)).unwrap();
        assert!(look.allowed(), "{look:?}");
        assert_eq!(look.keys.len(), all.len());
        for ((d, k), (_, p)) in look.keys.iter().zip(&keys).zip(all.entries()) {
            assert!(d.allowed, "{k}");
            if p.word() != "SHARE" {
                assert_eq!((d.remaining, d.limit), (3, 3), "{k}");
            }
            assert!(!exists(rl.connection(), k), "{k}");
        }
        // Without the PENALTY policy, COST 1 takes from every key.
        let mut take = All::new();
        for (k, p) in all.entries().filter(|(_, p)| p.word() != "PENALTY") {
            take.push(k, p.clone());
        }
        let took = rl.all(&take).unwrap();
        assert!(took.allowed(), "{took:?}");
        for (d, (_, p)) in took.keys.iter().zip(take.entries()) {
            if p.word() != "SHARE" {
                assert_eq!(d.remaining, 2, "{}", p.word());
            }
        }
    }
}

#[test]
fn acquire_and_release() {
    let _g = shared();
    for t in targets("acquire_and_release") {
        let mut rl = t.limiter();
        let k = key("acquire");
        let a = rl.acquire(&k, &Acquire::new(1, "1h", "a")).unwrap();
        assert_eq!((a.allowed, a.remaining), (true, 0));
        let b = rl.acquire(&k, &Acquire::new(1, "1h", "b")).unwrap();
        assert!(!b.allowed);
        between(b.retry_after, H - SLACK, H);
        assert!(rl.release(&k, "a").unwrap());
        assert!(!rl.release(&k, "a").unwrap());
        assert!(rl.acquire(&k, &Acquire::new(1, "1h", "b")).unwrap().allowed);
    }
}

#[test]
fn lease_guard_releases() {
    let _g = shared();
    for t in targets("lease_guard_releases") {
        let mut rl = t.limiter();
        let k = key("lease");
        {
            let mut lease = rl.lease(&k, &Acquire::new(1, "1h", "x")).unwrap();
            assert!(lease.held());
            assert_eq!(lease.id(), b"x");
            // The limiter stays usable while the lease is held.
            let other = lease
                .limiter()
                .acquire(&k, &Acquire::new(1, "1h", "y"))
                .unwrap();
            assert!(!other.allowed);
            assert!(lease.renew().unwrap().allowed);
        } // dropped: released
        let score: Option<f64> = redis::cmd("ZSCORE")
            .arg(&k)
            .arg("x")
            .query(rl.connection())
            .unwrap();
        assert_eq!(score, None, "the dropped lease is gone");

        let held = rl.lease(&k, &Acquire::new(1, "1h", "y")).unwrap();
        assert!(held.held());
        assert!(
            held.release().unwrap(),
            "an explicit release frees the slot"
        );
        assert!(!exists(rl.connection(), &k));

        // A rejected lease holds nothing and releases nothing.
        assert!(rl.acquire(&k, &Acquire::new(1, "1h", "z")).unwrap().allowed);
        let rejected = rl.lease(&k, &Acquire::new(1, "1h", "w")).unwrap();
        assert!(!rejected.held());
        assert!(rejected
            .decision()
            .retry_after
            .is_some_and(|r| r > Duration::ZERO));
        drop(rejected);
        let score: Option<f64> = redis::cmd("ZSCORE")
            .arg(&k)
            .arg("z")
            .query(rl.connection())
            .unwrap();
        assert!(score.is_some(), "z keeps its lease");
    }
}

#[test]
fn penalty() {
    let _g = shared();
    for t in targets("penalty") {
        let mut rl = t.limiter();
        let k = key("penalty");
        let p = Penalty::new(3, "1m", "1m", "1h");
        let look = rl.penalty(&k, &p.clone().cost(0)).unwrap();
        assert_eq!((look.allowed, look.remaining), (true, 3));
        assert!(!exists(rl.connection(), &k));
        assert_eq!(rl.penalty(&k, &p).unwrap().remaining, 2);
        assert_eq!(rl.penalty(&k, &p).unwrap().remaining, 1);
        let blocked = rl.penalty(&k, &p).unwrap();
        assert!(!blocked.allowed);
        between(
            blocked.retry_after,
            Duration::from_secs(50),
            Duration::from_secs(60),
        );
        let still = rl.penalty(&k, &p.clone().cost(0)).unwrap();
        assert!(!still.allowed);
    }
}

#[test]
fn share_when_the_server_has_it() {
    let _g = shared();
    for t in targets("share_when_the_server_has_it") {
        let mut rl = t.limiter();
        let k = key("share");
        let p = Share::new("tenant-a", 1, 5, 1, "1h");
        if !rl.supports("RL.SHARE").unwrap() {
            eprintln!(
                "skipped share_when_the_server_has_it on {:?}: this server's RL has no RL.SHARE",
                t.backend
            );
            // The typed error of a server without it.
            let err = rl.share(&k, &p).unwrap_err();
            assert!(matches!(err, Error::Unsupported(_)), "{err:?}");
            continue;
        }
        let d = rl.share(&k, &p).unwrap();
        assert!(d.allowed, "{d:?}");
        assert!(rl.share(&k, &p.clone().cost(0)).unwrap().allowed);
        assert!(rl.share(&k, &p.clone().refund(1)).unwrap().allowed);
        assert!(rl.share(&k, &p.clone().debit(1)).unwrap().allowed);
    }
}

#[test]
fn raw_replies_parse() {
    let _g = shared();
    for t in targets("raw_replies_parse") {
        let mut con = t.con();
        let k = key("raw");
        let mut cmd = match t.backend {
            Backend::Module => redis::cmd("RL.GCRA"),
            Backend::Library => {
                let mut c = redis::cmd("FCALL");
                c.arg("rl_gcra").arg(1);
                c
            }
        };
        cmd.arg(&k).arg(5).arg(1).arg("1s");
        let d: Decision = cmd.query(&mut con).unwrap();
        assert_eq!((d.allowed, d.limit, d.remaining), (true, 5, 4));
    }
}
