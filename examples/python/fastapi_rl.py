"""FastAPI (or any Starlette app) rate-limited with RL through the typed client: a
dependency that takes one unit of the caller's GCRA limit per request, answers 429
with Retry-After when refused, and puts the RateLimit headers on every response.

Run:  pip install ../../clients/python -r requirements-fastapi.txt
      REDIS_URL=redis://127.0.0.1:6379 uvicorn fastapi_rl:app --port 8000
Works unchanged with the RL module or RL's Functions library (the client finds out).
"""

import os

import redis.asyncio as redis
from fastapi import Depends, FastAPI, HTTPException, Request, Response

from rl_client import AsyncRateLimiter

# Fail open: if Redis does not answer, let the request through ("deny" to refuse it).
rl = AsyncRateLimiter(
    redis.Redis.from_url(os.environ.get("REDIS_URL", "redis://127.0.0.1:6379")),
    on_connection_error="allow",
)


async def rate_limit(request: Request, response: Response) -> None:
    # X-User stands in for an authenticated user id: trust it only behind your own auth.
    user = request.headers.get("x-user") or (request.client.host if request.client else "unknown")
    decision = await rl.gcra(f"rl:api:{user}", 5, 1, "1s")  # a burst of 5, then 1 per second
    if not decision.allowed:
        raise HTTPException(429, "Too Many Requests", headers=decision.headers())
    response.headers.update(decision.headers())


app = FastAPI(dependencies=[Depends(rate_limit)])


@app.get("/")
async def hello() -> dict[str, str]:
    return {"hello": "world"}
