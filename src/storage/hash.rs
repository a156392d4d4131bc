//! RL.BUCKET's state: a native hash with the fields `tokens` (a decimal level) and
//! `ts` (the ms time of that level), expiring when the bucket would be full again.

use std::os::raw::c_int;
use std::ptr;

use redis_module::raw::{self, RedisModuleString};

use super::names::names;
use super::{bytes_of, codec, free_string, replicate, Key, Kind};
use crate::algorithms::bucket::{State, Store};
use crate::algorithms::MAX_COUNT;
use crate::error::{Error, Result};

const WHAT: &str = "an RL.BUCKET (a hash with numeric fields tokens and ts)";

/// Reads the bucket; None for an absent key.
pub fn load(key: &Key) -> Result<Option<State>> {
    match key.kind() {
        Kind::Empty => Ok(None),
        Kind::Hash => {
            let mut tokens: *mut RedisModuleString = ptr::null_mut();
            let mut ts: *mut RedisModuleString = ptr::null_mut();
            unsafe {
                rm!(RedisModule_HashGet)(
                    key.raw(),
                    raw::REDISMODULE_HASH_NONE as c_int,
                    names().tokens.ptr(),
                    &mut tokens,
                    names().ts.ptr(),
                    &mut ts,
                    ptr::null_mut::<std::os::raw::c_char>(),
                )
            };
            let level_micros = codec::parse_micros(bytes_of(tokens));
            let ts_ms = codec::parse_uint(bytes_of(ts)).filter(|&t| t <= MAX_COUNT);
            free_string(key.ctx(), tokens);
            free_string(key.ctx(), ts);
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

/// Writes both fields, sets the absolute expiry and propagates
/// `HSET key tokens <level> ts <ts>` + `PEXPIREAT key <expires_at>`.
pub fn store(key: &Key, store: Store) {
    let mut buf = [0u8; 48];
    let level = codec::format_micros(store.bucket.level_micros, &mut buf);
    unsafe {
        let tokens = rm!(RedisModule_CreateString)(key.ctx(), level.as_ptr().cast(), level.len());
        let ts = rm!(RedisModule_CreateStringFromLongLong)(key.ctx(), store.bucket.ts);
        rm!(RedisModule_HashSet)(
            key.raw(),
            raw::REDISMODULE_HASH_NONE as c_int,
            names().tokens.ptr(),
            tokens,
            names().ts.ptr(),
            ts,
            ptr::null_mut::<std::os::raw::c_char>(),
        );
        free_string(key.ctx(), tokens);
        free_string(key.ctx(), ts);
    }
    key.set_expires_at(store.expires_at);
    replicate::hset_bucket(key, level, store.bucket.ts);
    replicate::pexpireat(key, store.expires_at);
    key.signal_modified();
}
