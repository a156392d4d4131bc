#!/usr/bin/env python3
"""`make bench`'s driver (run through scripts/bench.sh, which builds what it needs).

Every workload is driven by redis-benchmark. To hold on a noisy machine the
workloads are interleaved: a round runs each workload once (forward order in odd
rounds, reverse in even ones, so a drift of the machine's speed hits every pair
alike; each workload next to the ones it is compared with), and BENCH_ROUNDS rounds
are run. A run is as many requests as the median workload serves in about
BENCH_SECONDS (the same count for all, so all meet the same mix of new and existing
keys; the library's functions, several times slower, get their own count). Each
ratio is computed inside a round (a workload's ops/s over its baseline's in the
same round) and the table shows the median of those per-round ratios with their
spread (min-max). Server time per call (INFO commandstats usec_per_call) is the
second measure.

Server CPU time per request (INFO cpu before and after a run, over its requests)
is the third: unlike ops/s and usec_per_call it leaves out the time the server
waits for a core, so its ratios hold even when other work shares the machine.

Shapes: pipelined (-P 16) and unpipelined (-P 1); 100,000 random keys and one hot
key; without and with a replica attached to each server (effects are then
propagated for real; every run ends with WAIT so the replica has caught up before
the next one starts). RL.SHARE's budget is one key in every shape (a budget is
shared), its tenant drawn from 10 or 10,000 names.

Baselines in the same run: INCR and native writes, FLOOR.FIXED, FLOOR.GCRA,
FLOOR.BUCKET, FLOOR.ACQUIRE and FLOOR.PENALTY (a bench-only module making exactly the module-API
calls RL's commands make, bench/floor/floor.c), redis-cell's CL.THROTTLE on a second server, and the
Functions library functions/rl.lua (FCALL rl_*), the twin of each RL command.

Exit status: nonzero when something is broken (a server does not start, a command
fails or errors, a run measures nothing); a ratio below expectation is reported,
never an error.
"""

import os
import shutil
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import time

import docmarkers
import resp
from resp import RedisError

ENV = os.environ
QUICK = bool(ENV.get("BENCH_QUICK"))
ROUNDS = 1 if QUICK else int(ENV.get("BENCH_ROUNDS", "11"))
SECONDS = float(ENV.get("BENCH_SECONDS", "0.05" if QUICK else "0.3"))
KEYS = 100_000
CLIENTS = 50
MODULE = ENV["RL_MODULE"]
FLOOR = ENV.get("BENCH_FLOOR_SO", "")
CELL = ENV.get("BENCH_CELL_SO", "")
CELL_SKIP = ENV.get("BENCH_CELL_SKIP", "")
LIBRARY = ENV.get("BENCH_LIBRARY", "")
SHAPES_WANTED = ENV.get("BENCH_SHAPES", "")
# BENCH_ONLY="RL.PENALTY,FLOOR.PENALTY": only these workloads (names as in the tables'
# first column, which carry no comma), e.g. to measure one command against its
# yardstick; ratios show where both sides ran.
ONLY = [n.strip() for n in ENV.get("BENCH_ONLY", "").split(",") if n.strip()]
# A full run writes its figures (everything it prints from the header on) into
# docs/performance.md between its bench markers (scripts/docmarkers.py), so the docs
# show the last full run and nothing else; BENCH_DOCS=path another page, BENCH_DOCS=
# (empty) none. Quick or partial runs
# (BENCH_QUICK, BENCH_SHAPES, BENCH_ONLY) write only where BENCH_DOCS names a page.
DOCS = ENV.get("BENCH_DOCS", "" if QUICK or SHAPES_WANTED or ONLY else
               os.path.join(docmarkers.DOCS, "performance.md"))


class Broken(Exception):
    """Something the bench relies on does not work: exit nonzero."""


# --- the control connection -----------------------------------------------------------


class Conn(resp.Client):
    """A connection to one of the bench's servers (scripts/resp.py), with ok() for the
    control commands that must not fail. A 60 s timeout: the WAITs below block for
    up to 30 and 60 s."""

    def __init__(self, port):
        super().__init__("127.0.0.1", port, timeout=60)

    def ok(self, *args):
        r = self.execute(*args)
        if isinstance(r, RedisError):
            raise Broken(f"{' '.join(map(str, args))[:80]}: {r}")
        return r


def free_port():
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port


