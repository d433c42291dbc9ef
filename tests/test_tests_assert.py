"""Every parametrized test of tests/ asserts on each instance: no `return` is reached before an assert
that depends on the test's inputs (its parameters and fixtures, or what was computed from them).

An instance that cannot check anything is left out of the parametrization (computed from the case data)
or calls pytest.skip with its reason; a bare `return` would count it as passed. The walk is static (ast):
an assert or pytest.skip/fail/raises written directly in the block of the `return`, or in a block around
it, before it, counts; one inside an earlier `if` does not (it may not have run).
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

TESTS = Path(__file__).resolve().parent
_STOPS = ("pytest.fail", "pytest.skip", "pytest.xfail")


def _names(node) -> set:
    return {n.id for n in ast.walk(node) if isinstance(n, ast.Name)}


def _inputs(fn: ast.FunctionDef) -> set:
    """The parameters and every local name assigned from one of them (transitively)."""
    known = {a.arg for a in fn.args.args}
    grew = True
    while grew:
        grew = False
        for n in ast.walk(fn):
            pairs = []
            if isinstance(n, ast.Assign):
                pairs = [(t, n.value) for t in n.targets]
            elif isinstance(n, (ast.AugAssign, ast.AnnAssign)) and n.value is not None:
                pairs = [(n.target, n.value)]
            elif isinstance(n, (ast.For, ast.comprehension)):
                pairs = [(n.target, n.iter)]
            elif isinstance(n, ast.withitem) and n.optional_vars is not None:
                pairs = [(n.optional_vars, n.context_expr)]
            for target, value in pairs:
                new = _names(target) - known if _names(value) & known else set()
                if new:
                    known |= new
                    grew = True
    return known


def _checks(stmts, inputs: set) -> bool:
    for s in stmts:
        if isinstance(s, ast.Assert) and _names(s.test) & inputs:
            return True
        if isinstance(s, ast.Expr) and isinstance(s.value, ast.Call) and ast.unparse(s.value.func) in _STOPS:
            return True
        if isinstance(s, ast.With) and (
            any(ast.unparse(i.context_expr).startswith("pytest.raises") for i in s.items) or _checks(s.body, inputs)
        ):
            return True
    return False


def _early_returns(stmts, checked: bool, inputs: set, out: list) -> None:
    before: list = []
    for s in stmts:
        ok = checked or _checks(before, inputs)
        if isinstance(s, ast.Return):
            if not ok:
                out.append(s.lineno)
        elif not isinstance(s, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            for field in ("body", "orelse", "finalbody"):
                block = getattr(s, field, None)
                if isinstance(block, list) and block:
                    _early_returns(block, ok, inputs, out)
            for handler in getattr(s, "handlers", None) or []:
                _early_returns(handler.body, ok, inputs, out)
        before.append(s)


def unchecked_returns(source: str, name: str = "<test>") -> list:
    """[(test name, line)] of each `return` of a parametrized test reached with no input-dependent check."""
    found = []
    for fn in ast.walk(ast.parse(source, name)):
        if not (isinstance(fn, ast.FunctionDef) and fn.name.startswith("test")):
            continue
        if not any("parametrize" in ast.unparse(d) for d in fn.decorator_list):
            continue
        lines: list = []
        _early_returns(fn.body, False, _inputs(fn), lines)
        found += [(fn.name, line) for line in lines]
    return found


def test_no_parametrized_test_returns_before_it_asserts():
    found = {
        str(path.relative_to(TESTS)): hits
        for path in sorted(TESTS.rglob("*.py"))
        if (hits := unchecked_returns(path.read_text(encoding="utf-8"), str(path)))
    }
    assert found == {}, f"parametrized tests that can pass without asserting (see this module's doc): {found}"


EARLY_RETURN = '''
@pytest.mark.parametrize("path", FILES)
def test_x(path):
    out = run(path)
    if not out.changed:
        return
    assert out.fixed
'''
CONSTANT_ASSERT = '''
@pytest.mark.parametrize("path", FILES)
def test_x(path, run_cli):
    check = HOOKS["check"]
    assert check[0] == "overlap"
    code = run_cli(check, path)
    if code != 0:
        return
    assert run_cli("fix", path) == 0
'''
CHECKED_FIRST = '''
@pytest.mark.parametrize("path", FILES)
def test_x(path):
    out = run(path)
    if out.error:
        assert out.code == 2
        return
    if not out.changed:
        pytest.skip("nothing to fix")
    assert out.fixed
'''


@pytest.mark.parametrize(("source", "expected"), [
    (EARLY_RETURN, [("test_x", 6)]),
    (CONSTANT_ASSERT, [("test_x", 8)]),
    (CHECKED_FIRST, []),
], ids=["early-return", "constant-assert", "checked-first"])
def test_the_walk_finds_a_return_before_an_assert(source, expected):
    assert unchecked_returns(source) == expected
