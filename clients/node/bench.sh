#!/usr/bin/env bash
# Overhead of the Node client (bench.js) against the server at RL_BENCH_URL, which has
# the RL module or the library. Installs the dev dependencies (npm ci) when missing.
set -euo pipefail
cd "$(dirname "$0")"
: "${RL_BENCH_URL:?set RL_BENCH_URL=redis://HOST:PORT (a server with the RL module or library)}"
command -v node >/dev/null 2>&1 || { echo "clients/node: Node.js is not installed" >&2; exit 77; }
[ -d node_modules/ioredis ] && [ -d node_modules/redis ] || npm ci --no-audit --no-fund --loglevel=error
exec node bench.js
