"""Start-up of ``overlap check`` on one Python run (tests/data/python/llama3_70b_train.py) against bare Python
and against ``import ast`` alone, median of interleaved runs (the budget: <= 100 ms and <= 7x bare Python).

    python bench/startup_python.py [--runs 21]
"""

from __future__ import annotations

import argparse
import resource
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
ROWS = {
    "python -c pass": [sys.executable, "-c", "pass"],
    "python -c 'import ast'": [sys.executable, "-c", "import ast"],
    "overlap check tests/data/python/llama3_70b_train.py": [sys.executable, "-m", "overlap_cli", "check", "tests/data/python/llama3_70b_train.py"],
    "overlap check examples/llama3_70b_tuned.yaml": [sys.executable, "-m", "overlap_cli", "check", "examples/llama3_70b_tuned.yaml"],
}


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--runs", type=int, default=21)
    a = ap.parse_args()
    times = {k: [] for k in ROWS}
    cpu = {k: [] for k in ROWS}  # user + system CPU time of the child: less sensitive to a loaded machine
    for _ in range(a.runs):
        for name, cmd in ROWS.items():
            before = resource.getrusage(resource.RUSAGE_CHILDREN)
            t = time.perf_counter()
            subprocess.run(cmd, cwd=ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
            times[name].append((time.perf_counter() - t) * 1000)
            after = resource.getrusage(resource.RUSAGE_CHILDREN)
            cpu[name].append((after.ru_utime - before.ru_utime + after.ru_stime - before.ru_stime) * 1000)
    bare = statistics.median(times["python -c pass"])
    bare_cpu = statistics.median(cpu["python -c pass"])
    print("| command | median wall | min wall | x bare (wall) | median CPU | x bare (CPU) |\n|---|---|---|---|---|---|")
    for name, ts in times.items():
        c = statistics.median(cpu[name])
        print(f"| {name} | {statistics.median(ts):.0f} ms | {min(ts):.0f} ms | {statistics.median(ts) / bare:.1f}x | "
              f"{c:.0f} ms | {c / bare_cpu:.1f}x |")


if __name__ == "__main__":
    main()
