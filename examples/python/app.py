"""Rate-limited HTTP server on RL's typed client (rl_client): a WSGI middleware that
takes one unit of the caller's token bucket per request (RL.BUCKET), and a route
(/report) of which at most RL_CONCURRENT run at once per user (a lease: RL.ACQUIRE
at the start of the request, RL.RELEASE when it ends).

Works unchanged with the RL module or, where MODULE LOAD is refused, RL's Functions
library (functions/rl.lua): the client finds out which one the server has, and this
server says so at start.

Run:  pip install ../../clients/python -r requirements.txt && python app.py
Env:  REDIS_URL (redis://127.0.0.1:6379), PORT (8000),
      RL_CAPACITY (5), RL_TOKENS (1), RL_PERIOD (1s): a burst of 5, then 1 per second;
      RL_CONCURRENT (2) reports at once, each taking RL_REPORT_MS (1000).
"""

import logging
import os
import time
from socketserver import ThreadingMixIn
from wsgiref.simple_server import WSGIServer, make_server

import redis
from rl_client import RateLimiter

log = logging.getLogger(__name__)


def user_of(environ):
    # X-User stands in for an authenticated user id; trust such a header only
    # behind your own auth. Without it, limit by the client's address.
    return environ.get("HTTP_X_USER") or environ.get("REMOTE_ADDR", "unknown")


class RateLimit:
    """WSGI middleware: wraps any WSGI app (Flask, Django, ...) the same way."""

    def __init__(self, app, rl, capacity, tokens, period):
        self.app, self.rl = app, rl
        self.capacity, self.tokens, self.period = capacity, tokens, period

    def __call__(self, environ, start_response):
        # One command: Redis reads, decides and writes atomically, so every instance
        # of this app shares the same bucket without races.
        d = self.rl.bucket(f"rl:api:{user_of(environ)}", self.capacity, self.tokens, self.period)
        if d.error is not None:
            # Redis did not answer and the limiter fails open (see main()).
            log.warning("rate limiter unavailable (%s); letting the request through", d.error)
            return self.app(environ, start_response)
        # RateLimit-Policy, RateLimit, X-RateLimit-*, and Retry-After when rejected:
        # on every response, so clients can pace themselves before they are refused.
        headers = list(d.headers().items())
        if not d.allowed:
            start_response("429 Too Many Requests", [("Content-Type", "text/plain")] + headers)
            return [b"Too Many Requests\n"]

        def start_with_headers(status, response_headers, exc_info=None):
            return start_response(status, response_headers + headers, exc_info)

        return self.app(environ, start_with_headers)


def concurrency_fields(lease):
    """The IETF fields for a limit on requests at once. (The client's headers()
    describe a rate, q units per w seconds; a lease limit is q at once, which
    draft-ietf-httpapi-ratelimit-headers writes with the unit "concurrent-requests".)"""
    retry = lease.headers().get("Retry-After")  # when the soonest lease ends
    fields = [
        ("RateLimit-Policy", f'"concurrency";q={lease.limit};qu="concurrent-requests"'),
        ("RateLimit", f'"concurrency";r={lease.remaining}' + (f";t={retry}" if retry else "")),
    ]
    return fields + ([("Retry-After", retry)] if retry else [])


class ConcurrencyLimit:
    """WSGI middleware: at most `limit` requests of `path` in flight at once per user;
    503 when all slots are taken. Each request holds a lease of its own, which ends by
    itself after `ttl` (the longest a request may run): a worker that crashes
    mid-request never keeps its slot."""

    def __init__(self, app, rl, path, limit, ttl):
        self.app, self.rl = app, rl
        self.path, self.limit, self.ttl = path, limit, ttl

    def __call__(self, environ, start_response):
        if environ.get("PATH_INFO") != self.path:
            return self.app(environ, start_response)
        # RL.ACQUIRE here, RL.RELEASE when the block ends (also on an exception).
        with self.rl.lease(f"rl:concurrent:{user_of(environ)}", self.limit, self.ttl) as lease:
            if lease.decision.error is not None:
                log.warning("concurrency limiter unavailable (%s); letting the request through",
                            lease.decision.error)
                return self.app(environ, start_response)
            headers = concurrency_fields(lease)
            if not lease.allowed:
                start_response("503 Service Unavailable", [("Content-Type", "text/plain")] + headers)
                return [b"Too many reports running; try again shortly\n"]

            def start_with_headers(status, response_headers, exc_info=None):
                return start_response(status, response_headers + headers, exc_info)

            # The body is produced here, so the slot is held for the whole work.
            return list(self.app(environ, start_with_headers))


def router(report_ms):
    """The application: /report takes a while, anything else answers at once."""

    def app(environ, start_response):
        if environ.get("PATH_INFO") == "/report":
            time.sleep(report_ms / 1000)  # stands in for a slow export
            start_response("200 OK", [("Content-Type", "text/plain")])
            return [b"Report ready\n"]
        start_response("200 OK", [("Content-Type", "text/plain")])
        return [b"Hello!\n"]

    return app


class ThreadingWSGIServer(ThreadingMixIn, WSGIServer):
    # wsgiref serves one request at a time; a thread per request keeps a slow
    # client from blocking the others.
    daemon_threads = True


def main():
    logging.basicConfig(level=logging.INFO)
    # from_url gives a thread-safe connection pool shared by all requests. Fail open:
    # a Redis outage should not take the whole API down ("deny" where the limit
    # protects something costly). RL's own errors (a bad setting) always raise.
    client = redis.Redis.from_url(os.environ.get("REDIS_URL", "redis://127.0.0.1:6379"))
    rl = RateLimiter(client, on_connection_error="allow")
    if rl.detect() == "module":
        log.info("rate limiter: the RL module")
    else:
        log.info("rate limiter: RL's Functions library, no module")
    reports = ConcurrencyLimit(
        router(int(os.environ.get("RL_REPORT_MS", "1000"))),
        rl,
        path="/report",
        limit=int(os.environ.get("RL_CONCURRENT", "2")),
        ttl="30s",  # the longest a report may run: a crashed worker's slot frees then
    )
    app = RateLimit(
        reports,
        rl,
        capacity=int(os.environ.get("RL_CAPACITY", "5")),
        tokens=int(os.environ.get("RL_TOKENS", "1")),
        period=os.environ.get("RL_PERIOD", "1s"),  # RL durations: 1500ms, 60, 1m, ...
    )
    port = int(os.environ.get("PORT", "8000"))
    with make_server("127.0.0.1", port, app, server_class=ThreadingWSGIServer) as server:
        log.info("listening on http://127.0.0.1:%d", port)
        server.serve_forever()


if __name__ == "__main__":
    main()
