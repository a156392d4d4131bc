//! The module's load: the entry points the server looks up (`RedisModule_OnLoad`,
//! `RedisModule_OnUnload`, defined by [`entry_points!`] around the crate's own safe
//! `load`), and what the load asks of the server: the API table, module options,
//! commands, the ACL category, and the log it writes to when something is off.

use std::ffi::CStr;
use std::os::raw::c_int;
use std::panic::catch_unwind;

use redis_module::raw;
pub(crate) use redis_module::raw::{RedisModuleCtx, RedisModuleString};

use super::api::{ERR, OK};
use super::call::{entry, Entry};
use super::context::Context;
use super::string::bytes_of;

/// Defines the module's entry points, `RedisModule_OnLoad` and
/// `RedisModule_OnUnload`, at the crate root where it is invoked: the exported
/// symbols must carry the server's C types, so they are written here and only call
/// into [`on_load`] and [`on_unload`]. `$load` is the crate's
/// `fn(Context, &[&[u8]]) -> Result<(), String>`, given the module arguments; its
/// error is logged and fails the load.
macro_rules! entry_points {
    (name: $name:expr, version: $version:expr, load: $load:path $(,)?) => {
        /// Called by the server when it loads the module (`--loadmodule`,
        /// `MODULE LOAD`).
        ///
        /// # Safety
        /// Called only by the server, with its load context and the module arguments.
        #[no_mangle]
        pub unsafe extern "C" fn RedisModule_OnLoad(
            ctx: *mut $crate::server::load::RedisModuleCtx,
            argv: *mut *mut $crate::server::load::RedisModuleString,
            argc: ::std::os::raw::c_int,
        ) -> ::std::os::raw::c_int {
            // SAFETY: the server's own call, with its load context and arguments
            // (this function's contract).
            unsafe { $crate::server::load::on_load(ctx, argv, argc, $name, $version, $load) }
        }

        /// Called by the server on `MODULE UNLOAD`.
        ///
        /// # Safety
        /// Called only by the server, with a context for this module.
        #[no_mangle]
        pub unsafe extern "C" fn RedisModule_OnUnload(
            _ctx: *mut $crate::server::load::RedisModuleCtx,
        ) -> ::std::os::raw::c_int {
            $crate::server::load::on_unload()
        }
    };
}
pub(crate) use entry_points;

/// What the crate does at load, given the load context and the module arguments.
pub type Load = fn(Context, &[&[u8]]) -> Result<(), String>;

/// `RedisModule_OnLoad`'s body: initialises the API table, reads the module
/// arguments and runs `load`, which no panic leaves.
///
/// # Safety
/// `ctx`, `argv` and `argc` must be what the server passed to `RedisModule_OnLoad`.
pub unsafe fn on_load(
    ctx: *mut RedisModuleCtx,
    argv: *mut *mut RedisModuleString,
    argc: c_int,
    name: &CStr,
    version: i32,
    load: Load,
) -> c_int {
    // SAFETY: `ctx` is the server's load context, and this the first API call.
    if !unsafe { init(ctx, name, version) } {
        return ERR;
    }
    let args: Vec<&[u8]> = match usize::try_from(argc) {
        Ok(n) if n > 0 && !argv.is_null() => {
            // SAFETY: the server passes `argc` valid strings that outlive OnLoad.
            let strings = unsafe { std::slice::from_raw_parts(argv, n) };
            strings
                .iter()
                // SAFETY: each string is valid for the whole load (see above).
                .map(|&s| unsafe { bytes_of(s) })
                .collect()
        }
        _ => Vec::new(),
    };
    let ctx = Context::from_raw(ctx);
    // No panic may unwind into the server, not even while loading.
    match catch_unwind(|| load(ctx, &args)) {
        Ok(Ok(())) => OK,
        Ok(Err(message)) => {
            ctx.log_warning(&format!("rl: not loaded: {message}"));
            ERR
        }
        Err(_) => ERR,
    }
}

/// `RedisModule_OnUnload`'s body: frees the constant strings and the filter's context.
pub fn on_unload() -> c_int {
    let _ = catch_unwind(super::names::release);
    let _ = catch_unwind(super::filter::release);
    OK
}

/// Fills in every `RedisModule_*` function pointer the server provides; false if
/// the server refused the module.
///
/// # Safety
/// `ctx` must be the server's load context, and this the first call into the API.
unsafe fn init(ctx: *mut RedisModuleCtx, name: &CStr, version: c_int) -> bool {
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

/// Where a command's keys are, as `(first, last, step)` argument positions.
pub type KeyRange = (i32, i32, i32);

impl Context {
    /// Opening a key for writing must not by itself abort WATCHes or invalidate
    /// client caches: only real writes signal (see [`super::key::Key`]).
    pub fn set_module_options(self) {
        // SAFETY: `self` is the load context; the option is a plain flag.
        unsafe {
            rm!(RedisModule_SetModuleOptions)(
                self.raw(),
                raw::REDISMODULE_OPTION_NO_IMPLICIT_SIGNAL_MODIFIED as c_int,
            )
        };
    }

    /// Writes a warning to the server log.
    pub fn log_warning(self, message: &str) {
        redis_module::Context::new(self.raw()).log_warning(message);
    }

    /// Creates the module's ACL category `name`, or reuses it: after `MODULE UNLOAD`
    /// the server keeps a module's categories, and the next load's
    /// `RedisModule_AddACLCategory` fails with EBUSY. True when commands can be put
    /// in it; false where the server has no module categories (before 7.4).
    pub fn acl_category(self, name: &CStr) -> bool {
        let Some(add) = optional!(RedisModule_AddACLCategory) else {
            return false;
        };
        // SAFETY: `self` is the load context (the only time categories can be
        // added); `name` is NUL-terminated.
        if unsafe { add(self.raw(), name.as_ptr()) } == OK {
            return true;
        }
        let error = std::io::Error::last_os_error();
        if error.kind() == std::io::ErrorKind::ResourceBusy {
            return true;
        }
        self.log_warning(&format!(
            "rl: cannot create the ACL category {}: {error}; commands get @write/@fast only",
            name.to_string_lossy()
        ));
        false
    }

    /// Registers the command `name`, run by `C`; false if the server refused (the
    /// name is taken).
    pub fn create_command<C: Entry>(
        self,
        name: &CStr,
        flags: &CStr,
        (first, last, step): KeyRange,
    ) -> bool {
        // SAFETY: `self` is the load context; name and flags are NUL-terminated;
        // `entry::<C>` has the server's command signature.
        let created = unsafe {
            rm!(RedisModule_CreateCommand)(
                self.raw(),
                name.as_ptr(),
                Some(entry::<C>),
                flags.as_ptr(),
                first,
                last,
                step,
            )
        };
        created == OK
    }
}
