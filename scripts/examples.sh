#!/usr/bin/env bash
# Smoke test of the HTTP examples in examples/ (python, node, rust), run by `make test`,
# against each backend: the module, then the Functions library (no module). Each
# example must say at start which one it found.
#
# Installs what each example needs (a venv under target/examples-venv, npm ci under
# examples/node, cargo build into target/examples), starts a redis-server with the
# module on a free port (RL_MODULE, or target/release/librl.so, built when missing),
# then starts each example on a free port and checks over HTTP that a user gets
# `capacity` 200s with the remaining count going down (the typed clients' fields:
# RateLimit's r, X-RateLimit-Remaining), then a 429 with Retry-After, while another
# user is unaffected. examples/python/worker.py (RL.GCRA … DELAY, a job
# runner) is checked against a stub partner API instead: its calls arrive at the
# declared rate, within a few percent, with no 429. examples/python/login.py
# (RL.PENALTY) is checked with wrong passwords: a 401 per strike, then a 429 with
# Retry-After, also for the right password, while another account logs in.
# examples/python/llm_proxy.py
# (RL.GCRA … COST max_tokens, then REFUND or DEBIT the difference) is checked
# against a stub model that uses more or fewer tokens than reserved: under load,
# the model's real tokens per second stay within 5% of the limit; bad input (a max_tokens
# RL cannot count, not a positive integer, above the burst; a body that is not a JSON
# object) is a 400 naming it that reaches no model, and Redis only above the burst; in
# process, RL's COST error is a 400 and a lost connection a 503.
# examples/python/llm_gateway.py (RL.ALL with SHARE per tier beside GCRA per customer)
# is checked against the same stub model with free, pro and enterprise customers at
# once: the real tokens split 1:4:16 within 25% per tier (the free tier, a twentieth of the traffic, counts few requests), and stay within the
# provider budget. examples/python/flask_limiter_rl.py and slowapi_rl.py (those
# libraries' own examples with RL as limits' storage, rl://) are checked with each of
# limits' strategies: a route's limit over HTTP (200s, then 429), an exempt route
# still 200, and RL's calls counted by the server. Prints PASS/FAIL/SKIP per
# example; exits 1 on any failure. Everything it starts is stopped on exit, also on
# failure or Ctrl-C.
#
# Python 3 with venv is installed with apt when missing (scripts/deps.sh examples).
# Node.js 20+ is not: without it (or with an older one) the Node example is skipped
# with a message saying so, and the Python and Rust examples still run.
set -euo pipefail
cd "$(dirname "$0")/.."
root=$PWD

# The examples run with a slow refill (1 token a minute) so that no token comes back
# while the test runs, however slow the machine: the countdown is then exact.
capacity=5
tokens=1
period=60s

say() { echo "examples: $*"; }
die() { echo "examples: $*" >&2; exit 1; }

# python3 and its venv module, from apt where possible; without them the checks below
# say what is missing.
"$root/scripts/deps.sh" examples ||
  say "could not install python3-venv with apt; trying without it"
command -v python3 >/dev/null 2>&1 ||
  die "python3 is missing (it runs the HTTP checks): apt-get install python3"
command -v redis-server >/dev/null 2>&1 ||
  die "redis-server is missing: run 'make deps' (or apt-get install redis-server)"
command -v redis-cli >/dev/null 2>&1 ||
  die "redis-cli is missing: run 'make deps' (or apt-get install redis-tools)"

tmp=$(mktemp -d "${TMPDIR:-/tmp}/rl-examples.XXXXXX")
pids=()

