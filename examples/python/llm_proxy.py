"""An LLM proxy that limits each user to a number of tokens per second, counting
the tokens the model really used, which are known only once it has answered.

Each request reserves its worst case before the model is called, then settles
the difference once the model reports what it used:

    RL.GCRA rl:tokens:<user> <burst> <rate> <period> COST <max_tokens>
    ... call the model: it reports usage.total_tokens ...
    RL.GCRA rl:tokens:<user> <burst> <rate> <period> REFUND <reserved - used>   (used less)
    RL.GCRA rl:tokens:<user> <burst> <rate> <period> DEBIT <used - reserved>    (used more)

REFUND gives back what the reservation over-estimated; DEBIT charges what it
under-estimated, even past the limit: the user is then in debt, and the next
requests wait until time has repaid it. Over time a user gets exactly <rate>
tokens per <period> (after a first burst of <burst>), whatever the estimates.
A failed model call gives the whole reservation back.

A client's bad input is a 400 that names the problem: a body that is not a JSON
object, a max_tokens that is not an integer from 1 to 2^53 - 1 (the largest cost
RL counts), or one above the burst (it could never fit). When Redis cannot be
reached the proxy fails closed: 503, as tokens cost money.

Works unchanged with the RL module or RL's Functions library: the typed client
(rl_client) finds out which one the server has, and the proxy says so at start.

Run:  pip install ../../clients/python -r requirements.txt && python llm_proxy.py
      curl -i -H 'X-User: ada' -d '{"prompt": "hi", "max_tokens": 100}' \\
        http://127.0.0.1:8000/v1/completions
Env:  REDIS_URL (redis://127.0.0.1:6379), PORT (8000),
      MODEL_URL (http://127.0.0.1:9000/v1/completions: any service answering
      {"usage": {"total_tokens": n}, ...}),
      RL_BURST (10000 tokens), RL_RATE (1000 tokens), RL_PERIOD (1s).
"""

import json
import logging
import os
import urllib.error
import urllib.request
from socketserver import ThreadingMixIn
from wsgiref.simple_server import WSGIServer, make_server

import redis
from rl_client import ArgumentError, RateLimiter, RLError

log = logging.getLogger("llm_proxy")

# The largest COST, REFUND or DEBIT RL takes (2^53 - 1).
MAX_COUNT = 2**53 - 1


def max_tokens_of(body):
    """The request's max_tokens (256 when absent): a JSON integer from 1 to
    MAX_COUNT, or None (a string, 1.5, 1e30, true, 0, or more than RL can count)."""
    value = body.get("max_tokens", 256)
    if isinstance(value, bool) or not isinstance(value, int) or not 1 <= value <= MAX_COUNT:
        return None
    return value


def refused_cost(err):
    """RL's text when it refused the request's own number (an ERR reply naming COST,
    the one argument a request sets, e.g. "COST must be an integer from 0 to ..."):
    the client's error. None for any other error: an outage or the setup's fault."""
    text = str(err).removeprefix("ERR ")
    return text if isinstance(err, ArgumentError) and text.startswith("COST ") else None


class TokenBudget:
    """A user's tokens: reserve() before the model runs, settle() after."""

    def __init__(self, rl, burst, rate, period):
        self.rl = rl
        self.params = (burst, rate, period)

    def check(self):
        """Raises ArgumentError (RL's text) if RL refuses the burst, rate or period:
        a wrong setting stops the proxy at start, not every request later."""
        self.rl.gcra("rl:probe", *self.params, cost=0)  # COST 0 writes nothing

    def reserve(self, user, tokens):
        return self.rl.gcra(f"rl:tokens:{user}", *self.params, cost=tokens)

    def settle(self, user, reserved, used):
        """Gives back what was reserved but not used, or charges what was used
        beyond it (into debt if need be). None when the estimate was exact."""
        if used < reserved:
            return self.rl.gcra(f"rl:tokens:{user}", *self.params, refund=reserved - used)
        if used > reserved:
            return self.rl.gcra(f"rl:tokens:{user}", *self.params, debit=used - reserved)
        return None


def call_model(url, body):
    """The model's answer (a dict with usage.total_tokens)."""
    request = urllib.request.Request(
        url, data=json.dumps(body).encode(), headers={"Content-Type": "application/json"}
    )
    with urllib.request.urlopen(request, timeout=60) as response:
        return json.load(response)


def answer(start_response, status, body, headers=()):
    start_response(status, [("Content-Type", "application/json")] + list(headers))
    return [json.dumps(body).encode() + b"\n"]


class BadInput(ValueError):
    """A request header the app refuses: a 400 with this text."""


