//! Real redis-server processes for integration tests.
//!
//! Each [`Server`] runs on its own free loopback port with its own directory, the
//! backend under test loaded (unless asked otherwise), and is killed and reaped when
//! dropped, so a failing test leaves nothing behind. Waits poll with deadlines;
//! nothing sleeps for a fixed time.
//!
//! Two backends run the same tests ([`backend`], env `RL_BACKEND`): the module
//! (`module`, the default) and the Functions library `functions/rl.lua`
//! (`library`, path `RL_LIBRARY`). Tests write RL calls as the module's commands
//! (`["RL.FIXED", key, …]`); [`on_backend`] is the one place that turns them into
//! `FCALL rl_fixed 1 key …` for the library. Tests of module-only features start
//! with `if module_only("why") { return; }`.
#![allow(dead_code)]

use std::net::TcpListener;
use std::path::PathBuf;
use std::process::{Child, Stdio};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

pub use redis::{cmd, Connection, Value};

pub mod commands;
#[allow(unused_imports)]
pub use commands::*;

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

/// What serves the RL commands in the servers the tests start.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Backend {
    /// The module (`--loadmodule`), RL.* commands.
    Module,
    /// The Functions library (`FUNCTION LOAD`), `FCALL rl_*`.
    Library,
}

/// The backend under test: `RL_BACKEND=library`, else the module.
pub fn backend() -> Backend {
    match std::env::var("RL_BACKEND").as_deref() {
        Ok("library") => Backend::Library,
        Ok("module") | Ok("") | Err(_) => Backend::Module,
        Ok(other) => panic!("RL_BACKEND={other}: expected module or library"),
    }
}

pub fn is_library() -> bool {
    backend() == Backend::Library
}

/// True (and says why) when the test is about a module-only feature and the
/// backend is the library: the caller returns, the test counts as skipped.
pub fn module_only(why: &str) -> bool {
    if is_library() {
        eprintln!("skipped with the library backend: {why}");
        return true;
    }
    false
}

/// The Functions library: `RL_LIBRARY`, or the repository's functions/rl.lua.
pub fn library_path() -> PathBuf {
    std::env::var_os("RL_LIBRARY")
        .filter(|p| !p.is_empty())
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from(concat!(env!("CARGO_MANIFEST_DIR"), "/functions/rl.lua")))
}

/// The library's source, for FUNCTION LOAD.
pub fn library_source() -> String {
    let path = library_path();
    std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

/// Loads the library into a server (FUNCTION LOAD REPLACE).
pub fn load_library(c: &mut Connection) {
    let name: String = cmd("FUNCTION")
        .arg("LOAD")
        .arg("REPLACE")
        .arg(library_source())
        .query(c)
        .expect("FUNCTION LOAD of the library");
    assert_eq!(name, "rl");
}

/// The library function for an RL command name (any case): `RL.FIXED` → `rl_fixed`.
pub fn function_of(name: &[u8]) -> Option<String> {
    const NAMES: &[&str] = &[
        "RL.FIXED",
        "RL.SLIDING",
        "RL.BUCKET",
        "RL.GCRA",
        "RL.SLIDINGCOUNTER",
        "RL.ALL",
        "RL.ACQUIRE",
        "RL.RELEASE",
    ];
    NAMES
        .iter()
        .find(|n| n.as_bytes().eq_ignore_ascii_case(name))
        .map(|n| n.to_lowercase().replace('.', "_"))
}

/// A command line as the backend takes it: unchanged for the module; for the
/// library an RL command becomes `FCALL rl_<name> 1 key args…` (RL.ALL:
/// `FCALL rl_all numkeys keys… args…`). Any other command is unchanged.
pub fn translate(args: Vec<Vec<u8>>) -> Vec<Vec<u8>> {
    if !is_library() || args.is_empty() {
        return args;
    }
    let Some(function) = function_of(&args[0]) else {
        return args;
    };
    let mut out = vec![b"FCALL".to_vec(), function.clone().into_bytes()];
    if function == "rl_all" {
        // numkeys is already where FCALL wants it.
        out.extend(args.into_iter().skip(1));
    } else {
        out.push(b"1".to_vec());
        out.extend(args.into_iter().skip(1));
    }
    out
}

/// A command built elsewhere (`cmd("RL.FIXED").arg(…)`) as the backend takes it.
pub fn on_backend(c: &redis::Cmd) -> redis::Cmd {
    let args: Vec<Vec<u8>> = c
        .args_iter()
        .map(|a| match a {
            redis::Arg::Simple(b) => b.to_vec(),
            redis::Arg::Cursor => b"0".to_vec(),
        })
        .collect();
    let mut out = redis::Cmd::new();
    for a in translate(args) {
        out.arg(a);
    }
    out
}

/// The name an arity error names for `command` (`RL.FIXED` → `rl.fixed` for the
/// module, `rl_fixed` for the library), lower case.
pub fn arity_name(command: &str) -> String {
    match function_of(command.as_bytes()) {
        Some(f) if is_library() => f,
        _ => command.to_lowercase(),
    }
}

/// `ERR wrong number of arguments for '…' command` for `command` on this backend.
pub fn arity_error(command: &str) -> String {
    format!(
        "ERR wrong number of arguments for '{}' command",
        arity_name(command)
    )
}

/// The server binary the tests run: `RL_REDIS_SERVER` (a path, as `make compat`
/// sets it), or `redis-server` from PATH.
pub fn server_binary() -> PathBuf {
    std::env::var_os("RL_REDIS_SERVER")
        .filter(|p| !p.is_empty())
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from("redis-server"))
}

