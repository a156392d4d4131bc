//! The server's table of module API functions: how RL reaches one (`rm!` for the
//! functions every supported server has, `optional!` for the others), and the
//! load-time check that the table holds every required one, and the status codes
//! its functions return.

use std::os::raw::c_int;

/// The status the server's functions return for success.
pub const OK: c_int = redis_module::raw::REDISMODULE_OK as c_int;
/// The status the server's functions return for failure.
pub const ERR: c_int = redis_module::raw::REDISMODULE_ERR as c_int;

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

/// Resolves a module API function pointer. All of them are checked when the module
/// loads ([`check_api`]), so a missing one here is a bug that the command guard
/// turns into an error reply.
macro_rules! rm {
    ($name:ident) => {{
        // Callers are often already inside an unsafe block.
        // SAFETY: a plain load of a function-pointer static that the server's loader
        // wrote once, before any command ran, and that nothing writes afterwards.
        #[allow(unused_unsafe)]
        let f = match unsafe { redis_module::raw::$name } {
            Some(f) => f,
            None => $crate::server::api::missing_api(stringify!($name)),
        };
        f
    }};
}
pub(crate) use rm;

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
    RedisModule_ReplyWithStringBuffer,
    RedisModule_ReplyWithSimpleString,
    RedisModule_ReplyWithError,
    RedisModule_WrongArity,
    RedisModule_IsKeysPositionRequest,
    RedisModule_KeyAtPos,
    RedisModule_RegisterCommandFilter,
    RedisModule_CommandFilterArgsCount,
    RedisModule_CommandFilterArgGet,
    RedisModule_GetDetachedThreadSafeContext,
    RedisModule_FreeModuleUser,
);

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