class Proxy:
    """The WSGI app: POST /v1/completions with {"max_tokens": n, ...}. `budget`
    reserves and settles by who() (llm_gateway.py serves tiers with its own)."""

    def __init__(self, budget, model_url):
        self.budget, self.model_url = budget, model_url

    def who(self, environ):
        """Whose tokens: X-User stands in for an authenticated user id or API key."""
        return environ.get("HTTP_X_USER") or environ.get("REMOTE_ADDR", "unknown")

    def headers_for(self, who):
        """Response headers naming who was charged (none here)."""
        return []

    def settle(self, user, reserved, used):
        """The settling call's reply (None if there was nothing to settle or Redis
        failed: the reservation then stays charged at the estimate)."""
        try:
            return self.budget.settle(user, reserved, used)
        except (RLError, redis.RedisError) as err:
            log.warning("could not settle %d of %d tokens (%s)", used, reserved, err)
            return None

    def __call__(self, environ, start_response):
        if environ.get("PATH_INFO") != "/v1/completions" or environ["REQUEST_METHOD"] != "POST":
            return answer(start_response, "404 Not Found", {"error": "POST /v1/completions"})
        try:
            user = self.who(environ)
        except BadInput as err:
            return answer(start_response, "400 Bad Request", {"error": str(err)})
        # A client's bad input is a 400 and never reaches Redis.
        try:
            size = int(environ.get("CONTENT_LENGTH") or 0)
            body = json.loads(environ["wsgi.input"].read(size) or b"{}")
        except ValueError:
            return answer(start_response, "400 Bad Request", {"error": "the body must be JSON"})
        if not isinstance(body, dict):
            return answer(start_response, "400 Bad Request", {"error": "the body must be a JSON object"})
        reserved = max_tokens_of(body)
        if reserved is None:
            return answer(start_response, "400 Bad Request",
                          {"error": f"max_tokens must be an integer from 1 to {MAX_COUNT}"})

        # 1. Reserve the worst case. One command: atomic across every proxy instance.
        try:
            d = self.budget.reserve(user, reserved)
        except (RLError, redis.RedisError) as err:
            refused = refused_cost(err)
            if refused is not None:  # RL refused this request's number: still the client's
                return answer(start_response, "400 Bad Request", {"error": f"max_tokens: {refused}"})
            # Fail closed: tokens cost money. (app.py fails open instead.)
            log.warning("rate limiter unavailable (%s); refusing the request", err)
            return answer(start_response, "503 Service Unavailable", {"error": "try again shortly"})
        # RateLimit-Policy, RateLimit, X-RateLimit-*, and Retry-After when rejected.
        if not d.allowed:
            if d.retry_after is None:  # more than the burst: it can never fit
                return answer(start_response, "400 Bad Request",
                              {"error": "max_tokens is above the token limit"}, d.headers().items())
            return answer(start_response, "429 Too Many Requests", {"error": "token limit reached"},
                          d.headers().items())

        # 2. The model call, holding the reservation. A failure gives it all back.
        try:
            result = call_model(self.model_url, body)
            used = int(result["usage"]["total_tokens"])
        except (OSError, ValueError, KeyError, TypeError) as err:
            log.warning("model call failed (%s): its %d tokens given back", err, reserved)
            self.settle(user, reserved, 0)
            return answer(start_response, "502 Bad Gateway", {"error": "the model failed"})

        # 3. Settle the real cost: REFUND the difference, or DEBIT it.
        settled = self.settle(user, reserved, used) or d
        headers = list(settled.headers().items()) + self.headers_for(user) + [
            ("X-Tokens-Reserved", str(reserved)),
            ("X-Tokens-Used", str(used)),
        ]
        return answer(start_response, "200 OK", result, headers)


class ThreadingWSGIServer(ThreadingMixIn, WSGIServer):
    # A thread per request: one slow model call does not hold up the others.
    daemon_threads = True


def main():
    logging.basicConfig(level=logging.INFO, format="%(name)s: %(message)s")
    client = redis.Redis.from_url(os.environ.get("REDIS_URL", "redis://127.0.0.1:6379"))
    # A connection error or a call past its deadline raises: the proxy fails closed.
    # A model call takes seconds, so the limiter's deadline can be a second rather
    # than the client's default 100 ms, which a busy server can miss.
    rl = RateLimiter(client, timeout=1.0)
    if rl.detect() == "module":
        log.info("rate limiter: the RL module (RL.GCRA … COST, then REFUND or DEBIT)")
    else:
        log.info("rate limiter: RL's Functions library (FCALL rl_gcra), no module")
    budget = TokenBudget(
        rl,
        burst=int(os.environ.get("RL_BURST", "10000")),
        rate=int(os.environ.get("RL_RATE", "1000")),
        period=os.environ.get("RL_PERIOD", "1s"),  # an RL duration: 1500ms, 60, 1m, ...
    )
    try:
        budget.check()
    except RLError as err:
        raise SystemExit(f"llm_proxy: RL_BURST, RL_RATE or RL_PERIOD: {err}")
    app = Proxy(budget, os.environ.get("MODEL_URL", "http://127.0.0.1:9000/v1/completions"))
    port = int(os.environ.get("PORT", "8000"))
    with make_server("127.0.0.1", port, app, server_class=ThreadingWSGIServer) as server:
        log.info("listening on http://127.0.0.1:%d", port)
        server.serve_forever()


if __name__ == "__main__":
    main()
