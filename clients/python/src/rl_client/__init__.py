"""Typed client for RL's rate-limit commands, over your own redis-py or valkey-py
client, with the RL module or RL's Functions library (picked once, at the first call).

    from rl_client import RateLimiter
    rl = RateLimiter(redis.Redis())
    d = rl.gcra("rl:api:ada", 20, 100, "1m")   # d.allowed, d.remaining, d.headers()
"""

from . import _async, _errors, _sync, _types
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

# Each module's public names, as its own __all__ lists them.
__all__ = ["__version__", "Backend", "OnConnectionError"]
__all__ += _sync.__all__
__all__ += _async.__all__
__all__ += _types.__all__
__all__ += _errors.__all__
