"""The rules every typed client follows (docs/clients.md, "The typed clients: one set of
rules"): arguments refused before anything is sent, the HTTP fields of every case of
clients/headers.json (each checked with a structured-field parser), and the deadline
and fail modes against a stopped server, a killed one and a paused one."""

from __future__ import annotations

import asyncio
import json
import math
import signal
import subprocess
import time
from datetime import timedelta
from pathlib import Path
from typing import Any, Callable, Iterator

import http_sf
import pytest
import redis
import redis.asyncio

import rl_client
from rl_client import ArgumentError, AsyncRateLimiter, Policy, RateLimiter

from conftest import redis_server

ROOT = Path(__file__).resolve().parents[3]
CASES = json.loads((ROOT / "clients" / "headers.json").read_text())
COMMANDS = {c["name"]: c for c in json.loads((ROOT / "commands.json").read_text())["commands"]}
IETF = ("RateLimit-Policy", "RateLimit")
Key = Callable[..., str]


def sf_valid(headers: dict[str, str]) -> dict[str, str]:
    """The fields, each IETF one parsed as a structured-field list (raises if invalid)."""
    for name in IETF:
        http_sf.parse(headers[name].encode(), tltype="list")
    return headers


# ---- a headers.json call, made through the typed API ---------------------------------


def _kinds(method: str) -> list[str]:
    """The kinds of a method's positional arguments after the key, from commands.json."""
    name = next(n for n in COMMANDS if n.split(".")[1].lower() == method.replace("_", ""))
    return [a["type"] for a in COMMANDS[name]["arguments"] if a["type"] not in ("key", "policy")]


def _args(method: str, values: list[Any]) -> list[Any]:
    """headers.json gives durations in ms: as the strings RL takes."""
    return [f"{v}ms" if kind == "duration" else v for kind, v in zip(_kinds(method), values)]


def _snake(name: str) -> str:
    return "".join("_" + c.lower() if c.isupper() else c for c in name)


def _shadow(case: list[Any]) -> tuple[list[Any], dict[str, bool]]:
    """A call list starting with "shadow" is the call (or policy) with the flag on."""
    return (case[1:], {"shadow": True}) if case[0] == "shadow" else (case, {})


def _policy(case: list[Any]) -> Policy:
    (word, *values), flags = _shadow(case)
    cls = next(getattr(rl_client, n) for n in rl_client.__all__ if getattr(getattr(rl_client, n), "word", None) == word.upper())
    return cls(*_args(_snake(word), values), **flags)  # type: ignore[no-any-return]


def call(rl: Any, case: list[Any], key: Key) -> Any:
    (name, *values), flags = _shadow(case)
    if name == "all":
        return rl.all([(key(str(i)), _policy(policy)) for i, policy in enumerate(values)])
    method = _snake(name)
    return getattr(rl, method)(key(), *_args(method, values), **flags)


def shadow_flags(d: Any, case: list[Any]) -> list[bool]:
    """The decision's shadow flag and, for RL.ALL, each member's, as the case expects them:
    the call's own flag, or (RL.ALL) False, then each policy's."""
    if case[0] == "all":
        return [d.combined.shadow] + [m.shadow for m in d.decisions]
    return [d.shadow]


def expected_flags(case: list[Any]) -> list[bool]:
    if case[0] == "all":
        return [False] + [policy[0] == "shadow" for policy in case[1:]]
    return [case[0] == "shadow"]


@pytest.mark.parametrize("case", CASES["calls"], ids=lambda c: str(c["call"]))
def test_policy_field(rl: Any, backend: str, key: Key, case: dict[str, Any]) -> None:
    if case.get("module_only") and backend != "module":
        pytest.skip("module only")
    assert sf_valid(call(rl, case["call"], key).headers())["RateLimit-Policy"] == case["policy"]


