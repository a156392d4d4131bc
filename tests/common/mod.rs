//! Real redis-server processes for integration tests.
//!
//! Each [`Server`] runs on its own free loopback port with its own directory, the
//! module loaded (unless asked otherwise), and is killed and reaped when dropped, so
//! a failing test leaves nothing behind. Waits poll with deadlines; nothing sleeps
//! for a fixed time.
#![allow(dead_code)]

use std::net::TcpListener;
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

pub use redis::{cmd, Connection, Value};

/// The module under test: `RL_MODULE`, or the .so cargo built next to this test.
pub fn module_path() -> PathBuf {
    if let Some(p) = std::env::var_os("RL_MODULE") {
        return PathBuf::from(p);
    }
    let exe = std::env::current_exe().expect("test executable path");
    let deps = exe.parent().expect("deps dir");
    let name = format!(
        "{}rl{}",
        std::env::consts::DLL_PREFIX,
        std::env::consts::DLL_SUFFIX
    );
    for dir in [
        deps.to_path_buf(),
        deps.parent().map(|p| p.to_path_buf()).unwrap_or_default(),
    ] {
        let candidate = dir.join(&name);
        if candidate.exists() {
            return candidate;
        }
    }
    panic!("cannot find {name} near {}; set RL_MODULE", deps.display());
}

fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .map(|a| a.port())
        .expect("a free port")
}

/// Polls `f` until it returns Some, or panics after `limit` with `what`.
pub fn wait_for<T>(limit: Duration, what: &str, mut f: impl FnMut() -> Option<T>) -> T {
    let deadline = Instant::now() + limit;
    loop {
        if let Some(v) = f() {
            return v;
        }
        if Instant::now() > deadline {
            panic!("timed out after {limit:?} waiting for {what}");
        }
        std::thread::sleep(Duration::from_millis(10));
    }
}

#[derive(Clone, Default)]
pub struct Options {
    pub without_module: bool,
    pub args: Vec<String>,
    /// Reuse this directory (for restarts); a fresh one otherwise.
    pub dir: Option<PathBuf>,
}

pub struct Server {
    child: Child,
    pub port: u16,
    pub dir: PathBuf,
    keep_dir: bool,
}

static NEXT: AtomicUsize = AtomicUsize::new(0);

impl Server {
    /// A server with the module loaded and persistence off.
    pub fn start() -> Server {
        Server::with(Options::default())
    }

    pub fn with(opts: Options) -> Server {
        // A port found free can be taken before redis binds it: retry a few times.
        let mut last_log = String::new();
        for _ in 0..5 {
            match Server::try_start(&opts) {
                Ok(s) => return s,
                Err(log) => last_log = log,
            }
        }
        panic!("redis-server did not start:\n{last_log}");
    }

    fn try_start(opts: &Options) -> Result<Server, String> {
        let port = free_port();
        let keep_dir = opts.dir.is_some();
        let dir = opts.dir.clone().unwrap_or_else(|| {
            let n = NEXT.fetch_add(1, Ordering::SeqCst);
            std::env::temp_dir().join(format!("rl-test-{}-{n}-{port}", std::process::id()))
        });
        std::fs::create_dir_all(&dir).map_err(|e| e.to_string())?;
        let log = dir.join("redis.log");
        let mut command = Command::new("redis-server");
        command
            .arg("--port")
            .arg(port.to_string())
            .arg("--bind")
            .arg("127.0.0.1")
            .arg("--dir")
            .arg(&dir)
            .arg("--logfile")
            .arg(&log)
            .args(["--save", "", "--appendonly", "no", "--daemonize", "no"])
            .args([
                "--repl-diskless-sync",
                "yes",
                "--repl-diskless-sync-delay",
                "0",
            ]);
        if !opts.without_module {
            command.arg("--loadmodule").arg(module_path());
        }
        command.args(&opts.args);
        let child = command
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .map_err(|e| format!("cannot run redis-server: {e}"))?;
        let mut server = Server {
            child,
            port,
            dir,
            keep_dir,
        };
        let deadline = Instant::now() + Duration::from_secs(10);
        loop {
            if let Ok(Some(_)) = server.child.try_wait() {
                return Err(std::fs::read_to_string(&log).unwrap_or_default());
            }
            if let Ok(mut c) = server.try_conn() {
                if cmd("PING").query::<String>(&mut c).is_ok() {
                    return Ok(server);
                }
            }
            if Instant::now() > deadline {
                return Err(format!(
                    "not ready after 10 s\n{}",
                    std::fs::read_to_string(&log).unwrap_or_default()
                ));
            }
            std::thread::sleep(Duration::from_millis(10));
        }
    }

    fn try_conn(&self) -> redis::RedisResult<Connection> {
        let client = redis::Client::open(format!("redis://127.0.0.1:{}/", self.port))?;
        client.get_connection_with_timeout(Duration::from_secs(5))
    }

    pub fn conn(&self) -> Connection {
        self.try_conn().expect("connect to test server")
    }

