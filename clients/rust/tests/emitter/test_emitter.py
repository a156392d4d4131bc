"""The Rust emitter on a command table with a command it has never seen.

A copy of commands.json gains RL.QUOTA (a limit and the options EVERY, a duration;
ON, AT and TZ, texts; no window: no `w`) as a command and an RL.ALL policy. The
emitter's output must give it a method on Limiter, AsyncLimiter and Batch, a type
with its checks, and a Policy, with no hand edit: the generated files are written
into a copy of the crate, which must build and pass the test beside this file
(quota.rs). Run by clients/rust/test.sh; python3 test_emitter.py alone works too.
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
QUOTA_OPTIONS = [
    {"name": "EVERY", "type": "duration", "min_ms": 1, "max_ms": 315360000000, "value": "period"},
    {"name": "ON", "value": "day", **TEXT},
    {"name": "AT", "value": "time", **TEXT},
    {"name": "TZ", "value": "zone", **TEXT},
]


def with_quota(table: dict) -> dict:
    table = copy.deepcopy(table)
    limit = {"name": "limit", "type": "integer", "min": 1, "max": 9007199254740991}
    amounts = [o for o in table["commands"][0]["options"] if o["name"] in ("COST", "REFUND")]
    table["commands"].append(
        {
            "name": "RL.QUOTA",
            "summary": "Admits at most limit units per calendar period",
            "function": "rl_quota",
            "policy": "QUOTA",
            "keys": "first",
            "arguments": [{"name": "key", "type": "key"}, limit],
            "options": amounts + QUOTA_OPTIONS,
            "reply": "decision",
        }
    )
    table["policies"].append(
        {"word": "QUOTA", "command": "RL.QUOTA", "arguments": [limit], "options": QUOTA_OPTIONS, "looked_at": False}
    )
    return table


class NewCommand(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.tmp = Path(tempfile.mkdtemp(prefix="rl-emitter-"))
        table = with_quota(json.loads(model_module.COMMANDS_JSON.read_text()))
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
        self.assertIn("pub struct Quota {", commands)
        self.assertIn("pub fn tz(mut self, zone: impl AsRef<[u8]>) -> Self {", commands)
        self.assertIn("pub fn every(mut self, period: impl Into<Period>) -> Self {", commands)
        self.assertIn('check::text("TZ", v, 1, 64)?;', commands)
        self.assertIn("Quota(Quota),", commands)
        self.assertIn("pub fn quota(&mut self, key: impl AsRef<[u8]>, params: &Quota) -> Result<Decision> {", methods)
        self.assertIn("pub async fn quota(", methods)
        self.assertIn("pub fn quota(&mut self, key: impl AsRef<[u8]>, params: &Quota) -> &mut Self {", methods)
        self.assertIn("Quota", self.text("mod.rs"))

    def test_no_window_no_w(self):
        quota = self.text("commands.rs").split("impl Params for Quota {")[1]
        window = quota.split("fn window(&self) -> Option<Duration> {")[1].split("}")[0]
        self.assertEqual(window.strip(), "None")

    def test_the_table_as_it_is_gives_the_files_in_the_crate(self):
        for rel, text in rust.emit(model_module.load()).items():
            self.assertEqual((ROOT / rel).read_text(), text, f"{rel} is stale: run `make clients`")

    def test_a_crate_with_it_builds_and_sends_it(self):
        if os.environ.get("RL_EMITTER_BUILD") == "0" or not shutil.which("cargo"):
            self.skipTest("no cargo (or RL_EMITTER_BUILD=0)")
        crate = self.tmp / "crate"
        shutil.copytree(CRATE / "src", crate / "src")
        (crate / "tests").mkdir()
        shutil.copy(HERE / "quota.rs", crate / "tests" / "quota.rs")
        shutil.copy(ROOT / "Cargo.lock", crate / "Cargo.lock")
        manifest = (CRATE / "Cargo.toml").read_text()
        (crate / "Cargo.toml").write_text(manifest + "\n[workspace]\n")
        for rel, text in self.files.items():
            (crate / Path(rel).relative_to("clients/rust")).write_text(text)
        env = {**os.environ, "CARGO_TARGET_DIR": str(ROOT / "target" / "emitter-check")}
        run = subprocess.run(
            ["cargo", "test", "--offline", "-q", "--test", "quota"], cwd=crate, env=env, capture_output=True, text=True
        )
        self.assertEqual(run.returncode, 0, run.stdout + run.stderr)


if __name__ == "__main__":
    unittest.main(verbosity=2)
