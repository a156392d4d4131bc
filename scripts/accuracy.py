#!/usr/bin/env python3
"""How far RL.SLIDINGCOUNTER's estimate strays from RL.SLIDING's exact log, measured on a real server.

Run it through scripts/plot.sh (`make plot`), which starts a redis-server with the
module; it only needs a server to talk to:

    python3 scripts/accuracy.py --port 6379 [--md docs/accuracy.md] [--quick]

Every request is sent to both limiters in one MULTI/EXEC (with TIME before and after
and both keys read back), so the two decide the same request at the same
server time (one instant on Redis 7.2+; on 7.0 the calls are microseconds apart and a
call whose bracket spans a ms is counted as such). Each limiter keeps its own state,
as two deployments would. The decisions are then compared one by one:

  over-admission   the counter allowed, the log rejected
  under-admission  the counter rejected, the log allowed

and the most units the counter let through in any window-long span is set against
the limit (the log never exceeds it). Every reply of both commands is also checked
against an exact model of the rules of docs/commands.md at the recorded time (Python integers), so the
table shows what the module does, not what it should do. Exits 1 on a mismatch or if
the log ever goes over the limit.

Three traffic shapes run side by side on their own keys (one timeline, so the run
takes as long as the longest shape), all with the same limit and window.
"""

import argparse
import os
import random
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from plot import wait_until  # noqa: E402
from resp import Client, RedisError  # noqa: E402  (the same small client as plot.py's)

LIMIT = 20
WINDOW_MS = 1000
WINDOW = "1s"


# --- traffic ------------------------------------------------------------------------


def shapes(windows):
    """{name: (description, [(offset ms from a window boundary, cost)])}."""
    span = windows * WINDOW_MS
    steady_ms = 40
    steady = [(t + 3.0, 1) for t in range(0, span, steady_ms)]
    # Around every window edge: 15 requests in the 100 ms before it, 15 in the 100 ms
    # after, over a background of one request every 100 ms.
    burst, burst_ms = 15, 100
    edges = [(t + 7.0, 1) for t in range(0, span, 100)]
    for b in range(WINDOW_MS, span, WINDOW_MS):
        step = burst_ms / burst
        edges += [(b - burst_ms + step * (k + 0.5), 1) for k in range(burst)]
        edges += [(b + step * (k + 0.5), 1) for k in range(burst)]
    edges.sort()
    # Poisson arrivals averaging 1.5 × the limit per window, costs 1 (80 %), 2 or 3.
    rng = random.Random(20240601)
    rand, t = [], 0.0
    while True:
        t += rng.expovariate(1.5 * LIMIT / WINDOW_MS)
        if t >= span:
            break
        rand.append((t, rng.choices([1, 2, 3], [8, 1, 1])[0]))
    return {
        "steady": (f"one request every {steady_ms} ms ({WINDOW_MS // steady_ms} per window, "
                   f"{WINDOW_MS / steady_ms / LIMIT:g} × the limit)", steady),
        "edges": (f"{burst} requests in the {burst_ms} ms before every window edge and {burst} "
                  f"in the {burst_ms} ms after it, over one request every 100 ms", edges),
        "random": (f"Poisson arrivals, on average {1.5 * LIMIT:g} requests per window "
                   f"(1.5 × the limit), COST 1 (80 %), 2 or 3 (10 % each), seeded", rand),
    }


