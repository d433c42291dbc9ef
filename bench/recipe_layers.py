"""Start-up of layered runs against a plain check, in fresh processes, interleaved.

    python bench/recipe_layers.py [--runs 21] [--recipe NAME]

Rows (each a fresh ``python -m overlap_cli`` process from this tree, bytecode cached in a private folder
after warm-up rounds, PYTHONDONTWRITEBYTECODE removed from the environment):

- ``overlap check DUMP.yaml``: the recipe's dump from the reference corpus, checked as a whole config;
- ``overlap check --recipe NAME over.yaml``: the catalog recipe plus a two-key override file;
- ``overlap diff A.yaml B.yaml``: two dumps (the recipe at H100 and at B200).

Goals: ``check --recipe`` within 1.5x of the plain check, ``diff`` of two dumps within 2x of one check.
Prints a Markdown section; nothing is written.
"""

from __future__ import annotations

import argparse
import os
import platform
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
CORPUS = Path(os.environ.get("OVERLAP_CORPUS") or ROOT.parent / "shared" / "reference" / "bridge_recipes")
RECIPE = "llama3_70b_pretrain_64gpu_h100_bf16_config"
OTHER = "llama3_70b_pretrain_64gpu_b200_bf16_config"
OVERRIDE = "model:\n  tensor_model_parallel_size: 4\nddp:\n  overlap_grad_reduce: false\n"
GOALS = {"check --recipe": 1.5, "diff of two dumps": 2.0}


def run_once(cmd: list, env: dict) -> tuple:
    t0 = time.perf_counter()
    code = subprocess.run(cmd, cwd=ROOT, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL).returncode
    return time.perf_counter() - t0, code


def interleaved(rows: dict, runs: int, warmup: int, env: dict) -> dict:
    for _ in range(warmup):
        for cmd in rows.values():
            run_once(cmd, env)
    walls: dict = {k: [] for k in rows}
    codes: dict = {}
    for _ in range(runs):
        for name, cmd in rows.items():
            wall, codes[name] = run_once(cmd, env)
            walls[name].append(wall)
    return {k: {"median": statistics.median(v), "min": min(v), "exit": codes[k]} for k, v in walls.items()}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--runs", type=int, default=21)
    ap.add_argument("--recipe", default=RECIPE)
    ap.add_argument("--other", default=OTHER, help="the second dump of the diff row")
    ap.add_argument("--python", default=sys.executable)
    args = ap.parse_args()
    py = args.python
    dump, other = CORPUS / f"{args.recipe}.yaml", CORPUS / f"{args.other}.yaml"
    for p in (dump, other):
        if not p.is_file():
            raise SystemExit(f"{p}: not found (set OVERLAP_CORPUS)")
    with tempfile.TemporaryDirectory(prefix="overlap-bench-") as tmp:
        env = {k: v for k, v in os.environ.items() if k not in ("PYTHONDONTWRITEBYTECODE", "PYTHONPATH")}
        env.update(PYTHONPATH=str(ROOT), PYTHONPYCACHEPREFIX=str(Path(tmp) / "pyc"), NO_COLOR="1")
        over = Path(tmp) / "over.yaml"
        over.write_text(OVERRIDE)
        ov = [py, "-m", "overlap_cli"]
        rows = {
            "python -c pass": [py, "-c", "pass"],
            "check DUMP.yaml": ov + ["check", str(dump)],
            "check --recipe NAME over.yaml": ov + ["check", "--recipe", args.recipe, str(over)],
            "diff A.yaml B.yaml": ov + ["diff", str(dump), str(other)],
        }
        load = os.getloadavg()[0]
        r = interleaved(rows, args.runs, warmup=3, env=env)
    plain = r["check DUMP.yaml"]["median"]
    print(f"Machine: {os.cpu_count()} CPU(s); Python {platform.python_version()}; load average at start {load:.2f}.")
    print(f"Recipe {args.recipe}; diff against {args.other}. Median of {args.runs} interleaved runs after 3 warm-up rounds.")
    print()
    print("| command | median | min | x plain check | exit |")
    print("| --- | ---: | ---: | ---: | ---: |")
    for name, row in r.items():
        print(f"| `{name}` | {row['median'] * 1000:.0f} ms | {row['min'] * 1000:.0f} ms | {row['median'] / plain:.2f}x | {row['exit']} |")
    print()
    for (label, goal), name in zip(GOALS.items(), ("check --recipe NAME over.yaml", "diff A.yaml B.yaml")):
        ratio = r[name]["median"] / plain
        print(f"- {label}: {ratio:.2f}x a plain check (goal <= {goal}x): **{'met' if ratio <= goal else 'missed'}**")
    return 0


if __name__ == "__main__":
    sys.exit(main())
