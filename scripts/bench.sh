#!/usr/bin/env bash
# `make bench`: RL's commands side by side with native commands and with the Lua
# scripts people write today, in one run on one server, reported as ratios to INCR.
#
#   BENCH_QUICK=1   smoke mode (a few thousand requests, one run) used by `make test`
#   BENCH_RUNS=n    runs per case (median reported; default 3)
#   BENCH_N=n       requests per pipelined run (default 300000; unpipelined: a third)
#   RL_MODULE=path  the module to load (default target/release/librl.so)
#   BENCH_CELL_ROUNDS=n  rounds of the RL vs redis-cell comparison (default 5; quick: 1)
#   BENCH_CELL=0    skip redis-cell (otherwise built by scripts/redis-cell.sh, from RL_VENDOR)
#
# redis-cell's CL.THROTTLE runs on a second redis-server (same settings) in every
# shape, with RL's CL.THROTTLE parameters. To damp the noise of shared cores, RL.GCRA,
# RL's CL.THROTTLE and redis-cell's run back to back, in alternating order, for a few
# rounds; the ratios reported are medians of the per-round ratios.
set -euo pipefail
cd "$(dirname "$0")/.."

module="${RL_MODULE:-$PWD/target/release/librl.so}"
runs="${BENCH_RUNS:-3}"
n_pipe="${BENCH_N:-300000}"
cell_rounds="${BENCH_CELL_ROUNDS:-5}"
keys=100000
if [ -n "${BENCH_QUICK:-}" ]; then
  runs=1
  n_pipe=3000
  cell_rounds=1
fi
n_single=$((n_pipe / 3))

port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])' 2>/dev/null || echo 7391)
dir=$(mktemp -d)
server_pid=""
cell_pid=""
cleanup() {
  local pid
  for pid in "$server_pid" "$cell_pid"; do
    if [ -n "$pid" ]; then kill "$pid" 2>/dev/null || true; wait "$pid" 2>/dev/null || true; fi
  done
  rm -rf "$dir"
}
trap cleanup EXIT

redis-server --port "$port" --bind 127.0.0.1 --dir "$dir" --save "" --appendonly no \
  --loadmodule "$module" --logfile "$dir/redis.log" &
server_pid=$!
cli() { redis-cli -p "$port" "$@"; }
for _ in $(seq 1 200); do
  cli ping >/dev/null 2>&1 && break
  kill -0 "$server_pid" 2>/dev/null || { cat "$dir/redis.log"; exit 1; }
  sleep 0.05
done

# --- redis-cell on a second server, when scripts/redis-cell.sh can build it ----------
cell_port=""
cell_skip=""
if [ "${BENCH_CELL:-1}" = 0 ]; then
  cell_skip="BENCH_CELL=0"
elif cell_so=$(scripts/redis-cell.sh 2>"$dir/redis-cell.err"); then
  cell_port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])' 2>/dev/null || echo 7392)
  mkdir -p "$dir/cell"
  redis-server --port "$cell_port" --bind 127.0.0.1 --dir "$dir/cell" --save "" --appendonly no \
    --loadmodule "$cell_so" --logfile "$dir/cell/redis.log" &
  cell_pid=$!
  for _ in $(seq 1 200); do
    redis-cli -p "$cell_port" ping >/dev/null 2>&1 && break
    if ! kill -0 "$cell_pid" 2>/dev/null; then
      cell_skip="redis-server with $cell_so did not start: $(tail -n 1 "$dir/cell/redis.log")"
      cell_pid=""
      break
    fi
    sleep 0.05
  done
  if [ -z "$cell_skip" ] && [ "$(redis-cli -p "$cell_port" ping 2>/dev/null)" != PONG ]; then
    cell_skip="redis-server with $cell_so gave no PONG within 10 s"
  fi
else
  cell_skip="scripts/redis-cell.sh failed: $(grep -v '^ *|' "$dir/redis-cell.err" | tail -n 1)"
fi
[ -z "$cell_skip" ] || cell_port=""

# --- the seed's algorithms as Lua scripts, the way users write them today -------
read -r -d '' LUA_FIXED <<'LUA' || true
local t = redis.call('TIME')
local limit, window = tonumber(ARGV[1]), tonumber(ARGV[2])
local n = redis.call('INCRBY', KEYS[1], 1)
if n == 1 then redis.call('PEXPIRE', KEYS[1], window) end
if n > limit then return {0, limit, 0, redis.call('PTTL', KEYS[1]), 0} end
return {1, limit, limit - n, 0, 0}
LUA
read -r -d '' LUA_SLIDING <<'LUA' || true
local t = redis.call('TIME')
local now = t[1] * 1000 + math.floor(t[2] / 1000)
local limit, window = tonumber(ARGV[1]), tonumber(ARGV[2])
redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', now - window)
local count = redis.call('ZCARD', KEYS[1])
if count < limit then
  redis.call('ZADD', KEYS[1], now, now .. '-' .. math.random(1000000000))
  redis.call('PEXPIRE', KEYS[1], window)
  return {1, limit, limit - count - 1, 0, window}
