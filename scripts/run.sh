#!/usr/bin/env bash
# Starts redis-server in the foreground with the module loaded: `make run`.
# PORT (default 6379) picks the port; the data directory is target/run-<port>.
# LIBRARY=1 (`make run LIBRARY=1`) starts it without the module and loads the
# Functions library functions/rl.lua instead (FCALL rl_fixed 1 key ...).
set -euo pipefail
cd "$(dirname "$0")/.."

port="${PORT:-6379}"
module="$PWD/target/release/librl.so"
dir="$PWD/target/run-$port"
mkdir -p "$dir"

library="${RL_LIBRARY:-$PWD/functions/rl.lua}"
with_library="${LIBRARY:-}"
[ "$with_library" = 0 ] && with_library=""

if [ -z "$with_library" ] && [ ! -f "$module" ]; then
  echo "run: $module is missing; build it with 'make build'." >&2
  exit 1
fi
if command -v redis-cli >/dev/null 2>&1 && redis-cli -p "$port" ping >/dev/null 2>&1; then
  echo "run: something already answers on port $port (a redis-server service?)." >&2
  echo "     Stop it, or pick another port: make run PORT=6380" >&2
  exit 1
fi

# The server runs in the foreground of this script; Ctrl-C stops it.
if [ -n "$with_library" ]; then
  redis-server --port "$port" --dir "$dir" --save "" --appendonly no &
else
  redis-server --port "$port" --dir "$dir" --save "" --appendonly no \
    --loadmodule "$module" &
fi
server=$!
trap 'kill -INT "$server" 2>/dev/null; wait "$server"; exit 0' INT TERM
for _ in $(seq 1 100); do
  redis-cli -p "$port" ping >/dev/null 2>&1 && break
  kill -0 "$server" 2>/dev/null || { wait "$server"; exit 1; }
  sleep 0.1
done

if [ -n "$with_library" ]; then
  RL_LIBRARY="$library" scripts/load-library.sh "127.0.0.1:$port" >/dev/null ||
    { kill -INT "$server"; wait "$server"; exit 1; }
  cat <<MSG

  RL's Functions library (no module) is loaded in redis-server on port $port.
  In another terminal, try:

    redis-cli -p $port FCALL rl_fixed          1 try:fixed 10 1m         # 10 per minute, fixed window
    redis-cli -p $port FCALL rl_sliding        1 try:sliding 5 1m        # 5 in any minute, sliding log
    redis-cli -p $port FCALL rl_slidingcounter 1 try:counter 100 1m      # 100 a minute, constant memory
    redis-cli -p $port FCALL rl_bucket         1 try:bucket 10 1 1s      # bucket of 10, refills 1 per second
    redis-cli -p $port FCALL rl_gcra           1 try:gcra 10 1 1s        # the same limiter in one integer
    redis-cli -p $port FCALL rl_gcra           1 try:queue 2 1 1s DELAY 5s   # wait your turn (reply field 4)
    redis-cli -p $port FCALL rl_gcra           1 try:tokens 1000 100 1s DEBIT 300   # charge a cost known only after the work
    redis-cli -p $port FCALL rl_penalty        1 try:login 5 15m 1m 1h   # 5 strikes in 15 min block 1 min, then 2, 4 … up to 1 h
    redis-cli -p $port FCALL rl_acquire        1 try:jobs 3 30s job-1    # at most 3 at once, leases of 30 s
    redis-cli -p $port FCALL rl_release        1 try:jobs job-1
    redis-cli -p $port FCALL rl_all 2 try:second try:day FIXED 10 1s FIXED 1000 1d

  Each reply is: allowed, limit, remaining (RL.PENALTY: strikes left), retry_after_ms
  (with DELAY: the wait), reset_after_ms. More in README.md and docs/commands.md. Stop the server with Ctrl-C.

MSG
  wait "$server"
  exit 0
fi

cat <<MSG

  RL is loaded in redis-server on port $port. In another terminal, try:

    redis-cli -p $port RL.FIXED          try:fixed 5 1m          # 5 per minute, fixed window
    redis-cli -p $port RL.SLIDING        try:sliding 5 1m        # 5 in any minute, sliding log
    redis-cli -p $port RL.SLIDINGCOUNTER try:counter 100 1m      # 100 a minute, constant memory
    redis-cli -p $port RL.BUCKET         try:bucket 10 1 1s      # bucket of 10, refills 1 per second
    redis-cli -p $port RL.GCRA           try:gcra 10 1 1s        # the same limiter in one integer
    redis-cli -p $port RL.GCRA           try:queue 2 1 1s DELAY 5s   # wait your turn (reply field 4)
    redis-cli -p $port RL.GCRA           try:tokens 1000 100 1s DEBIT 300   # charge a cost known only after the work
    redis-cli -p $port RL.PENALTY        try:login 5 15m 1m 1h   # 5 strikes in 15 min block 1 min, then 2, 4 … up to 1 h
    redis-cli -p $port CL.THROTTLE       try:cell 15 30 60       # redis-cell's command
    redis-cli -p $port RL.ACQUIRE        try:jobs 3 30s job-1    # at most 3 at once, leases of 30 s
    redis-cli -p $port RL.RELEASE        try:jobs job-1
    redis-cli -p $port RL.ALL 2 try:second try:day FIXED 10 1s FIXED 1000 1d

  Each reply is: allowed, limit, remaining (RL.PENALTY: strikes left), retry_after_ms
  (with DELAY: the wait), reset_after_ms. More in README.md and docs/commands.md. Stop the server with Ctrl-C.

MSG
wait "$server"
