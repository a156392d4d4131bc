#!/usr/bin/env bash
# `make test`: unit and property tests, the integration suite against real
# redis-server processes on both backends (the module, then the Functions library),
# the HTTP examples, the typed clients' own tests (scripts/clients.sh), and smoke
# runs of the bench and plot drivers.
#
# Works on a plain clone: what needs files from outside the repository is skipped
# with a line saying what and how to enable it, and the skips are listed again at
# the end. Today that is redis-cell (the module CL.THROTTLE replaces), built by
# scripts/redis-cell.sh from RL_VENDOR (a directory holding redis-cell-0.5.0.tar.gz;
# default ../shared/vendor beside the repository) for tests/it/redis_cell.rs.
#
# Env: CARGO (default cargo); RL_MODULE / RL_TESTING_MODULE as set by the Makefile.
set -euo pipefail
cd "$(dirname "$0")/.."
cargo=${CARGO:-cargo}
target=${CARGO_TARGET_DIR:-$PWD/target}
export RL_MODULE=${RL_MODULE:-$target/release/librl.so}
export RL_TESTING_MODULE=${RL_TESTING_MODULE:-$target/testing/librl.so}
skipped=()
err=$(mktemp)
trap 'rm -f "$err"' EXIT

step() { printf '\n== %s\n' "$*"; }

step "what only the tests use"
scripts/deps.sh test || echo "test tools could not be installed: the tests that need them will say they are skipped"

step "unit and property tests"
"$cargo" test -p rl-core --features model
"$cargo" test --lib
"$cargo" build --profile testing --features testing

step "redis-cell for the differential tests"
if cell=$(CARGO="$cargo" scripts/redis-cell.sh 2>"$err"); then
  export RL_REDIS_CELL=$cell
  echo "redis-cell: $cell"
else
  why=$(grep -v '^ *|' "$err" | tail -n 1)
  echo "$why"
  skipped+=("tests/it/redis_cell.rs (RL vs redis-cell): ${why#redis-cell: error: }")
  unset RL_REDIS_CELL
fi

step "integration tests, the module"
"$cargo" test --test '*'
step "integration tests, the Functions library (functions/rl.lua)"
RL_BACKEND=library "$cargo" test --test '*'

step "examples"
scripts/examples.sh
step "typed clients (clients/*: Python, Node, Rust, Go), against the module and the library"
scripts/clients.sh
step "bench and plot smoke"
BENCH_QUICK=1 scripts/bench.sh >/dev/null && echo "bench smoke: ok"
PLOT_QUICK=1 scripts/plot.sh >/dev/null && echo "plot smoke: ok"

echo
if [ ${#skipped[@]} -eq 0 ]; then
  echo "make test: everything ran; nothing skipped"
else
  echo "make test: passed; skipped (needs files outside the repository):"
  for s in "${skipped[@]}"; do echo "  - $s"; done
fi
