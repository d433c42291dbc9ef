"""How much `overlap check` prints: the default text output of the three sample Bridge dumps (lines, and
rows on an 80-column terminal, piped and on a pseudo-terminal), and the bytes of a folder run over the
whole recipe corpus, default and with --show-info --show-effective (what the default used to print).
A readability number, not a test (tests/corpus/test_output_budget.py holds the 25-line budget).

    python bench/output_size.py

The samples and the corpus are the shared reference folders beside the repository (or OVERLAP_SAMPLES,
OVERLAP_CORPUS).
"""

from __future__ import annotations

import math
import os
import re
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
REFERENCE = ROOT.parent / "shared" / "reference"
SAMPLES = Path(os.environ.get("OVERLAP_SAMPLES") or REFERENCE / "bridge_yaml_samples")
CORPUS = Path(os.environ.get("OVERLAP_CORPUS") or REFERENCE / "bridge_recipes")
COLUMNS = 80


def env() -> dict:
    e = {k: v for k, v in os.environ.items() if k not in ("GITHUB_ACTIONS", "FORCE_COLOR")}
    e.update(COLUMNS=str(COLUMNS), PYTHONPATH=str(ROOT))
    return e


def overlap(*args) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "overlap_cli", *map(str, args)], capture_output=True, cwd=ROOT, env=env())


def rows(text: str) -> int:
    return sum(max(1, math.ceil(len(line) / COLUMNS)) for line in text.splitlines())


def main() -> None:
    sys.path.insert(0, str(ROOT / "tests"))
    from ttyrun import run_tty

    print(f"| sample (default text, flags from the name) | lines piped | rows at {COLUMNS} cols piped | lines on a {COLUMNS}-col terminal |")
    print("|---|---|---|---|")
    for path in sorted(SAMPLES.glob("*.yaml")):
        m = re.search(r"_(\d+)gpu_([a-z0-9]+)_", path.name)
        flags = ["--world-size", m.group(1), "--gpu", m.group(2)] if m else []
        out = overlap("check", path, *flags).stdout.decode()
        _, tty, _ = run_tty([sys.executable, "-m", "overlap_cli", "check", str(path), *flags], COLUMNS, cwd=ROOT, env=env())
        print(f"| {path.name} | {len(out.splitlines())} | {rows(out)} | {len(tty.splitlines())} |")
    if CORPUS.is_dir():
        print()
        print("| folder run over the corpus (no target) | bytes on stdout | lines |")
        print("|---|---|---|")
        for extra in ([], ["-q"], ["--statistics"], ["--show-info", "--show-effective"]):
            out = overlap("check", CORPUS, *extra).stdout
            lines = len(out.splitlines())
            print(f"| `overlap check bridge_recipes/ {' '.join(extra)}` | {len(out):,} | {lines:,} |")


if __name__ == "__main__":
    main()
