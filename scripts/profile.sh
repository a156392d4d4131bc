#!/usr/bin/env bash
# Where the instructions go: runs redis-server under callgrind (instruction counts,
# repeatable on a noisy machine), sends CALLS pipelined calls (-P 16) of each
# workload on 100,000 random keys, with the arguments `make bench` uses, and prints
# per call:
#   request  everything the server does for one request (processInputBuffer:
#            parsing, the command, propagation, the reply), syscalls excepted
#   command  the command itself (RedisModuleCommandDispatcher, or the native
#            command's function)
# and the module API functions (RM_*) it calls, with what is left outside them (the
# module's own code: parsing, deciding, formatting, glue). The floor module (scripts/floor.sh) runs
# in RL's server; redis-cell (scripts/redis-cell.sh) in a server of its own.
# Needs valgrind (apt-get install valgrind). PROFILE_ONLY="RL.FIXED FLOOR.FIXED"
# limits the workloads (names as below, `_` for each space). RL.SHARE's budget is one
# key, its tenant drawn from 10 or 10,000 names (the optional fifth field: how many
# values __rand_int__ takes, 100,000 unless given).
set -euo pipefail
cd "$(dirname "$0")/.."
module="${RL_MODULE:-$PWD/target/release/librl.so}"
calls="${CALLS:-20000}"
floor=$(scripts/floor.sh)
cell=$(scripts/redis-cell.sh 2>/dev/null || true)
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT

# name|modules|command (KEY stands for the key)|the command's function in the profile[|-r]
workloads=(
  "INCR|rl|INCR KEY|incrCommand"
  "SET PX|rl|SET KEY 1 PX 60000|setCommand"
  "FLOOR.FIXED|rl|FLOOR.FIXED KEY 1000000000000 1m|RedisModuleCommandDispatcher"
  "RL.FIXED|rl|RL.FIXED KEY 1000000000000 1m|RedisModuleCommandDispatcher"
  "RL.FIXED rejected|rl|RL.FIXED KEY 1 1m COST 2|RedisModuleCommandDispatcher"
  "RL.SLIDINGCOUNTER|rl|RL.SLIDINGCOUNTER KEY 1000000000000 1m|RedisModuleCommandDispatcher"
  "RL.QUOTA (America/New_York; month)|rl|RL.QUOTA KEY 1000000000000 month TZ America/New_York|RedisModuleCommandDispatcher"
  "RL.QUOTA (America/New_York; month; key absent)|rl|RL.QUOTA KEY 1000000000000 month TZ America/New_York|RedisModuleCommandDispatcher|100000000"
  "FLOOR.GCRA|rl|FLOOR.GCRA KEY 1000000000 1000 1h|RedisModuleCommandDispatcher"
  "RL.GCRA|rl|RL.GCRA KEY 1000000000 1000 1h|RedisModuleCommandDispatcher"
  "CL.THROTTLE (RL)|rl|CL.THROTTLE KEY 999999999 1000 3600|RedisModuleCommandDispatcher"
  "CL.THROTTLE (redis-cell)|cell|CL.THROTTLE KEY 999999999 1000 3600|RedisModuleCommandDispatcher"
  "FLOOR.BUCKET|rl|FLOOR.BUCKET KEY 1000000000 1000 1h|RedisModuleCommandDispatcher"
  "RL.BUCKET|rl|RL.BUCKET KEY 1000000000 1000 1h|RedisModuleCommandDispatcher"
  "FLOOR.PENALTY|rl|FLOOR.PENALTY KEY 1000000000 1h 1m 1h|RedisModuleCommandDispatcher"
  "RL.PENALTY|rl|RL.PENALTY KEY 1000000000 1h 1m 1h|RedisModuleCommandDispatcher"
  "RL.GCRA DEBIT|rl|RL.GCRA KEY 1000000000 1000 1h DEBIT 1|RedisModuleCommandDispatcher"
  "RL.SLIDING|rl|RL.SLIDING KEY 128 1m|RedisModuleCommandDispatcher"
  "FLOOR.ACQUIRE|rl|FLOOR.ACQUIRE KEY 128 1m job:__rand_int__|RedisModuleCommandDispatcher"
  "RL.ACQUIRE|rl|RL.ACQUIRE KEY 128 1m job:__rand_int__|RedisModuleCommandDispatcher"
  "RL.SHARE (10 tenants)|rl|RL.SHARE bench:budget t__rand_int__ 1 1000000000 1000 1h|RedisModuleCommandDispatcher|10"
  "RL.SHARE (10000 tenants)|rl|RL.SHARE bench:budget t__rand_int__ 1 1000000000 1000 1h|RedisModuleCommandDispatcher|10000"
)

