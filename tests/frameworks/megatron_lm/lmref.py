"""Shared by the differential tests: the environment with the real megatron-core of a release (or None),
running mlm_reference.py on a list of cases, and writing a launch script the CLI checks on the same target."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

from conftest import ROOT
from differential import RELEASES as BRIDGE_CORE, reference_python

HERE = Path(__file__).parent
PYTHON = reference_python()
MARKER = "@@mlm-reference-results@@\n"
ABSENT = "absent"  # a case's Transformer Engine: a version, ABSENT, or None (installed, version not given)


def core_python(core: str):
    """The Python of an environment holding megatron-core ``core``: a numbered Bridge release's environment
    whose container pins it (differential.RELEASES), or None."""
    for bridge, pinned in BRIDGE_CORE.items():
        python = reference_python(bridge) if pinned == core and bridge != "main" else None
        if python is not None:
            return python
    return None


def run_reference(cases: list, core: str | None = None) -> list:
    """mlm_reference.py's result for each case, run by megatron-core ``core`` (None: the default release's
    environment); skips without the environment, fails when it crashes."""
    python = PYTHON if core is None else core_python(core)
    if python is None:
        pytest.skip(f"no environment with megatron-core {core or 'of the default release'} (set OVERLAP_BRIDGE_ENV)")
    proc = subprocess.run([str(python), str(HERE / "mlm_reference.py")], input=json.dumps(cases),
                          capture_output=True, text=True, timeout=600)
    if proc.returncode or MARKER not in proc.stdout:  # the environment is there: a crash is a failure, not a skip
        pytest.fail(f"the reference environment cannot run Megatron-LM's launch checks: {proc.stderr.strip()[-800:]}")
    return json.loads(proc.stdout.split(MARKER, 1)[1])


def reference_case(argv: list, ws: int, arch: int, env: dict, te=None, torch=None) -> dict:
    case = {"argv": argv, "world_size": ws, "arch": arch, "env": env}
    if te not in (None, ABSENT):
        case["te"] = te
    if torch:
        case["torch"] = torch
    return case


def write_launch(path: Path, words: str, ws: int, env: dict, core: str | None = None) -> Path:
    """A launch script of ``words``; checked against megatron-core ``core`` when given (its target directive)."""
    exports = "".join(f"export {k}={v}\n" for k, v in env.items())
    directive = f"# overlap: target core-version={core}\n" if core else ""
    path.write_text(f"#!/bin/bash\n{directive}{exports}torchrun --nproc_per_node {ws} pretrain_gpt.py {words}\n", encoding="utf-8")
    return path


def target_flags(arch: int, te=None, torch=None) -> list:
    """The CLI's target for a reference case: the GPU of its architecture, its Transformer Engine, torch."""
    flags = ["--gpu", "h100" if arch < 10 else "b200"]
    if te == ABSENT:
        flags.append("--no-te")
    elif te:
        flags += ["--te-version", te]
    if torch:
        flags += ["--torch-version", torch]
    return flags
