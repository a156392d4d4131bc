//! The native commands an allowed call propagates to replicas and the AOF.
//!
//! Each one carries absolute values and times, so a replica or an AOF replayed days
//! later ends byte-identical whatever its own clock (as Redis itself turns `SET … EX`
//! into `SET … PXAT`). Several calls in one command arrive wrapped in MULTI/EXEC.

use std::ffi::CStr;
use std::os::raw::{c_char, c_longlong};

use redis_module::raw::RedisModuleString;

use super::names::names;
use super::Key;
use crate::algorithms::Millis;

fn ll(v: i64) -> c_longlong {
    v as c_longlong
}

fn uint(v: u64) -> c_longlong {
    c_longlong::try_from(v).unwrap_or(c_longlong::MAX)
}

fn c(s: &'static CStr) -> *const c_char {
    s.as_ptr()
}

/// `SET key value PXAT at`
pub fn set_pxat(key: &Key, value: u64, at: Millis) {
    unsafe {
        rm!(RedisModule_Replicate)(
            key.ctx(),
            c(c"SET"),
            c(c"slsl"),
            key.name(),
            uint(value),
            names().pxat.ptr(),
            ll(at),
        )
    };
}

/// `PEXPIREAT key at`
pub fn pexpireat(key: &Key, at: Millis) {
    unsafe { rm!(RedisModule_Replicate)(key.ctx(), c(c"PEXPIREAT"), c(c"sl"), key.name(), ll(at)) };
}

/// `HSET key tokens <level> ts <ts>`
pub fn hset_bucket(key: &Key, tokens: &[u8], ts: Millis) {
    unsafe {
        rm!(RedisModule_Replicate)(
            key.ctx(),
            c(c"HSET"),
            c(c"ssbsl"),
            key.name(),
            names().tokens.ptr(),
            tokens.as_ptr().cast::<c_char>(),
            tokens.len(),
            names().ts.ptr(),
            ll(ts),
        )
    };
}

/// `ZREMRANGEBYSCORE key -inf max`
pub fn zremrangebyscore(key: &Key, max: Millis) {
    unsafe {
        rm!(RedisModule_Replicate)(
            key.ctx(),
            c(c"ZREMRANGEBYSCORE"),
            c(c"ssl"),
            key.name(),
            names().neg_inf.ptr(),
            ll(max),
        )
    };
}

/// `ZADD key score member [score member …]`, the pairs already laid out in `args`.
pub fn zadd(key: &Key, args: &[*mut RedisModuleString]) {
    unsafe {
        rm!(RedisModule_Replicate)(
            key.ctx(),
            c(c"ZADD"),
            c(c"sv"),
            key.name(),
            args.as_ptr(),
            args.len(),
        )
    };
}
