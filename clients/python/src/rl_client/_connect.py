"""The connections RL's calls go through, and their deadline.

redis-py and valkey-py retry a failed command by default (three times, with a backoff
of up to seconds): a limiter must answer within its deadline, and a blind retry of an
RL call can count it twice. So a limiter over a standalone client keeps a pool of its
own, made from the client's connection settings (address, credentials, TLS, protocol,
database) with the deadline as its socket timeouts and no retry."""

from __future__ import annotations

import importlib
from typing import Any, Optional

from ._errors import ArgumentError

#: The default deadline of a call, in seconds.
DEFAULT_TIMEOUT = 0.1
# The pools whose connection settings are all in their connection_kwargs.
_POOLS = ("ConnectionPool", "BlockingConnectionPool")


def is_cluster(client: Any) -> bool:
    return hasattr(client, "get_nodes") and any("Cluster" in cls.__name__ for cls in type(client).__mro__)


def no_retry(package: str) -> Any:
    """``Retry(NoBackoff(), 0)`` of redis-py or valkey-py (``package``: ``"redis"``,
    ``"redis.asyncio"``, ``"valkey"``...)."""
    retry = importlib.import_module(f"{package}.retry")
    backoff = importlib.import_module(f"{package.split('.', 1)[0]}.backoff")
    return retry.Retry(backoff.NoBackoff(), 0)


def own_client(client: Any, timeout: Optional[float]) -> Any:
    """The client to send RL's calls through: for a standalone redis-py or valkey-py
    client (sync or asyncio), one of its class on a pool of its own with ``timeout`` as
    its socket and connect timeouts and no retry; else (``timeout`` None, a cluster
    client, a pool made by Sentinel, another object) the client itself, whose own
    settings then apply."""
    pool = getattr(client, "connection_pool", None)
    if timeout is None or pool is None or is_cluster(client) or type(pool).__name__ not in _POOLS:
        return client
    module = type(pool).__module__
    package = module.split(".", 1)[0] + (".asyncio" if ".asyncio" in module else "")
    settings = dict(pool.connection_kwargs)
    settings.update(
        socket_timeout=timeout,
        socket_connect_timeout=timeout,
        retry=no_retry(package),
        retry_on_timeout=False,
        retry_on_error=[],
    )
    if type(pool).__name__ == "BlockingConnectionPool":
        # Waiting for a free connection is part of the deadline too.
        settings["timeout"] = timeout
    try:
        own = type(pool)(connection_class=pool.connection_class, max_connections=pool.max_connections, **settings)
        return type(client)(connection_pool=own)
    except TypeError:
        # A client or pool class that takes other arguments: use the client as it is.
        return client


def check_timeout(timeout: Optional[float]) -> Optional[float]:
    if timeout is None:
        return None
    if isinstance(timeout, bool) or not isinstance(timeout, (int, float)) or not 0 < timeout < float("inf"):
        raise ArgumentError(f"timeout must be a positive number of seconds or None, not {timeout!r}")
    return float(timeout)
