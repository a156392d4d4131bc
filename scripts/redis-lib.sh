# shellcheck shell=bash
# Sourced by scripts that need a throwaway redis-server with the module
# (examples.sh, plot.sh). Callers define die() and say().

# rl_module: the module path — $RL_MODULE, or target/release/librl.so built if missing.
rl_module() {
  local root module
  root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
  module=${RL_MODULE:-$root/target/release/librl.so}
  if [ ! -f "$module" ]; then
    [ -z "${RL_MODULE:-}" ] || die "RL_MODULE=$RL_MODULE does not exist"
    say "building the module (cargo build --release)" >&2
    command -v cargo >/dev/null 2>&1 || die "cargo is missing: install Rust (https://rustup.rs)"
    (cd "$root" && cargo build --release --quiet) >&2
  fi
  echo "$module"
}

# rl_start_redis <dir> [library]: starts redis-server with the module on a free
# loopback port (with "library": without it, and loads the Functions library
# functions/rl.lua, or $RL_LIBRARY), logging to <dir>/redis.log; sets redis_port
# and redis_pid. Waits (10 s at most) for PONG; on failure shows the log and dies.
# The caller stops redis_pid on exit.
rl_start_redis() {
  local dir=$1 backend=${2:-module} module deadline root load=()
  root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
  if [ "$backend" = module ]; then
    module=$(rl_module)
    load=(--loadmodule "$module")
  else
    module="the library (no module)"
  fi
  redis_port=$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
  redis-server --port "$redis_port" --bind 127.0.0.1 --dir "$dir" --save "" --appendonly no \
    "${load[@]}" >"$dir/redis.log" 2>&1 &
  redis_pid=$!
  deadline=$((SECONDS + 10))
  until [ "$(redis-cli -p "$redis_port" ping 2>/dev/null)" = PONG ]; do
    if ! kill -0 "$redis_pid" 2>/dev/null || ((SECONDS >= deadline)); then
      tail -n 20 "$dir/redis.log" | sed 's/^/    | /' >&2
      die "redis-server with $module did not start (no PONG within 10 s; its log is above)"
    fi
    sleep 0.1
  done
  if [ "$backend" != module ]; then
    "$root/scripts/load-library.sh" "127.0.0.1:$redis_port" >/dev/null ||
      die "could not load the library into redis-server on port $redis_port"
  fi
}
