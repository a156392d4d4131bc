"""Rate-limited HTTP server: a WSGI middleware that calls RL.BUCKET per request,
and a route (/report) of which at most RL_CONCURRENT run at once per user
(RL.ACQUIRE at the start of the request, RL.RELEASE when it ends).

Works unchanged with the RL module (RL.BUCKET) or, where MODULE LOAD is refused, RL's
Functions library (FCALL rl_bucket, functions/rl.lua): it finds out which one the
server has at start, and says so.

Run:  pip install -r requirements.txt && python app.py
Env:  REDIS_URL (redis://127.0.0.1:6379), PORT (8000),
      RL_CAPACITY (5), RL_TOKENS (1), RL_PERIOD (1s): a burst of 5, then 1 per second;
      RL_CONCURRENT (2) reports at once, each taking RL_REPORT_MS (1000).
"""

import logging
import os
import time
import uuid
from socketserver import ThreadingMixIn
from wsgiref.simple_server import WSGIServer, make_server

import redis

log = logging.getLogger(__name__)


def detect_backend(client):
    """("module", ...) if the server has RL.BUCKET, else ("library", ...) for FCALL rl_bucket."""
    probe = ("rl:probe", 1, 1, "1s", "COST", 0)  # COST 0 writes nothing
    try:
        client.execute_command("RL.BUCKET", *probe)
        return "module", lambda key, *args: client.execute_command("RL.BUCKET", key, *args)
    except redis.ResponseError as err:
        if "unknown command" not in str(err).lower():
            raise
    # No module: the library (loaded with FUNCTION LOAD), same arguments and reply.
    client.execute_command("FCALL", "rl_bucket", 1, *probe)
    return "library", lambda key, *args: client.execute_command("FCALL", "rl_bucket", 1, key, *args)


def lease_commands(client, backend):
    """RL.ACQUIRE and RL.RELEASE (or the library's rl_acquire and rl_release)."""
    if backend == "module":
        return (lambda key, *args: client.execute_command("RL.ACQUIRE", key, *args),
                lambda key, lease: client.execute_command("RL.RELEASE", key, lease))
    return (lambda key, *args: client.execute_command("FCALL", "rl_acquire", 1, key, *args),
            lambda key, lease: client.execute_command("FCALL", "rl_release", 1, key, lease))