class Server:
    """A redis-server of its own (port, dir, log), stopped by stop()."""

    def __init__(self, name, root, modules=(), extra=()):
        self.name = name
        self.port = free_port()
        self.dir = os.path.join(root, name)
        os.makedirs(self.dir)
        self.log = os.path.join(self.dir, "redis.log")
        argv = ["redis-server", "--port", str(self.port), "--bind", "127.0.0.1",
                "--dir", self.dir, "--save", "", "--appendonly", "no",
                "--logfile", self.log, "--repl-diskless-sync", "yes",
                "--repl-diskless-sync-delay", "0"]
        for m in modules:
            argv += ["--loadmodule", m]
        argv += list(extra)
        self.proc = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        deadline = time.time() + 20
        while True:
            try:
                self.conn = Conn(self.port)
                if self.conn.execute("PING") == "PONG":
                    break
                self.conn.close()
            except (OSError, Broken):
                pass
            if self.proc.poll() is not None or time.time() > deadline:
                tail = ""
                if os.path.exists(self.log):
                    with open(self.log, errors="replace") as f:
                        tail = "".join(f.readlines()[-3:]).strip()
                self.stop()
                raise Broken(f"redis-server ({name}) did not start: {tail}")
            time.sleep(0.05)

    def stop(self):
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()


# --- workloads ------------------------------------------------------------------------

BIG = "1000000000000"  # a limit no round reaches, so every call is an allowed write
FIXED_ARGS = [BIG, "1m"]
# A slow refill: a key lives for the whole round, as a user's limiter does.
RATE_ARGS = ["1000000000", "1000", "1h"]
THROTTLE_ARGS = ["999999999", "1000", "3600"]
# RL.QUOTA's calendar: a month in a zone with DST (a comma in a name would break
# BENCH_ONLY, hence the semicolon).
QUOTA_CALENDAR = ["month", "TZ", "America/New_York"]
QUOTA_NAME = "RL.QUOTA (America/New_York; month)"
# Strikes no round reaches: every call is a counted strike, a string written with
# PXAT as FLOOR.FIXED writes one (a blocked key would write nothing).
PENALTY_ARGS = ["1000000000", "1h", "1m", "1h"]


class Workload:
    def __init__(self, name, argv, stat, server="rl", ratios=(), library=None, keys=KEYS):
        self.name = name
        self.argv = argv  # KEY stands for the key
        self.stat = stat.lower()
        self.server = server
        self.ratios = list(ratios)  # (column, baseline workload name)
        self.library = library  # the FCALL twin's workload name
        self.keys = keys  # how many values __rand_int__ takes (redis-benchmark -r)
        self.n = {}