stop() { # stop <pid>: TERM, up to 5 s to exit, then KILL
  local pid=$1 i
  kill "$pid" 2>/dev/null || return 0
  for ((i = 0; i < 50; i++)); do
    kill -0 "$pid" 2>/dev/null || break
    sleep 0.1
  done
  kill -9 "$pid" 2>/dev/null || true
  wait "$pid" 2>/dev/null || true
}
cleanup() {
  local pid
  for pid in ${pids[@]+"${pids[@]}"}; do stop "$pid"; done
  rm -rf "$tmp"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

free_port() {
  python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'
}

# wait_port <pid> <port> <seconds>: until something listens on the port; fails early
# when the process has exited.
wait_port() {
  local pid=$1 port=$2 deadline=$((SECONDS + $3))
  while ((SECONDS < deadline)); do
    kill -0 "$pid" 2>/dev/null || return 1
    if (exec 3<>"/dev/tcp/127.0.0.1/$port") 2>/dev/null; then return 0; fi
    sleep 0.1
  done
  return 1
}

show_log() { # show_log <file>: the end of a log, indented
  [ -s "$1" ] && tail -n 30 "$1" | sed 's/^/    | /' >&2
  return 0
}

# --- redis-server with the module, then with the library --------------------------

# shellcheck source=scripts/redis-lib.sh
. "$root/scripts/redis-lib.sh"

# --- the HTTP check ---------------------------------------------------------------

# check <base url> <name>: the contract every example must meet (standard library only).
# The fields are those of RL's typed clients: RateLimit-Policy ("default";q=<limit>;w=…)
# and RateLimit ("default";r=<remaining>;t=<reset s>) from the IETF draft, the same
# numbers as X-RateLimit-Limit, -Remaining and -Reset, and Retry-After when refused.
check() {
  python3 - "$1" "$2" "$capacity" <<'PY'
import re, sys, urllib.request, urllib.error

base, name, capacity = sys.argv[1], sys.argv[2], int(sys.argv[3])

def get(user=None):
    req = urllib.request.Request(base + "/", headers={"X-User": user} if user else {})
    try:
        with urllib.request.urlopen(req, timeout=10) as r:
            return r.status, r.headers
    except urllib.error.HTTPError as e:
        return e.code, e.headers

FIELDS = ("RateLimit-Policy", "RateLimit", "X-RateLimit-Limit", "X-RateLimit-Remaining",
          "X-RateLimit-Reset", "Retry-After")

def expect(cond, what, status, headers):
    if not cond:
        sys.exit(f"{what}: got {status} {({k: headers.get(k) for k in FIELDS})}")

def num(headers, field):
    value = headers.get(field)
    return int(value) if value is not None and value.isdigit() else None

def fields(status, headers, what):
    """(limit, remaining, reset s): the IETF fields, which must agree with X-RateLimit-*."""
    policy = re.fullmatch(r'"default";q=(\d+);w=\d+', headers.get("RateLimit-Policy") or "")
    state = re.fullmatch(r'"default";r=(\d+);t=(\d+)', headers.get("RateLimit") or "")
    expect(policy and state, f"{what}: want RateLimit-Policy and RateLimit", status, headers)
    ietf = (int(policy[1]), int(state[1]), int(state[2]))
    legacy = tuple(num(headers, f"X-RateLimit-{f}") for f in ("Limit", "Remaining", "Reset"))
    expect(ietf == legacy, f"{what}: want X-RateLimit-* equal to RateLimit {ietf}", status, headers)
    return ietf

user = f"smoke-{name}"
for i in range(1, capacity + 1):
    status, h = get(user)
    what = f"request {i} of {capacity + 1}"
    expect(status == 200, f"{what}: want 200", status, h)
    limit, remaining, reset = fields(status, h, what)
    expect(limit == capacity, f"{what}: want limit (q) {capacity}", status, h)
    expect(remaining == capacity - i, f"{what}: want remaining (r) {capacity - i}", status, h)
    expect(reset >= 1, f"{what}: want reset (t) >= 1", status, h)
    expect(h.get("Retry-After") is None, f"{what}: want no Retry-After when allowed", status, h)

status, h = get(user)
what = f"request {capacity + 1} of {capacity + 1}"
expect(status == 429, f"{what}: want 429", status, h)
limit, remaining, reset = fields(status, h, what)
expect(limit == capacity, f"{what}: want limit (q) {capacity}", status, h)
expect(remaining == 0, f"{what}: want remaining (r) 0", status, h)
expect((num(h, "Retry-After") or 0) >= 1, f"{what}: want Retry-After >= 1", status, h)
expect(reset >= 1, f"{what}: want reset (t) >= 1", status, h)

status, h = get(user + "-other")
expect(status == 200 and fields(status, h, "another user")[1] == capacity - 1,
       f"another user: want 200 with remaining (r) {capacity - 1}", status, h)

# Without X-User the key is the client's address (shared by the three examples here).
status, h = get()
expect(status == 200 and fields(status, h, "no X-User")[0] == capacity,
       "no X-User (keyed by address): want 200", status, h)
PY
}

# check_policies <base url>: examples/python/policies.py, several policies per request
# with RL.ALL: the RateLimit-Policy and RateLimit fields of both policies, a failed
# upstream call refunded, and a 429 from the burst that leaves the daily count alone.
# At most 2 reports at once per user (RL.ACQUIRE / RL.RELEASE): 3 at once give two
# 200 and one 503 with Retry-After, each with the RateLimit fields counted in
# concurrent requests; once they are done, a slot is free again at once.
check_concurrency() {
  python3 - "$1" "$2" <<'PY'
import sys, threading, urllib.request, urllib.error

base, name = sys.argv[1], sys.argv[2]
user = f"smoke-reports-{name}"

def get():
    req = urllib.request.Request(base + "/report", headers={"X-User": user})
    try:
        with urllib.request.urlopen(req, timeout=20) as r:
            return r.status, r.headers
    except urllib.error.HTTPError as e:
        return e.code, e.headers

results = []
threads = [threading.Thread(target=lambda: results.append(get())) for _ in range(3)]
for t in threads:
    t.start()
for t in threads:
    t.join()
statuses = sorted(s for s, _ in results)
if statuses != [200, 200, 503]:
    sys.exit(f"3 reports at once: want 200, 200, 503, got {statuses}")
for status, h in results:
    policy, state = h.get("RateLimit-Policy") or "", h.get("RateLimit") or ""
    if policy != '"concurrency";q=2;qu="concurrent-requests"' or not state.startswith('"concurrency";r='):
        sys.exit(f"{status}: RateLimit-Policy {policy!r}, RateLimit {state!r}")
    if status == 503 and not (h.get("Retry-After") or "").isdigit():
        sys.exit(f"503 without Retry-After: {dict(h)}")
status, h = get()
if status != 200:
    sys.exit(f"a report after the others ended: want 200 (their slots released), got {status}")
PY
}

check_policies() {
  python3 - "$1" "$capacity" "$tokens" "${period%s}" <<'PY'
import re, sys, urllib.request, urllib.error

base, capacity, tokens, period_s = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4])
daily = 1000

def get(path="/"):
    req = urllib.request.Request(base + path, headers={"X-User": "smoke-policies"})
    try:
        with urllib.request.urlopen(req, timeout=10) as r:
            return r.status, r.headers
    except urllib.error.HTTPError as e:
        return e.code, e.headers

def remaining(headers):
    items = dict(re.findall(r'"(\w+)";r=(\d+);t=\d+', headers.get("RateLimit") or ""))
    return int(items.get("burst", -1)), int(items.get("daily", -1))

def expect(cond, what, status, headers):
    if not cond:
        shown = {k: headers.get(k) for k in ("RateLimit-Policy", "RateLimit", "Retry-After")}
        sys.exit(f"{what}: got {status} {shown}")

