//! COMMAND INFO / COMMAND DOCS metadata: arity, key spec, summary and the argument
//! tree redis-cli uses for hints. Set with `RedisModule_SetCommandInfo`, which Redis
//! 7.0 has (the crate's `#[command]` macro also needs 7.2-only calls, so it is not
//! used). Redis copies everything, so the buffers only live for the call.

use std::ffi::CStr;
use std::mem::{size_of, zeroed};
use std::os::raw::c_int;
use std::ptr;

use crate::server::raw::{self, RedisModuleCommandArg, RedisModuleCommandArgType, RedisModuleCtx};

use super::spec::{Arg, ArgKind, CostArg, Keys, Spec};
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

    // The keys are read and updated in place (as INCR's): one at position 1, or
    // RL.ALL's numkeys keys after its first argument (as ZUNION's).
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
    match spec.keys {
        Keys::First => {
            key_specs[0].find_keys_type =
                raw::RedisModuleKeySpecFindKeysType_REDISMODULE_KSPEC_FK_RANGE;
            key_specs[0].fk.range.lastkey = 0;
            key_specs[0].fk.range.keystep = 1;
            key_specs[0].fk.range.limit = 0;
        }
        Keys::Counted => {
            key_specs[0].find_keys_type =
                raw::RedisModuleKeySpecFindKeysType_REDISMODULE_KSPEC_FK_KEYNUM;
            key_specs[0].fk.keynum.keynumidx = 0;
            key_specs[0].fk.keynum.firstkey = 1;
            key_specs[0].fk.keynum.keystep = 1;
        }
    }

    // Nested argument arrays (a block's parameters, a choice's options) live in
    // `tree` until the server has copied them.
    let mut tree = Tree::default();
    let mut args: Vec<raw::RedisModuleCommandArg> = spec
        .args
        .iter()
        .map(|a| match a.kind {
            ArgKind::Policies => {
                let blocks = super::all::POLICIES
                    .iter()
                    .map(|(word, params, delay)| {
                        let mut block = arg(
                            word,
                            raw::RedisModuleCommandArgType_REDISMODULE_ARG_TYPE_BLOCK,
                        );
                        block.token = word.as_ptr();
                        let mut subargs: Vec<_> = params.iter().map(positional).collect();
                        if *delay {
                            subargs.push(delay_option());
                        }
                        block.subargs = tree.list(subargs);
                        block
                    })
                    .collect();
                let mut policy = arg(
                    a.name,
                    raw::RedisModuleCommandArgType_REDISMODULE_ARG_TYPE_ONEOF,
                );
                policy.flags = raw::REDISMODULE_CMD_ARG_MULTIPLE as c_int;
                policy.subargs = tree.list(blocks);
                policy
            }
            _ => positional(a),
        })
        .collect();
    let integer = raw::RedisModuleCommandArgType_REDISMODULE_ARG_TYPE_INTEGER;
    let amount = match spec.cost {
        CostArg::Option => {
            // [COST n | REFUND n]
            let options = [(c"cost", c"COST"), (c"refund", c"REFUND")]
                .iter()
                .map(|(name, token)| {
                    let mut option = arg(name, integer);
                    option.token = token.as_ptr();
                    option
                })
                .collect();
            let mut choice = arg(
                c"amount",
                raw::RedisModuleCommandArgType_REDISMODULE_ARG_TYPE_ONEOF,
            );
            choice.subargs = tree.list(options);
            Some(choice)
        }
        CostArg::Positional(name) => Some(arg(name, integer)),
        CostArg::None => None,
    };
    if let Some(amount) = amount {
        args.push(RedisModuleCommandArg {
            flags: raw::REDISMODULE_CMD_ARG_OPTIONAL as c_int,
            ..amount
        });
    }
    if spec.delay {
        args.push(delay_option());
    }
    // SAFETY: as above; an all-zero argument ends the server's argument array.
    args.push(unsafe { zeroed() });

    let info = raw::RedisModuleCommandInfo {
        version: &version,
        summary: spec.summary.as_ptr(),
        complexity: spec.complexity.as_ptr(),
        since: SINCE.as_ptr(),
        history: ptr::null_mut(),
        tips: ptr::null(),
        // Counting the command name: exactly this many for a command without
        // options, else (negative) at least this many.
        arity: match spec.cost {
            CostArg::None => spec.min_argc as c_int,
            CostArg::Option | CostArg::Positional(_) => -(spec.min_argc as c_int),
        },
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

/// `[DELAY max]`: RL.GCRA's option (and its RL.ALL policy's), a duration.
fn delay_option() -> RedisModuleCommandArg {
    let mut delay = arg(
        c"delay",
        raw::RedisModuleCommandArgType_REDISMODULE_ARG_TYPE_STRING,
    );
    delay.token = c"DELAY".as_ptr();
    delay.flags = raw::REDISMODULE_CMD_ARG_OPTIONAL as c_int;
    delay
}

/// An argument of this name and type, no flags, naming no key.
fn arg(name: &CStr, type_: RedisModuleCommandArgType) -> RedisModuleCommandArg {
    // SAFETY: a plain C struct; all-zero means no token, no flags, no sub-arguments.
    let mut a: RedisModuleCommandArg = unsafe { zeroed() };
    a.name = name.as_ptr();
    a.type_ = type_;
    a.key_spec_index = -1;
    a
}

/// A positional argument: a key (of key spec 0), an integer or a duration.
fn positional(a: &Arg) -> RedisModuleCommandArg {
    let (type_, key) = match a.kind {
        ArgKind::Key | ArgKind::Keys => (
            raw::RedisModuleCommandArgType_REDISMODULE_ARG_TYPE_KEY,
            true,
        ),
        ArgKind::Integer => (
            raw::RedisModuleCommandArgType_REDISMODULE_ARG_TYPE_INTEGER,
            false,
        ),
        ArgKind::Duration | ArgKind::Text | ArgKind::Policies => (
            raw::RedisModuleCommandArgType_REDISMODULE_ARG_TYPE_STRING,
            false,
        ),
    };
    let mut out = arg(a.name, type_);
    if key {
        out.key_spec_index = 0;
    }
    if matches!(a.kind, ArgKind::Keys) {
        out.flags = raw::REDISMODULE_CMD_ARG_MULTIPLE as c_int;
    }
    out
}

/// Owns the nested argument arrays of one command's description.
#[derive(Default)]
struct Tree(Vec<Vec<RedisModuleCommandArg>>);

impl Tree {
    /// Keeps `args`, ended by an all-zero entry, and returns the array's address
    /// (stable: moving a Vec does not move its buffer).
    fn list(&mut self, mut args: Vec<RedisModuleCommandArg>) -> *mut RedisModuleCommandArg {
        // SAFETY: as in `arg`: the all-zero argument ends the server's array.
        args.push(unsafe { zeroed() });
        self.0.push(args);
        self.0
            .last_mut()
            .map_or(ptr::null_mut(), |a| a.as_mut_ptr())
    }
}

/// Puts the command in ACL categories where the server supports module categories
/// (Redis 7.2+): `@write`, `@fast` for the O(1) commands, and `@ratelimit`. On 7.0
/// module commands belong to no category; users list them by name (docs/operations.md, the ACL recipe).
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
