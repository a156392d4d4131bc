"""Every command and option, on both backends and every client flavour (conftest's
``rl``): the typed decisions on known sequences, and what they left in Redis.

Windows are long (an hour, a day) so that the few ms a test takes cannot cross one."""

from __future__ import annotations

from datetime import timedelta
from typing import Any, Callable

import inspect

import pytest
import redis

from rl_client import (
    Acquire,
    AllDecision,
    ArgumentError,
    Bucket,
    Decision,
    Fixed,
    Gcra,
    NotLoadedError,
    Penalty,
    Quota,
    RateLimiter,
    Share,
    Sliding,
    SlidingCounter,
    Throttle,
    UnsupportedCommandError,
)

HOUR = 3_600_000
DAY = 86_400_000
Key = Callable[..., str]


def check(d: Any, allowed: bool, limit: int, remaining: int) -> None:
    assert isinstance(d, Decision)
    assert (d.allowed, d.limit, d.remaining) == (allowed, limit, remaining), d
    assert d.error is None
    if allowed:
        assert d.retry_after == 0, d


def test_fixed(rl: Any, raw: redis.Redis, key: Key) -> None:
    k = key()
    d = rl.fixed(k, 2, "1d")
    check(d, True, 2, 1)
    assert 0 < d.reset_after <= DAY and d.window == DAY
    check(rl.fixed(k, 2, "1d"), True, 2, 0)
    d = rl.fixed(k, 2, "1d")
    check(d, False, 2, 0)
    assert d.retry_after is not None and 0 < d.retry_after <= DAY
    assert raw.get(k) == "2"
    # COST 0 looks and writes nothing.
    check(rl.fixed(k, 2, "1d", cost=0), True, 2, 0)
    check(rl.fixed(k, 2, "1d", refund=1), True, 2, 1)
    assert raw.get(k) == "1"
    # DEBIT goes past the limit: allowed, then the next call is refused.
    check(rl.fixed(k, 2, "1d", debit=5), True, 2, 0)
    assert raw.get(k) == "6"
    check(rl.fixed(k, 2, "1d"), False, 2, 0)
    # A cost above the limit can never pass.
    d = rl.fixed(key("other"), 2, "1d", cost=3)
    check(d, False, 2, 2)
    assert d.retry_after is None
    assert raw.exists(key("other")) == 0


def test_sliding(rl: Any, raw: redis.Redis, key: Key) -> None:
    k = key()
    d = rl.sliding(k, 2, "1h", cost=2)
    check(d, True, 2, 0)
    assert d.reset_after == HOUR and d.window == HOUR
    d = rl.sliding(k, 2, "1h")
    check(d, False, 2, 0)
    assert d.retry_after is not None and 0 < d.retry_after <= HOUR
    assert raw.zcard(k) == 2
    check(rl.sliding(k, 2, "1h", refund=1), True, 2, 1)
    assert raw.zcard(k) == 1
    check(rl.sliding(k, 2, "1h", cost=0), True, 2, 1)
    assert raw.zcard(k) == 1
    d = rl.sliding(k, 2, "1h", cost=3)
    check(d, False, 2, 1)
    assert d.retry_after is None
    # RL.SLIDING takes no DEBIT: no such parameter, and the server refuses the raw form.
    assert "debit" not in inspect.signature(RateLimiter.sliding).parameters
    with pytest.raises(redis.ResponseError, match="DEBIT does not apply"):
        if rl.backend == "module":
            raw.execute_command("RL.SLIDING", k, 2, "1h", "DEBIT", 1)
        else:
            raw.execute_command("FCALL", "rl_sliding", 1, k, 2, "1h", "DEBIT", 1)


def test_sliding_counter(rl: Any, raw: redis.Redis, key: Key) -> None:
    k = key()
    check(rl.sliding_counter(k, 2, "1d"), True, 2, 1)
    d = rl.sliding_counter(k, 2, "1d")
    check(d, True, 2, 0)
    assert d.window == DAY and 0 < d.reset_after <= 2 * DAY
    d = rl.sliding_counter(k, 2, "1d")
    check(d, False, 2, 0)
    assert d.retry_after is not None and d.retry_after > 0
    check(rl.sliding_counter(k, 2, "1d", cost=0), True, 2, 0)
    check(rl.sliding_counter(k, 2, "1d", refund=2), True, 2, 2)
    check(rl.sliding_counter(k, 2, "1d", debit=3), True, 2, 0)
    assert raw.get(k).split()[1:] == ["3", "0"]
    check(rl.sliding_counter(k, 2, "1d"), False, 2, 0)
    assert rl.sliding_counter(k, 2, "1d", cost=3).retry_after is None