status, h = get()
expect(status == 200 and remaining(h) == (capacity - 1, daily - 1), "request 1: want 200, r=4 and 999", status, h)
# The clients' RateLimit-Policy: each policy's limit (q) and its window (w); for the
# bucket, its time to refill from empty, ceil(capacity * period / tokens).
refill_s = -(-capacity * period_s // tokens)
expect(h.get("RateLimit-Policy") == f'"burst";q={capacity};w={refill_s}, "daily";q={daily};w=86400',
       "request 1: RateLimit-Policy", status, h)
status, h = get("/fail")
expect(status == 500, "an upstream failure: want 500", status, h)
# The failed call was refunded: the next one finds the same counts as before it.
for i in range(2, capacity + 1):
    status, h = get()
    want = (capacity - i, daily - i)
    expect(status == 200 and remaining(h) == want, f"request {i}: want 200 with r={want}", status, h)
status, h = get()
expect(status == 429 and (h.get("Retry-After") or "0").isdigit() and int(h["Retry-After"]) >= 1,
       "the burst is empty: want 429 with Retry-After", status, h)
expect(remaining(h) == (0, daily - capacity), "the 429 takes nothing from the daily count", status, h)
PY
}

# check_login <base url>: examples/python/login.py with its default policy (5
# strikes in 15 min block for 1 min): four wrong passwords answer 401 with the
# strikes left counting down, the fifth starts the block (429 with Retry-After),
# the right password during the block is still 429, and another account from the
# same address logs in.
check_login() {
  python3 - "$1" <<'PY'
import sys, urllib.error, urllib.parse, urllib.request

base = sys.argv[1]

def login(account, password):
    body = urllib.parse.urlencode({"account": account, "password": password}).encode()
    try:
        with urllib.request.urlopen(base + "/login", data=body, timeout=10) as r:
            return r.status, r.headers
    except urllib.error.HTTPError as e:
        return e.code, e.headers

def expect(cond, what, status, headers):
    if not cond:
        shown = {k: headers.get(k) for k in ("RateLimit", "X-RateLimit-Remaining", "Retry-After")}
        sys.exit(f"{what}: got {status} {shown}")

for i in range(1, 5):
    status, h = login("alice", "guess")
    # The strikes left: the RateLimit field's r (and X-RateLimit-Remaining).
    left = (h.get("RateLimit") or "").split(";r=")[-1].split(";")[0]
    expect(status == 401 and left == h.get("X-RateLimit-Remaining") == str(5 - i)
           and "Retry-After" not in h,
           f"wrong password {i}: want 401 with {5 - i} strikes left (r={5 - i})", status, h)
status, h = login("alice", "guess")
retry = h.get("Retry-After") or ""
expect(status == 429 and retry.isdigit() and 1 <= int(retry) <= 60,
       "wrong password 5: want 429 with Retry-After 1..60", status, h)
status, h = login("alice", "wonderland")
expect(status == 429 and (h.get("Retry-After") or "").isdigit(),
       "the right password while blocked: want 429 with Retry-After", status, h)
status, h = login("bob", "builder")
expect(status == 200, "another account: want 200", status, h)
PY
}

# The job runner's run: JOBS calls at RL_RATE per second, from WORKERS threads.
worker_jobs=60
worker_rate=20
worker_threads=4

# stub_partner <port> <file>: a partner API that answers worker_jobs POSTs, then
# writes what it saw (arrival times, statuses) as JSON to <file> and exits. It
# enforces the declared rate itself (a GCRA with a burst of 5, tolerance for
# scheduling jitter): a call beyond it gets a 429, as a real partner would answer.
stub_partner() {
  python3 - "$1" "$2" "$worker_jobs" "$worker_rate" <<'PY'
import json, sys, threading, time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

port, out, jobs, rate = int(sys.argv[1]), sys.argv[2], int(sys.argv[3]), int(sys.argv[4])
interval, burst = 1.0 / rate, 5
seen, lock, tat = [], threading.Lock(), [0.0]

class Partner(BaseHTTPRequestHandler):
    def do_POST(self):
        self.rfile.read(int(self.headers.get("Content-Length") or 0))
        now = time.monotonic()
        with lock:
            later = max(tat[0], now) + interval
            status = 429 if later - now > burst * interval else 200
            if status == 200:
                tat[0] = later
            seen.append((now, status))
            done = len(seen) >= jobs
        self.send_response(status)
        self.send_header("Content-Length", "0")
        self.end_headers()
        if done:
            threading.Thread(target=server.shutdown).start()

    def log_message(self, *args):
        pass

server = ThreadingHTTPServer(("127.0.0.1", port), Partner)
server.serve_forever()
with open(out, "w") as f:
    json.dump(seen, f)
PY
}

# check_worker <stats file>: every job arrived, none got a 429, and the arrivals
# came at the declared rate (the first is the burst of 1; the rest are spaced).
check_worker() {
  python3 - "$1" "$worker_jobs" "$worker_rate" <<'PY'
import json, sys

seen, jobs, rate = json.load(open(sys.argv[1])), int(sys.argv[2]), int(sys.argv[3])
times = sorted(t for t, _ in seen)
rejected = sum(1 for _, status in seen if status == 429)
if len(seen) != jobs:
    sys.exit(f"the partner saw {len(seen)} calls, not {jobs}")
if rejected:
    sys.exit(f"{rejected} of {jobs} calls got a 429")
achieved = (len(times) - 1) / (times[-1] - times[0])
if abs(achieved - rate) > 0.05 * rate:
    sys.exit(f"{achieved:.2f} calls per second, not {rate} within 5%")
print(f"{jobs} calls at {achieved:.2f} per second (limit {rate}), no 429")
PY
}

# run_worker <backend log label>: the stub, then the worker against it; sets reason.
run_worker() {
  local label=$1 stub_port stub_pid stats=$tmp/$1-partner.json
  stub_port=$(free_port)
  stub_partner "$stub_port" "$stats" >"$tmp/$label-partner.log" 2>&1 &
  stub_pid=$!
  pids+=("$stub_pid")
  if ! wait_port "$stub_pid" "$stub_port" 20; then
    reason="the stub partner did not listen on port $stub_port"
    return 1
  fi
  if ! REDIS_URL=$redis_url PARTNER_URL="http://127.0.0.1:$stub_port/" JOBS=$worker_jobs \
    RL_RATE=$worker_rate WORKERS=$worker_threads timeout 60 "${cmd[@]}" >"$log" 2>&1; then
    reason="the worker failed or took over 60 s"
    return 1
  fi
  wait "$stub_pid" 2>/dev/null || true
  if ! grep -q "$said" "$log"; then
    reason="it did not say at start that it uses $said"
    return 1
  fi
  reason=$(check_worker "$stats" 2>&1)
}

