"""Fixtures: limiters over real servers, one with the RL module and one with only RL's
Functions library (RL_TEST_MODULE_URL, RL_TEST_LIBRARY_URL: scripts/clients.sh
starts both), through every client flavour this package wraps."""

from __future__ import annotations

import asyncio
import contextlib
import os
import shutil
import socket
import subprocess
import tempfile
import time
import uuid
from typing import Any, Callable, Iterator

import pytest
import redis
import redis.asyncio

from rl_client import AsyncRateLimiter, RateLimiter
from rl_client._core import LimiterBase

BACKENDS = ("module", "library")
#: The limiters' deadline in these tests (seconds), but in those marked ``deadline``:
#: on a machine busy with other work a call can take longer than the 0.1 s default.
PATIENT = 2.0


@pytest.fixture(autouse=True)
def patient(request: pytest.FixtureRequest) -> Iterator[None]:
    """Every limiter made without a timeout gets PATIENT, unless the test is about the
    deadline (marked ``deadline``)."""
    if request.node.get_closest_marker("deadline"):
        yield
        return
    defaults = LimiterBase.__init__.__kwdefaults__
    assert defaults is not None
    shipped = defaults["timeout"]
    defaults["timeout"] = PATIENT
    yield
    defaults["timeout"] = shipped
ENV = {"module": "RL_TEST_MODULE_URL", "library": "RL_TEST_LIBRARY_URL"}


def server_url(backend: str) -> str:
    url = os.environ.get(ENV[backend])
    if not url:
        pytest.skip(f"{ENV[backend]} is not set (scripts/clients.sh python sets it)")
    return url


@pytest.fixture(params=BACKENDS)
def backend(request: pytest.FixtureRequest) -> str:
    return str(request.param)


@pytest.fixture
def url(backend: str) -> str:
    return server_url(backend)


@pytest.fixture
def raw(url: str) -> Iterator[redis.Redis]:
    """A plain client on the same server, to look at keys."""
    client = redis.Redis.from_url(url, decode_responses=True)
    yield client
    client.close()


@pytest.fixture
def key() -> Callable[[str], str]:
    """Fresh keys for one test, in one hash slot: key("a") -> "{t:<uuid>}:a"."""
    tag = uuid.uuid4().hex[:12]
    return lambda name="k": f"{{t:{tag}}}:{name}"


class AsyncAsSync:
    """Runs an AsyncRateLimiter's calls to completion on its own loop, so every scenario
    written once for RateLimiter also checks the asyncio limiter."""

    def __init__(self, limiter: AsyncRateLimiter, loop: asyncio.AbstractEventLoop) -> None:
        self._limiter = limiter
        self._loop = loop

    @property
    def backend(self) -> Any:
        return self._limiter.backend

    def __getattr__(self, name: str) -> Any:
        attr = getattr(self._limiter, name)
        if not callable(attr):
            return attr

        def call(*args: Any, **kwargs: Any) -> Any:
            result = attr(*args, **kwargs)
            if asyncio.iscoroutine(result) or isinstance(result, asyncio.Future):
                return self._loop.run_until_complete(result)
            return result

        return call


FLAVOURS = ("redis", "redis-resp3", "redis-asyncio", "valkey", "valkey-asyncio")


@pytest.fixture(params=FLAVOURS)
def flavour(request: pytest.FixtureRequest) -> str:
    return str(request.param)


@pytest.fixture
def rl(url: str, flavour: str) -> Iterator[Any]:
    """A limiter (sync API) over the given server and client flavour."""
    if flavour == "redis":
        client = redis.Redis.from_url(url)
        yield RateLimiter(client)
        client.close()
    elif flavour == "redis-resp3":
        client = redis.Redis.from_url(url, protocol=3)
        yield RateLimiter(client)
        client.close()
    elif flavour == "valkey":
        valkey = pytest.importorskip("valkey")
        vclient = valkey.Valkey.from_url(url)
        yield RateLimiter(vclient)
        vclient.close()
    elif flavour == "valkey-asyncio":
        valkey_asyncio = pytest.importorskip("valkey.asyncio")
        loop = asyncio.new_event_loop()
        vaclient = valkey_asyncio.Valkey.from_url(url)
        yield AsyncAsSync(AsyncRateLimiter(vaclient), loop)
        loop.run_until_complete(vaclient.aclose())
        loop.close()
    else:
        loop = asyncio.new_event_loop()
        aclient = redis.asyncio.Redis.from_url(url)
        yield AsyncAsSync(AsyncRateLimiter(aclient), loop)
        loop.run_until_complete(aclient.aclose())
        loop.close()


@pytest.fixture
def sync_rl(url: str) -> Iterator[RateLimiter]:
    client = redis.Redis.from_url(url)
    yield RateLimiter(client)
    client.close()


@pytest.fixture
async def async_rl(url: str) -> Any:
    client = redis.asyncio.Redis.from_url(url)
    yield AsyncRateLimiter(client)
    await client.aclose()


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@contextlib.contextmanager
def redis_server() -> Iterator[tuple[subprocess.Popen[bytes], str]]:
    """A server of our own with neither the module nor the library: (process, url)."""
    server = os.environ.get("REDIS_SERVER", "redis-server")
    if shutil.which(server) is None:
        pytest.skip(f"{server} is not installed")
    port = free_port()
    workdir = tempfile.mkdtemp(prefix="rl-py-bare-")
    proc = subprocess.Popen(
        [server, "--port", str(port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no", "--dir", workdir],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        client = redis.Redis(port=port)
        deadline = time.monotonic() + 10
        while True:
            try:
                client.ping()
                break
            except redis.ConnectionError:
                if proc.poll() is not None or time.monotonic() > deadline:
                    raise RuntimeError(f"{server} did not start on port {port}") from None
                time.sleep(0.05)
        client.close()
        yield proc, f"redis://127.0.0.1:{port}"
    finally:
        if proc.poll() is None:
            proc.kill()
        proc.wait(timeout=10)
        shutil.rmtree(workdir, ignore_errors=True)


@pytest.fixture(scope="session")
def bare_url() -> Iterator[str]:
    with redis_server() as (_, url):
        yield url


@pytest.fixture
def dead_url() -> str:
    """An address where nothing listens."""
    return f"redis://127.0.0.1:{free_port()}"
