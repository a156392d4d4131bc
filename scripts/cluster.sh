#!/usr/bin/env bash
# Starts a local Redis Cluster with RL loaded on every node: `make cluster`.
# SHARDS primaries (default 3) on ports BASE_PORT (default 7000) and up, then
# REPLICAS replicas per primary (default 0) on the next ports. Each node keeps its
# files in target/cluster/<port> (cleared at start). Ctrl-C stops every node.
# LIBRARY=1 (`make cluster LIBRARY=1`): no module; the Functions library is loaded
# on every primary once the cluster is up (scripts/load-library.sh), and replicas
# get it by replication.
set -euo pipefail
cd "$(dirname "$0")/.."

base="${BASE_PORT:-7000}"
shards="${SHARDS:-3}"
replicas="${REPLICAS:-0}"
module="$PWD/target/release/librl.so"
root="$PWD/target/cluster"
nodes=$((shards * (1 + replicas)))
last=$((base + nodes - 1))
ports=$(seq "$base" "$last")

fail() {
  echo "cluster: $*" >&2
  exit 1
}

with_library="${LIBRARY:-}"
[ "$with_library" = 0 ] && with_library=""
[ -n "$with_library" ] || [ -f "$module" ] || fail "$module is missing; build it with 'make build'."
((shards >= 3)) || fail "Redis Cluster needs at least 3 primaries (SHARDS=$shards)."
# Each node also listens on its cluster bus port, port + 10000.
((last + 10000 <= 65535)) || fail "BASE_PORT=$base is too high: bus ports are port + 10000."
for port in $ports; do
  if redis-cli -p "$port" ping >/dev/null 2>&1; then
    fail "something already answers on port $port; pick other ports: make cluster BASE_PORT=7100"
  fi
done

pids=()
# shellcheck disable=SC2317  # run by the traps
stop() {
  trap - EXIT INT TERM
  if ((${#pids[@]})); then
    echo "cluster: stopping ${#pids[@]} nodes"
    kill "${pids[@]}" 2>/dev/null || true
    wait "${pids[@]}" 2>/dev/null || true
  fi
}
trap stop EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

# Polls a command until it succeeds, or fails after the given number of seconds.
wait_until() {
  local deadline=$((SECONDS + $1)) what=$2
  shift 2
  until "$@" >/dev/null 2>&1; do
    ((SECONDS < deadline)) || fail "timed out waiting for $what"
    sleep 0.1
  done
}

# Every node says ok and sees all nodes, replicas included (roles spread by gossip
# after the cluster is ok).
# shellcheck disable=SC2317  # run by wait_until
cluster_ready() {
  for port in $ports; do
    redis-cli -p "$port" cluster info | grep -q '^cluster_state:ok' || return 1
    [ "$(redis-cli -p "$port" cluster nodes | awk '$3 ~ /slave/' | wc -l)" -eq $((shards * replicas)) ] ||
      return 1
  done
}

load=()
[ -n "$with_library" ] || load=(--loadmodule "$module")
rm -rf "$root"
addresses=()
for port in $ports; do
  dir="$root/$port"
  mkdir -p "$dir"
  redis-server --port "$port" --bind 127.0.0.1 --dir "$dir" --logfile "$dir/redis.log" \
    --save "" --appendonly no \
    --cluster-enabled yes --cluster-config-file nodes.conf --cluster-node-timeout 5000 \
    "${load[@]}" &
  pids+=($!)
  addresses+=("127.0.0.1:$port")
done
for port in $ports; do
  wait_until 10 "the node on port $port (see $root/$port/redis.log)" redis-cli -p "$port" ping
done

if ! redis-cli --cluster create "${addresses[@]}" --cluster-replicas "$replicas" \
  --cluster-yes >"$root/create.log" 2>&1; then
  cat "$root/create.log" >&2
  fail "redis-cli --cluster create failed"
fi
wait_until 30 "the cluster to form" cluster_ready
if [ -n "$with_library" ]; then
  CLUSTER=1 scripts/load-library.sh "127.0.0.1:$base" >"$root/load-library.log" 2>&1 ||
    { cat "$root/load-library.log" >&2; fail "loading the library failed"; }
  cat <<MSG

  A Redis Cluster of $shards primaries ($replicas replicas each) with RL's Functions
  library (no module) runs on ports $base-$last. In another terminal, try (-c
  follows MOVED redirections; FCALL's key comes after numkeys):

    redis-cli -c -p $base FCALL rl_fixed  1 user:42 5 1m          # 5 per minute
    redis-cli -c -p $base FCALL rl_bucket 1 {user42}:api 10 1 1s  # bucket of 10
    redis-cli --cluster check 127.0.0.1:$base                     # nodes and slots

  Logs and data: $root/<port>. Stop every node with Ctrl-C.

MSG
else

cat <<MSG

  A Redis Cluster of $shards primaries ($replicas replicas each) with RL runs on
  ports $base-$last. In another terminal, try (-c follows MOVED redirections):

    redis-cli -c -p $base RL.FIXED   user:42 5 1m          # 5 per minute, fixed window
    redis-cli -c -p $base RL.SLIDING {user42}:login 5 1m   # same slot as {user42}:api
    redis-cli -c -p $base RL.BUCKET  {user42}:api 10 1 1s  # bucket of 10, 1 per second
    redis-cli -p $base CLUSTER KEYSLOT {user42}:api        # the slot a key lives in
    redis-cli --cluster check 127.0.0.1:$base              # nodes and slots

  Logs and data: $root/<port>. Stop every node with Ctrl-C.

MSG
fi
# Until Ctrl-C (which the nodes may see first, and exit), or until a node fails.
interrupted=""
trap 'interrupted=1' INT TERM
wait -n "${pids[@]}" || true
[ -n "$interrupted" ] && exit 130
fail "a node exited; see the logs in $root"
