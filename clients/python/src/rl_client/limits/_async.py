"""The storage for ``limits``' asyncio strategies (``limits.aio``). flask-limiter and
slowapi use the synchronous ones (``_sync``)."""

from __future__ import annotations

from typing import Any, Optional

import redis.asyncio
import redis.asyncio.cluster
from limits.aio.storage import MovingWindowSupport, SlidingWindowCounterSupport, Storage
from limits.storage.base import TimestampedSlidingWindow

from .._async import AsyncRateLimiter
from ._ops import Operations, batches, client_url, cluster_nodes, prefix_glob, run_async


class AsyncRLStorage(Operations, Storage, MovingWindowSupport, SlidingWindowCounterSupport, TimestampedSlidingWindow):
    """``RLStorage`` for asyncio: ``async+rl://host:port[/db]``, ``async+rls://``,
    ``async+rl+unix:///path``; the options go to ``redis.asyncio.Redis.from_url``."""

    STORAGE_SCHEME = ["async+rl", "async+rls", "async+rl+unix"]
    limiter = AsyncRateLimiter

    def _client(self, uri: str, options: dict[str, Any]) -> Any:
        return redis.asyncio.Redis.from_url(client_url(uri), **options)

    async def incr(self, key: str, expiry: int, amount: int = 1) -> int:
        return await run_async(self._incr(key, expiry, amount))

    async def get(self, key: str) -> int:
        return await run_async(self._get(key))

    async def get_expiry(self, key: str) -> float:
        return await run_async(self._get_expiry(key))

    async def clear(self, key: str) -> None:
        await run_async(self._clear(key))

    async def check(self) -> bool:
        try:
            return bool(await self.redis.ping())
        except Exception:  # limits' contract: False, never an exception
            return False

    async def reset(self) -> Optional[int]:
        """Delete every key under ``key_prefix`` (SCAN, on every node of a cluster)."""
        keys = {k async for k in self.redis.scan_iter(match=prefix_glob(self.key_prefix), count=1000)}
        return sum([int(await self.redis.delete(*batch)) for batch in batches(keys)])

    async def acquire_entry(self, key: str, limit: int, expiry: int, amount: int = 1) -> bool:
        return await run_async(self._acquire_entry(key, limit, expiry, amount))

    async def get_moving_window(self, key: str, limit: int, expiry: int) -> tuple[float, int]:
        return await run_async(self._get_moving_window(key, expiry))

    async def acquire_sliding_window_entry(self, key: str, limit: int, expiry: int, amount: int = 1) -> bool:
        return await run_async(self._acquire_sliding_window_entry(key, limit, expiry, amount))

    async def get_sliding_window(self, key: str, expiry: int) -> tuple[int, float, int, float]:
        return await run_async(self._get_sliding_window(key, expiry))

    async def clear_sliding_window(self, key: str, expiry: int) -> None:
        await run_async(self._clear(key))


class AsyncRLClusterStorage(AsyncRLStorage):
    """``RLClusterStorage`` for asyncio: ``async+rl+cluster://host:port,host:port``
    (``async+rls+cluster://`` with TLS); the options go to
    ``redis.asyncio.cluster.RedisCluster``."""

    STORAGE_SCHEME = ["async+rl+cluster", "async+rls+cluster"]

    def _client(self, uri: str, options: dict[str, Any]) -> Any:
        nodes, settings = cluster_nodes(uri)
        startup = [redis.asyncio.cluster.ClusterNode(host, port) for host, port in nodes]
        return redis.asyncio.cluster.RedisCluster(startup_nodes=startup, **{**settings, **options})
