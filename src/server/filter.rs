//! `CONFIG RESETSTAT` for the module's counters. No server gives a module an event
//! for it, so RL registers a command filter, which the server calls before every
//! command (before its ACL check): the filter acts on a `CONFIG RESETSTAT` whose
//! client's user may run it, and costs every other command a count of its
//! arguments (and, for two-argument commands, a look at the first): about 120
//! instructions a command with the server's own loop, so it is registered only when
//! `rl.config-resetstat` is 1.
//!
//! Needs `RedisModule_CommandFilterGetClientId` (Redis 7.2+, Valkey) to find the
//! caller's user; on Redis 7.0 no filter is registered and `CONFIG RESETSTAT`
//! leaves the module's counters as they are.

use std::os::raw::c_int;
use std::panic::catch_unwind;
use std::ptr;
use std::sync::atomic::{AtomicPtr, Ordering};

use redis_module::raw::{
    RedisModuleCommandFilterCtx, RedisModuleCtx, RedisModuleString, REDISMODULE_CMDFILTER_NOSELF,
};

use super::api::OK;
use super::context::Context;
use super::string::bytes_of;

/// The functions that tell who sends a filtered command and whether their ACL rules
/// allow it (the first is Redis 7.2's), each None where the server lacks it.
macro_rules! acl_api {
    () => {
        (
            optional!(RedisModule_CommandFilterGetClientId),
            optional!(RedisModule_GetClientUserNameById),
            optional!(RedisModule_GetModuleUserFromUserName),
            optional!(RedisModule_ACLCheckCommandPermissions),
        )
    };
}

/// What `CONFIG RESETSTAT` also does.
pub trait ResetStat {
    fn reset();
}

/// A context of the module's own, outside any command, for the one API call that
/// needs one (the client's user name); made when the filter is registered.
static DETACHED: AtomicPtr<RedisModuleCtx> = AtomicPtr::new(ptr::null_mut());

impl Context {
    /// Runs `R::reset` whenever a client that may run `CONFIG RESETSTAT` sends it;
    /// false where the server cannot tell who sends it (Redis 7.0).
    pub fn on_config_resetstat<R: ResetStat>(self) -> bool {
        let (Some(_), Some(_), Some(_), Some(_)) = acl_api!() else {
            return false;
        };
        let register = rm!(RedisModule_RegisterCommandFilter);
        let detached = rm!(RedisModule_GetDetachedThreadSafeContext);
        // SAFETY: `self` is the load context; the detached context lives until the
        // module unloads ([`release`]).
        let own = unsafe { detached(self.raw()) };
        if own.is_null() {
            return false;
        }
        DETACHED.store(own, Ordering::Relaxed);
        // SAFETY: `self` is the load context; the callback never unwinds. NOSELF:
        // the commands RL itself runs need no look.
        let filter = unsafe {
            register(
                self.raw(),
                Some(filter::<R>),
                REDISMODULE_CMDFILTER_NOSELF as c_int,
            )
        };
        !filter.is_null()
    }
}

/// Frees the detached context, at unload (the server drops the filter itself).
pub fn release() {
    let own = DETACHED.swap(ptr::null_mut(), Ordering::Relaxed);
    if own.is_null() {
        return;
    }
    if let Some(free) = optional!(RedisModule_FreeThreadSafeContext) {
        // SAFETY: `own` came from GetDetachedThreadSafeContext and is freed once (the
        // swap above took it); the filter that used it is gone with the module.
        unsafe { free(own) };
    }
}

/// The filter the server calls before every command, on the main thread.
unsafe extern "C" fn filter<R: ResetStat>(fctx: *mut RedisModuleCommandFilterCtx) {
    let _ = catch_unwind(|| {
        // SAFETY: `fctx` is the server's, valid for this call.
        if unsafe { is_config_resetstat(fctx) && may_run(fctx) } {
            R::reset();
        }
    });
}

/// Whether the command is `CONFIG RESETSTAT` (any case).
///
/// # Safety
/// `fctx` must be the filter context the server passed.
unsafe fn is_config_resetstat(fctx: *mut RedisModuleCommandFilterCtx) -> bool {
    // SAFETY: the caller's contract; the functions were resolved at registration.
    unsafe {
        if rm!(RedisModule_CommandFilterArgsCount)(fctx) != 2 {
            return false;
        }
        let arg = |i| bytes_of(rm!(RedisModule_CommandFilterArgGet)(fctx, i));
        arg(0).eq_ignore_ascii_case(b"config") && arg(1).eq_ignore_ascii_case(b"resetstat")
    }
}

/// Whether the client's user may run the command (its ACL rules): a refused
/// `CONFIG RESETSTAT` resets nothing.
///
/// # Safety
/// `fctx` must be the filter context the server passed, holding two arguments.
unsafe fn may_run(fctx: *mut RedisModuleCommandFilterCtx) -> bool {
    let (Some(client_id), Some(user_name), Some(user_of), Some(check)) = acl_api!() else {
        return false;
    };
    let own = DETACHED.load(Ordering::Relaxed);
    // SAFETY: the caller's contract; `own` is the module's detached context; each
    // string and user is freed once, after its last use.
    unsafe {
        let name = user_name(own, client_id(fctx));
        if name.is_null() {
            // A client without a user (the server's own): not a refused one.
            return true;
        }
        let user = user_of(name);
        rm!(RedisModule_FreeString)(own, name);
        if user.is_null() {
            return false;
        }
        let mut argv: [*mut RedisModuleString; 2] = [
            rm!(RedisModule_CommandFilterArgGet)(fctx, 0),
            rm!(RedisModule_CommandFilterArgGet)(fctx, 1),
        ];
        let allowed = check(user, argv.as_mut_ptr(), 2) == OK;
        rm!(RedisModule_FreeModuleUser)(user);
        allowed
    }
}