def two_then_an_hour(call: Callable[..., Any]) -> None:
    """RL.BUCKET's and RL.GCRA's common sequence with capacity 2 and 1 token an hour: two
    calls pass, the third waits about an hour; COST 0 inspects; REFUND 2 fills it again."""
    d = call()
    check(d, True, 2, 1)
    # w: the time the bucket takes to refill from empty, 2 tokens at 1 an hour.
    assert d.reset_after == HOUR and d.window == 2 * HOUR
    check(call(), True, 2, 0)
    d = call()
    check(d, False, 2, 0)
    assert d.retry_after is not None and HOUR - 1000 < d.retry_after <= HOUR
    check(call(cost=0), True, 2, 0)
    check(call(refund=2), True, 2, 2)


def test_bucket(rl: Any, raw: redis.Redis, key: Key) -> None:
    k = key()
    two_then_an_hour(lambda **opts: rl.bucket(k, 2, 1, "1h", **opts))
    assert raw.exists(k) == 0  # back to the initial state: deleted
    check(rl.bucket(k, 2, 1, "1h", debit=3), True, 2, 0)
    assert raw.hget(k, "tokens") == "-1"
    check(rl.bucket(k, 2, 1, "1h"), False, 2, 0)
    assert rl.bucket(k, 2, 1, "1h", cost=3).retry_after is None


def test_gcra(rl: Any, raw: redis.Redis, key: Key) -> None:
    k = key()
    two_then_an_hour(lambda **opts: rl.gcra(k, 2, 1, "1h", **opts))
    check(rl.gcra(k, 2, 1, "1h", debit=3), True, 2, 0)
    d = rl.gcra(k, 2, 1, "1h")
    check(d, False, 2, 0)
    assert d.retry_after is not None and d.retry_after > 2 * HOUR - 1000
    d = rl.gcra(key("fresh"), 2, 1, "1h", cost=3)
    check(d, False, 2, 2)
    assert d.retry_after is None


def test_gcra_delay(rl: Any, key: Key) -> None:
    k = key()
    # Capacity 1, one per hour, queue up to two hours: the second and third calls are
    # allowed with a wait, the fourth is refused.
    check(rl.gcra(k, 1, 1, "1h", delay="2h"), True, 1, 0)
    d = rl.gcra(k, 1, 1, "1h", delay=timedelta(hours=2))
    assert d.allowed and HOUR - 1000 < d.retry_after <= HOUR
    d = rl.gcra(k, 1, 1, "1h", delay=7200, cost=1)
    assert d.allowed and 2 * HOUR - 1000 < d.retry_after <= 2 * HOUR
    d = rl.gcra(k, 1, 1, "1h", delay="2h")
    assert not d.allowed and d.retry_after is not None and 0 < d.retry_after <= HOUR
    # DELAY 0 is the call without it.
    d = rl.gcra(k, 1, 1, "1h", delay=0)
    assert not d.allowed and d.retry_after is not None and d.retry_after > 2 * HOUR
    with pytest.raises(ArgumentError, match="DELAY"):
        rl.gcra(k, 1, 1, "1h", delay="2h", refund=1)


def test_throttle(rl: Any, key: Key, backend: str) -> None:
    k = key()
    if backend == "library":
        with pytest.raises(UnsupportedCommandError, match="CL.THROTTLE") as info:
            rl.throttle(k, 0, 1, 2)
        assert isinstance(info.value, NotLoadedError)
        return
    t = rl.throttle(k, 0, 1, 2)
    assert isinstance(t, Throttle)
    assert (t.limited, t.allowed, t.limit, t.remaining, t.retry_after, t.reset_after) == (
        False, True, 1, 0, None, 2
    )
    assert t.window == 2000  # its bucket (1 token, 1 per 2 s) refills from empty in 2 s
    t = rl.throttle(k, 0, 1, 2)
    assert (t.limited, t.limit, t.remaining, t.retry_after, t.reset_after) == (True, 1, 0, 2, 2)
    # quantity 0 looks; a quantity above the limit can never pass.
    t = rl.throttle(k, 0, 1, "2s", 0)
    assert t.limit == 1 and t.reset_after == 2
    t = rl.throttle(key("fresh"), 15, 30, 60, 17)
    assert (t.limited, t.limit, t.retry_after) == (True, 16, None)


