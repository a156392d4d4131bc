//! Pipelined calls: many RL calls in one round trip, each answered with its typed reply.

use redis::{ConnectionLike, Pipeline, RedisError, RedisResult, Value};

use crate::command::{self, Backend, Call, Expect, Reply};
use crate::error::{Error, Result};

/// A pipeline of RL calls for one backend, answered as typed [`Reply`]s in call order.
///
/// Built with [`Limiter::batch`](crate::Limiter::batch) (the backend detected) or
/// [`Batch::new`], run with [`Limiter::run`](crate::Limiter::run) or
/// [`AsyncLimiter::run`](crate::AsyncLimiter::run) (within the limiter's deadline),
/// or on any connection with [`query`](Batch::query) /
/// [`query_async`](Batch::query_async). Each call's arguments are checked as it is
/// added: a refused one (or a module-only command on the library) is returned when
/// the batch is run, and nothing is sent. One call's error fails the whole batch (the
/// other calls still ran) and names that call's command. Fail modes do not apply to
/// batches.
///
/// ```
/// use rl_client::{Backend, Batch, Gcra};
///
/// let gcra = Gcra::new(10, 1, "1s");
/// let mut batch = Batch::new(Backend::Module);
/// for user in ["ada", "bob"] {
///     batch.gcra(format!("rl:{user}"), &gcra);
/// }
/// assert_eq!(batch.len(), 2);
/// ```
#[derive(Clone)]
pub struct Batch {
    backend: Backend,
    pipe: Pipeline,
    expects: Vec<Expect>,
    commands: Vec<&'static str>,
    refused: Option<Error>,
}

impl Batch {
    /// An empty batch for `backend`.
    pub fn new(backend: Backend) -> Self {
        Batch::with_capacity(backend, 0)
    }

    /// An empty batch with room for `n` calls.
    pub fn with_capacity(backend: Backend, n: usize) -> Self {
        let mut pipe = Pipeline::with_capacity(n);
        // Each call's error reply stays in its place, so it names its own command.
        pipe.ignore_errors();
        Batch {
            backend,
            pipe,
            expects: Vec::with_capacity(n),
            commands: Vec::with_capacity(n),
            refused: None,
        }
    }

    /// Wraps the calls in MULTI/EXEC: they decide at one instant (Redis 7.2+) and
    /// no other client's command runs between them.
    pub fn atomic(&mut self) -> &mut Self {
        self.pipe.atomic();
        self
    }

    /// The backend the calls are built for.
    pub fn backend(&self) -> Backend {
        self.backend
    }

    /// The number of calls.
    pub fn len(&self) -> usize {
        self.expects.len()
    }

    /// No calls.
    pub fn is_empty(&self) -> bool {
        self.expects.is_empty()
    }

    /// Removes every call (keeping the allocations).
    pub fn clear(&mut self) {
        self.pipe.clear();
        self.expects.clear();
        self.commands.clear();
        self.refused = None;
    }

    /// The underlying pipeline (to run it elsewhere, then [`parse`](Batch::parse)
    /// its replies).
    pub fn pipeline(&self) -> &Pipeline {
        &self.pipe
    }

    /// The first call refused while the batch was built, if any.
    pub fn refusal(&self) -> Result<()> {
        match &self.refused {
            Some(e) => Err(e.clone()),
            None => Ok(()),
        }
    }

    pub(crate) fn add(&mut self, call: Call<'_>) -> &mut Self {
        if self.refused.is_some() {
            return self;
        }
        match call.check().and_then(|()| call.prepare(self.backend)) {
            Ok(p) => {
                self.pipe.add_command(p.cmd);
                self.expects.push(p.expect);
                self.commands.push(p.command);
            }
            Err(e) => self.refused = Some(e),
        }
        self
    }

    fn check_len(&self, n: usize) -> Result<()> {
        if n == self.expects.len() {
            Ok(())
        } else {
            Err(Error::UnexpectedReply(format!(
                "{n} replies for {} calls",
                self.expects.len()
            )))
        }
    }

    /// Reads the pipeline's replies (one per call, in order) as typed replies.
    pub fn parse(&self, replies: &[Value]) -> Result<Vec<Reply>> {
        self.check_len(replies.len())?;
        let calls = self.expects.iter().zip(&self.commands);
        calls
            .zip(replies)
            .map(|((e, c), v)| reply(e, c, v))
            .collect()
    }

    /// As [`parse`](Batch::parse), each reply dropped as soon as it is read.
    fn parse_owned(&self, replies: Vec<Value>) -> Result<Vec<Reply>> {
        self.check_len(replies.len())?;
        let calls = self.expects.iter().zip(&self.commands);
        calls
            .zip(replies)
            .map(|((e, c), v)| reply(e, c, &v))
            .collect()
    }