# The LLM proxy's run: LLM_CLIENTS clients for LLM_SECONDS against a limit of
# LLM_RATE tokens per second after a burst of LLM_BURST.
llm_seconds=10
llm_clients=4
llm_rate=1000
llm_burst=500

# stub_model <port>: a model that answers POST /v1/completions after 20 ms, using
# between 0.1 and 1.5 times max_tokens (0.8 on average: a reservation is mostly too
# high, sometimes too low); GET /stats answers every call's (time, tokens used).
stub_model() {
  python3 - "$1" <<'PY'
import json, random, sys, threading, time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

port = int(sys.argv[1])
seen, lock, rng = [], threading.Lock(), random.Random(7)

class Model(BaseHTTPRequestHandler):
    def reply(self, body):
        data = json.dumps(body).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def do_POST(self):
        request = json.loads(self.rfile.read(int(self.headers.get("Content-Length") or 0)))
        time.sleep(0.02)
        with lock:
            used = max(1, int(request["max_tokens"] * rng.uniform(0.1, 1.5)))
            seen.append((time.monotonic(), used))
        self.reply({"text": "...", "usage": {"total_tokens": used}})

    def do_GET(self):
        with lock:
            self.reply(seen)

    def log_message(self, *args):
        pass

ThreadingHTTPServer(("127.0.0.1", port), Model).serve_forever()
PY
}

# check_llm <proxy url> <model url>: clients ask for 50 to 150 tokens each, as
# fast as the proxy lets them (a 429: try again 50 ms later), for llm_seconds. The
# model's real tokens, past the first burst, must come at llm_rate per second
# within 5%; some requests must have been refunded and some debited.
check_llm() {
  python3 - "$1" "$2" "$llm_seconds" "$llm_clients" "$llm_rate" "$llm_burst" <<'PY'
import json, sys, threading, urllib.request
sys.path.insert(0, "scripts")
from completions import ask

proxy, model = sys.argv[1], sys.argv[2]
seconds, clients, rate, burst = (int(a) for a in sys.argv[3:7])
statuses, settled, lock = {}, {"refund": 0, "debit": 0, "exact": 0}, threading.Lock()

def settle(h):
    reserved, used = int(h["X-Tokens-Reserved"]), int(h["X-Tokens-Used"])
    settled["refund" if used < reserved else "debit" if used > reserved else "exact"] += 1

def client(seed):
    ask(proxy, {"X-User": "llm-check"}, (50, 150), seed, seconds, 0.05, statuses, lock, settle)

threads = [threading.Thread(target=client, args=(i,)) for i in range(clients)]
for t in threads:
    t.start()
for t in threads:
    t.join()
with urllib.request.urlopen(model + "/stats", timeout=10) as r:
    calls = sorted(json.load(r))
if set(statuses) - {200, 429}:
    sys.exit(f"statuses {statuses}: want only 200 and 429")
if not settled["refund"] or not settled["debit"]:
    sys.exit(f"settled {settled}: want both refunds and debits")
span = calls[-1][0] - calls[0][0]
achieved = (sum(used for _, used in calls) - burst) / span
if abs(achieved - rate) > 0.05 * rate:
    sys.exit(f"{achieved:.0f} real tokens per second over {span:.1f} s, not {rate} within 5%"
             f" (statuses {statuses}, settled {settled})")
print(f"{achieved:.0f} real tokens per second over {span:.1f} s (limit {rate}): "
      f"{settled['refund']} refunded, {settled['debit']} debited, {statuses.get(429, 0)} x 429")
PY
}

# check_llm_input <proxy url> <model url>: a client's bad input is a 400 naming the
# problem, never a 503 (an outage) and never a model call: max_tokens beyond what RL
# counts (2^53, 1e30), not a positive integer, not JSON, or above the burst (which
# RL answers with retry_after -1). Prints how many of them reached Redis (the
# caller checks it is only the one above the burst).
check_llm_input() {
  python3 - "$1" "$2" "$llm_burst" <<'PY'
import json, sys, urllib.error, urllib.request

proxy, model, burst = sys.argv[1], sys.argv[2], int(sys.argv[3])
bad_number = "max_tokens must be an integer from 1 to 9007199254740991"
cases = [
    ('{"max_tokens": 9007199254740992}', bad_number),
    ('{"max_tokens": 1e30}', bad_number),
    ('{"max_tokens": 0}', bad_number),
    ('{"max_tokens": -5}', bad_number),
    ('{"max_tokens": 1.5}', bad_number),
    ('{"max_tokens": "100"}', bad_number),
    ('{"max_tokens": true}', bad_number),
    ('[100]', "the body must be a JSON object"),
    ('{"max_tokens": ', "the body must be JSON"),
    (json.dumps({"max_tokens": burst + 1}), "max_tokens is above the token limit"),
]

def model_calls():
    with urllib.request.urlopen(model + "/stats", timeout=10) as r:
        return len(json.load(r))

before = model_calls()
for body, want in cases:
    req = urllib.request.Request(proxy + "/v1/completions", data=body.encode(),
                                 headers={"X-User": "llm-bad-input"})
    try:
        with urllib.request.urlopen(req, timeout=10) as r:
            status, text = r.status, r.read()
    except urllib.error.HTTPError as e:
        status, text = e.code, e.read()
    try:
        error = json.loads(text).get("error")
    except ValueError:
        error = text
    if status != 400 or error != want:
        sys.exit(f"{body}: want 400 {want!r}, got {status} {error!r}")
if model_calls() != before:
    sys.exit(f"bad input reached the model ({model_calls() - before} calls)")
print(f"{len(cases)} bad inputs: 400 each, naming the problem")
PY
}

