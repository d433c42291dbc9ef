"""What ``overlap_cli/records.py`` saves against the standard library's ``dataclasses``, at start-up.

    python bench/records_cost.py                 # 31 interleaved runs of each variant
    python bench/records_cost.py --runs 51 --checkout PATH

Two copies of the package go to a temporary folder (each run starts in its copy: ``python -m`` puts the
working directory first on sys.path): one as it is, one whose ``records.py`` only re-exports
``dataclasses.dataclass`` / ``field`` / ``FrozenInstanceError`` (every module imports them from there, so
that is the whole difference). Each variant runs ``overlap check EXAMPLE`` in a fresh process, interleaved
with the other and with ``python -c pass`` so load on the machine hits all three alike, and once more under
``-X importtime`` (the sum of the top-level imports: the package's modules plus what they pull in); the
medians are printed.
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
STDLIB_RECORDS = '"""records.py replaced by the standard library (bench/records_cost.py)."""\n' \
    "from dataclasses import FrozenInstanceError, dataclass, field  # noqa: F401\n"


def timed(cmd: list, env: dict) -> tuple:
    """(wall s, CPU s) of one fresh process; CPU time (user + sys, ``os.wait4``) moves less with load."""
    start = time.perf_counter()
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, env=env, cwd=env["PYTHONPATH"])
    out = proc.stdout.read().decode(errors="replace")
    _, status, usage = os.wait4(proc.pid, 0)
    wall = time.perf_counter() - start
    code = os.waitstatus_to_exitcode(status)
    if code not in (0, 1) or "internal error" in out:
        sys.exit(f"{' '.join(cmd)}: exit {code}: {out.strip()[:300]}")
    return wall, usage.ru_utime + usage.ru_stime


def import_us(cmd: list, env: dict) -> int:
    """Cumulative import time (µs) of every top-level import of ``cmd`` under ``-X importtime``."""
    err = subprocess.run(
        [sys.executable, "-X", "importtime", *cmd[1:]], capture_output=True, text=True, env=env, cwd=env["PYTHONPATH"]
    ).stderr
    total = 0
    for line in err.splitlines():
        parts = line.split("|", 2)
        if len(parts) == 3 and parts[1].strip().isdigit() and len(parts[2]) - len(parts[2].lstrip()) == 1:
            total += int(parts[1])  # a top-level import: one space after the bar (nested ones are indented)
    return total


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--runs", type=int, default=31)
    ap.add_argument("--checkout", default=str(ROOT))
    ap.add_argument("--example", default=str(ROOT / "examples" / "llama3_70b_tuned.yaml"))
    args = ap.parse_args()
    args.example, args.checkout = str(Path(args.example).resolve()), str(Path(args.checkout).resolve())

    with tempfile.TemporaryDirectory(prefix="records_cost_") as tmp:
        homes = {}
        for name in ("records", "dataclasses"):
            home = Path(tmp) / name
            for part in ("overlap_cli", "presets"):  # the package and the preset data it reads from the checkout
                if (Path(args.checkout) / part).exists():
                    shutil.copytree(Path(args.checkout) / part, home / part, ignore=shutil.ignore_patterns("__pycache__"))
            if name == "dataclasses":
                (home / "overlap_cli" / "records.py").write_text(STDLIB_RECORDS)
            homes[name] = home
        # .pyc files written and used, as on an installed package (PYTHONDONTWRITEBYTECODE would time compiling)
        base_env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
        envs = {name: {**base_env, "PYTHONPATH": str(home)} for name, home in homes.items()}
        cmd = [sys.executable, "-m", "overlap_cli", "check", args.example, "--world-size", "64"]
        bare = [sys.executable, "-c", "pass"]
        for name in homes:  # warm-up: .pyc files written, page cache filled
            for _ in range(3):
                timed(cmd, envs[name])
        samples: dict = {"python -c pass": [], "records": [], "dataclasses": []}
        import_samples: dict = {name: [] for name in homes}
        for i in range(args.runs):
            order = ["records", "dataclasses"] if i % 2 == 0 else ["dataclasses", "records"]
            samples["python -c pass"].append(timed(bare, envs["records"]))
            for name in order:
                samples[name].append(timed(cmd, envs[name]))
                import_samples[name].append(import_us(cmd, envs[name]))
        imports = {name: statistics.median(v) for name, v in import_samples.items()}

    wall = {k: statistics.median(w for w, _ in v) * 1000 for k, v in samples.items()}
    cpu = {k: statistics.median(c for _, c in v) * 1000 for k, v in samples.items()}
    print(f"overlap check {Path(args.example).name} --world-size 64; {args.runs} interleaved runs; "
          f"load average {os.getloadavg()[0]:.2f}")
    print("| variant | wall median | wall min | CPU median | import time (median, -X importtime) |")
    print("|---|---:|---:|---:|---:|")
    for k, v in samples.items():
        imp = f"{imports[k] / 1000:.1f} ms" if k in imports else ""
        print(f"| {k} | {wall[k]:.1f} ms | {min(w for w, _ in v) * 1000:.1f} ms | {cpu[k]:.1f} ms | {imp} |")
    print(f"records.py saves {wall['dataclasses'] - wall['records']:.1f} ms of wall time, "
          f"{cpu['dataclasses'] - cpu['records']:.1f} ms of CPU time and "
          f"{(imports['dataclasses'] - imports['records']) / 1000:.1f} ms of import time per start")


if __name__ == "__main__":
    main()
