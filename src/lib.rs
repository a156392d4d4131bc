//! RL: native rate-limit commands for Redis.
//!
//! - `algorithms`: the limiters as pure functions of (state, now, quota, cost);
//! - `decimal`: the one decimal parser, for arguments and stored state;
//! - `args`: argument parsing shared by all commands; `error`: every failure and its code;
//! - `storage`: state in native keys (string, sorted set, hash) and effects replication;
//! - `commands`: the thin glue Redis calls, guarded so no panic reaches the server;
//! - `server`: every call into the server's module API, behind safe functions;
//! - `stats`: the INFO counters; `config`: module settings;
//! - this file: what the server calls to load and unload the module.

// Every unsafe block says why it is sound.
#![deny(clippy::undocumented_unsafe_blocks)]

pub mod algorithms;
pub mod args;
mod commands;
mod config;
mod decimal;
pub mod error;
#[cfg(feature = "fuzzing")]
#[doc(hidden)]
pub mod fuzzing;
mod server;
mod stats;
mod storage;

use std::os::raw::c_int;
use std::panic::catch_unwind;

use server::raw::{RedisModuleCtx, RedisModuleString};

/// The module's name, as `MODULE LIST` shows it and configs are prefixed (`rl.`).
const NAME: &std::ffi::CStr = c"rl";
/// major * 10000 + minor * 100 + patch, as `MODULE LIST` shows it: Cargo.toml's
/// version is the one source (0.2.0 → 200).
const VERSION: c_int = version_number(
    env!("CARGO_PKG_VERSION_MAJOR"),
    env!("CARGO_PKG_VERSION_MINOR"),
    env!("CARGO_PKG_VERSION_PATCH"),
);

/// `major * 10000 + minor * 100 + patch`, evaluated at compile time: a version part
/// that is not a number, or a minor or patch above 99 (which would collide with the
/// next part), fails the build, never the server.
const fn version_number(major: &str, minor: &str, patch: &str) -> c_int {
    const fn part(s: &str, max: c_int) -> c_int {
        let bytes = s.as_bytes();
        assert!(!bytes.is_empty(), "empty version part");
        let mut n: c_int = 0;
        let mut i = 0;
        while i < bytes.len() {
            assert!(bytes[i].is_ascii_digit(), "version part is not a number");
            n = n * 10 + (bytes[i] - b'0') as c_int;
            assert!(n <= max, "version part too large");
            i += 1;
        }
        n
    }
    part(major, 9999) * 10000 + part(minor, 99) * 100 + part(patch, 99)
}

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
    // SAFETY: `ctx` is the server's load context, and this the first API call.
    if !unsafe { server::init(ctx, NAME, VERSION) } {
        return server::ERR;
    }
    let args: Vec<&[u8]> = match usize::try_from(argc) {
        Ok(n) if n > 0 && !argv.is_null() => {
            // SAFETY: the server passes `argc` valid strings that outlive OnLoad.
            let strings = unsafe { std::slice::from_raw_parts(argv, n) };
            strings
                .iter()
                // SAFETY: each string is valid for the whole load (see above).
                .map(|&s| unsafe { server::bytes_of(s) })
                .collect()
        }
        _ => Vec::new(),
    };
    // No panic may unwind into the server, not even while loading.
    match catch_unwind(|| load(ctx, &args)) {
        Ok(Ok(())) => server::OK,
        Ok(Err(message)) => {
            server::log_warning(ctx, &format!("rl: not loaded: {message}"));
            server::ERR
        }
        Err(_) => server::ERR,
    }
}

/// Called by the server on `MODULE UNLOAD`.
///
/// # Safety
/// Called only by the server, with a context for this module.
#[no_mangle]
pub unsafe extern "C" fn RedisModule_OnUnload(_ctx: *mut RedisModuleCtx) -> c_int {
    let _ = catch_unwind(server::names::release);
    server::OK
}

fn load(ctx: *mut RedisModuleCtx, args: &[&[u8]]) -> Result<(), String> {
    server::check_api().map_err(|missing| {
        format!("this server lacks {missing}; Redis 7.0 or newer is required")
    })?;
    config::apply_module_args(args)?;
    config::register(ctx)?;
    server::set_module_options(ctx);
    // Constant strings the commands pass to the server, created once now.
    server::names::names();
    // The `# rl` section of INFO.
    server::register_info(ctx, commands::info);
    let ratelimit = server::acl_category(ctx, c"ratelimit");
    commands::register_all(ctx, ratelimit)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn module_version_is_cargo_version_as_one_number() {
        assert_eq!(version_number("0", "2", "0"), 200);
        assert_eq!(version_number("1", "10", "3"), 11003);
        let expected = env!("CARGO_PKG_VERSION")
            .split('.')
            .map(|p| p.parse::<c_int>().unwrap())
            .fold(0, |acc, p| acc * 100 + p);
        assert_eq!(VERSION, expected);
    }
}