# check_llm_errors <python…>: the proxy's answer when Redis fails, in process, with its
# budget on the typed client over a redis-py client that raises what redis-py raises:
# RL refusing the request's COST (an ERR reply) is a 400 with RL's text; a lost
# connection, a timeout, a WRONGTYPE key or RL missing is a 503 (fail closed), never
# a model call.
check_llm_errors() {
  "$@" - "$root/examples/python" <<'PY'
import io, json, logging, sys

sys.path.insert(0, sys.argv[1])
import redis
import llm_proxy
from rl_client import RateLimiter

logging.disable(logging.WARNING)  # the proxy's warnings: expected here

class Raising:
    """A redis-py client whose every command raises err."""
    def __init__(self, err):
        self.err = err
    def execute_command(self, *args, **options):
        raise self.err

def budget_raising(err):
    return llm_proxy.TokenBudget(RateLimiter(Raising(err), backend="module"), 10000, 1000, "1s")

cases = [
    (redis.ResponseError("COST must be an integer from 0 to 9007199254740991"), "400",
     "max_tokens: COST must be an integer from 0 to 9007199254740991"),
    (redis.ConnectionError("Connection refused"), "503", "try again shortly"),
    (redis.TimeoutError("Timeout reading from socket"), "503", "try again shortly"),
    (redis.ResponseError("WRONGTYPE Operation against a key holding the wrong kind of value"),
     "503", "try again shortly"),
    (redis.ResponseError("unknown command 'RL.GCRA'"), "503", "try again shortly"),
]
for err, want_status, want_error in cases:
    proxy = llm_proxy.Proxy(budget_raising(err), "http://127.0.0.1:9/never-called")
    body = b'{"max_tokens": 100}'
    environ = {"PATH_INFO": "/v1/completions", "REQUEST_METHOD": "POST",
               "CONTENT_LENGTH": str(len(body)), "wsgi.input": io.BytesIO(body)}
    seen = []
    out = proxy(environ, lambda status, headers: seen.append(status))
    status, error = seen[0].split()[0], json.loads(b"".join(out))["error"]
    if (status, error) != (want_status, want_error):
        sys.exit(f"{type(err).__name__}({err}): want {want_status} {want_error!r}, got {status} {error!r}")
print(f"Redis failures: RL's COST error 400, {len(cases) - 1} others 503")
PY
}

# rl_calls: how many RL.GCRA and FCALL calls the server has run (INFO commandstats).
rl_calls() {
  redis-cli -p "$redis_port" INFO commandstats |
    awk -F'[=,:]' 'tolower($1) ~ /^cmdstat_(rl\.gcra|fcall)$/ { n += $3 } END { print n + 0 }'
}

# run_llm <label>: the stub model, the proxy in front of it, then the checks; sets reason.
# start_behind_model <label> <VAR=value…>: the stub model, then the example (cmd) in
# front of it with those variables; sets model_port, model_pid, port, pid. Returns 1
# with reason set when either does not listen, or the example did not say its backend.
start_behind_model() {
  local label=$1
  shift
  model_port=$(free_port)
  stub_model "$model_port" >"$tmp/$label-model.log" 2>&1 &
  model_pid=$!
  pids+=("$model_pid")
  pid=
  if ! wait_port "$model_pid" "$model_port" 20; then
    reason="the stub model did not listen on port $model_port"
    return 1
  fi
  port=$(free_port)
  env REDIS_URL="$redis_url" PORT="$port" MODEL_URL="http://127.0.0.1:$model_port/v1/completions" \
    "$@" "${cmd[@]}" >"$log" 2>&1 &
  pid=$!
  pids+=("$pid")
  if ! wait_port "$pid" "$port" 20; then
    reason="the example did not listen on port $port within 20 s"
  elif ! grep -q "$said" "$log"; then
    reason="it did not say at start that it uses $said"
  else
    return 0
  fi
  return 1
}

run_llm() {
  local model_port model_pid port pid
  if ! start_behind_model "$1" RL_BURST=$llm_burst RL_RATE=$llm_rate RL_PERIOD=1s; then
    :
  elif ! reason=$(check_llm "http://127.0.0.1:$port" "http://127.0.0.1:$model_port" 2>&1); then
    :
  else
    local load=$reason calls input errors
    calls=$(rl_calls)
    if ! input=$(check_llm_input "http://127.0.0.1:$port" "http://127.0.0.1:$model_port" 2>&1); then
      reason="bad input: $input"
    elif (($(rl_calls) - calls != 1)); then
      reason="bad input: $(($(rl_calls) - calls)) calls reached Redis, want 1 (max_tokens above the burst)"
    elif ! errors=$(check_llm_errors "${cmd[@]:0:${#cmd[@]}-1}" 2>&1); then
      reason="Redis failures: $errors"
    else
      reason="$load; $input; $errors"
      stop "$pid"
      stop "$model_pid"
      return 0
    fi
  fi
  [ -z "$pid" ] || stop "$pid"
  stop "$model_pid"
  return 1
}

# The LLM gateway's run: three tiers (weights 1, 4, 16) of gateway_clients customers
# each share one provider budget of gateway_rate tokens per second after a burst of
# gateway_capacity; each customer's own limit is far above it (never the one that binds).
gateway_seconds=4
gateway_clients=3
gateway_rate=600
gateway_capacity=100

