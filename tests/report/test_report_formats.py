"""Every output format over examples/: a snapshot each, plus the properties each format promises.

Snapshots live in tests/snapshots/. After an intended change of output, rewrite them with

    OVERLAP_UPDATE_SNAPSHOTS=1 python -m pytest tests/report/test_report_formats.py

and review the diff. Paths are relative to the repository root (the test runs from there); anything
absolute is replaced by <ROOT>. The SARIF snapshot lists rule ids only: rule texts are checked against
the rule docs below, so editing a doc does not churn the snapshot.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
from conftest import ROOT as ROOT_DIR  # noqa: E402

ROOT = ROOT_DIR
SNAPSHOTS = ROOT / "tests" / "snapshots"
SCHEMA = ROOT / "tests" / "data" / "sarif-2.1.0.json"
FORMATS = ("text", "concise", "json", "sarif", "github")
UPDATE = os.environ.get("OVERLAP_UPDATE_SNAPSHOTS") == "1"


@pytest.fixture
def at_root(monkeypatch):
    monkeypatch.chdir(ROOT)
    monkeypatch.delenv("GITHUB_ACTIONS", raising=False)
    return ROOT


def _normalise(fmt: str, text: str) -> str:
    if fmt == "sarif":
        doc = json.loads(text)
        driver = doc["runs"][0]["tool"]["driver"]
        driver["rules"] = [r["id"] for r in driver["rules"]]
        driver["version"] = driver["semanticVersion"] = "<version>"
        text = json.dumps(doc, indent=2, ensure_ascii=False) + "\n"
    return text.replace(ROOT.as_uri(), "file://<ROOT>").replace(str(ROOT), "<ROOT>")


@pytest.mark.parametrize("fmt", FORMATS)
def test_snapshot(fmt, run_cli, at_root):
    code, out, err = run_cli("check", "examples", "--format", fmt)
    got = f"exit: {code}\n--- stdout ---\n{_normalise(fmt, out)}--- stderr ---\n{_normalise('text', err)}"
    path = SNAPSHOTS / f"check_examples.{fmt}.txt"
    if UPDATE or not path.exists():
        SNAPSHOTS.mkdir(exist_ok=True)
        path.write_text(got, encoding="utf-8")
        if not UPDATE:
            pytest.fail(f"{path.name} did not exist and was written; review it and run again")
    want = path.read_text(encoding="utf-8")
    assert got == want, (
        f"`overlap check examples --format {fmt}` differs from tests/snapshots/{path.name}; if the change is "
        "intended: OVERLAP_UPDATE_SNAPSHOTS=1 python -m pytest tests/report/test_report_formats.py"
    )


def _sarif(run_cli, *args):
    code, out, _ = run_cli("check", *args, "--format", "sarif")
    return code, json.loads(out)


def test_sarif_validates_against_the_oasis_schema(run_cli, at_root, tmp_path):
    import jsonschema

    schema = json.loads(SCHEMA.read_text(encoding="utf-8"))
    validator = jsonschema.Draft4Validator(schema, format_checker=jsonschema.FormatChecker())
    code, doc = _sarif(run_cli, "examples")
    errors = sorted(validator.iter_errors(doc), key=lambda e: list(e.path))
    assert not errors, "\n".join(f"{list(e.path)}: {e.message}" for e in errors[:10])
    assert code == 2  # examples/ holds one deliberately invalid file
    run = doc["runs"][0]
    assert run["results"] and run["invocations"][0]["executionSuccessful"] is False
    # A schema that accepts anything would pass the above: it must reject a broken document.
    broken = json.loads(json.dumps(doc))
    broken["runs"][0]["results"][0]["level"] = "fatal"
    assert list(validator.iter_errors(broken))


def test_sarif_results_point_at_rules_and_lines(run_cli, at_root):
    from overlap_cli.rules import all_rules

    _, doc = _sarif(run_cli, "examples/tp_overlap_without_sp.yaml")
    run = doc["runs"][0]
    rules = run["tool"]["driver"]["rules"]
    assert [r["id"] for r in rules] == list(all_rules())
    for descriptor in rules:
        rule = all_rules()[descriptor["id"]]
        assert descriptor["shortDescription"]["text"] == rule.title
        assert descriptor["help"]["markdown"] == rule.doc
        assert "What it does" in descriptor["help"]["text"] and "## What" not in descriptor["help"]["text"]
        assert descriptor["fullDescription"]["text"] and "##" not in descriptor["fullDescription"]["text"]
    tp102 = next(r for r in run["results"] if r["ruleId"] == "TP102")
    assert rules[tp102["ruleIndex"]]["id"] == "TP102"
    assert tp102["level"] == "warning"
    loc = tp102["locations"][0]["physicalLocation"]
    assert loc["artifactLocation"] == {"uri": "examples/tp_overlap_without_sp.yaml", "uriBaseId": "%SRCROOT%"}
    assert loc["region"] == {"startLine": 8, "startColumn": 3}  # `sequence_parallel: false`
    levels = {r["ruleId"]: r["level"] for r in run["results"]}
    assert levels.get("DP301") == "note"  # info -> note


def test_github_annotations(run_cli, at_root):
    code, out, _ = run_cli("check", "examples/pp_without_vpp.yaml", "--format", "github")
    lines = out.splitlines()
    assert code == 1
    assert any(l.startswith("::error file=examples/pp_without_vpp.yaml,line=17,col=3,title=PP202::") for l in lines)
    assert any(l.startswith("::notice file=examples/pp_without_vpp.yaml,") and "title=PP201" in l for l in lines)


def test_github_escaping():
    from overlap_cli.report.github import annotation

    line = annotation("warning", "a,b:c.yaml", 3, 1, "TP102", "50% done\nnext")
    assert line == "::warning file=a%2Cb%3Ac.yaml,line=3,col=1,title=TP102::50%25 done%0Anext"


def test_auto_is_github_under_actions_else_text(run_cli, at_root, monkeypatch):
    code, out, _ = run_cli("check", "examples/tp_overlap_without_sp.yaml", "--format", "auto")
    assert "TP102 warning" in out and "::" not in out
    monkeypatch.setenv("GITHUB_ACTIONS", "true")
    code, out, _ = run_cli("check", "examples/tp_overlap_without_sp.yaml", "--format", "auto")
    assert "\n::warning file=examples/tp_overlap_without_sp.yaml,line=8,col=3,title=TP102::" in "\n" + out


def test_concise_marks_safe_fixes(run_cli, at_root):
    # The debugging run's own sequence_parallel: false under a recipe that requests TP overlap: the safe fix
    # turns the recipe's request off (TP102), so the finding is marked.
    _, out, _ = run_cli("check", "examples/recipes/llama3_70b_debug_run.yaml", "--format", "concise", "--show-info")
    lines = out.splitlines()
    assert any(l.startswith("examples/recipes/llama3_70b_debug_run.yaml:7:3: TP102 [*] warning: ") for l in lines)
    assert any(": DP301 info: " in l for l in lines)  # no fix, no mark
    assert "fixable with `overlap fix --write`" in out
    # Where the user wrote both the request and sequence_parallel: false, the fix is not safe: no mark.
    _, out, _ = run_cli("check", "examples/tp_overlap_without_sp.yaml", "--format", "concise")
    assert any(l.startswith("examples/tp_overlap_without_sp.yaml:8:3: TP102 warning: ") for l in out.splitlines()), out
    assert "effective overlap settings" not in out
    assert "fixable with `overlap fix --write`" not in out


def _finding_lines(text: str) -> list:
    """The finding lines of a text or concise report, without concise's ``[*]`` mark."""
    import re

    finding = re.compile(r"^.+?: [A-Z]+\d+(?: \[\*\])? (error|warning|info): ")  # report.common.finding_line
    return [line.replace(" [*] ", " ", 1) for line in text.splitlines() if finding.match(line)]