    /// A replica of this server; waits until its link is up.
    pub fn replica(&self, with_module: bool) -> Server {
        let replica = Server::with(Options {
            without_module: !with_module,
            args: vec![
                "--replicaof".into(),
                "127.0.0.1".into(),
                self.port.to_string(),
            ],
            ..Options::default()
        });
        let mut c = replica.conn();
        wait_for(Duration::from_secs(20), "master_link_status:up", || {
            let info: String = cmd("INFO").arg("replication").query(&mut c).ok()?;
            info.contains("master_link_status:up").then_some(())
        });
        replica
    }

    /// Waits until `replica` has applied everything this server propagated so far.
    pub fn sync(&self, replica: &Server) {
        let mut p = self.conn();
        let mut r = replica.conn();
        let offset = |c: &mut Connection, field: &str| -> Option<i64> {
            let info: String = cmd("INFO").arg("replication").query(c).ok()?;
            info.lines()
                .find_map(|l| l.strip_prefix(field))
                .and_then(|v| v.trim().parse().ok())
        };
        let target = offset(&mut p, "master_repl_offset:").expect("primary offset");
        wait_for(Duration::from_secs(20), "replica to catch up", || {
            (offset(&mut r, "master_repl_offset:")? >= target).then_some(())
        });
    }

    /// The server's log so far (for failure messages).
    pub fn log(&self) -> String {
        std::fs::read_to_string(self.dir.join("redis.log")).unwrap_or_default()
    }

    /// Whether the process is still running.
    pub fn alive(&mut self) -> bool {
        matches!(self.child.try_wait(), Ok(None))
    }

    /// Stops the server (SHUTDOWN with the given save mode) and waits for it to exit.
    pub fn shutdown(mut self, save: bool) -> PathBuf {
        let mut c = self.conn();
        let _: redis::RedisResult<()> = cmd("SHUTDOWN")
            .arg(if save { "SAVE" } else { "NOSAVE" })
            .query(&mut c);
        wait_for(Duration::from_secs(20), "server exit", || {
            self.child.try_wait().ok().flatten().map(|_| ())
        });
        self.keep_dir = true;
        self.dir.clone()
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
        if !self.keep_dir && !std::thread::panicking() {
            let _ = std::fs::remove_dir_all(&self.dir);
        }
    }
}

/// The five reply fields of an RL call.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Reply {
    pub allowed: i64,
    pub limit: i64,
    pub remaining: i64,
    pub retry_after: i64,
    pub reset_after: i64,
}

/// Runs an RL command and returns its reply, panicking on an error reply.
pub fn rl(c: &mut Connection, args: &[&str]) -> Reply {
    let v: Vec<i64> = try_rl(c, args).unwrap_or_else(|e| panic!("{args:?}: {e}"));
    assert_eq!(v.len(), 5, "{args:?} replied {v:?}");
    Reply {
        allowed: v[0],
        limit: v[1],
        remaining: v[2],
        retry_after: v[3],
        reset_after: v[4],
    }
}

/// Runs an RL command and returns the raw integers or the error.
pub fn try_rl(c: &mut Connection, args: &[&str]) -> redis::RedisResult<Vec<i64>> {
    let mut command = cmd(args[0]);
    for a in &args[1..] {
        command.arg(*a);
    }
    command.query(c)
}

/// The error reply of a command that must fail, as "CODE message".
pub fn error_of(c: &mut Connection, args: &[&[u8]]) -> String {
    let mut command = cmd(std::str::from_utf8(args[0]).unwrap());
    for a in &args[1..] {
        command.arg(*a);
    }
    match command.query::<Value>(c) {
        Ok(v) => panic!("{args:?} should fail but replied {v:?}"),
        Err(e) => {
            let code = e.code().unwrap_or("?").to_string();
            let detail = e.detail().unwrap_or("").to_string();
            format!("{code} {detail}").trim().to_string()
        }
    }
}

/// A key's full serialized value and absolute expiry: equal means untouched.
pub fn snapshot(c: &mut Connection, key: &[u8]) -> (Option<Vec<u8>>, i64) {
    let dump: Option<Vec<u8>> = cmd("DUMP").arg(key).query(c).expect("DUMP");
    let at: i64 = cmd("PEXPIRETIME").arg(key).query(c).expect("PEXPIRETIME");
    (dump, at)
}

/// The server's clock in ms, from TIME.
pub fn server_ms(c: &mut Connection) -> i64 {
    let (s, us): (i64, i64) = cmd("TIME").query(c).expect("TIME");
    s * 1000 + us / 1000
}

/// Waits until the server clock is just past a multiple of `window_ms`, with at
/// least `margin_ms` left in that window, so a short test runs inside one window.
pub fn align_to_window(c: &mut Connection, window_ms: i64, margin_ms: i64) -> i64 {
    wait_for(
        Duration::from_secs(window_ms as u64 / 1000 * 3 + 10),
        "window start",
        || {
            let now = server_ms(c);
            (window_ms - now % window_ms >= margin_ms).then_some(now)
        },
    )
}
