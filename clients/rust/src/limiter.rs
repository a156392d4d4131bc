//! What [`Limiter`](crate::Limiter) and [`AsyncLimiter`](crate::AsyncLimiter) share:
//! the detected backend, the deadline, and their methods written once and expanded
//! blocking or async (each command's own method is generated).

use std::sync::atomic::{AtomicU8, Ordering};
use std::sync::Arc;
use std::time::Duration;

use crate::command::Backend;

/// The default deadline of a call.
pub const DEFAULT_TIMEOUT: Duration = Duration::from_millis(100);

/// The detected backend, shared by a limiter's clones: unknown until detected,
/// forgotten when the server answers that RL's command or function is missing.
#[derive(Clone, Debug, Default)]
pub(crate) struct BackendCell(Arc<AtomicU8>);

impl BackendCell {
    pub(crate) fn new(backend: Option<Backend>) -> Self {
        let cell = BackendCell::default();
        cell.set(backend);
        cell
    }

    pub(crate) fn get(&self) -> Option<Backend> {
        match self.0.load(Ordering::Relaxed) {
            1 => Some(Backend::Module),
            2 => Some(Backend::Library),
            _ => None,
        }
    }

    pub(crate) fn set(&self, backend: Option<Backend>) {
        let v = match backend {
            None => 0,
            Some(Backend::Module) => 1,
            Some(Backend::Library) => 2,
        };
        self.0.store(v, Ordering::Relaxed);
    }
}

/// A blocking connection whose reads and writes can be given a deadline: the
/// [`Limiter`](crate::Limiter) sets it to the time its call has left before each
/// request. Implemented for `redis::Connection` and `&mut` of one; implement it for a
/// pooled connection type by forwarding to its `redis::Connection`.
pub trait Deadline {
    /// Bounds each read and write from now on by `timeout` (never zero).
    fn set_deadline(&mut self, timeout: Duration) -> redis::RedisResult<()>;
}

impl Deadline for redis::Connection {
    fn set_deadline(&mut self, timeout: Duration) -> redis::RedisResult<()> {
        self.set_read_timeout(Some(timeout))?;
        self.set_write_timeout(Some(timeout))
    }
}

impl<T: Deadline + ?Sized> Deadline for &mut T {
    fn set_deadline(&mut self, timeout: Duration) -> redis::RedisResult<()> {
        (**self).set_deadline(timeout)
    }
}

