//! The async API on MultiplexedConnection and ConnectionManager, both backends.

use std::time::Duration;

use rl_client::{
    Acquire, All, AsyncLimiter, Backend, Bucket, Error, Fixed, Gcra, Penalty, Share, Sliding,
    SlidingCounter, Throttle,
};

use crate::common::{between, key, runtime, shared, targets};

const H: Duration = Duration::from_secs(3600);
const SLACK: Duration = Duration::from_secs(10);

#[test]
fn every_command_async() {
    let _g = shared();
    for t in targets("every_command_async") {
        runtime().block_on(async {
            let mut rl = AsyncLimiter::new(t.multiplexed().await);
            assert_eq!(rl.backend().await.unwrap(), t.backend);

            let k = key("async-fixed");
            let p = Fixed::new(2, "3650d");
            assert_eq!(rl.fixed(&k, &p).await.unwrap().remaining, 1);
            assert_eq!(
                rl.fixed(&k, &p.clone().debit(1)).await.unwrap().remaining,
                0
            );
            assert!(!rl.fixed(&k, &p).await.unwrap().allowed);
            assert_eq!(
                rl.fixed(&k, &p.clone().refund(2)).await.unwrap().remaining,
                2
            );
            assert_eq!(rl.fixed(&k, &p.clone().cost(0)).await.unwrap().remaining, 2);

            let k = key("async-sliding");
            let p = Sliding::new(2, "1h");
            assert_eq!(
                rl.sliding(&k, &p.clone().cost(2)).await.unwrap().remaining,
                0
            );
            assert_eq!(
                rl.sliding(&k, &p.clone().refund(1))
                    .await
                    .unwrap()
                    .remaining,
                1
            );

            let k = key("async-slidingcounter");
            let p = SlidingCounter::new(2, "3650d");
            assert_eq!(rl.sliding_counter(&k, &p).await.unwrap().remaining, 1);
            assert_eq!(
                rl.sliding_counter(&k, &p.clone().refund(1))
                    .await
                    .unwrap()
                    .remaining,
                2
            );
            assert_eq!(
                rl.sliding_counter(&k, &p.clone().debit(3))
                    .await
                    .unwrap()
                    .remaining,
                0
            );
            assert!(
                !rl.sliding_counter(&k, &p.clone().cost(1))
                    .await
                    .unwrap()
                    .allowed
            );

            let k = key("async-bucket");
            let p = Bucket::new(2, 1, "1h");
            let d = rl.bucket(&k, &p.clone().cost(2)).await.unwrap();
            assert_eq!((d.allowed, d.remaining), (true, 0));
            let rejected = rl.bucket(&k, &p).await.unwrap();
            between(rejected.retry_after, H - SLACK, H);
            assert_eq!(
                rl.bucket(&k, &p.clone().refund(1)).await.unwrap().remaining,
                1
            );
            assert_eq!(
                rl.bucket(&k, &p.clone().debit(2)).await.unwrap().remaining,
                0
            );

            let k = key("async-gcra");
            let p = Gcra::new(1, 1, "1h").delay("1h");
            assert_eq!(
                rl.gcra(&k, &p).await.unwrap().retry_after,
                Some(Duration::ZERO)
            );
            let queued = rl.gcra(&k, &p).await.unwrap();
            assert!(queued.allowed);
            between(queued.retry_after, H - SLACK, H);
            assert!(!rl.gcra(&k, &p).await.unwrap().allowed);
            assert!(
                rl.gcra(&k, &Gcra::new(1, 1, "1h").refund(1))
                    .await
                    .unwrap()
                    .allowed
            );
            assert!(
                rl.gcra(&k, &Gcra::new(1, 1, "1h").debit(1))
                    .await
                    .unwrap()
                    .allowed
            );
            assert_eq!(
                rl.gcra(&k, &Gcra::new(1, 1, "1h").cost(2))
                    .await
                    .unwrap()
                    .retry_after,
                None
            );

            let k = key("async-throttle");
            match (
                t.backend,
                rl.throttle(&k, &Throttle::new(1, 1, "1h").quantity(2))
                    .await,
            ) {
                (Backend::Module, Ok(d)) => {
                    assert_eq!((d.limited, d.limit, d.remaining), (false, 2, 0))
                }
                (Backend::Library, Err(Error::Unsupported(_))) => {}
                (b, other) => panic!("{b:?}: {other:?}"),
            }

            let (a, b) = (key("{async-all}:a"), key("{async-all}:b"));
            let all = All::new()
                .key(&a, Fixed::new(1, "3650d"))
                .key(&b, Gcra::new(3, 1, "1h"));
            assert!(rl.all(&all).await.unwrap().allowed());
            let second = rl.all(&all).await.unwrap();
            assert_eq!(second.rejected().collect::<Vec<_>>(), vec![0]);
            assert_eq!(second.keys[1].remaining, 2);
            assert!(rl.all(&all.clone().refund(1)).await.unwrap().allowed());
            assert!(rl.all(&all.clone().debit(1)).await.unwrap().allowed());
            let look = rl.all(&all.clone().cost(0)).await.unwrap();
            assert!(look.allowed());
            assert_eq!((look.keys[0].remaining, look.keys[1].remaining), (0, 2));

            let k = key("async-acquire");
            assert!(
                rl.acquire(&k, &Acquire::new(1, "1h", "a"))
                    .await
                    .unwrap()
                    .allowed
            );
            assert!(
                !rl.acquire(&k, &Acquire::new(1, "1h", "b"))
                    .await
                    .unwrap()
                    .allowed
            );
            assert!(rl.release(&k, "a").await.unwrap());
            assert!(!rl.release(&k, "a").await.unwrap());

            let k = key("async-penalty");
            let p = Penalty::new(2, "1m", "1m", "1h");
            assert!(rl.penalty(&k, &p).await.unwrap().allowed);
            assert!(!rl.penalty(&k, &p).await.unwrap().allowed);
            assert!(!rl.penalty(&k, &p.clone().cost(0)).await.unwrap().allowed);

            let k = key("async-share");
            let p = Share::new("t", 1, 5, 1, "1h");
            if rl.supports("RL.SHARE").await.unwrap() {
                assert!(rl.share(&k, &p).await.unwrap().allowed);
                assert!(rl.share(&k, &p.clone().cost(0)).await.unwrap().allowed);
                assert!(rl.share(&k, &p.clone().refund(1)).await.unwrap().allowed);
                assert!(rl.share(&k, &p.clone().debit(1)).await.unwrap().allowed);
            } else {
                eprintln!(
                    "skipped the async RL.SHARE calls on {:?}: this server's RL has no RL.SHARE",
                    t.backend
                );
                assert!(matches!(rl.share(&k, &p).await, Err(Error::Unsupported(_))));
            }

            let list = key("async-list");
            redis::cmd("RPUSH")
                .arg(&list)
                .arg("x")
                .query_async::<i64>(rl.connection())
                .await
                .unwrap();
            assert!(matches!(
                rl.gcra(&list, &Gcra::new(1, 1, "1s")).await,
                Err(Error::WrongType(_))
            ));
            assert!(matches!(
                rl.gcra(&k, &Gcra::new(0, 1, "1s")).await,
                Err(Error::InvalidArgument(_))
            ));
        });
    }
}

