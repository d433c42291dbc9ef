"""The rule cases of tests/cases/: each a config whose header comments say what to expect (see
tests/rules/test_cases.py for the header keys). Shared by the tests that run the cases."""

from __future__ import annotations

import json
import shlex
from pathlib import Path

from conftest import ROOT

CASES = sorted((ROOT / "tests" / "cases").glob("*.yaml"))


def read_header(path: Path) -> dict:
    header: dict = {"args": [], "expect": [], "absent": [], "effective": [], "exit": None}
    for line in path.read_text(encoding="utf-8").splitlines():
        if not line.startswith("#"):
            break
        body = line[1:].strip()
        key, sep, value = body.partition(":")
        if not sep or key not in header:
            continue
        if key == "args":
            header["args"] += shlex.split(value)
        elif key == "exit":
            header["exit"] = int(value)
        else:
            header[key] += value.split()
    return header


def parse_expected(token: str):
    key, _, rest = token.partition("=")
    value, _, source = rest.partition("@")
    return key, json.loads(value), source or None
