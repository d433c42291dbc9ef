"""Every rule's documentation (its docstring, shown by `overlap explain`) has the sections STYLE.md asks
for, and every YAML example in it really triggers that rule.

An example is a ```yaml block. The paragraph right above it may say how it is checked:
- "Checked with `FLAGS`:" as its last line: `overlap check FILE FLAGS` (no such line: no flags);
- "Not checked automatically: ..." as its start: the example needs something a test cannot set up
  (e.g. a variable exported in the shell for --env-from-shell) and is skipped here.
"""

from __future__ import annotations

import json
import re
import shlex

import pytest

from overlap_cli.rules import all_rules

SECTIONS = ("What it does", "Why it matters", "Example", "Fix")
CHECKED_WITH = re.compile(r"Checked with `([^`]*)`:")
NOT_CHECKED = "Not checked automatically"


def _section(doc: str, name: str) -> str:
    """The text of ``## name`` up to the next ``## `` heading (outside code blocks), or ""."""
    out, inside, fenced = [], False, False
    for line in doc.splitlines():
        if line.lstrip().startswith("```"):
            fenced = not fenced
        if not fenced and line.startswith("## "):
            inside = line[3:].strip() == name
            continue
        if inside:
            out.append(line)
    return "\n".join(out).strip()


def yaml_examples(doc: str) -> list:
    """[(lead paragraph lines, yaml text)] for every ```yaml block of a rule doc."""
    lines = doc.splitlines()
    found, i = [], 0
    while i < len(lines):
        if lines[i].strip() == "```yaml":
            end = next(j for j in range(i + 1, len(lines)) if lines[j].strip() == "```")
            lead, k = [], i - 1
            while k >= 0 and lines[k].strip() and not lines[k].startswith("#") and not lines[k].lstrip().startswith("```"):
                lead.insert(0, lines[k].strip())
                k -= 1
            found.append((lead, "\n".join(lines[i + 1 : end]) + "\n"))
            i = end
        i += 1
    return found


def how_checked(lead: list):
    """None when the example is marked as not checked automatically, else the list of CLI flags."""
    if " ".join(lead).startswith(NOT_CHECKED):
        return None
    if lead:
        m = CHECKED_WITH.fullmatch(lead[-1])
        if m:
            return shlex.split(m.group(1))
    return []


RULES = all_rules()
EXAMPLES = [
    pytest.param(code, lead, text, id=f"{code}-{n}")
    for code, r in RULES.items()
    for n, (lead, text) in enumerate(yaml_examples(r.doc), 1)
]


@pytest.mark.parametrize("code", list(RULES))
def test_doc_has_every_section(code):
    doc = RULES[code].doc
    for name in SECTIONS:
        assert re.search(rf"^## {name}$", doc, re.M), f"{code}: the doc has no '## {name}' section"
        assert _section(doc, name), f"{code}: the '## {name}' section is empty"
    assert "```yaml" in _section(doc, "Example"), f"{code}: the Example section has no ```yaml block"


@pytest.mark.parametrize("code", list(RULES))
def test_fix_section_matches_the_rule(code):
    """The Fix section says what the rule offers: "None offered" for fix none, else **Safe** / **Unsafe**
    for each applicability the rule declares (and not the other one)."""
    rule = RULES[code]
    text = _section(rule.doc, "Fix")
    lower = text.lower()
    if rule.fix == "none":
        assert text.startswith("None offered"), f"{code}: fix none, but the Fix section does not say 'None offered'"
        assert "**safe**" not in lower and "**unsafe**" not in lower, f"{code}: fix none, but the doc names a fix safety"
        return
    kinds = set(rule.fix.split("/"))
    for kind in ("safe", "unsafe"):
        named = f"**{kind}**" in lower
        assert named == (kind in kinds), f"{code}: fix {rule.fix}, but the Fix section {'names' if named else 'lacks'} **{kind}**"


def test_every_checked_with_line_introduces_an_example():
    """A "Checked with" line that is not directly above a ```yaml block would silently check nothing."""
    for code, r in RULES.items():
        lines = r.doc.splitlines()
        for i, line in enumerate(lines):
            if CHECKED_WITH.fullmatch(line.strip()):
                assert i + 1 < len(lines) and lines[i + 1].strip() == "```yaml", f"{code}: '{line.strip()}' is not followed by a yaml block"


@pytest.mark.parametrize("code, lead, text", EXAMPLES)
def test_example_triggers_its_rule(run_cli, tmp_path, code, lead, text):
    flags = how_checked(lead)
    if flags is None:
        pytest.skip(f"{code}: example marked '{NOT_CHECKED}'")
    path = tmp_path / f"{code.lower()}_example.yaml"
    path.write_text(text, encoding="utf-8")
    exit_code, out, err = run_cli("check", path, "--format", "json", *flags)
    assert exit_code in (0, 1), f"{code}: the example is not a readable config (exit {exit_code}): {err}"
    findings = json.loads(out)["results"][0]["findings"]
    codes = sorted({f["code"] for f in findings})
    assert code in codes, f"{code}: its own example (checked with {flags or 'no flags'}) reports only {codes}"


def test_not_checked_examples_are_rare():
    """Skipping is for examples that cannot be self-contained; everything else must be checked."""
    skipped = [p.values[0] for p in EXAMPLES if how_checked(p.values[1]) is None]
    assert set(skipped) <= {"ENV510"}, f"examples not checked automatically: {skipped}"
