//! The async API on any `redis::aio::ConnectionLike` (MultiplexedConnection,
//! ConnectionManager, …).

use std::time::{Duration, Instant};

use redis::aio::ConnectionLike;
use redis::{Cmd, Pipeline, RedisResult, Value};

use crate::batch::Batch;
use crate::command::{self, probe, Backend, Call, FailMode, Reply};
use crate::error::{is_missing, Error, Result, NOT_LOADED};
use crate::generated::commands::Acquire;
use crate::limiter::{BackendCell, DEFAULT_TIMEOUT};
use crate::reply::Decision;
use crate::survive;

/// RL's commands on an async redis-rs connection.
///
/// Cheap to clone when the connection is (MultiplexedConnection,
/// ConnectionManager): clones share the detected backend, so the probe runs once.
/// Every call has a deadline (default 100 ms, [`AsyncLimiter::timeout`]; a tokio
/// timer, so it holds even while a ConnectionManager reconnects), detection and
/// resend included, with no retry inside it; what a call gives when it passes is the
/// [`FailMode`].
///
/// ```no_run
/// # async fn example() -> Result<(), Box<dyn std::error::Error>> {
/// use rl_client::{AsyncLimiter, Gcra};
///
/// let con = redis::Client::open("redis://127.0.0.1/")?
///     .get_multiplexed_async_connection()
///     .await?;
/// let mut rl = AsyncLimiter::new(con);
/// let d = rl.gcra("rl:api:42", &Gcra::new(20, 100, "1m")).await?;
/// if !d.allowed {
///     // 429, with d.headers()
/// }
/// # Ok(())
/// # }
/// ```
#[derive(Clone)]
pub struct AsyncLimiter<C> {
    con: C,
    backend: BackendCell,
    fail: FailMode,
    timeout: Duration,
    survival: survive::Shared,
}

impl<C: ConnectionLike> AsyncLimiter<C> {
    /// Wraps a connection; the backend is detected on first use.
    pub fn new(con: C) -> Self {
        AsyncLimiter {
            con,
            backend: BackendCell::new(None),
            fail: FailMode::Error,
            timeout: DEFAULT_TIMEOUT,
            survival: None,
        }
    }

    /// Wraps a connection, using `backend` without probing.
    pub fn with_backend(con: C, backend: Backend) -> Self {
        AsyncLimiter {
            backend: BackendCell::new(Some(backend)),
            ..AsyncLimiter::new(con)
        }
    }

    limiter_api!([async] [.await]);

    async fn send(&mut self, cmd: &Cmd, deadline: Instant) -> Option<RedisResult<Value>> {
        let at = tokio::time::Instant::from_std(deadline);
        tokio::time::timeout_at(at, cmd.query_async::<Value>(&mut self.con))
            .await
            .ok()
    }

    async fn send_pipeline(
        &mut self,
        pipe: &Pipeline,
        deadline: Instant,
    ) -> Option<RedisResult<Value>> {
        let at = tokio::time::Instant::from_std(deadline);
        tokio::time::timeout_at(at, pipe.query_async::<Value>(&mut self.con))
            .await
            .ok()
    }

    /// `RL.ACQUIRE` as a guard. **Release it with [`AsyncLease::release`]`.await`**:
    /// a destructor cannot wait for the server, so a dropped async lease is not
    /// released; it ends by itself after its ttl. Check [`AsyncLease::held`].
    pub async fn lease(
        &mut self,
        key: impl AsRef<[u8]>,
        params: &Acquire,
    ) -> Result<AsyncLease<'_, C>> {
        let key = key.as_ref().to_vec();
        let decision = self.acquire(&key, params).await?;
        Ok(AsyncLease {
            held: decision.allowed && !decision.fallback,
            limiter: self,
            key,
            params: params.clone(),
            decision,
        })
    }
}

/// A lease taken by [`AsyncLimiter::lease`]. Release it with
/// [`release`](AsyncLease::release)`.await`: dropping it does **not** release it
/// (no destructor can await the server); an unreleased lease ends by itself after
/// its ttl.
#[must_use = "an async lease is released only by `release().await`; dropped, it lasts until its ttl"]
pub struct AsyncLease<'a, C> {
    limiter: &'a mut AsyncLimiter<C>,
    key: Vec<u8>,
    params: Acquire,
    decision: Decision,
    held: bool,
}

impl<C: ConnectionLike> AsyncLease<'_, C> {
    lease_api!(AsyncLimiter [async] [.await]);

    /// Releases the lease: true if it was still live. A guard that holds nothing
    /// answers false without a call.
    pub async fn release(self) -> Result<bool> {
        if !self.held {
            return Ok(false);
        }
        self.limiter.release(&self.key, &self.params.id).await
    }
}

lease_debug!(AsyncLease);

impl<C> std::fmt::Debug for AsyncLimiter<C> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("AsyncLimiter")
            .field("backend", &self.backend.get())
            .field("fail_mode", &self.fail)
            .field("timeout", &self.timeout)
            .finish_non_exhaustive()
    }
}
