//! The server's clock, read once per call.

use rl_core::algorithms::Millis;

/// The server's time for the running command, in ms since the Unix epoch. Read
/// once per call.
///
/// Since Redis 7.2 (and in every Valkey) a MULTI/EXEC, a Lua script or an FCALL
/// runs at one frozen instant, the one `TIME` and key expiry use; that instant is
/// `RedisModule_CachedMicroseconds`. `RedisModule_Milliseconds` is the live clock,
/// which would decide a call inside a transaction later than the server considers
/// it, and could see as live a key the server already treats as expired. Redis 7.0
/// has no such instant (nor the function): there the live clock is the server's.
pub fn now_ms() -> Millis {
    match optional!(RedisModule_CachedMicroseconds) {
        // SAFETY: no preconditions: it only reads the server's cached time.
        Some(cached_us) => unsafe { cached_us() }.div_euclid(1000),
        // SAFETY: as above; check_api guarantees the pointer at load.
        None => unsafe { rm!(RedisModule_Milliseconds)() },
    }
}
