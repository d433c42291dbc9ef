"""Rule behaviour as data: every file in tests/cases/ is a config with a header saying what to expect.

Header lines (comments at the top of the file):
    # args: --world-size 16 --no-te          extra CLI arguments for `overlap check`
    # expect: TP102 PP201                     codes that must be reported
    # absent: TP101 TP103                     codes that must not be reported
    # effective: model.tp_comm_overlap=false@forced-off ddp.bucket_size=134217728@bridge-auto
    # exit: 1                                 expected exit code (optional)

What `overlap fix` must make of the case is data too: the files NAME.fixed.yaml / NAME.unsafe.fixed.yaml
beside it and the header lines `fix-args:`, `fixed-absent:`, `fixed-no-fix:`, `fixed-effective:` (and
`unsafe-fixed-...`), run by tests/rules/test_fix_rules.py, whose docstring describes them;
tests/rules/test_launch_checks.py reads `quote:` and `order:`.
"""

from __future__ import annotations

import json
import shlex
from pathlib import Path

import pytest

from caselib import CASES, parse_expected, read_header  # noqa: E402,F401


@pytest.mark.parametrize("case", CASES, ids=[c.stem for c in CASES])
def test_case(case: Path, run_cli):
    h = read_header(case)
    assert h["expect"] or h["absent"] or h["effective"], f"{case.name}: header says nothing to check"
    code, out, err = run_cli("check", case, *h["args"], "--format", "json")
    doc = json.loads(out)
    result = doc["results"][0]
    assert result["error"] is None, result["error"]
    codes = [f["code"] for f in result["findings"]]
    for c in h["expect"]:
        assert c in codes, f"{case.name}: expected {c}, got {codes}"
    for c in h["absent"]:
        assert c not in codes, f"{case.name}: {c} must not be reported, got {codes}"
    for token in h["effective"]:
        key, value, source = parse_expected(token)
        got = result["effective"][key]
        assert got["value"] == value, f"{case.name}: {key} = {got['value']!r}, expected {value!r}"
        if source:
            assert got["source"] == source, f"{case.name}: {key} source {got['source']}, expected {source}"
    for f in result["findings"]:
        assert f["line"] is None or f["line"] >= 1
    if h["exit"] is not None:
        assert code == h["exit"], f"{case.name}: exit {code}, expected {h['exit']}"


def test_every_rule_has_a_failing_case():
    from overlap_cli.rules import all_rules

    expected = set()
    for case in CASES:
        expected |= set(read_header(case)["expect"])
    missing = [code for code in all_rules() if code not in expected]
    assert not missing, f"rules without a failing case in tests/cases: {missing}"


def test_every_rule_has_a_passing_case():
    from overlap_cli.rules import all_rules

    absent = set()
    for case in CASES:
        absent |= set(read_header(case)["absent"])
    missing = [code for code in all_rules() if code not in absent]
    assert not missing, f"rules without a passing case (listed under 'absent:') in tests/cases: {missing}"
