"""A command added to the table reaches the Go client by `make clients` alone.

Adds a made-up RL.MADEUP (options GRACE, a duration; NOTE, TAG and REGION, texts;
COST; LOUD, a flag without a value; no window the client can compute) and an RL.ALL
policy MADEUP (REGION after its arguments, LOUD before its word) to a copy of
commands.json, emits the Go surface from it into a copy of clients/go, checks the
output is gofmt-clean, and runs madeup_test.go (beside this file) there with
`go vet` and `go test`. Run by clients/go/test.sh.
"""

import json
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
CLIENT = HERE.parents[1]
ROOT = CLIENT.parents[1]
sys.path.insert(0, str(ROOT / "scripts"))

from clientgen import go, model  # noqa: E402

MADEUP = {
    "name": "RL.MADEUP",
    "summary": "A command made up for this check",
    "keys": "first",
    "function": "rl_madeup",
    "policy": "MADEUP",
    "arguments": [
        {"name": "key", "type": "key"},
        {"name": "limit", "type": "integer", "min": 1, "max": 1000},
    ],
    # Option words no real command has, so their constructors are this command's own.
    "options": [
        {"name": "COST", "type": "integer", "min": 0, "max": 1000, "default": 1},
        {"name": "GRACE", "type": "duration", "min_ms": 1000, "max_ms": 86400000},
        {"name": "NOTE", "type": "text", "min_bytes": 1, "max_bytes": 16},
        {"name": "TAG", "type": "text", "min_bytes": 5, "max_bytes": 5},
        {"name": "REGION", "type": "text", "min_bytes": 1, "max_bytes": 64, "excludes": ["TAG"]},
        {"name": "LOUD", "type": "flag", "summary": "a flag made up for this check"},
    ],
    "reply": "decision",
}


def main() -> int:
    data = json.loads(model.COMMANDS_JSON.read_text())
    data["commands"].append(MADEUP)
    data["policies"].append({"word": "MADEUP", "command": "RL.MADEUP", "arguments": MADEUP["arguments"][1:],
                             "options": [o for o in MADEUP["options"] if o["name"] == "REGION"],
                             "before": [o for o in MADEUP["options"] if o["type"] == "flag"], "looked_at": False})
    with tempfile.TemporaryDirectory(prefix="rl-go-newcommand.") as tmp:
        table = Path(tmp) / "commands.json"
        table.write_text(json.dumps(data))
        out = Path(tmp) / "client"
        out.mkdir()
        for f in CLIENT.iterdir():
            if f.suffix in (".go", ".mod") and not f.name.endswith("_test.go"):
                shutil.copy(f, out / f.name)
        for rel, text in go.emit(model.load(table)).items():
            (out / Path(rel).name).write_text(text)
        shutil.copy(HERE / "madeup_test.go.txt", out / "madeup_test.go")
        unformatted = subprocess.run(["gofmt", "-l", "."], cwd=out, capture_output=True, text=True, check=True).stdout
        if unformatted:
            print(f"newcommand: the emitted code is not gofmt-clean: {unformatted}", file=sys.stderr)
            return 1
        for cmd in (["go", "vet", "."], ["go", "test", "-count=1", "."]):
            if subprocess.run(cmd, cwd=out).returncode != 0:
                return 1
    print("newcommand: RL.MADEUP emitted and tested")
    return 0


if __name__ == "__main__":
    sys.exit(main())
