#!/usr/bin/env python3
"""Checks the release artefacts in a dist directory (default dist/), by tools, not by eye.

For every librl-<version>-linux-<arch>-<libc>.so:
  - the ELF machine matches <arch> (x86_64: "Advanced Micro Devices X86-64",
    aarch64: "AArch64"), and it is a shared object;
  - it exports RedisModule_OnLoad (objdump -T, a defined function);
  - gnu: the highest GLIBC_x.y symbol version it needs is at most 2.17;
  - NEEDED (readelf -d) is within the allow-list below;
and rl-<version>.lua is there with the version in its header, and SHA256SUMS lists
every file and matches (sha256sum -c).

The NEEDED allow-list: libc itself and libgcc_s (the unwinder: RL is built with
panic = "unwind", so a panic becomes an error reply, not a crash). On glibc before
2.34, libpthread, libdl, librt and libm were separate libraries, and a module built
for glibc 2.17 names them when it uses one of their symbols; they are part of
every glibc install (ld-linux is the loader itself), so they are allowed for the gnu
builds. RL's need them (the Rust standard library calls pthread_key_create, dlsym,
dladdr and, on x86-64, ld-linux's __tls_get_addr), so linking with --as-needed
would not drop them; zig links the unwinder statically, hence no libgcc_s. musl has one libc.so for all of it (no libgcc_s either: musl builds unwind
with the statically linked libunwind).

Exit status 1 with every failure listed; 0 with one line per artefact.
"""

import hashlib
import os
import re
import subprocess
import sys

MAX_GLIBC = (2, 17)
MACHINE = {"x86_64": "Advanced Micro Devices X86-64", "aarch64": "AArch64"}
ALLOWED = {
    "gnu": {
        "libc.so.6",
        "libgcc_s.so.1",
        "libpthread.so.0",
        "libdl.so.2",
        "librt.so.1",
        "libm.so.6",
        "ld-linux-x86-64.so.2",
        "ld-linux-aarch64.so.1",
    },
    "musl": {"libc.so", "libgcc_s.so.1"},
}
NAME = re.compile(r"^librl-(?P<version>[0-9]+\.[0-9]+\.[0-9]+)-linux-(?P<arch>x86_64|aarch64)-(?P<libc>gnu|musl)\.so$")
EXPECTED = [(a, l) for a in ("x86_64", "aarch64") for l in ("gnu", "musl")]


def run(*args):
    return subprocess.run(args, check=True, capture_output=True, text=True).stdout


def check_so(path, arch, libc):
    problems = []
    header = run("readelf", "-h", path)
    machine = re.search(r"Machine:\s*(.+)", header)
    machine = machine.group(1).strip() if machine else "?"
    if machine != MACHINE[arch]:
        problems.append(f"ELF machine is {machine!r}, want {MACHINE[arch]!r}")
    kind = re.search(r"Type:\s*(\S+)", header)
    if not kind or kind.group(1) != "DYN":
        problems.append(f"ELF type is {kind.group(1) if kind else '?'}, want DYN (a shared object)")
    dynamic = run("readelf", "-d", path)
    needed = re.findall(r"\(NEEDED\)\s+Shared library: \[([^\]]+)\]", dynamic)
    extra = sorted(set(needed) - ALLOWED[libc])
    if extra:
        problems.append(f"NEEDED has {extra}, allowed for {libc}: {sorted(ALLOWED[libc])}")
    symbols = run("objdump", "-T", path)
    versions = sorted({tuple(int(x) for x in v.split(".")) for v in re.findall(r"GLIBC_([0-9]+(?:\.[0-9]+)+)", symbols)})
    highest = versions[-1] if versions else None
    if libc == "gnu":
        if highest is None:
            problems.append("no GLIBC_ symbol versions at all: not a glibc build?")
        elif highest > MAX_GLIBC:
            newer = sorted({l.split()[-1] for l in symbols.splitlines()
                            if (m := re.search(r"GLIBC_([0-9.]+)", l))
                            and tuple(int(x) for x in m.group(1).split(".")) > MAX_GLIBC})
            problems.append(f"needs GLIBC_{'.'.join(map(str, highest))} > 2.17 (symbols: {newer[:10]})")
    elif highest is not None:
        problems.append(f"a musl build with GLIBC_ symbol versions ({'.'.join(map(str, highest))})")
    onload = [l for l in symbols.splitlines() if l.split() and l.split()[-1] == "RedisModule_OnLoad"]
    if not onload or " DF " not in onload[0] or "*UND*" in onload[0]:
        problems.append("does not export RedisModule_OnLoad as a defined function")
    glibc = ".".join(map(str, highest)) if highest else "-"
    summary = f"{machine}, GLIBC max {glibc}, NEEDED {needed}, {os.path.getsize(path)} bytes"
    return problems, summary


