"""Megatron-Bridge 0.6.2's performance recipe modules (vendored unchanged under tests/data/upstream/, listed in
SOURCES.json) read through the Python reader by the real CLI: every recipe function of every module is a
run (``FILE::FUNCTION``) that reads without an error, and where the catalog holds a recipe of the same name
*built* by Bridge itself, every effective value the reading knows equals the catalog recipe's."""

from __future__ import annotations

import json

import pytest

from conftest import ROOT

PERF = ROOT / "tests" / "data" / "upstream" / "NVIDIA-NeMo+Megatron-Bridge" / "src" / "megatron" / "bridge" / "perf_recipes"
TARGET = ("--world-size", "256", "--gpu", "h100")


@pytest.fixture(scope="module")
def read(run_cli_module):
    code, out, err = run_cli_module("check", str(PERF), "--format", "json", *TARGET)
    return {r["file"].rsplit("::", 1)[1]: r for r in json.loads(out)["results"] if "::" in r["file"]}


@pytest.fixture(scope="module")
def run_cli_module():
    from conftest import run_entry_point

    return run_entry_point


def test_every_perf_recipe_function_is_read(read):
    import ast

    expected = set()
    for path in PERF.rglob("*.py"):
        for node in ast.parse(path.read_text()).body:
            if isinstance(node, ast.FunctionDef) and node.name.endswith("_config") and not node.name.startswith("_"):
                expected.add(node.name)
    assert expected and expected <= set(read), sorted(expected - set(read))[:5]
    errors = {n: r["error"] for n, r in read.items() if r["error"] is not None}
    assert not errors, list(errors.items())[:3]


def test_each_read_equals_the_built_catalog_recipe_of_the_same_name(read, run_cli_module):
    from overlap_cli.frameworks.bridge import recipes

    compared = agreed_keys = 0
    for name, r in sorted(read.items()):
        # A perf recipe named like a model recipe of recipes.* is in the catalog as perf__NAME.
        entry = "perf__" + name if recipes.canonical("0.6.2", "perf__" + name) else name
        if recipes.canonical("0.6.2", entry) != entry or recipes.how("0.6.2", entry) != "built":
            continue
        code, out, err = run_cli_module("check", "--recipe", entry, "--format", "json", *TARGET)
        built = json.loads(out)["results"][0]
        assert built["error"] is None, built["error"]
        for key, v in r["effective"].items():
            if v["source"] == "unknown":
                continue
            b = built["effective"][key]
            assert (v["value"], v["source"]) == (b["value"], b["source"]), (name, key, v, b)
            agreed_keys += 1
        compared += 1
    assert compared > 250 and agreed_keys > compared * 20
