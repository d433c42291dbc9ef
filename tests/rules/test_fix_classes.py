"""Each rule's fix class is data (the ``fix=`` of ``@rule``), its page says it, and its findings obey it.

Classes: ``keeps`` (safe: every effective value stays), ``crash`` (safe (a): removes a launch crash),
``overlap`` (safe (b): makes an overlap the file asked for take effect), ``unsafe``; ``none``.
"""

from __future__ import annotations

import re
import sys
from pathlib import Path

import pytest

from overlap_cli.rules import FIX_CLASSES, SAFE_FIX_CLASSES, all_rules
from overlap_cli.results import USERS_VALUE
from conftest import ROOT as ROOT_DIR  # noqa: E402

ROOT = ROOT_DIR
sys.path.insert(0, str(ROOT / "tests"))
from caselib import CASES, read_header  # noqa: E402

RULES = all_rules()
LABELS = {
    "keeps": "**Safe — every effective value stays**",
    "crash": "**Safe (a) — removes a launch crash**",
    "overlap": "**Safe (b) — makes the requested overlap take effect**",
}


def _fix_section(doc: str) -> str:
    m = re.search(r"^## Fix\n(.*?)(?=^## |\Z)", doc, re.M | re.S)
    return m.group(1) if m else ""


@pytest.mark.parametrize("code", list(RULES))
def test_page_states_the_fix_class(code):
    r = RULES[code]
    text = " ".join(_fix_section(r.doc).split())
    assert "**Safe**" not in text, f"{code}: say which safe class (a), (b) or keeps, not just **Safe**"
    if r.fix == "none":
        assert "**Safe" not in text and "**Unsafe" not in text, f"{code}: offers no fix but its page describes one"
        return
    classes = r.fix.split("/")
    assert set(classes) <= set(FIX_CLASSES), r.fix
    for c in classes:
        if c == "unsafe":
            assert "**Unsafe**" in text or "**unsafe**" in text, f"{code}: class unsafe, page does not say so"
        else:
            assert LABELS[c] in text, f"{code}: class {c}, page lacks {LABELS[c]!r}"
    if r.severity == "info" and "unsafe" not in classes:
        pytest.fail(f"{code}: an info rule offers a safe fix")


CONFIGS = CASES + sorted((ROOT / "examples").glob("*.yaml"))


@pytest.mark.parametrize("path", CONFIGS, ids=lambda p: str(p.relative_to(ROOT)))
def test_findings_obey_their_rule_class(path, run_cli):
    import json

    args = read_header(path)["args"] if path.parent.name == "cases" else []
    _, out, _ = run_cli("check", path, *args, "--format", "json")
    for result in json.loads(out)["results"]:
        for f in result["findings"]:
            fix = f["fix"]
            if fix is None:
                continue
            classes = RULES[f["code"]].fix.split("/")
            if fix["applicability"] == "safe":
                assert set(classes) & set(SAFE_FIX_CLASSES), (f["code"], RULES[f["code"]].fix)
                assert f["severity"] != "info", f"{f['code']}: an info finding offers a safe fix"
                if set(classes) & set(SAFE_FIX_CLASSES) == {"crash"}:
                    assert f["severity"] == "error", f"{f['code']}: a crash fix on a {f['severity']} finding"
            elif USERS_VALUE in fix["message"]:  # a safe fix that would change a value the user wrote
                assert set(classes) & set(SAFE_FIX_CLASSES), (f["code"], RULES[f["code"]].fix)
                assert re.search(r"you wrote \S+.* at \S+", fix["message"]), fix["message"]
            else:
                assert "unsafe" in classes, (f["code"], RULES[f["code"]].fix)
