"""Start-up of ``overlap check`` on a Megatron-LM launch script and functional-test YAML, against a Bridge YAML
and bare Python, measured the same way (interleaved rounds, fresh processes, .pyc files used).

    python bench/startup_mlm.py [--runs 21]

Rows: ``python -c pass``; ``overlap check examples/llama3_70b_tuned.yaml`` (the Bridge budget's reference);
``overlap check examples/megatron-lm/gpt_pretrain_tp_overlap.sh`` and ``.../model_config.yaml``. The
goal is the one the YAML path has: at most 100 ms and at most 7x bare Python (startup_compare.py's
GOAL_MS / GOAL_RATIO). Prints a Markdown table of medians; nothing is written but bytecode in a private
cache folder.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.startup_compare import EXAMPLE, GOAL_MS, GOAL_RATIO, ROOT, run_once, tree_env  # noqa: E402

ROWS = (
    ("python -c pass", ["-c", "pass"]),
    ("check Bridge YAML (" + EXAMPLE + ")", ["-m", "overlap_cli", "check", EXAMPLE]),
    ("check launch script (examples/megatron-lm/gpt_pretrain_tp_overlap.sh)",
     ["-m", "overlap_cli", "check", "examples/megatron-lm/gpt_pretrain_tp_overlap.sh"]),
    ("check functional-test YAML (examples/megatron-lm/model_config.yaml)",
     ["-m", "overlap_cli", "check", "examples/megatron-lm/model_config.yaml"]),
)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--runs", type=int, default=21)
    opts = ap.parse_args()
    with tempfile.TemporaryDirectory(prefix="overlap-pyc-") as cache:
        env = tree_env(ROOT, Path(cache))
        for _, args in ROWS:  # warm: bytecode written, files in the page cache
            run_once([sys.executable, *args], ROOT, env)
        times: dict = {name: [] for name, _ in ROWS}
        for _ in range(opts.runs):
            for name, args in ROWS:
                took, _code, _ = run_once([sys.executable, *args], ROOT, env)
                times[name].append(took * 1000)
    bare = statistics.median(times[ROWS[0][0]])
    print(f"| row (median of {opts.runs} interleaved runs, {os.cpu_count()} CPUs) | ms | x bare python | within budget |")
    print("|---|---:|---:|---|")
    ok = True
    for name, _ in ROWS:
        med = statistics.median(times[name])
        ratio = med / bare
        within = name == ROWS[0][0] or (med <= GOAL_MS and ratio <= GOAL_RATIO)
        ok = ok and within
        print(f"| {name} | {med:.1f} | {ratio:.2f} | {'-' if name == ROWS[0][0] else ('yes' if within else 'NO')} |")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
