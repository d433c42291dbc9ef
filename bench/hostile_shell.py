"""Hostile launch scripts for the bash reader, written on demand: shared by tests/config/test_hostile_shell.py
(behaviour) and this file's own run (time and peak memory of each, in a fresh process).

    python bench/hostile_shell.py            # each input once, a table of seconds and peak RSS
    python bench/hostile_shell.py --repeat 3 # the median of three
    python bench/hostile_shell.py --root /work/main --timeout 30   # another checkout's overlap_cli (before/after)

``SHELL_HOSTILE`` lists (name, maker, expected): ``expected`` is the exit code and a part of the output
the run must print: the value a budget made unknown (with its reason), the value a linear matcher
decided, or bash's own syntax error.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Callable

ROOT = Path(__file__).resolve().parent.parent

LAUNCH = ("torchrun pretrain_gpt.py --tensor-model-parallel-size $TP --pipeline-model-parallel-size 1 --num-layers 4 "
          "--hidden-size 64 --num-attention-heads 4 --seq-length 128 --max-position-embeddings 128 "
          "--micro-batch-size 1 --global-batch-size 8\n")


def _script(folder: Path, name: str, body: str) -> Path:
    path = folder / f"{name}.sh"
    path.write_text("#!/bin/bash\nTP=2\n" + body + LAUNCH, encoding="utf-8")
    return path


def doubling_forty_times(folder: Path) -> Path:
    """``A=$A$A`` forty times (a terabyte), then TP built from it: TP is unknown, with the reason."""
    return _script(folder, "doubling", "A=x\n" + "A=$A$A\n" * 40 + "TP=$TP$A\n")


def appending_forty_times(folder: Path) -> Path:
    """``A+=$A`` forty times, and an array doubled thirty times: TP (never touched) stays known."""
    return _script(folder, "appending", "A=x\n" + "A+=$A\n" * 40 + 'B=("$A")\n' + 'B=("${B[@]}" "${B[@]}")\n' * 30)


def backtracking_glob(folder: Path) -> Path:
    """``[[ $x == *a*a*a*a*a*a*b ]]`` on 100 a's: a backtracking regular expression never ends; no match."""
    return _script(folder, "glob", "x=" + "a" * 100 + "\nif [[ $x == *a*a*a*a*a*a*b ]]; then TP=4; fi\n")


def reversed_range(folder: Path) -> Path:
    """``[z-a]``: bash matches nothing with a reversed range (no error)."""
    return _script(folder, "reversed_range", "x=b\nif [[ $x == [z-a] ]]; then TP=4; fi\ncase $x in [z-a]) TP=8 ;; esac\n")


def forty_thousand_lines(folder: Path) -> Path:
    return _script(folder, "long", "".join(f"V{i}={i}\n" for i in range(40_000)))


def five_thousand_patterns(folder: Path) -> Path:
    """A case of 5,000 pattern items on the script's first argument (not known): 5,000 ways through."""
    items = "".join(f"  *p{i}*|q{i}[0-9]) TP={i % 8 + 1} ;;\n" for i in range(5_000))
    return _script(folder, "case", "case $1 in\n" + items + "esac\n")


def five_thousand_values(folder: Path) -> Path:
    """5,000 patterns on an unknown subject, each giving TP its own value: past the path budget the values
    merge into unknown, and what decides them is named once."""
    items = "".join(f"  p{i}) TP={i + 1} ;;\n" for i in range(5_000))
    return _script(folder, "case_values", "case $1 in\n" + items + "esac\n")


def many_variables_then_patterns(folder: Path) -> Path:
    """9,000 variables, then a case of 3,000 patterns on the script's first argument: every way through
    carries the 9,000 (paths were compared by building and sorting each one's whole signature: 18 CPU s)."""
    items = "".join(f"  *{i}*|[z-a]{i}) TP={i % 4 + 1} ;;\n" for i in range(3_000))
    return _script(folder, "variables_case", "".join(f"W{i}={i}\n" for i in range(9_000)) + "case $1 in\n" + items + "esac\n")


def twenty_thousand_directives(folder: Path) -> Path:
    return _script(folder, "directives", "# overlap: ignore[LM501]\n" * 20_000)


def recursion_past_the_step_budget(folder: Path) -> Path:
    """A function that calls itself twice, 16 deep: past the step budget the call is given up, and TP, which
    the function sets, is unknown with the reason."""
    return _script(folder, "recursion", "f() { TP=8; f; f; }\nf\n")


def nested_loops_past_the_step_budget(folder: Path) -> Path:
    """Three nested loops of 200 iterations (8 million commands): given up; TP (not set there) stays known."""
    loops = "for ((i=0;i<200;i++)); do for ((j=0;j<200;j++)); do for ((k=0;k<200;k++)); do X=$k; done; done; done\n"
    return _script(folder, "nested_loops", loops)


def many_paths_past_the_step_budget(folder: Path) -> Path:
    """Six conditions on the environment (64 ways through), then 5,000 assignments on each way."""
    forks = "".join(f'if [ -n "$E{i}" ]; then V{i}=1; fi\n' for i in range(6))
    return _script(folder, "many_paths", forks + "".join(f"W{i}={i}\n" for i in range(5_000)))