def main():
    dist = sys.argv[1] if len(sys.argv) > 1 else "dist"
    version = sys.argv[2] if len(sys.argv) > 2 else None
    failures = []
    if not os.path.isdir(dist):
        print(f"check-dist: FAILED: no directory {dist} (run make dist)")
        return 1
    files = sorted(os.listdir(dist))
    seen = set()
    for name in files:
        m = NAME.match(name)
        if not m:
            continue
        if version and m["version"] != version:
            failures.append(f"{name}: version {m['version']}, want {version}")
        seen.add((m["arch"], m["libc"]))
        problems, summary = check_so(os.path.join(dist, name), m["arch"], m["libc"])
        for p in problems:
            failures.append(f"{name}: {p}")
        print(f"check-dist: {name}: {'ok' if not problems else 'FAILED'}: {summary}")
    for arch, libc in EXPECTED:
        if (arch, libc) not in seen:
            failures.append(f"missing the {arch}-{libc} module (librl-<version>-linux-{arch}-{libc}.so)")
    luas = [n for n in files if re.match(r"^rl-[0-9]+\.[0-9]+\.[0-9]+\.lua$", n)]
    if len(luas) != 1:
        failures.append(f"want one rl-<version>.lua, found {luas}")
    else:
        lua_version = luas[0][3:-4]
        text = open(os.path.join(dist, luas[0]), encoding="utf-8").read()
        if not text.startswith("#!lua name=rl\n"):
            failures.append(f"{luas[0]}: does not start with '#!lua name=rl'")
        if f"RL {lua_version}" not in text.split("]]", 1)[0]:
            failures.append(f"{luas[0]}: its header comment does not say 'RL {lua_version}'")
        if version and lua_version != version:
            failures.append(f"{luas[0]}: version {lua_version}, want {version}")
        print(f"check-dist: {luas[0]}: {'ok' if not failures else 'checked'}")
    sums = os.path.join(dist, "SHA256SUMS")
    if not os.path.isfile(sums):
        failures.append("no SHA256SUMS")
    else:
        listed = {}
        for line in open(sums, encoding="utf-8"):
            digest, _, name = line.rstrip("\n").partition("  ")
            listed[name] = digest
        for name in files:
            if name == "SHA256SUMS":
                continue
            if name not in listed:
                failures.append(f"SHA256SUMS does not list {name}")
                continue
            with open(os.path.join(dist, name), "rb") as f:
                if hashlib.sha256(f.read()).hexdigest() != listed[name]:
                    failures.append(f"SHA256SUMS: {name} does not match")
        for name in listed:
            if name not in files:
                failures.append(f"SHA256SUMS lists {name}, which is not in {dist}")
        print(f"check-dist: SHA256SUMS: {len(listed)} files listed")
    if failures:
        for f in failures:
            print(f"check-dist: FAILED: {f}")
        return 1
    print(f"check-dist: all artefacts in {dist} pass")
    return 0


if __name__ == "__main__":
    sys.exit(main())