/// The methods of a limiter (a struct with `con`, `backend: BackendCell`, `fail`,
/// `timeout`, and `send` / `send_pipeline` methods bounded by a deadline), given
/// `[async]` or nothing and `[.await]` or nothing.
macro_rules! limiter_api {
    ([$($async:tt)*] [$($await:tt)*]) => {
        /// What a call gives when the server cannot be reached or does not answer
        /// within the deadline (default [`FailMode::Error`]).
        #[must_use]
        pub fn fail_mode(mut self, mode: FailMode) -> Self {
            self.fail = mode;
            self
        }

        /// Changes the fail mode (of this limiter only, not of its clones).
        pub fn set_fail_mode(&mut self, mode: FailMode) {
            self.fail = mode;
        }

        /// The deadline of every call, detection and resend included (default 100 ms);
        /// no retry within it.
        #[must_use]
        pub fn timeout(mut self, timeout: Duration) -> Self {
            self.timeout = timeout;
            self
        }

        /// Changes the deadline (of this limiter only).
        pub fn set_timeout(&mut self, timeout: Duration) {
            self.timeout = timeout;
        }

        /// Remembers up to `size` blocked keys (0: no cache, the default). After a
        /// rejection, the same RL.FIXED, RL.SLIDING, RL.BUCKET, RL.GCRA or
        /// RL.SLIDINGCOUNTER call (same key and arguments) at the same or a larger cost
        /// is rejected locally, [`Decision::cached`] set and `retry_after` what is left
        /// of the server's, until `min(retry_after, max)` has passed (`max` zero: 1 s).
        /// COST 0, REFUND and DEBIT go to the server and end the entry. Shared with the
        /// limiter's clones.
        #[must_use]
        pub fn cache(mut self, size: usize, max: Duration) -> Self {
            survive::configure(&mut self.survival, |s| s.set_cache(size, max));
            self
        }

        /// While the server cannot be reached (a connection error or the deadline),
        /// decides those same calls locally: a GCRA at the call's limit / `instances`
        /// (how many app instances share the limits; 0: no fallback, the default) per
        /// window, per key and arguments, marked [`Decision::fallback`] with the error.
        /// It replaces the [`FailMode`] for those calls. The server is tried again at
        /// most every `probe_every`.
        #[must_use]
        pub fn fallback(mut self, instances: u64, probe_every: Duration) -> Self {
            survive::configure(&mut self.survival, |s| s.set_fallback(instances, probe_every));
            self
        }

        /// The wrapped connection, for other commands.
        pub fn connection(&mut self) -> &mut C {
            &mut self.con
        }

        /// Gives the connection back.
        pub fn into_inner(self) -> C {
            self.con
        }

        /// One request within the deadline; a server error reply is an error.
        $($async)* fn request(&mut self, cmd: &redis::Cmd, deadline: Instant) -> Result<Value> {
            let timeout = self.timeout;
            match self.send(cmd, deadline)$($await)* {
                Some(result) => result.map_err(|e| Error::from_redis(e, "RL")),
                None => Err(Error::timeout(timeout)),
            }
        }

        /// A probe's answer: its reply; None for an error reply (FUNCTION on a
        /// server before 7.0, an ACL refusal: not there).
        $($async)* fn probe(&mut self, cmd: &redis::Cmd, deadline: Instant) -> Result<Option<Value>> {
            match self.request(cmd, deadline)$($await)* {
                Ok(v) => Ok(Some(v)),
                Err(e) if e.is_connection() => Err(e),
                Err(_) => Ok(None),
            }
        }

        $($async)* fn detect_by(&mut self, deadline: Instant) -> Result<Backend> {
            let mut found = None;
            if let Some(v) = self.probe(&probe::command_info("rl.gcra"), deadline)$($await)*? {
                if probe::has_command(&v) {
                    found = Some(Backend::Module);
                }
            }
            if found.is_none() {
                if let Some(v) = self.probe(&probe::function_list(), deadline)$($await)*? {
                    if probe::library_functions(&v).is_some() {
                        found = Some(Backend::Library);
                    }
                }
            }
            self.backend.set(found);
            found.ok_or_else(|| Error::NotLoaded(NOT_LOADED.into()))
        }

        /// Asks the server which backend it has, every time (`COMMAND INFO rl.gcra`,
        /// else `FUNCTION LIST LIBRARYNAME rl`), and keeps the answer for the calls
        /// that follow. [`Error::NotLoaded`] when neither is there.
        pub $($async)* fn detect(&mut self) -> Result<Backend> {
            let deadline = Instant::now() + self.timeout;
            self.detect_by(deadline)$($await)*
        }

        /// The backend: the one detected last, else detected now. A call that finds
        /// RL's command or function missing detects again by itself.
        pub $($async)* fn backend(&mut self) -> Result<Backend> {
            match self.backend.get() {
                Some(b) => Ok(b),
                None => self.detect()$($await)*,
            }
        }

        /// Whether this server's RL has `command` (`"RL.SHARE"`, `"CL.THROTTLE"`, …) on
        /// the detected backend.
        pub $($async)* fn supports(&mut self, command: &str) -> Result<bool> {
            let backend = self.backend()$($await)*?;
            let deadline = Instant::now() + self.timeout;
            match backend {
                Backend::Module => Ok(self
                    .probe(&probe::command_info(command), deadline)$($await)*?
                    .is_some_and(|v| probe::has_command(&v))),
                Backend::Library => {
                    let Some(function) = probe::function_of(command) else {
                        return Ok(false);
                    };
                    Ok(self
                        .probe(&probe::function_list(), deadline)$($await)*?
                        .and_then(|v| probe::library_functions(&v))
                        .is_some_and(|fs| fs.contains(&function)))
                }
            }
        }

        /// One call: checked, sent within the deadline (detecting the backend first if
        /// unknown, and once more if the server lost the command), its reply read; a
        /// connection error or missed deadline goes through the fail mode.
        pub(crate) $($async)* fn call(&mut self, call: Call<'_>) -> Result<Reply> {
            call.check()?;
            let survival = self.survival.clone();
            let ticket = survival.as_ref().and_then(|_| survive::Ticket::of(&call));
            let state = survive::lock;
            if let (Some(s), Some(t)) = (&survival, &ticket) {
                if let Some(d) = state(s).before(t, Instant::now()) {
                    return Ok(Reply::Decision(d));
                }
            }
            let deadline = Instant::now() + self.timeout;
            let out = self.attempt(call, deadline)$($await)*;
            let (Some(s), Some(t)) = (&survival, &ticket) else {
                return match out {
                    Err(e) if e.is_connection() => command::fallback(self.fail, &call.expect(), &e).ok_or(e),
                    other => other,
                };
            };
            match out {
                Ok(Reply::Decision(d)) => {
                    state(s).answered(t, &d, Instant::now());
                    Ok(Reply::Decision(d))
                }
                Err(e) if e.is_connection() => match state(s).failed(t, &e, Instant::now()) {
                    Some(d) => Ok(Reply::Decision(d)),
                    None => command::fallback(self.fail, &call.expect(), &e).ok_or(e),
                },
                other => {
                    state(s).up();
                    other
                }
            }
        }

        $($async)* fn attempt(&mut self, call: Call<'_>, deadline: Instant) -> Result<Reply> {
            let backend = match self.backend.get() {
                Some(b) => b,
                None => self.detect_by(deadline)$($await)*?,
            };
            let p = call.prepare(backend)?;
            let timeout = self.timeout;
            let first = match self.send(&p.cmd, deadline)$($await)* {
                Some(result) => result,
                None => return Err(Error::timeout(timeout)),
            };
            match first {
                Ok(v) => return command::read(&p, &v),
                Err(e) if !is_missing(&e) => return Err(Error::from_redis(e, p.command)),
                // The server lost the command (RL unloaded, a restart or failover to
                // the other backend): nothing was counted; detect again, send once more.
                Err(_) => {}
            }
            let p = call.prepare(self.detect_by(deadline)$($await)*?)?;
            match self.send(&p.cmd, deadline)$($await)* {
                Some(Ok(v)) => command::read(&p, &v),
                Some(Err(e)) if is_missing(&e) => Err(Error::unsupported(p.command, &e)),
                Some(Err(e)) => Err(Error::from_redis(e, p.command)),
                None => Err(Error::timeout(timeout)),
            }
        }

        /// A batch for this server's backend (detected first). Run it with
        /// [`Self::run`].
        pub $($async)* fn batch(&mut self) -> Result<Batch> {
            Ok(Batch::new(self.backend()$($await)*?))
        }

        /// Runs a batch within the deadline, in one round trip. Fail modes do not
        /// apply (the error is returned); a command the server lost makes the limiter
        /// detect the backend again for the next batch.
        pub $($async)* fn run(&mut self, batch: &Batch) -> Result<Vec<Reply>> {
            batch.refusal()?;
            if batch.is_empty() {
                return Ok(Vec::new());
            }
            let deadline = Instant::now() + self.timeout;
            let timeout = self.timeout;
            let result = match self.send_pipeline(batch.pipeline(), deadline)$($await)* {
                Some(result) => result,
                None => return Err(Error::timeout(timeout)),
            };
            let out = batch.read(result);
            if matches!(out, Err(Error::NotLoaded(_))) {
                self.backend.set(None);
            }
            out
        }
    };
}

