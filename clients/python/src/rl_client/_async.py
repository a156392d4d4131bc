"""The limiter over an asyncio client: redis.asyncio.Redis,
redis.asyncio.cluster.RedisCluster, valkey.asyncio.Valkey, valkey.asyncio.ValkeyCluster."""

from __future__ import annotations

import uuid
from types import TracebackType
from typing import Any, Awaitable, Optional, Union

from ._core import (
    Api,
    Backend,
    OnConnectionError,
    PipelineBase,
    Spec,
    check_backend,
    check_on_error,
    fallback,
    fallbacks,
    has_command,
    is_cluster,
    not_loaded,
    results,
)
from ._errors import CONNECTION_ERRORS, RLError, translate
from ._types import AllDecision, Decision, Duration, Key, Throttle

__all__ = ["AsyncRateLimiter", "AsyncPipeline", "AsyncLease"]


class AsyncRateLimiter(
    Api[Awaitable[Decision], Awaitable[AllDecision], Awaitable[Throttle], Awaitable[bool]]
):
    """RL's commands over your own asyncio redis-py (or valkey-py) client; every method
    is awaited. Same options as ``RateLimiter``."""

    __slots__ = ("client", "_backend", "_on_error", "_probe")

    def __init__(
        self,
        client: Any,
        *,
        backend: Optional[Backend] = None,
        on_connection_error: OnConnectionError = "raise",
    ) -> None:
        self.client = client
        self._backend: Optional[Backend] = check_backend(backend)
        self._on_error = check_on_error(on_connection_error)
        self._probe: dict[str, Any] = {"target_nodes": "random"} if is_cluster(client) else {}

    @property
    def backend(self) -> Optional[Backend]:
        """``"module"`` or ``"library"`` once known (forced or detected), else None."""
        return self._backend

    async def detect(self) -> Backend:
        """Which backend the server has (asked once, then cached); ``NotLoadedError`` when
        it has neither."""
        if self._backend is not None:
            return self._backend
        client, kw = self.client, self._probe
        try:
            backend: Backend
            if has_command(await client.execute_command("COMMAND INFO", "rl.gcra", **kw)):
                backend = "module"
            elif await client.execute_command("FUNCTION LIST", "LIBRARYNAME", "rl", **kw):
                backend = "library"
            else:
                raise not_loaded()
        except RLError:
            raise
        except CONNECTION_ERRORS:
            raise
        except Exception as err:
            typed = translate(err)
            if typed is err:
                raise
            raise typed from err
        self._backend = backend
        return backend

    async def _submit(self, spec: Spec, key: Any, args: tuple[object, ...], meta: Any, limit: Any) -> Any:
        try:
            backend = self._backend or await self.detect()
            reply = await self.client.execute_command(*spec.command(backend, key, args))
        except CONNECTION_ERRORS as err:
            if self._on_error == "raise":
                raise
            return fallback(spec.parse, self._on_error == "allow", meta, limit, err)
        except RLError:
            raise
        except Exception as err:
            typed = translate(err)
            if typed is err:
                raise
            raise typed from err
        return spec.parse(reply, meta)

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
        return AsyncPipeline(self, self.client.pipeline(transaction=transaction))


class AsyncPipeline(PipelineBase["AsyncPipeline"]):
    """Queues RL calls (each method returns the pipeline, no await); ``await execute()``
    sends them in one round trip and returns their decisions."""

    __slots__ = ()

    async def execute(self, raise_on_error: bool = True) -> list[Any]:
        """Send the queued calls; their results in order. With ``raise_on_error=False``
        a failed call's slot holds its (typed) exception instead of raising it."""
        limiter, pipe = self.limiter, self.pipe
        ops = self._ops
        if not ops:
            return []
        try:
            if self._pending:
                self._flush(limiter._backend or await limiter.detect())
            self._take()
            replies = await pipe.execute(raise_on_error=raise_on_error)
        except CONNECTION_ERRORS as err:
            self._take()
            await _reset(pipe)
            if limiter._on_error == "raise":
                raise
            return fallbacks(ops, limiter._on_error == "allow", err)
        except Exception as err:
            self._take()
            await _reset(pipe)
            typed = translate(err)
            if typed is err:
                raise
            raise typed from err
        return results(ops, replies)

    async def reset(self) -> None:
        """Drop what is queued."""
        self._take()
        await _reset(self.pipe)

    async def __aenter__(self) -> "AsyncPipeline":
        return self

    async def __aexit__(
        self,
        exc_type: Optional[type[BaseException]],
        exc: Optional[BaseException],
        tb: Optional[TracebackType],
    ) -> None:
        await self.reset()


async def _reset(pipe: Any) -> None:
    # redis.asyncio's Pipeline.reset is a coroutine; its ClusterPipeline's is not.
    result = pipe.reset()
    if hasattr(result, "__await__"):
        await result


class AsyncLease:
    """An RL.ACQUIRE lease held for an ``async with`` block (see ``Lease``)."""

    __slots__ = ("limiter", "key", "limit_arg", "ttl", "id", "decision", "released")

    def __init__(
        self, limiter: AsyncRateLimiter, key: Key, limit: int, ttl: Duration, id: Union[str, bytes]
    ) -> None:
        self.limiter = limiter
        self.key = key
        self.limit_arg = limit
        self.ttl = ttl
        #: The lease's name (the RL.ACQUIRE id).
        self.id = id
        #: The last RL.ACQUIRE decision, None before the first.
        self.decision: Optional[Decision] = None
        self.released = False

    async def acquire(self) -> Decision:
        """Take the lease, or renew it (a new ttl from now) when held."""
        self.decision = await self.limiter.acquire(self.key, self.limit_arg, self.ttl, self.id)
        self.released = False
        return self.decision

    renew = acquire

    async def release(self) -> bool:
        """Give the lease back now (once); True if it was still held."""
        d = self.decision
        if self.released or d is None or not d.allowed or d.error is not None:
            return False
        self.released = True
        return await self.limiter.release(self.key, self.id)

    async def __aenter__(self) -> "AsyncLease":
        await self.acquire()
        return self

    async def __aexit__(
        self,
        exc_type: Optional[type[BaseException]],
        exc: Optional[BaseException],
        tb: Optional[TracebackType],
    ) -> None:
        await self.release()

    def _d(self) -> Decision:
        if self.decision is None:
            raise RLError("the lease was not acquired yet: use it in an async with block or await acquire()")
        return self.decision

    @property
    def allowed(self) -> bool:
        return self._d().allowed

    @property
    def limit(self) -> int:
        return self._d().limit

    @property
    def remaining(self) -> int:
        return self._d().remaining

    @property
    def retry_after(self) -> Optional[int]:
        return self._d().retry_after

    @property
    def reset_after(self) -> int:
        return self._d().reset_after

    def headers(self, policy: str = "default") -> dict[str, str]:
        return self._d().headers(policy)
