"""The overlap-fix pre-commit hook fails a commit exactly where the overlap-check hook does.

Both hooks' entries are read from .pre-commit-hooks.yaml and run (in-process) on a copy of every example
and rule case with that file's target flags, at both thresholds a user can give both hooks. pre-commit
fails a hook that exits non-zero or edits a file. Where the check hook passes (exit 0), the fix hook
leaves the file byte for byte as it was and exits 0; where the check hook fails, the fix hook fails the
commit too (it edits the file, or exits non-zero).
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


def _hook_args(path: Path) -> list:
    """The target flags of the case header's `args:`: not a shell's variables (a pre-commit hook does not
    see them), not a report option of check alone."""
    return [a for a in read_header(path)["args"] if a not in ("--env-from-shell", "--show-info")] if path in CASES else []


def _has_dotlist(args: list) -> bool:
    return any(not a.startswith("-") and ("=" in a or a.startswith("~")) for a in args)  # key=value, +key=, ~key


# A case that needs dotlist overrides is no file a hook can run on: fix refuses overrides.
HOOK_FILES = [p for p in FILES if not _has_dotlist(_hook_args(p))]


def test_both_hooks_run_overlap():
    assert HOOKS["overlap-check"][:2] == ["overlap", "check"]
    assert HOOKS["overlap-fix"][:3] == ["overlap", "fix", "--write"]


@pytest.mark.parametrize("threshold", [[], ["--severity-threshold", "error"]], ids=["default", "error"])
@pytest.mark.parametrize("path", HOOK_FILES, ids=lambda p: str(p.relative_to(ROOT)))
def test_fix_hook_agrees_with_the_check_hook(path, threshold, run_cli, tmp_path):
    args = _hook_args(path)
    dst = tmp_path / path.name
    shutil.copyfile(path, dst)
    code, _, _ = run_cli(*HOOKS["overlap-check"][1:], *args, *threshold, dst)
    before = dst.read_bytes()
    fcode, out, err = run_cli(*HOOKS["overlap-fix"][1:], *args, *threshold, dst)
    edited = dst.read_bytes() != before
    if code == 0:
        assert not edited, f"fix hook edited a file the check hook passes:\n{out}{err}"
        assert fcode == 0, out + err
    else:
        assert edited or fcode != 0, f"check hook exits {code}, fix hook passes the commit:\n{out}{err}"
