"""HTTP response fields from decisions: ``RateLimit-Policy`` and ``RateLimit`` (IETF
draft-ietf-httpapi-ratelimit-headers, structured-field lists), ``Retry-After`` and
the ``X-RateLimit-*`` fields."""

from __future__ import annotations

from typing import NamedTuple, Optional

from ._errors import ArgumentError

#: The largest structured-field integer: larger numbers are given as this one.
SF_MAX = 999_999_999_999_999


class Member(NamedTuple):
    """One policy's item in both lists (times in ms, ``reset`` already in s)."""

    name: str  # the structured-field string, quoted
    limit: int
    remaining: int
    reset_s: int
    window_ms: Optional[int]


def ceil_s(ms: int) -> int:
    return -(-ms // 1000)


def _int(n: int) -> int:
    return SF_MAX if n > SF_MAX else -SF_MAX if n < -SF_MAX else n


def sf_string(name: str) -> str:
    """A policy name as a structured-field string: ``"`` and ``\\`` escaped; a name with a
    character outside printable ASCII is refused."""
    if not isinstance(name, str) or any(not " " <= c <= "~" for c in name):
        raise ArgumentError(f"a policy name must be printable ASCII, not {name!r}")
    return '"' + name.replace("\\", "\\\\").replace('"', '\\"') + '"'


def fields(
    members: list[Member], allowed: bool, retry_s: Optional[int], limit: int, remaining: int, reset_s: int
) -> dict[str, str]:
    """Every field: one item per member in the IETF lists (``w`` left out when the
    window is not known), ``Retry-After`` on a rejection that can pass later, and the
    ``X-RateLimit-*`` fields of the decision as a whole."""
    policy, usage = [], []
    for m in members:
        item = f"{m.name};q={_int(m.limit)}"
        if m.window_ms:
            item += f";w={_int(ceil_s(m.window_ms))}"
        policy.append(item)
        usage.append(f"{m.name};r={_int(m.remaining)};t={_int(m.reset_s)}")
    out = {"RateLimit-Policy": ", ".join(policy), "RateLimit": ", ".join(usage)}
    if not allowed and retry_s is not None:
        out["Retry-After"] = str(retry_s)
    out["X-RateLimit-Limit"] = str(limit)
    out["X-RateLimit-Remaining"] = str(remaining)
    out["X-RateLimit-Reset"] = str(reset_s)
    return out


def default_names(words: list[str]) -> list[str]:
    """RL.ALL's default policy names: each policy's word in lower case, followed by
    ``-N`` (its position, from 1) when the call has that word more than once."""
    lowered = [w.lower() for w in words]
    return [w if lowered.count(w) == 1 else f"{w}-{i}" for i, w in enumerate(lowered, 1)]
