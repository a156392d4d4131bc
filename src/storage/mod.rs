//! Limiter state in native Redis keys: the module's [`Store`]. The core decides
//! and writes every command's state over any store (`rl_core::store`); this is how
//! its reads and its native writes are done on the server's keys.
//!
//! Everything goes through the module key API (no `RedisModule_Call` on the hot
//! path). Each write is applied, then propagated as the native command it is
//! (`SET … PXAT`, `HSET`, `HDEL`, `PEXPIREAT`, `ZADD`, `ZREM`, `ZREMRANGEBYSCORE`,
//! `DEL`) with absolute values and times, never the RL command, so a replica or an
//! AOF replayed days later ends byte-identical whatever its own clock (as Redis
//! itself turns `SET … EX` into `SET … PXAT`); several in one command arrive
//! wrapped in MULTI/EXEC. Each fires the keyspace events that command fires on a
//! replica (same names, classes and order; see `t_string.c` setGenericCommand,
//! `t_zset.c`, `t_hash.c`, `expire.c`), so a primary and its replicas notify alike,
//! and signals the key. A write the server refuses returns `Err` and propagates
//! exactly what it changed, after it changed it. `string` is the string with an
//! expiry, `hash` a hash's fields, `zset` a sorted set's ranges and members.

mod hash;
mod string;
mod zset;

pub use crate::server::{Key, Kind};

use crate::server::replicate::replicate;
use crate::server::{EventClass as Class, ServerString};
use rl_core::algorithms::Millis;
use rl_core::error::{Error, Result};
use rl_core::store::{From, Store};

/// The server's keys, as the core's storage sees them.
pub struct Server;

impl Store for Server {
    type Key = Key;
    type Value<'a> = ServerString;

    #[inline]
    fn kind(&self, key: &Key) -> Kind {
        key.kind()
    }

    #[inline]
    fn expires_at(&self, key: &Key) -> Option<Millis> {
        key.expires_at()
    }

    #[inline]
    fn read_string<R>(&self, key: &Key, read: impl FnOnce(&[u8]) -> R + Send) -> R {
        key.read_string(read)
    }

    #[inline]
    fn hash_get<const N: usize>(&self, key: &Key, fields: [&[u8]; N]) -> [Option<ServerString>; N] {
        hash::get(key, fields)
    }

    #[inline]
    fn zcard(&self, key: &Key) -> u64 {
        key.element_count()
    }

    #[inline]
    fn zcount_through(&self, key: &Key, max: Millis) -> u64 {
        zset::count_through(key, max)
    }

    #[inline]
    fn zscore(&self, key: &Key, member: &[u8]) -> Option<f64> {
        key.zset_score(&ServerString::new(member)?)
    }

    #[inline]
    fn znth(&self, key: &Key, from: From, skip: u64) -> Option<f64> {
        zset::nth(key, from, skip)
    }

    #[inline]
    fn zwalk(&self, key: &Key, from: From, visit: impl FnMut(&[u8], f64) -> bool) {
        zset::walk(key, from, visit)
    }

    #[inline]
    fn set_pxat(&mut self, key: &Key, value: &[u8], at: Millis) -> Result<()> {
        string::set_pxat(key, value, at)
    }

    #[inline]
    fn hset<'p>(
        &mut self,
        key: &Key,
        pairs: impl Iterator<Item = (&'p [u8], &'p [u8])>,
    ) -> Result<()> {
        hash::set(key, pairs)
    }

    #[inline]
    fn hdel<'f>(&mut self, key: &Key, fields: impl Iterator<Item = &'f [u8]>) -> Result<()> {
        hash::delete(key, fields)
    }

    /// Event `expire`.
    #[inline]
    fn pexpireat(&mut self, key: &Key, at: Millis) -> Result<()> {
        if injected(key, "expiry") || !key.set_expires_at(at) {
            return Err(Error::WriteFailed("setting the expiry"));
        }
        replicate!(key, c"PEXPIREAT"; int(at))?;
        key.notify(Class::Generic, c"expire");
        key.signal_modified();
        Ok(())
    }

    #[inline]
    fn zadd(&mut self, key: &Key, at: Millis, member: &[u8]) -> Result<()> {
        zset::add(key, at, member)
    }

    #[inline]
    fn zadd_new<M: AsRef<[u8]>>(
        &mut self,
        key: &Key,
        at: Millis,
        count: u64,
        candidates: impl Iterator<Item = M>,
    ) -> (u64, Result<()>) {
        zset::add_new(key, at, count, candidates)
    }

    #[inline]
    fn zrem<M: AsRef<[u8]>>(&mut self, key: &Key, members: &[M]) -> Result<()> {
        zset::remove(key, members)
    }

    #[inline]
    fn zremrangebyscore(&mut self, key: &Key, max: Millis) -> Result<()> {
        zset::remove_through(key, max)
    }

    /// Event `del`.
    #[inline]
    fn del(&mut self, key: &Key) -> Result<()> {
        if injected(key, "delete") || !key.delete() {
            return Err(Error::WriteFailed("deleting the key"));
        }
        deleted(key)
    }

    /// Deletes the key (whatever the test build injects) and reports `failed`.
    fn undo(&mut self, key: &Key, failed: Error) -> Result<()> {
        undo(key, failed)
    }
}

/// Propagates the `DEL` of a key just deleted (event `del`) and signals it.
fn deleted(key: &Key) -> Result<()> {
    replicate!(key, c"DEL";)?;
    key.notify(Class::Generic, c"del");
    key.signal_modified();
    Ok(())
}

/// After a partial write: deletes the key and propagates `DEL`, so primary and
/// replicas hold the same (nothing), then reports `failed`.
fn undo(key: &Key, failed: Error) -> Result<()> {
    if key.delete() {
        deleted(key)?;
    }
    Err(failed)
}

/// Test builds only: a key whose name starts with `__rl_fail_<step>__` makes that
/// write step fail as if the server had refused it, so tests can follow a failed
/// write through to what is replied and propagated. Steps: `resize` and `expiry`
/// (strings), `hset` (the first field of an `HSET`), `expiry` (any `PEXPIREAT`),
/// `remove` (a sorted set's removals, at the second member), `add` (a lease's
/// `ZADD`; a log's at the second new unit), and `delete` (a refund back to the
/// initial state, a release of the last lease).
#[cfg(feature = "testing")]
fn injected(key: &Key, step: &str) -> bool {
    key.name_bytes()
        .strip_prefix(b"__rl_fail_".as_slice())
        .and_then(|rest| rest.strip_prefix(step.as_bytes()))
        .is_some_and(|rest| rest.starts_with(b"__"))
}

#[cfg(not(feature = "testing"))]
#[inline(always)]
fn injected(_key: &Key, _step: &str) -> bool {
    false
}
