//! RL: native rate-limit commands for Redis.
//!
//! - `algorithms`: the three limiters as pure functions of (state, now, quota, cost);
//! - `args`: argument parsing shared by all commands; `error`: every failure and its code;
//! - `storage`: state in native keys (string, sorted set, hash) and effects replication;
//! - `commands`: the thin glue Redis calls, guarded so no panic reaches the server.

pub mod algorithms;
pub mod args;
mod commands;
mod config;
pub mod error;
#[doc(hidden)]
pub mod fuzzing;
mod server;
mod stats;
mod storage;

use std::os::raw::c_int;

use redis_module::configuration::ConfigurationFlags;
use redis_module::{raw, redis_module, Context, RedisString, Status};

use commands::{register, Bucket, Fixed, Sliding};

/// Called by the server when it loads the module.
fn init(ctx: &Context, _args: &[RedisString]) -> Status {
    if let Err(missing) = server::check_api() {
        ctx.log_warning(&format!(
            "rl: this server lacks {missing}; Redis 7.0 or newer is required"
        ));
        return Status::Err;
    }
    // Opening a key for writing must not by itself abort WATCHes or invalidate
    // client caches: only real writes signal (see storage::Key).
    unsafe {
        if let Some(set_options) = raw::RedisModule_SetModuleOptions {
            set_options(
                ctx.ctx,
                raw::REDISMODULE_OPTION_NO_IMPLICIT_SIGNAL_MODIFIED as c_int,
            );
        }
    }
    // Constant strings the commands pass to the server, created once now.
    storage::names::names();
    // Replaces the crate's default INFO callback with the `# rl` section.
    unsafe {
        if let Some(register_info) = raw::RedisModule_RegisterInfoFunc {
            register_info(ctx.ctx, Some(stats::info));
        }
    }
    // An `@ratelimit` ACL category where the server lets modules add one (7.4+).
    let ratelimit = unsafe { raw::RedisModule_AddACLCategory }.is_some_and(
        |add| unsafe { add(ctx.ctx, c"ratelimit".as_ptr()) } == raw::REDISMODULE_OK as c_int,
    );
    for result in [
        register::<Fixed>(ctx.ctx, ratelimit),
        register::<Sliding>(ctx.ctx, ratelimit),
        register::<Bucket>(ctx.ctx, ratelimit),
    ] {
        if let Err(e) = result {
            ctx.log_warning(&format!("rl: {e}"));
            return Status::Err;
        }
    }
    Status::Ok
}

// Unit tests and the fuzzer run outside Redis, where its allocator does not exist.
#[cfg(not(any(test, feature = "system-alloc")))]
type Allocator = redis_module::alloc::RedisAlloc;
#[cfg(not(any(test, feature = "system-alloc")))]
const ALLOCATOR: Allocator = redis_module::alloc::RedisAlloc;
#[cfg(any(test, feature = "system-alloc"))]
type Allocator = std::alloc::System;
#[cfg(any(test, feature = "system-alloc"))]
const ALLOCATOR: Allocator = std::alloc::System;

redis_module! {
    name: "rl",
    // major * 10000 + minor * 100 + patch, as MODULE LIST shows it.
    version: 100,
    allocator: (Allocator, ALLOCATOR),
    data_types: [],
    init: init,
    commands: [],
    configurations: [
        i64: [
            [
                "sliding-max-limit",
                &config::SLIDING_MAX_LIMIT,
                config::DEFAULT_SLIDING_MAX_LIMIT,
                1,
                config::SLIDING_MAX_LIMIT_CEILING,
                ConfigurationFlags::DEFAULT,
                None
            ],
        ],
        string: [],
        bool: [],
        enum: [],
        module_args_as_configuration: true,
    ]
}
