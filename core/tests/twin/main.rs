//! The Functions library (functions/rl.lua) in-process, held to the Rust core with
//! no server: Lua 5.1 (mlua) with Redis 7.0's Functions environment (`twin`) over
//! the in-memory keyspace (rl_core::keyspace).
//!
//! - `vectors`: every vector of vectors/vectors.json, by the core and by the library;
//! - `differential`: random call sequences through both, replies and keys equal;
//! - `library`: the twin at work, and its own Redis semantics;
//! - `calendar`: RL.QUOTA's calendar in Lua against the module's, every zone.
//!
//! One test binary, so the twin and the vectors file are built once.

mod calendar;
mod differential;
mod library;
mod twin;
mod vectors;
mod vectors_file;
