//! The contexts the server hands the module: [`Context`], a command's or the load's
//! (`RedisModuleCtx`), and [`InfoContext`], the INFO callback's
//! (`RedisModuleInfoCtx`). Only this module makes them, from the pointers the
//! server passes to its entry points (`call.rs`, `load.rs`, `info.rs`), so the
//! layers above hold a context only while the server's call that made it runs. What
//! each can do is in the file of that API: replies and keys in `call.rs`, load-time
//! registration in `load.rs` and `config.rs`, INFO fields in `info.rs`.

use redis_module::raw::{RedisModuleCtx, RedisModuleInfoCtx};

/// The context of the running command, or of the module's load.
#[derive(Clone, Copy)]
pub struct Context(*mut RedisModuleCtx);

impl Context {
    /// The context the server passed to one of the module's entry points, valid
    /// until that entry point returns.
    pub(super) fn from_raw(ctx: *mut RedisModuleCtx) -> Self {
        Context(ctx)
    }

    pub(super) fn raw(self) -> *mut RedisModuleCtx {
        self.0
    }
}

/// The context of the INFO callback, for the module's section.
#[derive(Clone, Copy)]
pub struct InfoContext(*mut RedisModuleInfoCtx);

impl InfoContext {
    /// The context the server passed to the INFO callback, valid until it returns.
    pub(super) fn from_raw(ctx: *mut RedisModuleInfoCtx) -> Self {
        InfoContext(ctx)
    }

    pub(super) fn raw(self) -> *mut RedisModuleInfoCtx {
        self.0
    }
}
