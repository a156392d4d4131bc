//! The integration tests, one binary: every file here is a module run against real
//! redis-server processes (`common`) or clusters of them (`topology`), once with the
//! module and once with the Functions library (`RL_BACKEND=library`).
//!
//! One binary builds and links `common` and the test dependencies once, not once per
//! file. Run one file's tests with its module path: `cargo test --test it gcra::`.

mod common;
mod topology;

mod acl;
mod acquire;
mod all;
mod aof_expiry;
mod bucket;
mod cluster;
mod common_rules;
mod debit;
mod dist;
mod docs;
mod ecosystem;
mod fixed;
mod gcra;
mod keyspace_events;
mod library;
mod memory;
mod mixed_replication;
mod monitoring;
mod penalty;
mod quota;
mod redis_cell;
mod refund;
mod replication;
mod robustness;
mod server_time;
mod settings;
mod shadow;
mod share;
mod sliding;
mod sliding_counter;
mod table;
mod top;
mod version;
mod write_failures;