#[test]
fn async_lease_is_released_only_when_awaited() {
    let _g = shared();
    for t in targets("async_lease_is_released_only_when_awaited") {
        runtime().block_on(async {
            let mut rl = AsyncLimiter::new(t.multiplexed().await);
            let k = key("async-lease");
            let lease = rl.lease(&k, &Acquire::new(1, "1h", "a")).await.unwrap();
            assert!(lease.held());
            assert!(lease.release().await.unwrap());

            let mut lease = rl.lease(&k, &Acquire::new(1, "1h", "b")).await.unwrap();
            assert!(lease.held());
            assert!(lease.renew().await.unwrap().allowed);
            let busy = lease
                .limiter()
                .acquire(&k, &Acquire::new(1, "1h", "c"))
                .await
                .unwrap();
            assert!(!busy.allowed);
            drop(lease); // dropped without release: b still holds the slot
            let after_drop = rl.acquire(&k, &Acquire::new(1, "1h", "c")).await.unwrap();
            assert!(!after_drop.allowed, "a dropped async lease is not released");
            assert!(rl.release(&k, "b").await.unwrap());
            let rejected = {
                assert!(
                    rl.acquire(&k, &Acquire::new(1, "1h", "c"))
                        .await
                        .unwrap()
                        .allowed
                );
                rl.lease(&k, &Acquire::new(1, "1h", "d")).await.unwrap()
            };
            assert!(!rejected.held());
            assert!(!rejected.release().await.unwrap());
        });
    }
}

#[test]
fn clones_share_detection_and_run_in_tasks() {
    let _g = shared();
    for t in targets("clones_share_detection_and_run_in_tasks") {
        let rt = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .enable_all()
            .build()
            .unwrap();
        rt.block_on(async {
            let mut rl = AsyncLimiter::new(t.multiplexed().await);
            let clone = rl.clone();
            assert_eq!(rl.backend().await.unwrap(), t.backend);
            assert!(
                format!("{clone:?}").contains(&format!("Some({:?})", t.backend)),
                "{clone:?}"
            );
            let k = key("async-tasks");
            let tasks: Vec<_> = (0..4)
                .map(|_| {
                    let mut rl = clone.clone();
                    let k = k.clone();
                    tokio::spawn(async move { rl.gcra(&k, &Gcra::new(3, 1, "1h")).await })
                })
                .collect();
            let mut allowed = 0;
            for task in tasks {
                if task.await.unwrap().unwrap().allowed {
                    allowed += 1;
                }
            }
            assert_eq!(allowed, 3);
        });
    }
}

#[test]
fn connection_manager_and_batches() {
    let _g = shared();
    for t in targets("connection_manager_and_batches") {
        runtime().block_on(async {
            let manager = redis::Client::open(t.url.as_str())
                .unwrap()
                .get_connection_manager()
                .await
                .unwrap();
            let mut rl = AsyncLimiter::new(manager);
            let k = key("async-batch");
            let mut batch = rl.batch().await.unwrap();
            for _ in 0..4 {
                batch.bucket(&k, &Bucket::new(3, 1, "1h"));
            }
            let replies = rl.run(&batch).await.unwrap();
            let remaining: Vec<u64> = replies
                .iter()
                .map(|r| r.decision().unwrap().remaining)
                .collect();
            assert_eq!(remaining, [2, 1, 0, 0]);
            assert!(!replies[3].allowed());
            let mut bad = rl.batch().await.unwrap();
            bad.fixed(&k, &Fixed::new(1, "1m"));
            // k is a bucket's hash: RL.FIXED finds the wrong type.
            assert!(matches!(rl.run(&bad).await, Err(Error::WrongType(_))));
        });
    }
}
