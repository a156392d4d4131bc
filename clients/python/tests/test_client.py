"""Errors, backend detection, headers, pipelines, leases and the connection-error
choice, on both backends (sync and asyncio)."""

from __future__ import annotations

import asyncio
from typing import Any, Callable, Iterator

import pytest
import redis
import redis.asyncio

from rl_client import (
    AllDecision,
    ArgumentError,
    AsyncRateLimiter,
    Bucket,
    Decision,
    Fixed,
    Gcra,
    NotLoadedError,
    OutOfMemoryError,
    RateLimiter,
    RLError,
    Throttle,
    UnsupportedCommandError,
    WrongTypeError,
)

Key = Callable[..., str]

# ---- errors --------------------------------------------------------------------------


def test_bad_argument_changes_nothing(rl: Any, raw: redis.Redis, key: Key) -> None:
    k = key()
    rl.fixed(k, 5, "1d")
    ttl = raw.pttl(k)
    # Refused by the client, before anything is sent.
    with pytest.raises(ArgumentError) as info:
        rl.fixed(k, 0, "1d")
    err = info.value
    assert err.code is None and isinstance(err, ValueError) and isinstance(err, RLError)
    assert str(err) == "limit must be an integer from 1 to 9007199254740991, not 0"
    with pytest.raises(ArgumentError, match="window must be a duration from 1ms to 3650d"):
        rl.fixed(k, 5, "11y")
    with pytest.raises(ArgumentError, match="COST and REFUND exclude each other"):
        rl.fixed(k, 5, "1d", cost=1, refund=1)
    with pytest.raises(ArgumentError, match="id must be 1 to 256 bytes"):
        rl.acquire(key("lease"), 5, "1h", "x" * 257)
    with pytest.raises(ArgumentError, match="at least one policy"):
        rl.all({})
    # Refused by the server (a rule the table does not hold): its code and text.
    with pytest.raises(ArgumentError) as info:
        rl.penalty(key("p"), 3, "1h", "3h", "2h")
    assert info.value.code == "ERR" and str(info.value) == "ERR block must be at most max"
    assert raw.get(k) == "1"
    assert 0 < raw.pttl(k) <= ttl


def test_key_rl_did_not_write(rl: Any, raw: redis.Redis, key: Key) -> None:
    k = key()
    raw.set(k, "hello")
    with pytest.raises(ArgumentError, match="does not hold an RL.FIXED counter"):
        rl.fixed(k, 5, "1d")
    assert raw.get(k) == "hello"


def test_wrong_type(rl: Any, raw: redis.Redis, key: Key) -> None:
    k = key()
    raw.rpush(k, "a", "b")
    with pytest.raises(WrongTypeError) as info:
        rl.gcra(k, 5, 1, "1s")
    assert info.value.code == "WRONGTYPE"
    assert str(info.value).startswith("WRONGTYPE Operation against a key holding the wrong kind of value")
    with pytest.raises(WrongTypeError):
        rl.all({k: Fixed(5, "1d")})
    assert raw.lrange(k, 0, -1) == ["a", "b"]


def test_out_of_memory(rl: Any, raw: redis.Redis, key: Key) -> None:
    before = raw.config_get("maxmemory")["maxmemory"]
    raw.config_set("maxmemory", 1)
    try:
        with pytest.raises(OutOfMemoryError) as info:
            rl.bucket(key(), 5, 1, "1s")
        assert info.value.code == "OOM"
    finally:
        raw.config_set("maxmemory", before)
    assert rl.bucket(key(), 5, 1, "1s").allowed


def test_not_loaded(bare_url: str, key: Key) -> None:
    rl = RateLimiter(redis.Redis.from_url(bare_url))
    with pytest.raises(NotLoadedError) as info:
        rl.gcra(key(), 5, 1, "1s")
    message = str(info.value)
    assert "--loadmodule" in message and "FUNCTION LOAD" in message and "rl.lua" in message
    assert rl.backend is None
    with pytest.raises(NotLoadedError):
        rl.detect()


async def test_not_loaded_async(bare_url: str, key: Key) -> None:
    client = redis.asyncio.Redis.from_url(bare_url)
    rl = AsyncRateLimiter(client)
    with pytest.raises(NotLoadedError):
        await rl.fixed(key(), 5, "1s")
    with pytest.raises(NotLoadedError):
        await rl.pipeline().fixed(key(), 5, "1s").execute()
    await client.aclose()


# ---- backend detection ---------------------------------------------------------------


