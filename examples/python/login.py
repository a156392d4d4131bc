"""A login route that blocks repeat offenders for longer and longer: RL.PENALTY.

Each failed password is a strike for that account from that address. Five strikes
within 15 minutes block further attempts for a minute; each further block while the
offender is remembered lasts twice as long (2, 4, 8 ... minutes, at most an hour),
and an hour of quiet after a block forgives the past. Attempts are also rate
limited (10 at once, then one every 6 s). Every request makes one atomic call that
asks "is this offender blocked?" and, if not, takes the attempt from the rate
limit; while blocked (or over the rate) the route answers 429 with Retry-After
*before* looking at the password, so a blocked attacker learns nothing, not even
when they guessed right.

    RL.ALL 2 rl:login:{<account>:<ip>}:strikes rl:login:{<account>:<ip>}:attempts
           PENALTY 5 15m 1m 1h GCRA 10 1 6s              blocked? else take one attempt
    RL.PENALTY rl:login:{<account>:<ip>}:strikes 5 15m 1m 1h   a failed password

Keying on account and address together keeps one attacker from locking the real
user out from elsewhere. A successful login does not clear earlier strikes: they
expire by themselves.

Works unchanged with the RL module or, where MODULE LOAD is refused, RL's Functions
library (functions/rl.lua): the typed client (rl_client) finds out which one the
server has, and this server says so at start.

Run:  pip install ../../clients/python -r requirements.txt && python login.py
Env:  REDIS_URL (redis://127.0.0.1:6379), PORT (8000),
      RL_STRIKES (5), RL_WINDOW (15m), RL_BLOCK (1m), RL_MAX (1h).
Try:  curl -i -d 'account=alice&password=guess' http://127.0.0.1:8000/login
"""

import hmac
import logging
import os
from socketserver import ThreadingMixIn
from urllib.parse import parse_qs
from wsgiref.simple_server import WSGIServer, make_server

import redis
from rl_client import Gcra, Penalty, RateLimiter, RLError

log = logging.getLogger(__name__)

# Stands in for your user store (which keeps password hashes, never passwords).
USERS = {"alice": "wonderland", "bob": "builder"}

# Ten attempts at once, then one every six seconds, per account and address.
ATTEMPTS = Gcra(10, 1, "6s")


class Login:
    """The WSGI app: POST /login with form fields account and password."""

    def __init__(self, rl, policy):
        self.rl = rl
        self.policy = policy  # strikes, window, block, max

    def __call__(self, environ, start_response):
        if environ.get("PATH_INFO") != "/login" or environ.get("REQUEST_METHOD") != "POST":
            start_response("404 Not Found", [("Content-Type", "text/plain")])
            return [b"POST /login with account and password\n"]
        form = parse_qs(read_body(environ).decode("utf-8", "replace"))
        account = form.get("account", [""])[0]
        password = form.get("password", [""])[0]
        # One hash tag: both keys live on one cluster node, as RL.ALL needs.
        who = f"{{{account}:{environ.get('REMOTE_ADDR', 'unknown')}}}"
        strikes, attempts = f"rl:login:{who}:strikes", f"rl:login:{who}:attempts"
        try:
            # One call: blocked? If not, take this attempt from the rate limit. The
            # Penalty policy is only looked at (RL.ALL never strikes); the combined
            # decision's limit and remaining are the attempts', its retry_after the
            # block's rest when blocked.
            d = self.rl.all({strikes: Penalty(*self.policy), attempts: ATTEMPTS})
            if d.allowed and not password_ok(account, password):
                # One strike, answered with the strikes left. The strike that reaches
                # the limit starts the block and is answered like any attempt while
                # blocked.
                d = self.rl.penalty(strikes, *self.policy)
                return answer(start_response, d, "strikes", "401 Unauthorized",
                              b"Wrong account or password\n")
        except (RLError, redis.RedisError) as err:
            # Fail closed: without the limiter, passwords could be guessed freely.
            log.warning("login limiter unavailable: %s", err)
            start_response("503 Service Unavailable", [("Content-Type", "text/plain")])
            return [b"Try again later\n"]
        return answer(start_response, d, "attempts", "200 OK", b"Welcome!\n")


def read_body(environ):
    try:
        length = int(environ.get("CONTENT_LENGTH") or 0)
    except ValueError:
        length = 0
    return environ["wsgi.input"].read(min(length, 4096))


def password_ok(account, password):
    expected = USERS.get(account)
    # compare_digest: no timing hint about how much of the password matched.
    return expected is not None and hmac.compare_digest(expected.encode(), password.encode())


def answer(start_response, d, policy, status, body):
    """`status` when the decision allows, else 429; with the decision's RateLimit
    fields (the attempts left, or after a wrong password the strikes left before a
    block) and, when rejected, Retry-After."""
    if not d.allowed:
        status, body = "429 Too Many Requests", b"Too many failed attempts; try again later\n"
    start_response(status, [("Content-Type", "text/plain")] + list(d.headers(policy).items()))
    return [body]


class ThreadingWSGIServer(ThreadingMixIn, WSGIServer):
    # wsgiref serves one request at a time; a thread per request keeps a slow
    # client from blocking the others.
    daemon_threads = True


def main():
    logging.basicConfig(level=logging.INFO)
    # from_url gives a thread-safe connection pool shared by all requests.
    client = redis.Redis.from_url(os.environ.get("REDIS_URL", "redis://127.0.0.1:6379"))
    rl = RateLimiter(client)  # a connection error raises: this route fails closed
    if rl.detect() == "module":
        log.info("login limiter: the RL module (RL.ALL, RL.PENALTY)")
    else:
        log.info("login limiter: RL's Functions library (FCALL rl_all, rl_penalty), no module")
    policy = (
        int(os.environ.get("RL_STRIKES", "5")),
        os.environ.get("RL_WINDOW", "15m"),  # RL durations: 1500ms, 60, 1m, ...
        os.environ.get("RL_BLOCK", "1m"),
        os.environ.get("RL_MAX", "1h"),
    )
    port = int(os.environ.get("PORT", "8000"))
    with make_server("127.0.0.1", port, Login(rl, policy), server_class=ThreadingWSGIServer) as server:
        log.info("listening on http://127.0.0.1:%d", port)
        server.serve_forever()


if __name__ == "__main__":
    main()
