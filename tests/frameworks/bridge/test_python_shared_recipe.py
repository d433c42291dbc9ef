"""A run started from a catalog recipe writes into its own copy: the catalog's values, which every run of
the process shares as its base (python_bridge._recipe_start), stay as the catalog holds them -- through a
plain write, a write of a section, and an ``if`` the reader cannot decide (a copy per branch, then a merge)."""

from __future__ import annotations

import json

from overlap_cli.frameworks.bridge import python_load, recipes, releases

RECIPE = "llama32_1b_pretrain_config"

MODULE = f"""from mylib import decide
from megatron.bridge.recipes.llama import {RECIPE}


def run_writes():
    c = {RECIPE}()
    c.model.tensor_model_parallel_size = 7
    c.train = None
    c.optimizer.lr = 0.5
    if decide():
        c.model.pipeline_model_parallel_size = 3
    return c


def run_reads():
    c = {RECIPE}()
    c.train.global_batch_size = 24
    return c
"""


def shared() -> tuple:
    catalog = releases.of(None).BRIDGE_VERSION
    return recipes.shared_data(catalog, recipes.canonical(catalog, RECIPE))


def catalog_values() -> str:
    values, unknown = shared()
    return json.dumps(values, sort_keys=True, default=repr) + repr(sorted(unknown.items()))


def test_a_run_leaves_the_catalogs_values_as_they_were(tmp_path):
    path = tmp_path / "runs.py"
    path.write_text(MODULE, encoding="utf-8")
    before = catalog_values()
    recipe_tp = shared()[0]["model"]["tensor_model_parallel_size"]
    assert recipe_tp != 7

    cfg, run = python_load.load_python(f"{path}::run_writes", MODULE)
    assert cfg.data["model"]["tensor_model_parallel_size"] == 7
    assert cfg.data["train"] is None
    assert cfg.data["optimizer"]["lr"] == 0.5
    assert ("model", "pipeline_model_parallel_size") in cfg.unknown  # the undecided branch
    assert run.base_data["model"]["tensor_model_parallel_size"] == recipe_tp
    assert isinstance(run.base_data["train"], dict)
    assert catalog_values() == before

    # A second run of the same recipe in the same process starts from the recipe, not from the first run.
    cfg2, run2 = python_load.load_python(f"{path}::run_reads", MODULE)
    assert cfg2.data["model"]["tensor_model_parallel_size"] == recipe_tp
    assert cfg2.data["train"]["global_batch_size"] == 24
    assert ("model", "pipeline_model_parallel_size") not in cfg2.unknown
    assert catalog_values() == before
    assert cfg2.data is not run.base_data and cfg2.data["model"] is not run2.base_data["model"]
