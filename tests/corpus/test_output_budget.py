"""The default text output of `overlap check` on real Bridge dumps fits a screen: 25 lines at 80 columns.

The three sample dumps are Megatron-Bridge 0.6.2 recipes as its serializer writes them; each file name says
its world size and GPU (``..._32gpu_h100_...``), which the test passes as flags. Measured both piped
(each line counted as the rows it takes on an 80-column terminal) and on a pseudo-terminal 80 columns
wide (rich wraps there). The budget must not be met by dropping signal: every warning and error of the
JSON report is in the text. Skips when the shared sample folder is absent.
"""

from __future__ import annotations

import json
import math
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import ROOT as ROOT_DIR  # noqa: E402

ROOT = ROOT_DIR
SAMPLES = Path(os.environ.get("OVERLAP_SAMPLES") or ROOT.parent / "shared" / "reference" / "bridge_yaml_samples")
BUDGET, COLUMNS = 25, 80


def samples() -> list:
    return sorted(SAMPLES.glob("*.yaml")) if SAMPLES.is_dir() else []


def target_flags(path: Path) -> list:
    m = re.search(r"_(\d+)gpu_([a-z0-9]+)_", path.name)
    assert m, f"{path.name}: no <N>gpu_<gpu> in the name"
    return ["--world-size", m.group(1), "--gpu", m.group(2)]


def environment() -> dict:
    env = {k: v for k, v in os.environ.items() if k not in ("GITHUB_ACTIONS", "FORCE_COLOR")}
    env.update(COLUMNS=str(COLUMNS), PYTHONPATH=str(ROOT))
    return env


def overlap(*args) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "overlap_cli", *map(str, args)], capture_output=True, text=True,
                          cwd=ROOT, env=environment(), timeout=120)  # fmt: skip


def rows(text: str) -> int:
    """Terminal rows the text takes at COLUMNS (a long line wraps onto several)."""
    return sum(max(1, math.ceil(len(line) / COLUMNS)) for line in text.splitlines())


@pytest.fixture(params=samples() or [None], ids=lambda p: p.stem if p else "no-samples")
def sample(request):
    if request.param is None:
        pytest.skip(f"the sample dumps are not at {SAMPLES} (set OVERLAP_SAMPLES)")
    return request.param


def actionable(sample) -> list:
    doc = json.loads(overlap("check", sample, *target_flags(sample), "--format", "json").stdout)
    return [f for f in doc["results"][0]["findings"] if f["severity"] in ("warning", "error")]


def test_piped_default_output_fits(sample):
    proc = overlap("check", sample, *target_flags(sample))
    assert proc.returncode in (0, 1), proc.stderr
    assert rows(proc.stdout) <= BUDGET, f"{rows(proc.stdout)} rows at {COLUMNS} columns:\n{proc.stdout}"
    for f in actionable(sample):
        assert f"{sample}:{f['line']}:{f['column']}: {f['code']} {f['severity']}: {f['message']}" in proc.stdout


def test_terminal_default_output_fits(sample):
    pytest.importorskip("pty")
    from ttyrun import run_tty

    code, out, err = run_tty([sys.executable, "-m", "overlap_cli", "check", str(sample), *target_flags(sample)],
                             COLUMNS, cwd=ROOT, env=environment())  # fmt: skip
    assert code in (0, 1), err
    lines = out.splitlines()
    assert len(lines) <= BUDGET, f"{len(lines)} lines on an {COLUMNS}-column terminal:\n{out}"
    assert all(len(line.rstrip()) <= COLUMNS for line in lines)
    flat = " ".join(out.split())  # the terminal wrapped the lines; the words are all there
    for f in actionable(sample):
        assert f"{f['code']} {f['severity']}" in flat and " ".join(f["message"].split()) in flat.replace(
            str(sample), "")  # fmt: skip
