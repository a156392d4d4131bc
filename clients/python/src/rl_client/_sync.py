"""The limiter over a synchronous client: redis.Redis, redis.cluster.RedisCluster,
valkey.Valkey, valkey.cluster.ValkeyCluster."""

from __future__ import annotations

import uuid
from types import TracebackType
from typing import Any, Optional, Union

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

__all__ = ["RateLimiter", "Pipeline", "Lease"]


class RateLimiter(Api[Decision, AllDecision, Throttle, bool]):
    """RL's commands over your own synchronous redis-py (or valkey-py) client.

    ``backend``: ``"module"`` or ``"library"`` to skip detection; by default the first
    call asks the server (``COMMAND INFO rl.gcra``, else ``FUNCTION LIST LIBRARYNAME rl``)
    and the answer is kept for the life of this object.

    ``on_connection_error``: what a call answers when Redis does not (a connection error
    or time-out): ``"raise"`` (the default) re-raises the client's error; ``"allow"``
    (fail open) and ``"deny"`` (fail closed) return a decision whose ``error`` is set.
    RL's own errors always raise.
    """

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

    def detect(self) -> Backend:
        """Which backend the server has (asked once, then cached); ``NotLoadedError`` when
        it has neither."""
        if self._backend is not None:
            return self._backend
        client, kw = self.client, self._probe
        try:
            backend: Backend
            if has_command(client.execute_command("COMMAND INFO", "rl.gcra", **kw)):
                backend = "module"
            elif client.execute_command("FUNCTION LIST", "LIBRARYNAME", "rl", **kw):
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

    def _submit(self, spec: Spec, key: Any, args: tuple[object, ...], meta: Any, limit: Any) -> Any:
        try:
            backend = self._backend or self.detect()
            reply = self.client.execute_command(*spec.command(backend, key, args))
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
    ) -> "Lease":
        """A lease to use in ``with``: acquired on entry (``RL.ACQUIRE``), released on exit
        (``RL.RELEASE``) when it was taken. Check ``lease.allowed`` inside. ``id`` defaults to
        a random UUID."""
        return Lease(self, key, limit, ttl, uuid.uuid4().hex if id is None else id)

    def pipeline(self, transaction: bool = False) -> "Pipeline":
        """A pipeline whose RL calls queue and whose ``execute()`` returns typed decisions
        (and raw replies for ``execute_command``), in order. ``transaction=True`` wraps the
        batch in MULTI/EXEC (standalone servers only)."""
        return Pipeline(self, self.client.pipeline(transaction=transaction))


class Pipeline(PipelineBase["Pipeline"]):
    """Queues RL calls (each method returns the pipeline); ``execute()`` sends them in
    one round trip and returns their decisions."""

    __slots__ = ()

    def execute(self, raise_on_error: bool = True) -> list[Any]:
        """Send the queued calls; their results in order. With ``raise_on_error=False``
        a failed call's slot holds its (typed) exception instead of raising it."""
        limiter, pipe = self.limiter, self.pipe
        ops = self._ops
        if not ops:
            return []
        try:
            if self._pending:
                self._flush(limiter._backend or limiter.detect())
            self._take()
            replies = pipe.execute(raise_on_error=raise_on_error)
        except CONNECTION_ERRORS as err:
            self._take()
            pipe.reset()
            if limiter._on_error == "raise":
                raise
            return fallbacks(ops, limiter._on_error == "allow", err)
        except Exception as err:
            self._take()
            pipe.reset()
            typed = translate(err)
            if typed is err:
                raise
            raise typed from err
        return results(ops, replies)

    def reset(self) -> None:
        """Drop what is queued."""
        self._take()
        self.pipe.reset()

    def __enter__(self) -> "Pipeline":
        return self

    def __exit__(
        self,
        exc_type: Optional[type[BaseException]],
        exc: Optional[BaseException],
        tb: Optional[TracebackType],
    ) -> None:
        self.reset()


class Lease:
    """An RL.ACQUIRE lease held for a ``with`` block. Until entered (or ``acquire()``d)
    it holds nothing. Its decision's fields are readable on it: ``allowed``, ``limit``,
    ``remaining``, ``retry_after``, ``reset_after``, ``headers()``."""

    __slots__ = ("limiter", "key", "limit_arg", "ttl", "id", "decision", "released")

    def __init__(self, limiter: RateLimiter, key: Key, limit: int, ttl: Duration, id: Union[str, bytes]) -> None:
        self.limiter = limiter
        self.key = key
        self.limit_arg = limit
        self.ttl = ttl
        #: The lease's name (the RL.ACQUIRE id).
        self.id = id
        #: The last RL.ACQUIRE decision, None before the first.
        self.decision: Optional[Decision] = None
        self.released = False

    def acquire(self) -> Decision:
        """Take the lease, or renew it (a new ttl from now) when held."""
        self.decision = self.limiter.acquire(self.key, self.limit_arg, self.ttl, self.id)
        self.released = False
        return self.decision

    renew = acquire

    def release(self) -> bool:
        """Give the lease back now (once); True if it was still held."""
        d = self.decision
        if self.released or d is None or not d.allowed or d.error is not None:
            return False
        self.released = True
        return self.limiter.release(self.key, self.id)

    def __enter__(self) -> "Lease":
        self.acquire()
        return self

    def __exit__(
        self,
        exc_type: Optional[type[BaseException]],
        exc: Optional[BaseException],
        tb: Optional[TracebackType],
    ) -> None:
        self.release()

    def _d(self) -> Decision:
        if self.decision is None:
            raise RLError("the lease was not acquired yet: use it in a with block or call acquire()")
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
