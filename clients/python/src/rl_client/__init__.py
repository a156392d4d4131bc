"""Typed client for RL's rate-limit commands, over your own redis-py or valkey-py
client, with the RL module or RL's Functions library (found at the first call, and
again whenever the server no longer has it).

    from rl_client import RateLimiter
    rl = RateLimiter(redis.Redis())
    d = rl.gcra("rl:api:ada", 20, 100, "1m")   # d.allowed, d.remaining, d.headers()
"""

from ._async import AsyncLease, AsyncPipeline, AsyncRateLimiter
from ._core import Backend, OnConnectionError
from ._errors import (
    ArgumentError,
    NotLoadedError,
    OutOfMemoryError,
    RLError,
    ServerError,
    UnsupportedCommandError,
    WrongTypeError,
)
from ._policies import Acquire, Bucket, Fixed, Gcra, Penalty, Quota, Share, Sliding, SlidingCounter
from ._spec import Policy
from ._sync import Lease, Pipeline, RateLimiter
from ._types import AllDecision, Decision, Duration, Key, Throttle
from ._version import __version__

__all__ = [
    "__version__",
    "Backend",
    "OnConnectionError",
    "RateLimiter",
    "Pipeline",
    "Lease",
    "AsyncRateLimiter",
    "AsyncPipeline",
    "AsyncLease",
    "Duration",
    "Key",
    "Decision",
    "AllDecision",
    "Throttle",
    "Policy",
    "Fixed",
    "Sliding",
    "SlidingCounter",
    "Bucket",
    "Gcra",
    "Acquire",
    "Penalty",
    "Share",
    "Quota",
    "RLError",
    "ArgumentError",
    "WrongTypeError",
    "OutOfMemoryError",
    "ServerError",
    "NotLoadedError",
    "UnsupportedCommandError",
]
