"""The mirrored releases are data (overlap_cli/frameworks/*/releases/): selected by the target's
bridge_version / core_version through one accessor, an absent release an error (never 0.6.2's facts in
its place), and no fact of a release written as a literal anywhere else in the package."""

from __future__ import annotations

import ast
import json
import re
from pathlib import Path

import pytest

from conftest import ROOT

PACKAGE = ROOT / "overlap_cli"
RELEASE_PACKAGES = ("frameworks/bridge/releases", "frameworks/megatron_lm/releases")


# -- the scan: a release's facts written outside its data -----------------------------------------


def _docstrings(tree) -> set:
    out = set()
    for node in ast.walk(tree):
        if isinstance(node, (ast.Module, ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)) and node.body:
            first = node.body[0]
            if isinstance(first, ast.Expr) and isinstance(first.value, ast.Constant):
                out.add(id(first.value))
    return out


def _int_value(node):
    """The value of an integer literal or a product / power of integer literals (``128 * 1024 * 1024``)."""
    if isinstance(node, ast.Constant) and isinstance(node.value, int) and not isinstance(node.value, bool):
        return node.value
    if isinstance(node, ast.BinOp) and isinstance(node.op, (ast.Mult, ast.Pow, ast.LShift)):
        left, right = _int_value(node.left), _int_value(node.right)
        if left is None or right is None or (isinstance(node.op, (ast.Pow, ast.LShift)) and right > 64):
            return None
        return left * right if isinstance(node.op, ast.Mult) else left**right if isinstance(node.op, ast.Pow) else left << right
    return None


def _table(node):
    """A collection literal as comparable entries: a dict's (key, value source) pairs, a tuple / list / set's
    strings; None for anything else."""
    if isinstance(node, ast.Dict):
        return ("dict", frozenset((k.value, ast.dump(v)) for k, v in zip(node.keys, node.values)
                                  if isinstance(k, ast.Constant) and isinstance(k.value, str)))
    if isinstance(node, (ast.Tuple, ast.List, ast.Set)):
        return ("seq", frozenset(e.value for e in node.elts if isinstance(e, ast.Constant) and isinstance(e.value, str)))
    return None


# Units of size and count (a kilo, a kibi and their powers): a default that is one of them (a loss-scale
# window of 1000, a sequence length of 1024) cannot be told from the unit it shares a spelling with.
_UNITS = frozenset(base ** k for base in (1000, 1024) for k in range(1, 5))


def release_facts(paths) -> dict:
    """What the release modules at ``paths`` state: their version strings, their integers of 1,000 and more
    but units (a default such as the bucket size: small numbers are everywhere), and their tables of 5 or
    more entries."""
    versions, numbers, tables = set(), set(), []
    for path in paths:
        tree = ast.parse(Path(path).read_text(encoding="utf-8"))
        inside: set = set()  # the operands of a product already taken
        for node in ast.walk(tree):
            if id(node) in inside:
                continue
            if isinstance(node, ast.Assign) and isinstance(node.value, ast.Constant) and isinstance(node.value.value, str):
                if any(isinstance(t, ast.Name) and t.id.endswith("VERSION") for t in node.targets):
                    versions.add(node.value.value)
            value = _int_value(node)
            if value is not None:
                inside.update(id(n) for n in ast.walk(node))
                if value >= 1000 and value not in _UNITS:
                    numbers.add(value)
            table = _table(node)
            if table is not None and len(table[1]) >= 5:
                tables.append(table)
    return {"versions": versions, "numbers": numbers, "tables": tables}


def leaks(files, facts: dict) -> list:
    """[(file, line, what)] where ``files`` write a release fact as a literal: a string holding a release
    version (docstrings and comments are citations of the upstream source and do not count), an integer
    fact, or a collection holding every entry of a release table (a dict: every key with the same value)."""
    out = []
    for path in files:
        tree = ast.parse(Path(path).read_text(encoding="utf-8"))
        docs = _docstrings(tree)
        inside: set = set()  # the operands of a product already reported
        for node in ast.walk(tree):
            if id(node) in inside:
                continue
            if isinstance(node, ast.Constant) and isinstance(node.value, str) and id(node) not in docs:
                for v in facts["versions"]:
                    if re.search(rf"(?<![\w.]){re.escape(v)}(?!\w|\.\d)", node.value):
                        out.append((str(path), node.lineno, f"release version {v}"))
            value = _int_value(node)
            if value is not None:
                inside.update(id(n) for n in ast.walk(node))
                if value in facts["numbers"]:
                    out.append((str(path), node.lineno, f"release default {value}"))
            table = _table(node)
            if table is not None and any(kind == table[0] and entries <= table[1] for kind, entries in facts["tables"]):
                out.append((str(path), node.lineno, "a release table"))
    return sorted(out)