def workloads(have_floor, have_cell, library_functions):
    """The workloads in the order a round runs them: each next to what it is
    compared with, so a pair's two runs are seconds apart."""
    floor_fixed = [("× floor", "FLOOR.FIXED")] if have_floor else []
    floor_gcra = [("× floor", "FLOOR.GCRA")] if have_floor else []
    floor_bucket = [("× floor", "FLOOR.BUCKET")] if have_floor else []
    floor_acquire = [("× floor", "FLOOR.ACQUIRE")] if have_floor else []
    floor_penalty = [("× floor", "FLOOR.PENALTY")] if have_floor else []
    cell = [("× redis-cell", "CL.THROTTLE (redis-cell)")] if have_cell else []

    def twin(command):
        """The library function of an RL command, when the library has it."""
        function = "rl_" + command.split(".")[1].lower()
        return function if function in library_functions else None

    def rl(name, argv, ratios=(), keys=KEYS, twin_name=None):
        w = Workload(name, argv, argv[0], ratios=ratios, keys=keys)
        function = twin(argv[0])
        if function:
            w.ratios.append(("× library", twin_name or f"FCALL {function}"))
        return w

    def fcall(command, argv, keys=KEYS, name=None):
        function = twin(command)
        if not function:
            return []
        return [Workload(name or f"FCALL {function}", ["FCALL", function, "1"] + argv[1:], "fcall",
                         keys=keys)]

    fixed = ["RL.FIXED", "KEY"] + FIXED_ARGS
    quota = ["RL.QUOTA", "KEY", BIG] + QUOTA_CALENDAR
    counter = ["RL.SLIDINGCOUNTER", "KEY"] + FIXED_ARGS
    penalty = ["RL.PENALTY", "KEY"] + PENALTY_ARGS
    gcra = ["RL.GCRA", "KEY"] + RATE_ARGS
    bucket = ["RL.BUCKET", "KEY"] + RATE_ARGS
    sliding = ["RL.SLIDING", "KEY", "128", "1m"]
    w = [
        Workload("INCR", ["INCR", "KEY"], "incr"),
        Workload("SET PX", ["SET", "KEY", "1", "PX", "60000"], "set"),
        Workload("HSET 2 fields", ["HSET", "KEY", "tokens", "1", "ts", "2"], "hset"),
        Workload("ZADD", ["ZADD", "KEY", "1", "m"], "zadd"),
        rl("RL.PENALTY", penalty, floor_penalty),
    ]
    if have_floor:
        # FLOOR.FIXED's calls with RL.PENALTY's four-field string instead of one number
        # (shown against FLOOR.FIXED: what the longer state costs).
        w.append(Workload("FLOOR.PENALTY", ["FLOOR.PENALTY", "KEY"] + PENALTY_ARGS,
                          "floor.penalty", ratios=[("× floor", "FLOOR.FIXED")]))
    w.append(rl("RL.SLIDINGCOUNTER", counter, floor_fixed))
    if have_floor:
        w.append(Workload("FLOOR.FIXED", ["FLOOR.FIXED", "KEY"] + FIXED_ARGS, "floor.fixed"))
    w += [
        rl("RL.FIXED", fixed, floor_fixed),
        rl("RL.GCRA", gcra, floor_gcra + [("× RL.FIXED", "RL.FIXED")] + cell),
    ]
    # RL.QUOTA: RL.FIXED's counter over a calendar month in a zone with DST. Live keys
    # (the period computed once, then remembered), and the first call of a period on
    # each key: 100,000,000 random keys, so nearly every call finds its key absent.
    w.append(rl(QUOTA_NAME, quota, floor_fixed + [("× RL.FIXED", "RL.FIXED")]))
    w.append(Workload(QUOTA_NAME.replace(")", "; key absent)"), quota, "RL.QUOTA",
                      ratios=floor_fixed + [("× RL.FIXED", "RL.FIXED")], keys=100_000_000))
    # Rejected calls: a COST above the limit, so nothing is written, on a random key
    # of 100,000, so RL.TOP's sketch (128 keys a window) replaces its smallest entry on
    # nearly every call, its worst case. Against the allowed write: what the
    # rejection path (its counter and RL.TOP's feed) costs.
    w.append(Workload("RL.FIXED rejected", ["RL.FIXED", "KEY", "1", "1m", "COST", "2"],
                      "RL.FIXED", ratios=[("× RL.FIXED", "RL.FIXED")]))
    # DELAY: a rate (1,000,000 an hour, one every 3.6 ms) far below the call rate, so
    # nearly every call is scheduled rather than allowed at once; up to an hour of
    # turns queue before one is rejected. Against plain RL.GCRA: what scheduling costs.
    delayed = ["RL.GCRA", "KEY", "1", "1000000", "1h", "DELAY", "1h"]
    w.append(Workload("RL.GCRA DELAY", delayed, "RL.GCRA", ratios=[("× RL.GCRA", "RL.GCRA")]))
    # DEBIT 1 beside plain COST 1 on the same parameters: always allowed, always one
    # write (SET … PXAT), the TAT going into debt past the tolerance on a hot key.
    w.append(Workload("RL.GCRA DEBIT", gcra + ["DEBIT", "1"], "RL.GCRA",
                      ratios=[("× RL.GCRA", "RL.GCRA")]))
    if have_floor:
        w.append(Workload("FLOOR.GCRA", ["FLOOR.GCRA", "KEY"] + RATE_ARGS, "floor.gcra",
                          ratios=cell))
    w.append(Workload("CL.THROTTLE (RL)", ["CL.THROTTLE", "KEY"] + THROTTLE_ARGS, "CL.THROTTLE",
                      ratios=floor_gcra + cell))
    if have_cell:
        w.append(Workload("CL.THROTTLE (redis-cell)", ["CL.THROTTLE", "KEY"] + THROTTLE_ARGS,
                          "cl.throttle", server="cell"))
    w.append(rl("RL.BUCKET", bucket, floor_bucket + cell))
    if have_floor:
        w.append(Workload("FLOOR.BUCKET", ["FLOOR.BUCKET", "KEY"] + RATE_ARGS, "floor.bucket",
                          ratios=cell))
    for command, argv in [("RL.FIXED", fixed), ("RL.QUOTA", quota), ("RL.SLIDINGCOUNTER", counter),
                          ("RL.PENALTY", penalty), ("RL.GCRA", gcra), ("RL.BUCKET", bucket)]:
        w += fcall(command, argv)
    w += [rl("RL.SLIDING", sliding)] + fcall("RL.SLIDING", sliding)
    # Leases beside the sliding log at the same set size (up to 128 members a key):
    # an ACQUIRE under a fresh random id (a grant, or a rejection once the hot
    # key's 128 slots are taken), and a RELEASE of an id nobody holds (the lookup
    # every release pays; a release that frees a slot adds ZREM + PEXPIREAT).
    acquire = ["RL.ACQUIRE", "KEY", "128", "1m", "job:__rand_int__"]
    release = ["RL.RELEASE", "KEY", "job:__rand_int__"]
    w.append(rl("RL.ACQUIRE", acquire, floor_acquire + [("× RL.SLIDING", "RL.SLIDING")]))
    if have_floor:
        w.append(Workload("FLOOR.ACQUIRE", ["FLOOR.ACQUIRE"] + acquire[1:], "floor.acquire"))
    w += fcall("RL.ACQUIRE", acquire)
    w += [rl("RL.RELEASE", release, [("× RL.SLIDING", "RL.SLIDING")])] + fcall("RL.RELEASE", release)
    # RL.ALL over the two keys RL.FIXED and RL.GCRA run on alone, against those two
    # calls (a pair of them: 1 / (1/fixed + 1/gcra) pairs per second). Distinct
    # suffixes: the two placeholders draw their numbers independently.
    # RL.SHARE: one budget (a fixed key, whatever the shape) with a slow refill, so
    # every call is an allowed write (HSET of the tenant's record and the budget's,
    # PEXPIREAT), its tenant drawn from 10 and from 10,000 names (weight 1 each). A
    # run starts from an empty key, so its first calls also add each tenant (and
    # its index entry) once. Against RL.GCRA, the one-budget limiter it extends.
    for tenants in (10, 10_000):
        share = ["RL.SHARE", "bench:budget", "t__rand_int__", "1"] + RATE_ARGS
        name = f"RL.SHARE ({tenants} tenants)"
        fname = f"FCALL rl_share ({tenants} tenants)"
        w.append(rl(name, share, [("× RL.GCRA", "RL.GCRA")], keys=tenants, twin_name=fname))
        w += fcall("RL.SHARE", share, keys=tenants, name=fname)
    w.append(Workload("RL.ALL (FIXED + GCRA)",
                      ["RL.ALL", "2", "KEY:f", "KEY:g", "FIXED"] + FIXED_ARGS + ["GCRA"] + RATE_ARGS,
                      "RL.ALL", ratios=[("× the pair", ("RL.FIXED", "RL.GCRA"))]))
    for x in w:
        x.ratios.insert(0, ("× INCR", "INCR"))
    commas = [x.name for x in w if "," in x.name]
    if commas:  # BENCH_ONLY splits on commas: such a name could not be selected
        raise Broken(f"workload names must not contain a comma: {'; '.join(commas)}")
    if ONLY:
        unknown = set(ONLY) - {x.name for x in w}
        if unknown:
            raise Broken(f"BENCH_ONLY names no workload: {', '.join(sorted(unknown))} "
                         f"(workloads: {', '.join(x.name for x in w)})")
        w = [x for x in w if x.name in ONLY]
    return w


