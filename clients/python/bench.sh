#!/usr/bin/env bash
# The Python client's overhead: pipelined RL.GCRA calls through the typed API against
# the same calls as raw commands through the same redis-py client (bench.py).
#
#   RL_BENCH_URL=redis://127.0.0.1:6379 bash clients/python/bench.sh [bench.py args]
#
# The server must have RL (the module or the library). Uses the venv that test.sh
# makes (target/clients-python-venv), creating it when missing.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
python=${PYTHON:-python3}
venv=${RL_PY_VENV:-$root/target/clients-python-venv}
: "${RL_BENCH_URL:?set RL_BENCH_URL=redis://host:port (a server with RL loaded)}"

if [ ! -x "$venv/bin/python" ]; then
  "$python" -m venv "$venv"
fi
"$venv/bin/python" -m pip --disable-pip-version-check -q install "redis>=5.0"
"$venv/bin/python" -m pip --disable-pip-version-check -q install --force-reinstall --no-deps "$here"
rm -rf "$here/build" "$here"/src/*.egg-info
exec "$venv/bin/python" "$here/bench.py" "$@"
