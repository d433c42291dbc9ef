"""The rule cases of tests/cases/: each a config whose header comments say what to expect (see
tests/rules/test_cases.py for the header keys), and beside it the expected output of `overlap fix` on it
(`NAME.fixed.yaml`, `NAME.unsafe.fixed.yaml`; see tests/rules/test_fix_rules.py). Shared by the tests
that run the cases."""

from __future__ import annotations

import json
import shlex
from pathlib import Path

from conftest import ROOT

CASES_DIR = ROOT / "tests" / "cases"
FIXED_SUFFIX = ".fixed.yaml"
# Megatron-LM launches: shell scripts and functional-test YAMLs, with the same headers (NAME.fixed.sh beside
# a NAME.sh).
LM_CASES_DIR = CASES_DIR / "megatron_lm"
# The cases themselves; the expected fix outputs beside them are no cases (their header is the case's).
CASES = sorted(p for p in CASES_DIR.glob("*.yaml") if not p.name.endswith(FIXED_SUFFIX))
CASES += sorted(p for p in LM_CASES_DIR.glob("*") if p.suffix in (".sh", ".yaml") and ".fixed." not in p.name)

_LISTS = ("expect", "absent", "effective")
_LISTS += tuple(f"{form}-{key}" for form in ("fixed", "unsafe-fixed") for key in ("absent", "no-fix", "effective"))


def read_header(path: Path) -> dict:
    header: dict = {"args": [], "fix-args": [], "exit": None, **{key: [] for key in _LISTS}}
    for line in path.read_text(encoding="utf-8").splitlines():
        if not line.startswith("#"):
            break
        body = line[1:].strip()
        key, sep, value = body.partition(":")
        if not sep or key not in header:
            continue
        if key in ("args", "fix-args"):
            header[key] += shlex.split(value)
        elif key == "exit":
            header["exit"] = int(value)
        else:
            header[key] += value.split()
    return header


def fixed_path(case: Path, unsafe: bool) -> Path:
    """Where the expected `overlap fix` output of ``case`` lives (with --unsafe-fixes or without)."""
    return case.with_name(case.stem + (".unsafe" if unsafe else "") + ".fixed" + case.suffix)


def parse_expected(token: str):
    key, _, rest = token.partition("=")
    value, _, source = rest.partition("@")
    return key, json.loads(value), source or None