COLUMNS = ["× INCR", "× floor", "× RL.FIXED", "× RL.GCRA", "× RL.SLIDING", "× redis-cell", "× library",
           "× the pair"]

SHAPES = [
    # name, pipeline, hot key, replica
    ("pipelined", 16, False, False),
    ("pipelined, hot key", 16, True, False),
    ("unpipelined", 1, False, False),
    ("unpipelined, hot key", 1, True, False),
    ("pipelined, replica", 16, False, True),
    ("unpipelined, replica", 1, False, True),
]


def shape_title(shape):
    name, pipeline, hot, replica = shape
    keys = "one hot key" if hot else f"{KEYS:,} random keys"
    rep = "a replica attached" if replica else "no replica"
    pipe = f"pipelined -P {pipeline}" if pipeline > 1 else "unpipelined"
    return f"{pipe}, {keys}, {rep}"


# --- measuring ------------------------------------------------------------------------


def commandstats(conn):
    """cmdstat name (lower case) -> dict of its fields."""
    info = conn.ok("INFO", "commandstats").decode()
    stats = {}
    for line in info.splitlines():
        if not line.startswith("cmdstat_"):
            continue
        name, fields = line[len("cmdstat_"):].split(":", 1)
        stats[name.lower()] = dict(f.split("=", 1) for f in fields.split(","))
    return stats


def server_cpu(conn):
    """The server's CPU time so far (user + system, all its threads), in µs."""
    info = conn.ok("INFO", "cpu").decode()
    fields = dict(line.split(":", 1) for line in info.splitlines() if ":" in line)
    return (float(fields["used_cpu_user"]) + float(fields["used_cpu_sys"])) * 1e6


def run_once(w, servers, replicas, shape, n):
    """One redis-benchmark run of w: (ops/s, server usec per call, server CPU µs per
    request)."""
    _, pipeline, hot, replica = shape
    server = servers[w.server]
    conn = server.conn
    conn.ok("FLUSHALL")
    conn.ok("CONFIG", "RESETSTAT")
    if replica:
        conn.ok("WAIT", "1", "30000")
    cpu_before = server_cpu(conn)
    key = "bench:hot" if hot else "bench:__rand_int__"
    argv = [key + a[3:] if a.startswith("KEY") else a for a in w.argv]
    cmd = ["redis-benchmark", "-p", str(server.port), "-n", str(n), "-r", str(w.keys),
           "-P", str(pipeline), "-c", str(CLIENTS), "--csv"] + argv
    out = subprocess.run(cmd, capture_output=True, text=True, timeout=600)
    rps = 0.0
    for line in out.stdout.strip().splitlines()[1:]:
        fields = [f.strip('"') for f in line.split('","')]
        try:
            rps = float(fields[1])
        except (IndexError, ValueError):
            pass
    cpu = server_cpu(conn) - cpu_before
    if replica:
        acked = conn.ok("WAIT", "1", "60000")
        if acked < 1:
            raise Broken(f"{w.name}: the replica did not acknowledge within 60 s")
    stat = commandstats(conn).get(w.stat)
    if rps <= 0 or stat is None:
        raise Broken(f"{w.name} ({shape[0]}): measured nothing: {out.stderr.strip()[-200:]}")
    calls = int(stat["calls"])
    failed = int(stat.get("failed_calls", 0)) + int(stat.get("rejected_calls", 0))
    if failed:
        raise Broken(f"{w.name} ({shape[0]}): {failed} of {calls} calls failed")
    return rps, float(stat["usec_per_call"]), cpu / n


