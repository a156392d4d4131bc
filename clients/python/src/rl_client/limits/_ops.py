"""What the sync and asyncio storages share: each storage operation once, as steps
(zero-argument calls, each one round trip, returning a value or an awaitable) and
what their replies mean for ``limits``. Each storage only runs the steps."""

from __future__ import annotations

import time
from functools import partial
from typing import Any, Callable, Generator, Optional, TypeVar, Union
from urllib.parse import unquote, urlsplit

import redis

from .._core import Backend
from .._errors import ArgumentError, RLError

T = TypeVar("T")
#: An operation: it yields one round trip at a time and gets its reply back.
Steps = Generator[Callable[[], Any], Any, T]

#: RL's largest limit. ``limits``' fixed window gives its storage no limit: it adds
#: every hit (allowed or not) and compares the count itself, so RL.FIXED counts under
#: a limit no hit reaches and the count is this minus ``remaining``.
UNLIMITED = 2**53 - 1

#: Each strategy's part of its keys: ``<prefix>:<strategy>:{<limits key>}``.
FIXED, MOVING, SLIDING = "fixed", "moving", "sliding"
STRATEGIES = (FIXED, MOVING, SLIDING)

#: The default key prefix: not ``limits``' own ``LIMITS``, whose keys for the moving
#: window and the sliding window counter have other types than RL's.
PREFIX = "RL-LIMITS"

# One atomic read of a sliding log and the server's clock: the server time (ms), the
# units still counted (score > now - window, as RL.SLIDING counts them) and the
# oldest of them (its score, or nil).
MOVING_WINDOW = """
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local after = '(' .. (now - tonumber(ARGV[1]))
local oldest = redis.call('ZRANGEBYSCORE', KEYS[1], after, '+inf', 'WITHSCORES', 'LIMIT', 0, 1)
return {now, redis.call('ZCOUNT', KEYS[1], after, '+inf'), oldest[2] or false}
"""

# One atomic read of a sliding window counter's state and the server's clock (ms).
SLIDING_WINDOW = """
local t = redis.call('TIME')
return {tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000), redis.call('GET', KEYS[1])}
"""


def sliding_window(value: Optional[Union[bytes, str]], now: int, window: int) -> tuple[int, float, int, float]:
    """``limits``' view of an RL.SLIDINGCOUNTER state ``"<start> <current> <previous>"``
    read at server time ``now`` (ms), ``window`` in ms: (previous count, seconds until
    the previous window stops weighing, current count, seconds until the current count
    is gone), by RL's reading rule (epoch-aligned windows)."""
    if value is None:
        return 0, 0.0, 0, 0.0
    try:
        # bytes, or str from a client made with decode_responses=True
        text = value.decode("ascii") if isinstance(value, bytes) else value
        start, current, previous = (int(word) for word in text.split(" "))
    except (ValueError, UnicodeDecodeError):
        raise ArgumentError(
            'ERR key does not hold an RL.SLIDINGCOUNTER (a string "<start> <current> <previous>")', "ERR"
        ) from None
    now = max(now, start)  # a clock stepped back: read at the state's own time
    i, j = now // window, start // window
    if j == i:
        cur, prev = current, previous
    elif j == i - 1:
        cur, prev = 0, current
    else:
        cur, prev = 0, 0
    left = (i + 1) * window - now  # ms until the current window ends
    return prev, left / 1000 if prev else 0.0, cur, (left + window) / 1000 if cur else 0.0


def moving_window(reply: list[Any]) -> tuple[float, int]:
    """``limits``' (start, count) of a sliding log from ``MOVING_WINDOW``'s reply: the
    oldest counted unit's time on this machine's clock (its age on the server's clock,
    back from now), or now when none is counted. Now is taken once the reply is in,
    so the window's end (start + expiry) is late by the reply's latency, never early."""
    now, count, oldest = int(reply[0]), int(reply[1]), reply[2]
    here = time.time()
    if not count or oldest is None:
        return here, 0
    return here - (now - int(float(oldest))) / 1000, count


