//! The blocking API on any `redis::ConnectionLike`.

use redis::{ConnectionLike, Value};

use crate::batch::Batch;
use crate::command::{self, probe, Backend, FailMode, Prepared, Reply};
use crate::error::{Error, Result, NOT_LOADED};
use crate::policy::{
    Acquire, All, Bucket, Fixed, Gcra, Params, Penalty, Share, Sliding, SlidingCounter, Throttle,
};
use crate::reply::{AllDecision, Decision, ThrottleDecision};

/// RL's commands on a blocking redis-rs connection: any `redis::ConnectionLike`
/// (`redis::Connection`, `&mut redis::Connection`, a pooled connection, …).
///
/// The first call learns whether the server has the module or the Functions
/// library and keeps the answer ([`Limiter::backend`]); [`Limiter::with_backend`]
/// skips the probe.
///
/// ```no_run
/// # fn main() -> Result<(), Box<dyn std::error::Error>> {
/// use rl_client::{Gcra, Limiter};
///
/// let con = redis::Client::open("redis://127.0.0.1/")?.get_connection()?;
/// let mut rl = Limiter::new(con);
/// let d = rl.gcra("rl:api:42", &Gcra::new(20, 100, "1m"))?;
/// if !d.allowed {
///     // 429, with d.headers()
/// }
/// # Ok(())
/// # }
/// ```
pub struct Limiter<C> {
    con: C,
    backend: Option<Backend>,
    fail: FailMode,
}

impl<C: ConnectionLike> Limiter<C> {
    /// Wraps a connection; the backend is detected on first use.
    pub fn new(con: C) -> Self {
        Limiter {
            con,
            backend: None,
            fail: FailMode::Error,
        }
    }

    /// Wraps a connection, using `backend` without probing.
    pub fn with_backend(con: C, backend: Backend) -> Self {
        Limiter {
            con,
            backend: Some(backend),
            fail: FailMode::Error,
        }
    }

    limiter_api!(sync [] [] query);

    /// The backend: detected once (`COMMAND INFO rl.gcra`, else `FUNCTION LIST
    /// LIBRARYNAME rl`), then cached. [`Error::NotLoaded`] when neither is there.
    pub fn backend(&mut self) -> Result<Backend> {
        if let Some(b) = self.backend {
            return Ok(b);
        }
        let b = self.detect()?;
        self.backend = Some(b);
        Ok(b)
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
            held: decision.allowed,
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
pub struct Lease<'a, C: ConnectionLike> {
    limiter: &'a mut Limiter<C>,
    key: Vec<u8>,
    params: Acquire,
    decision: Decision,
    held: bool,
}

impl<C: ConnectionLike> Lease<'_, C> {
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

impl<C: ConnectionLike> Drop for Lease<'_, C> {
    fn drop(&mut self) {
        if self.held {
            self.held = false;
            let (key, id) = (std::mem::take(&mut self.key), self.params.id.clone());
            let _ = self.limiter.release(key, id);
        }
    }
}

lease_debug!(Lease, ConnectionLike);

impl<C> std::fmt::Debug for Limiter<C> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Limiter")
            .field("backend", &self.backend)
            .field("fail_mode", &self.fail)
            .finish_non_exhaustive()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
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

    #[test]
    fn detection_is_cached() {
        let lib = Value::Array(vec![Value::Array(vec![
            Value::BulkString(b"library_name".to_vec()),
            Value::BulkString(b"rl".to_vec()),
        ])]);
        let con = Scripted::new(vec![
            Ok(Value::Array(vec![Value::Nil])),
            Ok(lib),
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
        assert_eq!(d.remaining, 5);

        // Detection itself failing: the fail mode still decides.
        let mut rl = Limiter::new(Scripted::new(vec![refused()])).fail_mode(FailMode::Closed);
        let d = rl.gcra("k", &g).unwrap();
        assert!(!d.allowed && d.fallback);

        // A server error is never turned into a decision.
        let bad: RedisResult<Value> = Err(redis::RedisError::from((
            redis::ErrorKind::ResponseError,
            "An error was signalled by the server",
            "limit must be an integer".to_string(),
        )));
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
