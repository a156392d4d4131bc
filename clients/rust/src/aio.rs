//! The async API on any `redis::aio::ConnectionLike` (MultiplexedConnection,
//! ConnectionManager, …).

use std::sync::{Arc, OnceLock};

use redis::aio::ConnectionLike;
use redis::{Cmd, Value};

use crate::batch::Batch;
use crate::command::{self, probe, Backend, FailMode, Prepared, Reply};
use crate::error::{is_connection_error, Error, Result, NOT_LOADED};
use crate::policy::{
    Acquire, All, Bucket, Fixed, Gcra, Params, Penalty, Share, Sliding, SlidingCounter, Throttle,
};
use crate::reply::{AllDecision, Decision, ThrottleDecision};
use crate::sync::unexpected;

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

macro_rules! decision_calls {
    ($($method:ident($t:ty) $doc:literal;)*) => {
        $(
            #[doc = $doc]
            pub async fn $method(&mut self, key: impl AsRef<[u8]>, params: &$t) -> Result<Decision> {
                self.decide(key.as_ref(), params).await
            }
        )*
    };
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

    /// What a connection error becomes (default [`FailMode::Error`]).
    #[must_use]
    pub fn fail_mode(mut self, mode: FailMode) -> Self {
        self.fail = mode;
        self
    }

    /// Changes the fail mode (of this clone).
    pub fn set_fail_mode(&mut self, mode: FailMode) {
        self.fail = mode;
    }

    /// The wrapped connection, for other commands.
    pub fn connection(&mut self) -> &mut C {
        &mut self.con
    }

    /// Gives the connection back.
    pub fn into_inner(self) -> C {
        self.con
    }

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

    async fn probe(&mut self, cmd: &Cmd) -> Result<Option<Value>> {
        match cmd.query_async::<Value>(&mut self.con).await {
            Ok(v) => Ok(Some(v)),
            Err(e) if is_connection_error(&e) => Err(Error::Connection(e)),
            Err(_) => Ok(None),
        }
    }

    async fn detect(&mut self) -> Result<Backend> {
        if let Some(v) = self.probe(&probe::command_info("rl.gcra")).await? {
            if probe::has_command(&v) {
                return Ok(Backend::Module);
            }
        }
        if let Some(v) = self.probe(&probe::function_list()).await? {
            if probe::library_functions(&v).is_some() {
                return Ok(Backend::Library);
            }
        }
        Err(Error::NotLoaded(NOT_LOADED.into()))
    }

    /// Whether this server's RL has `command` (`"RL.SHARE"`, `"CL.THROTTLE"`, …) on
    /// the detected backend.
    pub async fn supports(&mut self, command: &str) -> Result<bool> {
        match self.backend().await? {
            Backend::Module => Ok(self
                .probe(&probe::command_info(command))
                .await?
                .is_some_and(|v| probe::has_command(&v))),
            Backend::Library => {
                let Some(function) = probe::function_of(command) else {
                    return Ok(false);
                };
                Ok(self
                    .probe(&probe::function_list())
                    .await?
                    .and_then(|v| probe::library_functions(&v))
                    .is_some_and(|fs| fs.contains(&function)))
            }
        }
    }

    async fn run_one(&mut self, p: Prepared) -> Result<Reply> {
        match p.cmd.query_async::<Value>(&mut self.con).await {
            Ok(v) => command::parse_reply(&p, &v),
            Err(e) => self.failed(Error::from_redis(e, p.command), &p),
        }
    }

    fn failed(&self, err: Error, p: &Prepared) -> Result<Reply> {
        if err.is_connection() {
            if let Some(reply) = command::fallback(self.fail, &p.expect) {
                return Ok(reply);
            }
        }
        Err(err)
    }

    async fn call(&mut self, build: impl Fn(Backend) -> Result<Prepared>) -> Result<Reply> {
        match self.backend().await {
            Ok(b) => self.run_one(build(b)?).await,
            Err(e) => {
                let p = build(Backend::Module)?;
                self.failed(e, &p)
            }
        }
    }

    async fn decide(&mut self, key: &[u8], params: &(dyn Params + Sync)) -> Result<Decision> {
        match self.call(|b| Ok(command::single(b, key, params))).await? {
            Reply::Decision(d) => Ok(d),
            other => Err(unexpected(other)),
        }
    }

    decision_calls! {
        fixed(Fixed) "`RL.FIXED key limit window [COST n | REFUND n | DEBIT n]`.";
        sliding(Sliding) "`RL.SLIDING key limit window [COST n | REFUND n]`.";
        sliding_counter(SlidingCounter) "`RL.SLIDINGCOUNTER key limit window [COST n | REFUND n | DEBIT n]`.";
        bucket(Bucket) "`RL.BUCKET key capacity tokens period [COST n | REFUND n | DEBIT n]`.";
        gcra(Gcra) "`RL.GCRA key capacity tokens period [COST n | REFUND n | DEBIT n] [DELAY max]`.";
        acquire(Acquire) "`RL.ACQUIRE key limit ttl id`: take or renew a lease (see [`AsyncLimiter::lease`]).";
        penalty(Penalty) "`RL.PENALTY key strikes window block max [COST n]`.";
        share(Share) "`RL.SHARE key tenant weight capacity tokens period [COST n | REFUND n | DEBIT n]`.";
    }

    /// `CL.THROTTLE key max_burst count period [quantity]` (module only:
    /// [`Error::Unsupported`] on the library).
    pub async fn throttle(
        &mut self,
        key: impl AsRef<[u8]>,
        params: &Throttle,
    ) -> Result<ThrottleDecision> {
        let backend = self.backend().await?;
        match self
            .run_one(command::throttle(backend, key.as_ref(), params)?)
            .await?
        {
            Reply::Throttle(t) => Ok(t),
            other => Err(unexpected(other)),
        }
    }

    /// `RL.ALL numkeys key… policy… [COST n | REFUND n | DEBIT n]`: all or nothing.
    pub async fn all(&mut self, all: &All) -> Result<AllDecision> {
        match self.call(|b| command::all(b, all)).await? {
            Reply::All(a) => Ok(a),
            other => Err(unexpected(other)),
        }
    }

    /// `RL.RELEASE key id`: true if `id` held a live lease, now released.
    pub async fn release(&mut self, key: impl AsRef<[u8]>, id: impl AsRef<[u8]>) -> Result<bool> {
        let backend = self.backend().await?;
        match self
            .run_one(command::release(backend, key.as_ref(), id.as_ref()))
            .await?
        {
            Reply::Released(r) => Ok(r),
            other => Err(unexpected(other)),
        }
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

    /// A batch for this server's backend (detected first). Run it with
    /// [`AsyncLimiter::run`].
    pub async fn batch(&mut self) -> Result<Batch> {
        Ok(Batch::new(self.backend().await?))
    }

    /// Runs a batch on this connection.
    pub async fn run(&mut self, batch: &Batch) -> Result<Vec<Reply>> {
        batch.query_async(&mut self.con).await
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
    pub fn limiter(&mut self) -> &mut AsyncLimiter<C> {
        self.limiter
    }

    /// Renews the lease (the same RL.ACQUIRE: its end moves to now + ttl).
    pub async fn renew(&mut self) -> Result<&Decision> {
        let d = self.limiter.acquire(&self.key, &self.params).await?;
        self.held = d.allowed;
        self.decision = d;
        Ok(&self.decision)
    }

    /// Releases the lease: true if it was still live. A guard that holds nothing
    /// answers false without a call.
    pub async fn release(self) -> Result<bool> {
        if !self.held {
            return Ok(false);
        }
        self.limiter.release(&self.key, &self.params.id).await
    }
}

impl<C> std::fmt::Debug for AsyncLease<'_, C> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("AsyncLease")
            .field("key", &String::from_utf8_lossy(&self.key))
            .field("id", &String::from_utf8_lossy(&self.params.id))
            .field("held", &self.held)
            .field("decision", &self.decision)
            .finish()
    }
}

impl<C> std::fmt::Debug for AsyncLimiter<C> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("AsyncLimiter")
            .field("backend", &self.backend.get())
            .field("fail_mode", &self.fail)
            .finish_non_exhaustive()
    }
}
