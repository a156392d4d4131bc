"""Staying up when Redis is slow or gone (both off unless configured): a cache of blocked
keys, which rejects locally a call the server has just rejected until its retry_after,
and a fallback limiter, an in-process GCRA at the call's limit / ``instances`` that
decides while the server cannot be reached. No I/O here: the limiters ask before a
call, and tell after it."""

from __future__ import annotations

import math
import threading
import time
from collections import OrderedDict
from typing import Any, NamedTuple, Optional

from ._commands import PLAIN_RATES
from ._errors import ArgumentError
from ._types import CachedDecision, Decision

#: The commands both apply to, the command table's plain rates: one key, one rate
#: (limit per window) and an exact retry_after. Other commands, pipelines and shadow
#: calls go to the server as always (the fail mode applies to them).
COVERED = PLAIN_RATES
#: The most keys the fallback limiter keeps (the least recently used are dropped).
FALLBACK_KEYS = 10_000
_AMOUNTS = ("COST", "REFUND", "DEBIT")


class Ticket(NamedTuple):
    """A covered call: its command, key and arguments without the amount (what the cache
    and the fallback limiter key on), the amount's word and the amount."""

    ident: tuple[Any, ...]
    kind: str
    amount: int


def ticket(command: str, key: Any, args: tuple[object, ...]) -> Optional[Ticket]:
    """The call's ticket; None for a command not covered or a call with DELAY."""
    if command not in COVERED:
        return None
    kind, amount, rest = "COST", 1, []
    i = 0
    while i < len(args):
        word = args[i]
        if word == "DELAY":
            return None
        if word in _AMOUNTS and i + 1 < len(args):
            kind, amount = str(word), int(args[i + 1])  # type: ignore[call-overload]
            i += 2
            continue
        rest.append(word)
        i += 1
    return Ticket((command, key, tuple(rest)), kind, amount)


def _now_ms() -> float:
    return time.monotonic() * 1000.0


def _ceil(ms: float) -> int:
    return max(0, math.ceil(ms - 1e-6))


def _count(value: Any, name: str) -> int:
    if type(value) is not int or value < 0:
        raise ArgumentError(f"{name} must be a whole number from 0, not {value!r}")
    return value


def _seconds(value: Any, name: str, lo: float) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not lo <= value < math.inf:
        raise ArgumentError(f"{name} must be a number of seconds from {lo}, not {value!r}")
    return float(value) * 1000.0


class Survival:
    """One limiter's blocked-key cache and fallback limiter (times in ms)."""

    __slots__ = ("cache_size", "cache_max", "instances", "probe_every", "lock", "blocked", "tats", "down", "down_until")

    def __init__(self, cache_size: int, cache_max: float, instances: int, probe_every: float) -> None:
        self.cache_size = _count(cache_size, "cache_size")
        self.cache_max = _seconds(cache_max, "cache_max", 0.001)
        self.instances = _count(instances, "fallback_instances")
        self.probe_every = _seconds(probe_every, "probe_every", 0)
        # Threads may share a limiter: each step below runs whole.
        self.lock = threading.Lock()
        #: ident -> (cached until, retry at or None, reset at, amount rejected, limit).
        self.blocked: OrderedDict[tuple[Any, ...], tuple[float, Optional[float], float, int, int]] = OrderedDict()
        #: ident -> the fallback GCRA's theoretical arrival time.
        self.tats: OrderedDict[tuple[Any, ...], float] = OrderedDict()
        #: The connection error the server last failed with; None while it answers.
        self.down: Optional[BaseException] = None
        self.down_until = 0.0

    def before(self, t: Ticket, limit: int, window: int) -> Optional[Decision]:
        """A decision made here (the fallback's while the server is down and not due a
        probe; a cached rejection), or None: send the call."""
        with self.lock:
            return self._before(t, limit, window, _now_ms())

    def _before(self, t: Ticket, limit: int, window: int, now: float) -> Optional[Decision]:
        if self.down is not None and self.instances:
            if now < self.down_until:
                return self._fallback(t, limit, window, now, self.down)
            # This call probes the server; the calls meanwhile stay local.
            self.down_until = now + self.probe_every
        if not self.cache_size:
            return None
        if t.kind != "COST" or t.amount == 0:
            # COST 0, REFUND and DEBIT go to the server and end the entry.
            self.blocked.pop(t.ident, None)
            return None
        entry = self.blocked.get(t.ident)
        if entry is None:
            return None
        until, retry_at, reset_at, amount, cached_limit = entry
        if now >= until:
            self.blocked.pop(t.ident, None)
            return None
        if t.amount < amount:
            return None
        retry = None if retry_at is None else _ceil(retry_at - now)
        return CachedDecision(False, cached_limit, 0, retry, _ceil(reset_at - now), window, None)

    def up(self) -> None:
        """The server answered (an error reply too): calls go to it again."""
        self.down = None

    def answered(self, t: Ticket, d: Decision) -> Decision:
        """The server's decision ``d``: the server is up; a rejection is cached."""
        with self.lock:
            self._answered(t, d, _now_ms())
        return d

    def _answered(self, t: Ticket, d: Decision, now: float) -> None:
        self.down = None
        if self.cache_size and not d.allowed and t.kind == "COST" and t.amount > 0:
            retry = d.retry_after
            hold = self.cache_max if retry is None else min(float(retry), self.cache_max)
            if hold > 0:
                retry_at = None if retry is None else now + retry
                self.blocked[t.ident] = (now + hold, retry_at, now + d.reset_after, t.amount, d.limit)
                self.blocked.move_to_end(t.ident)
                if len(self.blocked) > self.cache_size:
                    self.blocked.popitem(last=False)

    def failed(self, t: Ticket, limit: int, window: int, err: BaseException) -> Optional[Decision]:
        """The fallback's decision for a call the server did not answer (a connection
        error or the deadline), or None when there is no fallback."""
        if not self.instances:
            return None
        with self.lock:
            now = _now_ms()
            self.down, self.down_until = err, now + self.probe_every
            return self._fallback(t, limit, window, now, err)

    def _fallback(self, t: Ticket, limit: int, window: int, now: float, err: BaseException) -> Decision:
        """GCRA at this instance's share of the rate: n = limit / instances units per
        window, in bursts of up to n."""
        n = max(1, limit // self.instances)
        step = window / n
        tat = max(self.tats.get(t.ident, now), now)
        allowed = True
        if t.kind == "REFUND":
            tat = max(now, tat - t.amount * step)
        elif t.kind == "DEBIT":
            tat += t.amount * step
        elif tat + t.amount * step - now <= window + 1e-6:
            tat += t.amount * step
        else:
            allowed = False
        self.tats[t.ident] = tat
        self.tats.move_to_end(t.ident)
        if len(self.tats) > FALLBACK_KEYS:
            self.tats.popitem(last=False)
        remaining = min(n, max(0, math.floor((window - (tat - now)) / step + 1e-6)))
        retry: Optional[int] = 0
        if not allowed:
            retry = None if t.amount > n else _ceil(tat + t.amount * step - window - now)
        return Decision(allowed, n, remaining, retry, _ceil(tat - now), window, err)
