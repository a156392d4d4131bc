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

Works unchanged with the RL module (RL.GCRA) or RL's Functions library (FCALL
rl_gcra): it finds out which one the server has at start, and says so.

Run:  pip install -r requirements.txt && python worker.py
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

log = logging.getLogger("worker")


def detect_backend(client):
    """("module", call) if the server has RL.GCRA, else ("library", call) for FCALL
    rl_gcra (same arguments and reply)."""
    probe = ("rl:probe", 1, 1, "1s", "COST", 0)  # COST 0 writes nothing
    try:
        client.execute_command("RL.GCRA", *probe)
        return "module", lambda key, *args: client.execute_command("RL.GCRA", key, *args)
    except redis.ResponseError as err:
        if "unknown command" not in str(err).lower():
            raise
    client.execute_command("FCALL", "rl_gcra", 1, *probe)
    return "library", lambda key, *args: client.execute_command("FCALL", "rl_gcra", 1, key, *args)


class Schedule:
    """A rate shared by every worker: reserve() blocks until this caller's turn."""

    def __init__(self, gcra, key, rate, burst, max_wait):
        self.gcra, self.key = gcra, key
        self.args = (burst, rate, "1s", "DELAY", max_wait)

    def reserve(self):
        while True:
            allowed, _limit, _remaining, retry_ms, _reset_ms = self.gcra(self.key, *self.args)
            if retry_ms < 0:
                raise ValueError("a job can never fit: the burst is below 1")
            # Allowed: our turn comes in retry_ms (0: now). Rejected: the queue is
            # longer than max_wait; try again when it has shrunk enough.
            time.sleep(retry_ms / 1000)
            if allowed:
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
    backend, gcra = detect_backend(client)
    if backend == "module":
        log.info("rate limiter: the RL module (RL.GCRA … DELAY)")
    else:
        log.info("rate limiter: RL's Functions library (FCALL rl_gcra … DELAY), no module")
    url = os.environ.get("PARTNER_URL", "http://127.0.0.1:9000/")
    rate = int(os.environ.get("RL_RATE", "20"))
    schedule = Schedule(
        gcra,
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
