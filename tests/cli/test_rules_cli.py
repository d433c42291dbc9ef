"""`overlap rules`, `overlap explain`, and docs/rules.md generated from the rule docstrings."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from conftest import ROOT as ROOT_DIR  # noqa: E402

ROOT = ROOT_DIR


def all_codes():
    from overlap_cli.rules import all_rules

    return list(all_rules())


def test_rules_json_lists_every_rule(run_cli):
    code, out, _ = run_cli("rules", "--format", "json")
    assert code == 0
    doc = json.loads(out)
    assert doc["version"] == 1
    doc = doc["rules"]
    assert [r["code"] for r in doc] == all_codes()
    for r in doc:
        assert r["severity"] in ("info", "warning", "error")
        from overlap_cli.rules import FIX_CLASSES

        parts = r["fix"].split("/")
        assert r["fix"] == "none" or (set(parts) <= set(FIX_CLASSES) and parts == sorted(parts, key=FIX_CLASSES.index))
        assert r["family"] and r["family_name"] and r["title"] and r["name"]
        assert r["code"].startswith(r["family"])


def test_rules_text(run_cli):
    code, out, _ = run_cli("rules")
    lines = out.splitlines()
    assert code == 0 and len(lines) == len(all_codes()) + 1
    assert lines[0].split()[0] == all_codes()[0]


@pytest.mark.parametrize("code", all_codes())
def test_explain_every_code(run_cli, code):
    from overlap_cli.rules import get_rule

    rule = get_rule(code)
    exit_code, out, err = run_cli("explain", code.lower())
    assert exit_code == 0, err
    assert out.startswith(f"{code} ({rule.name})")
    # STYLE.md asks for What it does / Why it matters / Example / Fix (tests/rules/test_rule_docs.py checks their
    # content); here: `overlap explain` prints all of them.
    for section in ("What it does", "Why it matters", "Example", "Fix"):
        assert f"## {section}" in out, f"{code}: the doc has no '{section}' section"
    assert f"fix: {rule.fix}" in out and f"severity: {rule.severity}" in out


def test_explain_by_name(run_cli):
    code, out, _ = run_cli("explain", "tp-overlap-off-sequence-parallel")
    assert code == 0 and out.startswith("TP102 ")


@pytest.mark.parametrize("token, near", [("TP1O2", "TP102"), ("pp202x", "PP202"), ("TP", "TP101"), ("ZZ999", None)])
def test_explain_unknown_code(run_cli, token, near):
    code, out, err = run_cli("explain", token)
    assert code == 2 and out == ""
    assert f"unknown rule code '{token}'" in err and "Traceback" not in err
    if near:
        assert "closest:" in err and near in err
    else:
        assert "overlap rules" in err


def test_docs_rules_md_is_current():
    from overlap_cli.cli.rules import REGENERATE, rules_markdown

    path = ROOT / "docs" / "rules.md"
    on_disk = path.read_text(encoding="utf-8") if path.exists() else ""
    assert on_disk == rules_markdown(), f"docs/rules.md is stale; regenerate it with: {REGENERATE}"


def test_docs_rules_md_has_every_code():
    text = (ROOT / "docs" / "rules.md").read_text(encoding="utf-8")
    for code in all_codes():
        assert f"### {code}\n" in text and f"[{code}](#{code.lower()})" in text