    /// The typed replies of what the pipeline answered.
    pub(crate) fn read(&self, result: RedisResult<Value>) -> Result<Vec<Reply>> {
        match result {
            Ok(Value::Array(items)) => self.parse_owned(items),
            Ok(other) => Err(command::unexpected("the pipeline", &other)),
            Err(e) => Err(Error::from_redis(
                e,
                self.commands.first().copied().unwrap_or("RL"),
            )),
        }
    }

    /// Runs the batch on a blocking connection (with that connection's own timeouts).
    pub fn query(&self, con: &mut dyn ConnectionLike) -> Result<Vec<Reply>> {
        self.refusal()?;
        if self.is_empty() {
            return Ok(Vec::new());
        }
        self.read(self.pipe.query::<Value>(con))
    }

    /// Runs the batch on an async connection (with that connection's own timeouts).
    #[cfg(feature = "tokio")]
    pub async fn query_async(
        &self,
        con: &mut impl redis::aio::ConnectionLike,
    ) -> Result<Vec<Reply>> {
        self.refusal()?;
        if self.is_empty() {
            return Ok(Vec::new());
        }
        self.read(self.pipe.query_async::<Value>(con).await)
    }
}

/// One call's typed reply, or its error reply as a typed error naming its command.
fn reply(expect: &Expect, command: &str, v: &Value) -> Result<Reply> {
    match v {
        Value::ServerError(e) => Err(Error::from_redis(RedisError::from(e.clone()), command)),
        v => command::parse(expect, v).ok_or_else(|| command::unexpected(command, v)),
    }
}

impl std::fmt::Debug for Batch {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Batch")
            .field("backend", &self.backend)
            .field("calls", &self.len())
            .field("refused", &self.refused)
            .finish()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{All, Fixed, Gcra, Throttle};

    fn decision(fields: [i64; 5]) -> Value {
        Value::Array(fields.iter().map(|&x| Value::Int(x)).collect())
    }

    #[test]
    fn parses_in_call_order() {
        let mut b = Batch::new(Backend::Library);
        b.gcra("a", &Gcra::new(5, 1, "1s"))
            .release("l", "id")
            .all(&All::new().key("x", Fixed::new(1, "1m")));
        assert_eq!(b.len(), 3);
        let replies = b
            .parse(&[
                decision([1, 5, 4, 0, 1000]),
                Value::Int(1),
                Value::Array(vec![
                    decision([1, 1, 0, 0, 60000]),
                    decision([1, 1, 0, 0, 60000]),
                ]),
            ])
            .unwrap();
        let Reply::Decision(d) = &replies[0] else {
            panic!("{replies:?}")
        };
        // A GCRA's window: its time to refill from empty (5 tokens at 1 per second).
        assert_eq!(d.window, Some(std::time::Duration::from_secs(5)));
        assert_eq!(replies[1], Reply::Released(true));
        assert!(matches!(&replies[2], Reply::All(a) if a.keys.len() == 1 && a.words == ["FIXED"]));
        // Too few replies, or one of the wrong shape.
        assert!(b.parse(&[decision([1, 5, 4, 0, 1000])]).is_err());
        assert!(b
            .parse(&[Value::Int(1), Value::Int(1), Value::Int(1)])
            .is_err());
    }

    #[test]
    fn a_refused_call_is_returned_when_run_and_nothing_is_sent() {
        let mut b = Batch::new(Backend::Library);
        b.throttle("c", &Throttle::new(0, 1, "1s"));
        assert!(b.is_empty());
        assert!(matches!(b.refusal(), Err(Error::Unsupported(_))));
        let mut b = Batch::new(Backend::Module);
        b.throttle("c", &Throttle::new(0, 1, "1s"))
            .gcra("g", &Gcra::new(5, 1, "1s").cost(1).refund(1))
            .gcra("g", &Gcra::new(5, 1, "1s"));
        assert_eq!(b.len(), 1);
        assert!(
            matches!(b.refusal(), Err(Error::InvalidArgument(m)) if m.contains("COST and REFUND"))
        );
        b.clear();
        assert!(b.is_empty() && b.refusal().is_ok());
    }

    #[test]
    fn an_error_names_its_own_call() {
        let mut b = Batch::new(Backend::Module);
        b.gcra("a", &Gcra::new(5, 1, "1s"))
            .fixed("f", &Fixed::new(1, "1s"));
        let err = redis::parse_redis_value(b"-WRONGTYPE Operation against a key\r\n").unwrap();
        let out = b.parse(&[decision([1, 5, 4, 0, 1000]), err]);
        assert!(matches!(out, Err(Error::WrongType(_))), "{out:?}");
    }
}
