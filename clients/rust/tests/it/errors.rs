//! Typed errors: bad arguments, wrong types, not loaded, OOM, connection errors and
//! the fail modes.

use std::net::TcpListener;
use std::time::{Duration, Instant};

use rl_client::{
    Acquire, All, AsyncLimiter, Backend, Error, FailMode, Fixed, Gcra, Limiter, Penalty, Sliding,
};

use crate::common::{exclusive, key, runtime, shared, targets, BareServer};

#[test]
fn refused_arguments_send_nothing() {
    let _g = shared();
    for t in targets("refused_arguments_send_nothing") {
        let mut rl = t.limiter();
        let k = key("bad-argument");
        rl.fixed(&k, &Fixed::new(5, "3650d").cost(2)).unwrap();
        // The key's value and expiry.
        let state = |rl: &mut rl_client::Limiter<redis::Connection>| -> (String, i64) {
            redis::pipe()
                .cmd("GET")
                .arg(&k)
                .cmd("PEXPIRETIME")
                .arg(&k)
                .query(rl.connection())
                .unwrap()
        };
        let before = state(&mut rl);
        let refused = [
            rl.fixed(&k, &Fixed::new(0, "3650d")),
            rl.fixed(&k, &Fixed::new(5, "11y")),
            rl.fixed(&k, &Fixed::new(5, Duration::from_nanos(1))),
            rl.fixed(&k, &Fixed::new(5, "1m").cost(1).refund(1)),
            rl.fixed(&k, &Fixed::new(5, "1m").debit(1).debit(2)),
        ];
        for r in refused {
            let err = r.unwrap_err();
            assert!(matches!(err, Error::InvalidArgument(_)), "{err:?}");
            assert_eq!(err.code(), None);
        }
        let err = rl.sliding(&k, &Sliding::new(100_001, "1m")).unwrap_err();
        assert!(
            matches!(&err, Error::InvalidArgument(m) if m.contains("from 1 to 100000")),
            "{err:?}"
        );
        // A policy carrying its own charge inside RL.ALL is refused before sending.
        let err = rl
            .all(&All::new().key(&k, Fixed::new(5, "3650d").cost(1)))
            .unwrap_err();
        assert!(matches!(err, Error::InvalidArgument(_)), "{err:?}");
        assert!(matches!(
            rl.all(&All::new()),
            Err(Error::InvalidArgument(_))
        ));
        let after = state(&mut rl);
        assert_eq!(before, after);
        assert_eq!(after.0, "2");
        // What only the server can refuse: a PENALTY policy is only looked at.
        let err = rl
            .all(
                &All::new()
                    .key(&k, Penalty::new(3, "1m", "1m", "1h"))
                    .cost(1),
            )
            .unwrap_err();
        assert!(
            matches!(&err, Error::BadArgument(m) if m.starts_with("ERR")),
            "{err:?}"
        );
        assert_eq!(err.code(), Some("ERR"));
        assert_eq!(state(&mut rl), before);
    }
}

#[test]
fn wrong_type() {
    let _g = shared();
    for t in targets("wrong_type") {
        let mut rl = t.limiter();
        let k = key("wrong-type");
        redis::cmd("RPUSH")
            .arg(&k)
            .arg("x")
            .query::<i64>(rl.connection())
            .unwrap();
        let err = rl.gcra(&k, &Gcra::new(5, 1, "1s")).unwrap_err();
        assert!(
            matches!(&err, Error::WrongType(m) if m.starts_with("WRONGTYPE")),
            "{err:?}"
        );
        assert_eq!(err.code(), Some("WRONGTYPE"));
        let list: Vec<String> = redis::cmd("LRANGE")
            .arg(&k)
            .arg(0)
            .arg(-1)
            .query(rl.connection())
            .unwrap();
        assert_eq!(list, ["x"]);
        // A string RL did not write: RL's "does not hold" error, the value kept.
        let s = key("not-rl");
        redis::cmd("SET")
            .arg(&s)
            .arg("hello")
            .query::<()>(rl.connection())
            .unwrap();
        let err = rl.fixed(&s, &Fixed::new(5, "1m")).unwrap_err();
        assert!(
            matches!(&err, Error::BadArgument(m) if m.contains("does not hold an RL.FIXED counter")),
            "{err:?}"
        );
        let v: String = redis::cmd("GET").arg(&s).query(rl.connection()).unwrap();
        assert_eq!(v, "hello");
    }
}

