//! What the module needs from the server beyond keys: the clock, and a check at
//! load time that every API function it calls exists.

use redis_module::raw;

use crate::algorithms::Millis;
use crate::storage::rm;

/// The server's clock in ms since the Unix epoch. Read once per call.
pub fn now_ms() -> Millis {
    unsafe { rm!(RedisModule_Milliseconds)() }
}

/// Called by `rm!` when a function pointer is missing: a panic the command guard
/// turns into an error reply. [`check_api`] makes this unreachable in practice.
#[cold]
pub fn missing_api(name: &str) -> ! {
    panic!("the server does not provide {name}")
}

/// Names the first module API function the commands need that this server lacks.
pub fn check_api() -> Result<(), &'static str> {
    macro_rules! require {
        ($($name:ident),* $(,)?) => {
            $(
                if unsafe { raw::$name }.is_none() {
                    return Err(stringify!($name));
                }
            )*
        };
    }
    require!(
        RedisModule_Milliseconds,
        RedisModule_CreateCommand,
        RedisModule_SetModuleOptions,
        RedisModule_OpenKey,
        RedisModule_CloseKey,
        RedisModule_KeyType,
        RedisModule_ValueLength,
        RedisModule_GetAbsExpire,
        RedisModule_SetAbsExpire,
        RedisModule_SignalModifiedKey,
        RedisModule_StringDMA,
        RedisModule_StringTruncate,
        RedisModule_StringPtrLen,
        RedisModule_CreateString,
        RedisModule_CreateStringFromLongLong,
        RedisModule_FreeString,
        RedisModule_HashGet,
        RedisModule_HashSet,
        RedisModule_ZsetAdd,
        RedisModule_ZsetRem,
        RedisModule_ZsetFirstInScoreRange,
        RedisModule_ZsetLastInScoreRange,
        RedisModule_ZsetRangeCurrentElement,
        RedisModule_ZsetRangeNext,
        RedisModule_ZsetRangeEndReached,
        RedisModule_ZsetRangeStop,
        RedisModule_Replicate,
        RedisModule_ReplyWithArray,
        RedisModule_ReplyWithLongLong,
        RedisModule_ReplyWithError,
        RedisModule_WrongArity,
    );
    Ok(())
}

/// Writes a warning to the server log.
pub fn log_warning(ctx: *mut redis_module::raw::RedisModuleCtx, message: &str) {
    redis_module::Context::new(ctx).log_warning(message);
}