def _release_files(package: Path) -> list:
    return sorted(p for d in RELEASE_PACKAGES for p in (package / d).glob("v*.py"))


def test_no_fact_of_a_release_is_written_outside_its_data():
    facts = release_facts(_release_files(PACKAGE))
    assert {"0.6.2", "0.19.2"} <= facts["versions"] and 128 * 1024 * 1024 in facts["numbers"]
    assert len(facts["tables"]) >= 3  # the effective keys of both frameworks, the comm_overlap defaults
    others = [p for p in sorted(PACKAGE.rglob("*.py")) if not any(d in p.as_posix() for d in RELEASE_PACKAGES)]
    assert leaks(others, facts) == []


def test_the_scan_finds_a_planted_copy(tmp_path):
    release = tmp_path / "v9_9_9.py"
    release.write_text('BRIDGE_VERSION = "9.9.9"\nBUCKET = 64 * 1024 * 1024\nKEYS = ("a", "b", "c", "d", "e")\n'
                       'DEFAULTS = {"a": 1, "b": None, "c": False, "d": "x", "e": -1}\n')
    code = tmp_path / "code.py"
    code.write_text(
        '"""Mirrors Megatron-Bridge 9.9.9 (a citation: fine)."""\n'
        "# megatron-bridge 9.9.9, co.py:577 (a comment: fine)\n"
        'size = 64 * 1024 * 1024\n'
        'also = 67108864\n'
        'msg = f"not a preset of Megatron-Bridge 9.9.9"\n'
        'keys = ["e", "d", "c", "b", "a", "f"]\n'
        'fine = ("a", "b")\n'
        'other = {"a": 1, "b": None, "c": False, "d": "x", "e": 0}\n'
        'copied = {"z": 2, "a": 1, "b": None, "c": False, "d": "x", "e": -1}\n'
    )
    found = leaks([code], release_facts([release]))
    assert [(line, what) for _, line, what in found] == [
        (3, "release default 67108864"), (4, "release default 67108864"), (5, "release version 9.9.9"),
        (6, "a release table"), (9, "a release table"),
    ]


# -- the accessor -----------------------------------------------------------------------------------


def test_the_newest_release_is_the_default_and_a_named_one_is_selected():
    from overlap_cli.frameworks.bridge import releases as bridge
    from overlap_cli.frameworks.megatron_lm import releases as core
    from overlap_cli.launch_profile.profile import build_target

    t = build_target({})
    assert bridge.of(t) is bridge.BRIDGE.get(bridge.BRIDGE.newest())
    assert core.of(t).CORE_VERSION == core.CORE.newest()
    named = build_target({"bridge_version": bridge.BRIDGE.newest()})
    assert bridge.of(named) is bridge.of(t)
    assert bridge.default_note(t) is not None and bridge.BRIDGE.newest() in bridge.default_note(t)
    assert bridge.default_note(named) is None


def test_each_release_module_is_the_release_its_name_says():
    from overlap_cli.frameworks.bridge import releases as bridge
    from overlap_cli.frameworks.megatron_lm import releases as core

    for v in bridge.BRIDGE.versions():
        assert bridge.BRIDGE.get(v).BRIDGE_VERSION == v
    for v in core.CORE.versions():
        assert core.CORE.get(v).CORE_VERSION == v


def test_every_release_has_its_own_catalog_built_from_that_release():
    from overlap_cli.frameworks.bridge import recipes
    from overlap_cli.frameworks.bridge.releases import BRIDGE

    for v in BRIDGE.versions():
        release = BRIDGE.get(v)
        built = recipes.versions(v)
        assert (built["megatron-bridge"], built["megatron-core"]) == (v, release.CORE_VERSION), v


@pytest.mark.parametrize("flags", [{"bridge_version": "0.4.2"}, {"core_version": "0.12.0"}])
def test_a_release_without_data_is_an_error_not_a_fallback(flags):
    from overlap_cli.frameworks.bridge import releases as bridge
    from overlap_cli.launch_profile.profile import build_target
    from overlap_cli.problems import InputError

    with pytest.raises(InputError) as err:
        bridge.of(build_target(flags))
    key, version = next(iter(flags.items()))
    assert err.value.problem.key == key and version in err.value.problem.message


def test_a_check_against_a_release_without_data_exits_2_in_one_line(run_cli, root, tmp_path):
    (tmp_path / "pyproject.toml").write_text('[tool.overlap]\nbridge_version = "0.4.2"\n', encoding="utf-8")
    cfg = tmp_path / "run.yaml"
    cfg.write_text((root / "examples/llama3_70b_tuned.yaml").read_text(encoding="utf-8"), encoding="utf-8")
    code, out, err = run_cli("check", str(cfg), "--format", "json")
    assert code == 2
    result = json.loads(out)["results"][0]
    assert "0.4.2" in result["error"]["message"] and result["findings"] == []
    assert "Traceback" not in err
