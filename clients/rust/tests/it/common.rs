//! The servers the tests run against, unique keys, and the lock that lets the OOM
//! test have the servers to itself.

use std::net::{TcpListener, TcpStream};
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{RwLock, RwLockReadGuard, RwLockWriteGuard};
use std::time::{Duration, Instant};

use rl_client::{Backend, Limiter};

/// A server with RL: the module or the library.
pub struct Target {
    pub url: String,
    pub backend: Backend,
}

impl Target {
    pub fn con(&self) -> redis::Connection {
        redis::Client::open(self.url.as_str())
            .and_then(|c| c.get_connection_with_timeout(Duration::from_secs(10)))
            .unwrap_or_else(|e| panic!("cannot connect to {}: {e}", self.url))
    }

    /// A limiter that detects the backend itself.
    pub fn limiter(&self) -> Limiter<redis::Connection> {
        Limiter::new(self.con())
    }

    pub async fn multiplexed(&self) -> redis::aio::MultiplexedConnection {
        redis::Client::open(self.url.as_str())
            .unwrap()
            .get_multiplexed_async_connection()
            .await
            .unwrap_or_else(|e| panic!("cannot connect to {}: {e}", self.url))
    }
}

/// The servers of RL_TEST_MODULE_URL and RL_TEST_LIBRARY_URL; none (and a note on
/// stderr) when both are unset, so a plain `cargo test` passes without servers.
pub fn targets(test: &str) -> Vec<Target> {
    let mut out = Vec::new();
    for (var, backend) in [
        ("RL_TEST_MODULE_URL", Backend::Module),
        ("RL_TEST_LIBRARY_URL", Backend::Library),
    ] {
        match std::env::var(var) {
            Ok(url) if !url.is_empty() => out.push(Target { url, backend }),
            _ => eprintln!(
                "skipped {test} on the {backend:?} backend: {var} is unset (scripts/clients.sh rust sets it)"
            ),
        }
    }
    out
}

/// A key no other test (or earlier run) uses.
pub fn key(name: &str) -> String {
    static NEXT: AtomicU64 = AtomicU64::new(0);
    let n = NEXT.fetch_add(1, Ordering::Relaxed);
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_nanos())
        .unwrap_or_default();
    format!("rlc:{name}:{}:{nanos}:{n}", std::process::id())
}

static SERVERS: RwLock<()> = RwLock::new(());

/// Held by every test that uses the shared servers.
pub fn shared() -> RwLockReadGuard<'static, ()> {
    SERVERS.read().unwrap_or_else(|e| e.into_inner())
}

/// Held by a test that changes a shared server's configuration (OOM).
pub fn exclusive() -> RwLockWriteGuard<'static, ()> {
    SERVERS.write().unwrap_or_else(|e| e.into_inner())
}

pub fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap()
}

/// Asserts `d` is within `[lo, hi]` (times that depend on the few ms between calls).
#[track_caller]
pub fn between(d: Option<Duration>, lo: Duration, hi: Duration) {
    match d {
        Some(d) => assert!(lo <= d && d <= hi, "{d:?} not in {lo:?}..={hi:?}"),
        None => panic!("None, expected {lo:?}..={hi:?}"),
    }
}

pub fn exists(con: &mut redis::Connection, key: &str) -> bool {
    redis::cmd("EXISTS").arg(key).query::<i64>(con).unwrap() == 1
}

/// How many times the server ran `command` (INFO commandstats).
pub fn calls(con: &mut redis::Connection, command: &str) -> u64 {
    let info: String = redis::cmd("INFO").arg("commandstats").query(con).unwrap();
    let prefix = format!("cmdstat_{}:calls=", command.to_lowercase());
    info.lines()
        .find_map(|l| l.to_lowercase().strip_prefix(&prefix).map(|r| r.to_owned()))
        .and_then(|r| r.split(',').next().and_then(|n| n.parse().ok()))
        .unwrap_or(0)
}

/// A redis-server of its own, with neither the module nor the library; killed on drop.
pub struct BareServer {
    child: Child,
    pub url: String,
    dir: PathBuf,
}

impl BareServer {
    /// None (said on stderr) when there is no redis-server to start.
    pub fn start() -> Option<BareServer> {
        let port = TcpListener::bind("127.0.0.1:0")
            .and_then(|l| l.local_addr())
            .map(|a| a.port())
            .expect("a free port");
        BareServer::start_at(port)
    }

    /// The same on `port` (a killed server's, to bring it back).
    pub fn start_at(port: u16) -> Option<BareServer> {
        let program = std::env::var("REDIS_SERVER").unwrap_or_else(|_| "redis-server".into());
        let dir =
            std::env::temp_dir().join(format!("rl-client-bare-{}-{port}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let child = Command::new(&program)
            .args([
                "--port",
                &port.to_string(),
                "--bind",
                "127.0.0.1",
                "--save",
                "",
                "--appendonly",
                "no",
            ])
            .arg("--dir")
            .arg(&dir)
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn();
        let child = match child {
            Ok(c) => c,
            Err(e) => {
                eprintln!("skipped: cannot start {program} ({e}); set REDIS_SERVER");
                let _ = std::fs::remove_dir_all(&dir);
                return None;
            }
        };
        let mut server = BareServer {
            child,
            url: format!("redis://127.0.0.1:{port}"),
            dir,
        };
        let deadline = Instant::now() + Duration::from_secs(10);
        loop {
            if TcpStream::connect(("127.0.0.1", port)).is_ok() {
                let pong = redis::Client::open(server.url.as_str())
                    .and_then(|c| c.get_connection())
                    .and_then(|mut c| redis::cmd("PING").query::<String>(&mut c));
                if pong.is_ok() {
                    return Some(server);
                }
            }
            if let Ok(Some(status)) = server.child.try_wait() {
                panic!("{program} exited at start: {status}");
            }
            assert!(
                Instant::now() < deadline,
                "{program} did not answer PING within 10 s"
            );
            std::thread::sleep(Duration::from_millis(20));
        }
    }
}

/// A connection whose server was killed after it connected: every call on it fails
/// (None, said on stderr, when there is no redis-server to start).
pub fn dead_connection() -> Option<redis::Connection> {
    let server = BareServer::start()?;
    let con = server.con();
    drop(server);
    Some(con)
}

impl BareServer {
    /// A client of this server.
    pub fn client(&self) -> redis::Client {
        redis::Client::open(self.url.as_str()).unwrap()
    }

    /// A blocking connection to this server.
    pub fn con(&self) -> redis::Connection {
        self.client().get_connection().unwrap()
    }

    /// The port it listens on.
    pub fn port(&self) -> u16 {
        self.url
            .rsplit(':')
            .next()
            .and_then(|p| p.parse().ok())
            .unwrap()
    }

    /// Loads RL's Functions library (functions/rl.lua).
    pub fn load_library(&self) {
        let path = concat!(env!("CARGO_MANIFEST_DIR"), "/../../functions/rl.lua");
        let code = std::fs::read_to_string(path).unwrap();
        redis::cmd("FUNCTION")
            .arg("LOAD")
            .arg("REPLACE")
            .arg(code)
            .query::<String>(&mut self.con())
            .unwrap();
    }
}

impl Drop for BareServer {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}