/// A loopback port nobody listens on right now.
pub fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .map(|a| a.port())
        .expect("a free port")
}

/// How long a test waits for the server clock or a key to change.
pub const PATIENCE: Duration = Duration::from_secs(20);
/// How long one reply may take on a [`connect`]ed connection. A MULTI of n commands
/// to a hung server fails after about n times this (redis-rs reads every reply
/// before reporting).
pub const REPLY_TIMEOUT: Duration = Duration::from_secs(5);

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
        let mut command = std::process::Command::new(server_binary());
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
        let deadline = Instant::now() + Duration::from_secs(10);
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

/// The five reply fields of an RL call.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Reply {
    pub allowed: i64,
    pub limit: i64,
    pub remaining: i64,
    pub retry_after: i64,
    pub reset_after: i64,
}

impl Reply {
    /// The reply from its five integers, in order.
    pub fn of(v: &[i64]) -> Reply {
        Reply {
            allowed: v[0],
            limit: v[1],
            remaining: v[2],
            retry_after: v[3],
            reset_after: v[4],
        }
    }
}

/// Runs an RL command and returns its reply, panicking on an error reply.
pub fn rl(c: &mut Connection, args: &[&str]) -> Reply {
    let v: Vec<i64> = try_rl(c, args).unwrap_or_else(|e| panic!("{args:?}: {e}"));
    assert_eq!(v.len(), 5, "{args:?} replied {v:?}");
    Reply::of(&v)
}

/// Runs an RL command and returns the raw integers or the error.
pub fn try_rl(c: &mut Connection, args: &[&str]) -> redis::RedisResult<Vec<i64>> {
    command_of(args).query(c)
}

/// A command from its name and arguments.
pub fn command_of(args: &[impl redis::ToRedisArgs]) -> redis::Cmd {
    let mut line = Vec::new();
    for a in args {
        line.extend(a.to_redis_args());
    }
    let mut command = redis::Cmd::new();
    for a in translate(line) {
        command.arg(a);
    }
    command
}

