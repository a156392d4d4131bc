#!/usr/bin/env bash
# The Go client's overhead: RL.GCRA pipelined through the typed API vs the same
# calls raw through the same redigo pool (internal/itest/bench). Prints, last:
#   client-bench go raw_ops=<int> typed_ops=<int> ratio=<typed/raw>
# Env: RL_BENCH_URL (a server with the module or the library; required),
# RL_BENCH_N (20000), RL_BENCH_ROUNDS (21).
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=env.sh
. "$here/env.sh"
rc=0
go_env_setup >&2 || rc=$?
[ "$rc" -eq 0 ] || exit "$rc"
if [ -z "${RL_BENCH_URL:-}" ]; then
  echo "go: RL_BENCH_URL is not set (redis://host:port of a server with RL)" >&2
  exit 2
fi
cd "$here/internal/itest"
go build -o "${TMPDIR:-/tmp}/rl-go-bench.$$" ./bench
trap 'rm -f "${TMPDIR:-/tmp}/rl-go-bench.$$"' EXIT
"${TMPDIR:-/tmp}/rl-go-bench.$$"
