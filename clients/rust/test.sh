#!/usr/bin/env bash
# rl-client's tests (cargo test -p rl-client): unit tests, the coverage of
# commands.json, and every command against the two servers scripts/clients.sh
# starts (RL_TEST_MODULE_URL: the module; RL_TEST_LIBRARY_URL: the Functions
# library only). Run it through `scripts/clients.sh rust`.
#
# Exit 0 on success, 77 (after saying why) when there is no Rust toolchain.
# Env: CARGO (default cargo).
set -euo pipefail
cd "$(dirname "$0")/../.."
cargo=${CARGO:-cargo}

if ! command -v "$cargo" >/dev/null 2>&1; then
  echo "rust client: $cargo is missing: install Rust (https://rustup.rs) to test the Rust client" >&2
  exit 77
fi
for var in RL_TEST_MODULE_URL RL_TEST_LIBRARY_URL; do
  if [ -z "${!var:-}" ]; then
    echo "rust client: $var is unset: run this through scripts/clients.sh rust, which starts both servers" >&2
    exit 1
  fi
done

# --show-output: the notes of what a server lacks (RL.SHARE) appear in the log.
"$cargo" test -p rl-client -- --show-output