end
return {0, limit, 0, 0, 0}
LUA
read -r -d '' LUA_BUCKET <<'LUA' || true
local t = redis.call('TIME')
local now = t[1] * 1000 + math.floor(t[2] / 1000)
local cap, rate = tonumber(ARGV[1]), tonumber(ARGV[2]) / tonumber(ARGV[3])
local v = redis.call('HMGET', KEYS[1], 'tokens', 'ts')
local tokens = math.min(cap, (tonumber(v[1]) or cap) + (now - (tonumber(v[2]) or now)) * rate)
local allowed = 0
if tokens >= 1 then
  tokens = tokens - 1
  allowed = 1
  redis.call('HSET', KEYS[1], 'tokens', tokens, 'ts', now)
  redis.call('PEXPIRE', KEYS[1], math.ceil((cap - tokens) / rate))
end
return {allowed, cap, math.floor(tokens), 0, 0}
LUA
sha_fixed=$(cli SCRIPT LOAD "$LUA_FIXED")
sha_sliding=$(cli SCRIPT LOAD "$LUA_SLIDING")
sha_bucket=$(cli SCRIPT LOAD "$LUA_BUCKET")

# name | the command (KEY stands for the key) | the commandstats entry it is measured by
cases=(
  "INCR|INCR KEY|incr"
  "SET PX|SET KEY 1 PX 60000|set"
  "HSET 2 fields|HSET KEY tokens 1 ts 2|hset"
  "ZADD|ZADD KEY 1 m|zadd"
  "RL.FIXED|RL.FIXED KEY 1000000 1m|RL.FIXED"
  "RL.SLIDING|RL.SLIDING KEY 128 1m|RL.SLIDING"
  "RL.BUCKET|RL.BUCKET KEY 1000000 1000 1s|RL.BUCKET"
  "RL.GCRA|RL.GCRA KEY 1000000 1000 1s|RL.GCRA"
  "CL.THROTTLE|CL.THROTTLE KEY 999999 1000 1|CL.THROTTLE"
  "RL.SLIDINGCOUNTER|RL.SLIDINGCOUNTER KEY 1000000 1m|RL.SLIDINGCOUNTER"
  "Lua fixed|EVALSHA $sha_fixed 1 KEY 1000000 60000|evalsha"
  "Lua sliding|EVALSHA $sha_sliding 1 KEY 128 60000|evalsha"
  "Lua bucket|EVALSHA $sha_bucket 1 KEY 1000000 1000 1000|evalsha"
)

median() { sort -n | awk '{a[NR]=$1} END {if (NR==0) print 0; else print a[int((NR+1)/2)]}'; }

