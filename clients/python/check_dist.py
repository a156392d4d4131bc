"""Checks of the package as shipped (run by test.sh).

    python check_dist.py DIST LICENSE          the wheel and sdist in DIST hold LICENSE
                                               (the repository's), the generated modules
                                               and py.typed
    python check_dist.py --snippets README OUT each ```python block of README as a module
                                               in OUT, for mypy --strict
"""

from __future__ import annotations

import re
import shutil
import sys
import tarfile
import zipfile
from pathlib import Path

NEEDED = ("rl_client/_commands.py", "rl_client/_policies.py", "rl_client/py.typed")


def check_dist(dist: Path, license_file: Path) -> None:
    wheels, sdists = list(dist.glob("*.whl")), list(dist.glob("*.tar.gz"))
    assert len(wheels) == 1 and len(sdists) == 1, f"expected one wheel and one sdist in {dist}"
    expected = license_file.read_bytes()
    with zipfile.ZipFile(wheels[0]) as wheel:
        names = wheel.namelist()
        licenses = [n for n in names if n.endswith("/LICENSE") and ".dist-info/" in n]
        assert licenses and wheel.read(licenses[0]) == expected, f"no LICENSE in {wheels[0].name}: {names}"
        for needed in NEEDED:
            assert needed in names, f"{needed} missing from {wheels[0].name}"
    with tarfile.open(sdists[0]) as sdist:
        members = {m.name.split("/", 1)[1]: m for m in sdist.getmembers() if "/" in m.name}
        assert "LICENSE" in members, f"no LICENSE in {sdists[0].name}"
        handle = sdist.extractfile(members["LICENSE"])
        assert handle is not None and handle.read() == expected, "the sdist's LICENSE is not the repository's"
        for needed in NEEDED:
            assert f"src/{needed}" in members, f"{needed} missing from {sdists[0].name}"
    print(f"check_dist: {wheels[0].name} and {sdists[0].name} hold LICENSE, the generated modules and py.typed")


def snippets(readme: Path, out: Path) -> None:
    blocks = re.findall(r"```python\n(.*?)```", readme.read_text(), re.S)
    assert blocks, f"no python blocks in {readme}"
    shutil.rmtree(out, ignore_errors=True)
    out.mkdir(parents=True)
    for i, block in enumerate(blocks, 1):
        (out / f"readme_{i}.py").write_text(block)
    print(f"check_dist: {len(blocks)} snippets of {readme} in {out}")


if __name__ == "__main__":
    if sys.argv[1] == "--snippets":
        snippets(Path(sys.argv[2]), Path(sys.argv[3]))
    else:
        check_dist(Path(sys.argv[1]), Path(sys.argv[2]))
