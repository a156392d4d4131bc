"""The Rust emitter on a command table with a command it has never seen.

A copy of commands.json gains RL.MADEUP (a limit and the options EVERY, a duration;
ON, AT and TZ, texts; the flags LOUD, on the call and before its policy's word, and
QUIET, only before its policy's word; no window: no `w`) as a command and an RL.ALL
policy. The
emitter's output must give it a method on Limiter, AsyncLimiter and Batch, a type
with its checks, and a Policy, with no hand edit: the generated files are written
into a copy of the crate, which must build and pass the test beside this file
(madeup.rs). Run by clients/rust/test.sh; python3 test_emitter.py alone works too.
"""

from __future__ import annotations

import copy
import json
import os
import shutil
import subprocess
import sys
import tempfile
import unittest
from pathlib import Path

HERE = Path(__file__).resolve().parent
CRATE = HERE.parents[1]
ROOT = CRATE.parents[1]
sys.path.insert(0, str(ROOT / "scripts"))

from clientgen import model as model_module  # noqa: E402
from clientgen import rust  # noqa: E402

TEXT = {"type": "text", "min_bytes": 1, "max_bytes": 64}
MADEUP_OPTIONS = [
    {"name": "EVERY", "type": "duration", "min_ms": 1, "max_ms": 315360000000, "value": "period"},
    {"name": "ON", "value": "day", **TEXT},
    {"name": "AT", "value": "time", **TEXT},
    {"name": "TZ", "value": "zone", **TEXT},
]
LOUD = {"name": "LOUD", "type": "flag", "excludes": [], "summary": "a flag made up for this test"}
QUIET = {**LOUD, "name": "QUIET"}


def with_madeup(table: dict) -> dict:
    table = copy.deepcopy(table)
    # A name the table does not have: the real commands (RL.QUOTA among them) stay.
    limit = {"name": "limit", "type": "integer", "min": 1, "max": 9007199254740991}
    amounts = [o for o in table["commands"][0]["options"] if o["name"] in ("COST", "REFUND")]
    table["commands"].append(
        {
            "name": "RL.MADEUP",
            "summary": "A command made up for this test",
            "function": "rl_madeup",
            "policy": "MADEUP",
            "keys": "first",
            "arguments": [{"name": "key", "type": "key"}, limit],
            "options": amounts + MADEUP_OPTIONS + [LOUD],
            "reply": "decision",
        }
    )
    table["policies"].append(
        {
            "word": "MADEUP",
            "command": "RL.MADEUP",
            "arguments": [limit],
            "options": MADEUP_OPTIONS,
            "before": [LOUD, QUIET],
            "looked_at": False,
        }
    )
    return table


class NewCommand(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.tmp = Path(tempfile.mkdtemp(prefix="rl-emitter-"))
        table = with_madeup(json.loads(model_module.COMMANDS_JSON.read_text()))
        path = cls.tmp / "commands.json"
        path.write_text(json.dumps(table))
        cls.model = model_module.load(path)
        cls.files = rust.emit(cls.model)

    @classmethod
    def tearDownClass(cls):
        shutil.rmtree(cls.tmp, ignore_errors=True)

    def text(self, name: str) -> str:
        return self.files[f"{rust.OUT}/{name}"]

    def test_the_surface_has_it(self):
        commands, methods = self.text("commands.rs"), self.text("methods.rs")
        self.assertIn('Madeup MADEUP = ("RL.MADEUP", Some("rl_madeup"), Some("MADEUP"), Decision);', commands)
        self.assertIn('pub tz(zone): Vec<u8> [impl AsRef<[u8]>] = "TZ" (1, 64)', commands)
        self.assertIn('pub every(period): Period [impl Into<Period>] = "EVERY" (1, 315360000000)', commands)
        self.assertIn('] Madeup);', commands)
        self.assertIn('loud = "LOUD", #[doc = "`QUIET`: a flag made up for this test. Only as an RL.ALL policy.', commands)
        self.assertIn('call(sends loud = "LOUD"; refuses quiet = "QUIET");', commands)
        self.assertIn('before loud = "LOUD", quiet = "QUIET");', commands)
        self.assertIn("madeup(key: impl AsRef<[u8]>, params: &Madeup) => Call::One(key.as_ref(), params), Decision, into_decision,", methods)
        self.assertIn("Madeup", self.text("mod.rs"))

    def test_no_window_no_w(self):
        madeup = self.text("commands.rs").split('Madeup MADEUP = ("RL.MADEUP"')[1].split("command! {")[0]
        self.assertIn("window(_ => None);", madeup)

    def test_the_table_as_it_is_gives_the_files_in_the_crate(self):
        for rel, text in rust.emit(model_module.load()).items():
            self.assertEqual((ROOT / rel).read_text(), text, f"{rel} is stale: run `make clients`")

    def test_a_crate_with_it_builds_and_sends_it(self):
        if os.environ.get("RL_EMITTER_BUILD") == "0" or not shutil.which("cargo"):
            self.skipTest("no cargo (or RL_EMITTER_BUILD=0)")
        crate = self.tmp / "crate"
        shutil.copytree(CRATE / "src", crate / "src")
        (crate / "tests").mkdir()
        shutil.copy(HERE / "madeup.rs", crate / "tests" / "madeup.rs")
        shutil.copy(ROOT / "Cargo.lock", crate / "Cargo.lock")
        manifest = (CRATE / "Cargo.toml").read_text()
        (crate / "Cargo.toml").write_text(manifest + "\n[workspace]\n")
        for rel, text in self.files.items():
            (crate / Path(rel).relative_to("clients/rust")).write_text(text)
        env = {**os.environ, "CARGO_TARGET_DIR": str(ROOT / "target" / "emitter-check")}
        run = subprocess.run(
            ["cargo", "test", "--offline", "-q", "--test", "madeup"], cwd=crate, env=env, capture_output=True, text=True
        )
        self.assertEqual(run.returncode, 0, run.stdout + run.stderr)


if __name__ == "__main__":
    unittest.main(verbosity=2)
