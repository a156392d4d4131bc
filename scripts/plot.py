#!/usr/bin/env python3
"""Draw docs/algorithms.png: the same traffic sent to all of RL's limiters.

Run it through scripts/plot.sh (`make plot`), which installs matplotlib and starts a
redis-server with the module. This script only needs a server to talk to:

    python3 scripts/plot.py --port 6379 --out docs/algorithms.png [--quick]

The limiters: RL.FIXED, RL.SLIDING, RL.SLIDINGCOUNTER (limit per window), RL.BUCKET and
RL.GCRA (capacity, refilled at limit per window). The traffic, sent to all of them at
once (one MULTI/EXEC per request):
a steady request every STEADY_MS, plus a burst of BURST requests in the last BURST_MS
before a fixed-window boundary and BURST more in the first BURST_MS after it. The
start and the burst are aligned to real window boundaries of the server clock (TIME).
Every decision is recorded at the server time the module made it, then each limiter
gets one panel: accepted and rejected requests, and how many were accepted in the
trailing 1 s (the fixed window's double burst shows as a peak near 2 x limit).

Exits 1 when the server breaks a limiter's own guarantee (a fixed or counter window
over its limit, a sliding 1 s span over the limit, a bucket or GCRA over capacity +
refill).
"""

import argparse
import os
import sys
import time

import docmarkers
from resp import Client, RedisError

LIMIT = 10  # RL.FIXED / RL.SLIDING / RL.SLIDINGCOUNTER limit, RL.BUCKET / RL.GCRA capacity and tokens
WINDOW = "1s"  # their window, or period ...
WINDOW_MS = 1000  # ... in ms
STEADY_MS = 180  # one steady request every STEADY_MS (not a divisor of the window, so
#                  a new request never lands in the very ms an old one leaves the window)
BURST = 15  # requests on each side of the boundary
BURST_MS = 100  # ... within this many ms of it

ALGOS = [
    # (name, the command, "{key}" standing for its key)
    ("fixed", ["RL.FIXED", "{key}", LIMIT, WINDOW]),
    ("sliding", ["RL.SLIDING", "{key}", LIMIT, WINDOW]),
    ("counter", ["RL.SLIDINGCOUNTER", "{key}", LIMIT, WINDOW]),
    ("bucket", ["RL.BUCKET", "{key}", LIMIT, LIMIT, WINDOW]),
    ("gcra", ["RL.GCRA", "{key}", LIMIT, LIMIT, WINDOW]),
]
KINDS = {"fixed": "fixed window", "sliding": "sliding log", "counter": "sliding window counter",
         "bucket": "token bucket", "gcra": "GCRA (the bucket as one timestamp)"}


# --- traffic ------------------------------------------------------------------------


def wait_until(r, target_us):
    """Polls the server clock until it reaches target_us (short sleeps, no blind wait)."""
    while True:
        now = r.time_us()
        left = target_us - now
        if left <= 0:
            return now
        # Sleep most of what is left, at most 20 ms at a time, then look again.
        time.sleep(min(left * 0.8, 20_000) / 1e6)


def schedule(quick):
    """[(offset ms from the start, 'steady' | 'burst')], the start being a window boundary."""
    if quick:
        duration, boundary, warmup = 1800, 1 * WINDOW_MS, 0
    else:
        # The stream starts 1 s before the plot does, so the plot opens on its steady state.
        duration, boundary, warmup = 3500, 1 * WINDOW_MS, 6
    events = [(t, "steady") for t in range(120 - warmup * STEADY_MS, duration, STEADY_MS)]
    step = BURST_MS / BURST
    events += [(boundary - BURST_MS + step * (i + 0.5), "burst") for i in range(BURST)]
    events += [(boundary + step * (i + 0.5), "burst") for i in range(BURST)]
    events.sort()
    return events, duration, boundary


