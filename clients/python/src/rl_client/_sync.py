"""The limiter over a synchronous client: redis.Redis, redis.cluster.RedisCluster,
valkey.Valkey, valkey.cluster.ValkeyCluster. Only the I/O: the commands, their
replies and what a failure becomes are in ``_core``."""

from __future__ import annotations

import uuid
from typing import Any, Optional, Union

from ._arguments import Duration, Key
from ._core import Backend, LeaseBase, LimiterBase, PipelineBase, Steps, raise_typed, results
from ._spec import Spec
from ._types import AllDecision, Decision, Throttle

__all__ = ["RateLimiter", "Pipeline", "Lease"]


class RateLimiter(LimiterBase[Decision, AllDecision, Throttle, bool]):
    """RL's commands over your own synchronous redis-py (or valkey-py) client.

    ``timeout``: each call's deadline in seconds (default 0.1). The limiter sends its
    calls through a pool of its own, made from the client's connection settings, with
    that timeout and no retry (a retried RL call can count twice); ``None`` sends them
    through the client itself, with its own timeouts and retries. A cluster client is
    always used as it is.

    ``backend``: ``"module"`` or ``"library"`` to skip detection; by default the first
    call asks the server (``COMMAND INFO rl.gcra``, else ``FUNCTION LIST LIBRARYNAME rl``).
    When a call answers that the command or function does not exist, the limiter asks
    again and, if the backend changed, sends the call once more.

    ``on_connection_error``: what a call answers when Redis does not answer in time (a
    connection error or a time-out): ``"raise"`` (the default) re-raises the client's
    error; ``"allow"`` (fail open) and ``"deny"`` (fail closed) return a decision whose
    ``error`` is set. RL's own errors always raise.

    Both off by default, for RL.FIXED, RL.SLIDING, RL.BUCKET, RL.GCRA and
    RL.SLIDINGCOUNTER calls (docs/clients.md, "When Redis is slow or gone"):
    ``cache_size``: how many blocked keys to remember. After a rejection, the same call
    at the same or a larger cost is rejected here (``decision.cached``) until
    ``min(retry_after, cache_max)`` seconds (default 1.0) have passed.
    ``fallback_instances``: how many app instances share the limits. While Redis does not
    answer, calls are decided here by a GCRA at limit / fallback_instances per window
    (the decision's ``error`` is set): it replaces ``on_connection_error`` for them; the
    server is tried again at most every ``probe_every`` seconds (default 0.5).
    """

    __slots__ = ()

    def _drive(self, steps: Steps) -> Any:
        """Run a call's or a batch's round trips on the client; its result."""
        conn = self._conn
        try:
            step = next(steps)
            while True:
                try:
                    if type(step) is tuple:
                        reply = conn.execute_command(*step[0], **step[1])
                    else:
                        reply = step.execute(raise_on_error=False)
                except Exception as err:
                    step = steps.throw(err)
                else:
                    step = steps.send(reply)
        except StopIteration as done:
            return done.value

    def detect(self) -> Backend:
        """Ask the server now which backend it has, and use it from now on;
        ``NotLoadedError`` when it has neither."""
        try:
            return self._drive(self._detection())  # type: ignore[no-any-return]
        except Exception as err:
            raise_typed(err)

    def _submit(self, spec: Spec, key: Any, args: tuple[object, ...], meta: Any, limit: Any) -> Any:
        t = None
        if self._survival is not None:
            t, d = self._survive(spec, key, args, limit, meta)
            if d is not None:
                return d
        try:
            reply = self._drive(self._call(spec, key, args))
        except Exception as err:
            return self._failed(spec, meta, limit, err, t)
        return spec.parse(reply, meta) if t is None else self._answered(t, spec.parse(reply, meta))

    def close(self) -> None:
        """Close the limiter's own connections (not the client's)."""
        if self._conn is not self.client:
            self._conn.connection_pool.disconnect()

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
        return Pipeline(self, transaction)


class Pipeline(PipelineBase["Pipeline"]):
    """Queues RL calls (each method returns the pipeline); ``execute()`` sends them in
    one round trip and returns their decisions."""

    __slots__ = ()

    def execute(self, raise_on_error: bool = True) -> list[Any]:
        """Send the queued calls; their results in order. With ``raise_on_error=False``
        a failed call's slot holds its (typed) exception instead of raising it."""
        if not self._ops:
            return []
        ops, waiting, form = self._take()
        try:
            replies = self.limiter._drive(self._batch(ops, waiting, form))
        except Exception as err:
            self.pipe.reset()
            return self._failed(ops, err)
        return results(ops, replies, raise_on_error)

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
