//! The blocking API on a `redis::ConnectionLike` whose reads and writes take a
//! deadline ([`Deadline`]: `redis::Connection`, `&mut redis::Connection`).

use std::time::{Duration, Instant};

use redis::{Cmd, ConnectionLike, Pipeline, RedisResult, Value};

use crate::batch::Batch;
use crate::command::{self, probe, Backend, Call, FailMode, Reply};
use crate::error::{is_missing, Error, Result, NOT_LOADED};
use crate::generated::commands::Acquire;
use crate::limiter::{BackendCell, Deadline, DEFAULT_TIMEOUT};
use crate::reply::Decision;
use crate::survive;

/// RL's commands on a blocking redis-rs connection.
///
/// The first call learns whether the server has the module or the Functions
/// library ([`Limiter::detect`]); [`Limiter::with_backend`] skips the probe. Every
/// call has a deadline (default 100 ms, [`Limiter::timeout`]), detection and resend
/// included, and no retry inside it; what a call gives when it passes is the
/// [`FailMode`].
///
/// ```no_run
/// # fn main() -> Result<(), Box<dyn std::error::Error>> {
/// use rl_client::{FailMode, Gcra, Limiter};
/// use std::time::Duration;
///
/// let con = redis::Client::open("redis://127.0.0.1/")?.get_connection()?;
/// let mut rl = Limiter::new(con).timeout(Duration::from_millis(50)).fail_mode(FailMode::Open);
/// let d = rl.gcra("rl:api:42", &Gcra::new(20, 100, "1m"))?;
/// if !d.allowed {
///     // 429, with d.headers()
/// }
/// # Ok(())
/// # }
/// ```
pub struct Limiter<C> {
    con: C,
    backend: BackendCell,
    fail: FailMode,
    timeout: Duration,
    survival: survive::Shared,
}

impl<C: ConnectionLike + Deadline> Limiter<C> {
    /// Wraps a connection; the backend is detected on first use.
    pub fn new(con: C) -> Self {
        Limiter {
            con,
            backend: BackendCell::new(None),
            fail: FailMode::Error,
            timeout: DEFAULT_TIMEOUT,
            survival: None,
        }
    }

    /// Wraps a connection, using `backend` without probing (until the server answers
    /// that RL's command is missing: then it detects).
    pub fn with_backend(con: C, backend: Backend) -> Self {
        Limiter {
            backend: BackendCell::new(Some(backend)),
            ..Limiter::new(con)
        }
    }

    limiter_api!([] []);

    /// The time left before `deadline`, given to the connection; None once it passed.
    fn left(&mut self, deadline: Instant) -> Option<RedisResult<()>> {
        let left = deadline
            .checked_duration_since(Instant::now())
            .filter(|d| !d.is_zero())?;
        Some(self.con.set_deadline(left))
    }

    fn send(&mut self, cmd: &Cmd, deadline: Instant) -> Option<RedisResult<Value>> {
        Some(
            self.left(deadline)?
                .and_then(|()| cmd.query::<Value>(&mut self.con)),
        )
    }

    fn send_pipeline(&mut self, pipe: &Pipeline, deadline: Instant) -> Option<RedisResult<Value>> {
        Some(
            self.left(deadline)?
                .and_then(|()| pipe.query::<Value>(&mut self.con)),
        )
    }

    /// `RL.ACQUIRE` as a guard: the lease is released by [`Lease::release`] or,
    /// best effort, when the guard is dropped. Check [`Lease::held`]: a rejected
    /// acquire gives a guard that holds nothing (its decision says when to retry).
    ///
    /// ```no_run
    /// # fn main() -> Result<(), Box<dyn std::error::Error>> {
    /// use rl_client::{Acquire, Limiter};
    ///
    /// let con = redis::Client::open("redis://127.0.0.1/")?.get_connection()?;
    /// let mut rl = Limiter::new(con);
    /// let lease = rl.lease("rl:exports:acme", &Acquire::new(2, "5m", "job-17"))?;
    /// if lease.held() {
    ///     // … the work …
    ///     lease.release()?;
    /// }
    /// # Ok(())
    /// # }
    /// ```
    pub fn lease(&mut self, key: impl AsRef<[u8]>, params: &Acquire) -> Result<Lease<'_, C>> {
        let key = key.as_ref().to_vec();
        let decision = self.acquire(&key, params)?;
        Ok(Lease {
            held: decision.allowed && !decision.fallback,
            limiter: self,
            key,
            params: params.clone(),
            decision,
        })
    }
}

