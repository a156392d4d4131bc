"""An LLM gateway: free, pro and enterprise customers share ONE provider budget of
tokens (what the LLM provider lets the whole account use per minute), split by tier
with weights 1, 4 and 16, and each customer also has a limit of its own.

Each request reserves its max_tokens in one atomic call, from its tier's share of
the provider budget AND from the customer's own limit (all or nothing: a request
one of them refuses takes nothing from the other):

    RL.ALL 2 rl:{llm}:provider rl:{llm}:customer:<id>
           SHARE <tier> <weight> <capacity> <rate> <period>
           GCRA <customer burst> <customer rate> <period>  COST <max_tokens>

then settles the real usage on both, as llm_proxy.py does: the same call with
REFUND <reserved - used> or DEBIT <used - reserved>, or REFUND of it all when the
model call failed.

The tenant of RL.SHARE is the tier, not the customer. The weights then say exactly
what the tiers get when the provider budget is short: enterprise 16/21 of it, pro
4/21, free 1/21, however many customers each tier has (with tenant = customer,
a thousand free customers would together outweigh one enterprise customer). Fairness
between the customers of one tier comes from their own limit (the GCRA policy).
What a quiet tier leaves unused goes to the others; the provider budget is never
exceeded beyond what DEBIT charges for real usage above the reservation.

Both keys carry the hash tag {llm}, as RL.ALL needs its keys in one Cluster slot.
Everything else (input checks, 400/429/502/503, fail closed) is llm_proxy.py's.

Run:  pip install ../../clients/python -r requirements.txt && python llm_gateway.py
      curl -i -H 'X-User: ada' -H 'X-Tier: pro' -d '{"max_tokens": 100}' \\
        http://127.0.0.1:8000/v1/completions
Env:  REDIS_URL (redis://127.0.0.1:6379), PORT (8000), MODEL_URL (as llm_proxy.py),
      RL_CAPACITY (20000 tokens), RL_RATE (100000 tokens), RL_PERIOD (1m): the
      provider budget; RL_CUSTOMER_BURST (10000), RL_CUSTOMER_RATE (20000) per period.
X-User stands in for an authenticated customer, X-Tier for its tier (free when absent).
"""

import json
import logging
import os
from wsgiref.simple_server import make_server

import redis
from rl_client import Gcra, RateLimiter, RLError, Share

from llm_proxy import (MAX_COUNT, ThreadingWSGIServer, answer, call_model, max_tokens_of,
                       refused_cost)

log = logging.getLogger("llm_gateway")

WEIGHTS = {"free": 1, "pro": 4, "enterprise": 16}