def check_replies(workloads_, servers):
    """Each command once: RL-shaped ones must answer five integers."""
    for w in workloads_:
        conn = servers[w.server].conn
        argv = ["bench:check" + a[3:] if a.startswith("KEY") else a for a in w.argv]
        reply = conn.execute(*argv)
        if isinstance(reply, RedisError):
            raise Broken(f"{w.name}: {reply}")
        if w.argv[0] == "RL.ALL":
            # The combined reply, then one per key: numkeys + 1 arrays of five.
            if not (isinstance(reply, list) and len(reply) == int(w.argv[1]) + 1
                    and all(isinstance(r, list) and len(r) == 5 for r in reply)):
                raise Broken(f"{w.name}: expected {int(w.argv[1]) + 1} arrays, got {reply!r}")
        elif "RL.RELEASE" in w.argv or "rl_release" in w.argv:
            if not isinstance(reply, int):
                raise Broken(f"{w.name}: expected an integer, got {reply!r}")
        elif w.argv[0] not in ("INCR", "SET", "HSET", "ZADD"):
            if not (isinstance(reply, list) and len(reply) == 5
                    and all(isinstance(x, int) for x in reply)):
                raise Broken(f"{w.name}: expected five integers, got {reply!r}")
        conn.ok("FLUSHALL")


def measure_shape(shape, ws, servers, replicas):
    """Rounds of every workload in turn: {workload: [(ops, usec, cpu) per round]}."""
    _, pipeline, _, _ = shape
    # Calibration (also a warm-up, discarded): requests for about SECONDS each.
    probe = 2000 if QUICK else (20000 if pipeline > 1 else 4000)
    # Every workload but the library's runs the same number of requests, so each
    # meets the same mix of new and existing keys (the median rate sets it); the
    # library's functions, several times slower, get their own count.
    rates = {w.name: run_once(w, servers, replicas, shape, probe)[0] for w in ws}
    shared = statistics.median(r for name, r in rates.items() if not name.startswith("FCALL"))
    for w in ws:
        rate = rates[w.name] if w.name.startswith("FCALL") else shared
        w.n[shape] = max(500 if QUICK else 2000, int(rate * SECONDS))
    results = {w.name: [] for w in ws}
    for r in range(ROUNDS):
        order = ws if r % 2 == 0 else list(reversed(ws))
        for w in order:
            results[w.name].append(run_once(w, servers, replicas, shape, w.n[shape]))
    return results


def fmt_ratio(values):
    med = statistics.median(values)
    if len(values) == 1:
        return f"{med:.2f}"
    return f"{med:.2f} ({min(values):.2f}–{max(values):.2f})"


def baseline(results, b):
    """A baseline's per-round results; a tuple of workloads is one call of each in
    turn: pairs per second 1 / Σ 1/ops, CPU per pair Σ cpu."""
    if not isinstance(b, tuple):
        return results[b]
    rounds = zip(*(results[x] for x in b))
    return [(1 / sum(1 / r[0] for r in rs if r[0] > 0), 0.0, sum(r[2] for r in rs)) for rs in rounds]


def label(b):
    return " then ".join(b) if isinstance(b, tuple) else b


def has(results, b):
    return all(x in results for x in b) if isinstance(b, tuple) else b in results


def per_round_ratios(results, a, b):
    return [x[0] / y[0] for x, y in zip(results[a], baseline(results, b)) if y[0] > 0]


def per_round_cpu_ratios(results, a, b):
    """b's server CPU per request over a's (higher is better, as for ops/s)."""
    return [y[2] / x[2] for x, y in zip(results[a], baseline(results, b)) if x[2] > 0]


def print_shape(shape, ws, results, seconds):
    print(f"\n### {shape_title(shape)}\n")
    n = max(w.n[shape] for w in ws if not w.name.startswith("FCALL"))
    print(f"{ROUNDS} round(s); {n:,} requests per workload per round (the library's functions: "
          f"about {SECONDS:g} s each); {seconds:.0f} s for this table.\n")
    cols = [c for c in COLUMNS if any(c == col for w in ws for col, _ in w.ratios)]
    print("| workload | ops/s | µs/call | CPU µs/req | " + " | ".join(cols) + " |")
    print("|---|---:|---:|---:|" + "---:|" * len(cols))
    for w in ws:
        ops = statistics.median(x[0] for x in results[w.name])
        usec = statistics.median(x[1] for x in results[w.name])
        cpu = statistics.median(x[2] for x in results[w.name])
        cells = []
        for c in cols:
            base = next((b for col, b in w.ratios if col == c), None)
            cells.append(fmt_ratio(per_round_ratios(results, w.name, base))
                         if base is not None and has(results, base) else "")
        print(f"| {w.name} | {ops:,.0f} | {usec:.2f} | {cpu:.2f} | " + " | ".join(cells) + " |")


