#!/usr/bin/env bash
# The Python client's tests (pytest) against both servers: RL_TEST_MODULE_URL (the RL
# module) and RL_TEST_LIBRARY_URL (only the Functions library), which
# scripts/clients.sh starts and exports. Installs the package (as a user would, from
# this directory) and its test dependencies into a venv under target/, then runs
# pytest and mypy. Exit 77 when no Python 3 with venv can be had here.
#
#   scripts/clients.sh python            the usual way
#   RL_TEST_MODULE_URL=redis://... RL_TEST_LIBRARY_URL=redis://... bash clients/python/test.sh [pytest args]
#
# The cluster tests start a three-node cluster of their own (a few seconds);
# RL_TEST_CLUSTER=0 skips them.
#
# Env: PYTHON (python3), RL_PY_VENV (target/clients-python-venv).
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
python=${PYTHON:-python3}
venv=${RL_PY_VENV:-$root/target/clients-python-venv}

say() { echo "clients/python: $*"; }

: "${RL_TEST_MODULE_URL:?set RL_TEST_MODULE_URL (run scripts/clients.sh python)}"
: "${RL_TEST_LIBRARY_URL:?set RL_TEST_LIBRARY_URL (run scripts/clients.sh python)}"

have_python() { command -v "$python" >/dev/null 2>&1 && "$python" -c 'import ensurepip, venv' >/dev/null 2>&1; }
if ! have_python; then
  # Debian splits venv's pip bootstrap into python3-venv: the examples' deps bring both.
  if [ "$(id -u)" -eq 0 ] && command -v apt-get >/dev/null 2>&1; then
    say "installing python3 with venv (apt)"
    bash "$root/scripts/deps.sh" examples || true
  fi
  if ! have_python; then
    say "skipped: no $python with venv/ensurepip here (Debian: apt-get install python3-venv)"
    exit 77
  fi
fi
if ! "$python" -c 'import sys; sys.exit(sys.version_info < (3, 10))'; then
  say "skipped: $("$python" --version 2>&1) is older than the 3.10 rl-client needs"
  exit 77
fi

if [ ! -x "$venv/bin/python" ] || ! "$venv/bin/python" -c 'import sys' >/dev/null 2>&1; then
  say "creating $venv"
  rm -rf "$venv"
  "$python" -m venv "$venv"
fi
pip=("$venv/bin/python" -m pip --disable-pip-version-check -q)
# The test dependencies, then the package itself, always rebuilt from this tree.
# (FastAPI and httpx for the check of examples/python/fastapi_rl.py.)
# (http-sf: a structured-field parser for every header the tests produce; build: the
# wheel and sdist checked below.)
"${pip[@]}" install "redis>=5.0" "valkey>=6.0" "pytest>=7" "pytest-asyncio>=0.23" "mypy>=1.8" \
  "http-sf>=1.0" "build>=1.0" -r "$root/examples/python/requirements-fastapi.txt"

say "the generated surface is current (make clients)"
"$venv/bin/python" "$root/scripts/clientgen" --check python

# The package as a user gets it: built (wheel and sdist), each holding the LICENSE,
# the generated modules and the type marker; the tests run on the wheel installed.
dist="$root/target/clients-python-dist"
rm -rf "$dist"
say "building the wheel and sdist"
"$venv/bin/python" -m build --quiet --outdir "$dist" "$here" >/dev/null
rm -rf "$here/build" "$here"/src/*.egg-info
"$venv/bin/python" "$here/check_dist.py" "$dist" "$root/LICENSE"
"${pip[@]}" install --force-reinstall --no-deps "$dist"/*.whl

cd "$here"
say "mypy --strict on the package and on the README's snippets"
"$venv/bin/python" -m mypy --cache-dir "$root/target/clients-python-mypy" src/rl_client
snippets="$root/target/clients-python-snippets"
"$venv/bin/python" "$here/check_dist.py" --snippets README.md "$snippets"
"$venv/bin/python" -m mypy --strict --cache-dir "$root/target/clients-python-mypy" "$snippets"
say "pytest against $RL_TEST_MODULE_URL (module) and $RL_TEST_LIBRARY_URL (library)"
"$venv/bin/python" -m pytest -p no:cacheprovider -ra "$@"
