"""rl_client.limits, RL's storage for limits: what RL does differently from limits' own
storages (epoch-aligned fixed windows, the exact sliding window counter, RL's keys),
the URIs, errors and options. limits' own test suite runs against it too
(limits_suite/, from test.sh)."""

from __future__ import annotations

import os
import shutil
import subprocess
import tempfile
import time
from typing import Iterator

import limits
import pytest
import redis
from limits._storage_scheme import SCHEMES
from limits.errors import StorageError
from limits.storage import storage_from_string
from limits.strategies import (
    FixedWindowRateLimiter,
    MovingWindowRateLimiter,
    SlidingWindowCounterRateLimiter,
)

from conftest import redis_server
from rl_client import ArgumentError, WrongTypeError
from rl_client.limits import AsyncRLClusterStorage, AsyncRLStorage, RLClusterStorage, RLStorage
from rl_client.limits._ops import UNLIMITED, client_url, cluster_nodes, prefix_glob, sliding_window


@pytest.fixture
def storage(url: str, raw: redis.Redis) -> Iterator[RLStorage]:
    raw.flushall()
    s = storage_from_string(url.replace("redis://", "rl://", 1))
    assert isinstance(s, RLStorage)
    yield s
    s.redis.close()


def rl_key(strategy: str, key: str) -> str:
    return f"RL-LIMITS:{strategy}:{{{key}}}"


def server_ms(raw: redis.Redis) -> int:
    seconds, micros = raw.time()
    return int(seconds) * 1000 + int(micros) // 1000


def wait_into_window(raw: redis.Redis, window_ms: int, at_least: int = 300) -> None:
    """Sleep until the server's clock is early in a window, with ``at_least`` ms of it left."""
    left = window_ms - server_ms(raw) % window_ms
    if left < at_least:
        time.sleep(left / 1000 + 0.01)


def test_schemes_are_registered() -> None:
    for scheme, cls in [
        ("rl", RLStorage),
        ("rls", RLStorage),
        ("rl+unix", RLStorage),
        ("rl+cluster", RLClusterStorage),
        ("rls+cluster", RLClusterStorage),
        ("async+rl", AsyncRLStorage),
        ("async+rl+cluster", AsyncRLClusterStorage),
    ]:
        assert SCHEMES[scheme] is cls, scheme  # what storage_from_string looks up


def test_uris() -> None:
    assert client_url("rl://:pw@h:7/2?socket_timeout=1") == "redis://:pw@h:7/2?socket_timeout=1"
    assert client_url("async+rls://h:7") == "rediss://h:7"
    assert client_url("rl+unix:///tmp/r.sock") == "unix:///tmp/r.sock"
    with pytest.raises(ArgumentError, match="not an RL storage URI"):
        client_url("redis://h:7")
    nodes, settings = cluster_nodes("rls+cluster://ada:p%40ss@a:7001,b:7002/")
    assert nodes == [("a", 7001), ("b", 7002)]
    assert settings == {"ssl": True, "username": "ada", "password": "p@ss"}
    with pytest.raises(ArgumentError, match="needs a host and a port"):
        cluster_nodes("rl+cluster://a:7001,b")
    assert prefix_glob("a*b") == "a\\*b:*"


def test_database_from_the_uri(url: str, raw: redis.Redis) -> None:
    s = storage_from_string(url.replace("redis://", "rl://", 1) + "/3")
    assert s.incr("k", 60) == 1
    with redis.Redis.from_url(url, db=3) as db3:
        assert db3.get(rl_key("fixed", "k")) == b"1"
        db3.flushdb()
    assert raw.get(rl_key("fixed", "k")) is None


def test_fixed_window_is_rl_fixed_aligned_to_the_epoch(storage: RLStorage, raw: redis.Redis, backend: str) -> None:
    item = limits.RateLimitItemPerSecond(3, 2)
    limiter = FixedWindowRateLimiter(storage)
    wait_into_window(raw, 2000)
    assert [limiter.hit(item, "ada") for _ in range(4)] == [True, True, True, False]
    key = rl_key("fixed", item.key_for("ada"))
    # limits' fixed window counts every hit, the rejected one too (RL.FIXED under a
    # limit no hit reaches), in RL.FIXED's key, which ends with the epoch-aligned window.
    assert raw.get(key) == "4"
    assert raw.pexpiretime(key) % 2000 == 0
    assert storage.rl.backend == backend
    stats = limiter.get_window_stats(item, "ada")
    assert stats.remaining == 0
    assert stats.reset_time == pytest.approx(time.time() + raw.pttl(key) / 1000, abs=0.05)
    assert storage.incr(item.key_for("ada"), 2, amount=0) == 4  # COST 0 only reads
    assert storage.incr(item.key_for("ada"), 2, amount=10) == 14
    limiter.clear(item, "ada")
    assert raw.exists(key) == 0 and limiter.hit(item, "ada")


