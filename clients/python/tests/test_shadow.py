"""SHADOW on real servers: a limit tried beside the enforced ones. The call is the
enforced one's (same reply, same writes) but counted apart in INFO rl, its decision
says it is shadow, and in RL.ALL a shadow policy never vetoes the call. (The HTTP
fields of shadow calls are clients/headers.json's, in test_rules.py.)"""

from __future__ import annotations

from typing import Any, Callable

import pytest
import redis
import redis.asyncio

from rl_client import AsyncRateLimiter, Fixed, Gcra, RateLimiter

Key = Callable[..., str]


def counters(raw: redis.Redis, command: str) -> dict[str, int]:
    """The module's INFO rl counters of ``command`` (``gcra``): allowed, rejected,
    shadow_allowed, shadow_rejected."""
    info = raw.info("rl")
    return {k: int(info[f"rl_{command}_{k}"]) for k in ("allowed", "rejected", "shadow_allowed", "shadow_rejected")}


def grew(before: dict[str, int], after: dict[str, int]) -> dict[str, int]:
    return {k: after[k] - before[k] for k in before if after[k] != before[k]}


def test_counted_apart_in_info(url: str, backend: str, raw: redis.Redis, key: Key) -> None:
    if backend != "module":
        pytest.skip("the library has no counters")
    rl = RateLimiter(redis.Redis.from_url(url))
    k = key()
    before = counters(raw, "gcra")
    assert rl.gcra(k, 1, 1, "1h", shadow=True).allowed
    assert not rl.gcra(k, 1, 1, "1h", shadow=True).allowed
    assert grew(before, counters(raw, "gcra")) == {"shadow_allowed": 1, "shadow_rejected": 1}
    # The same writes as an enforced call: the unit the shadow call took is gone.
    before = counters(raw, "gcra")
    assert not rl.gcra(k, 1, 1, "1h").allowed
    assert grew(before, counters(raw, "gcra")) == {"rejected": 1}
    # A shadow policy of RL.ALL counts under its own command, by its own reply.
    fixed = counters(raw, "fixed")
    r = rl.all({key("a"): Gcra(10, 1, "1s"), key("b"): Fixed(1, "1h", shadow=True)}, cost=2)
    assert r.allowed and r.decisions[1].shadow and not r.decisions[1].allowed
    assert grew(fixed, counters(raw, "fixed")) == {"shadow_rejected": 1}


def test_same_reply_and_writes(rl: Any, raw: redis.Redis, key: Key) -> None:
    a, b = key("a"), key("b")
    for _ in range(3):
        shadow, enforced = rl.fixed(a, 2, "1h", shadow=True), rl.fixed(b, 2, "1h")
        assert shadow.shadow and not enforced.shadow
        assert (shadow.allowed, shadow.limit, shadow.remaining, shadow.retry_after is None) == (
            enforced.allowed,
            enforced.limit,
            enforced.remaining,
            enforced.retry_after is None,
        )
    assert raw.get(a) == raw.get(b) == "2"


def test_all_never_vetoed(rl: Any, raw: redis.Redis, key: Key) -> None:
    a, b = key("a"), key("b")
    policies = {a: Fixed(5, "1h"), b: Fixed(1, "1h", shadow=True)}
    for i in range(3):
        r = rl.all(policies)
        assert r.allowed and not r.combined.shadow
        assert [d.shadow for d in r.decisions] == [False, True]
        assert r[b].allowed == (i == 0)
        assert r.rejected() == []  # the shadow key rejects nobody
    # The enforced key took every call; the shadow one only what it would allow.
    assert raw.get(a) == "3" and raw.get(b) == "1"
    assert r.headers()["RateLimit-Policy"] == '"fixed-1";q=5;w=3600'


def test_pipelines(url: str, key: Key) -> None:
    rl = RateLimiter(redis.Redis.from_url(url))
    k = key()
    with rl.pipeline() as pipe:
        pipe.gcra(k, 1, 1, "1h", shadow=True).gcra(k, 1, 1, "1h", shadow=True).gcra(k, 1, 1, "1h")
        pipe.all({key("a"): Gcra(1, 1, "1h", shadow=True)})
        out = pipe.execute()
    assert [(d.allowed, d.shadow) for d in out[:3]] == [(True, True), (False, True), (False, False)]
    assert out[3].decisions[0].shadow and out[3].headers() == {}
    assert out[0].headers() == {} and out[2].headers()["Retry-After"]


async def test_async(url: str, key: Key) -> None:
    client = redis.asyncio.Redis.from_url(url)
    rl = AsyncRateLimiter(client)
    k = key()
    assert (await rl.sliding(k, 1, "1h", shadow=True)).shadow
    d = await rl.sliding(k, 1, "1h", shadow=True)
    assert d.shadow and not d.allowed and d.headers() == {}
    pipe = rl.pipeline()
    pipe.sliding(k, 1, "1h", shadow=True)
    [p] = await pipe.execute()
    assert p.shadow and not p.allowed
    await client.aclose()


def test_all_combined_is_the_enforced_policies(rl: Any, key: Key) -> None:
    # Both keys answer limit 5, remaining 4: the combined window is the enforced key's.
    r = rl.all({key("a"): Fixed(5, "1h", shadow=True), key("b"): Fixed(5, "1d")})
    assert (r.combined.limit, r.combined.remaining, r.combined.window) == (5, 4, 86_400_000)


@pytest.mark.parametrize("mode", ["allow", "deny"])
def test_all_made_up_from_the_enforced_policies(dead_url: str, mode: Any) -> None:
    rl = RateLimiter(redis.Redis.from_url(dead_url), on_connection_error=mode)
    r = rl.all({"a": Fixed(3, "1m", shadow=True), "b": Gcra(50, 1, "1s")})
    assert r.error is not None and r.allowed == (mode == "allow")
    assert (r.combined.limit, r.combined.window, r.combined.shadow) == (50, 50_000, False)
    assert [d.shadow for d in r.decisions] == [True, False]
    assert r.headers()["X-RateLimit-Limit"] == "50"
    # Only shadow policies: nothing is enforced, so nothing is denied (as the server
    # answers such a call), and no field is given.
    r = rl.all({"a": Fixed(3, "1m", shadow=True)})
    assert r.allowed and r.decisions[0].shadow and r.decisions[0].allowed == (mode == "allow")
    assert r.headers() == {} and r.headers("name") == {}