def ceil_seconds(ms):
    # Headers count whole seconds; round up so a client never retries too early.
    return str(-(-ms // 1000))


class RateLimit:
    """WSGI middleware: wraps any WSGI app (Flask, Django, ...) the same way."""

    def __init__(self, app, bucket, capacity, tokens, period):
        self.app = app
        self.bucket = bucket  # RL.BUCKET or FCALL rl_bucket: detect_backend()
        self.capacity, self.tokens, self.period = capacity, tokens, period

    def __call__(self, environ, start_response):
        # X-User stands in for an authenticated user id; trust such a header only
        # behind your own auth. Without it, limit by the client's address.
        user = environ.get("HTTP_X_USER") or environ.get("REMOTE_ADDR", "unknown")
        try:
            # One command: Redis reads, decides and writes atomically, so every
            # instance of this app shares the same bucket without races.
            allowed, limit, remaining, retry_ms, reset_ms = self.bucket(
                f"rl:api:{user}", self.capacity, self.tokens, self.period
            )
        except redis.RedisError as err:
            # Fail open: a Redis outage should not take the whole API down.
            # Answer 503 here instead if the limit protects something costly.
            log.warning("rate limiter unavailable (%s); letting the request through", err)
            return self.app(environ, start_response)

        headers = [
            ("RateLimit-Limit", str(limit)),
            ("RateLimit-Remaining", str(remaining)),
            ("RateLimit-Reset", ceil_seconds(reset_ms)),
        ]
        if not allowed:
            # retry_ms is -1 when the call can never succeed (cost > capacity).
            if retry_ms >= 0:
                headers.append(("Retry-After", ceil_seconds(retry_ms)))
            start_response("429 Too Many Requests", [("Content-Type", "text/plain")] + headers)
            return [b"Too Many Requests\n"]

        # Allowed: pass the RateLimit-* headers on so clients can pace themselves.
        def start_with_headers(status, response_headers, exc_info=None):
            return start_response(status, response_headers + headers, exc_info)

        return self.app(environ, start_with_headers)


class ConcurrencyLimit:
    """WSGI middleware: at most `limit` requests of `path` in flight at once per
    user; 503 when all slots are taken. Each request holds a lease named by its
    own id; the lease ends by itself after `ttl` (the longest a request may run),
    so a worker that crashes mid-request never keeps its slot."""

    def __init__(self, app, acquire, release, path, limit, ttl):
        self.app, self.acquire, self.release = app, acquire, release
        self.path, self.limit, self.ttl = path, limit, ttl

    def __call__(self, environ, start_response):
        if environ.get("PATH_INFO") != self.path:
            return self.app(environ, start_response)
        user = environ.get("HTTP_X_USER") or environ.get("REMOTE_ADDR", "unknown")
        key, lease = f"rl:concurrent:{user}", uuid.uuid4().hex
        try:
            allowed, limit, remaining, retry_ms, _ = self.acquire(key, self.limit, self.ttl, lease)
        except redis.RedisError as err:
            log.warning("concurrency limiter unavailable (%s); letting the request through", err)
            return self.app(environ, start_response)
        # IETF RateLimit fields (draft-ietf-httpapi-ratelimit-headers), counted in
        # concurrent requests.
        state = f'"concurrency";r={remaining}' + ("" if allowed else f";t={ceil_seconds(retry_ms)}")
        headers = [
            ("RateLimit-Policy", f'"concurrency";q={limit};qu="concurrent-requests"'),
            ("RateLimit", state),
        ]
        if not allowed:
            headers.append(("Retry-After", ceil_seconds(retry_ms)))
            start_response("503 Service Unavailable", [("Content-Type", "text/plain")] + headers)
            return [b"Too many reports running; try again shortly\n"]

        def start_with_headers(status, response_headers, exc_info=None):
            return start_response(status, response_headers + headers, exc_info)

        try:
            # The body is produced here, so the slot is held for the whole work.
            return list(self.app(environ, start_with_headers))
        finally:
            try:
                self.release(key, lease)
            except redis.RedisError as err:
                log.warning("could not release %s (it ends by itself): %s", lease, err)


def router(report_ms):
    """The application: /report takes a while, anything else answers at once."""

    def app(environ, start_response):
        if environ.get("PATH_INFO") == "/report":
            time.sleep(report_ms / 1000)  # stands in for a slow export
            start_response("200 OK", [("Content-Type", "text/plain")])
            return [b"Report ready\n"]
        return hello(environ, start_response)

    return app


def hello(environ, start_response):
    """The application being protected."""
    start_response("200 OK", [("Content-Type", "text/plain")])
    return [b"Hello!\n"]


class ThreadingWSGIServer(ThreadingMixIn, WSGIServer):
    # wsgiref serves one request at a time; a thread per request keeps a slow
    # client from blocking the others.
    daemon_threads = True


def main():
    logging.basicConfig(level=logging.INFO)
    # from_url gives a thread-safe connection pool shared by all requests.
    client = redis.Redis.from_url(os.environ.get("REDIS_URL", "redis://127.0.0.1:6379"))
    backend, bucket = detect_backend(client)
    if backend == "module":
        log.info("rate limiter: the RL module (RL.BUCKET)")
    else:
        log.info("rate limiter: RL's Functions library (FCALL rl_bucket), no module")
    acquire, release = lease_commands(client, backend)
    reports = ConcurrencyLimit(
        router(int(os.environ.get("RL_REPORT_MS", "1000"))),
        acquire,
        release,
        path="/report",
        limit=int(os.environ.get("RL_CONCURRENT", "2")),
        ttl="30s",  # the longest a report may run: a crashed worker's slot frees then
    )
    app = RateLimit(
        reports,
        bucket,
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