class Gateway:
    """The WSGI app: POST /v1/completions with {"max_tokens": n, ...}."""

    def __init__(self, rl, model_url, capacity, rate, customer_burst, customer_rate, period):
        self.rl, self.model_url = rl, model_url
        self.provider = (capacity, rate, period)
        self.customer = Gcra(customer_burst, customer_rate, period)

    def policies(self, customer, tier):
        """The request's two policies, for RL.ALL: the tier's share, the customer's limit."""
        return {"rl:{llm}:provider": Share(tier, WEIGHTS[tier], *self.provider),
                f"rl:{{llm}}:customer:{customer}": self.customer}

    def check(self):
        """Raises RLError if RL refuses a setting (COST 0 writes nothing)."""
        self.rl.all(self.policies("probe", "free"), cost=0)

    def settle(self, policies, reserved, used):
        """Gives back what was not used, or charges what was used beyond the
        reservation. None when exact, or when Redis failed (logged)."""
        try:
            if used < reserved:
                return self.rl.all(policies, refund=reserved - used)
            if used > reserved:
                return self.rl.all(policies, debit=used - reserved)
        except (RLError, redis.RedisError) as err:
            log.warning("could not settle %d of %d tokens (%s)", used, reserved, err)
        return None

    def __call__(self, environ, start_response):
        if environ.get("PATH_INFO") != "/v1/completions" or environ["REQUEST_METHOD"] != "POST":
            return answer(start_response, "404 Not Found", {"error": "POST /v1/completions"})
        customer = environ.get("HTTP_X_USER") or environ.get("REMOTE_ADDR", "unknown")
        tier = environ.get("HTTP_X_TIER", "free")
        if tier not in WEIGHTS:
            return answer(start_response, "400 Bad Request", {"error": f"X-Tier: one of {list(WEIGHTS)}"})
        try:
            size = int(environ.get("CONTENT_LENGTH") or 0)
            body = json.loads(environ["wsgi.input"].read(size) or b"{}")
        except ValueError:
            return answer(start_response, "400 Bad Request", {"error": "the body must be JSON"})
        reserved = max_tokens_of(body) if isinstance(body, dict) else None
        if reserved is None:
            return answer(start_response, "400 Bad Request",
                          {"error": f"a JSON object with max_tokens an integer from 1 to {MAX_COUNT}"})

        # 1. Reserve max_tokens from the tier's share and the customer's limit, at once.
        policies = self.policies(customer, tier)
        try:
            d = self.rl.all(policies, cost=reserved)
        except (RLError, redis.RedisError) as err:
            refused = refused_cost(err)
            if refused is not None:
                return answer(start_response, "400 Bad Request", {"error": f"max_tokens: {refused}"})
            log.warning("rate limiter unavailable (%s); refusing the request", err)
            return answer(start_response, "503 Service Unavailable", {"error": "try again shortly"})
        if not d.allowed:
            if d.retry_after is None:  # above a capacity: it can never fit
                return answer(start_response, "400 Bad Request",
                              {"error": "max_tokens is above the token limit"}, d.headers().items())
            return answer(start_response, "429 Too Many Requests", {"error": "token limit reached"},
                          d.headers().items())

        # 2. The model call; a failure gives the whole reservation back.
        try:
            result = call_model(self.model_url, body)
            used = int(result["usage"]["total_tokens"])
        except (OSError, ValueError, KeyError, TypeError) as err:
            log.warning("model call failed (%s): its %d tokens given back", err, reserved)
            self.settle(policies, reserved, 0)
            return answer(start_response, "502 Bad Gateway", {"error": "the model failed"})

        # 3. Settle the real cost on both policies.
        settled = self.settle(policies, reserved, used) or d
        headers = list(settled.headers().items()) + [
            ("X-Tier", tier), ("X-Tokens-Reserved", str(reserved)), ("X-Tokens-Used", str(used))]
        return answer(start_response, "200 OK", result, headers)


def main():
    logging.basicConfig(level=logging.INFO, format="%(name)s: %(message)s")
    client = redis.Redis.from_url(os.environ.get("REDIS_URL", "redis://127.0.0.1:6379"))
    rl = RateLimiter(client)
    if rl.detect() == "module":
        log.info("rate limiter: the RL module (RL.ALL … SHARE … GCRA … COST, then REFUND or DEBIT)")
    else:
        log.info("rate limiter: RL's Functions library (FCALL rl_all), no module")
    env = os.environ.get
    app = Gateway(rl, env("MODEL_URL", "http://127.0.0.1:9000/v1/completions"),
                  capacity=int(env("RL_CAPACITY", "20000")), rate=int(env("RL_RATE", "100000")),
                  customer_burst=int(env("RL_CUSTOMER_BURST", "10000")),
                  customer_rate=int(env("RL_CUSTOMER_RATE", "20000")),
                  period=env("RL_PERIOD", "1m"))
    try:
        app.check()
    except RLError as err:
        raise SystemExit(f"llm_gateway: RL_CAPACITY, RL_RATE, RL_CUSTOMER_* or RL_PERIOD: {err}")
    port = int(env("PORT", "8000"))
    with make_server("127.0.0.1", port, app, server_class=ThreadingWSGIServer) as server:
        log.info("listening on http://127.0.0.1:%d", port)
        server.serve_forever()


if __name__ == "__main__":
    main()
