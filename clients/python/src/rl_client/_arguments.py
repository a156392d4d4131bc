"""The argument checks behind the generated methods (``_commands``): integers, texts,
options, flags, and the one duration parser. A refused value raises ``ArgumentError`` before
anything is sent; nothing is rounded."""

from __future__ import annotations

import math
import re
from datetime import timedelta
from decimal import Decimal
from typing import NamedTuple, NoReturn, Optional, Union

from ._errors import ArgumentError

#: A duration: a ``timedelta``, a number of seconds (an ``int``, as on the server, or a
#: ``float`` that is a whole number of ms), or RL's own form: ``"1500ms"``, ``"60"``,
#: ``"60s"``, ``"1m"``, ``"24h"``, ``"7d"``.
Duration = Union[timedelta, int, float, str]
#: A Redis key, as redis-py takes it.
Key = Union[str, bytes]
#: A text argument (a lease id, a tenant, a time zone).
Text = Union[str, bytes]

# RL's syntax: digits without a leading zero, then an optional unit (any case).
_SYNTAX = re.compile(r"(0|[1-9][0-9]*)(ms|s|m|h|d)?", re.IGNORECASE | re.ASCII)
_UNIT_MS = {"": 1000, "ms": 1, "s": 1000, "m": 60_000, "h": 3_600_000, "d": 86_400_000}
_DAY_MS = 86_400_000
# Strings already read: their ms, or -1 when not in RL's syntax.
_read: dict[str, int] = {}


def _bad(name: str, what: str, value: object) -> NoReturn:
    raise ArgumentError(f"{name} must be {what}, not {value!r}")


def _range(lo: Optional[int], hi: Optional[int]) -> str:
    if lo is None and hi is None:
        return "an integer"
    if hi is None:
        return f"an integer from {lo}"
    if lo is None:
        return f"an integer up to {hi}"
    return f"an integer from {lo} to {hi}"


def integer(value: object, name: str, lo: Optional[int], hi: Optional[int]) -> int:
    """A whole number in range: an ``int`` (or a subclass such as ``IntEnum``), never a
    ``bool`` or a ``float``, however whole."""
    if isinstance(value, bool) or not isinstance(value, int):
        _bad(name, _range(lo, hi), value)
    if (lo is not None and value < lo) or (hi is not None and value > hi):
        _bad(name, _range(lo, hi), value)
    return int(value)


def text(value: object, name: str, lo: Optional[int], hi: Optional[int]) -> Text:
    """A ``str`` or ``bytes`` of ``lo`` to ``hi`` bytes (UTF-8) when the table says."""
    if not isinstance(value, (str, bytes)):
        _bad(name, "a str or bytes", value)
    if lo is not None or hi is not None:
        size = len(value.encode() if isinstance(value, str) else value)
        if (lo is not None and size < lo) or (hi is not None and size > hi):
            _bad(name, f"{lo or 0} to {hi} bytes" if hi is not None else f"at least {lo} bytes", value)
    return value


def _span(ms: int) -> str:
    return f"{ms // _DAY_MS}d" if ms and ms % _DAY_MS == 0 else f"{ms}ms"


def _read_ms(value: str) -> int:
    m = _SYNTAX.fullmatch(value)
    if m is None:
        return -1
    return int(m.group(1)) * _UNIT_MS[(m.group(2) or "").lower()]


def duration(value: object, name: str, lo: int, hi: int) -> tuple[object, int]:
    """(what to send, its ms) for a duration of ``lo`` to ``hi`` ms. A string or an int
    is sent as given (a bare int is seconds on the server too); a timedelta or a float
    as ``"<ms>ms"``."""
    kind = type(value)
    if kind is str:
        ms = _read.get(value)  # type: ignore[call-overload]
        if ms is None:
            ms = _read_ms(value)  # type: ignore[arg-type]
            if len(_read) >= 4096:
                _read.clear()
            _read[value] = ms  # type: ignore[index]
        if lo <= ms <= hi:
            return value, ms
    elif kind is int:
        ms = value * 1000  # type: ignore[operator]
        if lo <= ms <= hi:
            return value, ms
    elif isinstance(value, timedelta):
        us = (value.days * 86_400 + value.seconds) * 1_000_000 + value.microseconds
        if us % 1000:
            _bad(name, "a whole number of milliseconds", value)
        return _ms(us // 1000, value, name, lo, hi)
    elif isinstance(value, float):
        # The float's shortest decimal form, so 0.1 s is 100 ms and 1.0005 s is refused.
        if not math.isfinite(value):
            _bad(name, "a finite duration", value)
        exact = Decimal(repr(value)) * 1000
        if exact != exact.to_integral_value():
            _bad(name, "a whole number of milliseconds", value)
        return _ms(int(exact), value, name, lo, hi)
    elif isinstance(value, int) and not isinstance(value, bool):
        return duration(int(value), name, lo, hi)
    _bad(
        name,
        f"a duration from {_span(lo)} to {_span(hi)}: a timedelta, whole seconds (an int), "
        "or an integer with an optional unit ms, s, m, h or d ('1500ms', '1m')",
        value,
    )


def _ms(ms: int, value: object, name: str, lo: int, hi: int) -> tuple[object, int]:
    if not lo <= ms <= hi:
        _bad(name, f"a duration from {_span(lo)} to {_span(hi)}", value)
    return f"{ms}ms", ms


class Option(NamedTuple):
    """One keyword option of a command (or of an RL.ALL policy): ``COST n``, ``DELAY d``,
    or a flag, a word without a value (``SHADOW``)."""

    word: str  # as the server spells it
    name: str  # the method's parameter
    kind: str  # "integer", "duration", "text" or "flag"
    lo: Optional[int]
    hi: Optional[int]
    excludes: tuple[str, ...]


def options(table: tuple[Option, ...], values: tuple[object, ...]) -> tuple[object, ...]:
    """The words of the options given (``values``: one per row of ``table``, None when
    not given), each checked; two that exclude each other are refused."""
    out: tuple[object, ...] = ()
    given = [o for o, v in zip(table, values) if v is not None]
    for o, value in zip(table, values):
        if value is None:
            continue
        for other in given:
            if other.word in o.excludes:
                first, second = sorted((o, other), key=table.index)
                raise ArgumentError(f"{first.word} and {second.word} exclude each other ({first.name}= and {second.name}=)")
        if o.kind == "integer":
            out += (o.word, integer(value, o.name, o.lo, o.hi))
        elif o.kind == "duration":
            out += (o.word, duration(value, o.name, o.lo or 0, o.hi or 0)[0])
        else:
            out += (o.word, text(value, o.name, o.lo, o.hi))
    return out


def flags(table: tuple[Option, ...], values: tuple[object, ...]) -> tuple[str, ...]:
    """The words of the flags that are on (``values``: one bool per row of ``table``);
    anything but ``True`` or ``False`` is refused, so that a mistaken ``shadow=1`` or
    ``shadow="no"`` never turns a limit off or on by accident."""
    out: tuple[str, ...] = ()
    for o, value in zip(table, values):
        if value is True:
            out += (o.word,)
        elif value is not False:
            _bad(o.name, "True or False", value)
    return out
