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

use std::ffi::CStr;
use std::os::raw::c_int;

use redis_module::raw;

use super::names::names;
use super::replicate::replicate;
use super::{Key, StrRef};
use crate::algorithms::Millis;
use crate::error::Result;

/// Event classes (`notify-keyspace-events` letters).
#[derive(Clone, Copy)]
enum Class {
    /// `g`: DEL, EXPIRE and friends.
    Generic,
    /// `$`
    String,
    /// `h`
    Hash,
    /// `z`
    SortedSet,
}

fn notify(key: &Key, class: Class, event: &'static CStr) {
    let class = match class {
        Class::Generic => raw::REDISMODULE_NOTIFY_GENERIC,
        Class::String => raw::REDISMODULE_NOTIFY_STRING,
        Class::Hash => raw::REDISMODULE_NOTIFY_HASH,
        Class::SortedSet => raw::REDISMODULE_NOTIFY_ZSET,
    };
    // SAFETY: the key's context and name are the running command's; `event` is a
    // NUL-terminated static string. The server copies what it publishes. It only
    // fails for a context without a client, which a command's context always has.
    unsafe {
        rm!(RedisModule_NotifyKeyspaceEvent)(key.ctx(), class as c_int, event.as_ptr(), key.name())
    };
}

/// `SET key value PXAT at`: events `set`, `expire`.
pub fn set_pxat(key: &Key, value: &[u8], at: Millis) -> Result<()> {
    replicate!(key, c"SET"; bytes(value), shared(&names().pxat), int(at))?;
    notify(key, Class::String, c"set");
    notify(key, Class::Generic, c"expire");
    Ok(())
}

/// `DEL key`: event `del`.
pub fn del(key: &Key) -> Result<()> {
    replicate!(key, c"DEL";)?;
    notify(key, Class::Generic, c"del");
    Ok(())
}

/// `PEXPIREAT key at` (a time in the future): event `expire`.
pub fn pexpireat(key: &Key, at: Millis) -> Result<()> {
    replicate!(key, c"PEXPIREAT"; int(at))?;
    notify(key, Class::Generic, c"expire");
    Ok(())
}

/// `HSET key tokens <level> ts <ts>`: event `hset`.
pub fn hset_bucket(key: &Key, tokens: &[u8], ts: Millis) -> Result<()> {
    replicate!(key, c"HSET"; shared(&names().tokens), bytes(tokens), shared(&names().ts), int(ts))?;
    notify(key, Class::Hash, c"hset");
    Ok(())
}

/// `ZREMRANGEBYSCORE key -inf max` that removed something: event
/// `zremrangebyscore`, then `del` if it emptied the set.
pub fn zremrangebyscore(key: &Key, max: Millis, emptied: bool) -> Result<()> {
    replicate!(key, c"ZREMRANGEBYSCORE"; shared(&names().neg_inf), int(max))?;
    notify(key, Class::SortedSet, c"zremrangebyscore");
    if emptied {
        notify(key, Class::Generic, c"del");
    }
    Ok(())
}

/// `ZREM key member [member …]` that removed them all: event `zrem`, then `del` if
/// it emptied the set.
pub fn zrem(key: &Key, members: &[StrRef<'_>], emptied: bool) -> Result<()> {
    replicate!(key, c"ZREM"; strings(members))?;
    notify(key, Class::SortedSet, c"zrem");
    if emptied {
        notify(key, Class::Generic, c"del");
    }
    Ok(())
}

/// `ZADD key score member [score member …]` (the pairs laid out in `pairs`) that
/// added them all: event `zadd`.
pub fn zadd(key: &Key, pairs: &[StrRef<'_>]) -> Result<()> {
    replicate!(key, c"ZADD"; strings(pairs))?;
    notify(key, Class::SortedSet, c"zadd");
    Ok(())
}
