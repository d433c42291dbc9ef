"""The Megatron-LM differential run end to end: generated launches -> bash ground truth (mlm_shim.py) ->
the real Megatron-LM (mlm_reference.py, one subprocess for all) -> `overlap check` on each file ->
differential.compare. Used by test_differential.py and bench/differential.py.
"""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import mlm_launches
import mlm_shim

from differential import Disagreement, cached, compare, run_tool

HERE = Path(__file__).parent
MARKER = "@@mlm-reference-results@@"


def launches() -> list:
    return mlm_launches.generate()


def reference(python: Path, items: list, folder: Path) -> dict:
    """id -> [real result of each caller environment] (bash decides the launch; Megatron-LM the rest)."""
    texts = {launch.id: mlm_launches.render(launch) for launch in items}
    truth = mlm_shim.ground_truth(items, texts, folder)
    cases, where = [], []
    out: dict = {launch.id: [] for launch in items}
    for launch in items:
        for run in truth[launch.id]:
            if "error" in run:  # bash never reached a launcher
                out[launch.id].append({"error": run["error"], "stage": "bash", "failed": True, "env": {}})
                continue
            where.append(launch.id)
            cases.append({"launch": run, "arch": launch.arch, "te": launch.te_version})
    proc = subprocess.run([str(python), str(HERE / "mlm_reference.py")], input=json.dumps(cases),
                          capture_output=True, text=True, timeout=3600)
    if proc.returncode or MARKER not in proc.stdout:
        raise RuntimeError(f"the reference environment cannot run Megatron-LM's parser: {proc.stderr.strip()[-500:]}")
    for lid, result in zip(where, json.loads(proc.stdout.split(MARKER + "\n", 1)[1])):
        result["failed"] = result["stage"] is not None
        out[lid].append(result)
    return out


def reference_cached(python: Path, items: list, folder: Path) -> dict:
    """``reference``, computed once per set of launches and reference code (differential.cached)."""
    inputs = [str(python)] + [repr(launch) for launch in items] + \
        [(HERE / name).read_text() for name in ("mlm_reference.py", "mlm_shim.py", "mlm_launches.py")]
    return cached("mlm", inputs, lambda: reference(python, items, folder))


def write(launch, folder: Path) -> Path:
    path = folder / f"{launch.id}{launch.suffix}"
    path.write_text(mlm_launches.render(launch))
    return path


def check(launch, folder: Path, core: str | None = None) -> dict:
    """`overlap check` on the launch's file, for the launch's GPU (and world size, for a YAML: the harness's),
    against megatron-core ``core`` (``[tool.overlap] core_version`` beside the file; None: the default)."""
    if core is not None:
        (folder / "pyproject.toml").write_text(f'[tool.overlap]\ncore_version = "{core}"\n', encoding="utf-8")
    args = [write(launch, folder), "--gpu", launch.gpu, "--te-version", launch.te_version]
    if launch.form == "yaml":
        args += ["--world-size", launch.world_size]
    return run_tool(*args)


def lookup(variant: dict, key: str):
    """The real value of an effective key: ``env.NAME`` from the training processes' environment (None:
    unset), every other key from the real configs."""
    if key.startswith("env."):
        return variant["env"].get(key[len("env."):])
    return variant["values"][key]


def _quote(variant: dict) -> bool:
    # a bare `assert x` has no message to quote; argparse / torchrun exits are the tool's input errors
    return bool(variant["error"]) and variant.get("stage") not in ("argparse", "torchrun", "bash")


def baseline(launch, variants: list):
    """The index of the run (A, B: mlm_launches.Launch.caller) in which the caller's environment sets none of
    the variables the launch reads, or None."""
    if len(variants) != 2 or not launch.caller:
        return None
    return next((i for i in (0, 1) if all(pair[i] is None for pair in launch.caller.values())), None)


def disagreements(launch, result: dict, variants: list) -> list:
    found = compare(result, variants, lookup, _quote, baseline=baseline(launch, variants))
    for v in variants:
        if v.get("stage") == "bash":
            found.append(Disagreement("(ground truth)", "bash reached no launcher", None, v["error"]))
    return found
