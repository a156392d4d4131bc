#!/usr/bin/env bash
# Installs what building and testing RL needs, only when it is missing:
# redis-server and redis-cli (Debian's redis-server / redis-tools), python3, faketime (to set a
# test server's clock), and the libclang
# packages redis-module's bindgen build step needs. Idempotent; quiet when all is there.
#
#   scripts/deps.sh            what the build needs (make deps)
#   scripts/deps.sh test       that, and what only the tests use (make test):
#                              prometheus-redis-exporter (the monitoring test scrapes it)
#   scripts/deps.sh examples   what the example smoke test (scripts/examples.sh) can get
#                              from apt: python3 with venv. Node.js 20+ is not in
#                              Debian bookworm's apt, so examples.sh checks it and skips
#                              the Node example when it is missing or older.
set -euo pipefail

mode=${1:-build}
need=()
if [ "$mode" = examples ]; then
  command -v python3 >/dev/null 2>&1 || need+=(python3)
  # Debian splits venv's pip bootstrap (ensurepip) into python3-venv.
  if ! python3 -c 'import ensurepip, venv' >/dev/null 2>&1; then
    need+=(python3-venv)
  fi
  if [ ${#need[@]} -eq 0 ]; then
    exit 0
  fi
fi

[ "$mode" = examples ] || command -v redis-server >/dev/null 2>&1 || need+=(redis-server)
if [ "$mode" != examples ]; then
  command -v redis-cli >/dev/null 2>&1 || need+=(redis-tools)
  # The docs' vector tables (make lint), the bench and the example checks are Python.
  command -v python3 >/dev/null 2>&1 || need+=(python3)
  # bindgen loads libclang at build time and needs clang's builtin headers (stddef.h).
  # (libclang-cpp, present on many images, is not the C API bindgen loads.)
  if ! ls /usr/lib/llvm-*/lib/libclang.so* /usr/lib/*/libclang-[0-9]*.so* >/dev/null 2>&1; then
    need+=(libclang1-14)
  fi
  if ! ls /usr/lib/llvm-*/lib/clang/*/include/stddef.h >/dev/null 2>&1; then
    need+=(libclang-common-14-dev)
  fi
  # RL.QUOTA's integration tests set a server's clock (calendar days, DST changes).
  if ! ls /usr/lib/*/faketime/libfaketime.so.1 >/dev/null 2>&1; then
    need+=(faketime)
  fi
fi
if [ "$mode" = test ]; then
  command -v prometheus-redis-exporter >/dev/null 2>&1 || need+=(prometheus-redis-exporter)
fi

if [ "$mode" != examples ] && ! command -v cargo >/dev/null 2>&1; then
  echo "deps: cargo is missing: install Rust (https://rustup.rs) and run this again." >&2
  exit 1
fi

if [ ${#need[@]} -eq 0 ]; then
  exit 0
fi

echo "deps: installing ${need[*]}"
sudo=""
if [ "$(id -u)" -ne 0 ]; then
  if command -v sudo >/dev/null 2>&1; then
    sudo="sudo"
  else
    echo "deps: missing ${need[*]} and not root (no sudo): install them with apt-get as root." >&2
    exit 1
  fi
fi
if ! command -v apt-get >/dev/null 2>&1; then
  echo "deps: missing ${need[*]} and no apt-get: install them with your package manager." >&2
  exit 1
fi
export DEBIAN_FRONTEND=noninteractive
# Debian's redis-server package starts a service on 6379 where a service manager
# runs; `make run` wants that port. Keep package scripts from starting services
# during this install (the standard policy-rc.d switch), unless the machine has
# its own policy.
policy=/usr/sbin/policy-rc.d
own_policy=""
if [ ! -e "$policy" ]; then
  printf '#!/bin/sh\nexit 101\n' | $sudo tee "$policy" >/dev/null
  $sudo chmod +x "$policy"
  own_policy=1
fi
cleanup() { if [ -n "$own_policy" ]; then $sudo rm -f "$policy"; fi; }
trap cleanup EXIT
$sudo apt-get update -qq
$sudo apt-get install -y -qq --no-install-recommends "${need[@]}"