@pytest.mark.parametrize("case", CASES["fresh"], ids=lambda c: str(c["call"]))
def test_fresh_fields(rl: Any, key: Key, case: dict[str, Any]) -> None:
    headers = sf_valid(call(rl, case["call"], key).headers())
    assert {k: v for k, v in headers.items() if k in case["fields"]} == case["fields"]
    assert "Retry-After" not in headers


@pytest.mark.parametrize("case", CASES["failures"], ids=lambda c: f"{c['call']}-{c['mode']}")
def test_failure_fields(dead_url: str, key: Key, case: dict[str, Any]) -> None:
    client = redis.Redis.from_url(dead_url)
    d = call(RateLimiter(client, on_connection_error=case["mode"]), case["call"], key)
    assert isinstance(d.error, redis.ConnectionError)
    # A shadow call is answered by the fail mode as any other, and says it is shadow.
    assert shadow_flags(d, case["call"]) == expected_flags(case["call"])
    assert d.allowed == (case["mode"] == "allow")
    headers = d.headers()
    if case["fields"]:
        sf_valid(headers)
    assert {k: v for k, v in headers.items() if k in (*IETF, "Retry-After")} == case["fields"]
    if not case["fields"]:
        assert headers == {}


@pytest.mark.parametrize("case", CASES["shadow"], ids=lambda c: str(c["call"]))
def test_shadow_fields(rl: Any, key: Key, case: dict[str, Any]) -> None:
    for _ in range(case["calls"]):
        d = call(rl, case["call"], key)
    assert d.allowed == case["allowed"]
    assert d.error is None
    flags = shadow_flags(d, case["call"])
    assert flags == expected_flags(case["call"])
    if "members" in case:
        assert [(m.allowed, m.shadow) for m in d.decisions] == [(m["allowed"], m["shadow"]) for m in case["members"]]
    # Exactly these fields: {} is no field at all (not even X-RateLimit-*).
    headers = d.headers()
    if not case["fields"]:
        assert headers == {}
        return
    sf_valid(headers)
    assert {k: v for k, v in headers.items() if k in (*IETF, "Retry-After")} == case["fields"]


@pytest.mark.parametrize("case", CASES["names"], ids=lambda c: repr(c["name"]))
def test_policy_names(sync_rl: RateLimiter, key: Key, case: dict[str, Any]) -> None:
    d = call(sync_rl, case["call"], key)
    if case.get("error"):
        with pytest.raises(ArgumentError):
            d.headers(case["name"])
        return
    headers = sf_valid(d.headers(case["name"]))
    assert headers["RateLimit-Policy"] == case["policy"]
    assert http_sf.parse(headers["RateLimit"].encode(), tltype="list")[0][0] == case["name"]


def test_fields_clamped_and_w_left_out() -> None:
    huge = 10**18
    d = rl_client.Decision(False, huge, huge, huge, huge, huge)
    headers = sf_valid(d.headers())
    assert headers["RateLimit-Policy"] == '"default";q=999999999999999;w=999999999999999'
    assert headers["RateLimit"] == '"default";r=999999999999999;t=999999999999999'
    for window in (None, 0):
        assert sf_valid(rl_client.Decision(True, 5, 4, 0, 1, window).headers())["RateLimit-Policy"] == '"default";q=5'


# ---- arguments -----------------------------------------------------------------------


class Recording:
    """A client that records what it is given and answers a fresh decision."""

    def __init__(self) -> None:
        self.sent: list[tuple[Any, ...]] = []

    def execute_command(self, *args: Any, **kw: Any) -> Any:
        self.sent.append(args)
        if args[0] == "RL.ALL" or args[:2] == ("FCALL", "rl_all"):
            numkeys = args[1] if args[0] == "RL.ALL" else args[2]
            return [[1, 5, 4, 0, 1000]] * (numkeys + 1)
        return [1, 5, 4, 0, 1000]

    def pipeline(self, transaction: bool = False) -> "Recording":
        return self  # queuing is execute_command too