def test_moving_window_is_rl_sliding(storage: RLStorage, raw: redis.Redis) -> None:
    item = limits.RateLimitItemPerMinute(2)
    limiter = MovingWindowRateLimiter(storage)
    assert limiter.hit(item, "ada")
    time.sleep(0.2)
    assert limiter.hit(item, "ada")
    assert not limiter.hit(item, "ada")
    key = rl_key("moving", item.key_for("ada"))
    entries = raw.zrange(key, 0, -1, withscores=True)
    assert raw.type(key) == "zset" and len(entries) == 2  # the rejected hit is not logged
    start, count = storage.get_moving_window(item.key_for("ada"), 2, 60)
    assert count == 2
    oldest_age = (server_ms(raw) - entries[0][1]) / 1000
    assert start == pytest.approx(time.time() - oldest_age, abs=0.05)
    assert limiter.get_window_stats(item, "ada").reset_time == pytest.approx(start + 60)
    assert not storage.acquire_entry(item.key_for("bob"), 2, 60, amount=3)  # above the limit
    assert storage.get_moving_window(item.key_for("bob"), 2, 60)[1] == 0


def test_sliding_window_counter_weighs_exactly(storage: RLStorage, raw: redis.Redis) -> None:
    """One unit in the previous window weighs (time left in this window) / window, here
    between 0.2 and 1: limits rounds that down to 0 and would let in 5 more of a limit of
    5; RL counts it exactly and lets in 4."""
    window = 10_000
    wait_into_window(raw, window, at_least=2000)
    now = server_ms(raw)
    start = now - now % window
    key = rl_key("sliding", "w")
    # RL.SLIDINGCOUNTER's state: 1 unit counted in the window before this one.
    raw.set(key, f"{start - window} 1 0", px=2 * window)
    prev, prev_left, cur, cur_left = storage.get_sliding_window("w", window // 1000)
    assert (prev, cur) == (1, 0)
    assert prev_left == pytest.approx((start + window - server_ms(raw)) / 1000, abs=0.05)
    took = [storage.acquire_sliding_window_entry("w", 5, window // 1000) for _ in range(5)]
    assert took == [True, True, True, True, False]
    assert raw.get(key) == f"{start} 4 1"
    prev, _, cur, cur_left = storage.get_sliding_window("w", window // 1000)
    assert (prev, cur) == (1, 4)
    assert cur_left == pytest.approx((start + 2 * window - server_ms(raw)) / 1000, abs=0.05)
    limiter = SlidingWindowCounterRateLimiter(storage)
    item = limits.RateLimitItemPerSecond(5, 10)
    assert limiter.hit(item, "x", cost=5) and not limiter.hit(item, "x")
    limiter.clear(item, "x")
    assert limiter.get_window_stats(item, "x").remaining == 5


def test_each_strategy_has_its_own_key(storage: RLStorage, raw: redis.Redis) -> None:
    """A limit whose strategy changes in the settings meets no other strategy's state
    (each has its own type), and clear() forgets it under every strategy."""
    item = limits.RateLimitItemPerMinute(2)
    for strategy in (FixedWindowRateLimiter, MovingWindowRateLimiter, SlidingWindowCounterRateLimiter):
        limiter = strategy(storage)
        assert [limiter.hit(item, "ada") for _ in range(3)] == [True, True, False]
    assert sorted(raw.keys("*")) == [rl_key(s, item.key_for("ada")) for s in ("fixed", "moving", "sliding")]
    FixedWindowRateLimiter(storage).clear(item, "ada")
    assert raw.keys("*") == []


def test_decoded_replies(url: str, raw: redis.Redis) -> None:
    """A client made with decode_responses=True (a storage option) answers str, not bytes."""
    raw.flushall()
    s = storage_from_string(url.replace("redis://", "rl://", 1), decode_responses=True)
    item = limits.RateLimitItemPerMinute(2)
    for strategy in (FixedWindowRateLimiter, MovingWindowRateLimiter, SlidingWindowCounterRateLimiter):
        limiter = strategy(s)
        assert [limiter.hit(item, "ada") for _ in range(3)] == [True, True, False]
        assert limiter.get_window_stats(item, "ada").remaining == 0
    assert s.reset() == 3


def test_sliding_window_reading_rule() -> None:
    w = 1000
    assert sliding_window(None, 5000, w) == (0, 0.0, 0, 0.0)
    assert sliding_window(b"5000 3 2", 5250, w) == (2, 0.75, 3, 1.75)  # the same window
    assert sliding_window(b"4000 3 2", 5250, w) == (3, 0.75, 0, 0.0)  # the next: current is previous
    assert sliding_window(b"3000 3 2", 5250, w) == (0, 0.0, 0, 0.0)  # two windows on: gone
    assert sliding_window(b"6000 3 2", 5250, w) == (2, 1.0, 3, 2.0)  # a clock stepped back
    assert sliding_window("5000 3 2", 5250, w) == (2, 0.75, 3, 1.75)  # decode_responses=True
    with pytest.raises(ArgumentError, match="does not hold an RL.SLIDINGCOUNTER"):
        sliding_window(b"12", 5250, w)
    with pytest.raises(ArgumentError, match="does not hold an RL.SLIDINGCOUNTER"):
        sliding_window(b"\xff 1 2", 5250, w)


def test_errors_and_wrap_exceptions(url: str, raw: redis.Redis) -> None:
    raw.flushall()
    for strategy in ("fixed", "moving"):
        raw.rpush(rl_key(strategy, "list"), "x")
    for strategy in ("fixed", "sliding"):
        raw.set(rl_key(strategy, "text"), "not a count")
    plain = storage_from_string(url.replace("redis://", "rl://", 1))
    with pytest.raises(WrongTypeError):
        plain.incr("list", 60)
    with pytest.raises(ArgumentError, match="RL.FIXED"):
        plain.get("text")
    wrapped = storage_from_string(url.replace("redis://", "rl://", 1), wrap_exceptions=True)
    for call in (lambda: wrapped.acquire_entry("list", 5, 60), lambda: wrapped.get_sliding_window("text", 60)):
        with pytest.raises(StorageError):
            call()
    with pytest.raises(StorageError):
        wrapped.acquire_entry("k", 200_000, 60)  # above RL.SLIDING's largest limit


def test_check_reset_and_options(url: str, raw: redis.Redis, backend: str) -> None:
    raw.flushall()
    raw.set("other", "1")
    s = storage_from_string(url.replace("redis://", "rl://", 1), key_prefix="app*1", backend=backend)
    assert s.rl.backend == backend  # forced: no detection
    for i in range(1500):
        s.incr(f"k{i}", 60)
    assert s.reset() == 1500
    assert raw.keys("*") == ["other"]
    assert s.check()
    dead = storage_from_string("rl://127.0.0.1:1", socket_connect_timeout=0.2)
    assert dead.check() is False


async def test_async_storage(url: str, raw: redis.Redis) -> None:
    raw.flushall()
    s = storage_from_string(url.replace("redis://", "async+rl://", 1))
    assert isinstance(s, AsyncRLStorage) and await s.check()
    from limits.aio import strategies

    item = limits.RateLimitItemPerMinute(2)
    for cls in (
        strategies.FixedWindowRateLimiter,
        strategies.MovingWindowRateLimiter,
        strategies.SlidingWindowCounterRateLimiter,
    ):
        limiter = cls(s)
        who = cls.__name__
        assert [await limiter.hit(item, who) for _ in range(3)] == [True, True, False]
        assert (await limiter.get_window_stats(item, who)).remaining == 0
    assert await s.get(item.key_for(strategies.FixedWindowRateLimiter.__name__)) == 3
    assert await s.reset() == 3
    await s.redis.aclose()


def test_unlimited_is_rls_largest_limit(storage: RLStorage) -> None:
    assert storage.incr("big", 60, amount=UNLIMITED) == UNLIMITED
    with pytest.raises(ArgumentError):
        storage.incr("big2", 60, amount=UNLIMITED + 1)


def test_tls(raw: redis.Redis, backend: str) -> None:
    """rls:// on a server that listens with TLS only, the Functions library loaded."""
    if backend != "library" or shutil.which("openssl") is None:
        pytest.skip("once, on the library's server; needs openssl")
    code = raw.execute_command("FUNCTION LIST", "LIBRARYNAME", "rl", "WITHCODE")[0]
    code = dict(zip(code[::2], code[1::2]))["library_code"]
    with tempfile.TemporaryDirectory() as tmp:
        cert, key = os.path.join(tmp, "cert.pem"), os.path.join(tmp, "key.pem")
        subprocess.run(
            ["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout", key, "-out", cert,
             "-days", "1", "-subj", "/CN=127.0.0.1", "-addext", "subjectAltName=IP:127.0.0.1"],
            check=True, capture_output=True,
        )
        with redis_server(tls=(cert, key)) as (_, url):
            with redis.Redis.from_url(url, ssl_ca_certs=cert) as admin:
                admin.execute_command("FUNCTION LOAD", code)
            s = storage_from_string(url.replace("rediss://", "rls://", 1), ssl_ca_certs=cert)
            limiter = FixedWindowRateLimiter(s)
            assert [limiter.hit(limits.RateLimitItemPerMinute(2), "tls") for _ in range(3)] == [True, True, False]
            assert s.rl.backend == "library"
            s.redis.close()