# One redis-benchmark run: prints ops/s and the server's usec_per_call.
# [port] defaults to RL's server. (redis-cell's commandstats entry is lower case.)
run_once() {
  local command=$1 stat=$2 pipeline=$3 keyspace=$4 n=$5 p=${6:-$port} key
  if [ "$keyspace" = hot ]; then key="bench:hot"; else key="bench:__rand_int__"; fi
  redis-cli -p "$p" FLUSHALL >/dev/null
  redis-cli -p "$p" CONFIG RESETSTAT >/dev/null
  local rps
  # The command is split into words on purpose.
  # shellcheck disable=SC2086
  rps=$(redis-benchmark -p "$p" -n "$n" -r "$keys" -P "$pipeline" -c 50 --csv \
        ${command//KEY/$key} 2>/dev/null | tail -n 1 | awk -F'","' '{gsub(/"/,"",$2); print $2}')
  local usec
  usec=$(redis-cli -p "$p" INFO commandstats | tr -d '\r' |
         awk -F'[:,=]' -v s="cmdstat_$stat" 'tolower($1) == tolower(s) {print $7}')
  echo "${rps:-0} ${usec:-0}"
}

# RL.GCRA, RL's CL.THROTTLE and redis-cell's, back to back for cell_rounds rounds (the
# order alternating), in one shape. Sets ops/usec[CL.THROTTLE (redis-cell)] (medians)
# and prints one summary row: medians of the per-round ratios
# (ops/s: RL / redis-cell; usec/call: redis-cell / RL, so higher is better in both).
cell_compare() { # <title> <pipeline> <keyspace> <n>
  local title=$1 pipeline=$2 keyspace=$3 n=$4 round gcra rl cell rows=()
  local gcra_command gcra_stat rl_command rl_stat cell_name="CL.THROTTLE (redis-cell)"
  IFS='|' read -r _ gcra_command gcra_stat <<<"$(printf '%s\n' "${cases[@]}" | grep '^RL.GCRA|')"
  IFS='|' read -r _ rl_command rl_stat <<<"$(printf '%s\n' "${cases[@]}" | grep '^CL.THROTTLE|')"
  for round in $(seq 1 "$cell_rounds"); do
    if ((round % 2)); then
      gcra=$(run_once "$gcra_command" "$gcra_stat" "$pipeline" "$keyspace" "$n")
      rl=$(run_once "$rl_command" "$rl_stat" "$pipeline" "$keyspace" "$n")
      cell=$(run_once "$rl_command" cl.throttle "$pipeline" "$keyspace" "$n" "$cell_port")
    else
      cell=$(run_once "$rl_command" cl.throttle "$pipeline" "$keyspace" "$n" "$cell_port")
      rl=$(run_once "$rl_command" "$rl_stat" "$pipeline" "$keyspace" "$n")
      gcra=$(run_once "$gcra_command" "$gcra_stat" "$pipeline" "$keyspace" "$n")
    fi
    rows+=("$gcra $rl $cell")
  done
  ops[$cell_name]=$(printf '%s\n' "${rows[@]}" | awk '{print $5}' | median)
  usec[$cell_name]=$(printf '%s\n' "${rows[@]}" | awk '{print $6}' | median)
  # Columns of a row: GCRA ops, GCRA usec, RL CL ops, RL CL usec, cell ops, cell usec.
  local ratios=() pair
  for pair in 1/5 6/2 3/5 6/4; do
    ratios+=("$(printf '%s\n' "${rows[@]}" | ratio_median "${pair%/*}" "${pair#*/}")")
  done
  cell_summary+=("$title|${ratios[*]}")
}
cell_summary=()
# ratio_median <i> <j>: the median over the rows on stdin of column i / column j.
ratio_median() {
  awk -v i="$1" -v j="$2" '{ if ($j > 0) printf "%.4f\n", $i / $j; else print 0 }' | median
}

printf '\nRL benchmark: %s, redis-server %s, %s cores, %s run(s) per case (median)\n' \
  "$(date -u +%Y-%m-%d)" "$(redis-server --version | awk '{print $3}' | cut -d= -f2)" "$(nproc)" "$runs"

for shape in "pipelined -P 16|16|random" "pipelined -P 16, one hot key|16|hot" \
             "unpipelined|1|random" "unpipelined, one hot key|1|hot"; do
  IFS='|' read -r title pipeline keyspace <<<"$shape"
  n=$n_pipe; [ "$pipeline" = 1 ] && n=$n_single
  declare -A ops=() usec=()
  for c in "${cases[@]}"; do
    IFS='|' read -r name command stat <<<"$c"
    results=()
    for _ in $(seq 1 "$runs"); do results+=("$(run_once "$command" "$stat" "$pipeline" "$keyspace" "$n")"); done
    ops[$name]=$(printf '%s\n' "${results[@]}" | awk '{print $1}' | median)
    usec[$name]=$(printf '%s\n' "${results[@]}" | awk '{print $2}' | median)
  done
  names=()
  for c in "${cases[@]}"; do names+=("${c%%|*}"); done
  if [ -n "$cell_port" ]; then
    cell_compare "$title" "$pipeline" "$keyspace" "$n"
    names+=("CL.THROTTLE (redis-cell)")
  fi
  keyspace_text="$keys random keys"; [ "$keyspace" = hot ] && keyspace_text="one key"
  printf '\n### %s (%s, %s requests)\n\n' "$title" "$keyspace_text" "$n"
  printf '| command | ops/s | × INCR | × RL.FIXED | usec/call (server) | × INCR |\n|---|---:|---:|---:|---:|---:|\n'
  for name in "${names[@]}"; do
    awk -v name="$name" -v o="${ops[$name]}" -v oi="${ops[INCR]}" -v of="${ops[RL.FIXED]}" \
      -v u="${usec[$name]}" -v ui="${usec[INCR]}" \
      'BEGIN { printf "| %s | %.0f | %.2f | %.2f | %.2f | %.2f |\n", name, o, (oi > 0 ? o / oi : 0),
               (of > 0 ? o / of : 0), u, (u > 0 ? ui / u : 0) }'
  done
  unset ops usec
done

# --- RL vs redis-cell -------------------------------------------------------------
if [ -n "$cell_port" ]; then
  printf '\n### RL vs redis-cell 0.5.0 CL.THROTTLE (second server, same settings; medians of %s per-round ratios)\n\n' "$cell_rounds"
  printf '| shape | RL.GCRA ops/s × | RL.GCRA usec/call × | RL CL.THROTTLE ops/s × | RL CL.THROTTLE usec/call × |\n|---|---:|---:|---:|---:|\n'
  for row in "${cell_summary[@]}"; do
    IFS='|' read -r title ratio <<<"$row"
    read -r a b c d <<<"$ratio"
    printf '| %s | %.2f | %.2f | %.2f | %.2f |\n' "$title" "$a" "$b" "$c" "$d"
  done
  echo
  echo "(ops/s: RL's divided by redis-cell's; usec/call: redis-cell's divided by RL's, so higher is better in both.)"
else
  printf '\nredis-cell rows skipped: %s\n' "$cell_skip"
fi

# --- memory per key -----------------------------------------------------------------
# Key names of 21 bytes (as in issue 13): the prefix, then zeros and 42.
key21() { printf '%s%0*d' "$1" $((21 - ${#1})) 42; }
# shellcheck disable=SC2016 # the backquotes are markdown
mem_row() { # <label> <key>
  printf '| %s | `%s` | %s |  |\n' "$1" "$(cli GET "$2" 2>/dev/null | head -c 40)" "$(cli MEMORY USAGE "$2")"
}
cli FLUSHALL >/dev/null
big=9007199254740991
k_fixed=$(key21 rl:fixed:); k_gcra=$(key21 rl:gcra:); k_cell=$(key21 rl:cell:)
k_sc=$(key21 rl:sc:); k_sc_big=$(key21 rl:scbig:); k_bucket=$(key21 rl:bucket:)
cli RL.FIXED "$k_fixed" 100 1m >/dev/null
# Slow refills, so the keys (which expire when the limiter is full again) outlive the table.
cli RL.GCRA "$k_gcra" 100 1 1h >/dev/null
cli CL.THROTTLE "$k_cell" 99 1 3600 >/dev/null
cli RL.SLIDINGCOUNTER "$k_sc" 100 1m >/dev/null
# The counter at its largest below 10^9: a previous window of 999,999,999, as many now.
now_ms=$(cli TIME | awk 'NR == 1 {s = $1} NR == 2 {printf "%.0f", s * 1000 + int($1 / 1000)}')
hour_start=$((now_ms - now_ms % 3600000))
cli SET "$k_sc_big" "$((hour_start - 3600000)) 999999999 0" PXAT "$((hour_start + 3600000))" >/dev/null
cli RL.SLIDINGCOUNTER "$k_sc_big" "$big" 1h COST 999999999 >/dev/null
cli RL.BUCKET "$k_bucket" 100 10 1s >/dev/null
printf '\n### Memory (MEMORY USAGE, key names of 21 bytes)\n\n| key | value | bytes | per unit |\n|---|---|---:|---:|\n'
mem_row "RL.FIXED counter" "$k_fixed"
mem_row "RL.GCRA TAT (ns)" "$k_gcra"
mem_row "CL.THROTTLE TAT (ns)" "$k_cell"
if [ -n "$cell_port" ]; then
  redis-cli -p "$cell_port" FLUSHALL >/dev/null
  redis-cli -p "$cell_port" CL.THROTTLE "$k_cell" 99 1 3600 >/dev/null
  # shellcheck disable=SC2016 # the backquotes are markdown
  printf '| redis-cell CL.THROTTLE TAT (ns) | `%s` | %s |  |\n' \
    "$(redis-cli -p "$cell_port" GET "$k_cell" | head -c 40)" "$(redis-cli -p "$cell_port" MEMORY USAGE "$k_cell")"
fi
mem_row "RL.SLIDINGCOUNTER, first call" "$k_sc"
mem_row "RL.SLIDINGCOUNTER, counts 999999999" "$k_sc_big"
printf '| RL.BUCKET hash | | %s | |\n' "$(cli MEMORY USAGE "$k_bucket")"
for units in 10 128 1000; do
  k=$(key21 "rl:sliding:$units:")
  cli RL.SLIDING "$k" 100000 1h COST "$units" >/dev/null
  bytes=$(cli MEMORY USAGE "$k")
  awk -v u="$units" -v b="$bytes" 'BEGIN { printf "| RL.SLIDING, %d units | | %d | %.1f |\n", u, b, b / u }'
done
echo
echo "(× INCR: ops/s ratio; for usec/call, INCR's time divided by the command's, so higher is better in both.)"
