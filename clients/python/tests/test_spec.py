"""The client against the command spec (commands.json at the repository root) and the
package version against the module's (Cargo.toml)."""

from __future__ import annotations

import inspect
import json
import re
import warnings
from pathlib import Path
from typing import Any

import pytest

import rl_client
from rl_client import AsyncRateLimiter, Pipeline, Policy, RateLimiter

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[2]

# Every command of commands.json, and the method that sends it.
METHODS = {
    "RL.FIXED": "fixed",
    "RL.SLIDING": "sliding",
    "RL.SLIDINGCOUNTER": "sliding_counter",
    "RL.BUCKET": "bucket",
    "RL.GCRA": "gcra",
    "CL.THROTTLE": "throttle",
    "RL.ALL": "all",
    "RL.ACQUIRE": "acquire",
    "RL.RELEASE": "release",
    "RL.PENALTY": "penalty",
    "RL.SHARE": "share",
}
# Every RL.ALL policy word, and its class.
POLICIES = {
    "FIXED": rl_client.Fixed,
    "SLIDING": rl_client.Sliding,
    "SLIDINGCOUNTER": rl_client.SlidingCounter,
    "BUCKET": rl_client.Bucket,
    "GCRA": rl_client.Gcra,
    "ACQUIRE": rl_client.Acquire,
    "PENALTY": rl_client.Penalty,
    "SHARE": rl_client.Share,
}
# Arguments RL.ALL's method takes as one mapping of keys to policies.
ALL_FOLDED = {"numkeys", "key", "policy"}


def load_spec() -> dict[str, Any]:
    # Generated from the command table (make commands-json).
    return dict(json.loads((ROOT / "commands.json").read_text()))


SPEC = load_spec()


def params(cls: type, method: str) -> set[str]:
    return set(inspect.signature(getattr(cls, method)).parameters) - {"self"}


@pytest.mark.parametrize("command", SPEC["commands"], ids=lambda c: c["name"])
def test_command_has_method(command: dict[str, Any]) -> None:
    name = command["name"]
    assert name in METHODS, f"{name} (commands.json) has no method in the Python client's table"
    method = METHODS[name]
    for cls in (RateLimiter, AsyncRateLimiter, Pipeline):
        assert hasattr(cls, method), f"{cls.__name__} has no {method}() for {name}"
    have = params(RateLimiter, method)
    for option in command.get("options", []):
        assert option["name"].lower() in have, f"{method}() has no parameter for {name}'s {option['name']}"
    for argument in command.get("arguments", []):
        arg = argument["name"].lower()
        if name == "RL.ALL" and arg in ALL_FOLDED:
            assert "policies" in have
            continue
        if argument.get("type") == "policy":
            continue
        assert arg in have, f"{method}() has no parameter for {name}'s argument {argument['name']}"
    # The library function, when there is one, is what the library backend sends.
    spec = _spec_of(name)
    assert spec.name == name
    assert spec.function == command.get("function", spec.function)


def _spec_of(name: str) -> Any:
    from rl_client import _core

    found = [v for v in vars(_core).values() if isinstance(v, _core.Spec) and v.name == name]
    assert len(found) == 1, name
    return found[0]


def test_policies() -> None:
    words = {c["policy"] for c in SPEC["commands"] if c.get("policy")}
    policies = SPEC.get("policies")
    if isinstance(policies, dict):
        words |= {w for w in policies if re.fullmatch(r"[A-Z]+", w)}
    elif isinstance(policies, list):
        words |= {p["name"] if "name" in p else p["word"] for p in policies}
    for word in words:
        assert word in POLICIES, f"RL.ALL policy {word} has no class"
        cls = POLICIES[word]
        assert issubclass(cls, Policy)
        assert cls(*[_sample(f) for f in inspect.signature(cls).parameters.values() if f.default is inspect.Parameter.empty]).args()[0] == word
    # Options allowed inside a policy (DELAY for GCRA) are its fields.
    if isinstance(policies, dict):
        for word, policy in policies.items():
            if word in POLICIES and isinstance(policy, dict):
                fields = set(inspect.signature(POLICIES[word]).parameters)
                for option in policy.get("options", []):
                    name = option["name"] if isinstance(option, dict) else option
                    assert name.lower() in fields, f"{word} policy has no field for {name}"
    assert "delay" in inspect.signature(rl_client.Gcra).parameters


def _sample(p: inspect.Parameter) -> Any:
    return "1s" if p.name in ("window", "period", "ttl", "block", "max") else ("x" if p.name in ("id", "tenant") else 1)


def test_every_method_is_in_the_table() -> None:
    """The other way round: a method without a command would be a stale table."""
    names = {c["name"] for c in SPEC["commands"]}
    for command in METHODS:
        if command not in names:
            warnings.warn(f"{command} is not in commands.json", stacklevel=1)


def test_version_is_the_modules() -> None:
    cargo = (ROOT / "Cargo.toml").read_text()
    package = re.search(r"^\[package\]\s*$(.*?)(?=^\[)", cargo, re.S | re.M)
    assert package, "Cargo.toml has no [package] table"
    version = re.search(r'^version\s*=\s*"([^"]+)"', package.group(1), re.M)
    assert version
    assert rl_client.__version__ == version.group(1)
    from importlib.metadata import PackageNotFoundError, version as installed

    try:
        assert installed("rl-client") == version.group(1)
    except PackageNotFoundError:
        pytest.skip("rl-client is not installed (run through clients/python/test.sh)")
