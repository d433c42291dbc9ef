"""`overlap fix` over every shipped example, Bridge dump and rule case.

- examples/fixed/ holds the expected fixed form of each example that has a fix (`NAME.yaml`: safe
  fixes; `NAME.unsafe.yaml`: with --unsafe-fixes, when that differs). The fix output must match it byte
  for byte. Regenerate after a deliberate change of a rule's fix:
      python tests/fix/test_fix_examples.py --regenerate
- fix is idempotent: a second run changes nothing.
- `overlap check` after `overlap fix --write` reports no finding that has a safe fix.
- Outside the keys the fixes edit, the original lines survive byte for byte.
"""

from __future__ import annotations

import json
import shutil
import sys
from pathlib import Path

import pytest
from conftest import ROOT as ROOT_DIR  # noqa: E402

ROOT = ROOT_DIR
EXAMPLES = ROOT / "examples"
FIXED = EXAMPLES / "fixed"
CASES = ROOT / "tests" / "cases"

sys.path.insert(0, str(ROOT / "tests"))
from caselib import CASES as CASES_LIST, fix_case, fixed_path, read_header  # noqa: E402

EXAMPLE_FILES = sorted(EXAMPLES.glob("*.yaml")) + sorted((EXAMPLES / "bridge").glob("*.yaml"))
CASE_FILES = CASES_LIST
# Bridge configs; launch scripts hold flags, not keys (tests/fix/test_fix_script.py checks their edited lines).
YAML_CASE_FILES = [c for c in CASES_LIST if "megatron_lm" not in c.parts]


def _rel(path: Path) -> str:
    return str(path.relative_to(EXAMPLES))


def _fixed_name(path: Path, unsafe: bool) -> Path:
    rel = path.relative_to(EXAMPLES)
    return FIXED / rel.parent / (rel.stem + (".unsafe" if unsafe else "") + rel.suffix)


def _case_args(path: Path) -> list:
    return read_header(path)["args"] if path.parent == CASES else []


def _fix_copy(run_cli, src: Path, tmp_path: Path, *flags) -> tuple[int, str, Path]:
    dst = tmp_path / src.name
    shutil.copyfile(src, dst)  # not the mode: the Bridge dumps are kept read-only in the repo
    code, out, err = run_cli("fix", dst, "--write", *flags, *_case_args(src))
    return code, out + err, dst


def _in_process_fix(path: Path, unsafe: bool) -> str:
    """The fixed text of ``path`` (what `fix --write` would write), computed without writing."""
    from overlap_cli.cli.check import target_from_options
    from overlap_cli.cli.options import TARGET, options
    from overlap_cli.fix.loop import fix_file

    target = target_from_options(options(TARGET), str(path))
    return fix_file(str(path), target, unsafe=unsafe).fixed


# ----------------------------------------------------------------------------------------------


@pytest.mark.parametrize("unsafe", [False, True], ids=["safe", "unsafe"])
@pytest.mark.parametrize("example", EXAMPLE_FILES, ids=_rel)
def test_fix_output_matches_examples_fixed(example, unsafe, run_cli, tmp_path):
    """Every example with a fix has its expected fixed form, and `fix --write` produces exactly it."""
    original = example.read_bytes()
    flags = ["--unsafe-fixes"] if unsafe else []
    code, output, dst = _fix_copy(run_cli, example, tmp_path, *flags)
    if example.name == "invalid_parallel_size.yaml":
        assert code == 2 and dst.read_bytes() == original, output  # never edited
        return
    expected = _fixed_name(example, unsafe)
    got = dst.read_bytes()
    if unsafe and not expected.exists():
        expected = _fixed_name(example, False)  # --unsafe-fixes changes nothing more here
    if got == original:
        assert not expected.exists(), f"{expected} is stale: fix no longer changes {example.name}"
        return
    assert expected.exists(), f"{example.name} has a fix but no {expected.relative_to(ROOT)} (see module doc)"
    assert got == expected.read_bytes(), f"fix output differs from {expected.relative_to(ROOT)}"


def test_examples_fixed_has_no_orphans():
    names = {_fixed_name(e, u) for e in EXAMPLE_FILES for u in (False, True)}
    orphans = [p for p in FIXED.rglob("*.yaml") if p not in names]
    assert not orphans, orphans


@pytest.mark.parametrize("unsafe", [False, True], ids=["safe", "unsafe"])
@pytest.mark.parametrize("path", EXAMPLE_FILES + CASE_FILES, ids=lambda p: str(p.relative_to(ROOT)))
def test_fix_twice_is_a_no_op(path, unsafe, run_cli, tmp_path):
    flags = ["--unsafe-fixes"] if unsafe else []
    code, output, dst = _fix_copy(run_cli, path, tmp_path, *flags)
    if code == 2:
        pytest.skip("not a checkable config")  # invalid_parallel_size.yaml: tested above
    first = dst.read_bytes()
    code2, out2, err2 = run_cli("fix", dst, "--write", *flags, *_case_args(path))
    assert dst.read_bytes() == first, "second fix --write changed the file"
    assert code2 == code
    code3, out3, _ = run_cli("fix", dst, "--diff", *flags, *_case_args(path))
    assert (code3, out3) == (0, ""), out3


