//! Pipelined calls: many RL calls in one round trip, each answered with its typed reply.

use redis::{ConnectionLike, Pipeline, Value};

use crate::command::{self, Backend, Expect, Prepared, Reply};
use crate::error::{Error, Result};
use crate::policy::{
    Acquire, All, Bucket, Fixed, Gcra, Penalty, Share, Sliding, SlidingCounter, Throttle,
};

/// A pipeline of RL calls for one backend, answered as typed [`Reply`]s in call order.
///
/// Built with [`Limiter::batch`](crate::Limiter::batch) (the backend detected once)
/// or [`Batch::new`], run with [`Limiter::run`](crate::Limiter::run),
/// [`AsyncLimiter::run`](crate::AsyncLimiter::run), or on any connection with
/// [`query`](Batch::query) / [`query_async`](Batch::query_async). It is a
/// `redis::Pipeline` underneath ([`pipeline`](Batch::pipeline)); as with any
/// redis-rs pipeline, one call's error fails the whole batch (the other calls still
/// ran). Fail modes do not apply to batches.
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
    /// The batch has an RL.SHARE call (the only command an RL server may lack).
    has_share: bool,
    first: Option<&'static str>,
}

macro_rules! batch_calls {
    ($($method:ident($t:ty) $doc:literal;)*) => {
        $(
            #[doc = $doc]
            pub fn $method(&mut self, key: impl AsRef<[u8]>, params: &$t) -> &mut Self {
                self.push(command::single(self.backend, key.as_ref(), params))
            }
        )*
    };
}

impl Batch {
    /// An empty batch for `backend`.
    pub fn new(backend: Backend) -> Self {
        Batch::with_capacity(backend, 0)
    }

    /// An empty batch with room for `n` calls.
    pub fn with_capacity(backend: Backend, n: usize) -> Self {
        Batch {
            backend,
            pipe: Pipeline::with_capacity(n),
            expects: Vec::with_capacity(n),
            has_share: false,
            first: None,
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
        self.has_share = false;
        self.first = None;
    }

    /// The underlying pipeline (to run it elsewhere, then [`parse`](Batch::parse)
    /// its replies).
    pub fn pipeline(&self) -> &Pipeline {
        &self.pipe
    }

    fn push(&mut self, p: Prepared) -> &mut Self {
        self.pipe.add_command(p.cmd);
        self.expects.push(p.expect);
        self.has_share |= p.command == "RL.SHARE";
        self.first.get_or_insert(p.command);
        self
    }

    batch_calls! {
        fixed(Fixed) "Adds an RL.FIXED call.";
        sliding(Sliding) "Adds an RL.SLIDING call.";
        sliding_counter(SlidingCounter) "Adds an RL.SLIDINGCOUNTER call.";
        bucket(Bucket) "Adds an RL.BUCKET call.";
        gcra(Gcra) "Adds an RL.GCRA call.";
        acquire(Acquire) "Adds an RL.ACQUIRE call.";
        penalty(Penalty) "Adds an RL.PENALTY call.";
        share(Share) "Adds an RL.SHARE call.";
    }

    /// Adds a CL.THROTTLE call ([`Error::Unsupported`] on the library backend).
    pub fn throttle(&mut self, key: impl AsRef<[u8]>, params: &Throttle) -> Result<&mut Self> {
        let p = command::throttle(self.backend, key.as_ref(), params)?;
        Ok(self.push(p))
    }

    /// Adds an RL.ALL call ([`Error::BadArgument`] if a policy carries its own charge).
    pub fn all(&mut self, all: &All) -> Result<&mut Self> {
        let p = command::all(self.backend, all)?;
        Ok(self.push(p))
    }

    /// Adds an RL.RELEASE call (its reply: [`Reply::Released`]).
    pub fn release(&mut self, key: impl AsRef<[u8]>, id: impl AsRef<[u8]>) -> &mut Self {
        self.push(command::release(self.backend, key.as_ref(), id.as_ref()))
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
        self.expects
            .iter()
            .zip(replies)
            .enumerate()
            .map(|(i, (expect, v))| {
                command::parse(expect, v)
                    .ok_or_else(|| command::unexpected(&format!("call {i}"), v))
            })
            .collect()
    }

    /// As [`parse`](Batch::parse), each reply dropped as soon as it is read.
    fn parse_owned(&self, replies: Vec<Value>) -> Result<Vec<Reply>> {
        self.check_len(replies.len())?;
        let mut out = Vec::with_capacity(replies.len());
        for (i, (expect, v)) in self.expects.iter().zip(replies).enumerate() {
            match command::parse(expect, &v) {
                Some(r) => out.push(r),
                None => return Err(command::unexpected(&format!("call {i}"), &v)),
            }
        }
        Ok(out)
    }

    fn parse_value(&self, v: Value) -> Result<Vec<Reply>> {
        match v {
            Value::Array(items) => self.parse_owned(items),
            other => Err(command::unexpected("the pipeline", &other)),
        }
    }

    /// The command an error of the whole batch is reported for: RL.SHARE if the
    /// batch has one (the only command an RL server may lack), else the first.
    fn error_command(&self) -> &'static str {
        if self.has_share {
            "RL.SHARE"
        } else {
            self.first.unwrap_or("RL")
        }
    }

