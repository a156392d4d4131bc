#!/usr/bin/env bash
# `make plot`: draws docs/algorithms.png (and writes its decision counts into
# docs/performance.md), the same traffic sent to RL.FIXED, RL.SLIDING,
# RL.SLIDINGCOUNTER, RL.BUCKET and RL.GCRA on a real redis-server (scripts/plot.py),
# then measures RL.SLIDINGCOUNTER's decisions against RL.SLIDING's exact log on the
# same traffic shapes and writes docs/accuracy.md (scripts/accuracy.py).
#
#   PLOT_OUT=path   where to write the PNG (default docs/algorithms.png; with
#                   PLOT_QUICK=1 a temporary file, removed on exit)
#   PLOT_ACCURACY_OUT=path  where to write the accuracy report (default
#                   docs/accuracy.md; with PLOT_QUICK=1 a temporary file)
#   PLOT_DOCS=path  the page whose plot markers get the decision counts (default
#                   docs/performance.md; none with PLOT_QUICK=1 unless given; empty: none)
#   PLOT_QUICK=1    smoke mode used by `make test`: about 2 + 3 s of traffic
#   RL_MODULE=path  the module to load (default target/release/librl.so, built when missing)
#
# Installs matplotlib (the version pinned in scripts/plot-requirements.txt) into a venv
# under target/plot-venv, or, where `python3 -m venv` does not work, into
# target/plot-pydeps on PYTHONPATH. Starts its own redis-server on a free port, stopped
# on exit, also on failure or Ctrl-C.
set -euo pipefail
cd "$(dirname "$0")/.."
root=$PWD

say() { echo "plot: $*"; }
die() { echo "plot: $*" >&2; exit 1; }

command -v python3 >/dev/null 2>&1 || die "python3 is missing: apt-get install python3"
command -v redis-server >/dev/null 2>&1 ||
  die "redis-server is missing: run 'make deps' (or apt-get install redis-server)"

tmp=$(mktemp -d "${TMPDIR:-/tmp}/rl-plot.XXXXXX")
redis_pid=""
cleanup() {
  if [ -n "$redis_pid" ]; then
    kill "$redis_pid" 2>/dev/null || true
    for _ in $(seq 1 50); do kill -0 "$redis_pid" 2>/dev/null || break; sleep 0.1; done
    kill -9 "$redis_pid" 2>/dev/null || true
    wait "$redis_pid" 2>/dev/null || true
  fi
  rm -rf "$tmp"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

quick=()
if [ -n "${PLOT_QUICK:-}" ] && [ "${PLOT_QUICK}" != 0 ]; then
  quick=(--quick)
  out=${PLOT_OUT:-$tmp/algorithms.png}
  accuracy_out=${PLOT_ACCURACY_OUT:-$tmp/accuracy.md}
  docs=${PLOT_DOCS:-}
else
  out=${PLOT_OUT:-$root/docs/algorithms.png}
  accuracy_out=${PLOT_ACCURACY_OUT:-$root/docs/accuracy.md}
  docs=${PLOT_DOCS-$root/docs/performance.md}
fi

# --- matplotlib ---------------------------------------------------------------------

req=$root/scripts/plot-requirements.txt
venv=$root/target/plot-venv
export PIP_DISABLE_PIP_VERSION_CHECK=1 PIP_ROOT_USER_ACTION=ignore
# Installed already for exactly these requirements: skip pip (it takes seconds).
installed() { [ -f "$1/.plot-requirements" ] && cmp -s "$req" "$1/.plot-requirements"; }

if [ ! -x "$venv/bin/python" ] && ! python3 -m venv "$venv" >"$tmp/venv.log" 2>&1; then
  rm -rf "$venv" # Debian without python3-venv leaves a venv without pip behind
fi
if [ -x "$venv/bin/python" ]; then
  if ! installed "$venv"; then
    say "installing $(grep -v '^#' "$req" | tr '\n' ' ')into $venv"
    "$venv/bin/python" -m pip install --quiet -r "$req" || die "pip install -r $req failed"
    cp "$req" "$venv/.plot-requirements"
  fi
  python=("$venv/bin/python")
else
  # No venv module: install into a plain directory on PYTHONPATH instead.
  deps=$root/target/plot-pydeps
  if ! installed "$deps"; then
    python3 -m pip --version >/dev/null 2>&1 ||
      die "neither 'python3 -m venv' nor pip works: apt-get install python3-venv (or python3-pip)"
    say "no venv ('python3 -m venv' failed); installing into $deps"
    rm -rf "$deps"
    python3 -m pip install --quiet --no-warn-conflicts --target "$deps" -r "$req" || die "pip install --target failed"
    cp "$req" "$deps/.plot-requirements"
  fi
  python=(env PYTHONPATH="$deps${PYTHONPATH:+:$PYTHONPATH}" python3)
fi
# matplotlib's font cache lives with the install, not in the user's home.
export MPLBACKEND=Agg MPLCONFIGDIR=$root/target/plot-mplconfig

# --- redis-server with the module ---------------------------------------------------

# shellcheck source=scripts/redis-lib.sh
. "$root/scripts/redis-lib.sh"
rl_start_redis "$tmp"
port=$redis_port

"${python[@]}" "$root/scripts/plot.py" --port "$port" --out "$out" --docs "$docs" ${quick[@]+"${quick[@]}"}
# RL.SLIDINGCOUNTER against the exact log on the same server (standard library only).
"${python[@]}" "$root/scripts/accuracy.py" --port "$port" --md "$accuracy_out" ${quick[@]+"${quick[@]}"}
if [ -n "${quick[*]:-}" ] && [ -z "${PLOT_OUT:-}" ]; then
  say "(smoke run: the picture and report are removed on exit; set PLOT_OUT=path and PLOT_ACCURACY_OUT=path to keep them)"
fi
