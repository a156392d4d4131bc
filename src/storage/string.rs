//! A value with an absolute expiry: a native string on a key with a TTL. RL.FIXED
//! keeps its used units in one, RL.GCRA its TAT in ns, RL.SLIDINGCOUNTER its
//! `"<start> <current> <previous>"`, RL.PENALTY its `"<count> <window_end> <level>
//! <blocked_until>"`: each as plain decimals (canonical: no sign, no leading zeros —
//! what `GET` shows and `INCR` accepts), parsed by its limiter.
//!
//! Written in place (`StringDMA`) when the value keeps its length, made anew at
//! exactly its size (`DeleteKey` + `StringTruncate`) when it does not; propagated as
//! `SET key value PXAT at`.
//!
//! # Why the value is a raw string, not int-encoded like native `SET`'s
//! A native `SET k 5` stores an int-encoded object (`OBJECT ENCODING` int,
//! `MEMORY USAGE` 72 B for a 21-byte name); this record is raw (80 B: 8 B more for
//! the sds buffer). No key-API path yields int encoding: `RM_CreateString*` build
//! raw/embstr objects, `RM_StringSet` stores the object as given (no
//! `tryObjectEncoding`), and `RM_StringDMA` turns an int-encoded value into a raw
//! one even for READ (`dbUnshareStringValue`). The only way is
//! `RedisModule_Call("SET", …)` without `!` (its `tryObjectEncoding` encodes the
//! argument) plus our own `Replicate` — and then reading must go through
//! `RedisModule_Call("GET")` too, or a rejected call would turn the int back into a
//! raw string. Measured on Redis 7.0.15 (2 shared cores, `redis-benchmark -P 16
//! -n 200000 -r 100000 RL.FIXED key:__rand_int__ 1000000 60`, five rounds run back
//! to back): key API 180k, 180k, 182k, 229k, 178k req/s; Call GET + Call SET 134k,
//! 164k, 132k, 140k, 156k req/s — about 22 % slower (medians 180k vs 140k), over the
//! 10 % budget, for 8 B per key. So the key API stays. (A read through DMA of a key
//! that *is* int-encoded — written by a native SET, or by a replica or an AOF
//! replaying ours — converts it to raw, 72 → 80 B, even for a rejected call; its
//! content, TTL and DUMP do not change.) `tests/it/memory.rs` pins these figures.

use super::{injected, undo, Key, Kind};
use crate::server::names::names;
use crate::server::replicate::replicate;
use crate::server::EventClass as Class;
use rl_core::algorithms::Millis;
use rl_core::error::{Error, Result};

/// `SET key digits PXAT expires_at`: writes `digits` in place, sets the absolute
/// expiry, and only then propagates it (events `set`, `expire`) and signals the key.
/// A key of another type is WRONGTYPE (never overwritten).
///
/// Failures: the first write (resizing the string) changes nothing when it fails,
/// so nothing is propagated and the error is returned. A failure after it (unreachable
/// in practice: the resize already proved the key a writable string) leaves a value
/// the replicas do not have, so the key is deleted and `DEL` propagated: primary and
/// replicas agree (the limiter restarts from its initial state) and the caller gets
/// the error.
pub(super) fn set_pxat(key: &Key, digits: &[u8], expires_at: Millis) -> Result<()> {
    let kind = key.kind();
    if !matches!(kind, Kind::Empty | Kind::String) {
        return Err(Error::WrongType);
    }
    if injected(key, "resize") {
        return Err(Error::WriteFailed("resizing the value"));
    }
    // Same length (the common case: a count or a TAT keeps its number of digits):
    // overwritten in place below. Another length: the old value goes and a new one
    // of exactly that size is made — growing a string in place would keep the spare
    // room sds growth reserves, and the key would cost more than a native SET of it.
    let resize = match kind {
        Kind::String if key.element_count() == digits.len() as u64 => false,
        Kind::String => {
            if !key.delete() {
                return Err(Error::WriteFailed("resizing the value"));
            }
            true
        }
        _ => true,
    };
    // Resizing: the key is empty now, and this makes a raw string of exactly
    // `digits.len()` bytes.
    if resize && !key.truncate(digits.len()) {
        return if kind == Kind::String {
            // The old value is gone here but not on the replicas.
            undo(key, Error::WriteFailed("resizing the value"))
        } else {
            Err(Error::WriteFailed("resizing the value"))
        };
    }
    // Written through DMA into a raw string: what the next read (also DMA, which
    // turns any other encoding raw) finds, so a read never changes the key's memory.
    if !key.overwrite_string(digits) {
        return undo(key, Error::WriteFailed("writing the value"));
    }
    if injected(key, "expiry") || !key.set_expires_at(expires_at) {
        return undo(key, Error::WriteFailed("setting the expiry"));
    }
    replicate!(key, c"SET"; bytes(digits), shared(&names().pxat), int(expires_at))?;
    key.notify(Class::String, c"set");
    key.notify(Class::Generic, c"expire");
    key.signal_modified();
    Ok(())
}