# check_gateway <gateway url>: every customer asks for 4 to 12 tokens at a time, as
# fast as the gateway lets it (a 429: again 20 ms later), for gateway_seconds. The
# real tokens each tier got must be its weight's share of all of them within ±25%,
# and all of them at most the budget: capacity + rate × elapsed, plus what the
# requests still in flight at the end may DEBIT (each at most half its max_tokens).
check_gateway() {
  python3 - "$1" "$gateway_seconds" "$gateway_clients" "$gateway_rate" "$gateway_capacity" <<'PY'
import sys, threading, time
sys.path.insert(0, "scripts")
from completions import ask

gateway = sys.argv[1]
seconds, clients, rate, capacity = (int(a) for a in sys.argv[2:6])
weights = {"free": 1, "pro": 4, "enterprise": 16}
used, statuses, lock = dict.fromkeys(weights, 0), {}, threading.Lock()

def customer(tier, i):
    def count(h):
        used[tier] += int(h["X-Tokens-Used"])
    ask(gateway, {"X-User": f"{tier}-{i}", "X-Tier": tier}, (4, 12), f"{tier}{i}", seconds,
        0.02, statuses, lock, count)

threads = [threading.Thread(target=customer, args=(t, i)) for t in weights for i in range(clients)]
start = time.monotonic()
for t in threads:
    t.start()
for t in threads:
    t.join()
elapsed = time.monotonic() - start
if set(statuses) != {200, 429}:
    sys.exit(f"statuses {statuses}: want 200 and 429 (the budget must be short), nothing else")
total, budget = sum(used.values()), capacity + rate * elapsed
slack = len(threads) * 12 // 2
if total > budget + slack:
    sys.exit(f"{total} tokens in {elapsed:.1f} s: above the budget {budget:.0f} (+{slack} in flight)")
split = []
for tier, w in weights.items():
    share, want = used[tier] / total, w / sum(weights.values())
    split.append(f"{tier} {used[tier]} ({share:.1%}, want {want:.1%})")
    if abs(share - want) > 0.25 * want:
        sys.exit(f"{tier}: {share:.1%} of the tokens, want {want:.1%} ±25% ({', '.join(split)})")
print(f"{total} real tokens in {elapsed:.1f} s (budget {budget:.0f}): {', '.join(split)}; "
      f"{statuses[429]} x 429")
PY
}

# run_gateway <label>: the stub model, the gateway in front of it, then the check.
run_gateway() {
  local model_port model_pid port pid ok=1
  if start_behind_model "$1" RL_CAPACITY=$gateway_capacity RL_RATE=$gateway_rate RL_PERIOD=1s \
    RL_CUSTOMER_BURST=1000 RL_CUSTOMER_RATE=1000; then
    reason=$(check_gateway "http://127.0.0.1:$port" 2>&1) && ok=0
  fi
  [ -z "$pid" ] || stop "$pid"
  stop "$model_pid"
  return $ok
}

# limits_calls: RL calls the server has answered so far (any of the commands limits'
# strategies run on, or FCALL).
limits_calls() {
  redis-cli -p "$redis_port" INFO commandstats |
    awk -F'[=,:]' 'tolower($1) ~ /^cmdstat_(rl\.fixed|rl\.sliding|rl\.slidingcounter|fcall)$/ { n += $3 } END { print n + 0 }'
}

# check_limit <url> <allowed> [<exempt url>]: <allowed> x 200, then 429, from one client;
# the exempt route still 200 after that.
check_limit() {
  python3 - "$@" <<'PY'
import sys, urllib.request, urllib.error

url, allowed = sys.argv[1], int(sys.argv[2])

def status(u):
    try:
        with urllib.request.urlopen(u, timeout=10) as r:
            return r.status
    except urllib.error.HTTPError as e:
        return e.code

got = [status(url) for _ in range(allowed + 2)]
if got != [200] * allowed + [429, 429]:
    sys.exit(f"{url}: got {got}, want {allowed} x 200 then 429s")
if len(sys.argv) > 3 and status(sys.argv[3]) != 200:
    sys.exit(f"{sys.argv[3]} (exempt) did not answer 200 once {url} was limited")
PY
}

# run_limiter <label> <route> <allowed> [<exempt route>]: the example (cmd) with each of
# limits' strategies on a flushed server: the route's limit over HTTP, answered by RL
# (its calls counted in INFO commandstats); sets reason.
run_limiter() {
  local label=$1 route=$2 allowed=$3 exempt=${4:-} strategy port pid before done=()
  for strategy in fixed-window moving-window sliding-window-counter; do
    redis-cli -p "$redis_port" FLUSHALL >/dev/null
    before=$(limits_calls)
    port=$(free_port)
    RL_URI="rl://127.0.0.1:$redis_port" PORT=$port RL_STRATEGY=$strategy \
      "${cmd[@]}" >"$tmp/$label-$strategy.log" 2>&1 &
    pid=$!
    pids+=("$pid")
    log=$tmp/$label-$strategy.log
    if ! wait_port "$pid" "$port" 20; then
      reason="$strategy: the example did not listen on port $port within 20 s"
    elif ! reason=$(check_limit "http://127.0.0.1:$port$route" "$allowed" \
      ${exempt:+"http://127.0.0.1:$port$exempt"} 2>&1); then
      reason="$strategy: $reason"
    elif (($(limits_calls) <= before)); then
      reason="$strategy: the server answered no RL call"
    else
      reason=
      done+=("$strategy")
    fi
    stop "$pid"
    [ -z "$reason" ] || return 1
  done
  reason="storage rl://, ${done[*]}: $route $allowed x 200 then 429${exempt:+, $exempt exempt}, RL calls answered"
}

