#!/usr/bin/env bash
# `make bench`: RL's commands against the floor of the module API, native commands,
# redis-cell and the Functions library, interleaved in rounds so the ratios hold on
# a noisy machine. The driver is scripts/bench.py; this script builds what it needs.
#
#   BENCH_ROUNDS=n     rounds (default 11); every ratio is the median of per-round ratios
#   BENCH_SECONDS=s    about how long a workload runs per round (default 0.3)
#   BENCH_SHAPES=a,b   only these shapes (names as in the table titles' first words:
#                      pipelined, "pipelined, hot key", unpipelined, "unpipelined, hot key",
#                      "pipelined, replica", "unpipelined, replica")
#   BENCH_WORKLOADS="a;b" only these workloads (names as in the tables' first column)
#   BENCH_QUICK=1      smoke mode used by `make test`: one short round of everything
#   BENCH_CELL=0       skip redis-cell (otherwise built by scripts/redis-cell.sh, from RL_VENDOR)
#   BENCH_LIBRARY=path the Functions library (default functions/rl.lua when present)
#   RL_MODULE=path     the module to load (default target/release/librl.so)
#
# The floor module (bench/floor/floor.c, never shipped) is built by scripts/floor.sh.
set -euo pipefail
cd "$(dirname "$0")/.."
err=$(mktemp)
trap 'rm -f "$err"' EXIT

export RL_MODULE="${RL_MODULE:-$PWD/target/release/librl.so}"
[ -f "$RL_MODULE" ] || { echo "bench: no module at $RL_MODULE (make build)" >&2; exit 1; }
for tool in python3 redis-server redis-benchmark; do
  command -v "$tool" >/dev/null 2>&1 || { echo "bench: $tool is missing" >&2; exit 1; }
done

# --- the floor module -------------------------------------------------------------
export BENCH_FLOOR_SO=""
if floor_so=$(scripts/floor.sh 2>"$err"); then
  BENCH_FLOOR_SO=$floor_so
else
  echo "bench: $(tail -n 1 "$err")" >&2
fi

# --- redis-cell, on a second server ------------------------------------------------
export BENCH_CELL_SO="" BENCH_CELL_SKIP=""
if [ "${BENCH_CELL:-1}" = 0 ]; then
  BENCH_CELL_SKIP="BENCH_CELL=0"
elif cell_so=$(scripts/redis-cell.sh 2>"$err"); then
  BENCH_CELL_SO=$cell_so
else
  BENCH_CELL_SKIP="scripts/redis-cell.sh failed: $(grep -v '^ *|' "$err" | tail -n 1)"
fi

# --- the Functions library ---------------------------------------------------------
export BENCH_LIBRARY="${BENCH_LIBRARY:-}"
if [ -z "$BENCH_LIBRARY" ] && [ -f functions/rl.lua ]; then
  BENCH_LIBRARY=$PWD/functions/rl.lua
fi

python3 scripts/bench.py
