"""Decisions: what a call answers, and the HTTP fields each gives."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import ClassVar, Optional, Union

from ._arguments import Duration, Key
from ._errors import ArgumentError
from ._headers import Member, ceil_s, default_names, fields, sf_string

__all__ = ["Duration", "Key", "Decision", "AllDecision", "Throttle"]


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
    #: ("allow" or "deny") because Redis did not answer in time: the error it got.
    error: Optional[BaseException] = field(default=None, compare=False)
    #: True when the call was made with ``shadow=True`` (or, in RL.ALL, its policy was):
    #: the limit is tried, not enforced. The other fields are what it decided, so a shadow
    #: decision that is not ``allowed`` means "would have rejected": log it, do not act on
    #: it. It gives no HTTP fields.
    shadow: bool = False
    #: True on a rejection the limiter's cache of blocked keys gave without asking the
    #: server (``cache_size``); its ``retry_after`` is what is left of the server's.
    cached: ClassVar[bool] = False

    def _member(self, name: str) -> Member:
        return Member(name, self.limit, self.remaining, ceil_s(self.reset_after), self.window)

    def _retry_s(self) -> Optional[int]:
        return None if self.retry_after is None else ceil_s(self.retry_after)

    def headers(self, policy: str = "default") -> dict[str, str]:
        """HTTP response fields: ``RateLimit-Policy`` and ``RateLimit`` (IETF draft) for
        the policy named ``policy``, ``Retry-After`` (rejected and retry possible),
        ``X-RateLimit-Limit``, ``X-RateLimit-Remaining``, ``X-RateLimit-Reset``; seconds
        rounded up. No field at all for a shadow decision: its limit is not in force, so
        nobody is told of it or told to wait."""
        name = sf_string(policy)
        if self.shadow:
            return {}
        return fields(
            [self._member(name)],
            self.allowed,
            self._retry_s(),
            self.limit,
            self.remaining,
            ceil_s(self.reset_after),
        )


class CachedDecision(Decision):
    """A rejection from the cache of blocked keys: ``cached`` is True."""

    __slots__ = ()
    cached: ClassVar[bool] = True


@dataclass(slots=True)
class AllDecision:
    """RL.ALL's answer: the combined decision, then each key's, in key order."""

    #: allowed = every key allowed; remaining the smallest (limit that key's); retry_after
    #: the largest among the keys that reject (None if one never can); reset_after the largest.
    #: Shadow policies take no part in it unless every policy is shadow (then it is allowed).
    combined: Decision
    #: Each key's own decision, in the order the policies were given (``shadow`` set on
    #: those of shadow policies).
    decisions: list[Decision]
    #: The keys, in the same order.
    keys: list[Key]
    #: Each key's policy word (``"GCRA"``), in the same order.
    words: list[str] = field(default_factory=list)

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
        """The keys that reject this call (a shadow policy's key never does)."""
        return [k for k, d in zip(self.keys, self.decisions) if not d.allowed and not d.shadow]

    def headers(self, names: Union[Sequence[str], str, None] = None) -> dict[str, str]:
        """HTTP response fields with one item per policy in ``RateLimit-Policy`` and
        ``RateLimit``, each with its own key's numbers, named ``names`` (one per key) or
        by default by its word in lower case (``"gcra"``; ``"fixed-1"``, ``"fixed-2"``
        when a word repeats); ``Retry-After`` and ``X-RateLimit-*`` from the combined
        decision. One name (a ``str``): the combined decision's fields under it. Shadow
        policies are left out (the others keep the names of their places among all the
        call's policies); a call with only shadow policies gives no field."""
        c = self.combined
        enforced = [not d.shadow for d in self.decisions]
        if isinstance(names, str):
            return c.headers(names) if any(enforced) else {}
        given = default_names(self.words) if names is None else list(names)
        if len(given) != len(self.decisions):
            raise ArgumentError(f"name each of the {len(self.decisions)} policies, not {given!r}")
        members = [d._member(sf_string(n)) for n, d in zip(given, self.decisions)]
        if not any(enforced):
            return {}
        return fields(
            [m for m, on in zip(members, enforced) if on],
            c.allowed,
            c._retry_s(),
            c.limit,
            c.remaining,
            ceil_s(c.reset_after),
        )


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
        """As ``Decision.headers``."""
        member = Member(sf_string(policy), self.limit, self.remaining, self.reset_after, self.window)
        return fields([member], not self.limited, self.retry_after, self.limit, self.remaining, self.reset_after)