class Counting:
    """A client that counts the commands it is given."""

    def __init__(self, client: redis.Redis) -> None:
        self.client = client
        self.names: list[str] = []

    def execute_command(self, *args: Any, **kw: Any) -> Any:
        self.names.append(str(args[0]))
        return self.client.execute_command(*args, **kw)


def test_detection_once(url: str, backend: str, key: Key) -> None:
    counting = Counting(redis.Redis.from_url(url))
    rl = RateLimiter(counting)
    assert rl.backend is None
    for _ in range(3):
        rl.fixed(key(), 5, "1s")
    assert rl.backend == backend
    probes = [n for n in counting.names if n in ("COMMAND INFO", "FUNCTION LIST")]
    asked = ["COMMAND INFO"] if backend == "module" else ["COMMAND INFO", "FUNCTION LIST"]
    assert probes == asked
    command = "RL.FIXED" if backend == "module" else "FCALL"
    assert counting.names[-3:] == [command] * 3
    # detect() asks the server every time it is called.
    counting.names.clear()
    assert rl.detect() == backend and rl.detect() == backend
    assert counting.names == asked * 2


async def test_detection_async(url: str, backend: str, key: Key) -> None:
    client = redis.asyncio.Redis.from_url(url)
    rl = AsyncRateLimiter(client)
    assert await rl.detect() == backend
    assert rl.backend == backend
    assert (await rl.gcra(key(), 5, 1, "1s")).allowed
    await client.aclose()


def test_forced_backend(url: str, backend: str, key: Key) -> None:
    other = "library" if backend == "module" else "module"
    rl = RateLimiter(redis.Redis.from_url(url), backend=other)
    assert rl.backend == other
    # The forced form is sent; the server has no such command or function, so the
    # limiter detects the backend again and sends the call once more.
    assert rl.fixed(key(), 5, "1s").allowed
    assert rl.backend == backend
    assert RateLimiter(redis.Redis.from_url(url), backend=backend).fixed(key(), 5, "1s").allowed  # type: ignore[arg-type]
    with pytest.raises(ArgumentError):
        RateLimiter(redis.Redis.from_url(url), backend="lua")  # type: ignore[arg-type]
    with pytest.raises(ArgumentError):
        RateLimiter(redis.Redis.from_url(url), on_connection_error="ignore")  # type: ignore[arg-type]
    with pytest.raises(ArgumentError):
        RateLimiter(redis.Redis.from_url(url), timeout=float("nan"))


def test_redetected_in_pipelines(url: str, backend: str, key: Key) -> None:
    """A pipeline sent in the other backend's form is detected again and sent once more
    (a MULTI/EXEC one whole: EXEC refused it)."""
    other = "library" if backend == "module" else "module"
    for transaction in (False, True):
        rl = RateLimiter(redis.Redis.from_url(url), backend=other)
        k = key(f"t{transaction}")
        p = rl.pipeline(transaction=transaction)
        out = p.fixed(k, 2, "1d").execute_command("PING").fixed(k, 2, "1d").fixed(k, 2, "1d").execute()
        assert [out[0].allowed, out[1], out[2].allowed, out[3].allowed] == [True, True, True, False]
        assert rl.backend == backend


async def test_redetected_async(url: str, backend: str, key: Key) -> None:
    other = "library" if backend == "module" else "module"
    client = redis.asyncio.Redis.from_url(url)
    rl = AsyncRateLimiter(client, backend=other)
    assert (await rl.gcra(key(), 5, 1, "1s")).allowed and rl.backend == backend
    rl = AsyncRateLimiter(client, backend=other)
    out = await rl.pipeline().gcra(key("p"), 5, 1, "1s").execute()
    assert out[0].remaining == 4 and rl.backend == backend
    await rl.aclose()
    await client.aclose()


# ---- headers -------------------------------------------------------------------------


def test_headers_rejected() -> None:
    d = Decision(False, 10, 0, 1500, 61_001, 60_000)
    assert d.headers() == {
        "RateLimit-Policy": '"default";q=10;w=60',
        "RateLimit": '"default";r=0;t=62',
        "Retry-After": "2",
        "X-RateLimit-Limit": "10",
        "X-RateLimit-Remaining": "0",
        "X-RateLimit-Reset": "62",
    }
    assert list(d.headers()) == [
        "RateLimit-Policy",
        "RateLimit",
        "Retry-After",
        "X-RateLimit-Limit",
        "X-RateLimit-Remaining",
        "X-RateLimit-Reset",
    ]


