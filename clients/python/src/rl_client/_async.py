"""The limiter over an asyncio client: redis.asyncio.Redis,
redis.asyncio.cluster.RedisCluster, valkey.asyncio.Valkey, valkey.asyncio.ValkeyCluster.
Only the I/O: the commands, their replies and what a failure becomes are in ``_core``."""

from __future__ import annotations

import asyncio
import uuid
from typing import Any, Awaitable, Optional, Union

from ._arguments import Duration, Key
from ._core import Backend, LeaseBase, LimiterBase, PipelineBase, Steps, raise_typed, results
from ._spec import Spec
from ._types import AllDecision, Decision, Throttle

__all__ = ["AsyncRateLimiter", "AsyncPipeline", "AsyncLease"]

# asyncio.timeout (3.11+): a deadline without a task of its own; else asyncio.wait_for.
_timeout: Any = getattr(asyncio, "timeout", None)


class AsyncRateLimiter(
    LimiterBase[Awaitable[Decision], Awaitable[AllDecision], Awaitable[Throttle], Awaitable[bool]]
):
    """RL's commands over your own asyncio redis-py (or valkey-py) client; every method
    is awaited. Same options as ``RateLimiter``; here the deadline bounds the whole
    call (detection included), also over a cluster client."""

    __slots__ = ()

    async def _drive(self, steps: Steps) -> Any:
        """Run a call's or a batch's round trips on the client within the deadline (the
        whole call, detection included: a cancelled read drops its connection); its
        result."""
        if self.timeout is None:
            return await self._run(steps)
        if _timeout is None:
            return await asyncio.wait_for(self._run(steps), self.timeout)
        async with _timeout(self.timeout):
            return await self._run(steps)

    async def _run(self, steps: Steps) -> Any:
        conn = self._conn
        try:
            step = next(steps)
            while True:
                try:
                    if type(step) is tuple:
                        reply = await conn.execute_command(*step[0], **step[1])
                    else:
                        reply = await step.execute(raise_on_error=False)
                except Exception as err:
                    step = steps.throw(err)
                else:
                    step = steps.send(reply)
        except StopIteration as done:
            return done.value

    async def detect(self) -> Backend:
        """Ask the server now which backend it has, and use it from now on;
        ``NotLoadedError`` when it has neither."""
        try:
            return await self._drive(self._detection())  # type: ignore[no-any-return]
        except Exception as err:
            raise_typed(err)

    async def _submit(self, spec: Spec, key: Any, args: tuple[object, ...], meta: Any, limit: Any) -> Any:
        t = None
        if self._survival is not None:
            t, d = self._survive(spec, key, args, limit, meta)
            if d is not None:
                return d
        try:
            reply = await self._drive(self._call(spec, key, args))
        except Exception as err:
            return self._failed(spec, meta, limit, err, t)
        return spec.parse(reply, meta) if t is None else self._answered(t, spec.parse(reply, meta))

    async def aclose(self) -> None:
        """Close the limiter's own connections (not the client's)."""
        if self._conn is not self.client:
            await self._conn.connection_pool.disconnect()

    def lease(
        self,
        key: Key,
        limit: int,
        ttl: Duration,
        id: Optional[Union[str, bytes]] = None,
    ) -> "AsyncLease":
        """A lease to use in ``async with``: acquired on entry, released on exit when it
        was taken. Check ``lease.allowed`` inside. ``id`` defaults to a random UUID."""
        return AsyncLease(self, key, limit, ttl, uuid.uuid4().hex if id is None else id)

    def pipeline(self, transaction: bool = False) -> "AsyncPipeline":
        """A pipeline whose RL calls queue and whose ``await execute()`` returns typed
        decisions, in order."""
        return AsyncPipeline(self, transaction)


class AsyncPipeline(PipelineBase["AsyncPipeline"]):
    """Queues RL calls (each method returns the pipeline, no await); ``await execute()``
    sends them in one round trip and returns their decisions."""

    __slots__ = ()

    async def execute(self, raise_on_error: bool = True) -> list[Any]:
        """Send the queued calls; their results in order. With ``raise_on_error=False``
        a failed call's slot holds its (typed) exception instead of raising it."""
        if not self._ops:
            return []
        ops, waiting, form = self._take()
        try:
            replies = await self.limiter._drive(self._batch(ops, waiting, form))
        except Exception as err:
            await _reset(self.pipe)
            return self._failed(ops, err)
        return results(ops, replies, raise_on_error)

    async def reset(self) -> None:
        """Drop what is queued."""
        self._take()
        await _reset(self.pipe)

    async def __aenter__(self) -> "AsyncPipeline":
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        await self.reset()


async def _reset(pipe: Any) -> None:
    # redis.asyncio's Pipeline.reset is a coroutine; its ClusterPipeline's is not.
    result = pipe.reset()
    if hasattr(result, "__await__"):
        await result


class AsyncLease(LeaseBase[AsyncRateLimiter]):
    """An RL.ACQUIRE lease held for an ``async with`` block (see ``Lease``)."""

    __slots__ = ()

    _not_acquired = "the lease was not acquired yet: use it in an async with block or await acquire()"

    async def acquire(self) -> Decision:
        """Take the lease, or renew it (a new ttl from now) when held."""
        self.decision = await self.limiter.acquire(self.key, self.limit_arg, self.ttl, self.id)
        self.released = False
        return self.decision

    renew = acquire

    async def release(self) -> bool:
        """Give the lease back now (once); True if it was still held."""
        return self._to_release() and await self.limiter.release(self.key, self.id)

    async def __aenter__(self) -> "AsyncLease":
        await self.acquire()
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        await self.release()