    /// Runs the batch on a sync connection.
    pub fn query(&self, con: &mut dyn ConnectionLike) -> Result<Vec<Reply>> {
        if self.is_empty() {
            return Ok(Vec::new());
        }
        match self.pipe.query::<Value>(con) {
            Ok(v) => self.parse_value(v),
            Err(e) => Err(Error::from_redis(e, self.error_command())),
        }
    }

    /// Runs the batch on an async connection.
    #[cfg(feature = "aio")]
    pub async fn query_async(
        &self,
        con: &mut impl redis::aio::ConnectionLike,
    ) -> Result<Vec<Reply>> {
        if self.is_empty() {
            return Ok(Vec::new());
        }
        match self.pipe.query_async::<Value>(con).await {
            Ok(v) => self.parse_value(v),
            Err(e) => Err(Error::from_redis(e, self.error_command())),
        }
    }
}

impl std::fmt::Debug for Batch {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Batch")
            .field("backend", &self.backend)
            .field("calls", &self.len())
            .finish()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn decision(fields: [i64; 5]) -> Value {
        Value::Array(fields.iter().map(|&x| Value::Int(x)).collect())
    }

    #[test]
    fn parses_in_call_order() {
        let mut b = Batch::new(Backend::Library);
        b.gcra("a", &Gcra::new(5, 1, "1s"))
            .release("l", "id")
            .all(&All::new().key("x", Fixed::new(1, "1m")))
            .unwrap();
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
        assert!(matches!(&replies[2], Reply::All(a) if a.keys.len() == 1));
        // Too few replies, or one of the wrong shape.
        assert!(b.parse(&[decision([1, 5, 4, 0, 1000])]).is_err());
        assert!(b
            .parse(&[Value::Int(1), Value::Int(1), Value::Int(1)])
            .is_err());
    }

    #[test]
    fn throttle_is_refused_on_the_library() {
        let mut b = Batch::new(Backend::Library);
        assert!(matches!(
            b.throttle("c", &Throttle::new(0, 1, "1s")),
            Err(Error::Unsupported(_))
        ));
        assert!(b.is_empty());
        let mut b = Batch::new(Backend::Module);
        b.throttle("c", &Throttle::new(0, 1, "1s")).unwrap();
        assert_eq!(b.len(), 1);
        b.clear();
        assert!(b.is_empty());
    }

    #[test]
    fn errors_name_rl_share_when_there_is_one() {
        let mut b = Batch::new(Backend::Module);
        b.gcra("a", &Gcra::new(5, 1, "1s"));
        assert_eq!(b.error_command(), "RL.GCRA");
        b.share("s", &Share::new("t", 1, 5, 1, "1s"));
        assert_eq!(b.error_command(), "RL.SHARE");
    }
}
