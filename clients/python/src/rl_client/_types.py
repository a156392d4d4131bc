"""Decisions, HTTP headers, durations and RL.ALL's policies."""

from __future__ import annotations

import re
from dataclasses import dataclass, field, fields
from datetime import timedelta
from typing import Any, ClassVar, Optional, Union, cast

from ._errors import ArgumentError

__all__ = [
    "Duration",
    "Key",
    "Decision",
    "AllDecision",
    "Throttle",
    "Policy",
    "Fixed",
    "Sliding",
    "SlidingCounter",
    "Bucket",
    "Gcra",
    "Acquire",
    "Penalty",
    "Share",
]

#: A duration: a ``timedelta``, a number of seconds (``int``, or a ``float`` that is a
#: whole number of ms), or RL's own form: ``"1500ms"``, ``"60"``, ``"60s"``, ``"1m"``,
#: ``"24h"``, ``"7d"``.
Duration = Union[timedelta, int, float, str]
#: A Redis key, as redis-py takes it.
Key = Union[str, bytes]

_DURATION_RE = re.compile(r"([0-9]+)(ms|s|m|h|d)?", re.IGNORECASE)
_UNIT_MS = {None: 1000, "ms": 1, "s": 1000, "m": 60_000, "h": 3_600_000, "d": 86_400_000}
_cache: dict[object, tuple[Union[str, int], Optional[int]]] = {}