@pytest.mark.parametrize("path", EXAMPLE_FILES + CASE_FILES, ids=lambda p: str(p.relative_to(ROOT)))
def test_check_after_fix_has_no_safe_fix_left(path, run_cli, tmp_path):
    code, output, dst = _fix_copy(run_cli, path, tmp_path)
    if code == 2:
        pytest.skip("not a checkable config")
    _, out, _ = run_cli("check", dst, "--format", "json", *_case_args(path))
    findings = json.loads(out)["results"][0]["findings"]
    left = [f["code"] for f in findings if f["fix"] and f["fix"]["applicability"] == "safe"]
    assert not left, f"safe fixes still offered after fix --write: {left}\n{output}"


@pytest.mark.parametrize("path", EXAMPLE_FILES + CASE_FILES, ids=lambda p: str(p.relative_to(ROOT)))
def test_unsafe_fixes_leave_no_fix_behind(path, run_cli, tmp_path):
    """With --unsafe-fixes every fix of a finding at or above the default threshold (warning) is applied
    (none is refused or left pending); info findings are never fixed at that threshold."""
    code, output, dst = _fix_copy(run_cli, path, tmp_path, "--unsafe-fixes")
    if code == 2:
        pytest.skip("not a checkable config")
    _, out, _ = run_cli("check", dst, "--format", "json", *_case_args(path))
    findings = json.loads(out)["results"][0]["findings"]
    left = [f["code"] for f in findings if f["fix"] and f["severity"] != "info"]
    assert not left, f"fixes still offered after fix --write --unsafe-fixes: {left}\n{output}"


def _expected_fix_output(path: Path, unsafe: bool):
    """The file holding what `overlap fix --write` makes of ``path`` (examples/fixed/ for an example, the
    NAME.fixed.yaml beside a case), or None when the fix leaves it byte for byte as it is. Which files
    exist is checked against the real fix by test_fix_output_matches_examples_fixed and
    tests/rules/test_fix_rules.py."""
    if path.parent == EXAMPLES or path.parent.parent == EXAMPLES:
        candidates = [_fixed_name(path, True), _fixed_name(path, False)] if unsafe else [_fixed_name(path, False)]
    else:
        candidates = [fixed_path(path, True), fixed_path(path, False)] if unsafe else [fixed_path(path, False)]
    return next((c for c in candidates if c.exists()), None)


# Only the files a fix changes: on a file it leaves as it is there is no replaced line to account for.
EDITED = [
    pytest.param(path, unsafe, id=f"{path.relative_to(ROOT)}-{'unsafe' if unsafe else 'safe'}")
    for path in EXAMPLE_FILES + YAML_CASE_FILES
    for unsafe in (False, True)
    if _expected_fix_output(path, unsafe) is not None
]


@pytest.mark.parametrize(("path", "unsafe"), EDITED)
def test_only_edited_keys_change(path, unsafe):
    """Every original line that the fix replaced or deleted belongs to a key that an applied edit names."""
    import difflib

    from overlap_cli.fix import text as fixtext
    from overlap_cli.fix.tree import split_key

    out = fix_case(path, unsafe, None if path in CASES_LIST else [])
    assert out.error is None, out.error
    assert out.fixed == _expected_fix_output(path, unsafe).read_text(encoding="utf-8")
    original = out.original
    allowed: set = set()
    for a in out.applied:
        for e in a.edits:
            p = split_key(e.key)
            for k in range(1, len(p) + 1):  # the key itself, or the scalar/null it replaced on the way
                span = fixtext.key_span(original, p[:k])
                if span is not None and (k == len(p) or len(span) == 1):
                    allowed.update(span)
            parent = fixtext.key_span(original, p[:-1]) if e.op == "remove" and len(p) > 1 else None
            if parent is not None:
                allowed.add(parent[0])  # a section emptied by the removal is written `section: {}`
    a_lines, b_lines = original.splitlines(True), out.fixed.splitlines(True)
    for tag, i1, i2, _j1, _j2 in difflib.SequenceMatcher(None, a_lines, b_lines, autojunk=False).get_opcodes():
        if tag in ("replace", "delete"):
            stray = [i + 1 for i in range(i1, i2) if i not in allowed]
            assert not stray, f"lines {stray} changed but no edit names them:\n" + "".join(a_lines[i - 1] for i in stray)


# ----------------------------------------------------------------------------------------------


def regenerate() -> None:
    """Rewrite examples/fixed/ from the current rules (run after a deliberate change of a fix)."""
    if FIXED.exists():
        for p in FIXED.rglob("*.yaml"):
            p.unlink()
    for example in EXAMPLE_FILES:
        original = example.read_text(encoding="utf-8")
        safe_text = _in_process_fix(example, False)
        unsafe_text = _in_process_fix(example, True)
        if safe_text and safe_text != original:
            _write(_fixed_name(example, False), safe_text)
        if unsafe_text and unsafe_text != (safe_text or original):
            _write(_fixed_name(example, True), unsafe_text)
        if safe_text == original and unsafe_text and unsafe_text != original:
            pass  # only the .unsafe form exists; the safe run must leave the file as it is


def _write(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(text.encode("utf-8"))
    print(f"wrote {path.relative_to(ROOT)}")


if __name__ == "__main__":
    if sys.argv[1:] == ["--regenerate"]:
        sys.path.insert(0, str(ROOT))
        regenerate()
    else:
        print(__doc__)
