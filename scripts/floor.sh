#!/usr/bin/env bash
# Builds the bench-only floor module (bench/floor/floor.c: the module-API calls of
# RL's commands and nothing else; never shipped) into target/floor/floor.so and
# prints its path. Compiled with cc against the redismodule.h of the redis-module
# crate RL is built with (found through cargo metadata, from the local registry).
# Exits nonzero, with a message on stderr, when it cannot be built.
set -euo pipefail
cd "$(dirname "$0")/.."
so=$PWD/target/floor/floor.so
cc=${CC:-cc}
command -v "$cc" >/dev/null 2>&1 || { echo "floor: no C compiler ($cc)" >&2; exit 1; }
host=$(rustc -vV 2>/dev/null | awk '/^host:/ {print $2}')
include=$(${CARGO:-cargo} metadata --format-version 1 --offline --filter-platform "$host" 2>/dev/null |
  python3 -c '
import json, os, sys
for p in json.load(sys.stdin)["packages"]:
    if p["name"] == "redis-module":
        print(os.path.join(os.path.dirname(p["manifest_path"]), "src", "include"))
        break') || true
[ -f "$include/redismodule.h" ] || { echo "floor: redismodule.h of the redis-module crate not found (cargo fetch?)" >&2; exit 1; }
if [ ! -f "$so" ] || [ bench/floor/floor.c -nt "$so" ] || [ "$include/redismodule.h" -nt "$so" ]; then
  mkdir -p "$(dirname "$so")"
  "$cc" -O2 -fPIC -shared -Wall -Wextra -Werror -I "$include" -o "$so" bench/floor/floor.c
fi
echo "$so"
