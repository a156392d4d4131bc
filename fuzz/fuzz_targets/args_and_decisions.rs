//! Whole command lines with arbitrary bytes through RL's commands over the
//! in-memory keyspace (`rl_core::fuzzing::run` documents the input layout). Run
//! with `make fuzz`.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| {
    rl_core::fuzzing::run(data);
});
