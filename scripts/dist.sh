#!/usr/bin/env bash
# `make dist`: the release artefacts, into dist/ (docs/install.md says what each is):
#   librl-<version>-linux-x86_64-gnu.so    glibc 2.17+, x86-64
#   librl-<version>-linux-aarch64-gnu.so   glibc 2.17+, arm64
#   librl-<version>-linux-x86_64-musl.so   musl (Alpine), x86-64
#   librl-<version>-linux-aarch64-musl.so  musl (Alpine), arm64
#   rl-<version>.lua                       the Functions library
#   SHA256SUMS                             `sha256sum -c SHA256SUMS` inside dist/
# <version> is Cargo.toml's, the one source. Each module is linked by zig through
# cargo-zigbuild (scripts/dist-deps.sh installs both, and the rustup targets): a
# glibc target suffixed .2.17 links against glibc 2.17's symbol versions, a musl
# one is a dynamic library (-crt-static: a module must share the server's libc).
# Ends with scripts/check-dist.py, which fails the build on a wrong artefact.
#
# Reproducible: paths are remapped (the checkout to /rl, the cargo home to /cargo),
# nothing reads the clock, and the tools are pinned (scripts/dist-deps.sh), so two
# runs of one commit give byte-identical files. RL_DIST_TARGETS="x86_64-gnu ..."
# builds only some (check-dist then reports the others missing).
#
# `scripts/dist.sh --testing` builds the same four with the test hook instead
# (`--profile testing --features testing`: a call on the key __rl_panic__ panics)
# into target/<triple>/testing/librl.so, never into dist/: scripts/test-dist.sh
# proves with them that a panic is an error reply on each platform.
set -euo pipefail

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$root"
cargo=${CARGO:-cargo}
out=$root/dist
start=$SECONDS

say() { printf 'dist: %s\n' "$*"; }

bin=$(scripts/dist-deps.sh | tail -n 1)
export PATH=$bin:$PATH

version=$(sed -n 's/^version = "\([^"]*\)"$/\1/p' Cargo.toml | head -n 1)
[ -n "$version" ] || {
  say "error: no version in Cargo.toml"
  exit 1
}
# The library says its version in its header comment and in rl_version.
if ! grep -q "^RL $version: " functions/rl.lua || ! grep -q "local VERSION = \"$version\"" functions/rl.lua; then
  say "error: functions/rl.lua does not say version $version (its header 'RL $version: ' and 'local VERSION = \"$version\"'): update it with Cargo.toml"
  exit 1
fi

testing=""
[ "${1:-}" = --testing ] && testing=1

cargo_home=${CARGO_HOME:-$HOME/.cargo}
remap="--remap-path-prefix=$root=/rl --remap-path-prefix=$cargo_home=/cargo"

# <name in the file> <rust target> <cargo-zigbuild target>
rows=(
  "x86_64-gnu x86_64-unknown-linux-gnu x86_64-unknown-linux-gnu.2.17"
  "aarch64-gnu aarch64-unknown-linux-gnu aarch64-unknown-linux-gnu.2.17"
  "x86_64-musl x86_64-unknown-linux-musl x86_64-unknown-linux-musl"
  "aarch64-musl aarch64-unknown-linux-musl aarch64-unknown-linux-musl"
)
if [ -z "$testing" ]; then
  rm -rf "$out"
  mkdir -p "$out"
fi
for row in "${rows[@]}"; do
  read -r name triple zig_target <<<"$row"
  if [ -n "${RL_DIST_TARGETS:-}" ] && [[ " $RL_DIST_TARGETS " != *" $name "* ]]; then
    continue
  fi
  flags=$remap
  case $triple in *-musl) flags="$flags -C target-feature=-crt-static" ;; esac
  t0=$SECONDS
  # Flags for the target only (not for build scripts, which run here).
  var=CARGO_TARGET_$(tr 'a-z-' 'A-Z_' <<<"$triple")_RUSTFLAGS
  if [ -n "$testing" ]; then
    env "$var=$flags" "$cargo" zigbuild --profile testing --features testing --quiet --locked \
      --target "$zig_target"
    say "target/$triple/testing/librl.so (the test hook) in $((SECONDS - t0)) s"
    continue
  fi
  env "$var=$flags" "$cargo" zigbuild --release --quiet --locked --target "$zig_target"
  cp "target/$triple/release/librl.so" "$out/librl-$version-linux-$name.so"
  say "librl-$version-linux-$name.so ($triple) in $((SECONDS - t0)) s"
done
[ -z "$testing" ] || exit 0
cp functions/rl.lua "$out/rl-$version.lua"
(cd "$out" && sha256sum -- librl-*.so "rl-$version.lua" >SHA256SUMS)
python3 scripts/check-dist.py "$out" "$version"
say "dist/ ready in $((SECONDS - start)) s:"
(cd "$out" && ls -l --time-style=+ -- * | awk '{ printf "  %10s  %s\n", $5, $NF }')
