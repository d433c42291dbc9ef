"""Hostile Bridge Python runs for the Python reader, written on demand: time and peak memory of each in a fresh
process (bench/hostile_shell.py's runner), before/after with ``--root``.

    python bench/hostile_python.py            # each input once: wall seconds, CPU seconds, peak RSS, exit
    python bench/hostile_python.py --root /work/main --timeout 60

``PYTHON_HOSTILE`` lists (name, maker, expected): the exit code and a part of the output the run must print
(tests/frameworks/bridge/test_python_budgets.py and tests/test_fuzz.py hold the behaviour).
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Callable

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.hostile_shell import main  # noqa: E402

HEAD = "from megatron.bridge.recipes.llama import llama32_1b_pretrain_config\ncfg = llama32_1b_pretrain_config()\n"
TP = "model.tensor_model_parallel_size"


def _run(folder: Path, name: str, body: str) -> Path:
    path = folder / f"{name}.py"
    path.write_text(HEAD + body, encoding="utf-8")
    return path


def thousand_run_functions(folder: Path) -> Path:
    """1,000 functions that each build and change a config (150 KB): 1,000 runs, each checked (the module was
    parsed once per run: 70 s once; the recipe's values copied five times a run and the module's body walked
    once a run: 4.1 CPU s; every name of the module made at each reading and every key's owner walked per run:
    2.3 s; 0.9 s since)."""
    funcs = "".join(f"def run_{i}():\n    c = llama32_1b_pretrain_config()\n    c.model.tensor_model_parallel_size = {i % 8 + 1}\n"
                    f"    c.train.global_batch_size = {i + 8}\n    return c\n\n" for i in range(1_000))
    path = folder / "run_functions.py"
    path.write_text(HEAD.splitlines()[0] + "\n" + funcs, encoding="utf-8")
    return path


def power_tower(folder: Path) -> Path:
    return _run(folder, "power_tower", "A = 10**63\nB = A**63\nC = B**63\nD = C**63\nE = D**63\n"
                "cfg.model.tensor_model_parallel_size = E % 7 + 1\n")


def huge_list(folder: Path) -> Path:
    return _run(folder, "huge_list", "cfg.model.tensor_model_parallel_size = len([0] * (3 * 10**8))\n")


def huge_string(folder: Path) -> Path:
    return _run(folder, "huge_string", "cfg.model.tensor_model_parallel_size = len('x' * 10**9)\n")


def wide_format(folder: Path) -> Path:
    return _run(folder, "wide_format", "cfg.model.tensor_model_parallel_size = len(f'{1:>2000000000}')\n")


def long_integer_literal(folder: Path) -> Path:
    """An integer literal of 5,000 digits (past CPython's 4,300-digit str conversion limit)."""
    return _run(folder, "long_integer", f"N = {'9' * 5_000}\ncfg.model.tensor_model_parallel_size = N % 3 + 1\n")


def deep_expression(folder: Path) -> Path:
    """One expression nested 5,000 deep: ast.parse's RecursionError is this file's input error."""
    return _run(folder, "deep_expression", "cfg.model.tensor_model_parallel_size = " + "(" * 5_000 + "1" + ")" * 5_000 + "\n")


def long_elif(folder: Path) -> Path:
    branches = "".join(f"elif x == {i}:\n    cfg.model.tensor_model_parallel_size = {i % 8 + 1}\n" for i in range(1, 500))
    return _run(folder, "long_elif", "x = 3\nif x == 0:\n    cfg.model.tensor_model_parallel_size = 1\n" + branches)


def walrus(folder: Path) -> Path:
    return _run(folder, "walrus", "if (tp := 4) > 2:\n    cfg.model.tensor_model_parallel_size = tp\n")


def chain_of_assignments(folder: Path) -> Path:
    """20,000 assignments, each from the one before."""
    chain = "v0 = 1\n" + "".join(f"v{i} = v{i - 1}\n" for i in range(1, 20_000))
    return _run(folder, "chain", chain + "cfg.model.tensor_model_parallel_size = v19999 * 2\n")


def recursion_in_a_helper(folder: Path) -> Path:
    return _run(folder, "recursion", "def f(n):\n    return f(n + 1)\n\ncfg.model.tensor_model_parallel_size = f(0)\n")


def huge_range(folder: Path) -> Path:
    return _run(folder, "huge_range", "cfg.model.tensor_model_parallel_size = sum(range(10**12)) % 7 + 1\n")


# (name, maker, (exit code, a part of the output))
PYTHON_HOSTILE: list[tuple[str, Callable[[Path], Path], tuple]] = [
    ("thousand_run_functions", thousand_run_functions, (0, "1000 file(s)")),
    ("power_tower", power_tower, (0, "an integer of more than 8,192 bits")),
    ("huge_list", huge_list, (0, "a value of more than 1,048,576 items")),
    ("huge_string", huge_string, (0, "a value of more than 1,048,576 items")),
    ("wide_format", wide_format, (0, "a field wider than 1,048,576 characters")),
    ("long_integer_literal", long_integer_literal, (2, "Exceeds the limit (4300 digits)")),
    ("deep_expression", deep_expression, (2, "deep_expression.py")),
    ("long_elif", long_elif, (0, TP)),
    ("walrus", walrus, (0, TP)),
    ("chain_of_assignments", chain_of_assignments, (0, TP)),
    ("recursion_in_a_helper", recursion_in_a_helper, (0, TP)),
    ("huge_range", huge_range, (0, TP)),
]


if __name__ == "__main__":
    main(PYTHON_HOSTILE, __doc__.splitlines()[0])