#[test]
fn a_wrong_backend_is_detected_again() {
    let _g = shared();
    for t in targets("a_wrong_backend_is_detected_again") {
        let other = match t.backend {
            Backend::Module => Backend::Library,
            Backend::Library => Backend::Module,
        };
        // As after a restart or failover to a server with the other backend.
        let mut rl = Limiter::with_backend(t.con(), other);
        let d = rl.gcra(key("forced"), &Gcra::new(5, 1, "1s")).unwrap();
        assert_eq!((d.allowed, d.remaining), (true, 4), "{:?}", t.backend);
        assert_eq!(rl.backend().unwrap(), t.backend);
        runtime().block_on(async {
            let mut rl = AsyncLimiter::with_backend(t.multiplexed().await, other);
            assert!(
                rl.gcra(key("forced"), &Gcra::new(5, 1, "1s"))
                    .await
                    .unwrap()
                    .allowed
            );
            assert_eq!(rl.backend().await.unwrap(), t.backend);
        });
    }
}

/// Loads functions/rl.lua into `con`'s server.
fn load_library(con: &mut redis::Connection) {
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../functions/rl.lua");
    let code = std::fs::read_to_string(&path).unwrap();
    redis::cmd("FUNCTION")
        .arg("LOAD")
        .arg("REPLACE")
        .arg(code)
        .query::<String>(con)
        .unwrap();
}

#[test]
fn detect_asks_every_time_and_a_lost_library_is_found_again() {
    let Some(server) = BareServer::start() else {
        return;
    };
    let client = server.client();
    let mut admin = client.get_connection().unwrap();
    load_library(&mut admin);
    let mut rl = Limiter::new(client.get_connection().unwrap());
    assert_eq!(rl.detect().unwrap(), Backend::Library);
    let g = Gcra::new(5, 1, "1h");
    assert_eq!(rl.gcra("k", &g).unwrap().remaining, 4);
    redis::cmd("FUNCTION")
        .arg("DELETE")
        .arg("rl")
        .query::<()>(&mut admin)
        .unwrap();
    assert!(matches!(rl.detect(), Err(Error::NotLoaded(_))));
    // Loaded again: the next call finds it by itself (no detect() needed).
    load_library(&mut admin);
    assert_eq!(rl.gcra("k", &g).unwrap().remaining, 3);
    // Deleted while the limiter still believes in it: the call answers NotLoaded,
    // nothing counted, and once the library is back the call works.
    redis::cmd("FUNCTION")
        .arg("DELETE")
        .arg("rl")
        .query::<()>(&mut admin)
        .unwrap();
    assert!(matches!(rl.gcra("k", &g), Err(Error::NotLoaded(_))));
    load_library(&mut admin);
    assert_eq!(rl.gcra("k", &g).unwrap().remaining, 2);
}

