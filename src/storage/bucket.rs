//! RL.BUCKET's state: a native hash with the fields `tokens` (a decimal level) and
//! `ts` (the ms time of that level), expiring when the bucket would be full again.

use std::os::raw::{c_char, c_int};
use std::ptr;

use crate::server::raw::{self, RedisModuleString};
use crate::server::rm;

use super::record::undo;
use super::{codec, effects, injected, Key, Kind};
use crate::algorithms::bucket::{State, Store};
use crate::algorithms::MAX_COUNT;
use crate::decimal;
use crate::error::{Error, Result};
use crate::server::names::names;
use crate::server::ServerString;

const WHAT: &str = "an RL.BUCKET (a hash with numeric fields tokens and ts)";

/// Reads the bucket; None for an absent key.
pub fn load(key: &Key) -> Result<Option<State>> {
    match key.kind() {
        Kind::Empty => Ok(None),
        Kind::Hash => {
            let mut tokens: *mut RedisModuleString = ptr::null_mut();
            let mut ts: *mut RedisModuleString = ptr::null_mut();
            // SAFETY: the key is open and holds a hash; the variadic list is
            // (field, out-pointer) pairs of the types HASH_NONE reads, ended by NULL;
            // the field names are live module strings.
            unsafe {
                rm!(RedisModule_HashGet)(
                    key.raw(),
                    raw::REDISMODULE_HASH_NONE as c_int,
                    names().tokens.ptr(),
                    &mut tokens,
                    names().ts.ptr(),
                    &mut ts,
                    ptr::null_mut::<c_char>(),
                )
            };
            // SAFETY: HashGet hands the caller one reference to each value it found
            // (NULL for a missing field).
            let (tokens, ts) = unsafe {
                (
                    ServerString::from_owned(tokens),
                    ServerString::from_owned(ts),
                )
            };
            let level_micros = tokens.as_ref().and_then(|t| decimal::micros(t.bytes()));
            let ts_ms = ts
                .as_ref()
                .and_then(|t| decimal::digits(t.bytes()))
                .filter(|&t| t <= MAX_COUNT);
            match (level_micros, ts_ms) {
                (Some(level_micros), Some(ts)) => Ok(Some(State {
                    level_micros,
                    ts: ts as i64,
                })),
                _ => Err(Error::NotALimiter(WHAT)),
            }
        }
        _ => Err(Error::WrongType),
    }
}

/// Writes both fields, sets the absolute expiry and only then propagates
/// `HSET key tokens <level> ts <ts>` + `PEXPIREAT key <expires_at>` (events `hset`,
/// `expire`) and signals the key.
///
/// Failures: the server checks everything `HashSet` can refuse (type, write access)
/// before setting any field, so a refusal (0 fields set) changes nothing: nothing is
/// propagated and the error is returned. A failure after a field was set (unreachable
/// in practice) deletes the key and propagates `DEL`, as for a record.
pub fn store(key: &Key, store: Store) -> Result<()> {
    if !matches!(key.kind(), Kind::Empty | Kind::Hash) {
        return Err(Error::WrongType);
    }
    let mut buf = [0u8; 48];
    let level = codec::format_micros(store.bucket.level_micros, &mut buf);
    let tokens = ServerString::new(level).ok_or(Error::WriteFailed("creating a string"))?;
    let ts =
        ServerString::from_i64(store.bucket.ts).ok_or(Error::WriteFailed("creating a string"))?;
    let set = if injected(key, "hset") {
        0
    } else {
        // SAFETY: the key is open for writing; the variadic list is (field, value)
        // pairs of live strings, ended by NULL, as HASH_COUNT_ALL (no CFIELDS) reads.
        unsafe {
            rm!(RedisModule_HashSet)(
                key.raw(),
                raw::REDISMODULE_HASH_COUNT_ALL as c_int,
                names().tokens.ptr(),
                tokens.ptr(),
                names().ts.ptr(),
                ts.ptr(),
                ptr::null_mut::<c_char>(),
            )
        }
    };
    match set {
        2 => {}
        0 => return Err(Error::WriteFailed("setting the fields")),
        _ => return undo(key, "setting the fields"),
    }
    if injected(key, "expiry") || !key.set_expires_at(store.expires_at) {
        return undo(key, "setting the expiry");
    }
    effects::hset_bucket(key, level, store.bucket.ts)?;
    effects::pexpireat(key, store.expires_at)?;
    key.signal_modified();
    Ok(())
}
