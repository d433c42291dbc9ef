"""Benchmark of `overlap fix` on Megatron-Bridge's own recipe dumps (~28 KB each).

    python bench/bench_fix.py --corpus DIR                 # DIR: the recipe dumps with manifest.jsonl
    python bench/bench_fix.py --corpus DIR --tree OLD      # the same, for another checkout (before/after)
    python bench/bench_fix.py --corpus DIR --quick         # fewer dumps and repetitions

Measured, each as wall-clock time on this machine:
1. `overlap fix FILE --diff` with the file's own target, a fresh process per run (median of repeated
   runs) on a few dumps that have fixes, the slowest of them first: what one pre-commit run costs;
2. `overlap fix --write` over a copy of the whole corpus in one process, no target flags (a folder run);
3. fixing every dump with its own manifest target in one process (fixer.fix_file), as the contract
   test does, split into dumps with and without an applicable fix.
Nothing here is asserted: tests never time anything. Results go to stdout (and bench/results.md with
--write).
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
# The dumps measured one by one: several fix rounds (CFG005/ENV5xx at DP=1), one scalar fix (TP101),
# a crash fix (PP205), and one with nothing to fix.
SINGLE = (
    "llama2_7b_pretrain_2gpu_h100_bf16_config.yaml",
    "llama3_70b_pretrain_64gpu_b200_fp8cs_config.yaml",
    "gpt3_175b_pretrain_32gpu_h100_bf16_config.yaml",
    "gpt_oss_120b_pretrain_64gpu_b200_bf16_config.yaml",
)
GPUS = {"a100", "h100", "h200", "b200", "b300", "gb200", "gb300"}  # names every version of the tool knows


def manifest(corpus: Path) -> dict:
    rows = [json.loads(line) for line in (corpus / "manifest.jsonl").read_text().splitlines() if line.strip()]
    return {r["file"]: r for r in rows}


def target_flags(row: dict) -> list:
    flags = ["--world-size", str(row["world_size"])] if row.get("world_size") else []
    return flags + (["--gpu", row["gpu"]] if row.get("gpu") in GPUS else [])


def run(cmd, cwd: Path, env) -> float:
    t0 = time.perf_counter()
    subprocess.run(cmd, cwd=cwd, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    return time.perf_counter() - t0


def bench_single(tree: Path, corpus: Path, rows: dict, runs: int, env) -> list:
    out = []
    for name in SINGLE:
        cmd = [sys.executable, "-m", "overlap_cli", "fix", str(corpus / name), "--diff", *target_flags(rows[name])]
        run(cmd, tree, env)  # warm-up (bytecode cache)
        walls = [run(cmd, tree, env) for _ in range(runs)]
        out.append((name, statistics.median(walls), min(walls)))
    return out


def bench_folder(tree: Path, corpus: Path, env) -> float:
    with tempfile.TemporaryDirectory() as tmp:
        dst = Path(tmp) / "recipes"
        dst.mkdir()
        for p in corpus.glob("*.yaml"):
            shutil.copyfile(p, dst / p.name)
        return run([sys.executable, "-m", "overlap_cli", "fix", "--write", str(dst)], tree, env)


def bench_in_process(tree: Path, corpus: Path, rows: dict) -> dict:
    code = f"""
import json, sys, time
sys.path.insert(0, {str(tree)!r})
from overlap_cli.launch_profile.profile import build_target
from overlap_cli.fix.loop import fix_file
rows = [json.loads(l) for l in open({str(corpus / 'manifest.jsonl')!r}) if l.strip()]
gpus = {sorted(GPUS)!r}
fixed, clean = [], []
t_all = time.perf_counter()
for r in rows:
    flags = {{"world_size": r.get("world_size")}}
    if r.get("gpu") in gpus:
        flags["gpu"] = r["gpu"]
    t0 = time.perf_counter()
    o = fix_file({str(corpus)!r} + "/" + r["file"], build_target(flags))
    (fixed if o.changed else clean).append(time.perf_counter() - t0)
print(json.dumps({{"total": time.perf_counter() - t_all, "fixed": fixed, "clean": clean}}))
"""
    res = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=tree)
    return json.loads(res.stdout.strip().splitlines()[-1])


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--corpus", type=Path, required=True)
    ap.add_argument("--tree", type=Path, default=ROOT, help="checkout to measure (default: this one)")
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--runs", type=int, default=None)
    args = ap.parse_args()
    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    env["PYTHONPATH"] = str(args.tree)
    rows = manifest(args.corpus)
    runs = args.runs or (3 if args.quick else 7)
    print(f"tree {args.tree}; corpus {args.corpus} ({len(rows)} dumps); load {os.getloadavg()[0]:.2f}")
    print("\n| `overlap fix FILE --diff` (fresh process) | median | min |\n| --- | ---: | ---: |")
    for name, med, low in bench_single(args.tree, args.corpus, rows, runs, env):
        print(f"| {name} | {med * 1000:.0f} ms | {low * 1000:.0f} ms |")
    if not args.quick:
        print(f"\n`overlap fix --write DIR` over a copy of the corpus, one process: {bench_folder(args.tree, args.corpus, env):.1f} s")
    r = bench_in_process(args.tree, args.corpus, rows)
    fixed, clean = r["fixed"], r["clean"]
    print(
        f"\nin one process with each dump's target: {r['total']:.1f} s for {len(fixed) + len(clean)} dumps; "
        f"{len(fixed)} changed: median {statistics.median(fixed) * 1000:.0f} ms, max {max(fixed) * 1000:.0f} ms; "
        f"{len(clean)} unchanged: median {statistics.median(clean) * 1000:.0f} ms"
    )


if __name__ == "__main__":
    main()