#[test]
fn neither_backend_is_not_loaded() {
    let Some(server) = BareServer::start() else {
        return;
    };
    let con = server.con();
    let mut rl = Limiter::new(con);
    let err = rl.backend().unwrap_err();
    assert!(
        matches!(&err, Error::NotLoaded(m) if m.contains("--loadmodule /path/to/librl.so") && m.contains("FUNCTION LOAD")),
        "{err:?}"
    );
    let err = rl.fixed("k", &Fixed::new(1, "1s")).unwrap_err();
    assert!(matches!(err, Error::NotLoaded(_)), "{err:?}");
    let exists: i64 = redis::cmd("DBSIZE").query(rl.connection()).unwrap();
    assert_eq!(exists, 0);

    runtime().block_on(async {
        let con = redis::Client::open(server.url.as_str())
            .unwrap()
            .get_multiplexed_async_connection()
            .await
            .unwrap();
        let mut rl = AsyncLimiter::new(con);
        let err = rl.gcra("k", &Gcra::new(1, 1, "1s")).await.unwrap_err();
        assert!(matches!(err, Error::NotLoaded(_)), "{err:?}");
    });
}

/// Puts a server at maxmemory 1 until dropped.
struct MaxMemory {
    con: redis::Connection,
    before: String,
}

impl MaxMemory {
    fn one(mut con: redis::Connection) -> MaxMemory {
        let (_, before): (String, String) = redis::cmd("CONFIG")
            .arg("GET")
            .arg("maxmemory")
            .query(&mut con)
            .unwrap();
        redis::cmd("CONFIG")
            .arg("SET")
            .arg("maxmemory")
            .arg(1)
            .query::<()>(&mut con)
            .unwrap();
        MaxMemory { con, before }
    }
}

impl Drop for MaxMemory {
    fn drop(&mut self) {
        let _ = redis::cmd("CONFIG")
            .arg("SET")
            .arg("maxmemory")
            .arg(&self.before)
            .query::<()>(&mut self.con);
    }
}

#[test]
fn oom() {
    // The servers are at maxmemory during this test: no other test runs meanwhile.
    let _g = exclusive();
    for t in targets("oom") {
        let mut rl = t.limiter();
        let k = key("oom");
        assert!(
            rl.acquire(&k, &Acquire::new(2, "1h", "held"))
                .unwrap()
                .allowed
        );
        let full = MaxMemory::one(t.con());
        let err = rl
            .gcra(key("oom-gcra"), &Gcra::new(5, 1, "1s"))
            .unwrap_err();
        assert!(
            matches!(&err, Error::Oom(m) if m.starts_with("OOM")),
            "{:?}: {err:?}",
            t.backend
        );
        assert_eq!(err.code(), Some("OOM"));
        // RL.RELEASE still frees a slot at maxmemory.
        assert!(rl.release(&k, "held").unwrap(), "{:?}", t.backend);
        drop(full);
        assert!(
            rl.gcra(key("oom-after"), &Gcra::new(5, 1, "1s"))
                .unwrap()
                .allowed
        );
    }
}

/// A URL where nothing listens.
fn dead_url() -> String {
    let port = TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    format!("redis://127.0.0.1:{port}")
}

const TIMEOUT: Duration = Duration::from_millis(100);
/// What a call may take beyond its deadline (a loaded 2-core machine).
const MARGIN: Duration = Duration::from_millis(150);

/// Asserts a call's fail-mode decision: allow or deny as the rules give, carrying the
/// error, within the deadline.
#[track_caller]
fn decided(d: &rl_client::Decision, mode: FailMode, took: Duration) {
    assert!(took <= TIMEOUT + MARGIN, "took {took:?}");
    assert!(d.fallback && d.error.is_some(), "{d:?}");
    match mode {
        FailMode::Open => assert_eq!(
            (d.allowed, d.remaining, d.retry_after, d.reset_after),
            (true, d.limit, Some(Duration::ZERO), Duration::ZERO)
        ),
        FailMode::Closed => assert_eq!(
            (d.allowed, d.remaining, d.retry_after, d.reset_after),
            (
                false,
                0,
                Some(Duration::from_secs(1)),
                Duration::from_secs(1)
            )
        ),
        FailMode::Error => unreachable!(),
    }
}

