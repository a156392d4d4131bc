"""examples/python/fastapi_rl.py, on both backends: 429 with the headers once the
burst is spent (skipped when FastAPI is not installed: test.sh installs it)."""

from __future__ import annotations

import importlib.util
import uuid
from pathlib import Path

import pytest

EXAMPLE = Path(__file__).resolve().parents[3] / "examples" / "python" / "fastapi_rl.py"


def test_fastapi_example(url: str, monkeypatch: pytest.MonkeyPatch) -> None:
    pytest.importorskip("fastapi")
    pytest.importorskip("httpx")
    from fastapi.testclient import TestClient

    monkeypatch.setenv("REDIS_URL", url)
    spec = importlib.util.spec_from_file_location(f"fastapi_rl_{uuid.uuid4().hex}", EXAMPLE)
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)

    user = f"py-example-{uuid.uuid4().hex}"
    with TestClient(module.app) as client:
        codes = []
        for _ in range(6):
            response = client.get("/", headers={"X-User": user})
            codes.append(response.status_code)
            assert response.headers["RateLimit-Policy"] == '"default";q=5;w=5'  # 5 at 1 per s
            assert response.headers["X-RateLimit-Limit"] == "5"
        assert codes == [200] * 5 + [429]
        assert response.headers["Retry-After"] == "1"
        assert response.headers["X-RateLimit-Remaining"] == "0"
        assert client.get("/", headers={"X-User": user + "-other"}).status_code == 200