BAD_INTEGERS = [1.0, 5.5, math.nan, math.inf, True, "5", None, 0, 2**53]
BAD_DURATIONS = ["1ns", "1.5ms", "0", "01s", "1 s", "3651d", "-1", 0, -1, 0.0005, 1.0005, math.inf, math.nan,
                 timedelta(microseconds=1500), timedelta(0), True, None, [1], "1y"]


@pytest.mark.parametrize("value", BAD_INTEGERS, ids=repr)
def test_integers_refused(value: Any) -> None:
    client = Recording()
    rl = RateLimiter(client, backend="module")
    with pytest.raises(ArgumentError, match="capacity must be an integer from 1 to 9007199254740991"):
        rl.gcra("k", value, 1, "1s")
    with pytest.raises(ArgumentError):
        rl.pipeline().gcra("k", 5, value, "1s")
    with pytest.raises(ArgumentError):
        rl_client.Gcra(value, 1, "1s")
    assert client.sent == []


@pytest.mark.parametrize("value", BAD_DURATIONS, ids=repr)
def test_durations_refused(value: Any) -> None:
    client = Recording()
    rl = RateLimiter(client, backend="module")
    with pytest.raises(ArgumentError, match="^period must be"):
        rl.gcra("k", 5, 1, value)
    with pytest.raises(ArgumentError):
        rl_client.Fixed(5, value)
    assert client.sent == []


def test_durations_taken() -> None:
    client = Recording()
    rl = RateLimiter(client, backend="module")
    for value, sent, ms in [
        (60, 60, 60_000),  # a bare integer is seconds, as on the server
        ("60", "60", 60_000),
        ("1500MS", "1500MS", 1500),
        (timedelta(milliseconds=1500), "1500ms", 1500),
        (0.1, "100ms", 100),
        ("3650d", "3650d", 315_360_000_000),
    ]:
        assert rl.fixed("k", 5, value).window == ms
        assert client.sent[-1] == ("RL.FIXED", "k", 5, sent)
    # DELAY may be 0; other durations may not.
    rl.gcra("k", 5, 1, "1s", delay=0)
    assert client.sent[-1] == ("RL.GCRA", "k", 5, 1, "1s", "DELAY", 0)


def test_options_refused() -> None:
    client = Recording()
    rl = RateLimiter(client, backend="module")
    for opts, message in [
        ({"cost": 1, "refund": 1}, "COST and REFUND exclude each other"),
        ({"refund": 1, "debit": 1}, "REFUND and DEBIT exclude each other"),
        ({"debit": 1, "delay": "1s"}, "DEBIT and DELAY exclude each other"),
        ({"cost": -1}, "cost must be an integer from 0"),
        ({"cost": 1.0}, "cost must be an integer"),
        ({"debit": 0}, "debit must be an integer from 1"),
        ({"delay": "1.5ms"}, "delay must be"),
    ]:
        with pytest.raises(ArgumentError, match=message):
            rl.gcra("k", 5, 1, "1s", **opts)
    with pytest.raises(ArgumentError, match="tenant must be a str or bytes"):
        rl.share("k", 7, 1, 5, 1, "1s")
    with pytest.raises(ArgumentError, match="RL.ALL takes Policy objects"):
        rl.all({"k": "FIXED 5 1s"})  # type: ignore[dict-item]
    assert client.sent == []
    # COST and DELAY go together.
    rl.gcra("k", 5, 1, "1s", cost=2, delay="1s")
    assert client.sent == [("RL.GCRA", "k", 5, 1, "1s", "COST", 2, "DELAY", "1s")]