/// Each fail mode on a limiter whose server is unreachable or silent.
fn sync_fail_modes(con: &mut redis::Connection, what: &str) {
    let g = Gcra::new(5, 1, "1s");
    let mut rl = Limiter::with_backend(&mut *con, Backend::Module).timeout(TIMEOUT);
    let start = Instant::now();
    let err = rl.gcra("k", &g).unwrap_err();
    assert!(
        err.is_connection() && start.elapsed() <= TIMEOUT + MARGIN,
        "{what}: {err:?} after {:?}",
        start.elapsed()
    );
    for mode in [FailMode::Open, FailMode::Closed] {
        rl.set_fail_mode(mode);
        let start = Instant::now();
        let d = rl.gcra("k", &g).unwrap();
        decided(&d, mode, start.elapsed());
        let start = Instant::now();
        let a = rl
            .all(&All::new().key("a", g.clone()).key("b", Fixed::new(2, "1m")))
            .unwrap();
        decided(&a.combined, mode, start.elapsed());
        // The combined decision reports the smallest remaining, the first on a tie.
        let reported = if mode == FailMode::Open { 2 } else { 5 };
        assert_eq!((a.combined.limit, a.keys.len()), (reported, 2), "{what}");
        // Fail modes decide; they never pretend a lease was released.
        assert!(rl.release("k", "id").unwrap_err().is_connection(), "{what}");
    }
}

async fn async_fail_modes<C: redis::aio::ConnectionLike>(con: C, what: &str) {
    let g = Gcra::new(5, 1, "1s");
    let mut rl = AsyncLimiter::with_backend(con, Backend::Module).timeout(TIMEOUT);
    let start = Instant::now();
    let err = rl.gcra("k", &g).await.unwrap_err();
    assert!(
        err.is_connection() && start.elapsed() <= TIMEOUT + MARGIN,
        "{what}: {err:?} after {:?}",
        start.elapsed()
    );
    for mode in [FailMode::Open, FailMode::Closed] {
        rl.set_fail_mode(mode);
        let start = Instant::now();
        let d = rl.gcra("k", &g).await.unwrap();
        decided(&d, mode, start.elapsed());
    }
    // Detection too is bounded by the deadline.
    let start = Instant::now();
    assert!(rl.detect().await.unwrap_err().is_connection(), "{what}");
    assert!(
        start.elapsed() <= TIMEOUT + MARGIN,
        "{what}: detect took {:?}",
        start.elapsed()
    );
}

#[test]
fn fail_modes_against_a_stopped_server() {
    // Nothing listens: a ConnectionManager made lazily keeps reconnecting, within
    // the call's deadline only.
    runtime().block_on(async {
        let manager = redis::Client::open(dead_url())
            .unwrap()
            .get_connection_manager_lazy(redis::aio::ConnectionManagerConfig::new())
            .unwrap();
        async_fail_modes(manager, "stopped").await;
    });
}

#[test]
fn fail_modes_against_a_killed_server() {
    let Some(server) = BareServer::start() else {
        return;
    };
    let client = server.client();
    let mut con = client.get_connection().unwrap();
    runtime().block_on(async {
        let multiplexed = client.get_multiplexed_async_connection().await.unwrap();
        let manager = client.get_connection_manager().await.unwrap();
        drop(server);
        sync_fail_modes(&mut con, "killed");
        async_fail_modes(multiplexed, "killed, multiplexed").await;
        async_fail_modes(manager, "killed, connection manager").await;
    });
}

#[test]
fn fail_modes_against_a_paused_server() {
    let Some(server) = BareServer::start() else {
        return;
    };
    let client = server.client();
    let mut admin = client.get_connection().unwrap();
    let mut con = client.get_connection().unwrap();
    redis::cmd("CLIENT")
        .arg("PAUSE")
        .arg(3000)
        .arg("ALL")
        .query::<()>(&mut admin)
        .unwrap();
    sync_fail_modes(&mut con, "paused");
    runtime().block_on(async {
        let multiplexed = client.get_multiplexed_async_connection().await.unwrap();
        async_fail_modes(multiplexed, "paused").await;
    });
}
