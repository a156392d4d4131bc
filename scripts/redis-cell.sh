#!/usr/bin/env bash
# Builds redis-cell 0.5.0 (brandur/redis-cell, the module RL's CL.THROTTLE replaces)
# for the differential tests (tests/it/redis_cell.rs) and prints the path of its
# libredis_cell.so on stdout; progress goes to stderr.
#
# Source: ${RL_VENDOR:-<repo>/../shared/vendor}/redis-cell-0.5.0.tar.gz.
# Build: `cargo build --release` (crates from the registry) in a cache outside the
# repository, ${RL_COMPAT_CACHE:-~/.cache/rl-compat}/redis-cell-0.5.0, redone only
# when the tarball's sha256 changes (the sha256 of the last build is kept there).
# Exits 2 with a message naming RL_VENDOR when the tarball is absent, 1 when the
# build fails (the end of its log is shown).
set -euo pipefail

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
id=redis-cell-0.5.0
cache=${RL_COMPAT_CACHE:-$HOME/.cache/rl-compat}
vendor=${RL_VENDOR:-$root/../shared/vendor}
cargo=${CARGO:-cargo}

say() { printf 'redis-cell: %s\n' "$*" >&2; }
die() {
  printf 'redis-cell: error: %s\n' "$*" >&2
  exit "${2:-2}"
}

cache=$(realpath -m "$cache")
case $cache/ in
  "$root"/*) die "RL_COMPAT_CACHE=$cache is inside the repository; pick a directory outside it" ;;
esac
tarball=$vendor/$id.tar.gz
if [ ! -f "$tarball" ]; then
  die "no $id.tar.gz in RL_VENDOR=$vendor (set RL_VENDOR to the directory holding $id.tar.gz; the redis-cell tests need it)"
fi

dir=$cache/$id
so=$dir/lib/libredis_cell.so
sha=$(sha256sum "$tarball" | cut -d' ' -f1)
if [ -f "$so" ] && [ "$(cat "$dir/sha256" 2>/dev/null)" = "$sha" ]; then
  echo "$so"
  exit 0
fi

command -v "$cargo" >/dev/null 2>&1 || die "cargo is missing: install Rust (https://rustup.rs)"
say "building $so from $tarball (cargo build --release; log: $dir/build.log)"
t0=$SECONDS
rm -rf "${dir:?}/lib" "${dir:?}/sha256" "${dir:?}/src"
mkdir -p "$dir/src" "$dir/lib"
log=$dir/build.log
# The build directory stays (CARGO_TARGET_DIR in the cache), so a rebuild after a
# new tarball reuses the compiled dependencies.
if ! tar -xzf "$tarball" -C "$dir/src" --strip-components=1 >"$log" 2>&1 ||
  ! (cd "$dir/src" && CARGO_TARGET_DIR=$dir/target "$cargo" build --release) >>"$log" 2>&1; then
  say "BUILD FAILED; the end of $log:"
  tail -n 30 "$log" | sed 's/^/    | /' >&2
  exit 1
fi
built=$dir/target/release/libredis_cell.so
[ -f "$built" ] || die "the build made no $built (log: $log)" 1
cp "$built" "$so"
echo "$sha" >"$dir/sha256"
say "built in $((SECONDS - t0)) s"
echo "$so"
