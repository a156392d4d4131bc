"""A job runner that calls a partner API at a declared rate, queueing instead of
being rejected: RL.GCRA with DELAY turns the limiter into a shared schedule.

Each job reserves its turn before it calls the partner:

    RL.GCRA rl:partner:<name> <burst> <rate> 1s DELAY <max_wait>

An allowed reply's retry_after_ms is how long to wait for that turn (0: go now):
the worker sleeps it, then sends. Turns are first come, first served, and every
worker reserving on the same key (threads here; processes or machines alike) shares
one schedule, so the partner sees at most <rate> calls per second (after a first
burst of <burst>) however many workers run. A rejected reply means the queue is
longer than max_wait: the job backs off for retry_after_ms and reserves again.

NGINX's `limit_req zone=… rate=r; limit_req burst=b delay=d;` is
`RL.GCRA key (d+1) r 1s DELAY <1000*(b-d)/r>ms`; Go's rate.Limiter.Reserve() is the same
reservation.

Works unchanged with the RL module or RL's Functions library: the typed client
(rl_client) finds out which one the server has, and the worker says so at start.

Run:  pip install ../../clients/python -r requirements.txt && python worker.py
Env:  REDIS_URL (redis://127.0.0.1:6379), PARTNER_URL (http://127.0.0.1:9000/),
      RL_RATE (20 calls per second), RL_BURST (1: no burst), RL_MAX_WAIT (10s),
      JOBS (60), WORKERS (4).
"""

import logging
import os
import queue
import threading
import time
import urllib.error
import urllib.request
from collections import Counter

import redis
from rl_client import RateLimiter

log = logging.getLogger("worker")


class Schedule:
    """A rate shared by every worker: reserve() blocks until this caller's turn."""

    def __init__(self, rl, key, rate, burst, max_wait):
        self.rl, self.key = rl, key
        self.rate, self.burst, self.max_wait = rate, burst, max_wait

    def reserve(self):
        while True:
            d = self.rl.gcra(self.key, self.burst, self.rate, "1s", delay=self.max_wait)
            if d.retry_after is None:
                raise ValueError("a job can never fit: the burst is below 1")
            # Allowed: our turn comes in retry_after ms (0: now). Rejected: the queue
            # is longer than max_wait; try again when it has shrunk enough.
            time.sleep(d.retry_after / 1000)
            if d.allowed:
                return


def send(url, job):
    """One call to the partner; its HTTP status (a 429 means we went too fast)."""
    request = urllib.request.Request(url, data=str(job).encode(), method="POST")
    try:
        with urllib.request.urlopen(request, timeout=10) as response:
            return response.status
    except urllib.error.HTTPError as err:
        return err.code


def main():
    logging.basicConfig(level=logging.INFO, format="%(name)s: %(message)s")
    client = redis.Redis.from_url(os.environ.get("REDIS_URL", "redis://127.0.0.1:6379"))
    rl = RateLimiter(client)
    if rl.detect() == "module":
        log.info("rate limiter: the RL module (RL.GCRA … DELAY)")
    else:
        log.info("rate limiter: RL's Functions library (FCALL rl_gcra … DELAY), no module")
    url = os.environ.get("PARTNER_URL", "http://127.0.0.1:9000/")
    rate = int(os.environ.get("RL_RATE", "20"))
    schedule = Schedule(
        rl,
        "rl:partner:example",
        rate=rate,
        burst=int(os.environ.get("RL_BURST", "1")),
        max_wait=os.environ.get("RL_MAX_WAIT", "10s"),  # an RL duration: 250ms, 10s, 1m
    )

    jobs = queue.Queue()
    for job in range(int(os.environ.get("JOBS", "60"))):
        jobs.put(job)
    statuses = Counter()
    lock = threading.Lock()

    def work():
        while True:
            try:
                job = jobs.get_nowait()
            except queue.Empty:
                return
            schedule.reserve()
            status = send(url, job)
            with lock:
                statuses[status] += 1

    started = time.monotonic()
    workers = [threading.Thread(target=work) for _ in range(int(os.environ.get("WORKERS", "4")))]
    for w in workers:
        w.start()
    for w in workers:
        w.join()
    elapsed = time.monotonic() - started
    sent = sum(statuses.values())
    log.info(
        "sent %d jobs in %.2f s (%.1f per second, limit %d): statuses %s",
        sent, elapsed, sent / elapsed if elapsed else 0.0, rate, dict(statuses),
    )


if __name__ == "__main__":
    main()
