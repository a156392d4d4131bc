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
Everything else (input checks, 400/429/502/503, fail closed, settling) is
llm_proxy.py's app, which this one extends.

Run:  pip install ../../clients/python -r requirements.txt && python llm_gateway.py
      curl -i -H 'X-User: ada' -H 'X-Tier: pro' -d '{"max_tokens": 100}' \\
        http://127.0.0.1:8000/v1/completions
Env:  REDIS_URL (redis://127.0.0.1:6379), PORT (8000), MODEL_URL (as llm_proxy.py),
      RL_CAPACITY (20000 tokens), RL_RATE (100000 tokens), RL_PERIOD (1m): the
      provider budget; RL_CUSTOMER_BURST (10000), RL_CUSTOMER_RATE (20000) per period.
X-User stands in for an authenticated customer, X-Tier for its tier (free when absent).
"""

import logging
import os
from wsgiref.simple_server import make_server

import redis
from rl_client import Gcra, RateLimiter, RLError, Share

from llm_proxy import BadInput, Proxy, ThreadingWSGIServer

log = logging.getLogger("llm_gateway")

WEIGHTS = {"free": 1, "pro": 4, "enterprise": 16}


class TierBudget:
    """The provider's tokens shared by tier, and each customer's own limit, with
    llm_proxy.TokenBudget's interface: reserve() before the model runs, settle()
    after; `who` is (customer, tier)."""

    def __init__(self, rl, capacity, rate, customer_burst, customer_rate, period):
        self.rl = rl
        self.provider = (capacity, rate, period)
        self.customer = Gcra(customer_burst, customer_rate, period)

    def policies(self, who):
        """The request's two policies, for RL.ALL: the tier's share, the customer's limit."""
        customer, tier = who
        return {"rl:{llm}:provider": Share(tier, WEIGHTS[tier], *self.provider),
                f"rl:{{llm}}:customer:{customer}": self.customer}

    def check(self):
        """Raises RLError if RL refuses a setting (COST 0 writes nothing)."""
        self.rl.all(self.policies(("probe", "free")), cost=0)

    def reserve(self, who, tokens):
        return self.rl.all(self.policies(who), cost=tokens)

    def settle(self, who, reserved, used):
        """Gives back what was not used, or charges what was used beyond the
        reservation, on both policies. None when the estimate was exact."""
        if used < reserved:
            return self.rl.all(self.policies(who), refund=reserved - used)
        if used > reserved:
            return self.rl.all(self.policies(who), debit=used - reserved)
        return None


class Gateway(Proxy):
    """llm_proxy.py's app, charging a TierBudget: the customer from X-User, its tier
    from X-Tier."""

    def who(self, environ):
        tier = environ.get("HTTP_X_TIER", "free")
        if tier not in WEIGHTS:
            raise BadInput(f"X-Tier: one of {list(WEIGHTS)}")
        return (super().who(environ), tier)

    def headers_for(self, who):
        return [("X-Tier", who[1])]


def main():
    logging.basicConfig(level=logging.INFO, format="%(name)s: %(message)s")
    client = redis.Redis.from_url(os.environ.get("REDIS_URL", "redis://127.0.0.1:6379"))
    rl = RateLimiter(client, timeout=1.0)  # as llm_proxy: a model call takes seconds
    if rl.detect() == "module":
        log.info("rate limiter: the RL module (RL.ALL … SHARE … GCRA … COST, then REFUND or DEBIT)")
    else:
        log.info("rate limiter: RL's Functions library (FCALL rl_all), no module")
    env = os.environ.get
    budget = TierBudget(rl, capacity=int(env("RL_CAPACITY", "20000")),
                        rate=int(env("RL_RATE", "100000")),
                        customer_burst=int(env("RL_CUSTOMER_BURST", "10000")),
                        customer_rate=int(env("RL_CUSTOMER_RATE", "20000")),
                        period=env("RL_PERIOD", "1m"))
    try:
        budget.check()
    except RLError as err:
        raise SystemExit(f"llm_gateway: RL_CAPACITY, RL_RATE, RL_CUSTOMER_* or RL_PERIOD: {err}")
    app = Gateway(budget, env("MODEL_URL", "http://127.0.0.1:9000/v1/completions"))
    port = int(env("PORT", "8000"))
    with make_server("127.0.0.1", port, app, server_class=ThreadingWSGIServer) as server:
        log.info("listening on http://127.0.0.1:%d", port)
        server.serve_forever()


if __name__ == "__main__":
    main()
