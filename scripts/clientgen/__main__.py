"""`make clients`: writes each typed client's per-command surface from commands.json.

    python3 scripts/clientgen --write    write every generated file
    python3 scripts/clientgen --check    fail (exit 1) when one is out of date (make lint)
    python3 scripts/clientgen --write python node   only these languages

Each language is a module beside this one with `emit(model) -> {path: text}` (paths
relative to the repository root). A generated file says so in its first lines and
is never edited by hand: change commands.json (the command table) or the emitter.
"""

from __future__ import annotations

import importlib
import pkgutil
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))

from clientgen import model as model_module  # noqa: E402


def languages() -> list[str]:
    return sorted(m.name for m in pkgutil.iter_modules([str(HERE)]) if m.name not in ("model", "__main__"))


def main(argv: list[str]) -> int:
    if not argv or argv[0] not in ("--write", "--check"):
        print(__doc__, file=sys.stderr)
        return 2
    mode, wanted = argv[0], argv[1:] or languages()
    unknown = set(wanted) - set(languages())
    if unknown:
        print(f"clientgen: no emitter for {', '.join(sorted(unknown))} (have {', '.join(languages())})", file=sys.stderr)
        return 2
    model = model_module.load()
    stale = []
    for lang in wanted:
        emitter = importlib.import_module(f"clientgen.{lang}")
        for rel, text in emitter.emit(model).items():
            path = model_module.ROOT / rel
            if mode == "--write":
                path.parent.mkdir(parents=True, exist_ok=True)
                if not path.exists() or path.read_text() != text:
                    path.write_text(text)
                    print(f"clientgen: wrote {rel}")
            elif not path.exists() or path.read_text() != text:
                stale.append(rel)
    if stale:
        print("clientgen: out of date (run `make clients`): " + ", ".join(stale), file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