def decision_time(name, reply, extra, t0, t1):
    """The server ms at which the module decided, exact where the state tells it.

    TIME just before and just after the call bracket it (usually the same ms). An
    allowed RL.SLIDING logs its units at `now` (the newest score); an allowed
    RL.BUCKET stores ts = now; an allowed RL.SLIDINGCOUNTER's reset_after_ms is
    start + 2 x window - now, start read back with GET; RL.FIXED's reset_after_ms is
    window end - now, and the window end is the one multiple of the window in
    [t0 + reset, t1 + reset]. RL.GCRA: t0 (its state is in ns, its durations rounded).
    """
    allowed = reply[0] == 1
    if name == "counter" and allowed and extra is not None:
        t = int(extra.split(b" ")[0]) + 2 * WINDOW_MS - reply[4]
        if t0 <= t <= t1:
            return t
    if name == "sliding" and allowed and extra:
        return int(float(extra[1]))
    if name == "bucket" and allowed and extra is not None:
        return int(extra)
    if name == "fixed" and reply[4] > 0:
        reset = reply[4]
        end = -(-(t0 + reset) // WINDOW_MS) * WINDOW_MS
        if end <= t1 + reset:
            return end - reset
    return t0


def run(r, quick, run_id):
    events, duration, boundary = schedule(quick)
    keys = {name: f"rl-plot:{run_id}:{name}" for name, _ in ALGOS}
    r.call("DEL", *keys.values())
    cmds = {name: [a.format(key=keys[name]) if isinstance(a, str) else a for a in args]
            for name, args in ALGOS}

    # Start at a window boundary at least 300 ms away, so the window edges fall on
    # whole seconds of the plot.
    now = r.time_us() // 1000
    start = (now + 300 - events[0][0]) // WINDOW_MS * WINDOW_MS + WINDOW_MS
    records = {name: [] for name, _ in ALGOS}  # name -> [(ms from start, allowed, kind)]
    lateness = []
    for offset, kind in events:
        target_us = int((start + offset) * 1000)
        wait_until(r, target_us)
        replies = r.pipeline([
            ["MULTI"],
            ["TIME"],
            cmds["fixed"],
            cmds["sliding"],
            ["ZRANGE", keys["sliding"], -1, -1, "WITHSCORES"],
            cmds["bucket"],
            ["HGET", keys["bucket"], "ts"],
            cmds["counter"],
            ["GET", keys["counter"]],
            cmds["gcra"],
            ["TIME"],
            ["EXEC"],
        ])
        res = replies[-1]
        if res is None:
            raise RuntimeError("MULTI/EXEC was aborted")
        for x in res:
            if isinstance(x, RedisError):
                raise x
        t0 = int(res[0][0]) * 1000 + int(res[0][1]) // 1000
        t1 = int(res[9][0]) * 1000 + int(res[9][1]) // 1000
        lateness.append(t0 - (start + offset))
        for name, reply, extra in (("fixed", res[1], None), ("sliding", res[2], res[3]),
                                   ("bucket", res[4], res[5]), ("counter", res[6], res[7]),
                                   ("gcra", res[8], None)):
            t = decision_time(name, reply, extra, t0, t1)
            records[name].append((t - start, reply[0] == 1, kind))
    r.call("DEL", *keys.values())
    return records, duration, boundary, lateness


# --- analysis -----------------------------------------------------------------------


def accepted_times(recs):
    return sorted(t for t, ok, _ in recs if ok)


def max_in_span(times, span_ms):
    """Most accepted units within any span of span_ms (times t with a <= t < a + span)."""
    best, best_at, j = 0, 0, 0
    for i, t in enumerate(times):
        while times[j] <= t - span_ms:
            j += 1
        if i - j + 1 > best:
            best, best_at = i - j + 1, times[j]
    return best, best_at


def check_guarantees(records):
    """The limiters' own promises, on the decisions just recorded: [problem, ...]."""
    problems = []
    # Fixed windows; the counter too never takes more than the limit in one of its
    # (epoch-aligned) windows: (current + n)·W ≤ limit·W.
    for name, command in (("fixed", "RL.FIXED"), ("counter", "RL.SLIDINGCOUNTER")):
        per_window = {}
        for t in accepted_times(records[name]):
            per_window[t // WINDOW_MS] = per_window.get(t // WINDOW_MS, 0) + 1
        for w, n in per_window.items():
            if n > LIMIT:
                problems.append(f"{command} accepted {n} > {LIMIT} in window {w}")
    n, _ = max_in_span(accepted_times(records["sliding"]), WINDOW_MS)
    if n > LIMIT:
        problems.append(f"RL.SLIDING accepted {n} > {LIMIT} within {WINDOW_MS} ms")
    for name, command in (("bucket", "RL.BUCKET"), ("gcra", "RL.GCRA")):
        bucket = accepted_times(records[name])
        for i in range(len(bucket)):
            for j in range(i, len(bucket)):
                allowed = LIMIT + (bucket[j] - bucket[i]) * LIMIT / WINDOW_MS
                if j - i + 1 > allowed + 1e-6:
                    problems.append(f"{command} accepted {j - i + 1} > {allowed:g} "
                                    f"within {bucket[j] - bucket[i]} ms")
                    break
            else:
                continue
            break
    return problems


# --- the picture --------------------------------------------------------------------


def draw(records, duration, boundary, out):
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    import numpy as np
    from matplotlib.lines import Line2D

    green, red, blue, amber = "#2ca02c", "#d62728", "#1f4e9c", "#f2a900"
    titles = {
        name: " ".join(str(a) for a in args).format(key="key") + "  —  " + KINDS[name]
        for name, args in ALGOS
    }
    plt.rcParams.update({"font.size": 10, "axes.titlesize": 11})
    fig, axes = plt.subplots(len(ALGOS), 1, sharex=True, figsize=(10, 12.5), dpi=100)
    grid = np.arange(0, duration + 1)
    end_s = duration / 1000
    ymax = 2 * LIMIT + 4

    for ax, (name, _) in zip(axes, ALGOS):
        acc = np.array(accepted_times(records[name]), dtype=float)  # warm-up included
        recs = [rec for rec in records[name] if 0 <= rec[0] < duration]  # what is shown
        trailing = (np.searchsorted(acc, grid, "right")
                    - np.searchsorted(acc, grid - WINDOW_MS, "right"))

        def count_at(t):  # accepted in (t - window, t]
            return int(np.searchsorted(acc, t, "right")
                       - np.searchsorted(acc, t - WINDOW_MS, "right"))

        # Window boundaries of RL.FIXED; the one the burst straddles in amber.
        for w in range(WINDOW_MS, duration, WINDOW_MS):
            ax.axvline(w / 1000, color="#999999", lw=0.8, ls=":", zorder=1)
        ax.axvspan((boundary - BURST_MS) / 1000, (boundary + BURST_MS) / 1000,
                   color=amber, alpha=0.18, lw=0, zorder=0)
        ax.axvline(boundary / 1000, color=amber, lw=1.5, zorder=1)
        ax.axhline(LIMIT, color="#555555", lw=1, ls="--", zorder=1)
        ax.axhline(2 * LIMIT, color=red, lw=0.8, ls="--", alpha=0.5, zorder=1)
        ax.text(0.02, LIMIT + 0.4, f"{'capacity' if name in ('bucket', 'gcra') else 'limit'} {LIMIT}", ha="left", va="bottom",
                color="#555555", fontsize=9)
        ax.text(0.02, 2 * LIMIT + 0.4, "2 × limit", ha="left", va="bottom",
                color=red, alpha=0.8, fontsize=9)

        ax.fill_between(grid / 1000, trailing, step="post", color=blue, alpha=0.08, lw=0)
        ax.step(grid / 1000, trailing, where="post", color=blue, lw=1.6, zorder=2)

        # An accepted request sits on the count it brought the line to (several in
        # one ms stack up one by one); a rejected one on the count that stopped it.
        ok_times = sorted(t for t, a, _ in recs if a)
        ok_xy = []
        for i, t in enumerate(ok_times):
            later_same_ms = sum(1 for u in ok_times[i + 1:] if u == t)
            ok_xy.append((t / 1000, count_at(t) - later_same_ms))
        bad_xy = [(t / 1000, count_at(t)) for t, a, _ in recs if not a]
        if ok_xy:
            ax.scatter(*zip(*ok_xy), s=16, color=green, zorder=4, lw=0)
        if bad_xy:
            ax.scatter(*zip(*bad_xy), s=22, color=red, marker="x", lw=1.2, zorder=4)

        peak, _ = max_in_span(accepted_times(records[name]), WINDOW_MS)
        n_ok = len(ok_times)
        n_bad = len(recs) - n_ok
        ax.set_title(titles[name], loc="left", fontweight="bold")
        ax.set_title(f"{len(recs)} requests: {n_ok} accepted, {n_bad} rejected", loc="right",
                     fontsize=9, color="#444444")
        ax.set_ylim(0, ymax)
        ax.set_yticks([0, 5, 10, 15, 20])
        ax.set_xlim(0, end_s)
        ax.grid(axis="y", color="#eeeeee", lw=0.8, zorder=0)
        for side in ("top", "right"):
            ax.spines[side].set_visible(False)

        # Where the trailing count peaks, and what that means for this algorithm.
        peak_t = int(grid[np.argmax(trailing)])
        near = [(t, a) for t, a, _ in recs if abs(t - boundary) <= BURST_MS]
        before = sum(1 for t, a in near if a and t < boundary)
        after = sum(1 for t, a in near if a and t >= boundary)
        if name == "fixed":
            note = (f"{peak} accepted within 1 s ({peak / LIMIT:g} × limit):\n"
                    f"{before} in the {BURST_MS} ms before the boundary,\n"
                    f"{after} in the {BURST_MS} ms after it: the count\n"
                    f"restarts with every window")
        elif name == "sliding":
            note = (f"never more than {peak} in any 1 s:\n"
                    f"the burst gets what is left ({before + after}),\n"
                    f"then each request waits for an\n"
                    f"accepted one to turn 1 s old")
        elif name == "counter":
            exact, _ = max_in_span(accepted_times(records["sliding"]), WINDOW_MS)
            differ = sum(1 for (t, a, _), (_, b, _) in zip(records["counter"], records["sliding"])
                         if 0 <= t < duration and a != b)
            note = (f"an estimate in two counts: the last window's\n"
                    f"count, weighted by how much of it the sliding\n"
                    f"window still covers, plus this window's;\n"
                    f"{differ} of {len(recs)} decisions differ from the log's,\n"
                    f"most in any 1 s: {peak} (the exact log: {exact})")
        elif name == "gcra":
            same = sum(1 for (t, a, _), (_, b, _) in zip(records["gcra"], records["bucket"])
                       if 0 <= t < duration and a == b)
            note = (f"the token bucket kept as one integer (its\n"
                    f"theoretical arrival time): {same} of {len(recs)}\n"
                    f"decisions equal RL.BUCKET's; a 1 s span\n"
                    f"can hold capacity + refill (here {peak})")
        else:
            note = (f"no window edges: the burst takes the\n"
                    f"{LIMIT} stored tokens + refill ({before + after} in "
                    f"{2 * BURST_MS} ms),\n"
                    f"then 1 token per {WINDOW_MS // LIMIT} ms; a 1 s span can\n"
                    f"hold capacity + refill (here {peak}):\n"
                    f"the bucket's burst allowance")
        ann = ax.annotate(note, xy=(peak_t / 1000, trailing[peak_t]),
                    xytext=(0.99, 0.99), textcoords="axes fraction", ha="right", va="top",
                    fontsize=9, color="#222222", multialignment="left",
                    bbox=dict(boxstyle="round,pad=0.35", fc="white", ec="#cccccc", alpha=0.95),
                    arrowprops=dict(arrowstyle="->", color="#444444", lw=0.9,
                                    shrinkB=4),
                    zorder=5)
        ann.set_in_layout(False)  # the arrow may cross the title; the layout ignores it

    axes[len(ALGOS) // 2].set_ylabel("accepted in the trailing 1 s")
    axes[-1].set_xlabel("time (s, server clock); dotted lines: RL.FIXED window boundaries")
    handles = [
        Line2D([], [], color=green, marker="o", ls="", ms=5, label="accepted"),
        Line2D([], [], color=red, marker="x", ls="", ms=6, mew=1.2, label="rejected"),
        Line2D([], [], color=blue, lw=1.6, label="accepted in the trailing 1 s"),
        matplotlib.patches.Patch(color=amber, alpha=0.35,
                                 label=f"burst: {BURST} + {BURST} requests"),
    ]
    fig.legend(handles=handles, loc="upper center", ncol=4, frameon=False,
               bbox_to_anchor=(0.5, 0.952), fontsize=9)
    fig.suptitle(f"Same traffic, five limiters of {LIMIT} per second: RL.FIXED lets "
                 f"2 × limit through at a boundary",
                 fontsize=12.5, fontweight="bold", y=0.99)
    fig.text(0.5, 0.966, f"traffic: a request every {STEADY_MS} ms, plus {BURST} requests in "
             f"the {BURST_MS} ms before the window boundary at {boundary / 1000:g} s "
             f"and {BURST} in the {BURST_MS} ms after it", ha="center", va="top", fontsize=10,
             color="#333333")
    fig.subplots_adjust(left=0.065, right=0.985, bottom=0.045, top=0.905, hspace=0.3)
    tmp = out + ".tmp.png"
    fig.savefig(tmp, dpi=100)
    plt.close(fig)
    shrink_png(tmp)
    os.replace(tmp, out)


def shrink_png(path):
    """Re-encodes the PNG with an adaptive 256-colour palette (the figure has few colours)."""
    from PIL import Image

    with Image.open(path) as im:
        small = im.convert("RGB").quantize(colors=256, method=Image.Quantize.MEDIANCUT,
                                           dither=Image.Dither.NONE)
    small.save(path, optimize=True)


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--host", default="127.0.0.1")
    p.add_argument("--port", type=int, default=int(os.environ.get("REDIS_PORT", 6379)))
    p.add_argument("--out", default="docs/algorithms.png")
    p.add_argument("--quick", action="store_true", help="a short run (smoke test)")
    p.add_argument("--docs", default="",
                   help="a page whose plot markers get the decision counts (docs/performance.md)")
    args = p.parse_args()
    problem = args.docs and docmarkers.check(args.docs, "plot")
    if problem:
        sys.exit(f"plot: {problem}")

    r = Client(args.host, args.port)
    modules = r.call("MODULE", "LIST")
    if not any(b"rl" in m for m in modules):
        sys.exit(f"plot: the server on port {args.port} has no 'rl' module loaded")
    started = time.monotonic()
    records, duration, boundary, lateness = run(r, args.quick, f"{os.getpid()}")
    took = time.monotonic() - started

    lateness.sort()
    print(f"plot: traffic {took:.1f} s, {len(lateness)} requests, server-side lateness "
          f"median {lateness[len(lateness) // 2]:.0f} ms, max {lateness[-1]:.0f} ms")
    burst = [t for t, _, kind in records["fixed"] if kind == "burst"]
    b_before = sum(1 for t in burst if boundary - BURST_MS <= t < boundary)
    b_after = sum(1 for t in burst if boundary <= t < boundary + BURST_MS)
    print(f"plot: burst {b_before} requests in the {BURST_MS} ms before the boundary, "
          f"{b_after} in the {BURST_MS} ms after (wanted {BURST} + {BURST})")
    table = [f"The traffic: a request every {STEADY_MS} ms, plus {b_before} requests in the "
             f"{BURST_MS} ms before a window boundary and {b_after} in the {BURST_MS} ms after "
             f"it; limit (capacity, refill per second) {LIMIT}, window {WINDOW}.", "",
             "| command | accepted | rejected | most accepted within any 1 s |",
             "|---|---:|---:|---:|"]
    for name, command in ALGOS:
        recs = records[name]
        n_ok = sum(1 for _, a, _ in recs if a)
        peak, at = max_in_span(accepted_times(recs), WINDOW_MS)
        print(f"plot: {name:8s} {n_ok:3d} accepted, {len(recs) - n_ok:3d} rejected; "
              f"max accepted within any 1 s: {peak} (from t = {at / 1000:.3f} s)")
        table.append(f"| {command[0]} | {n_ok} | {len(recs) - n_ok} | {peak} |")

    problems = check_guarantees(records)
    for problem in problems:
        print(f"plot: BROKEN GUARANTEE: {problem}", file=sys.stderr)

    os.makedirs(os.path.dirname(os.path.abspath(args.out)), exist_ok=True)
    draw(records, duration, boundary, args.out)
    with open(args.out, "rb") as f:
        if f.read(8) != b"\x89PNG\r\n\x1a\n":
            sys.exit(f"plot: {args.out} is not a PNG")
    print(f"plot: wrote {args.out} ({os.path.getsize(args.out) // 1024} KB)")
    if args.docs:
        docmarkers.replace(args.docs, "plot", "\n".join(table))
        print(f"plot: wrote the decision counts into {args.docs}")
    if problems:
        sys.exit(1)


if __name__ == "__main__":
    try:
        main()
    except KeyboardInterrupt:
        sys.exit(130)
    except (OSError, RedisError, RuntimeError) as e:
        sys.exit(f"plot: {type(e).__name__}: {e}")
