//! The running command's side of the API: its argument vector, the arity and
//! key-position answers, and the replies.

use std::os::raw::{c_int, c_long, c_longlong};

use redis_module::raw::{RedisModuleCtx, RedisModuleString};

use super::string::bytes_of;
use crate::error::Error;

/// The argument vector of the running command.
pub struct Argv<'a>(&'a [*mut RedisModuleString]);

impl<'a> Argv<'a> {
    /// The vector the server passed, None for NULL.
    ///
    /// # Safety
    /// `argv` must be NULL or point to `argc` live argument strings of the running
    /// command, alive and unmodified for `'a`.
    pub unsafe fn from_raw(argv: *mut *mut RedisModuleString, argc: usize) -> Option<Self> {
        if argv.is_null() {
            return None;
        }
        // SAFETY: `argc` live strings at `argv` (the caller's contract).
        Some(Argv(unsafe { std::slice::from_raw_parts(argv, argc) }))
    }

    /// How many arguments, the command name included.
    pub fn count(&self) -> usize {
        self.0.len()
    }

    /// Argument `i`'s bytes (the command name is 0).
    pub fn bytes(&self, i: usize) -> &'a [u8] {
        // SAFETY: the argument vector of the running command: its strings stay alive
        // and unmodified until the command returns, which outlives 'a.
        unsafe { bytes_of(self.0[i]) }
    }

    /// Argument `i` as the server's string, e.g. to open it as a key.
    pub fn string(&self, i: usize) -> *mut RedisModuleString {
        self.0[i]
    }
}

/// Whether the server only asks where the call's keys are (`getkeys-api`).
pub fn is_keys_position_request(ctx: *mut RedisModuleCtx) -> bool {
    // SAFETY: `ctx` is the running command's context.
    unsafe { rm!(RedisModule_IsKeysPositionRequest)(ctx) != 0 }
}

/// Answers a keys-position request: argument `pos` is a key.
pub fn key_at(ctx: *mut RedisModuleCtx, pos: usize) {
    // SAFETY: `ctx` is the keys-position request's context; the caller passes a
    // position inside the argument vector.
    unsafe { rm!(RedisModule_KeyAtPos)(ctx, pos as c_int) };
}

/// Replies with the server's wrong-number-of-arguments error.
pub fn reply_wrong_arity(ctx: *mut RedisModuleCtx) {
    // SAFETY: `ctx` is the running command's context.
    unsafe { rm!(RedisModule_WrongArity)(ctx) };
}

/// Starts an array reply of `len` elements.
pub fn reply_array(ctx: *mut RedisModuleCtx, len: usize) {
    // SAFETY: `ctx` is the running command's context.
    unsafe { rm!(RedisModule_ReplyWithArray)(ctx, len as c_long) };
}

/// Replies with an array of integers.
pub fn reply_integers<const N: usize>(ctx: *mut RedisModuleCtx, fields: [i64; N]) {
    reply_array(ctx, N);
    for f in fields {
        // SAFETY: `ctx` is the running command's context, inside the array above.
        unsafe { rm!(RedisModule_ReplyWithLongLong)(ctx, f as c_longlong) };
    }
}

/// Replies with `e`. Never panics: it also runs after the guard caught a panic.
pub fn reply_error(ctx: *mut RedisModuleCtx, e: &Error) {
    // Messages never hold NUL (arguments are escaped when echoed), but a CString
    // must not be able to fail here.
    let line = format!("{} {}", e.code(), e).replace('\0', " ");
    let line = std::ffi::CString::new(line).unwrap_or_default();
    if let Some(reply) = optional!(RedisModule_ReplyWithError) {
        // SAFETY: `ctx` is the running command's context; `line` is NUL-terminated.
        unsafe { reply(ctx, line.as_ptr()) };
    }
}