profile() { # <index> <name> <modules> <command> <function> [<range>]
  local i=$1 name=$2 mods=$3 command=$4 fn=$5 range=${6:-100000} port load=()
  port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
  if [ "$mods" = cell ]; then
    [ -n "$cell" ] || { echo "(redis-cell not built: skipped)" >"$out/$i.txt"; return; }
    load=(--loadmodule "$cell")
  else
    load=(--loadmodule "$module" --loadmodule "$floor")
  fi
  valgrind --tool=callgrind --callgrind-out-file="$out/$i.cg" \
    redis-server --port "$port" --save "" --appendonly no "${load[@]}" \
    --logfile "$out/$i.log" >/dev/null 2>&1 &
  local pid=$!
  for _ in $(seq 1 300); do redis-cli -p "$port" ping >/dev/null 2>&1 && break; sleep 0.1; done
  # shellcheck disable=SC2086 # the command is split into words on purpose
  redis-benchmark -p "$port" -n "$calls" -r "$range" -P 16 -c 50 -q ${command//KEY/key:__rand_int__} >/dev/null 2>&1
  redis-cli -p "$port" shutdown nosave >/dev/null 2>&1 || true
  wait "$pid" || true
  callgrind_annotate --inclusive=yes "$out/$i.cg" 2>/dev/null |
    sed -E 's/\[[^]]*\]//g; s/\?\?\?://g' |
    awk -v n="$calls" -v fn="$fn" -v name="$name" '
      function per(x) { gsub(/,/, "", x); return x / n }
      $NF == "processInputBuffer" { request = per($1) }
      $NF == fn { command = per($1) }
      $NF ~ /^RM_/ { inapi += per($1); if (per($1) >= 50) api[++k] = sprintf("      %6.0f  %s", per($1), $NF) }
      END {
        printf "== %s: %.0f instructions per request, %.0f in the command", name, request, command
        if (k) printf ", %.0f of them in the module API, %.0f outside it", inapi, command - inapi
        printf "\n"
        for (j = 1; j <= k && j <= 12; j++) print api[j]
      }' >"$out/$i.txt"
}

only="${PROFILE_ONLY:-}"
pids=()
i=0
for w in "${workloads[@]}"; do
  IFS='|' read -r name mods command fn range <<<"$w"
  i=$((i + 1))
  if [ -n "$only" ] && ! grep -qxF "${name// /_}" <<<"$(tr ' ' '\n' <<<"$only")"; then continue; fi
  profile "$i" "$name" "$mods" "$command" "$fn" "$range" &
  pids+=($!)
  # Two at a time: instruction counts do not depend on the load, elapsed time does.
  if [ ${#pids[@]} -ge 2 ]; then wait "${pids[0]}"; pids=("${pids[@]:1}"); fi
done
wait
for j in $(seq 1 "$i"); do [ ! -f "$out/$j.txt" ] || cat "$out/$j.txt"; done >"$out/all.txt"
cat "$out/all.txt"

# A full run (no PROFILE_ONLY) writes its table into docs/performance.md between the
# profile markers (PROFILE_DOCS=path elsewhere, PROFILE_DOCS= to write nothing).
docs="${PROFILE_DOCS-$([ -z "$only" ] && echo docs/performance.md)}"
if [ -n "$docs" ]; then
  python3 - "$out/all.txt" "$docs" "$calls" <<'PY'
import re, sys
sys.path.insert(0, "scripts")
import docmarkers

text, page, calls = open(sys.argv[1]).read(), sys.argv[2], sys.argv[3]
rows = ["| | per request | command | module API | module's own code | largest API calls |",
        "|---|---:|---:|---:|---:|---|"]
for block in re.split(r"^== ", text, flags=re.M)[1:]:
    head, *api = block.strip().splitlines()
    m = re.match(r"(.+?): (\d+) instructions per request, (\d+) in the command"
                 r"(?:, (\d+) of them in the module API, (-?\d+) outside it)?", head)
    if not m:
        continue
    name, request, command, inapi, own = m.groups()
    calls_ = ", ".join(f"{c.split()[1][3:]} {int(c.split()[0]):,}" for c in api[:2])
    fmt = lambda v: f"{int(v):,}" if v else ""
    rows.append(f"| {name} | {fmt(request)} | {fmt(command)} | {fmt(inapi)} | {fmt(own)} | {calls_} |")
docmarkers.replace(page, "profile", f"Per request, {int(calls):,} pipelined calls each:\n\n" + "\n".join(rows))
print(f"profile: table written to {page}")
PY
fi
