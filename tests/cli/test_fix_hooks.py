"""The overlap-fix pre-commit hook never fails a commit that the overlap-check hook passes.

Both hooks' entries are read from .pre-commit-hooks.yaml and run (in-process) on a copy of every example
and rule case with that file's target flags, at both thresholds a user can give both hooks: when the
check hook passes (exit 0), the fix hook leaves the file byte for byte as it was and exits 0.
"""

from __future__ import annotations

import shlex
import shutil
import sys
from pathlib import Path

import pytest
import yaml
from conftest import ROOT as ROOT_DIR  # noqa: E402

ROOT = ROOT_DIR
sys.path.insert(0, str(ROOT / "tests"))
from caselib import CASES, read_header  # noqa: E402

HOOKS = {h["id"]: shlex.split(h["entry"]) for h in yaml.safe_load((ROOT / ".pre-commit-hooks.yaml").read_text())}
FILES = CASES + sorted((ROOT / "examples").glob("*.yaml"))


@pytest.mark.parametrize("threshold", [[], ["--severity-threshold", "error"]], ids=["default", "error"])
@pytest.mark.parametrize("path", FILES, ids=lambda p: str(p.relative_to(ROOT)))
def test_fix_hook_passes_where_the_check_hook_passes(path, threshold, run_cli, tmp_path):
    args = [a for a in read_header(path)["args"] if a != "--env-from-shell"] if path.parent.name == "cases" else []
    if any(not a.startswith("-") and ("=" in a or a.startswith("~")) for a in args):  # key=value, +key=, ~key
        pytest.skip("the case needs dotlist overrides, which fix refuses")
    dst = tmp_path / path.name
    shutil.copyfile(path, dst)
    check = HOOKS["overlap-check"]
    fix = HOOKS["overlap-fix"]
    assert check[0] == fix[0] == "overlap"
    code, _, _ = run_cli(*check[1:], *args, *threshold, dst)
    if code != 0:
        return  # the check hook fails the commit already
    before = dst.read_bytes()
    fcode, out, err = run_cli(*fix[1:], *args, *threshold, dst)
    assert dst.read_bytes() == before, f"fix hook edited a file the check hook passes:\n{out}{err}"
    assert fcode == 0, out + err