def duration(value: Duration) -> tuple[Union[str, int], Optional[int]]:
    """(what to send, its length in ms or None when RL will refuse it).

    Numbers and timedeltas are sent as ``"<n>ms"``; a string is sent as given (the
    server checks it and answers its own error for a bad one)."""
    if type(value) is str or type(value) is int:
        hit = _cache.get(value)
        if hit is not None:
            return hit
        out = _parse_str(value) if isinstance(value, str) else _from_ms(value * 1000, value)
        if len(_cache) > 4096:
            _cache.clear()
        _cache[value] = out
        return out
    if isinstance(value, timedelta):
        us = (value.days * 86_400 + value.seconds) * 1_000_000 + value.microseconds
        if us % 1000:
            raise ArgumentError(f"a duration must be a whole number of milliseconds, not {value!r}")
        return _from_ms(us // 1000, value)
    if isinstance(value, float):
        scaled = value * 1000
        ms = round(scaled)
        if abs(scaled - ms) > 1e-6:
            raise ArgumentError(f"a duration must be a whole number of milliseconds, not {value!r} s")
        return _from_ms(ms, value)
    if isinstance(value, int) and not isinstance(value, bool):
        return duration(int(value))
    raise ArgumentError(
        f"a duration is a timedelta, a number of seconds or a string such as '1m', not {value!r}"
    )


def _parse_str(value: str) -> tuple[Union[str, int], Optional[int]]:
    m = _DURATION_RE.fullmatch(value)
    if m is None:
        return value, None
    unit = m.group(2)
    return value, int(m.group(1)) * _UNIT_MS[unit.lower() if unit else None]


def _from_ms(ms: int, value: Duration) -> tuple[Union[str, int], Optional[int]]:
    # A negative one is sent as given, for the server's own error.
    if ms < 0:
        return str(value), None
    return f"{ms}ms", ms


def _ceil_s(ms: int) -> int:
    return -(-ms // 1000)


#: The longest refill time reported (ms, about 292 years); the same in every RL client.
MAX_REFILL_MS = 9_223_372_036_854


def refill_ms(capacity: object, tokens: object, period_ms: Optional[int]) -> Optional[int]:
    """A bucket's window for ``RateLimit-Policy``: the time it takes to refill from empty,
    ``ceil(capacity * period / tokens)`` ms (at most ``MAX_REFILL_MS``), so that ``q=capacity``
    per it never advertises more than the sustained rate. ``period_ms`` when the counts are
    not positive integers (the server refuses such a call), None when the period is unknown."""
    if period_ms is None:
        return None
    if (
        type(capacity) is not int
        or type(tokens) is not int
        or capacity < 1
        or tokens < 1
        or period_ms < 0
    ):
        return period_ms
    return min(-(-(capacity * period_ms) // tokens), MAX_REFILL_MS)


def _headers(
    policy: str,
    allowed: bool,
    limit: int,
    remaining: int,
    retry_s: Optional[int],
    reset_s: int,
    window_ms: Optional[int],
) -> dict[str, str]:
    quota = f'"{policy}";q={limit}'
    if window_ms is not None:
        quota += f";w={_ceil_s(window_ms)}"
    headers = {
        "RateLimit-Policy": quota,
        "RateLimit": f'"{policy}";r={remaining};t={reset_s}',
    }
    if not allowed and retry_s is not None:
        headers["Retry-After"] = str(retry_s)
    headers["X-RateLimit-Limit"] = str(limit)
    headers["X-RateLimit-Remaining"] = str(remaining)
    headers["X-RateLimit-Reset"] = str(reset_s)
    return headers


@dataclass(slots=True)
class Decision:
    """One limiter's answer: ``[allowed, limit, remaining, retry_after_ms, reset_after_ms]``."""

    #: True: accepted and the cost taken; False: rejected, nothing taken.
    allowed: bool
    #: The limit of this call (a bucket's capacity, a penalty's strikes).
    limit: int
    #: Units that could still be taken now, after this call.
    remaining: int
    #: ms until the same call would be allowed (0 when allowed; with DELAY, the wait);
    #: None when it never can (its cost exceeds the limit).
    retry_after: Optional[int]
    #: ms until the limiter is back to its initial state.
    reset_after: int
    #: ``RateLimit-Policy``'s w in ms, when known: the call's window (RL.FIXED, RL.SLIDING,
    #: RL.SLIDINGCOUNTER, RL.PENALTY) or ttl (RL.ACQUIRE); for a bucket (RL.BUCKET, RL.GCRA,
    #: RL.SHARE) the time it takes to refill from empty, ``ceil(capacity * period / tokens)``.
    window: Optional[int] = None
    #: Set only on a decision made up by the limiter's ``on_connection_error`` choice
    #: ("allow" or "deny") because Redis did not answer: the error it got.
    error: Optional[BaseException] = field(default=None, compare=False)

    def headers(self, policy: str = "default") -> dict[str, str]:
        """HTTP response headers: ``RateLimit-Policy`` and ``RateLimit`` (IETF draft),
        ``Retry-After`` (rejected and retry possible), ``X-RateLimit-Limit``,
        ``X-RateLimit-Remaining``, ``X-RateLimit-Reset``; seconds rounded up."""
        retry = self.retry_after
        return _headers(
            policy,
            self.allowed,
            self.limit,
            self.remaining,
            None if retry is None else _ceil_s(retry),
            _ceil_s(self.reset_after),
            self.window,
        )


@dataclass(slots=True)
class AllDecision:
    """RL.ALL's answer: the combined decision, then each key's, in key order."""

    #: allowed = every key allowed; remaining the smallest (limit that key's); retry_after
    #: the largest among the keys that reject (None if one never can); reset_after the largest.
    combined: Decision
    #: Each key's own decision, in the order the policies were given.
    decisions: list[Decision]
    #: The keys, in the same order.
    keys: list[Key]

    @property
    def allowed(self) -> bool:
        return self.combined.allowed

    @property
    def limit(self) -> int:
        return self.combined.limit

    @property
    def remaining(self) -> int:
        return self.combined.remaining

    @property
    def retry_after(self) -> Optional[int]:
        return self.combined.retry_after

    @property
    def reset_after(self) -> int:
        return self.combined.reset_after

    @property
    def error(self) -> Optional[BaseException]:
        return self.combined.error

    def __getitem__(self, key: Key) -> Decision:
        """The decision of one key."""
        try:
            return self.decisions[self.keys.index(key)]
        except ValueError:
            raise KeyError(key) from None

    def rejected(self) -> list[Key]:
        """The keys that reject this call."""
        return [k for k, d in zip(self.keys, self.decisions) if not d.allowed]

    def headers(self, policy: str = "default") -> dict[str, str]:
        """The combined decision's headers (see ``Decision.headers``); the policy window
        is that of the key the combined limit and remaining come from."""
        return self.combined.headers(policy)


@dataclass(slots=True)
class Throttle:
    """CL.THROTTLE's answer (redis-cell's reply), times in seconds."""

    #: True when the call is refused (redis-cell's first field; the reverse of ``allowed``).
    limited: bool
    #: max_burst + 1.
    limit: int
    remaining: int
    #: Seconds until the call would be allowed; None when allowed or when it never can.
    retry_after: Optional[int]
    #: Seconds until the limiter is back to its initial state.
    reset_after: int
    #: ``RateLimit-Policy``'s w in ms, when known: the time the bucket takes to refill from
    #: empty, ``ceil((max_burst + 1) * period / count)``.
    window: Optional[int] = None
    error: Optional[BaseException] = field(default=None, compare=False)

    @property
    def allowed(self) -> bool:
        return not self.limited

    def headers(self, policy: str = "default") -> dict[str, str]:
        return _headers(
            policy,
            not self.limited,
            self.limit,
            self.remaining,
            self.retry_after,
            self.reset_after,
            self.window,
        )


# ---- RL.ALL's policies --------------------------------------------------------------


class Policy:
    """One key's policy in ``RateLimiter.all``: a dataclass whose fields are RL.ALL's
    arguments after its word, in order (a ``Duration`` sent as RL takes it; an
    ``Optional[Duration]``, when set, behind its name: ``DELAY max``)."""

    __slots__ = ()

    #: The policy's word in RL.ALL.
    _word: ClassVar[str]
    #: The fields that are its limit and its window.
    _quota: ClassVar[tuple[str, str]]

    def args(self) -> list[object]:
        """The policy's words, as RL.ALL takes them."""
        out: list[object] = [self._word]
        for f in fields(cast(Any, self)):
            value = getattr(self, f.name)
            if f.type == "Duration":
                out.append(duration(value)[0])
            elif f.type == "Optional[Duration]":
                if value is not None:
                    out += [f.name.upper(), duration(value)[0]]
            else:
                out.append(value)
        return out

    def quota(self) -> tuple[int, Optional[int]]:
        """(its limit, its window in ms or None: for a bucket, its refill time)."""
        limit, window = self._quota
        return getattr(self, limit), duration(getattr(self, window))[1]


class _Refilled(Policy):
    """A bucket policy: its window is the time it takes to refill from empty."""

    __slots__ = ()

    def quota(self) -> tuple[int, Optional[int]]:
        capacity, tokens, period = (getattr(self, f) for f in ("capacity", "tokens", "period"))
        return capacity, refill_ms(capacity, tokens, duration(period)[1])


@dataclass(frozen=True, slots=True)
class _Window(Policy):
    """A policy of ``limit`` units per ``window``."""

    _quota = ("limit", "window")
    limit: int
    window: Duration


@dataclass(frozen=True, slots=True)
class Fixed(_Window):
    """``FIXED limit window``."""

    _word = "FIXED"


@dataclass(frozen=True, slots=True)
class Sliding(_Window):
    """``SLIDING limit window``."""

    _word = "SLIDING"


@dataclass(frozen=True, slots=True)
class SlidingCounter(_Window):
    """``SLIDINGCOUNTER limit window``."""

    _word = "SLIDINGCOUNTER"


@dataclass(frozen=True, slots=True)
class _Rate(_Refilled):
    """A policy of ``capacity`` at once, ``tokens`` more every ``period``."""

    _quota = ("capacity", "period")
    capacity: int
    tokens: int
    period: Duration


@dataclass(frozen=True, slots=True)
class Bucket(_Rate):
    """``BUCKET capacity tokens period``."""

    _word = "BUCKET"


@dataclass(frozen=True, slots=True)
class Gcra(_Rate):
    """``GCRA capacity tokens period [DELAY max]``."""

    _word = "GCRA"
    delay: Optional[Duration] = None


@dataclass(frozen=True, slots=True)
class Acquire(Policy):
    """``ACQUIRE limit ttl id``: one lease named ``id`` (end it with ``release``)."""

    _word = "ACQUIRE"
    _quota = ("limit", "ttl")
    limit: int
    ttl: Duration
    id: Union[str, bytes]


@dataclass(frozen=True, slots=True)
class Penalty(Policy):
    """``PENALTY strikes window block max``: only looked at (the call needs ``cost=0``);
    a blocked offender makes the call rejected."""

    _word = "PENALTY"
    _quota = ("strikes", "window")
    strikes: int
    window: Duration
    block: Duration
    max: Duration


@dataclass(frozen=True, slots=True)
class Share(_Refilled):
    """``SHARE tenant weight capacity tokens period``."""

    _word = "SHARE"
    _quota = ("capacity", "period")
    tenant: Union[str, bytes]
    weight: int
    capacity: int
    tokens: int
    period: Duration
