"""Overhead of the typed client: N pipelined RL.GCRA calls through RateLimiter's
pipeline (typed decisions) against the same calls as raw commands through the same
redis-py client's pipeline. Several rounds each, interleaved; the median of each.

    RL_BENCH_URL=redis://127.0.0.1:6379 python bench.py [--calls 20000] [--rounds 7] [--batch 1000]

Prints one final line: client-bench python raw_ops=<int> typed_ops=<int> ratio=<x.xxx>
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time

import redis

from rl_client import RateLimiter

CAPACITY, TOKENS, PERIOD = 1_000_000, 1_000, "1s"


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--calls", type=int, default=20_000)
    ap.add_argument("--rounds", type=int, default=7)
    ap.add_argument("--batch", type=int, default=1_000, help="calls per pipeline execute")
    ap.add_argument("--keys", type=int, default=1_000)
    opts = ap.parse_args()
    url = os.environ.get("RL_BENCH_URL")
    if not url:
        print("bench: set RL_BENCH_URL=redis://host:port (a server with RL loaded)", file=sys.stderr)
        return 2

    client = redis.Redis.from_url(url)
    rl = RateLimiter(client)
    backend = rl.detect()
    keys = [f"rl:bench:py:{i}" for i in range(opts.keys)]
    if backend == "module":
        prefix: tuple[object, ...] = ("RL.GCRA",)
    else:
        prefix = ("FCALL", "rl_gcra", 1)
    calls, batch = opts.calls, opts.batch
    nkeys = len(keys)

    def raw() -> float:
        start = time.perf_counter()
        done = 0
        while done < calls:
            n = min(batch, calls - done)
            pipe = client.pipeline(transaction=False)
            for i in range(done, done + n):
                pipe.execute_command(*prefix, keys[i % nkeys], CAPACITY, TOKENS, PERIOD)
            replies = pipe.execute()
            assert len(replies) == n and replies[0][0] in (0, 1)
            done += n
        return calls / (time.perf_counter() - start)

    def typed() -> float:
        start = time.perf_counter()
        done = 0
        while done < calls:
            n = min(batch, calls - done)
            pipe = rl.pipeline()
            for i in range(done, done + n):
                pipe.gcra(keys[i % nkeys], CAPACITY, TOKENS, PERIOD)
            decisions = pipe.execute()
            assert len(decisions) == n and decisions[0].limit == CAPACITY
            done += n
        return calls / (time.perf_counter() - start)

    raw(), typed()  # warm up: connections, caches
    raw_runs: list[float] = []
    typed_runs: list[float] = []
    for r in range(opts.rounds):
        # Alternate which goes first, so neither always gets the warmer machine.
        if r % 2:
            typed_runs.append(typed())
            raw_runs.append(raw())
        else:
            raw_runs.append(raw())
            typed_runs.append(typed())
    client.delete(*keys)
    raw_ops = statistics.median(raw_runs)
    typed_ops = statistics.median(typed_runs)
    print(f"bench: backend {backend}, {calls} calls x {opts.rounds} rounds, batches of {batch}", file=sys.stderr)
    print(f"bench: raw   {[round(x) for x in raw_runs]}", file=sys.stderr)
    print(f"bench: typed {[round(x) for x in typed_runs]}", file=sys.stderr)
    print(f"client-bench python raw_ops={raw_ops:.0f} typed_ops={typed_ops:.0f} ratio={typed_ops / raw_ops:.3f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