/// The methods of a lease guard on `$limiter`, given `[async]` or nothing and
/// `[.await]` or nothing.
macro_rules! lease_api {
    ($limiter:ident [$($async:tt)*] [$($await:tt)*]) => {
        /// Whether the lease was granted and is not released yet.
        pub fn held(&self) -> bool {
            self.held
        }

        /// RL.ACQUIRE's decision (when rejected: retry_after says when a slot frees up).
        pub fn decision(&self) -> &Decision {
            &self.decision
        }

        /// The lease set's key.
        pub fn key(&self) -> &[u8] {
            &self.key
        }

        /// The lease's id.
        pub fn id(&self) -> &[u8] {
            &self.params.id
        }

        /// The limiter, for other calls while the lease is held.
        pub fn limiter(&mut self) -> &mut $limiter<C> {
            self.limiter
        }

        /// Renews the lease (the same RL.ACQUIRE: its end moves to now + ttl).
        pub $($async)* fn renew(&mut self) -> Result<&Decision> {
            let d = self.limiter.acquire(&self.key, &self.params)$($await)*?;
            self.held = d.allowed && !d.fallback;
            self.decision = d;
            Ok(&self.decision)
        }
    };
}

/// `Debug` for a lease guard: its key, id, whether held, and decision.
macro_rules! lease_debug {
    ($lease:ident $(, $($bound:tt)+)?) => {
        impl<C $(: $($bound)+)?> std::fmt::Debug for $lease<'_, C> {
            fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.debug_struct(stringify!($lease))
                    .field("key", &String::from_utf8_lossy(&self.key))
                    .field("id", &String::from_utf8_lossy(&self.params.id))
                    .field("held", &self.held)
                    .field("decision", &self.decision)
                    .finish()
            }
        }
    };
}
