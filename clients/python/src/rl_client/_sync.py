"""The limiter over a synchronous client: redis.Redis, redis.cluster.RedisCluster,
valkey.Valkey, valkey.cluster.ValkeyCluster. Only the I/O: the commands, their
replies and what a failure becomes are in ``_core``."""

from __future__ import annotations

import uuid
from typing import Any, Optional, Union

from ._core import Backend, LeaseBase, LimiterBase, PipelineBase, Spec, detection, raise_typed, results
from ._types import AllDecision, Decision, Duration, Key, Throttle

__all__ = ["RateLimiter", "Pipeline", "Lease"]


class RateLimiter(LimiterBase[Decision, AllDecision, Throttle, bool]):
    """RL's commands over your own synchronous redis-py (or valkey-py) client.

    ``backend``: ``"module"`` or ``"library"`` to skip detection; by default the first
    call asks the server (``COMMAND INFO rl.gcra``, else ``FUNCTION LIST LIBRARYNAME rl``)
    and the answer is kept for the life of this object.

    ``on_connection_error``: what a call answers when Redis does not (a connection error
    or time-out): ``"raise"`` (the default) re-raises the client's error; ``"allow"``
    (fail open) and ``"deny"`` (fail closed) return a decision whose ``error`` is set.
    RL's own errors always raise.
    """

    __slots__ = ()

    def detect(self) -> Backend:
        """Which backend the server has (asked once, then cached); ``NotLoadedError`` when
        it has neither."""
        if self._backend is not None:
            return self._backend
        client, kw, steps = self.client, self._probe, detection()
        try:
            reply = None
            while True:
                reply = client.execute_command(*steps.send(reply), **kw)
        except StopIteration as done:
            backend: Backend = done.value
            self._backend = backend
            return backend
        except Exception as err:
            raise_typed(err)

    def _submit(self, spec: Spec, key: Any, args: tuple[object, ...], meta: Any, limit: Any) -> Any:
        try:
            backend = self._backend or self.detect()
            reply = self.client.execute_command(*spec.command(backend, key, args))
        except Exception as err:
            return self._failed(spec, meta, limit, err)
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
        except Exception as err:
            self._take()
            pipe.reset()
            return self._failed(ops, err)
        return results(ops, replies)

    def reset(self) -> None:
        """Drop what is queued."""
        self._take()
        self.pipe.reset()

    def __enter__(self) -> "Pipeline":
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.reset()


class Lease(LeaseBase[RateLimiter]):
    """An RL.ACQUIRE lease held for a ``with`` block. Until entered (or ``acquire()``d)
    it holds nothing. Its decision's fields are readable on it: ``allowed``, ``limit``,
    ``remaining``, ``retry_after``, ``reset_after``, ``headers()``."""

    __slots__ = ()

    _not_acquired = "the lease was not acquired yet: use it in a with block or call acquire()"

    def acquire(self) -> Decision:
        """Take the lease, or renew it (a new ttl from now) when held."""
        self.decision = self.limiter.acquire(self.key, self.limit_arg, self.ttl, self.id)
        self.released = False
        return self.decision

    renew = acquire

    def release(self) -> bool:
        """Give the lease back now (once); True if it was still held."""
        return self._to_release() and self.limiter.release(self.key, self.id)

    def __enter__(self) -> "Lease":
        self.acquire()
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.release()
