//! RL: native rate-limit commands for Redis.
//!
//! - `rl_core` (the `core/` crate): the limiters as pure functions, argument
//!   parsing, state formats, errors; it cannot see the server;
//! - `storage`: state in native keys (string, sorted set, hash) and effects replication;
//! - `commands`: the thin glue Redis calls, guarded so no panic reaches the server;
//! - `server`: every call into the server's module API, behind safe functions;
//! - `stats`: the INFO counters; `top`: RL.TOP's sketches; `config`: module settings;
//! - this file: the module's load, which the server's entry points run.

// Every unsafe block says why it is sound.
#![deny(clippy::undocumented_unsafe_blocks)]

mod commands;
mod config;
mod server;
mod stats;
mod storage;
mod top;

use server::Context;

/// The module's name, as `MODULE LIST` shows it and configs are prefixed (`rl.`).
const NAME: &std::ffi::CStr = c"rl";
/// major * 10000 + minor * 100 + patch, as `MODULE LIST` shows it: Cargo.toml's
/// version is the one source (0.2.0 → 200).
const VERSION: i32 = version_number(
    env!("CARGO_PKG_VERSION_MAJOR"),
    env!("CARGO_PKG_VERSION_MINOR"),
    env!("CARGO_PKG_VERSION_PATCH"),
);

/// `major * 10000 + minor * 100 + patch`, evaluated at compile time: a version part
/// that is not a number, or a minor or patch above 99 (which would collide with the
/// next part), fails the build, never the server.
const fn version_number(major: &str, minor: &str, patch: &str) -> i32 {
    const fn part(s: &str, max: i32) -> i32 {
        let bytes = s.as_bytes();
        assert!(!bytes.is_empty(), "empty version part");
        let mut n: i32 = 0;
        let mut i = 0;
        while i < bytes.len() {
            assert!(bytes[i].is_ascii_digit(), "version part is not a number");
            n = n * 10 + (bytes[i] - b'0') as i32;
            assert!(n <= max, "version part too large");
            i += 1;
        }
        n
    }
    part(major, 9999) * 10000 + part(minor, 99) * 100 + part(patch, 99)
}

// `RedisModule_OnLoad` and `RedisModule_OnUnload`, the symbols the server calls to
// load (`--loadmodule`, `MODULE LOAD`) and unload the module, around `load`.
//
// The redis-module crate's `redis_module!` macro is not used: it would accept
// module arguments without validating them and log a warning about defrag
// callbacks on every server before 8.0, and RL needs neither its data types nor
// its event plumbing.
server::entry_points!(name: NAME, version: VERSION, load: load);

/// The module's load, given the module arguments: API check, settings, options,
/// INFO, ACL category, commands. An error is logged and fails the load.
fn load(ctx: Context, args: &[&[u8]]) -> Result<(), String> {
    server::check_api().map_err(|missing| {
        format!("this server lacks {missing}; Redis 7.0 or newer is required")
    })?;
    config::apply_module_args(args)?;
    config::register(ctx)?;
    ctx.set_module_options();
    // Constant strings the commands pass to the server, created once now.
    server::names::names();
    // The `# rl` section of INFO.
    ctx.register_info::<commands::Info>();
    // ... whose counters CONFIG RESETSTAT zeroes when asked (a filter on every
    // command: off by default).
    if config::config_resetstat() && !ctx.on_config_resetstat::<commands::Info>() {
        ctx.log_warning(
            "rl: rl.config-resetstat needs Redis 7.2 or newer (or Valkey): \
             CONFIG RESETSTAT leaves INFO rl's counters as they are",
        );
    }
    let ratelimit = ctx.acl_category(c"ratelimit");
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
            .map(|p| p.parse::<i32>().unwrap())
            .fold(0, |acc, p| acc * 100 + p);
        assert_eq!(VERSION, expected);
    }
}
