//! What the module's load asks of the server: the API table, module options, the
//! INFO callback, the ACL category, and the log it writes to when something is off.

use std::ffi::CStr;
use std::os::raw::c_int;

use redis_module::raw::{self, RedisModuleCtx, RedisModuleInfoCtx};

/// The status the server's entry points return for success.
pub const OK: c_int = raw::REDISMODULE_OK as c_int;
/// The status the server's entry points return for failure.
pub const ERR: c_int = raw::REDISMODULE_ERR as c_int;

/// Fills in every `RedisModule_*` function pointer the server provides; false if
/// the server refused the module.
///
/// # Safety
/// `ctx` must be the server's load context, and this the first call into the API.
pub unsafe fn init(ctx: *mut RedisModuleCtx, name: &CStr, version: c_int) -> bool {
    // SAFETY: `ctx` is the server's load context (the caller's contract); the name
    // is NUL-terminated.
    let status = unsafe {
        raw::Export_RedisModule_Init(
            ctx,
            name.as_ptr(),
            version,
            raw::REDISMODULE_APIVER_1 as c_int,
        )
    };
    status == OK
}

/// Opening a key for writing must not by itself abort WATCHes or invalidate
/// client caches: only real writes signal (see [`super::Key`]).
pub fn set_module_options(ctx: *mut RedisModuleCtx) {
    // SAFETY: `ctx` is the load context; the option is a plain flag.
    unsafe {
        rm!(RedisModule_SetModuleOptions)(
            ctx,
            raw::REDISMODULE_OPTION_NO_IMPLICIT_SIGNAL_MODIFIED as c_int,
        )
    };
}

/// The callback the server calls to fill the module's INFO section.
pub type InfoCallback = extern "C" fn(*mut RedisModuleInfoCtx, c_int);

/// Registers the module's INFO section, where the server has module INFO.
pub fn register_info(ctx: *mut RedisModuleCtx, callback: InfoCallback) {
    if let Some(register) = optional!(RedisModule_RegisterInfoFunc) {
        // SAFETY: `ctx` is the load context; the callback never unwinds.
        unsafe { register(ctx, Some(callback)) };
    }
}

/// Writes a warning to the server log.
pub fn log_warning(ctx: *mut RedisModuleCtx, message: &str) {
    redis_module::Context::new(ctx).log_warning(message);
}

/// Creates the module's ACL category `name`, or reuses it: after `MODULE UNLOAD`
/// the server keeps a module's categories, and the next load's
/// `RedisModule_AddACLCategory` fails with EBUSY. True when commands can be put in
/// it; false where the server has no module categories (before 7.4).
pub fn acl_category(ctx: *mut RedisModuleCtx, name: &CStr) -> bool {
    let Some(add) = optional!(RedisModule_AddACLCategory) else {
        return false;
    };
    // SAFETY: `ctx` is the load context (the only time categories can be added);
    // `name` is NUL-terminated.
    if unsafe { add(ctx, name.as_ptr()) } == OK {
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

/// What the server calls for a command.
pub type CommandFn =
    extern "C" fn(*mut RedisModuleCtx, *mut *mut raw::RedisModuleString, c_int) -> c_int;

/// Where a command's keys are, as `(first, last, step)` argument positions.
pub type KeyRange = (c_int, c_int, c_int);

/// Registers the command `name`; false if the server refused (the name is taken).
pub fn create_command(
    ctx: *mut RedisModuleCtx,
    name: &CStr,
    handler: CommandFn,
    flags: &CStr,
    (first, last, step): KeyRange,
) -> bool {
    // SAFETY: `ctx` is the load context; name and flags are NUL-terminated;
    // `handler` has the server's command signature.
    let created = unsafe {
        rm!(RedisModule_CreateCommand)(
            ctx,
            name.as_ptr(),
            Some(handler),
            flags.as_ptr(),
            first,
            last,
            step,
        )
    };
    created == OK
}
