#!/usr/bin/env python3
"""What the walk below a directory costs a decision (docs/permissions.md, "Below a directory").

`toolgate check 'Bash(grep -r foo .)'` in a large tree, with a deny rule that can match
below it (`Read(.env)`: the engine walks the tree) and without rules (no walk), next to
`find . -printf ''` walking the same tree (the reference: one process, readdir only), rounds
interleaved in a fresh random order. Reports medians and p10/p90 in ms, and the walk's cost
per entry.

Usage: python3 bench/beneath_walk.py [--toolgate target/release/toolgate] [--tree DIR]
                                     [--rounds 25]
The default tree is the Cargo registry's unpacked sources (~/.cargo/registry/src/*), about
25,000 entries on the development machine; any directory under the walk's 50,000-entry
budget will do. Needs a release build: `cargo build --release -p toolgate`.
"""
from __future__ import annotations

import argparse
import glob
import os
import random
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def default_tree() -> str:
    found = sorted(glob.glob(os.path.expanduser("~/.cargo/registry/src/*")))
    return found[0] if found else str(ROOT)


def entries(tree: str) -> int:
    return sum(len(dirs) + len(files) for _, dirs, files in os.walk(tree))


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--toolgate", default=str(ROOT / "target/release/toolgate"))
    ap.add_argument("--tree", default=default_tree())
    ap.add_argument("--rounds", type=int, default=25)
    a = ap.parse_args()
    if not os.access(a.toolgate, os.X_OK):
        sys.exit(f"{a.toolgate} missing: cargo build --release -p toolgate")
    n = entries(a.tree)
    cases = {
        "toolgate check, no rules (no walk)": [a.toolgate, "check", "Bash(grep -r foo .)"],
        "toolgate check, Read(.env) denied (walk)": [
            a.toolgate, "check", "--deny", "Read(.env)", "Bash(grep -r foo .)"],
        "find . -printf '' (reference walk)": ["find", ".", "-printf", ""],
    }
    times: dict[str, list[float]] = {k: [] for k in cases}
    for _ in range(a.rounds):
        order = list(cases)
        random.shuffle(order)
        for k in order:
            t = time.perf_counter()
            subprocess.run(cases[k], cwd=a.tree, stdout=subprocess.DEVNULL, check=True)
            times[k].append((time.perf_counter() - t) * 1000)
    print(f"tree: {a.tree} ({n} entries), {a.rounds} rounds interleaved, ms")
    for k, v in times.items():
        s = sorted(v)
        p10, p90 = s[len(s) // 10], s[(len(s) * 9) // 10]
        print(f"{k:44s} median {statistics.median(v):7.2f}  p10 {p10:7.2f}  p90 {p90:7.2f}")
    walk = statistics.median(times["toolgate check, Read(.env) denied (walk)"])
    base = statistics.median(times["toolgate check, no rules (no walk)"])
    ref = statistics.median(times["find . -printf '' (reference walk)"])
    print(f"walk cost {walk - base:.2f} ms ({(walk - base) * 1000 / max(n, 1):.2f} µs per entry); "
          f"find's whole process {ref:.2f} ms; ratio walk / find {(walk - base) / ref:.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
