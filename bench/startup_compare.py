"""Start-up and batch time of two source trees of overlap-cli, measured the same way, interleaved.

    python bench/startup_compare.py --before /path/to/other/checkout [--after .] [--runs 21] [--batch-runs 5]

Each tree runs with its own sources: ``python -m overlap_cli`` with the tree as working directory and
first on PYTHONPATH (checked: ``overlap_cli.__file__`` must lie inside it), bytecode cached in a private
folder (PYTHONPYCACHEPREFIX) so neither checkout is written to. The rows run in turn, round after round,
so a load spike hits every row alike:

- start-up: ``overlap check examples/llama3_70b_tuned.yaml`` against ``python -c pass``;
- batch: ``overlap check CORPUS -f json --jobs 1`` and ``--jobs 2`` over the folder of Bridge dumps.

The JSON of each batch row is compared between the trees (it must be byte for byte the same). Prints a
Markdown section; nothing is written.
"""

from __future__ import annotations

import argparse
import hashlib
import os
import platform
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
EXAMPLE = "examples/llama3_70b_tuned.yaml"
DEFAULT_CORPUS = ROOT.parent / "shared" / "reference" / "bridge_recipes"
GOAL_MS, GOAL_RATIO = 100.0, 7.0


def tree_env(tree: Path, cache: Path) -> dict:
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONDONTWRITEBYTECODE", "PYTHONPATH")}
    return {**env, "PYTHONPATH": str(tree), "PYTHONPYCACHEPREFIX": str(cache), "NO_COLOR": "1"}


def run_once(cmd: list, cwd: Path, env: dict, capture: bool = False) -> tuple[float, int, bytes]:
    """(wall seconds, exit code, stdout if captured) of one fresh process."""
    t0 = time.perf_counter()
    proc = subprocess.run(cmd, cwd=cwd, env=env, stdout=subprocess.PIPE if capture else subprocess.DEVNULL,
                          stderr=subprocess.DEVNULL)  # fmt: skip
    return time.perf_counter() - t0, proc.returncode, proc.stdout or b""


def imported_from(python: str, tree: Path, env: dict) -> Path:
    out = subprocess.run([python, "-c", "import overlap_cli; print(overlap_cli.__file__)"], cwd=tree, env=env,
                         capture_output=True, text=True, check=True).stdout.strip()  # fmt: skip
    path = Path(out).resolve()
    if tree.resolve() not in path.parents:
        raise SystemExit(f"{tree}: python imports overlap_cli from {path}, not from the tree")
    return path


def commit_of(tree: Path) -> str:
    rev = subprocess.run(["git", "-C", str(tree), "rev-parse", "--short", "HEAD"], capture_output=True, text=True).stdout.strip()
    dirty = subprocess.run(["git", "-C", str(tree), "status", "--porcelain", "--untracked-files=no", "--", "overlap_cli"],
                           capture_output=True, text=True).stdout.strip()  # fmt: skip
    return rev + (" + uncommitted changes in overlap_cli/" if dirty else "")


def interleaved(rows: dict, runs: int, warmup: int) -> dict:
    """rows: name -> (cmd, cwd, env). Returns name -> {median, min, exit, runs}."""
    for _ in range(warmup):
        for cmd, cwd, env in rows.values():
            run_once(cmd, cwd, env)
    walls: dict = {k: [] for k in rows}
    codes: dict = {}
    for _ in range(runs):
        for name, (cmd, cwd, env) in rows.items():
            wall, code, _ = run_once(cmd, cwd, env)
            walls[name].append(wall)
            codes[name] = code
    return {k: {"median": statistics.median(v), "min": min(v), "exit": codes[k], "runs": runs} for k, v in walls.items()}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--before", type=Path, required=True, help="the other source tree (e.g. a git worktree)")
    ap.add_argument("--after", type=Path, default=ROOT)
    ap.add_argument("--corpus", type=Path, default=DEFAULT_CORPUS)
    ap.add_argument("--runs", type=int, default=21)
    ap.add_argument("--batch-runs", type=int, default=5)
    ap.add_argument("--python", default=sys.executable)
    args = ap.parse_args()
    py = args.python
    trees = {"before": args.before.resolve(), "after": args.after.resolve()}
    with tempfile.TemporaryDirectory(prefix="overlap-bench-") as tmp:
        envs = {k: tree_env(t, Path(tmp) / k) for k, t in trees.items()}
        origins = {k: imported_from(py, t, envs[k]) for k, t in trees.items()}
        commits = {k: commit_of(t) for k, t in trees.items()}
        load = os.getloadavg()[0]

        startup = {"python -c pass": ([py, "-c", "pass"], ROOT, envs["after"])}
        for k, t in trees.items():
            startup[f"overlap check, {k}"] = ([py, "-m", "overlap_cli", "check", EXAMPLE], t, envs[k])
        s = interleaved(startup, args.runs, warmup=3)

        files = sorted(args.corpus.glob("*.yaml"))
        batch, same = {}, {}
        for jobs in (1, 2):
            rows = {}
            for k, t in trees.items():
                cmd = [py, "-m", "overlap_cli", "check", str(args.corpus), "-f", "json", "--jobs", str(jobs)]
                rows[f"{k}, --jobs {jobs}"] = (cmd, t, envs[k])
            digests = {name: hashlib.sha256(run_once(*row, capture=True)[2]).hexdigest() for name, row in rows.items()}
            same[jobs] = len(set(digests.values())) == 1
            batch.update(interleaved(rows, args.batch_runs, warmup=0))

    bare = s["python -c pass"]["median"]
    print(f"Machine: {os.cpu_count()} CPU(s); Python {platform.python_version()}; load average at start {load:.2f}.")
    for k in trees:
        print(f"- {k}: {trees[k]} (commit {commits[k]}), imports {origins[k]}")
    print()
    print(f"Start-up: `overlap check {EXAMPLE}` (`python -m overlap_cli`), median of {args.runs} interleaved runs after 3 warm-up rounds.")
    print()
    print("| command | median | min | x bare Python | exit |")
    print("| --- | ---: | ---: | ---: | ---: |")
    for name, r in s.items():
        print(f"| {name} | {r['median'] * 1000:.0f} ms | {r['min'] * 1000:.0f} ms | {r['median'] / bare:.1f}x | {r['exit']} |")
    print()
    for k in trees:
        r = s[f"overlap check, {k}"]
        ok = r["median"] * 1000 <= GOAL_MS and r["median"] / bare <= GOAL_RATIO
        print(f"- {k}: {r['median'] * 1000:.0f} ms, {r['median'] / bare:.1f}x bare Python: goals (<= {GOAL_MS:.0f} ms, <= {GOAL_RATIO:.0f}x) **{'met' if ok else 'missed'}**")
    print()
    print(f"Batch: `overlap check CORPUS -f json --jobs N` over {len(files)} Bridge dumps in one call, median of {args.batch_runs} interleaved runs.")
    print()
    print("| tree, jobs | median | min | exit |")
    print("| --- | ---: | ---: | ---: |")
    for name, r in batch.items():
        print(f"| {name} | {r['median']:.2f} s | {r['min']:.2f} s | {r['exit']} |")
    print()
    for jobs, equal in same.items():
        print(f"- JSON output of `--jobs {jobs}`, before vs after: {'byte for byte the same' if equal else '**differs**'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
