//! What [`Limiter`](crate::Limiter) and [`AsyncLimiter`](crate::AsyncLimiter) share:
//! their methods are written once here and expanded blocking (`query`) or async
//! (`query_async` and `.await`); the calls and their replies are built and read in
//! [`command`](crate::command) for both.

use redis::{RedisResult, Value};

use crate::command::{self, FailMode, Prepared, Reply};
use crate::error::{is_connection_error, Error, Result};
use crate::reply::{AllDecision, Decision, ThrottleDecision};

/// A probe's answer: its reply; None for an error reply (FUNCTION on a server before
/// 7.0, an ACL refusal: not there); a connection error is an error.
pub(crate) fn probed(result: RedisResult<Value>) -> Result<Option<Value>> {
    match result {
        Ok(v) => Ok(Some(v)),
        Err(e) if is_connection_error(&e) => Err(Error::Connection(e)),
        Err(_) => Ok(None),
    }
}

/// A call's typed reply from what the connection answered; a connection error goes
/// through the fail mode.
pub(crate) fn finish(fail: FailMode, p: &Prepared, result: RedisResult<Value>) -> Result<Reply> {
    match result {
        Ok(v) => command::parse_reply(p, &v),
        Err(e) => failed(fail, Error::from_redis(e, p.command), p),
    }
}

/// `err`, or the decision the fail mode gives instead of a connection error.
pub(crate) fn failed(fail: FailMode, err: Error, p: &Prepared) -> Result<Reply> {
    if err.is_connection() {
        if let Some(reply) = command::fallback(fail, &p.expect) {
            return Ok(reply);
        }
    }
    Err(err)
}

fn unexpected(reply: Reply) -> Error {
    Error::UnexpectedReply(format!("{reply:?}"))
}

impl Reply {
    pub(crate) fn into_decision(self) -> Result<Decision> {
        match self {
            Reply::Decision(d) => Ok(d),
            other => Err(unexpected(other)),
        }
    }

    pub(crate) fn into_all(self) -> Result<AllDecision> {
        match self {
            Reply::All(a) => Ok(a),
            other => Err(unexpected(other)),
        }
    }

    pub(crate) fn into_throttle(self) -> Result<ThrottleDecision> {
        match self {
            Reply::Throttle(t) => Ok(t),
            other => Err(unexpected(other)),
        }
    }

    pub(crate) fn into_released(self) -> Result<bool> {
        match self {
            Reply::Released(r) => Ok(r),
            other => Err(unexpected(other)),
        }
    }
}

/// The one-key calls of a limiter, blocking (`sync`) or `async`: each decides with
/// its parameters.
macro_rules! decision_calls {
    ($mode:ident; $($method:ident($t:ty) $doc:literal;)*) => {
        $(decision_calls!(@one $mode $method $t, $doc);)*
    };
    (@one sync $method:ident $t:ty, $doc:literal) => {
        #[doc = $doc]
        pub fn $method(&mut self, key: impl AsRef<[u8]>, params: &$t) -> Result<Decision> {
            self.decide(key.as_ref(), params)
        }
    };
    (@one async $method:ident $t:ty, $doc:literal) => {
        #[doc = $doc]
        pub async fn $method(&mut self, key: impl AsRef<[u8]>, params: &$t) -> Result<Decision> {
            self.decide(key.as_ref(), params).await
        }
    };
}