EXPECT = [
    # workload, baseline, at least (0: shown, nothing expected)
    ("FLOOR.FIXED", "INCR", 0),
    ("RL.FIXED", "INCR", 0),
    ("RL.FIXED", "FLOOR.FIXED", 0.95),
    ("RL.GCRA", "FLOOR.GCRA", 0.9),
    ("RL.SLIDINGCOUNTER", "FLOOR.FIXED", 0.9),
    ("RL.QUOTA (America/New_York; month)", "FLOOR.FIXED", 0.95),
    ("RL.QUOTA (America/New_York; month; key absent)", "FLOOR.FIXED", 0),
    ("RL.PENALTY", "FLOOR.PENALTY", 0.95),
    ("FLOOR.PENALTY", "FLOOR.FIXED", 0),
    ("RL.BUCKET", "FLOOR.BUCKET", 0.9),
    ("RL.GCRA", "RL.FIXED", 0.9),
    ("RL.BUCKET", "CL.THROTTLE (redis-cell)", 1.5),
    ("RL.GCRA", "CL.THROTTLE (redis-cell)", 2.0),
    ("CL.THROTTLE (RL)", "CL.THROTTLE (redis-cell)", 1.8),
    ("FLOOR.GCRA", "CL.THROTTLE (redis-cell)", 0),
    ("FLOOR.BUCKET", "CL.THROTTLE (redis-cell)", 0),
    ("RL.FIXED", "FCALL rl_fixed", 2.0),
    ("RL.SLIDINGCOUNTER", "FCALL rl_slidingcounter", 2.0),
    ("RL.PENALTY", "FCALL rl_penalty", 2.0),
    ("RL.GCRA", "FCALL rl_gcra", 2.0),
    ("RL.GCRA DELAY", "RL.GCRA", 0.9),
    ("RL.GCRA DEBIT", "RL.GCRA", 0.9),
    ("RL.BUCKET", "FCALL rl_bucket", 2.0),
    ("RL.SLIDING", "FCALL rl_sliding", 2.0),
    ("RL.ALL (FIXED + GCRA)", ("RL.FIXED", "RL.GCRA"), 0.8),
    ("RL.SHARE (10 tenants)", "RL.GCRA", 0.9),
    ("RL.SHARE (10000 tenants)", "RL.GCRA", 0),
    ("RL.SHARE (10 tenants)", "FCALL rl_share (10 tenants)", 2.0),
    ("RL.ACQUIRE", "FLOOR.ACQUIRE", 0.9),
    ("RL.ACQUIRE", "RL.SLIDING", 0.8),
    ("RL.ACQUIRE", "FCALL rl_acquire", 3.0),
    ("RL.RELEASE", "FCALL rl_release", 3.0),
]


def print_expectations(all_results):
    print("\n### Against the yardsticks (median of per-round ratios, min–max)\n")
    print("The floor rows against redis-cell show the most any module could get over it "
          "with the same storage.\n")
    print("ops/s ratio, and the ratio of server CPU time per request (the yardstick's over "
          "the command's, so higher is better in both).\n")
    shapes = [s for s in all_results if s[1] > 1 and not s[2]]
    print("| command | yardstick | expected | " +
          " | ".join(f"{s[0]}: ops/s | {s[0]}: server CPU" for s in shapes) + " |")
    print("|---|---|---:|" + "---:|---:|" * len(shapes))
    for a, b, want in EXPECT:
        cells = []
        for s in shapes:
            res = all_results[s]
            if a not in res or not has(res, b):
                cells += ["–", "–"]
                continue
            ops = per_round_ratios(res, a, b)
            cpu = per_round_cpu_ratios(res, a, b)
            def mark(values):
                if not want:
                    return ""
                return " ok" if statistics.median(values) >= want else " below"

            cells += [f"{fmt_ratio(ops)}{mark(ops)}", f"{fmt_ratio(cpu)}{mark(cpu)}"]
        if all(c == "–" for c in cells):
            continue
        expected = f"≥ {want:g}×" if want else "(what the API allows)"
        print(f"| {a} | {label(b)} | {expected} | " + " | ".join(cells) + " |")


def print_summary(all_results):
    """Every comparison in every shape: medians of per-round ratios, ops/s / CPU."""
    shapes = list(all_results)
    print("\n### Every shape: median of per-round ratios, ops/s / server CPU per request\n")
    print("| | " + " | ".join(s[0] for s in shapes) + " |")
    print("|---|" + "---:|" * len(shapes))
    for a, b, _ in EXPECT:
        cells = []
        for s in shapes:
            res = all_results[s]
            if a not in res or not has(res, b):
                cells.append("–")
                continue
            ops = statistics.median(per_round_ratios(res, a, b))
            cpu = statistics.median(per_round_cpu_ratios(res, a, b))
            cells.append(f"{ops:.2f} / {cpu:.2f}")
        if all(c == "–" for c in cells):
            continue
        print(f"| {a} × {label(b)} | " + " | ".join(cells) + " |")


