#!/usr/bin/env bash
# `make fuzz`: the library-vs-core differential test on FUZZ_DIFF_CASES sequences,
# then the libFuzzer target over whole command lines for FUZZ_SECONDS (default 60).
# Installs cargo-fuzz when missing.
#
# cargo-fuzz wants nightly flags; RUSTC_BOOTSTRAP lets the stable toolchain accept
# them (no other toolchain can be installed here). No sanitizer: the code under test
# is safe Rust, and panics (failed invariants) are what we look for.
# A crash leaves its input in fuzz/artifacts/; copy it to fuzz/regressions/ so
# `make test` replays it from then on.
set -euo pipefail
cd "$(dirname "$0")/.."
seconds="${FUZZ_SECONDS:-60}"
# First the Functions library against the Rust core, in-process, on more random call
# sequences than `make test` runs (FUZZ_DIFF_CASES, default 1,000,000).
RL_DIFF_CASES="${FUZZ_DIFF_CASES:-1000000}" cargo test -p rl-core --features model --test twin differential
cd fuzz
if ! cargo fuzz --version >/dev/null 2>&1; then
  echo "fuzz: installing cargo-fuzz"
  cargo install cargo-fuzz --locked
fi
mkdir -p corpus/args_and_decisions
cp -n regressions/* corpus/args_and_decisions/ 2>/dev/null || true
export RUSTC_BOOTSTRAP=1
cargo fuzz run --sanitizer none args_and_decisions corpus/args_and_decisions regressions \
  -- -max_total_time="$seconds" -print_final_stats=1
