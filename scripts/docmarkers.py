"""Generated figures in the docs: the text between `<!-- NAME:begin -->` and
`<!-- NAME:end -->` in a page belongs to the script that measures it (`make bench`
writes `bench`, `make plot` writes `plot`), so the numbers a reader sees have one
source and cannot drift from it."""

import os

DOCS = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "docs")


def markers(name):
    return f"<!-- {name}:begin -->", f"<!-- {name}:end -->"


def check(path, name):
    """None if `path` holds both markers of `name`, else why not."""
    begin, end = markers(name)
    try:
        with open(path, encoding="utf-8") as f:
            page = f.read()
    except OSError as e:
        return f"cannot read {path}: {e}"
    if begin not in page or end not in page or page.index(end) < page.index(begin):
        return f"{path} has no {begin} … {end} markers"
    return None


def replace(path, name, text):
    """Writes `text` between the markers of `name` in `path` (see check)."""
    problem = check(path, name)
    if problem:
        raise ValueError(problem)
    begin, end = markers(name)
    with open(path, encoding="utf-8") as f:
        page = f.read()
    head, rest = page.split(begin, 1)
    _, tail = rest.split(end, 1)
    with open(path, "w", encoding="utf-8") as f:
        f.write(head + begin + "\n" + text.strip("\n") + "\n" + end + tail)
