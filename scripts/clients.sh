#!/usr/bin/env bash
# The typed clients' own tests (clients/<language>/test.sh), run by `make test`
# against two real servers this script starts and always stops: one with the module
# loaded, one with only the Functions library (functions/rl.lua).
#
#   scripts/clients.sh              every client
#   scripts/clients.sh python node  only these
#   scripts/clients.sh --bench      each client's overhead instead (clients/<lang>/bench.sh:
#                                   pipelined RL.GCRA through the typed API against the
#                                   same calls raw through the same client), written into
#                                   docs/performance.md between its clients markers
#
# Each clients/<language>/test.sh gets RL_TEST_MODULE_URL and RL_TEST_LIBRARY_URL
# (redis://127.0.0.1:PORT), installs what its toolchain needs, runs that ecosystem's
# test runner against both servers, and exits 0 on success. It exits 77 when its
# toolchain cannot be had on this machine, after saying so: that client is then
# listed as skipped, not failed.
#
# Env: RL_MODULE (default target/release/librl.so), RL_LIBRARY (default
# functions/rl.lua), REDIS_SERVER (default redis-server).
set -euo pipefail
cd "$(dirname "$0")/.."
root=$PWD
module=${RL_MODULE:-$root/target/release/librl.so}
library=${RL_LIBRARY:-$root/functions/rl.lua}
server=${REDIS_SERVER:-redis-server}

say() { echo "clients: $*"; }
die() { echo "clients: $*" >&2; exit 1; }

[ -f "$module" ] || die "$module is missing: run 'make build' first"
[ -f "$library" ] || die "$library is missing"
command -v "$server" >/dev/null 2>&1 || die "$server is missing: run 'make deps'"
command -v redis-cli >/dev/null 2>&1 || die "redis-cli is missing: run 'make deps'"

bench=""
if [ "${1:-}" = --bench ]; then
  bench=1
  shift
fi
if [ $# -gt 0 ]; then
  languages=("$@")
else
  languages=()
  for t in clients/*/test.sh; do
    [ -f "$t" ] || continue
    t=${t#clients/}
    languages+=("${t%/test.sh}")
  done
fi
[ ${#languages[@]} -gt 0 ] || die "no clients/*/test.sh found"

tmp=$(mktemp -d "${TMPDIR:-/tmp}/rl-clients.XXXXXX")
pids=()
cleanup() {
  local pid
  for pid in ${pids[@]+"${pids[@]}"}; do
    kill "$pid" 2>/dev/null || true
    wait "$pid" 2>/dev/null || true
  done
  rm -rf "$tmp"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

free_port() {
  python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'
}

# start <name> [args...]: a server on a free port in its own directory; sets `port`.
# (Not in a $(…) subshell: its pid must reach `pids`, which the exit trap stops.)
start() {
  local name=$1 pid i
  shift
  port=$(free_port)
  mkdir -p "$tmp/$name"
  "$server" --port "$port" --bind 127.0.0.1 --dir "$tmp/$name" --save "" --appendonly no \
    "$@" >"$tmp/$name.log" 2>&1 &
  pid=$!
  pids+=("$pid")
  for ((i = 0; i < 100; i++)); do
    redis-cli -p "$port" ping >/dev/null 2>&1 && return 0
    kill -0 "$pid" 2>/dev/null || break
    sleep 0.1
  done
  cat "$tmp/$name.log" >&2
  die "the $name server did not start"
}

start module --loadmodule "$module"
module_port=$port
start library
library_port=$port
RL_LIBRARY="$library" scripts/load-library.sh "127.0.0.1:$library_port" >/dev/null
export RL_TEST_MODULE_URL="redis://127.0.0.1:$module_port"
export RL_TEST_LIBRARY_URL="redis://127.0.0.1:$library_port"
say "module on $module_port, library on $library_port"

if [ -n "$bench" ]; then
  lines=()
  for lang in "${languages[@]}"; do
    printf '\n== client overhead: %s\n' "$lang"
    redis-cli -p "$module_port" FLUSHALL >/dev/null
    RL_BENCH_URL="$RL_TEST_MODULE_URL" bash "clients/$lang/bench.sh" 2>&1 | tee "$tmp/$lang.bench" || true
    if line=$(grep -a '^client-bench ' "$tmp/$lang.bench" | tail -n 1) && [ -n "$line" ]; then
      lines+=("$line")
    else
      say "$lang: its bench printed no result (said above)"
    fi
  done
  python3 - ${lines[@]+"${lines[@]}"} <<'PY'
import sys
sys.path.insert(0, "scripts")
import docmarkers
rows = ["| client | raw calls/s | typed calls/s | typed / raw |", "|---|---:|---:|---:|"]
for line in sys.argv[1:]:
    f = dict(w.split("=", 1) for w in line.split()[2:])
    rows.append(f"| {line.split()[1]} | {int(f['raw_ops']):,} | {int(f['typed_ops']):,} | {float(f['ratio']):.2f} |")
text = ("Pipelined RL.GCRA calls through each typed client against the same calls sent raw "
        "through the same underlying client, on a server with the module "
        "(`scripts/clients.sh --bench`; medians of alternating rounds):\n\n" + "\n".join(rows))
docmarkers.replace(docmarkers.DOCS + "/performance.md", "clients", text)
print(text)
PY
  exit 0
fi

failed=()
skipped=()
for lang in "${languages[@]}"; do
  script="clients/$lang/test.sh"
  [ -f "$script" ] || die "$script is missing"
  printf '\n== client: %s\n' "$lang"
  # Each client starts from empty servers: no keys left by another's tests.
  redis-cli -p "$module_port" FLUSHALL >/dev/null
  redis-cli -p "$library_port" FLUSHALL >/dev/null
  set +e
  bash "$script"
  rc=$?
  set -e
  case $rc in
    0) ;;
    77) skipped+=("$lang") ;;
    *) failed+=("$lang") ;;
  esac
done

echo
[ ${#skipped[@]} -eq 0 ] || say "skipped (toolchain missing, said above): ${skipped[*]}"
if [ ${#failed[@]} -gt 0 ]; then
  say "FAILED: ${failed[*]}"
  exit 1
fi
say "passed: ${languages[*]}"
