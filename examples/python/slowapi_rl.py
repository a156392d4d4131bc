"""slowapi's FastAPI example with RL as its storage: the same app as in its docs, with
``storage_uri`` set as for Redis (``"redis://localhost:6379"``). Two lines differ: the
import that registers RL's ``rl://`` scheme with limits, and the URI.

    pip install ../../clients/python -r requirements-limiters.txt
    python slowapi_rl.py                # RL_URI (rl://localhost:6379), PORT (8000),
                                        # RL_STRATEGY (fixed-window, moving-window,
                                        # sliding-window-counter)
"""

import os

import uvicorn
from fastapi import FastAPI, Request
from fastapi.responses import PlainTextResponse
from slowapi import Limiter, _rate_limit_exceeded_handler
from slowapi.errors import RateLimitExceeded
from slowapi.util import get_remote_address

import rl_client.limits  # noqa: F401  registers rl:// with limits

limiter = Limiter(
    key_func=get_remote_address,
    storage_uri=os.environ.get("RL_URI", "rl://localhost:6379"),
    strategy=os.environ.get("RL_STRATEGY", "fixed-window"),
)
app = FastAPI()
app.state.limiter = limiter
app.add_exception_handler(RateLimitExceeded, _rate_limit_exceeded_handler)


@app.get("/home")
@limiter.limit("5/minute")
async def homepage(request: Request):
    return PlainTextResponse("test")


if __name__ == "__main__":
    uvicorn.run(app, host="127.0.0.1", port=int(os.environ.get("PORT", "8000")))
