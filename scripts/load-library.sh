#!/usr/bin/env bash
# Loads the Functions library (functions/rl.lua) into a server, or into every primary
# of a Redis Cluster: `scripts/load-library.sh [host:port ...]` (default
# 127.0.0.1:6379). With CLUSTER=1 (or a node that reports cluster_enabled:1) the
# address is a seed: the library goes to every primary the node knows, and replicas
# get it from their primaries (FUNCTION LOAD replicates). REPLACE: loading again
# updates it. RL_LIBRARY overrides the library's path; REDIS_CLI the client.
set -euo pipefail
cd "$(dirname "$0")/.."

library="${RL_LIBRARY:-$PWD/functions/rl.lua}"
cli="${REDIS_CLI:-redis-cli}"
[ -f "$library" ] || { echo "load-library: $library is missing" >&2; exit 1; }
[ $# -gt 0 ] || set -- 127.0.0.1:6379

load() { # load host port
  local reply
  reply=$("$cli" -h "$1" -p "$2" -x FUNCTION LOAD REPLACE <"$library" 2>&1)
  if [ "$reply" != "rl" ]; then
    echo "load-library: $1:$2 answered: $reply" >&2
    return 1
  fi
  echo "load-library: rl loaded on $1:$2"
}

for address in "$@"; do
  host=${address%:*}
  port=${address##*:}
  if [ "${CLUSTER:-}" = 1 ] ||
    "$cli" -h "$host" -p "$port" INFO cluster 2>/dev/null | grep -q '^cluster_enabled:1'; then
    # Every primary: "id ip:port@bus flags ..." with "master" in the flags.
    primaries=$("$cli" -h "$host" -p "$port" CLUSTER NODES |
      awk '$3 ~ /master/ && $3 !~ /fail/ { split($2, a, "@"); print a[1] }')
    [ -n "$primaries" ] || { echo "load-library: no primaries known to $address" >&2; exit 1; }
    for node in $primaries; do
      load "${node%:*}" "${node##*:}"
    done
  else
    load "$host" "$port"
  fi
done
