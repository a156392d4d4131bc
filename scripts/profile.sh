#!/usr/bin/env bash
# Where the time goes: runs redis-server under callgrind (instruction counts, which
# are repeatable on a noisy machine), sends CALLS pipelined calls of each command on
# random keys, and prints the instructions per call spent in the command
# (RedisModuleCommandDispatcher / the native command function) and in the main
# pieces under it. Needs valgrind (apt-get install valgrind).
set -euo pipefail
cd "$(dirname "$0")/.."
module="${RL_MODULE:-$PWD/target/release/librl.so}"
calls="${CALLS:-20000}"
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT

profile() { # name, command...
  local name=$1; shift
  local port=$((7400 + RANDOM % 500))
  valgrind --tool=callgrind --callgrind-out-file="$out/$name" \
    redis-server --port "$port" --save "" --appendonly no --loadmodule "$module" \
    --logfile "$out/$name.log" >/dev/null 2>&1 &
  local pid=$!
  for _ in $(seq 1 200); do redis-cli -p "$port" ping >/dev/null 2>&1 && break; sleep 0.1; done
  redis-benchmark -p "$port" -n "$calls" -r 100000 -P 16 -q "$@" >/dev/null 2>&1
  redis-cli -p "$port" shutdown nosave >/dev/null 2>&1 || true
  wait "$pid" || true
  echo "== $name: instructions per call"
  callgrind_annotate --inclusive=yes "$out/$name" 2>/dev/null \
    | grep -E "RedisModuleCommandDispatcher|incrCommand|setCommand|hsetCommand|zaddCommand|rl::commands::reply|Limiter>::apply|RM_Replicate|lookupCommandByCString|moduleCreateArgvFromUserFormat|RM_OpenKey|RM_StringTruncate|RM_HashSet|RM_HashGet|RM_ZsetAdd|RM_SetAbsExpire|dbAdd" \
    | sed -E 's/^ *([0-9,]+) .*\?\?\?:([^ ]+).*/\1 \2/' \
    | awk -v n="$calls" '{gsub(/,/,"",$1); printf "  %8.0f  %s\n", $1 / n, $2}' | head -14
}

profile INCR INCR key:__rand_int__
profile RL.FIXED RL.FIXED key:__rand_int__ 1000000 1m
profile RL.BUCKET RL.BUCKET key:__rand_int__ 1000000 1000 1s
profile RL.SLIDING RL.SLIDING key:__rand_int__ 128 1m
