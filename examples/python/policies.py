"""Several limits per request with one RL.ALL call, advertised with the IETF
RateLimit-Policy and RateLimit fields (draft-ietf-httpapi-ratelimit-headers).

Each user gets a "burst" token bucket and a "daily" fixed window. RL.ALL checks
both at one instant and takes from both or from neither, so a request the daily
limit refuses does not eat into the burst (and the other way round). When the
protected app fails with a 5xx, the middleware gives the unit back with
RL.ALL … REFUND 1: failed upstream calls do not count.

Run:  pip install -r requirements.txt && python policies.py
Env:  REDIS_URL (redis://127.0.0.1:6379), PORT (8000),
      RL_CAPACITY (5), RL_TOKENS (1), RL_PERIOD (1s): the burst bucket,
      RL_DAILY (1000): requests per user per UTC day.
Try:  curl -i -H 'X-User: ada' http://127.0.0.1:8000/      (and /fail for a 500)
"""

import logging
import os
from socketserver import ThreadingMixIn
from wsgiref.simple_server import WSGIServer, make_server

import redis

log = logging.getLogger(__name__)

MS = {"ms": 1, "s": 1000, "m": 60_000, "h": 3_600_000, "d": 86_400_000}


def duration_ms(text):
    """An RL duration (`1500ms`, `60`, `1m`, …) in ms: a bare number is seconds."""
    digits = text.rstrip("smhdSMHD")
    return int(digits) * MS[(text[len(digits):] or "s").lower()]


def ceil_seconds(ms):
    # The fields count whole seconds; round up so a client never retries too early.
    return -(-ms // 1000)


def detect_all(client):
    """RL.ALL if the server has the module, else the library's FCALL rl_all (same
    arguments after numkeys, same reply), and which one."""
    try:
        client.execute_command("RL.BUCKET", "rl:probe", 1, 1, "1s", "COST", 0)  # writes nothing
        return "module", lambda *args: client.execute_command("RL.ALL", *args)
    except redis.ResponseError as err:
        if "unknown command" not in str(err).lower():
            raise
    client.execute_command("FCALL", "rl_all", 1, "rl:probe", "BUCKET", 1, 1, "1s", "COST", 0)
    return "library", lambda *args: client.execute_command("FCALL", "rl_all", *args)


class Policy:
    """One named limit: the RL.ALL policy words and its quota for the header."""

    def __init__(self, name, words, quota, window_ms):
        self.name, self.words = name, words
        self.quota, self.window_s = quota, ceil_seconds(window_ms)

    def advertised(self):
        # RateLimit-Policy item: the quota q per window w (seconds).
        return f'"{self.name}";q={self.quota};w={self.window_s}'


class MultiLimit:
    """WSGI middleware: every request takes one unit from every policy, or none."""

    def __init__(self, app, rl_all, policies):
        self.app, self.rl_all, self.policies = app, rl_all, policies
        self.policy_header = ", ".join(p.advertised() for p in policies)

    def call(self, user, *amount):
        # A hash tag keeps one user's keys in one Cluster slot (RL.ALL needs that).
        keys = [f"rl:{{{user}}}:{p.name}" for p in self.policies]
        words = [w for p in self.policies for w in p.words]
        return self.rl_all(len(keys), *keys, *words, *amount)

    def __call__(self, environ, start_response):
        # X-User stands in for an authenticated user id; trust it only behind your
        # own auth. Without it, limit by the client's address.
        user = environ.get("HTTP_X_USER") or environ.get("REMOTE_ADDR", "unknown")
        try:
            combined, *per_policy = self.call(user)
        except redis.RedisError as err:
            # Fail open: a Redis outage should not take the whole API down.
            log.warning("rate limiter unavailable (%s); letting the request through", err)
            return self.app(environ, start_response)

        allowed, _limit, _remaining, retry_ms, _reset_ms = combined
        # RateLimit item per policy: what remains (r) and when it is whole again (t).
        state = ", ".join(
            f'"{p.name}";r={reply[2]};t={ceil_seconds(reply[4])}'
            for p, reply in zip(self.policies, per_policy)
        )
        headers = [("RateLimit-Policy", self.policy_header), ("RateLimit", state)]
        if not allowed:
            # -1: some policy can never allow this request (cost above its quota).
            if retry_ms >= 0:
                headers.append(("Retry-After", str(ceil_seconds(retry_ms))))
            start_response("429 Too Many Requests", [("Content-Type", "text/plain")] + headers)
            return [b"Too Many Requests\n"]

        def start_with_headers(status, response_headers, exc_info=None):
            if status.startswith("5"):
                # The upstream failed: give the unit back to every policy.
                try:
                    self.call(user, "REFUND", 1)
                except redis.RedisError as err:
                    log.warning("could not refund %s (%s)", user, err)
            return start_response(status, response_headers + headers, exc_info)

        return self.app(environ, start_with_headers)


def hello(environ, start_response):
    """The application being protected; /fail stands for an upstream failure."""
    if environ.get("PATH_INFO") == "/fail":
        start_response("500 Internal Server Error", [("Content-Type", "text/plain")])
        return [b"upstream failed\n"]
    start_response("200 OK", [("Content-Type", "text/plain")])
    return [b"Hello!\n"]


class ThreadingWSGIServer(ThreadingMixIn, WSGIServer):
    daemon_threads = True


def main():
    logging.basicConfig(level=logging.INFO)
    client = redis.Redis.from_url(os.environ.get("REDIS_URL", "redis://127.0.0.1:6379"))
    capacity = int(os.environ.get("RL_CAPACITY", "5"))
    tokens = int(os.environ.get("RL_TOKENS", "1"))
    period = os.environ.get("RL_PERIOD", "1s")
    daily = int(os.environ.get("RL_DAILY", "1000"))
    policies = [
        # A full bucket refills in capacity / tokens periods: its window.
        Policy("burst", ["BUCKET", capacity, tokens, period], capacity,
               duration_ms(period) * capacity // tokens),
        Policy("daily", ["FIXED", daily, "1d"], daily, 86_400_000),
    ]
    backend, rl_all = detect_all(client)
    if backend == "module":
        log.info("rate limiter: the RL module (RL.ALL)")
    else:
        log.info("rate limiter: RL's Functions library (FCALL rl_all), no module")
    app = MultiLimit(hello, rl_all, policies)
    port = int(os.environ.get("PORT", "8000"))
    with make_server("127.0.0.1", port, app, server_class=ThreadingWSGIServer) as server:
        log.info("listening on http://127.0.0.1:%d", port)
        server.serve_forever()


if __name__ == "__main__":
    main()
