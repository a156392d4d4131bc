"""Typed client for RL's rate-limit commands, over your own redis-py or valkey-py
client, with the RL module or RL's Functions library (picked once, at the first call).

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
from ._sync import Lease, Pipeline, RateLimiter
from ._types import (
    Acquire,
    AllDecision,
    Bucket,
    Decision,
    Duration,
    Fixed,
    Gcra,
    Key,
    Penalty,
    Policy,
    Share,
    Sliding,
    SlidingCounter,
    Throttle,
)
from ._version import __version__

__all__ = [
    "__version__",
    "RateLimiter",
    "AsyncRateLimiter",
    "Pipeline",
    "AsyncPipeline",
    "Lease",
    "AsyncLease",
    "Backend",
    "OnConnectionError",
    "Decision",
    "AllDecision",
    "Throttle",
    "Duration",
    "Key",
    "Policy",
    "Fixed",
    "Sliding",
    "SlidingCounter",
    "Bucket",
    "Gcra",
    "Acquire",
    "Penalty",
    "Share",
    "RLError",
    "ArgumentError",
    "WrongTypeError",
    "OutOfMemoryError",
    "ServerError",
    "NotLoadedError",
    "UnsupportedCommandError",
]
