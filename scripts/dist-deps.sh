#!/usr/bin/env bash
# Installs what `make dist` needs, only when it is missing (idempotent, quiet when
# all is there):
#   - the rustup targets x86_64/aarch64-unknown-linux-gnu and -musl;
#   - zig and cargo-zigbuild, from PyPI (`ziglang`, `cargo-zigbuild`) into a venv in
#     RL_DIST_TOOLS (default ~/.cache/rl-dist/venv), outside the repository; zig is the
#     linker that targets glibc 2.17 and musl without a sysroot;
#   - binutils (objdump, readelf) for scripts/check-dist.py, and python3-venv, with apt.
# Prints the venv's bin directory on its last line (scripts/dist.sh puts it in PATH).
set -euo pipefail

tools=${RL_DIST_TOOLS:-$HOME/.cache/rl-dist}
venv=$tools/venv
# Pinned so that two machines build the same bytes (the reproducibility check of
# scripts/dist.sh compares two builds on one machine; pins make it hold across them).
ZIGLANG=${RL_ZIGLANG:-ziglang==0.13.0}
ZIGBUILD=${RL_CARGO_ZIGBUILD:-cargo-zigbuild==0.24.0}
targets=(x86_64-unknown-linux-gnu aarch64-unknown-linux-gnu x86_64-unknown-linux-musl aarch64-unknown-linux-musl)

say() { printf 'dist-deps: %s\n' "$*" >&2; }

apt_need=()
command -v objdump >/dev/null 2>&1 || apt_need+=(binutils)
command -v readelf >/dev/null 2>&1 || apt_need+=(binutils)
command -v python3 >/dev/null 2>&1 || apt_need+=(python3)
if [ ! -x "$venv/bin/python3" ] && ! python3 -c 'import ensurepip, venv' >/dev/null 2>&1; then
  apt_need+=(python3-venv)
fi
if [ ${#apt_need[@]} -gt 0 ]; then
  if [ "$(id -u)" -eq 0 ] && command -v apt-get >/dev/null 2>&1; then
    say "installing ${apt_need[*]} (apt)"
    export DEBIAN_FRONTEND=noninteractive
    apt-get update -qq >&2 && apt-get install -y -qq --no-install-recommends "${apt_need[@]}" >&2
  else
    say "missing ${apt_need[*]}: install them (apt-get install ${apt_need[*]}) and run this again"
    exit 1
  fi
fi

if ! command -v rustup >/dev/null 2>&1; then
  say "rustup is missing: install Rust with rustup (https://rustup.rs); make dist cross-compiles with rustup's targets"
  exit 1
fi
installed=$(rustup target list --installed)
for t in "${targets[@]}"; do
  if ! grep -qx "$t" <<<"$installed"; then
    say "rustup target add $t"
    rustup target add "$t" >&2
  fi
done

if [ ! -x "$venv/bin/python3" ]; then
  say "creating $venv"
  mkdir -p "$tools"
  python3 -m venv "$venv" >&2
fi
have() {
  local shown
  shown=$("$venv/bin/python3" -m pip show "${1%%==*}" 2>/dev/null) || return 1
  grep -qx "Version: ${1##*==}" <<<"$shown"
}
if ! have "$ZIGLANG" || ! have "$ZIGBUILD"; then
  say "pip install $ZIGLANG $ZIGBUILD (into $venv)"
  "$venv/bin/python3" -m pip install --quiet --disable-pip-version-check "$ZIGLANG" "$ZIGBUILD" >&2
fi
echo "$venv/bin"
