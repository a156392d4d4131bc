#!/usr/bin/env bash
# The Node client's tests (node's own test runner) against the two servers that
# scripts/clients.sh starts: RL_TEST_MODULE_URL (module) and RL_TEST_LIBRARY_URL
# (library only), through node-redis and through ioredis; servers of their own for the
# deadline and fail modes (stopped, killed, paused) and re-detection; the generated
# surface (up to date, and a command added to the table); every clients/headers.json
# case through a structured-field parser; the types (tsc); the stores for
# express-rate-limit and @fastify/rate-limit (apps over HTTP); the package (npm pack,
# with its LICENSE, installed into an empty project).
#
# Installs what it needs: Node.js 18+ and npm (from apt when missing and run as root),
# then the dev dependencies (npm ci: redis, ioredis, typescript, express,
# structured-headers, express-rate-limit, fastify, @fastify/rate-limit) into
# clients/node/node_modules. Exits 77, after saying why, only
# when Node.js cannot be had.
set -euo pipefail
cd "$(dirname "$0")"

say() { echo "clients/node: $*"; }

node_major() { node -p 'process.versions.node.split(".")[0]' 2>/dev/null || echo 0; }

if ! command -v node >/dev/null 2>&1 || ! command -v npm >/dev/null 2>&1; then
  if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
    say "installing Node.js and npm from apt"
    export DEBIAN_FRONTEND=noninteractive
    pkgs=()
    command -v node >/dev/null 2>&1 || pkgs+=(nodejs)
    command -v npm >/dev/null 2>&1 || pkgs+=(npm)
    if ! { apt-get update -qq && apt-get install -y -qq --no-install-recommends "${pkgs[@]}" >/dev/null; }; then
      say "apt-get could not install ${pkgs[*]}"
    fi
  fi
fi
if ! command -v node >/dev/null 2>&1; then
  say "skipped: Node.js is not installed (and apt-get is not available as root); install Node.js 18 or newer"
  exit 77
fi
major=$(node_major)
[[ $major =~ ^[0-9]+$ ]] || major=0
if ((major < 18)); then
  say "skipped: Node.js $(node --version) is too old; the client needs Node.js 18 or newer"
  exit 77
fi
if ! command -v npm >/dev/null 2>&1; then
  say "skipped: npm is missing (Node.js $(node --version) is there); install npm"
  exit 77
fi

if [ -z "${RL_TEST_MODULE_URL:-}" ] || [ -z "${RL_TEST_LIBRARY_URL:-}" ]; then
  echo "clients/node: RL_TEST_MODULE_URL and RL_TEST_LIBRARY_URL are not set: run scripts/clients.sh node" >&2
  exit 1
fi

say "node $(node --version), npm $(npm --version); npm ci"
npm ci --no-audit --no-fund --loglevel=error
say "testing against $RL_TEST_MODULE_URL (module) and $RL_TEST_LIBRARY_URL (library)"
# The timing tests of test/survive.test.js alone, after the others: files run in
# parallel, and a busy event loop would be measured instead of the client.
node --test $(ls test/*.test.js | grep -v '/survive\.test\.js$')
exec node --test test/survive.test.js
