#!/usr/bin/env bash
# The Rust client's overhead: a pipeline of RL.GCRA calls through the typed Batch
# against the same raw calls on the same redis-rs connection (examples/bench.rs).
# Prints `client-bench rust raw_ops=… typed_ops=… ratio=…` as its last line.
#
# Env: RL_BENCH_URL (redis://host:port of a server with the module or the library;
# required), RL_BENCH_N (calls per pipeline, default 20000), RL_BENCH_ROUNDS
# (default 7), CARGO (default cargo).
set -euo pipefail
cd "$(dirname "$0")/../.."
cargo=${CARGO:-cargo}
if [ -z "${RL_BENCH_URL:-}" ]; then
  echo "rust client bench: set RL_BENCH_URL=redis://host:port (a server with RL's module or library)" >&2
  exit 2
fi
exec "$cargo" run -q --release -p rl-client --example bench
