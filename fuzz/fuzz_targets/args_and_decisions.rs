//! Argument parsing and the three decision paths with arbitrary bytes
//! (`rl::fuzzing::run` documents the input layout). Run with `make fuzz`.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| {
    rl::fuzzing::run(data);
});
