"""``overlap check DIR --jobs N`` against one job, over a folder of configs (default: Bridge's recipe dumps).

    python bench/jobs.py DIR                       # text and json, --jobs 1 and 2, 7 interleaved rounds
    python bench/jobs.py DIR --jobs 1 2 4 --rounds 11 --format json
    python bench/jobs.py DIR --checkout PATH       # time another checkout of the package (PYTHONPATH=PATH)
    python bench/jobs.py DIR --settings pyproject.toml   # e.g. with a per-file-target table

Each round runs every (format, jobs) pair once, in a fresh process, in a rotated order, so a burst of load
on the machine hits every variant alike; the table gives the median wall time and the median CPU time
(user + sys of the process and its workers, from ``os.wait4``). Every run's stdout is compared with the
``--jobs 1`` run of the same format: the output must not depend on the number of jobs.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def run(cmd: list, env: dict) -> tuple:
    # Started in the checkout: ``python -m`` puts the working directory first on sys.path.
    """(wall s, cpu s, stdout bytes) of one fresh process."""
    out_path = Path(os.environ.get("TMPDIR", "/tmp")) / f"overlap_bench_jobs_{os.getpid()}.out"
    with open(out_path, "wb") as out:
        start = time.perf_counter()
        proc = subprocess.Popen(cmd, stdout=out, stderr=subprocess.DEVNULL, env=env, cwd=env["PYTHONPATH"])
        _, status, usage = os.wait4(proc.pid, 0)
        wall = time.perf_counter() - start
    proc.returncode = os.waitstatus_to_exitcode(status)
    if proc.returncode not in (0, 1):
        sys.exit(f"{' '.join(cmd)}: exit {proc.returncode}")
    data = out_path.read_bytes()
    out_path.unlink()
    return wall, usage.ru_utime + usage.ru_stime, data


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("folder", nargs="?", default=str(ROOT.parent / "shared" / "reference" / "bridge_recipes"))
    ap.add_argument("--jobs", nargs="+", type=int, default=[1, 2])
    ap.add_argument("--format", nargs="+", default=["text", "json"])
    ap.add_argument("--rounds", type=int, default=7)
    ap.add_argument("--checkout", default=str(ROOT), help="the checkout whose overlap_cli is timed")
    ap.add_argument("--settings", help="passed on to overlap check (e.g. a per-file-target table)")
    args = ap.parse_args()
    args.folder, args.checkout = str(Path(args.folder).resolve()), str(Path(args.checkout).resolve())

    # .pyc files written and used, as on an installed package (PYTHONDONTWRITEBYTECODE would time compiling)
    env = {**{k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}, "PYTHONPATH": args.checkout}
    extra = ["--settings", str(Path(args.settings).resolve())] if args.settings else []
    variants = [(fmt, jobs) for fmt in args.format for jobs in args.jobs]
    walls: dict = {v: [] for v in variants}
    cpus: dict = {v: [] for v in variants}
    reference: dict = {}
    for fmt in args.format:  # warm-up (page cache, .pyc files) and the reference output
        cmd = [sys.executable, "-m", "overlap_cli", "check", args.folder, "-f", fmt, "--jobs", "1", *extra]
        reference[fmt] = run(cmd, env)[2]
    for r in range(args.rounds):
        order = variants[r % len(variants):] + variants[: r % len(variants)]
        for fmt, jobs in order:
            cmd = [sys.executable, "-m", "overlap_cli", "check", args.folder, "-f", fmt, "--jobs", str(jobs), *extra]
            wall, cpu, data = run(cmd, env)
            if data != reference[fmt]:
                sys.exit(f"--format {fmt} --jobs {jobs}: output differs from --jobs 1")
            walls[fmt, jobs].append(wall)
            cpus[fmt, jobs].append(cpu)
    n = len([p for p in Path(args.folder).iterdir() if p.suffix in (".yaml", ".yml")])
    print(f"{n} files in {args.folder}; {args.rounds} interleaved rounds; load average {os.getloadavg()[0]:.2f}")
    print("| format | --jobs | wall median | wall min | CPU median (all processes) |")
    print("|---|---:|---:|---:|---:|")
    for fmt, jobs in variants:
        w, c = walls[fmt, jobs], cpus[fmt, jobs]
        print(f"| {fmt} | {jobs} | {statistics.median(w):.2f} s | {min(w):.2f} s | {statistics.median(c):.2f} s |")


if __name__ == "__main__":
    main()