def test_headers_allowed_and_never() -> None:
    d = Decision(True, 5, 4, 0, 1, 1500)
    assert d.headers("burst") == {
        "RateLimit-Policy": '"burst";q=5;w=2',
        "RateLimit": '"burst";r=4;t=1',
        "X-RateLimit-Limit": "5",
        "X-RateLimit-Remaining": "4",
        "X-RateLimit-Reset": "1",
    }
    # Never allowed (cost above the limit): no Retry-After; no window known: no w.
    d = Decision(False, 5, 5, None, 0)
    h = d.headers()
    assert "Retry-After" not in h and h["RateLimit-Policy"] == '"default";q=5'
    # A DELAY wait on an allowed call is not a Retry-After.
    assert "Retry-After" not in Decision(True, 2, 0, 3000, 5000, 1000).headers()


def test_headers_throttle_and_all() -> None:
    t = Throttle(True, 16, 0, 3, 60, 60_000)
    assert t.headers() == {
        "RateLimit-Policy": '"default";q=16;w=60',
        "RateLimit": '"default";r=0;t=60',
        "Retry-After": "3",
        "X-RateLimit-Limit": "16",
        "X-RateLimit-Remaining": "0",
        "X-RateLimit-Reset": "60",
    }
    # RL.ALL's bucket policies: w is the refill time from empty, ceil(capacity * period / tokens).
    assert Bucket(5, 1, "1s").quota() == (5, 5000)
    assert Gcra(10, 3, 1, delay="2s").quota() == (10, 3334)
    assert Bucket(9_007_199_254_740_991, 1, "3650d").quota() == (9_007_199_254_740_991, 9_223_372_036_854)
    assert Fixed(5, "1m").quota() == (5, 60_000)
    combined = Decision(False, 2, 0, 1000, 60_000, 1000)
    decisions = [Decision(False, 2, 0, 1000, 1000, 1000), Decision(True, 3, 1, 0, 60_000, 60_000)]
    r = AllDecision(combined, decisions, ["a", "b"], ["FIXED", "FIXED"])
    assert r.headers() == {
        "RateLimit-Policy": '"fixed-1";q=2;w=1, "fixed-2";q=3;w=60',
        "RateLimit": '"fixed-1";r=0;t=1, "fixed-2";r=1;t=60',
        "Retry-After": "1",
        "X-RateLimit-Limit": "2",
        "X-RateLimit-Remaining": "0",
        "X-RateLimit-Reset": "60",
    }
    assert r.headers(["burst", "daily"])["RateLimit"] == '"burst";r=0;t=1, "daily";r=1;t=60'
    assert r.headers("both") == combined.headers("both")  # one name: the combined decision
    with pytest.raises(ArgumentError):
        r.headers(["burst"])


def test_headers_live(rl: Any, key: Key) -> None:
    k = key()
    rl.gcra(k, 1, 1, "1m")
    h = rl.gcra(k, 1, 1, "1m").headers()
    assert h["RateLimit-Policy"] == '"default";q=1;w=60'
    # A bucket's w is the time it takes to refill from empty: 5 per 5 s, not 5 per 1 s.
    assert rl.gcra(key("g"), 5, 1, "1s").headers()["RateLimit-Policy"] == '"default";q=5;w=5'
    assert rl.bucket(key("b"), 10, 3, "1s").window == 3334
    assert h["RateLimit"] == '"default";r=0;t=60'
    assert 59 <= int(h["Retry-After"]) <= 60
    assert h["X-RateLimit-Reset"] == "60"


# ---- pipelines -----------------------------------------------------------------------