/// A lease taken by [`Limiter::lease`]: released by [`release`](Lease::release) or,
/// best effort (errors ignored), when dropped. A lease that is never released ends
/// by itself after its ttl.
pub struct Lease<'a, C: ConnectionLike + Deadline> {
    limiter: &'a mut Limiter<C>,
    key: Vec<u8>,
    params: Acquire,
    decision: Decision,
    held: bool,
}

impl<C: ConnectionLike + Deadline> Lease<'_, C> {
    lease_api!(Limiter [] []);

    /// Releases the lease: true if it was still live. A guard that holds nothing
    /// answers false without a call.
    pub fn release(mut self) -> Result<bool> {
        if !self.held {
            return Ok(false);
        }
        self.held = false;
        let (key, id) = (self.key.clone(), self.params.id.clone());
        self.limiter.release(key, id)
    }
}

impl<C: ConnectionLike + Deadline> Drop for Lease<'_, C> {
    fn drop(&mut self) {
        if self.held {
            self.held = false;
            let (key, id) = (std::mem::take(&mut self.key), self.params.id.clone());
            let _ = self.limiter.release(key, id);
        }
    }
}

lease_debug!(Lease, ConnectionLike + Deadline);

impl<C> std::fmt::Debug for Limiter<C> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Limiter")
            .field("backend", &self.backend.get())
            .field("fail_mode", &self.fail)
            .field("timeout", &self.timeout)
            .finish_non_exhaustive()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{Fixed, Gcra};
    use redis::{RedisResult, Value};
    use std::collections::VecDeque;

    /// A connection that answers from a script and records what it was sent.
    #[derive(Default)]
    struct Scripted {
        replies: VecDeque<RedisResult<Value>>,
        sent: Vec<String>,
    }

    impl Scripted {
        fn new(replies: Vec<RedisResult<Value>>) -> Self {
            Scripted {
                replies: replies.into(),
                sent: Vec::new(),
            }
        }
    }

    impl ConnectionLike for Scripted {
        fn req_packed_command(&mut self, cmd: &[u8]) -> RedisResult<Value> {
            // The command's words, from its RESP encoding.
            let text = String::from_utf8_lossy(cmd);
            let words: Vec<&str> = text
                .split("\r\n")
                .filter(|l| !l.is_empty() && !l.starts_with('*') && !l.starts_with('$'))
                .collect();
            self.sent.push(words.join(" "));
            self.replies.pop_front().unwrap_or(Ok(Value::Nil))
        }
        fn req_packed_commands(&mut self, _: &[u8], _: usize, _: usize) -> RedisResult<Vec<Value>> {
            Ok(Vec::new())
        }
        fn get_db(&self) -> i64 {
            0
        }
        fn check_connection(&mut self) -> bool {
            true
        }
        fn is_open(&self) -> bool {
            true
        }
    }

    impl Deadline for Scripted {
        fn set_deadline(&mut self, _: Duration) -> RedisResult<()> {
            Ok(())
        }
    }

    fn gcra_reply() -> RedisResult<Value> {
        Ok(Value::Array([1, 5, 4, 0, 1000].map(Value::Int).to_vec()))
    }

    fn refused() -> RedisResult<Value> {
        Err(std::io::Error::new(std::io::ErrorKind::ConnectionRefused, "refused").into())
    }

    #[test]
    fn neither_backend_is_not_loaded() {
        let con = Scripted::new(vec![
            Ok(Value::Array(vec![Value::Nil])),
            Ok(Value::Array(vec![])),
        ]);
        let mut rl = Limiter::new(con);
        let err = rl.gcra("k", &Gcra::new(5, 1, "1s")).unwrap_err();
        assert!(
            matches!(&err, Error::NotLoaded(m) if m.contains("--loadmodule") && m.contains("FUNCTION LOAD")),
            "{err:?}"
        );
        assert_eq!(
            rl.connection().sent,
            ["COMMAND INFO rl.gcra", "FUNCTION LIST LIBRARYNAME rl"]
        );
    }

    fn library() -> RedisResult<Value> {
        Ok(Value::Array(vec![Value::Array(vec![
            Value::BulkString(b"library_name".to_vec()),
            Value::BulkString(b"rl".to_vec()),
        ])]))
    }

    fn module() -> RedisResult<Value> {
        Ok(Value::Array(vec![Value::Array(vec![Value::BulkString(
            b"rl.gcra".to_vec(),
        )])]))
    }

    fn missing(detail: &str) -> RedisResult<Value> {
        let reply = format!("-ERR {detail}\r\n");
        redis::parse_redis_value(reply.as_bytes())
            .unwrap()
            .extract_error()
    }

    #[test]
    fn a_lost_command_is_detected_again_and_sent_once_more() {
        // The module server restarted with only the library.
        let con = Scripted::new(vec![
            missing("unknown command 'RL.GCRA', with args beginning with: "),
            Ok(Value::Array(vec![Value::Nil])),
            library(),
            gcra_reply(),
        ]);
        let mut rl = Limiter::with_backend(con, Backend::Module);
        assert!(rl.gcra("k", &Gcra::new(5, 1, "1s")).unwrap().allowed);
        assert_eq!(
            rl.connection().sent,
            [
                "RL.GCRA k 5 1 1000ms",
                "COMMAND INFO rl.gcra",
                "FUNCTION LIST LIBRARYNAME rl",
                "FCALL rl_gcra 1 k 5 1 1000ms"
            ]
        );
        // A command still missing once RL is found: this server's RL lacks it.
        let con = Scripted::new(vec![
            missing("Function not found"),
            module(),
            missing("unknown command 'RL.SHARE'"),
        ]);
        let mut rl = Limiter::with_backend(con, Backend::Library);
        let err = rl.fixed("k", &Fixed::new(5, 1)).unwrap_err();
        assert!(
            matches!(&err, Error::Unsupported(m) if m.contains("RL.FIXED")),
            "{err:?}"
        );
        assert_eq!(rl.connection().sent.len(), 3);
        // RL gone altogether: not loaded, and the next call detects again.
        let con = Scripted::new(vec![
            missing("No such function"),
            Ok(Value::Array(vec![Value::Nil])),
            Ok(Value::Array(vec![])),
        ]);
        let mut rl = Limiter::with_backend(con, Backend::Library);
        assert!(matches!(
            rl.fixed("k", &Fixed::new(5, 1)),
            Err(Error::NotLoaded(_))
        ));
        assert_eq!(rl.backend.get(), None);
    }

    #[test]
    fn detect_asks_the_server_every_time() {
        let con = Scripted::new(vec![
            module(),
            Ok(Value::Array(vec![Value::Nil])),
            library(),
        ]);
        let mut rl = Limiter::new(con);
        assert_eq!(rl.detect().unwrap(), Backend::Module);
        assert_eq!(rl.detect().unwrap(), Backend::Library);
        assert_eq!(rl.backend().unwrap(), Backend::Library);
        assert_eq!(rl.connection().sent.len(), 3);
    }

    #[test]
    fn a_refused_argument_sends_nothing() {
        let mut rl =
            Limiter::with_backend(Scripted::new(vec![]), Backend::Module).fail_mode(FailMode::Open);
        for (p, why) in [
            (Gcra::new(0, 1, "1s"), "capacity must be an integer from 1"),
            (
                Gcra::new(5, 1, std::time::Duration::from_nanos(1)),
                "not a whole number of milliseconds",
            ),
            (Gcra::new(5, 1, "1.5ms"), "not a duration"),
            (Gcra::new(5, 1, "11y"), "not a duration"),
            (Gcra::new(5, 1, 315_360_001), "from 1 ms to 315360000000 ms"),
            (
                Gcra::new(5, 1, "1s").cost(1).refund(1),
                "COST and REFUND exclude one another",
            ),
            (
                Gcra::new(5, 1, "1s").delay("1s").delay("2s"),
                "DELAY given twice",
            ),
            (
                Gcra::new(5, 1, "1s").debit(0),
                "DEBIT must be an integer from 1",
            ),
        ] {
            let err = rl.gcra("k", &p).unwrap_err();
            assert!(
                matches!(&err, Error::InvalidArgument(m) if m.contains(why)),
                "{p:?}: {err:?}"
            );
        }
        assert!(rl.connection().sent.is_empty());
    }

    #[test]
    fn detection_is_cached() {
        let con = Scripted::new(vec![
            Ok(Value::Array(vec![Value::Nil])),
            library(),
            gcra_reply(),
            gcra_reply(),
        ]);
        let mut rl = Limiter::new(con);
        rl.gcra("k", &Gcra::new(5, 1, "1s")).unwrap();
        rl.gcra("k", &Gcra::new(5, 1, "1s")).unwrap();
        assert_eq!(
            rl.connection().sent,
            [
                "COMMAND INFO rl.gcra",
                "FUNCTION LIST LIBRARYNAME rl",
                "FCALL rl_gcra 1 k 5 1 1000ms",
                "FCALL rl_gcra 1 k 5 1 1000ms"
            ]
        );
    }

    #[test]
    fn a_forced_backend_sends_no_probe() {
        let mut rl = Limiter::with_backend(Scripted::new(vec![gcra_reply()]), Backend::Module);
        let d = rl.gcra("k", &Gcra::new(5, 1, "1s")).unwrap();
        assert_eq!((d.allowed, d.remaining), (true, 4));
        assert_eq!(rl.connection().sent, ["RL.GCRA k 5 1 1000ms"]);
    }

    #[test]
    fn fail_modes() {
        let g = Gcra::new(5, 1, "1s");
        let mut rl = Limiter::with_backend(Scripted::new(vec![refused()]), Backend::Module);
        assert!(rl.gcra("k", &g).unwrap_err().is_connection());

        let mut rl = Limiter::with_backend(Scripted::new(vec![refused()]), Backend::Module)
            .fail_mode(FailMode::Open);
        let d = rl.gcra("k", &g).unwrap();
        assert!(d.allowed && d.fallback);
        assert_eq!((d.remaining, d.reset_after), (5, Duration::ZERO));
        assert!(
            d.error.as_deref().is_some_and(|e| e.contains("refused")),
            "{d:?}"
        );

        // Detection itself failing: the fail mode still decides.
        let mut rl = Limiter::new(Scripted::new(vec![refused()])).fail_mode(FailMode::Closed);
        let d = rl.gcra("k", &g).unwrap();
        assert!(!d.allowed && d.fallback);
        assert_eq!(
            (d.remaining, d.retry_after, d.reset_after),
            (0, Some(Duration::from_secs(1)), Duration::from_secs(1))
        );

        // A server error is never turned into a decision.
        let bad = missing("limit must be an integer");
        let mut rl = Limiter::with_backend(Scripted::new(vec![bad]), Backend::Module)
            .fail_mode(FailMode::Open);
        assert!(matches!(rl.gcra("k", &g), Err(Error::BadArgument(_))));
    }

    #[test]
    fn a_dropped_lease_is_released() {
        let con = Scripted::new(vec![gcra_reply(), Ok(Value::Int(1))]);
        let mut rl = Limiter::with_backend(con, Backend::Module);
        {
            let lease = rl.lease("l", &Acquire::new(5, "10s", "job")).unwrap();
            assert!(lease.held());
        }
        assert_eq!(
            rl.connection().sent,
            ["RL.ACQUIRE l 5 10000ms job", "RL.RELEASE l job"]
        );
    }

    #[test]
    fn a_rejected_lease_releases_nothing() {
        let rejected = Ok(Value::Array([0, 1, 0, 500, 500].map(Value::Int).to_vec()));
        let mut rl = Limiter::with_backend(Scripted::new(vec![rejected]), Backend::Module);
        let lease = rl.lease("l", &Acquire::new(1, "10s", "job")).unwrap();
        assert!(!lease.held());
        assert_eq!(lease.decision().retry_after_ms(), 500);
        assert!(!lease.release().unwrap());
        assert_eq!(rl.connection().sent, ["RL.ACQUIRE l 1 10000ms job"]);
    }
}
