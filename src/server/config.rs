//! Module configs (`rl.<name>`): registering numeric ones and loading what
//! redis.conf or `MODULE LOADEX … CONFIG` set. The callbacks the server calls to
//! read and change a value are the settings' own (see `crate::config`).

use std::ffi::{c_void, CStr};
use std::os::raw::{c_char, c_int, c_longlong};

use redis_module::raw::{self, RedisModuleCtx, RedisModuleString};

use super::OK;

/// What the server calls to read a numeric config.
pub type GetNumeric = extern "C" fn(*const c_char, *mut c_void) -> c_longlong;
/// What the server calls to change a numeric config; returns [`OK`] or
/// [`super::ERR`] with a message set by [`set_error`].
pub type SetNumeric =
    extern "C" fn(*const c_char, c_longlong, *mut c_void, *mut *mut RedisModuleString) -> c_int;

/// A numeric config to register.
pub struct Numeric {
    pub name: &'static CStr,
    pub value: i64,
    pub min: i64,
    pub max: i64,
    pub get: GetNumeric,
    pub set: SetNumeric,
    /// Handed back to `get` and `set` as their privdata.
    pub index: usize,
}

/// Whether the server has module configs (Redis 7.0 or newer).
pub fn available() -> bool {
    optional!(RedisModule_RegisterNumericConfig).is_some()
        && optional!(RedisModule_LoadConfigs).is_some()
}

/// Registers one numeric config; false if the server refused it or has no configs.
pub fn register_numeric(ctx: *mut RedisModuleCtx, config: &Numeric) -> bool {
    let Some(register) = optional!(RedisModule_RegisterNumericConfig) else {
        return false;
    };
    // SAFETY: `ctx` is the load context; the name is a NUL-terminated static; the
    // callbacks match the server's signatures and privdata is the setting's index,
    // read back only by those callbacks.
    let status = unsafe {
        register(
            ctx,
            config.name.as_ptr(),
            config.value,
            raw::REDISMODULE_CONFIG_DEFAULT,
            config.min,
            config.max,
            Some(config.get),
            Some(config.set),
            None,
            config.index as *mut c_void,
        )
    };
    status == OK
}

/// Applies what redis.conf or `MODULE LOADEX … CONFIG` set, once every config is
/// registered; false if one of those values is not valid (the server logs which).
pub fn load(ctx: *mut RedisModuleCtx) -> bool {
    let Some(load_configs) = optional!(RedisModule_LoadConfigs) else {
        return false;
    };
    // SAFETY: `ctx` is the load context, after every config was registered.
    unsafe { load_configs(ctx) == OK }
}

/// Hands the server the message of a refused change.
///
/// # Safety
/// `err` must be NULL or the out-pointer the server passed to a [`SetNumeric`].
pub unsafe fn set_error(err: *mut *mut RedisModuleString, message: &str) {
    if err.is_null() {
        return;
    }
    if let Some(create) = optional!(RedisModule_CreateString) {
        // SAFETY: `err` is the server's valid out-pointer (the caller's contract),
        // and the server takes ownership of the string (made without a context).
        unsafe { *err = create(std::ptr::null_mut(), message.as_ptr().cast(), message.len()) };
    }
}
