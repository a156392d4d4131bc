//! COMMAND INFO / COMMAND DOCS metadata: arity, key spec, summary and the argument
//! tree redis-cli uses for hints. Set with `RedisModule_SetCommandInfo`, which Redis
//! 7.0 has (the crate's `#[command]` macro also needs 7.2-only calls, so it is not
//! used). Redis copies everything, so the buffers only live for the call.

use std::mem::{size_of, zeroed};
use std::os::raw::c_int;
use std::ptr;

use redis_module::raw::{self, RedisModuleCtx};

use super::{ArgKind, CostArg, Spec};
use crate::server::optional;

/// The version of this module, shown in COMMAND DOCS `since`.
const SINCE: &std::ffi::CStr = c"0.1.0";

pub fn describe(ctx: *mut RedisModuleCtx, spec: &Spec) -> Result<(), String> {
    // Without SetCommandInfo (Redis < 7.0) the command still works; it only lacks docs.
    let (Some(get_command), Some(set_info)) = (
        optional!(RedisModule_GetCommand),
        optional!(RedisModule_SetCommandInfo),
    ) else {
        return Ok(());
    };
    // SAFETY: `ctx` is the load context; the name is a NUL-terminated static.
    let command = unsafe { get_command(ctx, spec.name.as_ptr()) };
    if command.is_null() {
        return Err(format!(
            "cannot find {} after registering it",
            spec.name_str()
        ));
    }

    let version = raw::RedisModuleCommandInfoVersion {
        version: 1,
        sizeof_historyentry: size_of::<raw::RedisModuleCommandHistoryEntry>(),
        sizeof_keyspec: size_of::<raw::RedisModuleCommandKeySpec>(),
        sizeof_arg: size_of::<raw::RedisModuleCommandArg>(),
    };

    // One key at position 1, read and updated in place (as INCR's).
    // SAFETY: a plain C struct of integers, pointers and unions of those, for
    // which all-zero is the "unset" value; the zeroed second entry ends the array.
    let mut key_specs: [raw::RedisModuleCommandKeySpec; 2] = unsafe { zeroed() };
    key_specs[0].flags = u64::from(
        raw::REDISMODULE_CMD_KEY_RW
            | raw::REDISMODULE_CMD_KEY_ACCESS
            | raw::REDISMODULE_CMD_KEY_UPDATE,
    );
    key_specs[0].begin_search_type =
        raw::RedisModuleKeySpecBeginSearchType_REDISMODULE_KSPEC_BS_INDEX;
    key_specs[0].bs.index.pos = 1;
    key_specs[0].find_keys_type = raw::RedisModuleKeySpecFindKeysType_REDISMODULE_KSPEC_FK_RANGE;
    key_specs[0].fk.range.lastkey = 0;
    key_specs[0].fk.range.keystep = 1;
    key_specs[0].fk.range.limit = 0;

    let mut args: Vec<raw::RedisModuleCommandArg> = spec
        .args
        .iter()
        .map(|a| {
            // SAFETY: a plain C struct; all-zero means no token, no flags, no
            // sub-arguments.
            let mut arg: raw::RedisModuleCommandArg = unsafe { zeroed() };
            arg.name = a.name.as_ptr();
            arg.key_spec_index = -1;
            arg.type_ = match a.kind {
                ArgKind::Key => {
                    arg.key_spec_index = 0;
                    raw::RedisModuleCommandArgType_REDISMODULE_ARG_TYPE_KEY
                }
                ArgKind::Integer => raw::RedisModuleCommandArgType_REDISMODULE_ARG_TYPE_INTEGER,
                ArgKind::Duration => raw::RedisModuleCommandArgType_REDISMODULE_ARG_TYPE_STRING,
            };
            arg
        })
        .collect();
    // SAFETY: as above.
    let mut cost: raw::RedisModuleCommandArg = unsafe { zeroed() };
    cost.type_ = raw::RedisModuleCommandArgType_REDISMODULE_ARG_TYPE_INTEGER;
    cost.key_spec_index = -1;
    match spec.cost {
        CostArg::Option => {
            cost.name = c"cost".as_ptr();
            cost.token = c"COST".as_ptr();
        }
        CostArg::Positional(name) => cost.name = name.as_ptr(),
    }
    cost.flags = raw::REDISMODULE_CMD_ARG_OPTIONAL as c_int;
    args.push(cost);
    // SAFETY: as above; an all-zero argument ends the server's argument array.
    let end: raw::RedisModuleCommandArg = unsafe { zeroed() };
    args.push(end);

    let info = raw::RedisModuleCommandInfo {
        version: &version,
        summary: spec.summary.as_ptr(),
        complexity: spec.complexity.as_ptr(),
        since: SINCE.as_ptr(),
        history: ptr::null_mut(),
        tips: ptr::null(),
        // Negative: at least this many, counting the command name.
        arity: -(spec.min_argc() as c_int),
        key_specs: key_specs.as_mut_ptr(),
        args: args.as_mut_ptr(),
    };
    // SAFETY: `command` is this module's command, found above; every pointer in
    // `info` outlives the call (the server copies what it keeps).
    if unsafe { set_info(command, &info) } != raw::REDISMODULE_OK as c_int {
        return Err(format!("cannot describe {}", spec.name_str()));
    }
    Ok(())
}

/// Puts the command in ACL categories where the server supports module categories
/// (Redis 7.2+): `@write`, `@fast` for the O(1) commands, and `@ratelimit`. On 7.0
/// module commands belong to no category; users list them by name (README).
/// A failure is logged, never fatal: the command works without categories.
pub fn categorize(ctx: *mut RedisModuleCtx, spec: &Spec, ratelimit: bool) {
    let (Some(get_command), Some(set_categories)) = (
        optional!(RedisModule_GetCommand),
        optional!(RedisModule_SetCommandACLCategories),
    ) else {
        return;
    };
    let fast = spec
        .flags
        .to_bytes()
        .split(|&b| b == b' ')
        .any(|f| f == b"fast");
    let categories: &std::ffi::CStr = match (fast, ratelimit) {
        (true, true) => c"write fast ratelimit",
        (false, true) => c"write ratelimit",
        (true, false) => c"write fast",
        (false, false) => c"write",
    };
    // SAFETY: `ctx` is the load context; the name is a NUL-terminated static.
    let command = unsafe { get_command(ctx, spec.name.as_ptr()) };
    if command.is_null()
        // SAFETY: `command` is this module's command; the categories a static.
        || unsafe { set_categories(command, categories.as_ptr()) } != raw::REDISMODULE_OK as c_int
    {
        crate::server::log_warning(
            ctx,
            &format!("rl: could not set ACL categories of {}", spec.name_str()),
        );
    }
}
