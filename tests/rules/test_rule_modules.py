"""Rule modules are named after the family of the codes they hold: ``tp`` holds TP1xx, ``dp_fsdp`` DP3xx."""

from __future__ import annotations

from pathlib import Path

import overlap_cli.rules as rules_package
from overlap_cli.rules import all_rules
from overlap_cli.rules.registry import FAMILIES

HELPERS = {"__init__", "registry", "codes", "common", "env_common"}


def test_every_rule_lives_in_a_module_named_after_its_family():
    wrong = {}
    for code, rule in all_rules().items():
        module = rule.check.__module__.rsplit(".", 1)[-1]
        if module.split("_", 1)[0] != rule.family.lower():
            wrong[code] = module
    assert wrong == {}


def test_every_module_holds_rules_or_is_a_named_helper():
    modules = {p.stem for p in Path(rules_package.__file__).parent.glob("*.py")}
    with_rules = {r.check.__module__.rsplit(".", 1)[-1] for r in all_rules().values()}
    assert modules - with_rules == HELPERS
    assert {m.split("_", 1)[0] for m in with_rules} == set(FAMILIES)
