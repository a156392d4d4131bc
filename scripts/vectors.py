#!/usr/bin/env python3
"""Writes the vector tables of docs/commands.md from vectors/vectors.json.

Each vector in the file becomes a table between `<!-- vector-ID:begin -->` and
`<!-- vector-ID:end -->` in docs/commands.md (scripts/docmarkers.py). The same file
is run by the Rust core's tests and by the Functions library's in-process tests, so
the tables a reader sees are the ones the code is held to.

  scripts/vectors.py           rewrite the tables
  scripts/vectors.py --check   exit 1 (and say which) if a table is out of date
"""

import json
import os
import sys
from datetime import datetime, timezone

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import docmarkers  # noqa: E402

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..")
VECTORS = os.path.join(ROOT, "vectors", "vectors.json")
PAGE = os.path.join(docmarkers.DOCS, "commands.md")
with open(VECTORS, encoding="utf-8") as _f:
    EPOCH_MS = json.load(_f)["epoch_ms"]


def reply_text(reply):
    """A reply as the docs show it: `[1,5,4,0,1000]`, `1`, `"2"` or an error."""
    if isinstance(reply, list):
        return "[" + ",".join(reply_text(r) for r in reply) + "]"
    if isinstance(reply, str):
        return reply if reply.startswith(("ERR", "WRONGTYPE")) else f'"{reply}"'
    return str(reply)


def call_text(argv):
    return " ".join(f'"{a}"' if (" " in a or not a) else a for a in argv)


def seconds(ms):
    return f"{ms / 1000:g} s"


def instant(ms):
    """An instant as the calendar vectors show it: UTC, to the second (or the ms)."""
    text = datetime.fromtimestamp(ms // 1000, timezone.utc).strftime("%Y-%m-%d %H:%M:%S")
    return f"{text}.{ms % 1000:03d} UTC" if ms % 1000 else f"{text} UTC"


def table(vector):
    if vector.get("dates"):
        return dated_table(vector)
    rows = [
        f"Vector: {vector['title']}. t is server time from a whole minute; every call"
        " starts from an empty key unless the first row sets one"
        " ([vectors.json](../vectors/vectors.json) holds them all):",
        "",
        "| t | call | reply |",
        "|---|---|---|",
    ]
    for c in vector["calls"]:
        rows.append(f"| {seconds(c['t'])} | `{call_text(c['call'])}` | `{reply_text(c['reply'])}` |")
    return "\n".join(rows)


def dated_table(vector):
    """A calendar vector (RL.QUOTA's): its calls at instants (t after the file's
    epoch), shown in UTC; PEXPIRETIME replies as instants too."""
    epoch = EPOCH_MS
    rows = [
        f"Vector: {vector['title']}. Every call starts from an empty key unless a row"
        " before sets one ([vectors.json](../vectors/vectors.json) holds them all):",
        "",
        "| server time | call | reply |",
        "|---|---|---|",
    ]
    for c in vector["calls"]:
        reply = f"`{reply_text(c['reply'])}`"
        if c["call"][0] == "PEXPIRETIME":
            reply += f" ({instant(c['reply'])})"
        rows.append(f"| {instant(epoch + c['t'])} | `{call_text(c['call'])}` | {reply} |")
    return "\n".join(rows)


def main():
    check = "--check" in sys.argv[1:]
    with open(VECTORS, encoding="utf-8") as f:
        vectors = json.load(f)["vectors"]
    with open(PAGE, encoding="utf-8") as f:
        page = f.read()
    stale = []
    for v in vectors:
        name = f"vector-{v['id']}"
        problem = docmarkers.check(PAGE, name)
        if problem:
            sys.exit(f"vectors: {problem}")
        begin, end = docmarkers.markers(name)
        current = page.split(begin, 1)[1].split(end, 1)[0].strip("\n")
        wanted = table(v)
        if current != wanted:
            stale.append(v["id"])
            if not check:
                docmarkers.replace(PAGE, name, wanted)
                with open(PAGE, encoding="utf-8") as f:
                    page = f.read()
    if check and stale:
        sys.exit(f"vectors: docs/commands.md is out of date for {', '.join(stale)}: run scripts/vectors.py")
    if not check:
        print(f"vectors: {len(vectors)} tables in docs/commands.md ({len(stale)} rewritten)")


if __name__ == "__main__":
    main()
