"""Each Megatron-Bridge release has its own recipe catalog, built from that release's own code, and only
that catalog answers for it: a name the release does not have is an unknown recipe of that release (with
that release's closest names), never another release's recipe.

The counts each build recorded in its index (``from_bridge``: the recipe functions ``--from-bridge``
enumerated in the release's environment, how many it built and which it could not build offline;
``from_source``: the recipe functions of the release's source and those the reader could not read) are
checked here against the catalog itself, so that a catalog missing what its release builds fails without
the environment."""

from __future__ import annotations

import json
import re

import pytest

from overlap_cli.frameworks.bridge import recipes
from overlap_cli.problems import InputError

HELD = recipes.held()
# Bridge 0.5.1's recipes (wheel megatron_bridge-0.5.1, recipes/nemotronh/nemotron_3_nano.py:60-96): the
# library recipe of Nemotron 3 Nano, with the settings 0.6.2 moved into its *_Ngpu_* performance recipes.
NANO = "nemotron_3_nano_pretrain_config"
PERF_NAME = re.compile(r"_\d+gpu_")


def _releases_with_module() -> list:
    from overlap_cli.frameworks.bridge.releases import BRIDGE

    return BRIDGE.versions()


def test_every_release_has_a_catalog_and_each_says_its_versions():
    assert {"0.4.2", "0.5.1", "0.6.2"} <= set(HELD)
    for release in HELD:
        assert recipes.versions(release)["megatron-bridge"] == release
    assert set(_releases_with_module()) <= set(HELD)


@pytest.mark.parametrize("release", HELD)
def test_the_catalog_holds_what_its_release_builds_offline(release):
    index = recipes.index(release)
    built = [n for n, row in index["recipes"].items() if row.get("how", "built") == "built"]
    assert len(built) == index["from_bridge"]["built"] > 0
    # Every recipe function --from-bridge met but could not build offline is read from source, or the
    # reader said why not.
    not_read = index["from_source"]["not_read"]
    missing = [n for n in index["from_bridge"]["not_built"] if recipes.canonical(release, n) is None and n not in not_read]
    assert missing == []
    # Every recipe function of the release's source is in the catalog or listed as not read.
    assert len(recipes.names(release)) + len(not_read) == index["from_source"]["functions"]


@pytest.mark.parametrize("release", HELD)
def test_aliases_and_bindings_name_recipes_of_the_same_release(release):
    names = set(recipes.index(release)["recipes"])
    assert set(recipes.aliases(release).values()) <= names
    for module, bound in recipes.index(release).get("bindings", {}).items():
        assert set(bound.values()) <= names, module


def test_releases_differ_where_bridge_changed_its_recipes():
    # 0.6.2 moved the tuned launches into *_Ngpu_* performance recipes; 0.5.1 and 0.4.2 have none.
    assert [n for n in recipes.names("0.6.2") if PERF_NAME.search(n)]
    for release in ("0.4.2", "0.5.1"):
        assert [n for n in recipes.names(release) if PERF_NAME.search(n)] == []
    old, new = recipes.data("0.5.1", NANO)[0], recipes.data("0.6.2", NANO)[0]
    assert (old["model"]["tensor_model_parallel_size"], old["model"]["sequence_parallel"]) == (4, True)
    assert old["comm_overlap"]["tp_comm_overlap"] is True
    assert new["model"]["tensor_model_parallel_size"] == 1
    assert recipes.how("0.5.1", NANO) == "built"


def test_a_name_of_another_release_is_an_unknown_recipe_of_this_one():
    from overlap_cli.frameworks.bridge.runs import recipe_layer

    name = "nemotron_3_nano_pretrain_8gpu_h100_bf16_config"
    assert recipes.canonical("0.6.2", name) == name
    assert recipes.canonical("0.5.1", name) is None
    with pytest.raises(KeyError):
        recipes.data("0.5.1", name)
    with pytest.raises(InputError) as exc:
        recipe_layer("0.5.1", name)
    message = exc.value.problem.message
    assert "Megatron-Bridge 0.5.1" in message and "0.6.2" not in message
    near = recipes.closest("0.5.1", name)
    assert near and set(near) <= set(recipes.names("0.5.1"))
    assert NANO in near and all(n in message for n in near)


def test_a_release_without_a_catalog_is_an_input_error():
    with pytest.raises(InputError) as exc:
        recipes.index("0.3.0")
    assert "no recipe catalog for Megatron-Bridge 0.3.0" in exc.value.problem.message
    for bad in ("../0.6.2", "", None):
        with pytest.raises(InputError):
            recipes.names(bad)


def test_recipes_list_and_show_read_the_release_asked_for(run_cli):
    code, out, err = run_cli("recipes", "list", "--bridge-version", "0.5.1", "--format", "json")
    assert code == 0, err
    doc = json.loads(out)
    assert doc["versions"]["megatron-bridge"] == "0.5.1"
    assert sorted(r["name"] for r in doc["recipes"]) == recipes.names("0.5.1")
    code, out, err = run_cli("recipes", "show", NANO, "--bridge-version", "0.5.1", "--as-dumped")
    assert code == 0 and out == recipes.text("0.5.1", NANO)
    code, out, err = run_cli("recipes", "show", "nemotron_3_nano_pretrain_8gpu_h100_bf16_config", "--bridge-version", "0.5.1")
    assert code == 2
    assert "unknown recipe" in err and "Megatron-Bridge 0.5.1" in err and NANO in err
    code, out, err = run_cli("recipes", "list", "--bridge-version", "0.3.0")
    assert code == 2 and "no recipe catalog for Megatron-Bridge 0.3.0" in err


def _check(run_cli, tmp_path, recipe: str, how: str):
    override = tmp_path / "over.yaml"
    head = "# overlap: target bridge-version=0.5.1\n" if how == "directive" else ""
    override.write_text(head + "train:\n  global_batch_size: 64\n")
    flags = ["--bridge-version", "0.5.1"] if how == "flag" else []
    return run_cli("check", override, "--recipe", recipe, "--format", "json", "--show-effective", *flags)


def _needs_0_5_1_data():
    if "0.5.1" not in _releases_with_module():
        pytest.skip("overlap-cli holds no release data for Megatron-Bridge 0.5.1 yet (frameworks/bridge/releases)")


@pytest.mark.parametrize("how", ["flag", "directive"])
def test_check_of_a_0_5_1_recipe_resolves_that_releases_recipe(run_cli, tmp_path, how):
    _needs_0_5_1_data()
    code, out, err = _check(run_cli, tmp_path, NANO, how)
    if how == "flag" and "--bridge-version" in err:
        pytest.skip("overlap check has no --bridge-version yet")
    result = json.loads(out)["results"][0]
    effective = result["effective"]
    assert effective["model.tensor_model_parallel_size"]["value"] == 4
    assert effective["model.sequence_parallel"]["value"] is True
    assert effective["model.tp_comm_overlap"]["value"] is True
    assert "TP101" not in [f["code"] for f in result["findings"]]


def test_check_of_a_0_6_2_only_recipe_under_0_5_1_is_an_unknown_recipe(run_cli, tmp_path):
    _needs_0_5_1_data()
    code, out, err = _check(run_cli, tmp_path, "nemotron_3_nano_pretrain_8gpu_h100_bf16_config", "directive")
    assert code == 2
    assert "unknown recipe" in out + err and "Megatron-Bridge 0.5.1" in out + err