# run_store <label>: the express-rate-limit example (cmd), limit 5 on /, /health exempt,
# on a flushed server: 5 x 200 then 429 over HTTP, answered by RL; sets reason.
run_store() {
  local port pid before
  redis-cli -p "$redis_port" FLUSHALL >/dev/null
  before=$(limits_calls)
  port=$(free_port)
  log=$tmp/$1.log
  REDIS_URL="redis://127.0.0.1:$redis_port" PORT=$port RL_LIMIT=5 "${cmd[@]}" >"$log" 2>&1 &
  pid=$!
  pids+=("$pid")
  if ! wait_port "$pid" "$port" 20; then
    reason="the example did not listen on port $port within 20 s"
  elif ! reason=$(check_limit "http://127.0.0.1:$port/" 5 "http://127.0.0.1:$port/health" 2>&1); then
    :
  elif (($(limits_calls) - before < 7)); then
    reason="the server answered $(($(limits_calls) - before)) RL calls, want one per request (7)"
  else
    reason="store RLStore: / 5 x 200 then 429, /health exempt, one RL call per request"
    stop "$pid"
    return 0
  fi
  stop "$pid"
  return 1
}

# --- the examples -----------------------------------------------------------------
# setup_<name> installs or builds, then sets cmd (and optionally cmd_env) to start it.
# It returns 1 when installing or building failed, and 2 when the example cannot run
# on this machine for a reason the user must fix outside this script (a missing or
# too old Node.js): that example is skipped, not failed.

setup_python() {
  command -v python3 >/dev/null 2>&1 || { echo "python3 is missing"; return 1; }
  local venv=$root/target/examples-venv req=$root/examples/python/requirements.txt
  export PIP_DISABLE_PIP_VERSION_CHECK=1 PIP_ROOT_USER_ACTION=ignore
  if [ ! -x "$venv/bin/python" ] && ! python3 -m venv "$venv" >"$tmp/venv.log" 2>&1; then
    rm -rf "$venv" # Debian without python3-venv leaves a venv without pip behind
  fi
  if [ -x "$venv/bin/python" ]; then
    # The typed client from this clone and redis-py, once per run (the Python
    # examples share the venv).
    if [ -z "${python_installed:-}" ]; then
      "$venv/bin/python" -m pip install --quiet "$root/clients/python" -r "$req" || return 1
      python_installed=1
    fi
    cmd=("$venv/bin/python" -u "$root/examples/python/app.py")
  else
    # No venv module: install into a plain directory on PYTHONPATH instead.
    local deps=$root/target/examples-pydeps
    python3 -m pip --version >/dev/null 2>&1 ||
      { echo "neither 'python3 -m venv' nor pip works: apt-get install python3-venv (or python3-pip)"; return 1; }
    if [ -z "${python_installed:-}" ]; then
      rm -rf "$deps"
      python3 -m pip install --quiet --target "$deps" "$root/clients/python" -r "$req" || return 1
      python_installed=1
    fi
    cmd=(env PYTHONPATH="$deps" python3 -u "$root/examples/python/app.py")
  fi
}

