//! The running command's side of the API: the entry point the server calls, the
//! argument vector, the arity and key-position answers, its keys and its replies.

use std::os::raw::{c_int, c_long, c_longlong};

use redis_module::raw::{RedisModuleCtx, RedisModuleString};

use super::api::OK;
use super::context::Context;
use super::key::Key;
use super::string::bytes_of;
use rl_core::error::Error;

/// A command the server can call: what runs inside its entry point.
pub trait Entry {
    /// Runs one call of the command; `argv` is None when the server passed none.
    /// Must not unwind: its own guard turns a panic into an error reply.
    fn call(ctx: Context, argv: Option<Argv<'_>>);
}

/// The entry point the server calls for command `C` (see
/// [`Context::create_command`]).
pub(super) extern "C" fn entry<C: Entry>(
    ctx: *mut RedisModuleCtx,
    argv: *mut *mut RedisModuleString,
    argc: c_int,
) -> c_int {
    let argc = usize::try_from(argc).unwrap_or(0);
    // SAFETY: the server passes `argc` valid argument strings (or NULL) that live
    // for the whole call.
    let argv = unsafe { Argv::from_raw(argv, argc) };
    C::call(Context::from_raw(ctx), argv);
    OK
}

/// The argument vector of the running command.
pub struct Argv<'a>(&'a [*mut RedisModuleString]);

impl<'a> Argv<'a> {
    /// The vector the server passed, None for NULL.
    ///
    /// # Safety
    /// `argv` must be NULL or point to `argc` live argument strings of the running
    /// command, alive and unmodified for `'a`.
    pub(super) unsafe fn from_raw(argv: *mut *mut RedisModuleString, argc: usize) -> Option<Self> {
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
}

impl Context {
    /// Opens argument `i` as a key, for reading and writing. A key lives no longer
    /// than its command: every caller holds it in a local of the call.
    pub fn open_key(self, argv: &Argv, i: usize) -> Key {
        // SAFETY: `self` and `argv` are the running command's (only its entry point
        // makes them), and the key is dropped before the command returns (above).
        unsafe { Key::open(self, argv.0[i]) }
    }

    /// Whether the server only asks where the call's keys are (`getkeys-api`).
    pub fn is_keys_position_request(self) -> bool {
        // SAFETY: `self` is the running command's context.
        unsafe { rm!(RedisModule_IsKeysPositionRequest)(self.raw()) != 0 }
    }

    /// Answers a keys-position request: argument `pos` is a key.
    pub fn key_at(self, pos: usize) {
        // SAFETY: `self` is the keys-position request's context; the caller passes a
        // position inside the argument vector.
        unsafe { rm!(RedisModule_KeyAtPos)(self.raw(), pos as c_int) };
    }

    /// Replies with the server's wrong-number-of-arguments error.
    pub fn reply_wrong_arity(self) {
        // SAFETY: `self` is the running command's context.
        unsafe { rm!(RedisModule_WrongArity)(self.raw()) };
    }

    /// Starts an array reply of `len` elements.
    pub fn reply_array(self, len: usize) {
        // SAFETY: `self` is the running command's context.
        unsafe { rm!(RedisModule_ReplyWithArray)(self.raw(), len as c_long) };
    }

    /// Replies with one integer.
    pub fn reply_integer(self, value: i64) {
        // SAFETY: `self` is the running command's context.
        unsafe { rm!(RedisModule_ReplyWithLongLong)(self.raw(), value as c_longlong) };
    }

    /// Replies with a bulk string of `bytes`.
    pub fn reply_bulk(self, bytes: &[u8]) {
        // SAFETY: `self` is the running command's context; the server copies the
        // `bytes.len()` bytes at `bytes` before returning.
        unsafe {
            rm!(RedisModule_ReplyWithStringBuffer)(self.raw(), bytes.as_ptr().cast(), bytes.len())
        };
    }

    /// Replies `+OK`.
    pub fn reply_ok(self) {
        // SAFETY: `self` is the running command's context; the string is
        // NUL-terminated and static.
        unsafe { rm!(RedisModule_ReplyWithSimpleString)(self.raw(), c"OK".as_ptr()) };
    }

    /// Replies with an array of integers.
    pub fn reply_integers<const N: usize>(self, fields: [i64; N]) {
        self.reply_array(N);
        for f in fields {
            self.reply_integer(f);
        }
    }

    /// Replies with `e`. Never panics: it also runs after the guard caught a panic.
    pub fn reply_error(self, e: &Error) {
        // Messages never hold NUL (arguments are escaped when echoed), but a CString
        // must not be able to fail here.
        let line = format!("{} {}", e.code(), e).replace('\0', " ");
        let line = std::ffi::CString::new(line).unwrap_or_default();
        if let Some(reply) = optional!(RedisModule_ReplyWithError) {
            // SAFETY: `self` is the running command's context; `line` is
            // NUL-terminated.
            unsafe { reply(self.raw(), line.as_ptr()) };
        }
    }
}
