//! Where limiter state lives, written once: a [`Store`] is a keyspace seen through
//! the reads RL's commands need and, as its only writes, the native commands RL
//! propagates (`SET … PXAT`, `HSET`, `HDEL`, `PEXPIREAT`, `ZADD`, `ZREM`,
//! `ZREMRANGEBYSCORE`, `DEL`). Every command decides on and writes its key here,
//! generic over the store ([`crate::command::Runs`]); the module's store applies
//! each write through the server's key API and propagates it with absolute times,
//! the in-memory store (feature `model`) applies it to the keyspace model.
//!
//! One module per kind of state: `string` (a string with an expiry: RL.FIXED,
//! RL.GCRA, CL.THROTTLE, RL.SLIDINGCOUNTER, RL.PENALTY), `bucket` (RL.BUCKET's
//! hash), `share` (RL.SHARE's hash, field by field), `sliding` (RL.SLIDING's
//! sorted set), `leases` (RL.ACQUIRE's and RL.RELEASE's sorted set).

mod bucket;
mod leases;
mod share;
mod sliding;
mod string;
mod zset;

/// The hash fields every call of a command names: a store may keep them ready
/// (the module keeps server strings of them) instead of making them per call.
pub mod fields {
    pub use super::bucket::{TOKENS, TS};
    pub use crate::algorithms::share::GLOBAL_FIELD as SHARE_GLOBAL;
}

use crate::algorithms::Millis;
use crate::error::Result;

/// A key's type, as the readers of state tell them apart.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    Empty,
    String,
    Hash,
    SortedSet,
    /// A list, a set, a stream, a module type…: WRONGTYPE for every RL command.
    Other,
}

/// Where a walk over a sorted set starts, and which way it goes.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum From {
    /// From the lowest score above `min` (at or above it when not `exclusive`),
    /// upwards.
    Above { min: f64, exclusive: bool },
    /// From the highest score, downwards.
    Top,
}

impl From {
    /// Every member, from the lowest score.
    pub const BOTTOM: From = From::Above {
        min: f64::NEG_INFINITY,
        exclusive: false,
    };
}

/// A keyspace RL's commands read and write. Reads never write. Each write is the
/// native command of that name, applied to the key and (by the module's store)
/// propagated with absolute values, firing the keyspace events it fires; a write
/// the server refuses returns `Err` and propagates exactly what it changed.
pub trait Store {
    /// An open key.
    type Key;
    /// A hash value as the store hands it out.
    type Value<'a>: AsRef<[u8]>
    where
        Self: 'a;

    /// The key's type.
    fn kind(&self, key: &Self::Key) -> Kind;
    /// The key's absolute expiry in ms; None for a key without one (or no key).
    fn expires_at(&self, key: &Self::Key) -> Option<Millis>;
    /// Hands `read` the value of a string key.
    fn read_string<R>(&self, key: &Self::Key, read: impl FnOnce(&[u8]) -> R + Send) -> R;
    /// `HMGET key field…`: None for a field the hash lacks (every field of no key).
    fn hash_get<const N: usize>(
        &self,
        key: &Self::Key,
        fields: [&[u8]; N],
    ) -> [Option<Self::Value<'_>>; N];
    /// `ZCARD key`.
    fn zcard(&self, key: &Self::Key) -> u64;
    /// `ZCOUNT key -inf max`.
    fn zcount_through(&self, key: &Self::Key, max: Millis) -> u64;
    /// `ZSCORE key member`.
    fn zscore(&self, key: &Self::Key, member: &[u8]) -> Option<f64>;
    /// The score `skip` places on from `from` (0: the first).
    fn znth(&self, key: &Self::Key, from: From, skip: u64) -> Option<f64>;
    /// Hands `visit` each member and its score from `from` on, until it returns
    /// false.
    fn zwalk(&self, key: &Self::Key, from: From, visit: impl FnMut(&[u8], f64) -> bool);

    /// `SET key value PXAT at`.
    fn set_pxat(&mut self, key: &Self::Key, value: &[u8], at: Millis) -> Result<()>;
    /// `HSET key field value …`. Refused at the first field, it changed nothing;
    /// refused later, the key is deleted everywhere and the error returned.
    fn hset<'p>(
        &mut self,
        key: &Self::Key,
        pairs: impl Iterator<Item = (&'p [u8], &'p [u8])>,
    ) -> Result<()>;
    /// `HDEL key field …` of the fields the hash has (a field it lacks is no
    /// failure: it is not there, as the caller wants).
    fn hdel<'f>(&mut self, key: &Self::Key, fields: impl Iterator<Item = &'f [u8]>) -> Result<()>;
    /// `PEXPIREAT key at`.
    fn pexpireat(&mut self, key: &Self::Key, at: Millis) -> Result<()>;
    /// `ZADD key at member`: adds or moves one member.
    fn zadd(&mut self, key: &Self::Key, at: Millis, member: &[u8]) -> Result<()>;
    /// `ZADD key at m1 at m2 …` of the first `count` of `candidates` the set does
    /// not hold (one it holds is never moved); fails if they run out first.
    /// Returns how many it added, even when it failed half way.
    fn zadd_new<M: AsRef<[u8]>>(
        &mut self,
        key: &Self::Key,
        at: Millis,
        count: u64,
        candidates: impl Iterator<Item = M>,
    ) -> (u64, Result<()>);
    /// `ZREM key member …` (all of them held).
    fn zrem<M: AsRef<[u8]>>(&mut self, key: &Self::Key, members: &[M]) -> Result<()>;
    /// `ZREMRANGEBYSCORE key -inf max` (nothing when nothing is that old).
    fn zremrangebyscore(&mut self, key: &Self::Key, max: Millis) -> Result<()>;
    /// `DEL key`.
    fn del(&mut self, key: &Self::Key) -> Result<()>;

    /// After a write failed half way through a state kept in several commands
    /// (`HSET` then `PEXPIREAT`): deletes the key everywhere, so primary and
    /// replicas hold the same (the limiter restarts from its initial state), and
    /// returns the failure.
    fn undo(&mut self, key: &Self::Key, failed: crate::error::Error) -> Result<()> {
        let _ = self.del(key);
        Err(failed)
    }
}
