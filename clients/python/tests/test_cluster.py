"""RedisCluster (sync and asyncio): a three-node cluster of our own, every node with
the module (its path read from the module server's MODULE LIST) and the library
(its code read from the library server's FUNCTION LIST WITHCODE). Detection finds the
module; ``backend="library"`` sends the FCALL forms on the same nodes.
RL_TEST_CLUSTER=0 skips these."""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import tempfile
import time
import uuid
from typing import Any, Iterator

import pytest
import redis
import redis.asyncio.cluster
import redis.cluster

from rl_client import AllDecision, AsyncRateLimiter, Fixed, Gcra, RateLimiter, ServerError

pytestmark = pytest.mark.skipif(os.environ.get("RL_TEST_CLUSTER") == "0", reason="RL_TEST_CLUSTER=0")


def _ports(n: int) -> list[int]:
    """n ports whose cluster bus port (port + 10000) is free too."""
    found: list[int] = []
    while len(found) < n:
        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            port = int(s.getsockname()[1])
        if port + 10000 > 65535 or port in found:
            continue
        try:
            with socket.socket() as s:
                s.bind(("127.0.0.1", port + 10000))
        except OSError:
            continue
        found.append(port)
    return found


def _pairs(entry: Any) -> dict[str, Any]:
    if isinstance(entry, dict):
        return entry
    return dict(zip(entry[::2], entry[1::2]))


def _server_facts() -> tuple[str, str]:
    module_url = os.environ.get("RL_TEST_MODULE_URL")
    library_url = os.environ.get("RL_TEST_LIBRARY_URL")
    if not module_url or not library_url:
        pytest.skip("RL_TEST_MODULE_URL / RL_TEST_LIBRARY_URL are not set")
    with redis.Redis.from_url(module_url, decode_responses=True) as r:
        modules = r.execute_command("MODULE LIST")
    modules = [_pairs(m) for m in modules]
    path = next((m.get("path") for m in modules if m.get("name") == "rl"), None)
    with redis.Redis.from_url(library_url, decode_responses=True) as r:
        libs = r.execute_command("FUNCTION LIST", "LIBRARYNAME", "rl", "WITHCODE")
    code = _pairs(libs[0]).get("library_code") if libs else None
    if not path or not os.path.isfile(path) or not code:
        pytest.skip("cannot find the module's path or the library's code to start a cluster")
    return path, code


@pytest.fixture(scope="module")
def cluster() -> Iterator[list[int]]:
    server = os.environ.get("REDIS_SERVER", "redis-server")
    if shutil.which(server) is None or shutil.which("redis-cli") is None:
        pytest.skip("redis-server or redis-cli is missing")
    module, code = _server_facts()
    ports = _ports(3)
    workdir = tempfile.mkdtemp(prefix="rl-py-cluster-")
    procs: list[subprocess.Popen[bytes]] = []
    try:
        for port in ports:
            node = os.path.join(workdir, str(port))
            os.mkdir(node)
            procs.append(
                subprocess.Popen(
                    [server, "--port", str(port), "--bind", "127.0.0.1", "--dir", node,
                     "--save", "", "--appendonly", "no", "--cluster-enabled", "yes",
                     "--cluster-config-file", "nodes.conf", "--loadmodule", module],
                    stdout=subprocess.DEVNULL,
                    stderr=subprocess.DEVNULL,
                )
            )
        for port, proc in zip(ports, procs):
            _wait(lambda p=port: redis.Redis(port=p).ping(), proc, f"node {port}")
        subprocess.run(
            ["redis-cli", "--cluster", "create", *[f"127.0.0.1:{p}" for p in ports],
             "--cluster-replicas", "0", "--cluster-yes"],
            check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, timeout=60,
        )
        for port, proc in zip(ports, procs):
            _wait(lambda p=port: _cluster_ok(p), proc, "cluster_state:ok")
            redis.Redis(port=port).execute_command("FUNCTION LOAD", code)
        yield ports
    finally:
        for proc in procs:
            proc.terminate()
        for proc in procs:
            proc.wait(timeout=10)
        shutil.rmtree(workdir, ignore_errors=True)


def _cluster_ok(port: int) -> bool:
    with redis.Redis(port=port, decode_responses=True) as r:
        info = r.execute_command("CLUSTER INFO")
    if isinstance(info, dict):
        return info.get("cluster_state") == "ok"
    return "cluster_state:ok" in str(info)


def _wait(ready: Any, proc: subprocess.Popen[bytes], what: str) -> None:
    deadline = time.monotonic() + 30
    while True:
        try:
            if ready():
                return
        except redis.RedisError:
            pass
        if proc.poll() is not None or time.monotonic() > deadline:
            raise RuntimeError(f"the test cluster did not come up: {what}")
        time.sleep(0.05)


