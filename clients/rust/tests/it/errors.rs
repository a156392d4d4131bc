//! Typed errors: bad arguments, wrong types, not loaded, OOM, connection errors and
//! the fail modes.

use std::net::TcpListener;

use rl_client::{
    Acquire, All, AsyncLimiter, Backend, Error, FailMode, Fixed, Gcra, Limiter, Sliding,
};

use crate::common::{exclusive, key, runtime, shared, targets, BareServer};

#[test]
fn bad_argument_leaves_the_key_unchanged() {
    let _g = shared();
    for t in targets("bad_argument_leaves_the_key_unchanged") {
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
        let err = rl.fixed(&k, &Fixed::new(0, "3650d")).unwrap_err();
        assert!(
            matches!(&err, Error::BadArgument(m) if m.starts_with("ERR limit must be an integer from 1")),
            "{err:?}"
        );
        assert_eq!(err.code(), Some("ERR"));
        let err = rl.fixed(&k, &Fixed::new(5, "11y")).unwrap_err();
        assert!(
            matches!(&err, Error::BadArgument(m) if m.starts_with("ERR window must be a duration")),
            "{err:?}"
        );
        let err = rl
            .sliding(&k, &Sliding::new(100_000_000, "1m"))
            .unwrap_err();
        assert!(matches!(&err, Error::BadArgument(_)), "{err:?}");
        let after = state(&mut rl);
        assert_eq!(before, after);
        assert_eq!(after.0, "2");
        // A policy carrying its own charge inside RL.ALL is refused before sending.
        let err = rl
            .all(&All::new().key(&k, Fixed::new(5, "3650d").cost(1)))
            .unwrap_err();
        assert!(matches!(err, Error::BadArgument(_)), "{err:?}");
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
fn a_forced_backend_the_server_lacks_is_not_loaded() {
    let _g = shared();
    for t in targets("a_forced_backend_the_server_lacks_is_not_loaded") {
        let other = match t.backend {
            Backend::Module => Backend::Library,
            Backend::Library => Backend::Module,
        };
        let mut rl = Limiter::with_backend(t.con(), other);
        let err = rl.gcra(key("forced"), &Gcra::new(5, 1, "1s")).unwrap_err();
        assert!(
            matches!(&err, Error::NotLoaded(m) if m.contains("--loadmodule")),
            "{:?} {err:?}",
            t.backend
        );
    }
}

#[test]
fn neither_backend_is_not_loaded() {
    let Some(server) = BareServer::start() else {
        return;
    };
    let con = redis::Client::open(server.url.as_str())
        .unwrap()
        .get_connection()
        .unwrap();
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

#[test]
fn connection_errors_and_fail_modes() {
    // redis::Client is a ConnectionLike that connects for each call.
    let client = || redis::Client::open(dead_url()).unwrap();
    let g = Gcra::new(5, 1, "1s");

    let err = Limiter::with_backend(client(), Backend::Module)
        .gcra("k", &g)
        .unwrap_err();
    assert!(err.is_connection(), "{err:?}");
    // Detection fails the same way.
    let err = Limiter::new(client()).gcra("k", &g).unwrap_err();
    assert!(matches!(err, Error::Connection(_)), "{err:?}");

    let mut open = Limiter::new(client()).fail_mode(FailMode::Open);
    let d = open.gcra("k", &g).unwrap();
    assert!(d.allowed && d.fallback);
    assert_eq!((d.limit, d.remaining), (5, 5));
    let a = open
        .all(&All::new().key("a", g.clone()).key("b", Fixed::new(2, "1m")))
        .unwrap();
    assert!(a.allowed() && a.combined.fallback);
    assert_eq!((a.combined.limit, a.keys.len()), (2, 2));
    // Fail modes decide; they never pretend a lease was released.
    assert!(open.release("k", "id").unwrap_err().is_connection());

    let mut closed = Limiter::new(client()).fail_mode(FailMode::Closed);
    let d = closed.gcra("k", &g).unwrap();
    assert!(!d.allowed && d.fallback);
    assert!(d
        .headers()
        .iter()
        .any(|(n, v)| *n == "Retry-After" && v == "1"));

    runtime().block_on(async {
        // An async limiter on a connection that dies under it.
        let server = match BareServer::start() {
            Some(s) => s,
            None => return,
        };
        let con = redis::Client::open(server.url.as_str())
            .unwrap()
            .get_multiplexed_async_connection()
            .await
            .unwrap();
        drop(server);
        let mut rl = AsyncLimiter::with_backend(con, Backend::Module).fail_mode(FailMode::Closed);
        let d = rl.gcra("k", &g).await.unwrap();
        assert!(!d.allowed && d.fallback, "{d:?}");
        rl.set_fail_mode(FailMode::Error);
        assert!(rl.gcra("k", &g).await.unwrap_err().is_connection());
    });
}