@pytest.mark.parametrize("show_info", [[], ["--show-info"]])
def test_concise_shows_what_text_shows(run_cli, at_root, show_info):
    """One selection, two renderings: the pre-commit hook's concise output lists the findings a terminal's text
    output lists, in the same order (info findings only with --show-info, in both)."""
    code_t, text, _ = run_cli("check", "examples", *show_info)
    code_c, concise, _ = run_cli("check", "examples", "--format", "concise", *show_info)
    shown = _finding_lines(text)
    assert shown and _finding_lines(concise) == shown and code_c == code_t
    assert any(" info: " in line for line in shown) == bool(show_info)
    summary = concise.splitlines()[-2 if "[*]" in concise.splitlines()[-1] else -1]
    assert summary.startswith(f"Found {len(shown)} finding(s) in ")
    assert ("not shown: " in summary and "info finding(s) (--show-info)" in summary) == (not show_info)


def test_summary_by_code_across_files(run_cli, at_root):
    code, out, _ = run_cli("check", "examples/tp_overlap_without_sp.yaml", "examples/pp_without_vpp.yaml", "--format", "json")
    summary = json.loads(out)["summary"]
    assert summary["by_code"]["DP301"] == 2 and summary["by_code"]["TP102"] == 1
    _, text, _ = run_cli("check", "examples/tp_overlap_without_sp.yaml", "examples/pp_without_vpp.yaml", "--statistics", "--show-info")
    rows = [line.split("\t") for line in text.splitlines() if "\t" in line]
    counts = {code.strip(): int(n) for n, code, _title in rows}
    assert counts == summary["by_code"]