class Operations:
    """The storage operations over ``self.rl`` (a typed limiter) and ``self.redis``
    (the client it wraps), for either flavour: the storage class names its limiter
    class (``limiter``) and makes its client (``_client``)."""

    limiter: Any
    rl: Any
    redis: Any
    key_prefix: str

    def __init__(
        self,
        uri: str,
        key_prefix: str = PREFIX,
        wrap_exceptions: bool = False,
        backend: Optional[Backend] = None,
        **options: Any,
    ) -> None:
        super().__init__(uri, wrap_exceptions=wrap_exceptions)  # type: ignore[call-arg]
        self.key_prefix = key_prefix
        self.redis = self._client(uri, options)
        # timeout=None: the calls go through that client, with its own settings.
        self.rl = self.limiter(self.redis, backend=backend, timeout=None)

    def _client(self, uri: str, options: dict[str, Any]) -> Any:
        raise NotImplementedError

    @property
    def base_exceptions(self) -> tuple[type[Exception], ...]:
        return (redis.RedisError, RLError)

    def _key(self, strategy: str, key: str) -> str:
        """The RL key of a limits key under one strategy: each strategy's state has a
        type of its own, so each has its own key (a strategy changed in the settings
        meets no other one's state); the limits key is the hash tag, so all three are
        in one cluster slot and ``clear`` deletes them in one call."""
        return f"{self.key_prefix}:{strategy}:{{{key}}}"

    def _incr(self, key: str, expiry: int, amount: int) -> Steps[int]:
        d = yield partial(self.rl.fixed, self._key(FIXED, key), UNLIMITED, expiry, cost=amount)
        return UNLIMITED - int(d.remaining)

    def _get(self, key: str) -> Steps[int]:
        value = yield partial(self.redis.get, self._key(FIXED, key))
        try:
            return int(value or 0)
        except ValueError:
            raise ArgumentError("ERR key does not hold an RL.FIXED counter (an integer)", "ERR") from None

    def _get_expiry(self, key: str) -> Steps[float]:
        pttl = yield partial(self.redis.pttl, self._key(FIXED, key))
        return time.time() + max(int(pttl), 0) / 1000

    def _clear(self, key: str) -> Steps[None]:
        yield partial(self.redis.delete, *(self._key(strategy, key) for strategy in STRATEGIES))

    def _acquire_entry(self, key: str, limit: int, expiry: int, amount: int) -> Steps[bool]:
        d = yield partial(self.rl.sliding, self._key(MOVING, key), limit, expiry, cost=amount)
        return bool(d.allowed)

    def _get_moving_window(self, key: str, expiry: int) -> Steps[tuple[float, int]]:
        reply = yield partial(self.redis.eval, MOVING_WINDOW, 1, self._key(MOVING, key), expiry * 1000)
        return moving_window(reply)

    def _acquire_sliding_window_entry(self, key: str, limit: int, expiry: int, amount: int) -> Steps[bool]:
        d = yield partial(self.rl.sliding_counter, self._key(SLIDING, key), limit, expiry, cost=amount)
        return bool(d.allowed)

    def _get_sliding_window(self, key: str, expiry: int) -> Steps[tuple[int, float, int, float]]:
        now, value = yield partial(self.redis.eval, SLIDING_WINDOW, 1, self._key(SLIDING, key))
        return sliding_window(value, int(now), expiry * 1000)


def run(steps: Steps[T]) -> T:
    """Run an operation's steps on a synchronous client."""
    try:
        step = next(steps)
        while True:
            step = steps.send(step())
    except StopIteration as done:
        return done.value  # type: ignore[no-any-return]


async def run_async(steps: Steps[T]) -> T:
    """Run an operation's steps on an asyncio client."""
    try:
        step = next(steps)
        while True:
            step = steps.send(await step())
    except StopIteration as done:
        return done.value  # type: ignore[no-any-return]


def prefix_glob(prefix: str) -> str:
    """The SCAN pattern of every key under ``prefix`` (its glob characters escaped)."""
    return "".join("\\" + c if c in "*?[]\\" else c for c in prefix) + ":*"


def batches(keys: set[Any], size: int = 1000) -> list[list[Any]]:
    """The keys a SCAN found (a set: SCAN may give one twice), in DEL-sized lists."""
    ordered = sorted(keys)
    return [ordered[i : i + size] for i in range(0, len(ordered), size)]


# ---- storage URIs ----------------------------------------------------------------------

#: Each scheme (without ``async+``): the redis-py URL scheme it stands for, or
#: ``cluster`` / ``tls-cluster``.
SCHEMES = {
    "rl": "redis",
    "rls": "rediss",
    "rl+unix": "unix",
    "rl+cluster": "cluster",
    "rls+cluster": "tls-cluster",
}


def client_url(uri: str) -> str:
    """The redis-py URL of a standalone storage URI: ``rl://`` → ``redis://``,
    ``rls://`` → ``rediss://``, ``rl+unix://`` → ``unix://``."""
    scheme, sep, rest = uri.partition("://")
    target = SCHEMES.get(scheme.removeprefix("async+"))
    if not sep or target is None or "cluster" in target:
        raise ArgumentError(f"not an RL storage URI: {uri!r} (rl://host:port[/db], rls://, rl+unix://)")
    return f"{target}://{rest}"


def cluster_nodes(uri: str) -> tuple[list[tuple[str, int]], dict[str, Any]]:
    """The startup nodes and the credentials / TLS of ``rl+cluster://[user:password@]host:port,…``."""
    scheme, sep, rest = uri.partition("://")
    target = SCHEMES.get(scheme.removeprefix("async+"))
    if not sep or target not in ("cluster", "tls-cluster"):
        raise ArgumentError(f"not an RL cluster storage URI: {uri!r} (rl+cluster://host:port,host:port)")
    auth, _, hosts = rest.rpartition("@")
    hosts = hosts.split("/", 1)[0].split("?", 1)[0]
    nodes = []
    for place in filter(None, hosts.split(",")):
        parts = urlsplit(f"//{place.strip()}")
        if parts.hostname is None or parts.port is None:
            raise ArgumentError(f"a cluster node needs a host and a port: {place!r} in {uri!r}")
        nodes.append((parts.hostname, parts.port))
    settings: dict[str, Any] = {"ssl": True} if target == "tls-cluster" else {}
    if auth:
        credentials = urlsplit(f"//{auth}@x")
        if credentials.username:
            settings["username"] = unquote(credentials.username)
        if credentials.password:
            settings["password"] = unquote(credentials.password)
    return nodes, settings
