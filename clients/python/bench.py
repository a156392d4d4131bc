"""Overhead of the typed client: N pipelined RL.GCRA calls through RateLimiter's
pipeline (typed decisions) against the same calls as raw commands through the same
redis-py client's pipeline, in batches of --batch calls per execute. Each round runs
the N calls both ways, the two interleaved batch by batch; the median over rounds of
each. The typed side's extra cost is building each call and making its Decision.

    RL_BENCH_URL=redis://127.0.0.1:6379 python bench.py [--calls 20000] [--rounds 7] [--batch 1000] [--clock wall|cpu]

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
    ap.add_argument(
        "--clock",
        choices=("wall", "cpu"),
        default="wall",
        help="wall: elapsed time (the default); cpu: this process's CPU time, steadier on a busy machine",
    )
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
    clock = time.perf_counter if opts.clock == "wall" else time.process_time
    nkeys = len(keys)

    def raw_batch(start: int, n: int) -> None:
        pipe = client.pipeline(transaction=False)
        for i in range(start, start + n):
            pipe.execute_command(*prefix, keys[i % nkeys], CAPACITY, TOKENS, PERIOD)
        replies = pipe.execute()
        assert len(replies) == n and replies[0][1] == CAPACITY

    def typed_batch(start: int, n: int) -> None:
        pipe = rl.pipeline()
        for i in range(start, start + n):
            pipe.gcra(keys[i % nkeys], CAPACITY, TOKENS, PERIOD)
        decisions = pipe.execute()
        assert len(decisions) == n and decisions[0].limit == CAPACITY

    def round_() -> tuple[float, float]:
        """One round: the N calls both ways, batch by batch, the two alternating (and
        which goes first alternating too), so that a machine busy with something else
        slows both alike. Returns (raw ops/s, typed ops/s)."""
        spent = {raw_batch: 0.0, typed_batch: 0.0}
        done = 0
        flip = False
        while done < calls:
            n = min(batch, calls - done)
            order = (typed_batch, raw_batch) if flip else (raw_batch, typed_batch)
            for run in order:
                start = clock()
                run(done, n)
                spent[run] += clock() - start
            flip = not flip
            done += n
        return calls / spent[raw_batch], calls / spent[typed_batch]

    round_()  # warm up: connections, caches
    raw_runs: list[float] = []
    typed_runs: list[float] = []
    for _ in range(opts.rounds):
        r, t = round_()
        raw_runs.append(r)
        typed_runs.append(t)
    client.delete(*keys)
    raw_ops = statistics.median(raw_runs)
    typed_ops = statistics.median(typed_runs)
    print(
        f"bench: backend {backend}, {calls} calls x {opts.rounds} rounds, batches of {batch}, {opts.clock} clock",
        file=sys.stderr,
    )
    print(f"bench: raw   {[round(x) for x in raw_runs]}", file=sys.stderr)
    print(f"bench: typed {[round(x) for x in typed_runs]}", file=sys.stderr)
    ratios = [t / r for r, t in zip(raw_runs, typed_runs)]
    print(f"bench: per-round ratios {[round(x, 3) for x in ratios]}, median {statistics.median(ratios):.3f}", file=sys.stderr)
    print(f"client-bench python raw_ops={raw_ops:.0f} typed_ops={typed_ops:.0f} ratio={typed_ops / raw_ops:.3f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