def test_pipeline(sync_rl: RateLimiter, backend: str, key: Key) -> None:
    k = key()
    with sync_rl.pipeline() as p:
        p.fixed(k, 2, "1d").fixed(k, 2, "1d").fixed(k, 2, "1d")
        p.execute_command("GET", k)
        p.all({key("a"): Fixed(1, "1d"), key("b"): Gcra(1, 1, "1h")})
        p.release(key("lease"), "nobody")
        assert len(p) == 6
        out = p.execute()
    assert len(p) == 0
    assert [d.allowed for d in out[:3]] == [True, True, False]
    assert out[3] == b"2"
    assert isinstance(out[4], AllDecision) and out[4].allowed
    assert out[5] is False
    # An argument the client refuses is never queued.
    p = sync_rl.pipeline()
    with pytest.raises(ArgumentError):
        p.fixed(k, 0, "1d")
    assert len(p) == 0
    # An RL error: raised (typed) by default, or left in its slot.
    p.penalty(k, 3, "1h", "3h", "2h").fixed(key("x"), 2, "1d")
    with pytest.raises(ArgumentError):
        p.execute()
    p.penalty(k, 3, "1h", "3h", "2h").fixed(key("x"), 2, "1d")
    out = p.execute(raise_on_error=False)
    assert isinstance(out[0], ArgumentError) and out[1].allowed
    assert p.execute() == []
    if backend == "library":
        # Refused when queued (the backend is known) or when sent (not known yet).
        with pytest.raises(UnsupportedCommandError):
            p.throttle(k, 0, 1, 2)
            p.execute()
        late = RateLimiter(sync_rl.client).pipeline()
        with pytest.raises(UnsupportedCommandError):
            late.gcra(k, 1, 1, "1s").throttle(k, 0, 1, 2).execute()
        assert len(late) == 0
        assert p.gcra(k, 1, 1, "1s").execute()[0].limit == 1


def test_pipeline_transaction(sync_rl: RateLimiter, key: Key) -> None:
    k = key()
    with sync_rl.pipeline(transaction=True) as p:
        out = p.bucket(k, 5, 1, "1s", cost=5).bucket(k, 5, 1, "1s").execute()
    assert [d.allowed for d in out] == [True, False]


async def test_pipeline_async(async_rl: AsyncRateLimiter, backend: str, key: Key) -> None:
    k = key()
    async with async_rl.pipeline() as p:
        p.gcra(k, 1, 1, "1h").gcra(k, 1, 1, "1h").execute_command("EXISTS", k)
        out = await p.execute()
    assert [out[0].allowed, out[1].allowed, out[2]] == [True, False, 1]
    p = async_rl.pipeline()
    p.penalty(k, 3, "1h", "1h", "2h")
    with pytest.raises(ArgumentError, match="^ERR key does not hold an RL.PENALTY state"):
        await p.execute()
    await async_rl.client.rpush(key("list"), "a")
    p.fixed(key("list"), 3, "1h")
    with pytest.raises(WrongTypeError, match="^WRONGTYPE"):
        await p.execute()
    if backend == "library":
        with pytest.raises(UnsupportedCommandError):
            await p.throttle(k, 0, 1, 2).execute()
        assert len(p) == 0


# ---- leases --------------------------------------------------------------------------


def test_lease(sync_rl: RateLimiter, raw: redis.Redis, key: Key) -> None:
    k = key()
    with sync_rl.lease(k, 1, "1h", "job-1") as lease:
        assert lease.allowed and lease.remaining == 0 and lease.limit == 1
        assert raw.zscore(k, "job-1") is not None
        # A second holder is refused, and leaving its block does not free the first.
        with sync_rl.lease(k, 1, "1h") as other:
            assert not other.allowed and other.retry_after is not None
            assert other.headers()["Retry-After"]
        assert raw.zscore(k, "job-1") is not None
    assert lease.released and raw.exists(k) == 0
    # Released when the block raises, too.
    with pytest.raises(RuntimeError):
        with sync_rl.lease(k, 1, "1h") as lease:
            assert raw.zcard(k) == 1
            raise RuntimeError("boom")
    assert raw.exists(k) == 0
    # release() early, renew(), and a lease not yet taken.
    lease = sync_rl.lease(k, 2, "1h", b"job-2")
    with pytest.raises(RLError):
        lease.allowed
    with lease:
        assert lease.renew().allowed
        assert lease.release() is True
        assert raw.exists(k) == 0
    assert lease.release() is False


async def test_lease_async(async_rl: AsyncRateLimiter, raw: redis.Redis, key: Key) -> None:
    k = key()
    async with async_rl.lease(k, 1, "1h") as lease:
        assert lease.allowed and raw.zscore(k, lease.id) is not None
        async with async_rl.lease(k, 1, "1h") as other:
            assert not other.allowed
        assert raw.zcard(k) == 1
    assert raw.exists(k) == 0
    with pytest.raises(RuntimeError):
        async with async_rl.lease(k, 1, "1h"):
            raise RuntimeError("boom")
    assert raw.exists(k) == 0


# ---- when Redis does not answer ------------------------------------------------------


@pytest.fixture
def dead_client(dead_url: str) -> Iterator[redis.Redis]:
    client = redis.Redis.from_url(dead_url, socket_connect_timeout=1, socket_timeout=1)
    yield client
    client.close()


