#!/usr/bin/env bash
# rl-client's tests: unit tests, the coverage of commands.json, every command against
# the two servers scripts/clients.sh starts (RL_TEST_MODULE_URL: the module;
# RL_TEST_LIBRARY_URL: the Functions library only), every HTTP field produced checked
# by a structured-field parser (http-sf, from PyPI, in a virtualenv), the emitter on a
# table with a command it has never seen (tests/emitter), and the package
# (`cargo package`: it builds, it holds LICENSE, README.md and the generated surface).
# Run it through `scripts/clients.sh rust`.
#
# Exit 0 on success, 77 (after saying why) when there is no Rust toolchain recent
# enough (redis-rs 1.8 needs Rust 1.88; install it with rustup).
# Env: CARGO (default cargo).
set -euo pipefail
cd "$(dirname "$0")/../.."
root=$PWD
cargo=${CARGO:-cargo}
say() { echo "rust client: $*"; }

if ! command -v "$cargo" >/dev/null 2>&1; then
  say "$cargo is missing: install Rust (https://rustup.rs) to test the Rust client" >&2
  exit 77
fi
rustc_minor=$(rustc --version | sed -E 's/^rustc 1\.([0-9]+).*/\1/')
if [ "${rustc_minor:-0}" -lt 88 ]; then
  say "$(rustc --version) is older than 1.88, which redis-rs 1.8 needs: rustup update" >&2
  exit 77
fi
for var in RL_TEST_MODULE_URL RL_TEST_LIBRARY_URL; do
  if [ -z "${!var:-}" ]; then
    say "$var is unset: run this through scripts/clients.sh rust, which starts both servers" >&2
    exit 1
  fi
done

# A structured-field parser for the fields the tests produce.
venv=$root/target/rl-client-venv
if ! [ -x "$venv/bin/python" ] || ! "$venv/bin/python" -c 'import http_sf' 2>/dev/null; then
  if ! python3 -m venv "$venv" >/dev/null 2>&1; then
    apt-get install -y -q python3-venv >/dev/null
    python3 -m venv "$venv"
  fi
  "$venv/bin/pip" install -q http-sf
fi

tmp=$(mktemp -d "${TMPDIR:-/tmp}/rl-client-rust.XXXXXX")
trap 'rm -rf "$tmp"' EXIT

# --show-output: the notes of what a server lacks appear in the log.
RL_HEADERS_DUMP=$tmp/fields.jsonl "$cargo" test -p rl-client -- --show-output

say "checking every HTTP field produced with http-sf"
"$venv/bin/python" - "$tmp/fields.jsonl" <<'PY'
import json, sys
import http_sf

# The IETF fields are structured-field lists; Retry-After and X-RateLimit-* are
# plain decimal numbers.
LISTS = {"RateLimit-Policy", "RateLimit"}
checked = 0
with open(sys.argv[1]) as f:
    for line in f:
        field = json.loads(line)
        name, value = field["name"], field["value"]
        if name in LISTS:
            for member, params in http_sf.parse(value.encode("ascii"), tltype="list"):
                assert isinstance(member, str), (name, value)
                assert set(params) <= {"q", "w", "r", "t", "qu"}, (name, value)
                assert params.get("w", 1) > 0, ("w=0", value)
        else:
            assert value.isdigit(), (name, value)
        checked += 1
assert checked >= 50, f"only {checked} fields"
print(f"rust client: {checked} fields parse as structured fields")
PY

say "the emitter on a table with a command it has never seen"
python3 clients/rust/tests/emitter/test_emitter.py

say "the package"
"$cargo" package -q -p rl-client --allow-dirty --list >"$tmp/files"
for want in LICENSE README.md Cargo.toml src/lib.rs src/generated/commands.rs src/generated/methods.rs; do
  grep -qx "$want" "$tmp/files" || { say "the package lacks $want" >&2; cat "$tmp/files" >&2; exit 1; }
done
"$cargo" package -q -p rl-client --allow-dirty
crate=$root/target/package/rl-client-$(sed -nE 's/^version = "(.*)"/\1/p' clients/rust/Cargo.toml | head -n 1).crate
tar -tzf "$crate" >"$tmp/crate-files"
grep -q '/LICENSE$' "$tmp/crate-files" || { say "$crate has no LICENSE" >&2; exit 1; }
say "package $(basename "$crate"): built, $(wc -l <"$tmp/files") files, LICENSE included"
