"""Several limits per request with one RL.ALL call, advertised with the IETF
RateLimit-Policy and RateLimit fields (draft-ietf-httpapi-ratelimit-headers).

Each user gets a "burst" token bucket and a "daily" fixed window. RL.ALL checks
both at one instant and takes from both or from neither, so a request the daily
limit refuses does not eat into the burst (and the other way round). When the
protected app fails with a 5xx, the middleware gives the unit back with
RL.ALL … REFUND 1: failed upstream calls do not count.

Works unchanged with the RL module or RL's Functions library: the typed client
(rl_client) finds out which one the server has, and this server says so at start.

Run:  pip install ../../clients/python -r requirements.txt && python policies.py
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
from rl_client import Bucket, Fixed, RateLimiter, RLError

log = logging.getLogger(__name__)


class MultiLimit:
    """WSGI middleware: every request takes one unit from every policy, or none."""

    def __init__(self, app, rl, policies):
        self.app, self.rl = app, rl
        self.policies = policies  # {"burst": Bucket(...), "daily": Fixed(...)}

    def call(self, user, **refund):
        # A hash tag keeps one user's keys in one Cluster slot (RL.ALL needs that).
        return self.rl.all({f"rl:{{{user}}}:{name}": p for name, p in self.policies.items()}, **refund)

    def __call__(self, environ, start_response):
        # X-User stands in for an authenticated user id; trust it only behind your
        # own auth. Without it, limit by the client's address.
        user = environ.get("HTTP_X_USER") or environ.get("REMOTE_ADDR", "unknown")
        d = self.call(user)
        if d.error is not None:
            # Redis did not answer and the limiter fails open (see main()).
            log.warning("rate limiter unavailable (%s); letting the request through", d.error)
            return self.app(environ, start_response)

        # The combined decision's Retry-After and X-RateLimit-*, and one item per
        # policy in RateLimit-Policy (its quota) and RateLimit (what remains, and
        # when it is whole again).
        headers = d.headers()
        for field in ("RateLimit-Policy", "RateLimit"):
            headers[field] = ", ".join(
                each.headers(name)[field] for name, each in zip(self.policies, d.decisions)
            )
        headers = list(headers.items())
        if not d.allowed:
            start_response("429 Too Many Requests", [("Content-Type", "text/plain")] + headers)
            return [b"Too Many Requests\n"]

        def start_with_headers(status, response_headers, exc_info=None):
            if status.startswith("5"):
                # The upstream failed: give the unit back to every policy.
                try:
                    self.call(user, refund=1)
                except (RLError, redis.RedisError) as err:
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
    # Fail open: a Redis outage should not take the whole API down.
    rl = RateLimiter(client, on_connection_error="allow")
    if rl.detect() == "module":
        log.info("rate limiter: the RL module (RL.ALL)")
    else:
        log.info("rate limiter: RL's Functions library (FCALL rl_all), no module")
    policies = {
        "burst": Bucket(
            int(os.environ.get("RL_CAPACITY", "5")),
            int(os.environ.get("RL_TOKENS", "1")),
            os.environ.get("RL_PERIOD", "1s"),  # RL durations: 1500ms, 60, 1m, ...
        ),
        "daily": Fixed(int(os.environ.get("RL_DAILY", "1000")), "1d"),
    }
    app = MultiLimit(hello, rl, policies)
    port = int(os.environ.get("PORT", "8000"))
    with make_server("127.0.0.1", port, app, server_class=ThreadingWSGIServer) as server:
        log.info("listening on http://127.0.0.1:%d", port)
        server.serve_forever()


if __name__ == "__main__":
    main()
