#!/usr/bin/env bash
# The Go client's tests, run by scripts/clients.sh (make test) with
# RL_TEST_MODULE_URL and RL_TEST_LIBRARY_URL set to a server with the module
# and one with only the Functions library:
#   - the client module (no dependencies): unit tests and the commands.json
#     coverage test;
#   - internal/itest (redigo): every command and option on both servers;
#   - examples/go: the net/http middleware, vetted and tested on both servers.
# Installs Go and redigo with apt-get when missing (root); exits 77 when they
# cannot be had.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)

# shellcheck source=env.sh
. "$here/env.sh"
rc=0
go_env_setup || rc=$?
[ "$rc" -eq 0 ] || exit "$rc"

if [ -z "${RL_TEST_MODULE_URL:-}" ] || [ -z "${RL_TEST_LIBRARY_URL:-}" ]; then
  echo "go: RL_TEST_MODULE_URL and RL_TEST_LIBRARY_URL must be set: run scripts/clients.sh go" >&2
  exit 2
fi
export RL_TEST_REQUIRE=1
echo "go: $(go version); module on $RL_TEST_MODULE_URL, library on $RL_TEST_LIBRARY_URL"

unformatted=$(gofmt -l "$here" "$root/examples/go")
if [ -n "$unformatted" ]; then
  echo "go: not gofmt'ed: $unformatted" >&2
  exit 1
fi

tmp=$(mktemp -d "${TMPDIR:-/tmp}/rl-go.XXXXXX")
trap 'rm -rf "$tmp"' EXIT

echo "go: the client (clients/go)"
(cd "$here" && go vet ./... && go test -count=1 ./...)

echo "go: against the servers (clients/go/internal/itest)"
set +e
(cd "$here/internal/itest" && go vet ./... && go test -count=1 -v ./...) >"$tmp/itest.log" 2>&1
rc=$?
set -e
if [ "$rc" -ne 0 ]; then
  cat "$tmp/itest.log"
  exit "$rc"
fi
# Say what was skipped, and why.
grep -E -- '--- SKIP|_test.go:[0-9]+: ' "$tmp/itest.log" || true
grep -E '^ok' "$tmp/itest.log"

echo "go: the net/http example (examples/go)"
# Its go.mod is a user's (redigo from the module proxy); here redigo is Debian's.
{ cat "$root/examples/go/go.mod"; printf '\nreplace github.com/gomodule/redigo => %s\n' "$redigo_dir"; } >"$tmp/example.mod"
(cd "$root/examples/go" && go vet -modfile="$tmp/example.mod" ./... && go test -count=1 -modfile="$tmp/example.mod" ./...)
echo "go: passed"
