"""The recipe catalog's two forms of one recipe agree: the values ``values.xz`` rebuilds (a base recipe's
values plus the recipe's changes, what the Python reader starts from) are exactly what reading the recipe's
text gives -- same values, same types, same key order -- for every entry of every release's catalog, and a
catalog without them falls back to reading the text."""

from __future__ import annotations

import json

import pytest

from overlap_cli.config.yamlnodes import parse_nodes
from overlap_cli.frameworks.bridge import recipes

RELEASES = recipes.held()
GROUPS = [(release, group) for release in RELEASES
          for group in sorted({row["values"] for row in recipes.index(release)["recipes"].values() if "values" in row})]


def same(a, b, path="") -> list:
    if type(a) is not type(b):
        return [f"{path}: {type(a).__name__} {a!r} != {type(b).__name__} {b!r}"]
    if type(a) is dict:
        if list(a) != list(b):
            return [f"{path}: keys {list(a)} != {list(b)}"]
        return [d for k in a for d in same(a[k], b[k], f"{path}.{k}")]
    if type(a) is list:
        if len(a) != len(b):
            return [f"{path}: {len(a)} items != {len(b)}"]
        return [d for i, (x, y) in enumerate(zip(a, b)) for d in same(x, y, f"{path}[{i}]")]
    return [] if a == b or (a != a and b != b) else [f"{path}: {a!r} != {b!r}"]


@pytest.mark.parametrize("release", RELEASES)
def test_every_entry_has_values(release):
    rows = recipes.index(release)["recipes"]
    assert [n for n, row in rows.items() if "values" not in row] == []
    assert len([g for r, g in GROUPS if r == release]) > 1


@pytest.mark.parametrize("release, group", GROUPS)
def test_values_equal_the_text_read(release, group):
    wrong = {}
    for name, row in recipes.index(release)["recipes"].items():
        if row.get("values") != group:
            continue
        from_values = recipes._values(release, name)
        from_text = parse_nodes(recipes.text(release, name), name)[0]
        found = same(from_values, from_text)
        if found:
            wrong[name] = found[:3]
    assert wrong == {}


def test_data_hands_out_fresh_copies():
    name = "llama3_70b_pretrain_32gpu_h100_bf16_config"
    first, _ = recipes.data("0.6.2", name)
    first["model"]["tensor_model_parallel_size"] = 99
    first["ddp"].clear()
    second, _ = recipes.data("0.6.2", name)
    assert second["model"]["tensor_model_parallel_size"] == 4
    assert second["ddp"]


def test_an_entry_without_values_reads_its_text(monkeypatch):
    name = "llama3_8b_pretrain_8gpu_h100_bf16_config"
    index = json.loads(json.dumps(recipes.index("0.6.2")))
    del index["recipes"][name]["values"]
    recipes._data.cache_clear()
    monkeypatch.setattr(recipes, "index", lambda release: index)
    try:
        assert recipes._values("0.6.2", name) is None
        assert same(recipes.data("0.6.2", name)[0], parse_nodes(recipes.text("0.6.2", name), name)[0]) == []
    finally:
        recipes._data.cache_clear()
