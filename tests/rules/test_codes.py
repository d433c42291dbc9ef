"""The table of rule codes (rules/codes.py): every registered rule of the package is in it under its own
module and function, every entry has a rule unless removed, and registering against it fails loudly."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

from overlap_cli.rules import all_rules, codes, registry

ROOT = Path(__file__).resolve().parents[2]


def test_every_rule_is_the_one_its_code_names():
    shipped = {c: r for c, r in all_rules().items() if r.check.__module__.startswith("overlap_cli.rules.")}
    named = {c: (r.check.__module__.rsplit(".", 1)[1], r.check.__name__) for c, r in shipped.items()}
    assert named == {c: (m, f) for c, (m, f, state) in codes.CODES.items() if state != codes.REMOVED}


def test_every_entry_is_well_formed():
    for prefix, name, rows in codes.FAMILY_BLOCKS:
        assert re.fullmatch(r"[A-Z]+", prefix) and name
        numbers = [int(code[len(prefix):]) for code, *_ in rows]
        assert numbers == sorted(numbers), prefix  # a block lists its codes in order
        for code, module, function, state in rows:
            assert state in codes.STATES, code
            assert module.split("_", 1)[0] == prefix.lower(), code  # rule modules are named after their family
            assert function.isidentifier(), code
    assert registry.FAMILIES == codes.FAMILIES and registry.FAMILY_NAMES == codes.FAMILY_NAMES


def test_a_code_twice_or_in_another_family_s_block_is_refused(monkeypatch):
    block = ("TP", "tensor parallel", (("TP101", "tp", "a", codes.STABLE), ("TP101", "tp", "b", codes.STABLE)))
    monkeypatch.setattr(codes, "FAMILY_BLOCKS", (block,))
    with pytest.raises(RuntimeError, match="TP101 is in rules/codes.py twice"):
        codes._codes()
    monkeypatch.setattr(codes, "FAMILY_BLOCKS", (("TP", "tensor parallel", (("PP201", "tp", "a", codes.STABLE),)),))
    with pytest.raises(RuntimeError, match="PP201 is in the TP block"):
        codes._codes()


def test_registration_checks_the_table():
    table = {"TP101": ("tp", "tp_too_small", codes.STABLE), "TP199": ("tp", "gone", codes.REMOVED)}
    assert registry.table_problem("TP101", "tp", "tp_too_small", table) == ""
    assert "not in rules/codes.py" in registry.table_problem("TP150", "tp", "new_check", table)
    assert "belongs to tp.tp_too_small" in registry.table_problem("TP101", "tp", "other_check", table)
    assert "was removed" in registry.table_problem("TP199", "tp", "gone", table)
    assert registry.unregistered({"TP101": object()}, table) == []
    assert registry.unregistered({}, table) == ["TP101"]


def _run(code: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT,
                          env={"PYTHONPATH": str(ROOT), "PATH": ""})


def test_a_rule_module_taking_a_code_not_in_the_table_fails_at_import():
    """A check of the package registered under a code codes.py does not list (as a rule module would)."""
    p = _run("from overlap_cli.rules.registry import rule\n"
             "def check(view):\n    return ()\n"
             "check.__module__ = 'overlap_cli.rules.tp'\n"
             "rule('TP199', 'x', 'warning', 'x')(check)\n")
    assert p.returncode == 1 and "RuntimeError: rule code TP199 (tp.check) is not in rules/codes.py" in p.stderr


def test_a_table_code_without_a_rule_fails_at_first_use():
    p = _run("from overlap_cli.rules import codes\n"
             "codes.CODES['TP199'] = ('tp', 'tp_missing', codes.STABLE)\n"
             "from overlap_cli.rules import all_rules\nall_rules()\n")
    assert p.returncode == 1 and "rules/codes.py lists TP199 but no rule module registers it" in p.stderr
    p = _run("from overlap_cli.rules import codes\n"
             "codes.CODES['TP199'] = ('tp', 'tp_missing', codes.REMOVED)\n"
             "from overlap_cli.rules import all_rules\nprint(len(all_rules()))\n")
    assert p.returncode == 0 and int(p.stdout) == len(all_rules())