@pytest.fixture
def rc(cluster: list[int]) -> Iterator[redis.cluster.RedisCluster]:
    client = redis.cluster.RedisCluster(host="127.0.0.1", port=cluster[0])
    yield client
    client.close()


@pytest.mark.parametrize("backend", [None, "library"])
def test_cluster_sync(rc: redis.cluster.RedisCluster, backend: Any) -> None:
    rl = RateLimiter(rc, backend=backend)
    tag = uuid.uuid4().hex[:8]
    keys = [f"rl:{tag}:{i}" for i in range(12)]  # spread over the nodes' slots
    assert len({rc.keyslot(k) for k in keys}) > 1
    for k in keys:
        d = rl.gcra(k, 2, 1, "1h")
        assert d.allowed and d.remaining == 1
    assert rl.backend == (backend or "module")
    assert [d.remaining for d in rl.pipeline().gcra(keys[0], 2, 1, "1h").fixed(keys[1] + ":f", 2, "1d").execute()] == [0, 1]
    r = rl.all({f"{{{tag}}}:a": Fixed(1, "1d"), f"{{{tag}}}:b": Gcra(5, 1, "1h")})
    assert isinstance(r, AllDecision) and r.allowed
    assert not rl.all({f"{{{tag}}}:a": Fixed(1, "1d"), f"{{{tag}}}:b": Gcra(5, 1, "1h")}).allowed
    with rl.lease(keys[2] + ":lease", 1, "1h") as lease:
        assert lease.allowed
        assert rc.zcard(keys[2] + ":lease") == 1
    assert rc.exists(keys[2] + ":lease") == 0
    if backend is None:
        assert rl.throttle(keys[3] + ":cell", 0, 1, 2).allowed


def test_cluster_crossslot(rc: redis.cluster.RedisCluster) -> None:
    rl = RateLimiter(rc)
    a, b = "rl:crossslot:a", "rl:crossslot:b"
    assert rc.keyslot(a) != rc.keyslot(b)
    with pytest.raises((ServerError, redis.RedisClusterException)):  # type: ignore[call-overload]
        rl.all({a: Fixed(1, "1d"), b: Fixed(1, "1d")})


async def test_cluster_async(cluster: list[int]) -> None:
    client = redis.asyncio.cluster.RedisCluster(host="127.0.0.1", port=cluster[1])
    rl = AsyncRateLimiter(client)
    tag = uuid.uuid4().hex[:8]
    assert await rl.detect() == "module"
    for i in range(6):
        assert (await rl.bucket(f"rl:{tag}:{i}", 1, 1, "1h")).allowed
    out = await rl.pipeline().bucket(f"rl:{tag}:0", 1, 1, "1h").bucket(f"rl:{tag}:9", 1, 1, "1h").execute()
    assert [d.allowed for d in out] == [False, True]
    forced = AsyncRateLimiter(client, backend="library")
    assert (await forced.all({f"{{{tag}}}:x": Fixed(1, "1d")})).allowed
    async with forced.lease(f"rl:{tag}:lease", 1, "1h") as lease:
        assert lease.allowed
    await client.aclose()


async def test_limits_storage_on_cluster(cluster: list[int]) -> None:
    """rl+cluster:// (and async+rl+cluster://): every strategy's keys land on their own
    nodes, and reset() finds them on every node."""
    limits = pytest.importorskip("limits")
    from limits.aio import strategies as aio
    from limits.storage import storage_from_string
    from limits.strategies import STRATEGIES

    import rl_client.limits  # noqa: F401  (registers the schemes)

    uri = "rl+cluster://" + ",".join(f"127.0.0.1:{p}" for p in cluster)
    storage = storage_from_string(uri)
    item = limits.RateLimitItemPerMinute(2)
    users = [f"user{i}" for i in range(12)]  # enough keys to reach every node
    for name, strategy in STRATEGIES.items():
        limiter = strategy(storage)
        for user in users:
            assert [limiter.hit(item, name, user) for _ in range(3)] == [True, True, False]
    with redis.cluster.RedisCluster(host="127.0.0.1", port=cluster[0]) as rc:
        per_node = [len(rc.keys("RL-LIMITS:*", target_nodes=n)) for n in rc.get_primaries()]
    assert sum(per_node) == 36 and all(per_node), per_node

    a = storage_from_string("async+" + uri)
    limiter = aio.SlidingWindowCounterRateLimiter(a)
    assert not await limiter.hit(item, "sliding-window-counter", users[0])
    assert await limiter.hit(item, "asyncio")
    assert await a.reset() == 37
    await a.redis.aclose()
    assert storage.reset() == 0