def forty_loops_past_the_step_budget(folder: Path) -> Path:
    """Forty top-level loops of 90,000 iterations each, then the launch inside an ``if``: each loop is given
    up in turn with less and less allowance, and the launch is still read."""
    loops = "for ((i=0;i<300;i++)); do for ((j=0;j<300;j++)); do X=$j; done; done\n" * 40
    path = folder / "forty_loops.sh"
    path.write_text("#!/bin/bash\nTP=2\n" + loops + "if true; then " + LAUNCH.strip() + "; fi\n", encoding="utf-8")
    return path


def stray_fi(folder: Path) -> Path:
    return _script(folder, "stray_fi", "echo start\nfi\n")


def stray_done(folder: Path) -> Path:
    return _script(folder, "stray_done", "done\n")


def stray_esac(folder: Path) -> Path:
    return _script(folder, "stray_esac", "if true; then echo; fi\nesac\n")


# (name, maker, (exit code, a part of the output))
SHELL_HOSTILE: list[tuple[str, Callable[[Path], Path], tuple]] = [
    ("doubling_forty_times", doubling_forty_times, (0, "more than 65,536 characters")),
    ("appending_forty_times", appending_forty_times, (1, "model.tensor_model_parallel_size                    2 ")),
    ("backtracking_glob", backtracking_glob, (1, "model.tensor_model_parallel_size                    2 ")),
    ("reversed_range", reversed_range, (1, "model.tensor_model_parallel_size                    2 ")),
    ("forty_thousand_lines", forty_thousand_lines, (1, "model.tensor_model_parallel_size                    2 ")),
    # exit 1: the ways on which TP does not divide the model's 4 heads get LM106, naming the case that decides
    ("five_thousand_patterns", five_thousand_patterns, (1, "is 1 or 2 or 3 or 4 or 5 or 6 or 7 or 8")),
    ("five_thousand_values", five_thousand_values, (1, "depending on the case on line 3 (case $1): its value")),
    ("many_variables_then_patterns", many_variables_then_patterns, (1, "is 1 or 2 or 3 or 4")),
    ("twenty_thousand_directives", twenty_thousand_directives, (0, "model.tensor_model_parallel_size                    2 ")),
    ("recursion_past_the_step_budget", recursion_past_the_step_budget,
     (0, "$TP may be set by the commands on line 4, which take more than 100,000 steps")),
    ("nested_loops_past_the_step_budget", nested_loops_past_the_step_budget,
     (1, "model.tensor_model_parallel_size                    2 ")),
    ("many_paths_past_the_step_budget", many_paths_past_the_step_budget,
     (1, "model.tensor_model_parallel_size                    2 ")),
    ("forty_loops_past_the_step_budget", forty_loops_past_the_step_budget,
     (1, "model.tensor_model_parallel_size                    2 ")),
    ("stray_fi", stray_fi, (2, "syntax error near unexpected token 'fi'")),
    ("stray_done", stray_done, (2, "syntax error near unexpected token 'done'")),
    ("stray_esac", stray_esac, (2, "syntax error near unexpected token 'esac'")),
]


def run_one(path: Path, timeout: float = 120.0, root: Path = ROOT) -> tuple:
    """(seconds, peak RSS in MiB, exit code, CPU seconds) of ``overlap check PATH --show-effective --show-info``
    in a fresh process, with ``root``'s overlap_cli; seconds is inf when it ran past ``timeout`` (killed). CPU
    seconds (user + system) are what to compare on a shared machine: wall time grows with its load."""
    env = {**os.environ, "PYTHONPATH": str(root)}
    start = time.perf_counter()
    proc = subprocess.Popen([sys.executable, "-m", "overlap_cli", "check", str(path), "--show-effective", "--show-info"],
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=env, cwd=root)
    deadline = start + timeout
    while True:
        pid, status, usage = os.wait4(proc.pid, os.WNOHANG)
        if pid:
            return (time.perf_counter() - start, usage.ru_maxrss / 1024, os.waitstatus_to_exitcode(status),
                    usage.ru_utime + usage.ru_stime)
        if time.perf_counter() > deadline:
            proc.kill()
            proc.wait()
            return float("inf"), float("nan"), None, float("inf")
        time.sleep(0.01)


def main(cases: list = SHELL_HOSTILE, description: str = __doc__.splitlines()[0]) -> None:
    """A table of ``cases`` ((name, maker, expected)): seconds, CPU seconds, peak RSS and exit code of each."""
    parser = argparse.ArgumentParser(description=description)
    parser.add_argument("--repeat", type=int, default=1)
    parser.add_argument("--timeout", type=float, default=120.0)
    parser.add_argument("--root", type=Path, default=ROOT, help="the checkout whose overlap_cli runs")
    a = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        print(f"{'input':34} {'seconds':>8} {'CPU s':>6} {'peak MiB':>9} {'exit':>5}")
        for name, make, _ in cases:
            path = make(Path(tmp))
            runs = [run_one(path, a.timeout, a.root) for _ in range(a.repeat)]
            secs = statistics.median(r[0] for r in runs)
            cpu = statistics.median(r[3] for r in runs)
            print(f"{name:34} {secs:8.2f} {cpu:6.2f} {max(r[1] for r in runs):9.1f} {str(runs[-1][2]):>5}")


if __name__ == "__main__":
    main()