/// The error reply of a command that must fail, as "CODE message".
pub fn error_of(c: &mut Connection, args: &[&[u8]]) -> String {
    match command_of(args).query::<Value>(c) {
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

/// A connection that gives up on a hung server instead of hanging the test.
pub fn connect(s: &Server) -> Connection {
    let c = s.conn();
    c.set_read_timeout(Some(REPLY_TIMEOUT))
        .expect("read timeout");
    c
}

/// A TIME reply in ms.
pub fn ms_of((s, us): (i64, i64)) -> i64 {
    s * 1000 + us / 1000
}

/// Polls the server clock until it reaches `t`; returns the time read.
pub fn wait_until(c: &mut Connection, t: i64) -> i64 {
    wait_for(PATIENCE, "the server clock", || {
        let now = server_ms(c);
        (now >= t).then_some(now)
    })
}

/// `MEMORY USAGE key` in bytes.
pub fn usage(c: &mut Connection, key: &str) -> i64 {
    cmd("MEMORY")
        .arg("USAGE")
        .arg(key)
        .query(c)
        .expect("MEMORY USAGE")
}

pub fn exists(c: &mut Connection, key: impl AsRef<[u8]>) -> bool {
    cmd("EXISTS")
        .arg(key.as_ref())
        .query::<i64>(c)
        .expect("EXISTS")
        == 1
}

/// A key's absolute expiry in ms (-1 without one, -2 when absent).
pub fn pexpiretime(c: &mut Connection, key: impl AsRef<[u8]>) -> i64 {
    cmd("PEXPIRETIME")
        .arg(key.as_ref())
        .query(c)
        .expect("PEXPIRETIME")
}

/// CONFIG SET `name` `value`, which must succeed.
pub fn config_set(c: &mut Connection, name: &str, value: impl redis::ToRedisArgs) {
    let _: () = cmd("CONFIG")
        .arg("SET")
        .arg(name)
        .arg(value)
        .query(c)
        .unwrap_or_else(|e| panic!("CONFIG SET {name}: {e}"));
}

/// The value of field `name` in INFO `section`, or None if the server did not
/// answer or has no such field.
pub fn try_info_str(c: &mut Connection, section: &str, name: &str) -> Option<String> {
    let info: String = cmd("INFO").arg(section).query(c).ok()?;
    info.lines()
        .find_map(|l| l.strip_prefix(name)?.strip_prefix(':'))
        .map(|v| v.trim().to_string())
}

/// The value of field `name` in INFO `section`, which must be there.
pub fn info_str(c: &mut Connection, section: &str, name: &str) -> String {
    let info: String = cmd("INFO").arg(section).query(c).expect("INFO");
    info.lines()
        .find_map(|l| l.strip_prefix(name)?.strip_prefix(':'))
        .map(|v| v.trim().to_string())
        .unwrap_or_else(|| panic!("no {name} in INFO {section}:\n{info}"))
}

/// An integer field of an INFO section, which must be there.
pub fn info_field(c: &mut Connection, section: &str, name: &str) -> i64 {
    let v = info_str(c, section, name);
    v.parse()
        .unwrap_or_else(|e| panic!("INFO {section} {name}:{v} is not an integer: {e}"))
}

/// One RL call observed atomically (inside MULTI): the key's content as read by
/// `content` (e.g. HGETALL or ZRANGE … WITHSCORES), its DUMP and PEXPIRETIME before
/// and after, and the server time just before and just after the call.
pub struct Observed<S> {
    pub reply: Reply,
    /// Bounds on the server time the call read.
    pub lo: i64,
    pub hi: i64,
    pub before: S,
    pub after: S,
    /// Whether DUMP or PEXPIRETIME changed.
    pub wrote: bool,
    /// PEXPIRETIME after the call.
    pub expires_at: i64,
}

pub fn observe<S: redis::FromRedisValue>(
    c: &mut Connection,
    args: &[String],
    content: fn(&mut redis::Pipeline, &str),
) -> Observed<S> {
    let key = args[1].as_str();
    let mut p = redis::pipe();
    p.atomic();
    let state = |p: &mut redis::Pipeline| {
        content(p, key);
        p.cmd("DUMP").arg(key).cmd("PEXPIRETIME").arg(key);
    };
    state(&mut p);
    p.cmd("TIME").add_command(command_of(args)).cmd("TIME");
    state(&mut p);
    #[allow(clippy::type_complexity)]
    let (before, dump_before, at_before, t0, raw, t1, after, dump_after, at_after): (
        S,
        Option<Vec<u8>>,
        i64,
        (i64, i64),
        Vec<i64>,
        (i64, i64),
        S,
        Option<Vec<u8>>,
        i64,
    ) = p
        .query(c)
        .unwrap_or_else(|e| panic!("{args:?} in MULTI: {e}"));
    assert_eq!(raw.len(), 5, "{args:?} replied {raw:?}");
    Observed {
        reply: Reply::of(&raw),
        lo: ms_of(t0),
        hi: ms_of(t1),
        before,
        after,
        wrote: (dump_after, at_after) != (dump_before, at_before),
        expires_at: at_after,
    }
}
