//! Real redis-server processes: which binary and which module build, a free port
//! and a directory of its own, killed and reaped on drop.

use std::net::TcpListener;
use std::path::PathBuf;
use std::process::{Child, Stdio};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use redis::{cmd, Connection};

use super::backend::{is_library, load_library};
use super::helpers::{try_info_str, wait_for};

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

/// The server binary the tests run: `RL_REDIS_SERVER` (a path, as `make compat`
/// sets it), or `redis-server` from PATH.
pub fn server_binary() -> PathBuf {
    std::env::var_os("RL_REDIS_SERVER")
        .filter(|p| !p.is_empty())
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from("redis-server"))
}

/// The command that runs [`server_binary`]: the binary itself, or under
/// `RL_SERVER_WRAPPER`, a command line split on spaces that the binary's path is
/// appended to (`qemu-aarch64 -L /usr/aarch64-linux-gnu`: an arm64 server on an
/// x86-64 host, as `make test-dist` runs it).
pub fn server_command() -> std::process::Command {
    let wrapper = std::env::var("RL_SERVER_WRAPPER").unwrap_or_default();
    let mut words = wrapper.split_whitespace();
    match words.next() {
        Some(program) => {
            let mut command = std::process::Command::new(program);
            command.args(words).arg(server_binary());
            command
        }
        None => std::process::Command::new(server_binary()),
    }
}

/// How long a server may take to answer its first PING: an emulated one
/// (`RL_SERVER_WRAPPER`) starts far slower.
fn start_deadline() -> Duration {
    match std::env::var("RL_SERVER_WRAPPER") {
        Ok(w) if !w.trim().is_empty() => Duration::from_secs(120),
        _ => Duration::from_secs(10),
    }
}

/// A loopback port nobody listens on right now.
pub fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .map(|a| a.port())
        .expect("a free port")
}

/// How long one reply may take on a [`connect`]ed connection. A MULTI of n commands
/// to a hung server fails after about n times this (redis-rs reads every reply
/// before reporting).
pub const REPLY_TIMEOUT: Duration = Duration::from_secs(5);

/// A build of the module with the `testing` feature (RL.* calls on the key
/// `__rl_panic__` panic): `RL_TESTING_MODULE`, or the module under test when that
/// is such a build (plain `cargo test --all-features`).
pub fn testing_module_path() -> PathBuf {
    std::env::var_os("RL_TESTING_MODULE").map_or_else(module_path, PathBuf::from)
}

#[derive(Clone, Default)]
pub struct Options {
    pub without_module: bool,
    /// Load this build instead of [`module_path`].
    pub module: Option<PathBuf>,
    pub args: Vec<String>,
    /// Reuse this directory (for restarts); a fresh one otherwise.
    pub dir: Option<PathBuf>,
    /// Run this server binary instead of [`server_command`]'s.
    pub binary: Option<PathBuf>,
    /// Environment variables for the server process (libfaketime's, to set its clock).
    pub env: Vec<(String, String)>,
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

    /// A server given `--loadmodule <the module>` and then `rest` on its command
    /// line: module arguments, then any config lines (`--rl.…`), as a user writes
    /// them.
    pub fn loading_module(rest: &[&str]) -> Server {
        let mut args = vec!["--loadmodule".into(), module_path().display().to_string()];
        args.extend(rest.iter().map(|a| a.to_string()));
        Server::with(Options {
            without_module: true,
            args,
            ..Options::default()
        })
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
        let mut command = match &opts.binary {
            Some(binary) => std::process::Command::new(binary),
            None => server_command(),
        };
        command
            .envs(opts.env.iter().map(|(k, v)| (k, v)))
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
        let library = !opts.without_module && opts.module.is_none() && is_library();
        if !opts.without_module && !library {
            let module = opts.module.clone().unwrap_or_else(module_path);
            command.arg("--loadmodule").arg(module);
        }
        // A replica gets the library from its primary (FUNCTION LOAD replicates).
        let replica = opts
            .args
            .iter()
            .any(|a| a == "--replicaof" || a == "--slaveof");
        command.args(&opts.args);
        let child = command
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .map_err(|e| format!("cannot run {}: {e}", server_binary().display()))?;
        let mut server = Server {
            child,
            port,
            dir,
            keep_dir,
        };
        let deadline = Instant::now() + start_deadline();
        loop {
            if let Ok(Some(_)) = server.child.try_wait() {
                return Err(std::fs::read_to_string(&log).unwrap_or_default());
            }
            if let Ok(mut c) = server.try_conn() {
                if cmd("PING").query::<String>(&mut c).is_ok() {
                    if library && !replica {
                        load_library(&mut c);
                    }
                    return Ok(server);
                }
            }
            if Instant::now() > deadline {
                return Err(format!(
                    "not ready after {:?}\n{}",
                    start_deadline(),
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
            (try_info_str(&mut c, "replication", "master_link_status")? == "up").then_some(())
        });
        replica
    }

    /// Waits until `replica` has applied everything this server propagated so far.
    pub fn sync(&self, replica: &Server) {
        let mut p = self.conn();
        let mut r = replica.conn();
        let offset = |c: &mut Connection| -> Option<i64> {
            try_info_str(c, "replication", "master_repl_offset")?
                .parse()
                .ok()
        };
        let target = offset(&mut p).expect("primary offset");
        wait_for(Duration::from_secs(20), "replica to catch up", || {
            (offset(&mut r)? >= target).then_some(())
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

/// A connection that gives up on a hung server instead of hanging the test.
pub fn connect(s: &Server) -> Connection {
    let c = s.conn();
    c.set_read_timeout(Some(REPLY_TIMEOUT))
        .expect("read timeout");
    c
}

/// Whether a transaction on a connection that WATCHes `key` still commits after
/// `action` ran on another connection: false when `action` marked the key modified.
pub fn exec_survives(s: &Server, key: &[u8], action: impl FnOnce(&mut Connection)) -> bool {
    let mut watcher = s.conn();
    let mut actor = s.conn();
    let _: () = cmd("WATCH").arg(key).query(&mut watcher).unwrap();
    action(&mut actor);
    let _: () = cmd("MULTI").query(&mut watcher).unwrap();
    let _: redis::Value = cmd("PING").query(&mut watcher).unwrap();
    match cmd("EXEC").query::<redis::Value>(&mut watcher).unwrap() {
        redis::Value::Nil => false,
        redis::Value::Array(_) => true,
        other => panic!("EXEC replied {other:?}"),
    }
}
