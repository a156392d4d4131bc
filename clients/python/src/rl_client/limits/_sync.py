"""The storage for ``limits``' synchronous strategies, the ones flask-limiter and
slowapi use."""

from __future__ import annotations

from typing import Any, Optional

import redis.cluster
from limits.storage import MovingWindowSupport, SlidingWindowCounterSupport, Storage
from limits.storage.base import TimestampedSlidingWindow

from .._sync import RateLimiter
from ._ops import Operations, batches, client_url, cluster_nodes, prefix_glob, run


class RLStorage(Operations, Storage, MovingWindowSupport, SlidingWindowCounterSupport, TimestampedSlidingWindow):
    """``limits``' fixed window, moving window and sliding window counter on RL.FIXED,
    RL.SLIDING and RL.SLIDINGCOUNTER (the RL module or RL's Functions library, found at
    the first call): ``rl://[user:password@]host:port[/db]``, ``rls://`` (TLS),
    ``rl+unix:///path``.

    ``key_prefix`` starts every key (``RL-LIMITS``); ``backend`` (``"module"`` or
    ``"library"``) skips detection; every other option goes to ``redis.Redis.from_url``
    with the URI, as with ``limits``' own Redis storage: the calls go through that one
    client, with its timeouts and retries.
    """

    STORAGE_SCHEME = ["rl", "rls", "rl+unix"]
    limiter = RateLimiter

    def _client(self, uri: str, options: dict[str, Any]) -> Any:
        return redis.Redis.from_url(client_url(uri), **options)

    def incr(self, key: str, expiry: int, amount: int = 1) -> int:
        return run(self._incr(key, expiry, amount))

    def get(self, key: str) -> int:
        return run(self._get(key))

    def get_expiry(self, key: str) -> float:
        return run(self._get_expiry(key))

    def clear(self, key: str) -> None:
        run(self._clear(key))

    def check(self) -> bool:
        try:
            return bool(self.redis.ping())
        except Exception:  # limits' contract: False, never an exception
            return False

    def reset(self) -> Optional[int]:
        """Delete every key under ``key_prefix`` (SCAN, on every node of a cluster)."""
        keys = set(self.redis.scan_iter(match=prefix_glob(self.key_prefix), count=1000))
        return sum(int(self.redis.delete(*batch)) for batch in batches(keys))

    def acquire_entry(self, key: str, limit: int, expiry: int, amount: int = 1) -> bool:
        return run(self._acquire_entry(key, limit, expiry, amount))

    def get_moving_window(self, key: str, limit: int, expiry: int) -> tuple[float, int]:
        return run(self._get_moving_window(key, expiry))

    def acquire_sliding_window_entry(self, key: str, limit: int, expiry: int, amount: int = 1) -> bool:
        return run(self._acquire_sliding_window_entry(key, limit, expiry, amount))

    def get_sliding_window(self, key: str, expiry: int) -> tuple[int, float, int, float]:
        return run(self._get_sliding_window(key, expiry))

    def clear_sliding_window(self, key: str, expiry: int) -> None:
        run(self._clear(key))


class RLClusterStorage(RLStorage):
    """The same on a Redis Cluster: ``rl+cluster://[user:password@]host:port,host:port``
    (``rls+cluster://`` with TLS); the options go to ``redis.cluster.RedisCluster``."""

    STORAGE_SCHEME = ["rl+cluster", "rls+cluster"]

    def _client(self, uri: str, options: dict[str, Any]) -> Any:
        nodes, settings = cluster_nodes(uri)
        startup = [redis.cluster.ClusterNode(host, port) for host, port in nodes]  # type: ignore[no-untyped-call]
        return redis.cluster.RedisCluster(startup_nodes=startup, **{**settings, **options})