@pytest.mark.parametrize("value", [1, 0, None, "yes", "", 1.0, [True]], ids=repr)
def test_shadow_refused(value: Any) -> None:
    client = Recording()
    rl = RateLimiter(client, backend="module")
    with pytest.raises(ArgumentError, match="^shadow must be True or False"):
        rl.gcra("k", 5, 1, "1s", shadow=value)
    with pytest.raises(ArgumentError, match="^shadow must be True or False"):
        rl.pipeline().fixed("k", 5, "1s", shadow=value)
    with pytest.raises(ArgumentError, match="^shadow must be True or False"):
        rl_client.Gcra(5, 1, "1s", shadow=value)
    assert client.sent == []


@pytest.mark.parametrize("backend", ["module", "library"])
def test_shadow_sent(backend: str) -> None:
    client = Recording()
    rl = RateLimiter(client, backend=backend)  # type: ignore[arg-type]
    head: tuple[Any, ...] = ("RL.GCRA",) if backend == "module" else ("FCALL", "rl_gcra", 1)
    # After the arguments and the options; nothing when off.
    assert rl.gcra("k", 5, 1, "1s", cost=2, shadow=True).shadow
    assert client.sent[-1] == (*head, "k", 5, 1, "1s", "COST", 2, "SHADOW")
    assert not rl.gcra("k", 5, 1, "1s", shadow=False).shadow
    assert client.sent[-1] == (*head, "k", 5, 1, "1s")
    # In RL.ALL, before the policy's word.
    rl.all({"a": rl_client.Gcra(5, 1, "1s", delay="1s", shadow=True), "b": rl_client.Fixed(5, "1s")})
    head = ("RL.ALL",) if backend == "module" else ("FCALL", "rl_all")
    assert client.sent[-1] == (*head, 2, "a", "b", "SHADOW", "GCRA", 5, 1, "1s", "DELAY", "1s", "FIXED", 5, "1s")
    assert rl_client.Acquire(5, "1s", "id", shadow=True).args() == ["SHADOW", "ACQUIRE", 5, "1s", "id"]


# ---- deadlines and fail modes --------------------------------------------------------

TIMEOUT = 0.1  # the default
MARGIN = 0.25  # scheduling on a busy machine


@pytest.mark.deadline
def test_default_deadline(dead_url: str) -> None:
    assert RateLimiter(redis.Redis.from_url(dead_url)).timeout == TIMEOUT


def within_deadline(started: float, timeout: float = TIMEOUT) -> None:
    took = time.monotonic() - started
    assert took < timeout + MARGIN, f"took {took:.3f} s, deadline {timeout} s"


def expect(d: Any, mode: str) -> None:
    """The decision the rules give for ``mode``, carrying the error."""
    assert d.error is not None
    if mode == "allow":
        assert (d.allowed, d.limit, d.remaining, d.retry_after, d.reset_after) == (True, 5, 5, 0, 0)
    else:
        assert (d.allowed, d.limit, d.remaining, d.retry_after, d.reset_after) == (False, 5, 0, 1000, 1000)


def decided(rl: RateLimiter, mode: str, error: type[BaseException]) -> None:
    """One call: ``error`` raised when ``mode`` is "raise", else the mode's decision."""
    if mode == "raise":
        with pytest.raises(error):
            rl.gcra("k", 5, 1, "1s")
    else:
        expect(rl.gcra("k", 5, 1, "1s"), mode)


@pytest.fixture
def own_server() -> Iterator[tuple[subprocess.Popen[bytes], str]]:
    """A redis-server of our own to kill or pause (no RL: the calls below never reach
    a command)."""
    with redis_server() as server:
        yield server


@pytest.mark.parametrize("mode", ["raise", "allow", "deny"])
@pytest.mark.deadline
def test_stopped_server(dead_url: str, mode: str) -> None:
    # The client's own settings would retry for seconds; the limiter's deadline holds.
    rl = RateLimiter(redis.Redis.from_url(dead_url, socket_timeout=5), on_connection_error=mode)  # type: ignore[arg-type]
    for _ in range(3):
        started = time.monotonic()
        decided(rl, mode, redis.ConnectionError)
        within_deadline(started)