/// The methods of a limiter (a struct with `con`, `fail` and a `backend()` method),
/// given `sync` or `async`, `[async]` or nothing, `[.await]` or nothing, and the
/// `redis::Cmd` and `redis::Pipeline` query method to send with.
macro_rules! limiter_api {
    ($mode:ident [$($async:tt)*] [$($await:tt)*] $query:ident) => {
        /// What a connection error becomes (default [`FailMode::Error`]).
        #[must_use]
        pub fn fail_mode(mut self, mode: FailMode) -> Self {
            self.fail = mode;
            self
        }

        /// Changes the fail mode (of this limiter only, not of its clones).
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

        $($async)* fn probe(&mut self, cmd: &redis::Cmd) -> Result<Option<Value>> {
            crate::api::probed(cmd.$query::<Value>(&mut self.con)$($await)*)
        }

        $($async)* fn detect(&mut self) -> Result<Backend> {
            if let Some(v) = self.probe(&probe::command_info("rl.gcra"))$($await)*? {
                if probe::has_command(&v) {
                    return Ok(Backend::Module);
                }
            }
            if let Some(v) = self.probe(&probe::function_list())$($await)*? {
                if probe::library_functions(&v).is_some() {
                    return Ok(Backend::Library);
                }
            }
            Err(Error::NotLoaded(NOT_LOADED.into()))
        }

        /// Whether this server's RL has `command` (`"RL.SHARE"`, `"CL.THROTTLE"`, …) on
        /// the detected backend.
        pub $($async)* fn supports(&mut self, command: &str) -> Result<bool> {
            match self.backend()$($await)*? {
                Backend::Module => Ok(self
                    .probe(&probe::command_info(command))$($await)*?
                    .is_some_and(|v| probe::has_command(&v))),
                Backend::Library => {
                    let Some(function) = probe::function_of(command) else {
                        return Ok(false);
                    };
                    Ok(self
                        .probe(&probe::function_list())$($await)*?
                        .and_then(|v| probe::library_functions(&v))
                        .is_some_and(|fs| fs.contains(&function)))
                }
            }
        }

        /// Runs one call; a connection error goes through the fail mode.
        $($async)* fn run_one(&mut self, p: Prepared) -> Result<Reply> {
            let result = p.cmd.$query::<Value>(&mut self.con)$($await)*;
            crate::api::finish(self.fail, &p, result)
        }

        /// Builds a call for the backend, detecting it first; a connection error
        /// while detecting goes through the fail mode like the call's own.
        $($async)* fn call(&mut self, build: impl Fn(Backend) -> Result<Prepared>) -> Result<Reply> {
            match self.backend()$($await)* {
                Ok(b) => self.run_one(build(b)?)$($await)*,
                Err(e) => crate::api::failed(self.fail, e, &build(Backend::Module)?),
            }
        }

        $($async)* fn decide(&mut self, key: &[u8], params: &(dyn Params + Sync)) -> Result<Decision> {
            self.call(|b| Ok(command::single(b, key, params)))$($await)*?.into_decision()
        }

        decision_calls! {
            $mode;
            fixed(Fixed) "`RL.FIXED key limit window [COST n | REFUND n | DEBIT n]`.";
            sliding(Sliding) "`RL.SLIDING key limit window [COST n | REFUND n]`.";
            sliding_counter(SlidingCounter) "`RL.SLIDINGCOUNTER key limit window [COST n | REFUND n | DEBIT n]`.";
            bucket(Bucket) "`RL.BUCKET key capacity tokens period [COST n | REFUND n | DEBIT n]`.";
            gcra(Gcra) "`RL.GCRA key capacity tokens period [COST n | REFUND n | DEBIT n] [DELAY max]`.";
            acquire(Acquire) "`RL.ACQUIRE key limit ttl id`: take or renew a lease (see [`Self::lease`] for a guard).";
            penalty(Penalty) "`RL.PENALTY key strikes window block max [COST n]`.";
            share(Share) "`RL.SHARE key tenant weight capacity tokens period [COST n | REFUND n | DEBIT n]`.";
        }

        /// `CL.THROTTLE key max_burst count period [quantity]` (module only:
        /// [`Error::Unsupported`] on the library).
        pub $($async)* fn throttle(&mut self, key: impl AsRef<[u8]>, params: &Throttle) -> Result<ThrottleDecision> {
            let backend = self.backend()$($await)*?;
            self.run_one(command::throttle(backend, key.as_ref(), params)?)$($await)*?.into_throttle()
        }

        /// `RL.ALL numkeys key… policy… [COST n | REFUND n | DEBIT n]`: all or nothing.
        pub $($async)* fn all(&mut self, all: &All) -> Result<AllDecision> {
            self.call(|b| command::all(b, all))$($await)*?.into_all()
        }

        /// `RL.RELEASE key id`: true if `id` held a live lease, now released.
        pub $($async)* fn release(&mut self, key: impl AsRef<[u8]>, id: impl AsRef<[u8]>) -> Result<bool> {
            let backend = self.backend()$($await)*?;
            self.run_one(command::release(backend, key.as_ref(), id.as_ref()))$($await)*?.into_released()
        }

        /// A batch for this server's backend (detected first). Run it with
        /// [`Self::run`].
        pub $($async)* fn batch(&mut self) -> Result<Batch> {
            Ok(Batch::new(self.backend()$($await)*?))
        }

        /// Runs a batch on this connection.
        pub $($async)* fn run(&mut self, batch: &Batch) -> Result<Vec<Reply>> {
            batch.$query(&mut self.con)$($await)*
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
            self.held = d.allowed;
            self.decision = d;
            Ok(&self.decision)
        }
    };
}

/// `Debug` for a lease guard: its key, id, whether held, and decision.
macro_rules! lease_debug {
    ($lease:ident $(, $bound:path)?) => {
        impl<C $(: $bound)?> std::fmt::Debug for $lease<'_, C> {
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
