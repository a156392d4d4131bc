//! Helpers shared by rl-core's integration tests.

pub mod lua_twin;
pub mod vectors;