# --- memory ---------------------------------------------------------------------------


def key21(prefix):
    return prefix + "42".rjust(21 - len(prefix), "0")


def memory(servers, library_functions):
    """MEMORY USAGE of each state, next to what the module key API lets it cost: an
    RL.FIXED counter is a raw string (the int encoding a native SET gives an integer
    is out of the key API's reach), an RL.GCRA TAT costs what redis-cell's costs (the
    same key API), an RL.SLIDINGCOUNTER or RL.PENALTY what a native SET of the same
    string costs. Every element is counted (SAMPLES 0): MEMORY USAGE's default
    estimates a hash or sorted set from 5 of its elements."""
    rl = servers["rl"].conn
    rl.ok("FLUSHALL")
    rows = []

    def native_set(value):
        k = key21("native:same:")
        rl.ok("SET", k, value, "PX", "60000")
        b = rl.ok("MEMORY", "USAGE", k, "SAMPLES", "0")
        rl.ok("DEL", k)
        return b

    def row(label, conn, key, target=""):
        value = conn.execute("GET", key)
        value = value.decode()[:40] if isinstance(value, bytes) else ""
        rows.append((label, value, conn.ok("MEMORY", "USAGE", key, "SAMPLES", "0"), "", target))

    big = "9007199254740991"
    k = key21("rl:fixed:")
    rl.ok("RL.FIXED", k, "100", "1m")
    row("RL.FIXED counter", rl, k, "80 (a raw string: the int encoding is out of the key API's reach)")
    # Slow refills, so the keys (which expire when the limiter is full again) outlive the table.
    k = key21("rl:gcra:")
    rl.ok("RL.GCRA", k, "100", "1", "1h")
    row("RL.GCRA TAT (ns)", rl, k, "redis-cell's (104)")
    k = key21("rl:cell:")
    rl.ok("CL.THROTTLE", k, "99", "1", "3600")
    row("CL.THROTTLE TAT (ns)", rl, k, "redis-cell's (104)")
    if "cell" in servers:
        c = servers["cell"].conn
        c.ok("FLUSHALL")
        c.ok("CL.THROTTLE", k, "99", "1", "3600")
        row("redis-cell CL.THROTTLE TAT (ns)", c, k)
    k = key21("rl:sc:")
    rl.ok("RL.SLIDINGCOUNTER", k, "100", "1m")
    row("RL.SLIDINGCOUNTER, first call", rl, k,
        f"a native SET of the same string: {native_set(rl.ok('GET', k))}")
    # The counter at its largest below 10^9: a previous window of 999,999,999, as many now.
    sec, usec = rl.ok("TIME")
    now_ms = int(sec) * 1000 + int(usec) // 1000
    hour = now_ms - now_ms % 3_600_000
    k = key21("rl:scbig:")
    rl.ok("SET", k, f"{hour - 3_600_000} 999999999 0", "PXAT", str(hour + 3_600_000))
    rl.ok("RL.SLIDINGCOUNTER", k, big, "1h", "COST", "999999999")
    row("RL.SLIDINGCOUNTER, counts 999999999", rl, k,
        f"a native SET of the same string: {native_set(rl.ok('GET', k))}")
    k = key21("rl:penalty:")
    rl.ok("RL.PENALTY", k, "5", "15m", "1m", "1h")
    row("RL.PENALTY, a strike", rl, k,
        f"a native SET of the same string: {native_set(rl.ok('GET', k))}")
    k = key21("rl:bucket:")
    rl.ok("RL.BUCKET", k, "100", "10", "1s")
    rows.append(("RL.BUCKET hash", "", rl.ok("MEMORY", "USAGE", k, "SAMPLES", "0"), "", ""))
    for units in (10, 128, 1000):
        k = key21(f"rl:sliding:{units}:")
        rl.ok("RL.SLIDING", k, "100000", "1h", "COST", str(units))
        b = rl.ok("MEMORY", "USAGE", k, "SAMPLES", "0")
        rows.append((f"RL.SLIDING, {units} units", "", b, f"{b / units:.1f}", ""))
    for tenants in (1, 10, 1000):
        k = key21(f"rl:share:{tenants}:")
        for t in range(tenants):
            rl.ok("RL.SHARE", k, f"tenant{t}", "1", "1000000", "1000", "1h")
        b = rl.ok("MEMORY", "USAGE", k, "SAMPLES", "0")
        rows.append((f"RL.SHARE, {tenants} tenant(s)", "", b, f"{b / tenants:.1f}",
                     "a hash table: `g` is longer than hash-max-listpack-value"))
    k = key21("native:int:")
    rl.ok("SET", k, "1", "PX", "60000")
    row("native SET of an integer (int-encoded)", rl, k)
    print("\n### Memory per key (MEMORY USAGE … SAMPLES 0, key names of 21 bytes)\n")
    print("| key | value | bytes | per unit | what the key API allows |\n|---|---|---:|---:|---|")
    for label, value, b, per, target in rows:
        shown = f"`{value}`" if value else ""
        print(f"| {label} | {shown} | {b} | {per} | {target} |")
    print("\nRL pays for effects replication: each allowed call propagates its result "
          "(`SET key TAT PXAT t`), so replicas and the AOF hold the primary's bytes; "
          "redis-cell replicates the command itself, which replicas re-run with their own "
          "clocks, wrong for a time-based state.")


