//! The async API on any `redis::aio::ConnectionLike` (MultiplexedConnection,
//! ConnectionManager, …).

use std::sync::{Arc, OnceLock};

use redis::aio::ConnectionLike;
use redis::Value;

use crate::batch::Batch;
use crate::command::{self, probe, Backend, FailMode, Prepared, Reply};
use crate::error::{Error, Result, NOT_LOADED};
use crate::policy::{
    Acquire, All, Bucket, Fixed, Gcra, Params, Penalty, Share, Sliding, SlidingCounter, Throttle,
};
use crate::reply::{AllDecision, Decision, ThrottleDecision};

/// RL's commands on an async redis-rs connection.
///
/// Cheap to clone when the connection is (MultiplexedConnection,
/// ConnectionManager): clones share the detected backend, so the probe runs once.
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
    backend: Arc<OnceLock<Backend>>,
    fail: FailMode,
}

impl<C: ConnectionLike> AsyncLimiter<C> {
    /// Wraps a connection; the backend is detected on first use.
    pub fn new(con: C) -> Self {
        AsyncLimiter {
            con,
            backend: Arc::new(OnceLock::new()),
            fail: FailMode::Error,
        }
    }

    /// Wraps a connection, using `backend` without probing.
    pub fn with_backend(con: C, backend: Backend) -> Self {
        AsyncLimiter {
            con,
            backend: Arc::new(OnceLock::from(backend)),
            fail: FailMode::Error,
        }
    }

    limiter_api!(async [async] [.await] query_async);

    /// The backend: detected once (`COMMAND INFO rl.gcra`, else `FUNCTION LIST
    /// LIBRARYNAME rl`), then cached for this limiter and its clones.
    /// [`Error::NotLoaded`] when neither is there.
    pub async fn backend(&mut self) -> Result<Backend> {
        if let Some(b) = self.backend.get() {
            return Ok(*b);
        }
        let b = self.detect().await?;
        Ok(*self.backend.get_or_init(|| b))
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
            held: decision.allowed,
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
            .finish_non_exhaustive()
    }
}