# The multi-policy Python example: the same environment as the Python one.
setup_policies() {
  setup_python || return
  cmd[${#cmd[@]} - 1]=$root/examples/python/policies.py
}

# The login route (RL.PENALTY): the same environment as the Python one.
setup_login() {
  setup_python || return
  cmd[${#cmd[@]} - 1]=$root/examples/python/login.py
}

# The job runner (RL.GCRA … DELAY): the same environment as the Python one.
setup_worker() {
  setup_python || return
  cmd[${#cmd[@]} - 1]=$root/examples/python/worker.py
}

# The LLM proxy (RL.GCRA … COST, then REFUND or DEBIT): the same environment.
setup_llm() {
  setup_python || return
  cmd[${#cmd[@]} - 1]=$root/examples/python/llm_proxy.py
}

# The LLM gateway (RL.ALL … SHARE beside GCRA): the same environment.
setup_gateway() {
  setup_python || return
  cmd[${#cmd[@]} - 1]=$root/examples/python/llm_gateway.py
}

# flask-limiter and slowapi with RL as limits' storage (rl://): the same environment as
# the Python one, plus those libraries (requirements-limiters.txt, once per run).
setup_limiters() {
  setup_python || return
  local req=$root/examples/python/requirements-limiters.txt
  if [ -z "${limiters_installed:-}" ]; then
    if [ "${cmd[0]}" = env ]; then
      python3 -m pip install --quiet --target "$root/target/examples-pydeps" "$root/clients/python" -r "$req" || return 1
    else
      "${cmd[0]}" -m pip install --quiet "$root/clients/python" -r "$req" || return 1
    fi
    limiters_installed=1
  fi
  cmd[${#cmd[@]} - 1]=$root/examples/python/$1
}
setup_flask_limiter() { setup_limiters flask_limiter_rl.py; }
setup_slowapi() { setup_limiters slowapi_rl.py; }

setup_node() {
  local major
  command -v node >/dev/null 2>&1 ||
    { echo "Node.js is not installed; the Node example needs Node.js 20 or newer (https://nodejs.org)"; return 2; }
  major=$(node -p 'process.versions.node.split(".")[0]' 2>/dev/null || echo 0)
  [[ $major =~ ^[0-9]+$ ]] || major=0
  ((major >= 20)) ||
    { echo "Node.js $(node --version 2>/dev/null) is too old; the Node example needs Node.js 20 or newer (https://nodejs.org)"; return 2; }
  command -v npm >/dev/null 2>&1 ||
    { echo "npm is missing (Node.js $(node --version) is there); install npm to run the Node example"; return 2; }
  # npm ci installs exactly what package-lock.json says.
  (cd "$root/examples/node" && npm ci --no-audit --no-fund --loglevel=error) || return 1
  cmd=(node "$root/examples/node/server.js")
}

# express-rate-limit with RLStore: the same installation as the Node one (its
# package.json has express and express-rate-limit).
setup_express_rate_limit() {
  setup_node || return
  cmd[${#cmd[@]} - 1]=$root/examples/node/express-rate-limit.js
}

setup_rust() {
  command -v cargo >/dev/null 2>&1 || { echo "cargo is missing: install Rust (https://rustup.rs)"; return 1; }
  # --locked: build exactly what Cargo.lock says; the example is its own workspace.
  cargo build --locked --quiet --manifest-path "$root/examples/rust/Cargo.toml" \
    --target-dir "$root/target/examples" || return 1
  cmd=("$root/target/examples/debug/rl-example")
}

passed=0
failed=0
skipped=0
# report <0 | 1> <what passed>: one example's PASS line, or its FAIL line with $reason
# and the end of its $log; counted.
report() {
  if [ "$1" = 0 ]; then
    echo "PASS $2"
    passed=$((passed + 1))
  else
    echo "FAIL $name ($backend): $reason" >&2
    show_log "$log"
    failed=$((failed + 1))
  fi
}
for backend in module library; do
mkdir -p "$tmp/$backend"
rl_start_redis "$tmp/$backend" "$backend"
redis=$redis_pid
pids+=("$redis")
redis_url="redis://127.0.0.1:$redis_port"
if [ "$backend" = module ]; then said="the RL module"; else said="Functions library"; fi
# RL_EXAMPLES: the examples to run (default: all), e.g. RL_EXAMPLES=worker.
for name in ${RL_EXAMPLES:-python policies login worker llm gateway flask_limiter slowapi node express_rate_limit rust}; do
  log=$tmp/$backend-$name.log
  started=$SECONDS
  cmd=()
  rc=0
  setup_"$name" >"$tmp/$name-setup.log" 2>&1 || rc=$?
  if ((rc == 2)); then
    echo "SKIP $name ($backend): $(tail -n 1 "$tmp/$name-setup.log")"
    skipped=$((skipped + 1))
    continue
  elif ((rc != 0)); then
    echo "FAIL $name ($backend): could not install or build it" >&2
    show_log "$tmp/$name-setup.log"
    failed=$((failed + 1))
    continue
  fi
  if [ "$name" = llm ] || [ "$name" = gateway ]; then
    reason=
    if [ "$name" = llm ]; then what="COST max_tokens, then REFUND or DEBIT the real cost"; else
      what="RL.ALL: SHARE by tier (1:4:16) beside GCRA per customer, COST then REFUND or DEBIT"; fi
    run_"$name" "$backend-$name" && ok=0 || ok=1
    report "$ok" "$name ($backend, said so): $what: $reason ($((SECONDS - started)) s)"
    continue
  fi
  if [ "$name" = flask_limiter ] || [ "$name" = slowapi ]; then
    if [ "$name" = flask_limiter ]; then set -- /slow 1 /ping; else set -- /home 5; fi
    run_limiter "$backend-$name" "$@" && ok=0 || ok=1
    report "$ok" "$name ($backend): $reason ($((SECONDS - started)) s)"
    continue
  fi
  if [ "$name" = express_rate_limit ]; then
    run_store "$backend-$name" && ok=0 || ok=1
    report "$ok" "$name ($backend): $reason ($((SECONDS - started)) s)"
    continue
  fi
  if [ "$name" = worker ]; then
    reason=
    run_worker "$backend-$name" && ok=0 || ok=1
    report "$ok" "$name ($backend, said so): RL.GCRA … DELAY as a queue, $reason ($((SECONDS - started)) s)"
    continue
  fi
  port=$(free_port)
  REDIS_URL=$redis_url PORT=$port RL_CAPACITY=$capacity RL_TOKENS=$tokens RL_PERIOD=$period \
    RL_CONCURRENT=2 RL_REPORT_MS=1500 \
    "${cmd[@]}" >"$log" 2>&1 &
  pid=$!
  pids+=("$pid")
  if ! wait_port "$pid" "$port" 20; then
    echo "FAIL $name ($backend): the server did not listen on port $port within 20 s" >&2
    show_log "$log"
    failed=$((failed + 1))
  elif ! grep -q "$said" "$log"; then
    echo "FAIL $name ($backend): it did not say at start that it uses $said" >&2
    show_log "$log"
    failed=$((failed + 1))
  elif [ "$name" = login ]; then
    if ! reason=$(check_login "http://127.0.0.1:$port" 2>&1); then
      echo "FAIL $name ($backend): $reason" >&2
      show_log "$log"
      failed=$((failed + 1))
    else
      echo "PASS $name ($backend, said so): RL.PENALTY: 4 wrong passwords 401 (strikes left r=4..1), the 5th 429 with Retry-After, the right one while blocked 429, another account 200 ($((SECONDS - started)) s)"
      passed=$((passed + 1))
    fi
  elif [ "$name" = policies ]; then
    if ! reason=$(check_policies "http://127.0.0.1:$port" 2>&1); then
      echo "FAIL $name ($backend): $reason" >&2
      show_log "$log"
      failed=$((failed + 1))
    else
      echo "PASS $name ($backend, said so): RL.ALL over a burst bucket and a daily window, RateLimit-Policy/RateLimit for both, a failed upstream call refunded, a 429 that takes nothing from the daily count ($((SECONDS - started)) s)"
      passed=$((passed + 1))
    fi
  elif ! reason=$(check "http://127.0.0.1:$port" "$name-$backend" 2>&1); then
    echo "FAIL $name ($backend): $reason" >&2
    show_log "$log"
    failed=$((failed + 1))
  elif ! reason=$(check_concurrency "http://127.0.0.1:$port" "$name-$backend" 2>&1); then
    echo "FAIL $name ($backend): /report: $reason" >&2
    show_log "$log"
    failed=$((failed + 1))
  else
    echo "PASS $name ($backend, said so): $capacity x 200 (RateLimit r=$((capacity - 1))..0), then 429 with Retry-After; other users unaffected; /report: 2 at once, the third 503 with Retry-After and qu=\"concurrent-requests\", a slot free again after ($((SECONDS - started)) s)"
    passed=$((passed + 1))
  fi
  stop "$pid"
done
stop "$redis"
done

echo "examples: $passed passed, $failed failed, $skipped skipped"
((failed == 0))