def test_all(rl: Any, raw: redis.Redis, key: Key) -> None:
    a, b = key("a"), key("b")
    policies = {a: Fixed(2, "1d"), b: Fixed(3, "1d")}
    r = rl.all(policies)
    assert isinstance(r, AllDecision)
    assert r.keys == [a, b]
    check(r.combined, True, 2, 1)
    check(r[a], True, 2, 1)
    check(r[b], True, 3, 2)
    assert r.combined.window == DAY
    r = rl.all(list(policies.items()))
    check(r.combined, True, 2, 0)
    r = rl.all(policies)
    check(r.combined, False, 2, 0)
    assert r.allowed is False and r.retry_after is not None and r.retry_after > 0
    check(r[a], False, 2, 0)
    check(r[b], True, 3, 1)
    assert r.rejected() == [a]
    assert raw.get(b) == "2"  # all or nothing: b kept its unit
    with pytest.raises(KeyError):
        r[key("none")]
    # Options apply to every key.
    check(rl.all(policies, cost=0).combined, True, 2, 0)
    r = rl.all(policies, refund=1)
    check(r.combined, True, 2, 1)
    assert raw.get(a) == "1" and raw.get(b) == "1"
    r = rl.all(policies, debit=2)
    check(r[a], True, 2, 0)
    assert raw.get(a) == "3" and raw.get(b) == "3"


def test_quota(rl: Any, key: Key) -> None:
    d = rl.quota(key(), 5, "day", tz="America/New_York")
    check(d, True, 5, 4)
    assert 0 < d.reset_after <= 25 * HOUR  # a local day, 23 to 25 hours long
    with pytest.raises(ArgumentError, match="unknown time zone 'Mars/Olympus'") as info:
        rl.quota(key("zone"), 5, "day", tz="Mars/Olympus")
    assert info.value.code == "ERR"
    r = rl.all({key("f"): Fixed(3, "1d"), key("q"): Quota(5, "day", tz="America/New_York")})
    check(r.combined, True, 3, 2)
    check(r[key("q")], True, 5, 4)


def test_all_policies(rl: Any, raw: redis.Redis, key: Key) -> None:
    ks = [key(n) for n in ("fixed", "sliding", "counter", "bucket", "gcra", "lease")]
    r = rl.all(
        [
            (ks[0], Fixed(5, "1d")),
            (ks[1], Sliding(5, "1h")),
            (ks[2], SlidingCounter(5, "1d")),
            (ks[3], Bucket(5, 1, "1h")),
            (ks[4], Gcra(4, 1, timedelta(hours=1), delay="1h")),
            (ks[5], Acquire(1, "1h", "job-1")),
        ]
    )
    assert r.allowed and len(r.decisions) == 6
    assert [d.limit for d in r.decisions] == [5, 5, 5, 5, 4, 1]
    assert [d.remaining for d in r.decisions] == [4, 4, 4, 4, 3, 0]
    # A bucket's window is its time to refill from empty: capacity * period / tokens.
    assert [d.window for d in r.decisions] == [DAY, HOUR, DAY, 5 * HOUR, 4 * HOUR, HOUR]
    # The combined limit and remaining are those of the tightest key: the lease.
    check(r.combined, True, 1, 0)
    assert r.combined.window == HOUR
    assert raw.zscore(ks[5], "job-1") is not None
    # The full lease set refuses the next call, which then takes nothing anywhere.
    r = rl.all([(ks[0], Fixed(5, "1d")), (ks[5], Acquire(1, "1h", "job-2"))])
    assert not r.allowed and r.rejected() == [ks[5]]
    assert raw.get(ks[0]) == "1"
    assert rl.release(ks[5], "job-1") is True


