//! Pipelined batches: typed replies in call order, typed errors.

use std::time::Duration;

use rl_client::{Acquire, All, Backend, Batch, Error, Fixed, Gcra, Reply, Throttle};

use crate::common::{key, shared, targets};

#[test]
fn pipelined_decisions() {
    let _g = shared();
    for t in targets("pipelined_decisions") {
        let mut rl = t.limiter();
        let k = key("batch");
        let g = Gcra::new(5, 1, "1h");
        let mut batch = rl.batch().unwrap();
        assert_eq!(batch.backend(), t.backend);
        for _ in 0..8 {
            batch.gcra(&k, &g);
        }
        let replies = rl.run(&batch).unwrap();
        assert_eq!(replies.len(), 8);
        let decisions: Vec<_> = replies
            .iter()
            .map(|r| r.decision().unwrap().clone())
            .collect();
        let remaining: Vec<u64> = decisions.iter().map(|d| d.remaining).collect();
        assert_eq!(remaining, [4, 3, 2, 1, 0, 0, 0, 0]);
        assert!(decisions[..5].iter().all(|d| d.allowed));
        assert!(decisions[5..]
            .iter()
            .all(|d| !d.allowed && d.retry_after.is_some()));
        // w: the bucket's time to refill from empty (5 tokens at 1 an hour).
        assert!(decisions
            .iter()
            .all(|d| d.window == Some(Duration::from_secs(5 * 3600))));
        // The same batch runs again (nothing left).
        assert!(rl.run(&batch).unwrap().iter().all(|r| !r.allowed()));
    }
}

#[test]
fn atomic_batch_of_every_kind() {
    let _g = shared();
    for t in targets("atomic_batch_of_every_kind") {
        let mut rl = t.limiter();
        let (g, f, l, c) = (key("{b}:g"), key("{b}:f"), key("{b}:l"), key("{b}:c"));
        let mut batch = Batch::new(t.backend);
        batch
            .atomic()
            .gcra(&g, &Gcra::new(2, 1, "1h"))
            .fixed(&f, &Fixed::new(1, "3650d"))
            .all(
                &All::new()
                    .key(&g, Gcra::new(2, 1, "1h"))
                    .key(&f, Fixed::new(1, "3650d")),
            )
            .acquire(&l, &Acquire::new(1, "1h", "job"))
            .release(&l, "job")
            .release(&l, "job");
        if t.backend == Backend::Module {
            batch.throttle(&c, &Throttle::new(0, 1, "1h"));
        } else {
            // Module only: refused when the batch runs, nothing sent.
            let mut refused = batch.clone();
            refused.throttle(&c, &Throttle::new(0, 1, "1h"));
            assert!(matches!(rl.run(&refused), Err(Error::Unsupported(_))));
        }
        let replies = rl.run(&batch).unwrap();
        assert_eq!(replies.len(), batch.len());
        assert!(matches!(&replies[0], Reply::Decision(d) if d.allowed && d.remaining == 1));
        assert!(matches!(&replies[1], Reply::Decision(d) if d.allowed && d.remaining == 0));
        // The fixed key is full: RL.ALL takes nothing, so g keeps its second unit.
        let Reply::All(all) = &replies[2] else {
            panic!("{replies:?}")
        };
        assert!(!all.allowed());
        assert_eq!(all.rejected().collect::<Vec<_>>(), vec![1]);
        assert_eq!(all.keys[0].remaining, 1);
        assert!(matches!(&replies[3], Reply::Decision(d) if d.allowed));
        assert_eq!(replies[4], Reply::Released(true));
        assert_eq!(replies[5], Reply::Released(false));
        if t.backend == Backend::Module {
            assert!(matches!(&replies[6], Reply::Throttle(th) if !th.limited));
        }
    }
}

#[test]
fn a_batch_error_is_typed() {
    let _g = shared();
    for t in targets("a_batch_error_is_typed") {
        let mut rl = t.limiter();
        let mut batch = rl.batch().unwrap();
        let ok = key("ok");
        batch
            .gcra(&ok, &Gcra::new(5, 1, "1s"))
            .fixed(key("bad"), &Fixed::new(0, "1m"));
        let err = rl.run(&batch).unwrap_err();
        assert!(
            matches!(&err, Error::InvalidArgument(m) if m.starts_with("limit must be")),
            "{err:?}"
        );
        // Refused before sending: the first call did not run either.
        assert!(!crate::common::exists(rl.connection(), &ok));
        // The server's refusal names the call's own command.
        let penalty = key("penalty");
        let mut batch = rl.batch().unwrap();
        // (A fixed window's counter is not a penalty's state.)
        batch.fixed(&penalty, &Fixed::new(5, "1m")).all(
            &rl_client::All::new()
                .key(&penalty, rl_client::Penalty::new(3, "1m", "1m", "1h"))
                .cost(0),
        );
        let err = rl.run(&batch).unwrap_err();
        assert!(
            matches!(&err, Error::BadArgument(m) if m.starts_with("ERR")),
            "{err:?}"
        );

        let list = key("list");
        redis::cmd("RPUSH")
            .arg(&list)
            .arg("x")
            .query::<i64>(rl.connection())
            .unwrap();
        let mut batch = rl.batch().unwrap();
        batch.fixed(&list, &Fixed::new(1, "1m"));
        assert!(matches!(rl.run(&batch), Err(Error::WrongType(_))));
        // An empty batch sends nothing.
        assert_eq!(
            Batch::new(t.backend).query(rl.connection()).unwrap(),
            vec![]
        );
    }
}
