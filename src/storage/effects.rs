//! The native commands an allowed write propagates to replicas and the AOF, and the
//! keyspace events those commands fire on a replica, fired here too so a primary
//! and its replicas notify alike (same event names, same classes, same order; see
//! `t_string.c` setGenericCommand, `t_zset.c`, `t_hash.c`, `expire.c`).
//!
//! Each one carries absolute values and times, so a replica or an AOF replayed days
//! later ends byte-identical whatever its own clock (as Redis itself turns `SET … EX`
//! into `SET … PXAT`). Several in one command arrive wrapped in MULTI/EXEC.
//!
//! Callers propagate only writes that happened, after they happened.

use crate::server::names::names;
use crate::server::replicate::replicate;
use crate::server::{EventClass as Class, Key, StrRef};
use rl_core::algorithms::Millis;
use rl_core::error::Result;

/// `SET key value PXAT at`: events `set`, `expire`.
pub fn set_pxat(key: &Key, value: &[u8], at: Millis) -> Result<()> {
    replicate!(key, c"SET"; bytes(value), shared(&names().pxat), int(at))?;
    key.notify(Class::String, c"set");
    key.notify(Class::Generic, c"expire");
    Ok(())
}

/// `DEL key`: event `del`.
pub fn del(key: &Key) -> Result<()> {
    replicate!(key, c"DEL";)?;
    key.notify(Class::Generic, c"del");
    Ok(())
}

/// `PEXPIREAT key at` (a time in the future): event `expire`.
pub fn pexpireat(key: &Key, at: Millis) -> Result<()> {
    replicate!(key, c"PEXPIREAT"; int(at))?;
    key.notify(Class::Generic, c"expire");
    Ok(())
}

/// `HSET key tokens <level> ts <ts>`: event `hset`.
pub fn hset_bucket(key: &Key, tokens: &[u8], ts: Millis) -> Result<()> {
    replicate!(key, c"HSET"; shared(&names().tokens), bytes(tokens), shared(&names().ts), int(ts))?;
    key.notify(Class::Hash, c"hset");
    Ok(())
}

/// `HSET key field value [field value …]` (the pairs laid out in `pairs`): event
/// `hset`.
pub fn hset(key: &Key, pairs: &[StrRef<'_>]) -> Result<()> {
    replicate!(key, c"HSET"; strings(pairs))?;
    key.notify(Class::Hash, c"hset");
    Ok(())
}

/// `HDEL key field [field …]` that deleted them all (never the last field): event
/// `hdel`.
pub fn hdel(key: &Key, fields: &[StrRef<'_>]) -> Result<()> {
    replicate!(key, c"HDEL"; strings(fields))?;
    key.notify(Class::Hash, c"hdel");
    Ok(())
}

/// `ZREMRANGEBYSCORE key -inf max` that removed something: event
/// `zremrangebyscore`, then `del` if it emptied the set.
pub fn zremrangebyscore(key: &Key, max: Millis, emptied: bool) -> Result<()> {
    replicate!(key, c"ZREMRANGEBYSCORE"; shared(&names().neg_inf), int(max))?;
    key.notify(Class::SortedSet, c"zremrangebyscore");
    if emptied {
        key.notify(Class::Generic, c"del");
    }
    Ok(())
}

/// `ZREM key member [member …]` that removed them all: event `zrem`, then `del` if
/// it emptied the set.
pub fn zrem(key: &Key, members: &[StrRef<'_>], emptied: bool) -> Result<()> {
    replicate!(key, c"ZREM"; strings(members))?;
    key.notify(Class::SortedSet, c"zrem");
    if emptied {
        key.notify(Class::Generic, c"del");
    }
    Ok(())
}

/// `ZADD key score member [score member …]` (the pairs laid out in `pairs`) that
/// added them all: event `zadd`.
pub fn zadd(key: &Key, pairs: &[StrRef<'_>]) -> Result<()> {
    replicate!(key, c"ZADD"; strings(pairs))?;
    key.notify(Class::SortedSet, c"zadd");
    Ok(())
}
