#!/usr/bin/env bash
# Builds the bench-only floor module (bench/floor/floor.c: the module-API calls of
# RL's commands and nothing else; never shipped) into target/floor/floor.so and
# prints its path. Compiled with cc against the redismodule.h of the redis-module
# crate RL is built with: its version is read from Cargo.lock, its source found
# where `make build` left it (cargo's registry, CARGO_HOME or ~/.cargo), without
# asking cargo about the whole workspace (that needs every dev-dependency, which
# `make build` never downloads). Exits nonzero, with a message on stderr, when it
# cannot be built.
set -euo pipefail
cd "$(dirname "$0")/.."
so=$PWD/target/floor/floor.so
cc=${CC:-cc}
command -v "$cc" >/dev/null 2>&1 || { echo "floor: no C compiler ($cc)" >&2; exit 1; }

# The locked version and checksum of redis-module.
read -r version checksum < <(awk '
  /^\[\[package\]\]/ { if (name == "redis-module") exit; name = version = sum = "" }
  /^name = /     { name = $3; gsub(/"/, "", name) }
  /^version = /  { version = $3; gsub(/"/, "", version) }
  /^checksum = / { sum = $3; gsub(/"/, "", sum) }
  END { if (name == "redis-module") print version, sum }' Cargo.lock) || true
[ -n "${version:-}" ] || { echo "floor: no redis-module package in Cargo.lock" >&2; exit 1; }
registry=${CARGO_HOME:-$HOME/.cargo}/registry

# 1. The extracted source cargo built RL from.
include=""
for dir in "$registry"/src/*/"redis-module-$version"/src/include; do
  [ -f "$dir/redismodule.h" ] && { include=$dir; break; }
done
# 2. Cargo cleaned the extracted sources but kept the downloaded .crate: the header
#    comes out of it (checked against Cargo.lock's checksum), kept in target/floor/.
if [ -z "$include" ] && [ -f "$PWD/target/floor/redis-module-$version/redismodule.h" ]; then
  include=$PWD/target/floor/redis-module-$version
fi
if [ -z "$include" ]; then
  for crate in "$registry"/cache/*/"redis-module-$version.crate"; do
    [ -f "$crate" ] || continue
    if [ -n "${checksum:-}" ] && [ "$(sha256sum "$crate" | cut -d' ' -f1)" != "$checksum" ]; then
      continue
    fi
    include=$PWD/target/floor/redis-module-$version
    mkdir -p "$include"
    tar -xzf "$crate" -O "redis-module-$version/src/include/redismodule.h" >"$include/redismodule.h.tmp" &&
      mv "$include/redismodule.h.tmp" "$include/redismodule.h" && break
    include=""
  done
fi
# 3. Sources cargo gets elsewhere (a vendored directory, a replaced source): ask cargo,
#    offline, which then needs the whole workspace's dependencies at hand.
if [ -z "$include" ]; then
  host=$(rustc -vV 2>/dev/null | awk '/^host:/ {print $2}')
  include=$(${CARGO:-cargo} metadata --format-version 1 --offline --filter-platform "$host" 2>/dev/null |
    python3 -c '
import json, os, sys
for p in json.load(sys.stdin)["packages"]:
    if p["name"] == "redis-module":
        print(os.path.join(os.path.dirname(p["manifest_path"]), "src", "include"))
        break' 2>/dev/null) || true
fi
[ -n "$include" ] && [ -f "$include/redismodule.h" ] || {
  echo "floor: redismodule.h of redis-module $version not found in $registry (run make build: cargo downloads it)" >&2
  exit 1
}
if [ ! -f "$so" ] || [ bench/floor/floor.c -nt "$so" ] || [ "$include/redismodule.h" -nt "$so" ]; then
  mkdir -p "$(dirname "$so")"
  "$cc" -O2 -fPIC -shared -Wall -Wextra -Werror -I "$include" -o "$so" bench/floor/floor.c
fi
echo "$so"
