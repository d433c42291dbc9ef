"""The Bridge differential run end to end: generated runs (bridge_runs.py) -> the real Megatron-Bridge
(bridge_reference.py, one subprocess for all) -> `overlap check` on each -> differential.compare. Used by
test_differential.py and bench/differential.py.
"""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import bridge_runs

from conftest import CORPUS
from differential import cached, compare, run_tool

HERE = Path(__file__).parent
MARKER = "@@bridge-reference-results@@"


def runs() -> list:
    return bridge_runs.generate(CORPUS)


def reference(python: Path, items: list, folder: Path) -> dict:
    """id -> [the real result] (one environment: a Bridge run reads nothing from the caller's shell here)."""
    cases = [bridge_runs.render(run, CORPUS, folder)["case"] for run in items]
    proc = subprocess.run([str(python), str(HERE / "bridge_reference.py")], input=json.dumps(cases),
                          capture_output=True, text=True, timeout=7200)
    if proc.returncode or MARKER not in proc.stdout:
        raise RuntimeError(f"the reference environment cannot run Bridge's config code: {proc.stderr.strip()[-500:]}")
    out = {}
    for run, result in zip(items, json.loads(proc.stdout.split(MARKER + "\n", 1)[1])):
        result["failed"] = result["stage"] is not None
        out[run.id] = [result]
    return out


def reference_cached(python: Path, items: list, folder: Path) -> dict:
    inputs = [str(python), str(CORPUS)] + [repr(run) for run in items] + \
        [(HERE / name).read_text() for name in ("bridge_reference.py", "bridge_runs.py")]
    return cached("bridge", inputs, lambda: reference(python, items, folder))


def check(run, folder: Path) -> dict:
    return run_tool(*bridge_runs.render(run, CORPUS, folder)["args"])


def lookup(variant: dict, key: str):
    """The real value of an effective key: ``env.NAME`` from the process environment after the runtime
    update (None: unset), every other key from the real configs (``model.tp_comm_overlap_cfg``: what
    Transformer Engine is handed)."""
    if key.startswith("env."):
        return variant["env"].get(key[len("env."):])
    value = variant["values"][key]
    if key == "model.tp_comm_overlap_cfg" and isinstance(value, dict) and variant["values"]["model.tp_comm_overlap"] is False:
        # comm_overlap copied its userbuffers preset onto the model but TP overlap is off: the preset object
        # is never turned into Transformer Engine's dict (training/comm_overlap.py:619-632 runs only with
        # tp_comm_overlap) nor read (training/initialize.py:236): TE is handed nothing
        return None
    return value


def project(key: str, value):
    """The part of a printed value the real config holds: ``model.tp_comm_overlap_cfg`` is printed as
    {preset, matches, te_config}; Bridge holds the dict handed to Transformer Engine (te_config:
    asdict of the userbuffers config without its None entries, training/comm_overlap.py:626-632)."""
    if key == "model.tp_comm_overlap_cfg" and isinstance(value, dict) and "te_config" in value:
        return value["te_config"]
    return value


def unmodelled(run, variants: list):
    """Why the reference cannot stand for this run, or None. A ``--recipe`` run is modelled from the
    recipe's dump through ``from_yaml``; a few dumps do not load back (a config's ``__post_init__`` asserts
    on values the recipe function set after constructing it, e.g. distributed_data_parallel_config.py:254),
    though the recipe function builds them: there the reference has nothing to say."""
    real = variants[0]
    if run.form == "recipe" and real.get("stage") == "load":
        return f"the recipe's dump does not load back through from_yaml ({real['error'].splitlines()[-2:]})"
    return None


def disagreements(run, result: dict, variants: list) -> list:
    # Bridge's own exceptions are not the tool's to quote word for word: an error finding must be there
    return compare(result, variants, lookup, quote=lambda v: False, project=project,
                   input_stages=("load", "overrides"))
