//! RL.FIXED's state: a native integer string that expires at the window's end.

use std::os::raw::c_int;

use redis_module::raw;

use super::{codec, replicate, Key, Kind};
use crate::algorithms::fixed::Counter;
use crate::error::{Error, Result};

const WHAT: &str = "an RL.FIXED counter (a non-negative integer with an expiry)";

/// Reads the counter; None for an absent key.
pub fn load(key: &Key) -> Result<Option<Counter>> {
    match key.kind() {
        Kind::Empty => Ok(None),
        Kind::String => {
            let used = codec::parse_uint(value(key)).ok_or(Error::NotALimiter(WHAT))?;
            // A counter without an expiry never resets: not one RL wrote.
            let expires_at = key.expires_at().ok_or(Error::NotALimiter(WHAT))?;
            Ok(Some(Counter { used, expires_at }))
        }
        _ => Err(Error::WrongType),
    }
}

/// The string's bytes, borrowed from the server.
fn value(key: &Key) -> &[u8] {
    let mut len = 0usize;
    let ptr =
        unsafe { rm!(RedisModule_StringDMA)(key.raw(), &mut len, raw::REDISMODULE_READ as c_int) };
    if ptr.is_null() {
        return &[];
    }
    // The buffer stays valid while the key is open and unmodified.
    unsafe { std::slice::from_raw_parts(ptr.cast::<u8>(), len) }
}

/// Writes the counter in place, sets its absolute expiry and propagates
/// `SET key used PXAT expires_at`.
pub fn store(key: &Key, counter: Counter) {
    let mut digits = itoa::Buffer::new();
    let digits = digits.format(counter.used).as_bytes();
    unsafe {
        rm!(RedisModule_StringTruncate)(key.raw(), digits.len());
        let mut len = 0usize;
        let ptr = rm!(RedisModule_StringDMA)(key.raw(), &mut len, raw::REDISMODULE_WRITE as c_int);
        if !ptr.is_null() && len == digits.len() {
            std::ptr::copy_nonoverlapping(digits.as_ptr(), ptr.cast::<u8>(), len);
        }
    }
    key.set_expires_at(counter.expires_at);
    replicate::set_pxat(key, counter.used, counter.expires_at);
    key.signal_modified();
}