def run(r, windows, run_id):
    """Sends every shape's requests at their times; returns {shape: [call record]}."""
    plan = shapes(windows)
    events = sorted((off, name, cost) for name, (_, reqs) in plan.items() for off, cost in reqs)
    keys = {name: (f"rl-acc:{run_id}:{name}:log", f"rl-acc:{run_id}:{name}:counter")
            for name in plan}
    r.call("DEL", *[k for pair in keys.values() for k in pair])
    now = r.time_us() // 1000
    start = (now + 300) // WINDOW_MS * WINDOW_MS + WINDOW_MS
    records = {name: [] for name in plan}
    for off, name, cost in events:
        wait_until(r, int((start + off) * 1000))
        log, counter = keys[name]
        res = r.pipeline([
            ["MULTI"],
            ["TIME"],
            ["RL.SLIDING", log, LIMIT, WINDOW, "COST", cost],
            ["RL.SLIDINGCOUNTER", counter, LIMIT, WINDOW, "COST", cost],
            ["GET", counter],
            ["ZRANGE", log, 0, -1, "WITHSCORES"],
            ["TIME"],
            ["EXEC"],
        ])[-1]
        if res is None:
            raise RuntimeError("MULTI/EXEC was aborted")
        for x in res:
            if isinstance(x, RedisError):
                raise x
        t0 = int(res[0][0]) * 1000 + int(res[0][1]) // 1000
        t1 = int(res[5][0]) * 1000 + int(res[5][1]) // 1000
        stored = res[3].decode() if res[3] is not None else None
        logged = sorted(int(float(x)) for x in res[4][1::2])
        records[name].append(dict(t0=t0, t1=t1, cost=cost, log=res[1], counter=res[2],
                                  stored=stored, logged=logged))
    r.call("DEL", *[k for pair in keys.values() for k in pair])
    return plan, records, start


# --- exact models of the rules of docs/commands.md ---------------------------------


def log_model(units, now, n):
    """RL.SLIDING: units (ascending times) counted while t > now - W."""
    counted = [t for t in units if t > now - WINDOW_MS]
    allowed = len(counted) + n <= LIMIT
    after = counted + [now] * n if allowed else counted
    if allowed:
        retry = 0
    elif n > LIMIT:
        retry = -1
    else:
        retry = counted[len(counted) + n - LIMIT - 1] + WINDOW_MS - now
    remaining = LIMIT - len(after)
    newest = after[-1] if after else None
    reset = newest + WINDOW_MS - now if newest is not None else 0
    keep = after if allowed else units
    return [int(allowed), LIMIT, remaining, retry, reset], keep


