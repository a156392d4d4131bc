//! RL: native rate-limit commands for Redis.
//!
//! - `algorithms`: the limiters as pure functions of (state, now, quota, cost);
//! - `args`: argument parsing shared by all commands; `error`: every failure and its code;
//! - `storage`: state in native keys (string, sorted set, hash) and effects replication;
//! - `commands`: the thin glue Redis calls, guarded so no panic reaches the server;
//! - `config`: module settings; `server`: the clock and the API check;
//! - this file: what the server calls to load and unload the module.

// Every unsafe block says why it is sound.
#![deny(clippy::undocumented_unsafe_blocks)]

pub mod algorithms;
pub mod args;
mod commands;
mod config;
pub mod error;
#[cfg(feature = "fuzzing")]
#[doc(hidden)]
pub mod fuzzing;
mod server;
mod stats;
mod storage;

use std::os::raw::c_int;
use std::panic::catch_unwind;

use redis_module::raw::{self, RedisModuleCtx, RedisModuleString};

/// The module's name, as `MODULE LIST` shows it and configs are prefixed (`rl.`).
const NAME: &std::ffi::CStr = c"rl";
/// major * 10000 + minor * 100 + patch, as `MODULE LIST` shows it.
const VERSION: c_int = 100;

// Inside redis-server every allocation goes through the server's allocator, so
// `used_memory`, `maxmemory` and `MEMORY USAGE` see RL's memory. Unit tests and the
// fuzzer run outside Redis, where that allocator does not exist.
#[cfg(not(any(test, feature = "system-alloc")))]
#[global_allocator]
static ALLOCATOR: redis_module::alloc::RedisAlloc = redis_module::alloc::RedisAlloc;

/// Called by the server when it loads the module (`--loadmodule`, `MODULE LOAD`).
///
/// The redis-module crate's `redis_module!` macro is not used: it would accept
/// module arguments without validating them and log a warning about defrag
/// callbacks on every server before 8.0, and RL needs neither its data types nor
/// its event plumbing.
///
/// # Safety
/// Called only by the server, with its load context and the module arguments.
#[no_mangle]
pub unsafe extern "C" fn RedisModule_OnLoad(
    ctx: *mut RedisModuleCtx,
    argv: *mut *mut RedisModuleString,
    argc: c_int,
) -> c_int {
    // SAFETY: `ctx` is the server's load context; the name is NUL-terminated. This
    // fills in every RedisModule_* function pointer the server provides.
    let init = unsafe {
        raw::Export_RedisModule_Init(
            ctx,
            NAME.as_ptr(),
            VERSION,
            raw::REDISMODULE_APIVER_1 as c_int,
        )
    };
    if init != raw::REDISMODULE_OK as c_int {
        return raw::REDISMODULE_ERR as c_int;
    }
    let args: Vec<&[u8]> = match usize::try_from(argc) {
        Ok(n) if n > 0 && !argv.is_null() => {
            // SAFETY: the server passes `argc` valid strings that outlive OnLoad.
            let strings = unsafe { std::slice::from_raw_parts(argv, n) };
            // SAFETY: each string is valid for the whole load (see above).
            // SAFETY: each string is valid for the whole load (see above).
            strings
                .iter()
                .map(|&s| unsafe { storage::bytes_of(s) })
                .collect()
        }
        _ => Vec::new(),
    };
    // No panic may unwind into the server, not even while loading.
    match catch_unwind(|| load(ctx, &args)) {
        Ok(Ok(())) => raw::REDISMODULE_OK as c_int,
        Ok(Err(message)) => {
            server::log_warning(ctx, &format!("rl: not loaded: {message}"));
            raw::REDISMODULE_ERR as c_int
        }
        Err(_) => raw::REDISMODULE_ERR as c_int,
    }
}

/// Called by the server on `MODULE UNLOAD`.
///
/// # Safety
/// Called only by the server, with a context for this module.
#[no_mangle]
pub unsafe extern "C" fn RedisModule_OnUnload(_ctx: *mut RedisModuleCtx) -> c_int {
    let _ = catch_unwind(storage::names::release);
    raw::REDISMODULE_OK as c_int
}

fn load(ctx: *mut RedisModuleCtx, args: &[&[u8]]) -> Result<(), String> {
    server::check_api().map_err(|missing| {
        format!("this server lacks {missing}; Redis 7.0 or newer is required")
    })?;
    config::apply_module_args(args)?;
    config::register(ctx)?;
    // Opening a key for writing must not by itself abort WATCHes or invalidate
    // client caches: only real writes signal (see storage::Key).
    // SAFETY: `ctx` is the load context.
    unsafe {
        storage::rm!(RedisModule_SetModuleOptions)(
            ctx,
            raw::REDISMODULE_OPTION_NO_IMPLICIT_SIGNAL_MODIFIED as c_int,
        )
    };
    // Constant strings the commands pass to the server, created once now.
    storage::names::names();
    // The `# rl` section of INFO.
    if let Some(register_info) = server::optional!(RedisModule_RegisterInfoFunc) {
        // SAFETY: `ctx` is the load context; the callback never unwinds.
        unsafe { register_info(ctx, Some(stats::info)) };
    }
    let ratelimit = server::acl_category(ctx, c"ratelimit");
    commands::register_all(ctx, ratelimit)
}