def test_all_penalty(rl: Any, raw: redis.Redis, key: Key) -> None:
    login, rate = key("login"), key("rate")
    policies = {rate: Gcra(10, 1, "1h"), login: Penalty(3, "1h", "1h", "2h")}
    # A PENALTY policy is only looked at, never struck.
    r = rl.all(policies)
    assert r.allowed and r[login].limit == 3 and r[login].remaining == 3
    assert raw.exists(login) == 0 and r[rate].remaining == 9
    for _ in range(3):
        rl.penalty(login, 3, "1h", "1h", "2h")
    # A blocked offender makes the call rejected, and nothing is taken.
    r = rl.all(policies)
    assert not r.allowed and r.rejected() == [login]
    assert r[login].retry_after is not None and r[login].retry_after > 0
    assert rl.all(policies, cost=0)[rate].remaining == 9


def test_acquire_release(rl: Any, raw: redis.Redis, key: Key) -> None:
    k = key()
    d = rl.acquire(k, 1, "1h", "a")
    check(d, True, 1, 0)
    assert d.reset_after == HOUR and d.window == HOUR
    d = rl.acquire(k, 1, "1h", b"b")
    check(d, False, 1, 0)
    assert d.retry_after is not None and 0 < d.retry_after <= HOUR
    check(rl.acquire(k, 1, timedelta(hours=1), "a"), True, 1, 0)  # renewal
    assert rl.release(k, "a") is True
    assert rl.release(k, "a") is False
    assert raw.exists(k) == 0
    check(rl.acquire(k, 1, "1h", b"b"), True, 1, 0)
    assert rl.release(k, "b") is True


def test_penalty(rl: Any, raw: redis.Redis, key: Key) -> None:
    k = key()
    d = rl.penalty(k, 3, "1h", "1h", "2h")
    check(d, True, 3, 2)
    assert d.window == HOUR
    check(rl.penalty(k, 3, "1h", "1h", "2h"), True, 3, 1)
    d = rl.penalty(k, 3, "1h", "1h", "2h")
    check(d, False, 3, 0)
    assert d.retry_after == HOUR or HOUR - 1000 < d.retry_after <= HOUR
    d = rl.penalty(k, 3, "1h", "1h", "2h", cost=0)
    check(d, False, 3, 0)
    before = raw.get(k)
    with pytest.raises(ArgumentError, match="block must be at most max"):
        rl.penalty(k, 3, "1h", "3h", "2h")
    assert raw.get(k) == before


def share_supported(rl: Any, k: str) -> bool:
    try:
        rl.share(k, "t", 1, 10, 1, "1s", cost=0)
    except UnsupportedCommandError:
        return False
    return True


def test_share(rl: Any, key: Key) -> None:
    k = key()
    if not share_supported(rl, k):
        pytest.skip("this server's RL has no RL.SHARE / rl_share yet")
    d = rl.share(k, "ada", 1, 10, 1, "1h")
    # w: the budget's time to refill from empty, 10 tokens at 1 an hour.
    assert isinstance(d, Decision) and d.allowed and d.window == 10 * HOUR
    for option in ({"cost": 0}, {"refund": 1}, {"debit": 1}):
        assert rl.share(k, "ada", 1, 10, 1, "1h", **option).allowed
    r = rl.all({k: Share("ada", 1, 10, 1, "1h")})
    assert isinstance(r, AllDecision) and len(r.decisions) == 1


def test_durations(rl: Any, key: Key) -> None:
    for window in ("90s", "90", 90, 90.0, timedelta(seconds=90), "90000ms", "90S", "90000MS"):
        d = rl.fixed(key(f"w{window!r}"), 5, window)
        assert d.allowed and d.window == 90_000, window
    d = rl.bucket(key("ms"), 5, 1, timedelta(milliseconds=1500))
    assert d.window == 7500 and d.reset_after == 1500  # w: 5 tokens at 1 per 1.5 s
    with pytest.raises(ArgumentError, match="whole number of milliseconds"):
        rl.fixed(key("bad"), 5, 0.0005)
    with pytest.raises(ArgumentError, match="whole number of milliseconds"):
        rl.fixed(key("bad"), 5, timedelta(microseconds=1500))
    with pytest.raises(ArgumentError, match="duration"):
        rl.fixed(key("bad"), 5, [1])
