"""RL's errors as exceptions, and the client errors that are "Redis did not answer"."""

from __future__ import annotations

import asyncio
import re
from typing import Optional



class RLError(Exception):
    """An error from RL or about RL. ``code`` is the server's code word (``ERR``,
    ``WRONGTYPE``, ``OOM``, ``NOPERM``...) or ``None`` for one raised by this client."""

    code: Optional[str]

    def __init__(self, message: str, code: Optional[str] = None) -> None:
        super().__init__(message)
        self.code = code


class ArgumentError(RLError, ValueError):
    """``ERR``: a bad argument, option or arity, or a key that does not hold this
    limiter's state. Nothing was changed."""


class WrongTypeError(RLError):
    """``WRONGTYPE``: the key holds another Redis type. Nothing was changed."""


class OutOfMemoryError(RLError):
    """``OOM``: the server is at ``maxmemory`` and refuses writes."""


class ServerError(RLError):
    """Any other error reply (``NOPERM``, ``READONLY``, ``CROSSSLOT``...)."""


class NotLoadedError(RLError):
    """The server has neither the RL module nor RL's Functions library."""


class UnsupportedCommandError(NotLoadedError):
    """The server's RL has no such command (CL.THROTTLE on the Functions library, or a
    command newer than the RL the server runs)."""


NOT_LOADED_HELP = (
    "the server has neither the RL module nor RL's Functions library: load the module "
    "(redis-server --loadmodule /path/to/librl.so, or MODULE LOAD /path/to/librl.so) "
    "or the library (FUNCTION LOAD with the contents of functions/rl.lua, e.g. "
    "`make load-library`)"
)


def _classes(names: tuple[str, ...], module: str) -> tuple[type[BaseException], ...]:
    found: list[type[BaseException]] = []
    try:
        mod = __import__(module, fromlist=list(names))
    except ImportError:
        return ()
    for name in names:
        cls = getattr(mod, name, None)
        if isinstance(cls, type) and issubclass(cls, BaseException):
            found.append(cls)
    return tuple(found)


# Redis did not answer: the caller's fail-open / fail-closed choice applies to these.
CONNECTION_ERRORS: tuple[type[BaseException], ...] = (
    _classes(("ConnectionError", "TimeoutError"), "redis.exceptions")
    + _classes(("ConnectionError", "TimeoutError"), "valkey.exceptions")
    + (OSError, asyncio.TimeoutError)
)

# Errors the server answered (or the client's argument encoder raised).
_RESPONSE_ERRORS: tuple[type[BaseException], ...] = _classes(
    ("ResponseError", "DataError"), "redis.exceptions"
) + _classes(("ResponseError", "DataError"), "valkey.exceptions")

# redis-py and valkey-py put this before an error raised from a pipeline.
_PIPELINE_NOTE = re.compile(r"^Command # \d+ \(.*?\) of pipeline caused error: ", re.S)
# The server has no such command or function: the backend went away or changed.
_UNKNOWN = ("unknown command", "function not found", "no such function")
# Error code words the server puts first; redis-py strips "ERR " (and maps a few
# others to classes), so a message's first word is a code only when it is one of these.
_CODES = frozenset(
    "ERR WRONGTYPE OOM NOPERM READONLY CROSSSLOT MOVED ASK TRYAGAIN CLUSTERDOWN BUSY "
    "NOSCRIPT EXECABORT MASTERDOWN NOREPLICAS LOADING MISCONF NOAUTH WRONGPASS "
    "BUSYKEY NOTBUSY UNKILLABLE NOGROUP".split()
)


def translate(err: BaseException) -> BaseException:
    """The typed error for a client exception; connection errors and anything not
    from the server come back unchanged."""
    if not isinstance(err, _RESPONSE_ERRORS):
        return err
    text = _PIPELINE_NOTE.sub("", str(err), count=1)
    cls_name = type(err).__name__
    if cls_name == "DataError":
        return ArgumentError(text)
    # redis-py and valkey-py strip the "ERR " code word and a few others they know
    # (OOM, NOPERM...) and keep the rest in the text.
    word, _, rest = text.partition(" ")
    if word in _CODES and rest:
        code, message = word, rest
    elif cls_name == "OutOfMemoryError":
        code, message = "OOM", text
    elif cls_name == "NoPermissionError":
        code, message = "NOPERM", text
    elif cls_name == "ReadOnlyError":
        code, message = "READONLY", text
    else:
        code, message = "ERR", text
    full = f"{code} {message}"
    lowered = message.lower()
    result: RLError
    if code == "ERR" and any(lowered.startswith(u) for u in _UNKNOWN):
        result = UnsupportedCommandError(full, code)
    elif code == "ERR":
        result = ArgumentError(full, code)
    elif code == "WRONGTYPE":
        result = WrongTypeError(full, code)
    elif code == "OOM":
        result = OutOfMemoryError(full, code)
    else:
        result = ServerError(full, code)
    result.__cause__ = err
    return result


def is_unknown_command(err: BaseException) -> bool:
    """Whether ``err`` says the command or function does not exist (the backend went
    away, or the server now has the other one): nothing was counted."""
    typed = translate(err)
    return typed is not err and isinstance(typed, UnsupportedCommandError)