# --- the figures in the docs ---------------------------------------------------------


class Tee:
    """stdout, also kept, so the figures printed can go into the docs."""

    def __init__(self, out):
        self.out, self.kept = out, []

    def write(self, text):
        self.kept.append(text)
        return self.out.write(text)

    def flush(self):
        self.out.flush()


# --- main -----------------------------------------------------------------------------


def main():
    # A SIGTERM (a stopped make, a CI timeout) still stops the servers.
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
    started = time.time()
    problem = DOCS and docmarkers.check(DOCS, "bench")
    if problem:
        print(f"bench: error: {problem} (BENCH_DOCS= writes no page)", file=sys.stderr)
        return 1
    root = tempfile.mkdtemp(prefix="rl-bench-")
    servers, everything = {}, []
    try:
        modules = [MODULE] + ([FLOOR] if FLOOR else [])
        servers["rl"] = Server("rl", root, modules)
        everything.append(servers["rl"])
        if CELL:
            servers["cell"] = Server("cell", root, [CELL])
            everything.append(servers["cell"])
        library_functions = set()
        if LIBRARY:
            with open(LIBRARY, "rb") as f:
                servers["rl"].conn.ok("FUNCTION", "LOAD", "REPLACE", f.read())
            for lib in servers["rl"].conn.ok("FUNCTION", "LIST"):
                fields = dict(zip(lib[::2], lib[1::2]))
                for fn in fields.get(b"functions", []):
                    fn_fields = dict(zip(fn[::2], fn[1::2]))
                    library_functions.add(fn_fields[b"name"].decode())
        ws = workloads(bool(FLOOR), "cell" in servers, library_functions)
        check_replies(ws, servers)

        version = servers["rl"].conn.ok("INFO", "server").decode()
        version = next(line.split(":", 1)[1] for line in version.splitlines()
                       if line.startswith("redis_version:"))
        tee = Tee(sys.stdout)
        sys.stdout = tee
        print(f"\nRL benchmark: {time.strftime('%Y-%m-%d', time.gmtime())}, redis-server "
              f"{version}, {os.cpu_count()} cores, {ROUNDS} round(s), redis-benchmark with "
              f"{CLIENTS} clients on the same machine")
        if not FLOOR:
            print("\nfloor rows skipped: scripts/floor.sh could not build the floor module")
        if "cell" not in servers:
            print(f"\nredis-cell rows skipped: {CELL_SKIP or 'not built'}")
        if not library_functions:
            print("\nlibrary rows skipped: " +
                  (f"{LIBRARY} defines no rl_* function" if LIBRARY else
                   "no functions/rl.lua in this tree"))

        all_results = {}
        shapes = [s for s in SHAPES if not SHAPES_WANTED or s[0] in SHAPES_WANTED.split(",")]
        for shape in shapes:
            t0 = time.time()
            replicas = []
            if shape[3]:
                for name, server in list(servers.items()):
                    mods = [CELL] if name == "cell" else []
                    rep = Server(f"{name}-replica-{len(everything)}", root, mods,
                                 ["--replicaof", "127.0.0.1", str(server.port)])
                    everything.append(rep)
                    replicas.append(rep)
                for name, server in servers.items():
                    if server.conn.ok("WAIT", "1", "30000") < 1:
                        raise Broken(f"the replica of {name} did not connect within 30 s")
            results = measure_shape(shape, ws, servers, replicas)
            for rep in replicas:
                rep.stop()
            all_results[shape] = results
            print_shape(shape, ws, results, time.time() - t0)
            sys.stdout.flush()
        print_expectations(all_results)
        print_summary(all_results)
        memory(servers, library_functions)
        print(f"\nThis run took {time.time() - started:.0f} s.")
        sys.stdout = tee.out
        if DOCS:
            docmarkers.replace(DOCS, "bench", "".join(tee.kept))
            print(f"bench: figures written to {DOCS}", file=sys.stderr)
    except (Broken, ConnectionError) as e:  # ConnectionError: a server closed, or out of step
        sys.stdout = sys.__stdout__
        print(f"bench: error: {e}", file=sys.stderr)
        return 1
    finally:
        for s in everything:
            s.stop()
        shutil.rmtree(root, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
