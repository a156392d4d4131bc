#!/usr/bin/env bash
# The test suite of limits (the engine of flask-limiter and slowapi) against RL's
# storage for it (rl_client.limits), on the server with the RL module and on the one
# with only the Functions library: the pinned sdist from PyPI (its wheel has no tests),
# its tests/ run with conftest.py here in place of its own (see that file for how,
# and for the tests that cannot apply to RL and why). Called by ../test.sh.
#
#   bash clients/python/limits_suite/run.sh PYTHON [pytest args]
#
# PYTHON: a Python with rl-client, limits==$LIMITS_VERSION, redis, pytest,
# pytest-asyncio, pytest-lazy-fixtures and flaky installed (test.sh installs them).
# Env: RL_TEST_MODULE_URL, RL_TEST_LIBRARY_URL (as for the client's own tests).
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../../.." && pwd)
python=${1:?usage: run.sh PYTHON [pytest args]}
shift
version=$("$python" -c 'import importlib.metadata as m; print(m.version("limits"))')
work=$root/target/limits-suite
src=$work/limits-$version

if [ ! -f "$src/tests/test_strategy.py" ]; then
  echo "limits suite: fetching the limits $version sdist"
  rm -rf "$work"
  mkdir -p "$work"
  "$python" -m pip download --disable-pip-version-check -q --no-binary :all: --no-deps \
    "limits==$version" -d "$work"
  tar -xzf "$work/limits-$version.tar.gz" -C "$work"
fi
# The installed limits is the one under test, not the sdist's copy of its source.
rm -rf "$src/limits"
cp "$here/conftest.py" "$src/tests/conftest.py"
cd "$src"
echo "limits suite: limits $version's storage and strategy tests against rl:// and async+rl://"
"$python" -m pytest -c "$here/pytest.ini" --rootdir "$src" -p no:cacheprovider \
  tests/test_storage.py tests/test_strategy.py tests/aio/test_storage.py tests/aio/test_strategy.py "$@"
