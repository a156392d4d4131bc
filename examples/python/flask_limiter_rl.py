"""flask-limiter's quick start with RL as its storage: the same app as in its docs,
whose Redis line is ``storage_uri="redis://localhost:6379"``. Two lines differ: the
import that registers RL's ``rl://`` scheme with limits, and the URI.

    pip install ../../clients/python -r requirements-limiters.txt
    python flask_limiter_rl.py          # RL_URI (rl://localhost:6379), PORT (5000),
                                        # RL_STRATEGY (fixed-window, moving-window,
                                        # sliding-window-counter)
"""

import os

from flask import Flask
from flask_limiter import Limiter
from flask_limiter.util import get_remote_address

import rl_client.limits  # noqa: F401  registers rl:// with limits

app = Flask(__name__)
limiter = Limiter(
    get_remote_address,
    app=app,
    default_limits=["200 per day", "50 per hour"],
    storage_uri=os.environ.get("RL_URI", "rl://localhost:6379"),
    strategy=os.environ.get("RL_STRATEGY", "fixed-window"),
)


@app.route("/slow")
@limiter.limit("1 per day")
def slow():
    return ":("


@app.route("/medium")
@limiter.limit("1/second", override_defaults=False)
def medium():
    return ":|"


@app.route("/fast")
def fast():
    return ":)"


@app.route("/ping")
@limiter.exempt
def ping():
    return "PONG"


if __name__ == "__main__":
    app.run(port=int(os.environ.get("PORT", "5000")))