def counter_model(stored, now, n):
    """RL.SLIDINGCOUNTER per docs/commands.md#rlslidingcounter: (reply, counts stored or None)."""
    w, limit = WINDOW_MS, LIMIT
    start, current, previous = stored if stored else (now, 0, 0)
    at = max(now, start)
    lag = at - now
    i, j = at // w, start // w
    cur, prev = (current, previous) if j == i else (0, current) if j == i - 1 else (0, 0)
    e = at - i * w
    allowed = n <= limit and (cur + n) * w + prev * (w - e) <= limit * w
    cur_after = cur + n if allowed else cur
    remaining = max(0, limit - cur_after - (-(-prev * (w - e) // w)))
    reset = (2 * w - e + lag) if cur_after > 0 else (w - e + lag) if prev > 0 else 0
    if allowed:
        retry = 0
    elif n > limit:
        retry = -1
    else:
        need = limit - cur - n
        d1 = w - e - need * w // prev if need >= 0 and prev > 0 else None
        if d1 is not None and d1 < w - e:
            retry = d1
        else:
            e2 = 0 if cur + n <= limit else w - (limit - n) * w // cur
            retry = w - e + e2
        retry += lag
    store = (i * w, cur_after, prev) if allowed and n > 0 else None
    return [int(allowed), limit, remaining, retry, reset], store


def parse_counts(s):
    if s is None:
        return None
    a, b, c = s.split(" ")
    return int(a), int(b), int(c)


def check_and_time(recs):
    """Replays the calls through both models; returns (mismatches, log times, counter times).

    A call's time, for each command, is the ms in its TIME bracket at which the model
    gives the server's reply (and, for the counter, its stored value); usually t0 = t1.
    """
    units, counts = [], None
    problems, log_times, counter_times = [], [], []
    for k, rec in enumerate(recs):
        span = range(rec["t0"], rec["t1"] + 1)
        n = rec["cost"]
        # The log's units as the server keeps them (ZRANGE after the call): a rejected
        # call leaves units that left the window in place, which count for nothing.
        log = next(((t, rec["logged"]) for t in span for reply, u in [log_model(units, t, n)]
                    if reply == rec["log"]
                    and [x for x in u if x > t - WINDOW_MS] ==
                    [x for x in rec["logged"] if x > t - WINDOW_MS]), None)
        got = parse_counts(rec["stored"])
        counter = next(((t, store or counts) for t in span
                        for reply, store in [counter_model(counts, t, n)]
                        if reply == rec["counter"] and (store or counts) == got), None)
        if log is None or counter is None:
            t = rec["t0"]
            problems.append(
                f"call {k} in [{rec['t0']}, {rec['t1']}] COST {n}: RL.SLIDING {rec['log']} "
                f"(model {log_model(units, t, n)[0]}), RL.SLIDINGCOUNTER {rec['counter']} "
                f"stored {rec['stored']!r} (model {counter_model(counts, t, n)})")
            # Follow the server from here on.
            log = log or (t, rec["logged"])
            counter = counter or (t, got)
        (t_log, units), (t_counter, counts) = log, counter
        log_times.append(t_log)
        counter_times.append(t_counter)
    return problems, log_times, counter_times


# --- analysis -----------------------------------------------------------------------


def max_in_span(admitted, span_ms):
    """Most units admitted within any span_ms (times a <= t < a + span_ms)."""
    admitted = sorted(admitted)
    best, j, total = 0, 0, 0
    for t, n in admitted:
        total += n
        while admitted[j][0] <= t - span_ms:
            total -= admitted[j][1]
            j += 1
        best = max(best, total)
    return best


def analyse(recs, log_times, counter_times):
    calls = len(recs)
    over = sum(1 for r in recs if r["counter"][0] == 1 and r["log"][0] == 0)
    under = sum(1 for r in recs if r["counter"][0] == 0 and r["log"][0] == 1)
    adm_log = [(t, r["cost"]) for r, t in zip(recs, log_times) if r["log"][0] == 1]
    adm_counter = [(t, r["cost"]) for r, t in zip(recs, counter_times) if r["counter"][0] == 1]
    return dict(
        calls=calls,
        units=sum(r["cost"] for r in recs),
        log_units=sum(n for _, n in adm_log),
        counter_units=sum(n for _, n in adm_counter),
        over=over,
        under=under,
        log_peak=max_in_span(adm_log, WINDOW_MS),
        counter_peak=max_in_span(adm_counter, WINDOW_MS),
        straddled=sum(1 for r in recs if r["t1"] != r["t0"]),
    )


def pct(n, d):
    return f"{100 * n / d:.1f} %" if d else "-"


def table(plan, stats):
    rows = [
        "| traffic | calls | units asked | admitted: log / counter | over-admission | "
        "under-admission | most in any 1 s: log / counter | counter's max excess |",
        "|---|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for name in plan:
        s = stats[name]
        excess = max(0, s["counter_peak"] - LIMIT)
        rows.append(
            f"| {name} | {s['calls']} | {s['units']} | {s['log_units']} / {s['counter_units']} | "
            f"{s['over']} ({pct(s['over'], s['calls'])}) | {s['under']} "
            f"({pct(s['under'], s['calls'])}) | {s['log_peak']} / {s['counter_peak']} | "
            f"{excess} ({pct(excess, LIMIT)} of the limit) |")
    return "\n".join(rows)


def markdown(plan, stats, windows, server):
    gaps = [abs(s["log_units"] - s["counter_units"]) / s["log_units"]
            for s in stats.values() if s["log_units"]]
    total_gap = f"at most {100 * max(gaps):.1f} %" if gaps else "nothing"
    worst = max(max(0, s["counter_peak"] - LIMIT) for s in stats.values())
    shapes_text = "\n".join(f"- **{name}**: {desc}." for name, (desc, _) in plan.items())
    return f"""# RL.SLIDINGCOUNTER against the exact sliding log

Generated by `scripts/accuracy.py` (run by `make plot`); do not edit by hand.

The same requests were sent to `RL.SLIDING key {LIMIT} {WINDOW}` (the exact log) and to
`RL.SLIDINGCOUNTER key {LIMIT} {WINDOW}` on a real redis-server ({server}), each request
to both in one MULTI/EXEC, for {windows} windows of {WINDOW_MS} ms per traffic shape. Each
limiter keeps its own state. Every reply of both was also checked against an exact
model of the rules of docs/commands.md at the recorded server time: all matched.

{shapes_text}

{table(plan, stats)}

- *over-admission*: the counter allowed a request the log rejected; *under-admission*:
  the reverse; percentages of all calls of that shape.
- *most in any 1 s*: the most units admitted within any {WINDOW_MS} ms span (limit {LIMIT});
  the counter's *max excess* is how far its busiest span went over the limit.

How to read it: each limiter keeps its own state, so once the two have admitted
different requests their windows hold different units, and later decisions differ
too although each is right for its own state. Under steady overload both admit about
the limit per window but not the same requests (the log admits exactly when an old
unit turns {WINDOW_MS} ms old, the counter when the previous window's weight has
shrunk enough), so the per-call differences are mostly that phase shift: the totals
admitted differ by {total_gap}, and the counter's busiest {WINDOW_MS} ms span exceeded
the limit by at most {worst} unit(s) ({pct(worst, LIMIT)}). The estimate assumes the
previous window's units arrived evenly: units bunched at the end of a window are
underweighted just after the edge (the counter admits more than the log), units
bunched at its start are overweighted (it admits less). Within one of its own
(epoch-aligned) windows the counter never admits more than the limit.
"""


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--host", default="127.0.0.1")
    p.add_argument("--port", type=int, default=int(os.environ.get("REDIS_PORT", 6379)))
    p.add_argument("--md", help="write the report here (markdown)")
    p.add_argument("--quick", action="store_true", help="a short run (smoke test)")
    args = p.parse_args()

    r = Client(args.host, args.port)
    windows = 2 if args.quick else 8
    version = next((line.split(":", 1)[1] for line in r.call("INFO", "server").decode().splitlines()
                    if line.startswith("redis_version:")), "?")
    started = time.monotonic()
    plan, records, _ = run(r, windows, os.getpid())
    took = time.monotonic() - started

    stats, problems = {}, []
    for name, recs in records.items():
        found, log_times, counter_times = check_and_time(recs)
        problems += [f"{name}: {m}" for m in found]
        stats[name] = analyse(recs, log_times, counter_times)
        if stats[name]["log_peak"] > LIMIT:
            problems.append(f"{name}: RL.SLIDING admitted {stats[name]['log_peak']} > {LIMIT} "
                            f"within {WINDOW_MS} ms")
    total = sum(len(v) for v in records.values())
    straddled = sum(s["straddled"] for s in stats.values())
    print(f"accuracy: traffic {took:.1f} s, {total} calls ({straddled} spanned a ms between "
          f"TIME reads), limit {LIMIT} per {WINDOW_MS} ms, redis {version}")
    print(table(plan, stats))
    for m in problems[:20]:
        print(f"accuracy: MISMATCH: {m}", file=sys.stderr)
    if args.md and not problems:
        tmp = args.md + ".tmp"
        with open(tmp, "w") as f:
            f.write(markdown(plan, stats, windows, f"Redis {version}"))
        os.replace(tmp, args.md)
        print(f"accuracy: wrote {args.md}")
    if problems:
        sys.exit(1)


if __name__ == "__main__":
    try:
        main()
    except KeyboardInterrupt:
        sys.exit(130)
    except (OSError, RedisError, RuntimeError) as e:
        sys.exit(f"accuracy: {type(e).__name__}: {e}")
