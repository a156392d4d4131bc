//! Module configs (`rl.<name>`): registering numeric ones, the callbacks the server
//! calls to read and change one, and loading what redis.conf or
//! `MODULE LOADEX … CONFIG` set. What a value may be is the setting's own call
//! ([`Numeric::set`]).

use std::ffi::{c_void, CStr};
use std::os::raw::{c_char, c_int, c_longlong};

use redis_module::raw::{self, RedisModuleString};

use super::api::{ERR, OK};
use super::context::Context;

/// A numeric config, kept for the module's lifetime.
pub trait Numeric: Sync + 'static {
    /// The name after the module's prefix (`rl.`).
    fn name(&self) -> &'static CStr;
    fn get(&self) -> i64;
    /// Applies `value`, or refuses it with a message the server shows.
    fn set(&self, value: i64) -> Result<(), String>;
    /// Whether it can be set only as the module loads (`CONFIG SET` refuses it).
    fn at_load_only(&self) -> bool {
        false
    }
}

/// Whether the server has module configs (Redis 7.0 or newer).
pub fn available() -> bool {
    optional!(RedisModule_RegisterNumericConfig).is_some()
        && optional!(RedisModule_LoadConfigs).is_some()
}

/// What the server calls to read config `C`: its privdata is the config.
extern "C" fn get_numeric<C: Numeric>(_name: *const c_char, privdata: *mut c_void) -> c_longlong {
    // SAFETY: `register_numeric` passed a `&'static C` as this config's privdata.
    let config = unsafe { &*privdata.cast_const().cast::<C>() };
    config.get()
}

/// What the server calls to change config `C`.
extern "C" fn set_numeric<C: Numeric>(
    _name: *const c_char,
    value: c_longlong,
    privdata: *mut c_void,
    err: *mut *mut RedisModuleString,
) -> c_int {
    // SAFETY: as in `get_numeric`.
    let config = unsafe { &*privdata.cast_const().cast::<C>() };
    match config.set(value) {
        Ok(()) => OK,
        Err(message) => {
            // SAFETY: `err` is the out-pointer the server passed to this callback.
            unsafe { set_error(err, &message) };
            ERR
        }
    }
}

/// Hands the server the message of a refused change.
///
/// # Safety
/// `err` must be NULL or the out-pointer the server passed to a set callback.
unsafe fn set_error(err: *mut *mut RedisModuleString, message: &str) {
    if err.is_null() {
        return;
    }
    if let Some(create) = optional!(RedisModule_CreateString) {
        // SAFETY: `err` is the server's valid out-pointer (the caller's contract),
        // and the server takes ownership of the string (made without a context).
        unsafe { *err = create(std::ptr::null_mut(), message.as_ptr().cast(), message.len()) };
    }
}

impl Context {
    /// Registers `config` as a numeric config starting at `value`, with the
    /// server's bounds `min ..= max`; false if the server refused it or has no
    /// configs.
    pub fn register_numeric<C: Numeric>(
        self,
        config: &'static C,
        value: i64,
        min: i64,
        max: i64,
    ) -> bool {
        let Some(register) = optional!(RedisModule_RegisterNumericConfig) else {
            return false;
        };
        // SAFETY: `self` is the load context; the name is a NUL-terminated static;
        // the callbacks match the server's signatures, and privdata is `config`, a
        // static the server only hands back to them.
        let status = unsafe {
            register(
                self.raw(),
                config.name().as_ptr(),
                value,
                if config.at_load_only() {
                    raw::REDISMODULE_CONFIG_IMMUTABLE
                } else {
                    raw::REDISMODULE_CONFIG_DEFAULT
                },
                min,
                max,
                Some(get_numeric::<C>),
                Some(set_numeric::<C>),
                None,
                std::ptr::from_ref(config).cast_mut().cast::<c_void>(),
            )
        };
        status == OK
    }

    /// Applies what redis.conf or `MODULE LOADEX … CONFIG` set, once every config is
    /// registered; false if one of those values is not valid (the server logs which).
    pub fn load_configs(self) -> bool {
        let Some(load_configs) = optional!(RedisModule_LoadConfigs) else {
            return false;
        };
        // SAFETY: `self` is the load context, after every config was registered.
        unsafe { load_configs(self.raw()) == OK }
    }
}
