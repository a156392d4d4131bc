#!/usr/bin/env bash
# The Go client's tests, run by scripts/clients.sh (make test) with
# RL_TEST_MODULE_URL and RL_TEST_LIBRARY_URL set to a server with the module
# and one with only the Functions library:
#   - the client module (no dependencies): unit tests and the generated table
#     against commands.json;
#   - the generated files up to date, and a made-up command reaching the client
#     through the emitter alone (internal/newcommand);
#   - the module's files, LICENSE included;
#   - internal/itest (redigo): every command and option on both servers, every
#     case of clients/headers.json, the fail modes within the deadline;
#   - every RateLimit field those tests gave, read by http-sf (PyPI);
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
# One package at a time: its deadline tests must not share the two cores with the
# next package's compilation.
(cd "$here" && go vet ./... && go test -p 1 -count=1 ./...)

echo "go: the generated surface is up to date, and a new command needs no hand edit"
python3 "$root/scripts/clientgen" --check go
python3 "$here/internal/newcommand/check.py"

echo "go: the module as the Go proxy would serve it (LICENSE included)"
python3 - "$here" "$root/LICENSE" "$tmp/module.zip" <<'PY'
import sys, zipfile
from pathlib import Path
here, license, out = Path(sys.argv[1]), Path(sys.argv[2]), sys.argv[3]
# A module zip holds the module's files, less the trees that are modules of their own.
nested = [p.parent for p in here.rglob("go.mod") if p.parent != here]
files = [p for p in here.rglob("*") if p.is_file() and not any(n in p.parents for n in nested)]
prefix = "github.com/rl-rate/rl/clients/go@v0.0.0/"
with zipfile.ZipFile(out, "w") as z:
    for p in files:
        z.write(p, prefix + str(p.relative_to(here)))
names = set(zipfile.ZipFile(out).namelist())
for want in ("LICENSE", "go.mod", "README.md", "client.go", "commands_gen.go"):
    assert prefix + want in names, f"the module has no {want}"
assert (here / "LICENSE").read_bytes() == license.read_bytes(), "clients/go/LICENSE is not the repository's LICENSE"
print(f"go: module zip: {len(names)} files, LICENSE included")
PY
(cd "$here" && go build ./... && go list -m)

echo "go: against the servers (clients/go/internal/itest)"
export RL_TEST_HEADER_DUMP="$tmp/headers.tsv"
set +e
(cd "$here/internal/itest" && go vet ./... && go test -p 1 -count=1 -v ./...) >"$tmp/itest.log" 2>&1
rc=$?
set -e
if [ "$rc" -ne 0 ]; then
  cat "$tmp/itest.log"
  exit "$rc"
fi
# Say what was skipped, and why.
grep -E -- '--- SKIP|_test.go:[0-9]+: ' "$tmp/itest.log" || true
grep -E '^ok' "$tmp/itest.log"

echo "go: every header the tests produced, read by a structured-field parser (http-sf)"
# Into a directory of its own; Debian's python3 may need python3-pip first, and
# refuses a plain install outside a virtual environment (PEP 668).
python3 -m pip --version >/dev/null 2>&1 || go_env_apt python3-pip || true
python3 -m pip install -q --disable-pip-version-check --target "$tmp/sf" http-sf >/dev/null 2>&1 ||
  python3 -m pip install -q --disable-pip-version-check --break-system-packages --target "$tmp/sf" http-sf >/dev/null 2>&1 ||
  { echo "go: cannot install http-sf from PyPI" >&2; exit 1; }
PYTHONPATH="$tmp/sf" python3 - "$RL_TEST_HEADER_DUMP" <<'PY'
import sys, http_sf
checked = 0
for line in open(sys.argv[1], encoding="ascii"):
    name, value = line.rstrip("\n").split("\t", 1)
    if name in ("RateLimit-Policy", "RateLimit"):
        members = http_sf.parse(value.encode("ascii"), tltype="list")  # raises on an invalid field
        assert members and all(isinstance(m[0], str) and all(isinstance(v, int) for v in m[1].values()) for m in members), (name, value)
        checked += 1
assert checked >= 30, f"only {checked} fields dumped"
print(f"go: {checked} RateLimit fields parsed")
PY

echo "go: the net/http example (examples/go)"
# Its go.mod is a user's (redigo from the module proxy); here redigo is Debian's.
{ cat "$root/examples/go/go.mod"; printf '\nreplace github.com/gomodule/redigo => %s\n' "$redigo_dir"; } >"$tmp/example.mod"
(cd "$root/examples/go" && go vet -modfile="$tmp/example.mod" ./... && go test -count=1 -modfile="$tmp/example.mod" ./...)
echo "go: passed"