@pytest.mark.parametrize("mode", ["allow", "deny"])
@pytest.mark.deadline
def test_killed_server(own_server: tuple[subprocess.Popen[bytes], str], mode: str) -> None:
    proc, url = own_server
    rl = RateLimiter(redis.Redis.from_url(url), on_connection_error=mode, backend="module")  # type: ignore[arg-type]
    rl.client.ping()
    rl._conn.ping()  # a connection in the limiter's pool
    proc.send_signal(signal.SIGKILL)
    proc.wait(timeout=10)
    for _ in range(3):
        started = time.monotonic()
        expect(rl.gcra("k", 5, 1, "1s"), mode)
        within_deadline(started)
    started = time.monotonic()
    out = rl.pipeline().gcra("k", 5, 1, "1s").fixed("k", 5, "1s").execute()
    within_deadline(started)
    expect(out[0], mode)


@pytest.mark.parametrize("timeout", [0.1, 0.3])
@pytest.mark.parametrize("mode", ["raise", "deny"])
@pytest.mark.deadline
def test_paused_server(own_server: tuple[subprocess.Popen[bytes], str], mode: str, timeout: float) -> None:
    _, url = own_server
    admin = redis.Redis.from_url(url)
    rl = RateLimiter(redis.Redis.from_url(url), on_connection_error=mode, backend="module", timeout=timeout)  # type: ignore[arg-type]
    admin.execute_command("CLIENT", "PAUSE", 2000, "ALL")
    try:
        started = time.monotonic()
        decided(rl, mode, redis.TimeoutError)
        took = time.monotonic() - started
        assert timeout <= took < timeout + MARGIN, took
    finally:
        admin.execute_command("CLIENT", "UNPAUSE")
        admin.close()


@pytest.mark.parametrize("mode", ["allow", "deny"])
@pytest.mark.deadline
def test_paused_server_async(own_server: tuple[subprocess.Popen[bytes], str], mode: str) -> None:
    _, url = own_server
    admin = redis.Redis.from_url(url)

    async def main() -> None:
        client = redis.asyncio.Redis.from_url(url)
        rl = AsyncRateLimiter(client, on_connection_error=mode, backend="module")  # type: ignore[arg-type]
        await rl._conn.ping()
        admin.execute_command("CLIENT", "PAUSE", 2000, "ALL")
        started = time.monotonic()
        expect(await rl.gcra("k", 5, 1, "1s"), mode)
        within_deadline(started)
        started = time.monotonic()
        expect((await rl.pipeline().gcra("k", 5, 1, "1s").execute())[0], mode)
        within_deadline(started)
        await rl.aclose()
        await client.aclose()

    try:
        asyncio.run(main())
    finally:
        admin.execute_command("CLIENT", "UNPAUSE")
        admin.close()


@pytest.mark.parametrize("mode", ["allow", "deny"])
@pytest.mark.deadline
async def test_stopped_server_async(dead_url: str, mode: str) -> None:
    client = redis.asyncio.Redis.from_url(dead_url, socket_timeout=5)
    rl = AsyncRateLimiter(client, on_connection_error=mode)  # type: ignore[arg-type]
    started = time.monotonic()
    expect(await rl.gcra("k", 5, 1, "1s"), mode)
    within_deadline(started)
    await client.aclose()


@pytest.mark.deadline
async def test_async_deadline_bounds_the_whole_call() -> None:
    """asyncio: the deadline bounds the call, detection included, whatever the client
    (here one that never answers and that the limiter cannot configure)."""

    class Silent:
        async def execute_command(self, *args: Any, **kw: Any) -> Any:
            await asyncio.sleep(10)

    rl = AsyncRateLimiter(Silent(), on_connection_error="deny")
    started = time.monotonic()
    d = await rl.gcra("k", 5, 1, "1s")
    within_deadline(started)
    expect(d, "deny")
    assert isinstance(d.error, TimeoutError)
