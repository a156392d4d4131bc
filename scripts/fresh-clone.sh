#!/usr/bin/env bash
# What a user gets: clones this repository's HEAD into a temporary directory with
# nothing beside it (no ../shared, no vendored sources), then runs the README's
# quick path there: `make run` (a server answers an RL command) and `make test`
# (which must pass, naming what it skipped). Run by .ci/run, so a step that needs
# files from outside the repository cannot creep into the quick path again.
#
#   RL_CLONE_KEEP=1   keep the clone (its path is printed)
#   RL_CLONE_COLD=1   build from nothing; by default the clone starts from a copy of
#                     this checkout's target/ (only the rl crate is rebuilt)
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
base=$(mktemp -d "${TMPDIR:-/tmp}/rl-fresh-clone.XXXXXX")
clone=$base/rl
cleanup() {
  if [ -n "${server:-}" ]; then kill "$server" 2>/dev/null || true; fi
  if [ -z "${RL_CLONE_KEEP:-}" ]; then rm -rf "$base"; else echo "fresh-clone: kept $clone"; fi
}
trap cleanup EXIT
t0=$SECONDS
say() { printf 'fresh-clone: %s\n' "$*"; }

git clone --quiet --no-local "$root" "$clone"
[ ! -e "$base/shared" ] || { say "error: $base/shared exists"; exit 1; }
if [ -z "${RL_CLONE_COLD:-}" ] && [ -d "$root/target" ]; then
  # A copy (never hard links: the clone's builds must not write into this target).
  mkdir -p "$clone/target"
  for d in release debug testing; do
    [ -d "$root/target/$d" ] && cp -a "$root/target/$d" "$clone/target/"
  done
fi
cd "$clone"
unset RL_VENDOR RL_REDIS_CELL RL_MODULE RL_TESTING_MODULE RL_BACKEND CARGO_TARGET_DIR

# make run: in the background on a free port, until it answers an RL command.
port=$((20000 + RANDOM % 20000))
make run PORT="$port" >"$base/run.log" 2>&1 &
server=$!
reply=""
for _ in $(seq 1 600); do
  reply=$(redis-cli -p "$port" RL.FIXED fresh:clone 5 1m 2>/dev/null | tr '\n' ' ') || true
  [ -n "$reply" ] && break
  kill -0 "$server" 2>/dev/null || break
  sleep 0.5
done
if [[ "$reply" != "1 5 4 0 "* ]]; then
  say "make run did not serve RL.FIXED (reply: '$reply'); its output:"
  sed 's/^/    | /' "$base/run.log"
  exit 1
fi
# The banner follows the server's first answer: wait for it (a deadline, not a sleep).
for _ in $(seq 1 100); do
  grep -q "redis-cli -p $port" "$base/run.log" && break
  sleep 0.1
done
grep -q "redis-cli -p $port" "$base/run.log" || { say "make run printed no redis-cli hint"; exit 1; }
redis-cli -p "$port" shutdown nosave >/dev/null 2>&1 || true
wait "$server" 2>/dev/null || true
server=""
say "make run: served RL.FIXED on port $port ($reply)"

# make test: must pass; what it skipped is named.
make test 2>&1 | tee "$base/test.log"
status=${PIPESTATUS[0]}
[ "$status" -eq 0 ] || { say "make test FAILED in a plain clone (exit $status)"; exit 1; }
grep -q "^make test: passed; skipped" "$base/test.log" || grep -q "^make test: everything ran" "$base/test.log" ||
  { say "make test printed no summary of what it skipped"; exit 1; }
say "make run and make test pass in a plain clone in $((SECONDS - t0)) s"
