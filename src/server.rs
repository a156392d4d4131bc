//! What the module needs from the server beyond keys: the clock, and a check at
//! load time that every API function it calls exists.

use redis_module::raw;

/// The server's implementation of a module API function that not every server
/// has, or None. Required ones go through `rm!` instead.
macro_rules! optional {
    ($name:ident) => {{
        // SAFETY: the pointers are written once, by RedisModule_Init at load before
        // any of RL's code runs, and only read afterwards, on the main thread.
        #[allow(unused_unsafe)]
        let f = unsafe { redis_module::raw::$name };
        f
    }};
}
pub(crate) use optional;

use crate::algorithms::Millis;
use crate::storage::rm;

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

/// Called by `rm!` when a function pointer is missing: a panic the command guard
/// turns into an error reply. [`check_api`] makes this unreachable in practice.
#[cold]
pub fn missing_api(name: &str) -> ! {
    panic!("the server does not provide {name}")
}

/// The module API functions RL calls through `rm!`: the load fails on a server
/// that lacks one. A unit test checks that every `rm!` in the sources is listed.
macro_rules! required_api {
    ($($name:ident),* $(,)?) => {
        #[cfg(test)]
        pub const REQUIRED: &[&str] = &[$(stringify!($name)),*];

        /// Names the first required API function this server lacks.
        pub fn check_api() -> Result<(), &'static str> {
            $(
                if optional!($name).is_none() {
                    return Err(stringify!($name));
                }
            )*
            Ok(())
        }
    };
}

required_api!(
    RedisModule_Milliseconds,
    RedisModule_CreateCommand,
    RedisModule_RegisterNumericConfig,
    RedisModule_LoadConfigs,
    RedisModule_SetModuleOptions,
    RedisModule_OpenKey,
    RedisModule_CloseKey,
    RedisModule_KeyType,
    RedisModule_DeleteKey,
    RedisModule_NotifyKeyspaceEvent,
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
    RedisModule_ZsetScore,
    RedisModule_ZsetFirstInScoreRange,
    RedisModule_ZsetLastInScoreRange,
    RedisModule_ZsetRangeCurrentElement,
    RedisModule_ZsetRangeNext,
    RedisModule_ZsetRangePrev,
    RedisModule_ZsetRangeEndReached,
    RedisModule_ZsetRangeStop,
    RedisModule_Replicate,
    RedisModule_ReplyWithArray,
    RedisModule_ReplyWithLongLong,
    RedisModule_ReplyWithError,
    RedisModule_WrongArity,
    RedisModule_IsKeysPositionRequest,
    RedisModule_KeyAtPos,
);

/// Writes a warning to the server log.
pub fn log_warning(ctx: *mut redis_module::raw::RedisModuleCtx, message: &str) {
    redis_module::Context::new(ctx).log_warning(message);
}

/// Creates the module's ACL category `name`, or reuses it: after `MODULE UNLOAD`
/// the server keeps a module's categories, and the next load's
/// `RedisModule_AddACLCategory` fails with EBUSY. True when commands can be put in
/// it; false where the server has no module categories (before 7.4).
pub fn acl_category(ctx: *mut raw::RedisModuleCtx, name: &std::ffi::CStr) -> bool {
    let Some(add) = optional!(RedisModule_AddACLCategory) else {
        return false;
    };
    // SAFETY: `ctx` is the load context (the only time categories can be added);
    // `name` is NUL-terminated.
    if unsafe { add(ctx, name.as_ptr()) } == raw::REDISMODULE_OK as std::os::raw::c_int {
        return true;
    }
    let error = std::io::Error::last_os_error();
    if error.kind() == std::io::ErrorKind::ResourceBusy {
        return true;
    }
    log_warning(
        ctx,
        &format!(
            "rl: cannot create the ACL category {}: {error}; commands get @write/@fast only",
            name.to_string_lossy()
        ),
    );
    false
}

#[cfg(test)]
mod tests {
    use super::REQUIRED;

    /// Every `rm!(Name)` in the sources: the functions whose absence would make a
    /// command fail at run time.
    fn used_through_rm() -> Vec<String> {
        let mut used = Vec::new();
        let mut dirs = vec![std::path::PathBuf::from(concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/src"
        ))];
        while let Some(dir) = dirs.pop() {
            for entry in std::fs::read_dir(&dir).expect("src dir") {
                let path = entry.expect("entry").path();
                if path.is_dir() {
                    dirs.push(path);
                } else if path.extension().is_some_and(|e| e == "rs") {
                    let text = std::fs::read_to_string(&path).expect("source");
                    for piece in text.split("rm!(").skip(1) {
                        let name: String = piece
                            .chars()
                            .take_while(|c| c.is_ascii_alphanumeric() || *c == '_')
                            .collect();
                        if name.starts_with("RedisModule_") {
                            used.push(name);
                        }
                    }
                }
            }
        }
        used.sort();
        used.dedup();
        used
    }

    #[test]
    fn every_function_called_through_rm_is_checked_at_load() {
        let used = used_through_rm();
        assert!(used.len() > 10, "found {used:?}");
        let missing: Vec<&String> = used
            .iter()
            .filter(|u| !REQUIRED.contains(&u.as_str()))
            .collect();
        assert!(missing.is_empty(), "add to required_api!: {missing:?}");
    }
}