def test_connection_error_raises_by_default(dead_client: redis.Redis) -> None:
    rl = RateLimiter(dead_client, backend="module")
    with pytest.raises(redis.ConnectionError):
        rl.gcra("k", 5, 1, "1s")
    with pytest.raises(redis.ConnectionError):
        RateLimiter(dead_client).gcra("k", 5, 1, "1s")  # while detecting


def test_fail_open(dead_client: redis.Redis) -> None:
    rl = RateLimiter(dead_client, on_connection_error="allow")
    d = rl.gcra("k", 5, 1, "1s")
    assert (d.allowed, d.limit, d.remaining, d.retry_after, d.window) == (True, 5, 5, 0, 5000)
    assert isinstance(d.error, redis.ConnectionError)
    assert rl.backend is None  # nothing was learnt
    r = rl.all({"a": Fixed(2, "1s"), "b": Gcra(9, 1, "1s")})
    assert r.allowed and r.limit == 2 and [d.limit for d in r.decisions] == [2, 9]
    t = rl.throttle("k", 4, 1, 1)
    assert t.allowed and t.limit == 5 and t.error is not None and t.window == 5000
    out = rl.pipeline().fixed("k", 3, "1s").execute()
    assert out[0].allowed and out[0].error is not None
    with rl.lease("k", 1, "1h") as lease:  # nothing taken, nothing to give back
        assert lease.allowed
    with pytest.raises(redis.ConnectionError):
        rl.release("k", "id")


def test_fail_closed(dead_client: redis.Redis) -> None:
    rl = RateLimiter(dead_client, on_connection_error="deny", backend="library")
    d = rl.fixed("k", 5, "1m")
    assert (d.allowed, d.limit, d.remaining, d.retry_after, d.reset_after) == (False, 5, 0, 1000, 1000)
    assert d.headers()["Retry-After"] == "1"
    assert not rl.all([("a", Fixed(2, "1s"))]).allowed
    # The backend is known, so calls go to the client's pipeline at once; it fails when sent.
    out = rl.pipeline().fixed("k", 5, "1m").execute_command("PING").gcra("k", 9, 1, "1s").execute()
    assert len(out) == 3 and not out[0].allowed and out[2].limit == 9
    assert isinstance(out[1], redis.ConnectionError)


async def test_fail_policies_async(dead_url: str) -> None:
    client = redis.asyncio.Redis.from_url(dead_url, socket_connect_timeout=1)
    assert (await AsyncRateLimiter(client, on_connection_error="allow").gcra("k", 5, 1, "1s")).allowed
    assert not (await AsyncRateLimiter(client, on_connection_error="deny").gcra("k", 5, 1, "1s")).allowed
    out = await AsyncRateLimiter(client, on_connection_error="deny").pipeline().fixed("k", 1, 1).execute()
    assert not out[0].allowed
    limiter = AsyncRateLimiter(client, on_connection_error="allow", backend="module")
    out = await limiter.pipeline().fixed("k", 1, 1).fixed("k", 2, 1).execute()
    assert [d.allowed for d in out] == [True, True] and out[1].limit == 2
    with pytest.raises(redis.ConnectionError):
        await AsyncRateLimiter(client).gcra("k", 5, 1, "1s")
    await client.aclose()


def test_asyncio_gather(url: str, key: Key) -> None:
    async def main() -> list[Decision]:
        client = redis.asyncio.Redis.from_url(url)
        rl = AsyncRateLimiter(client)
        k = key()
        out = await asyncio.gather(*(rl.fixed(k, 3, "1d") for _ in range(5)))
        await client.aclose()
        return list(out)

    decisions = asyncio.run(main())
    assert sorted(d.allowed for d in decisions) == [False, False, True, True, True]


def test_pipeline_staging(url: str) -> None:
    """Calls go to a standalone pipeline's pipeline_execute_command (one call less, in
    bytes), but through execute_command when it is watching or a cluster pipeline."""
    from rl_client._core import _stage

    client = redis.Redis.from_url(url)
    pipe = client.pipeline(transaction=False)
    assert _stage(pipe) == pipe.pipeline_execute_command
    pipe.watching = True
    assert _stage(pipe) is None

    class ClusterPipeline:
        watching = False

        def execute_command(self) -> None: ...

        def pipeline_execute_command(self) -> None: ...

    assert _stage(ClusterPipeline()) is None
    client.close()
