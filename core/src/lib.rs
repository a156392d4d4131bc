//! RL's rate limiters without a server: everything the module and its tests share
//! that needs no Redis.
//!
//! - `algorithms`: the limiters as pure functions of (state, now, params, amount);
//! - `decimal`: the one decimal parser, for arguments and stored state; `codec`:
//!   how numbers are written into keys;
//! - `limits`: the bounds on every number (2^53 − 1, ten years);
//! - `args`: the positional arguments every command shares; `options`: the options
//!   after them (COST, REFUND, DEBIT, DELAY) and their one parser; `error`: every
//!   failure and its code;
//! - `params`: each command's parameters from its arguments;
//! - `keyspace`: an in-memory model of the Redis keys RL uses, and `memory`: RL's
//!   commands run over it, as the module runs them over Redis keys (for tests,
//!   the Functions library's in-process check and the fuzzer; behind the `model`
//!   feature, which the module never enables);
//! - `all`: RL.ALL's line (its policies) and its combined reply;
//! - `table`: every command, written once; `command`: a command as a type
//!   ([`command::Spec`]) and how it decides on and writes its key
//!   ([`command::Runs`]); `commands`: every command's type and the one list of
//!   them, from which RL.ALL's policies and the dispatch by name follow; `exec`:
//!   RL.ALL, written once over any store;
//! - `store`: where state lives ([`store::Store`]: the reads RL needs and the
//!   native commands it writes with) and every command's storage, written once
//!   over any store;
//! - `top`: RL.TOP's sketch of the keys rejected most in the last minute or so.
//!
//! This crate cannot see the server: the module crate (`rl`) depends on it, never
//! the other way round, so the layering is the compiler's to enforce. It builds and
//! tests without bindgen or libclang.

#![forbid(unsafe_code)]

pub mod algorithms;
pub mod all;
pub mod args;
pub mod calendar;
pub mod codec;
pub mod command;
#[macro_use]
pub mod commands;
pub mod decimal;
pub mod error;
pub mod exec;
// The in-memory model of Redis keys and RL's commands over it: for the tests, the
// Lua twin and the fuzzer, never compiled into the module.
#[cfg(feature = "model")]
#[doc(hidden)]
pub mod fuzzing;
#[cfg(feature = "model")]
pub mod keyspace;
pub mod limits;
#[cfg(feature = "model")]
pub mod memory;
pub mod options;
pub mod params;
pub mod store;
pub mod table;
pub mod top;
