"""The typed Target and launch_profile.profile.for_run, the one place the world size's precedence is decided:
flag > directive > per-file-target > launch line > recipe name > [tool.overlap] > --detect > default."""

from __future__ import annotations

import pytest

from overlap_cli.launch_profile.per_file import Table
from overlap_cli.launch_profile.profile import RecipeLaunch, Target, build_target, for_run
from overlap_cli.launch_profile.settings import Settings

RECIPE = RecipeLaunch("llama3_8b_pretrain_config", world_size=64, gpu="h100")


def test_every_field_is_an_attribute_and_get_set_source_still_work():
    t = Target()
    t.set("gpu", "b200", "pyproject")
    t.set("recipe", "x", "flag")
    assert (t.gpu, t.get("gpu"), t.source("gpu")) == ("b200", "b200", "pyproject")
    assert (t.recipe, t.get("recipe"), t.source("recipe")) == ("x", "x", "flag")
    t.set("gpu", "a100", "default")  # weaker: ignored
    assert t.gpu == "b200"
    assert t.get("base", "none") == "none" and t.get("no_such_field") is None
    with pytest.raises(AttributeError):
        t.set("no_such_field", 1, "flag")


def test_bridge_and_core_version_are_fields_with_a_source():
    t = build_target({"bridge_version": "0.6.0"}, Settings("p.toml", {"core_version": "0.16.1"}))
    assert (t.bridge_version, t.source("bridge_version")) == ("0.6.0", "flag")
    assert (t.core_version, t.source("core_version")) == ("0.16.1", "pyproject")
    assert t.to_json(None)["bridge_version"] == "0.6.0"
    bare = build_target({})
    assert bare.bridge_version is None and "bridge_version" not in bare.to_json(None)
    with pytest.raises(ValueError, match="must be a release"):
        build_target({"bridge_version": "six!"})


def test_for_run_leaves_the_target_it_was_given_alone():
    t = build_target({})
    ran = for_run(t, recipe=RECIPE, launch_world_size=16, launch_env={"NCCL_X": "1"})
    assert (t.world_size, t.recipe, t.shell_env) == (None, None, None)
    assert (ran.world_size, ran.source("world_size"), ran.recipe, ran.gpu) == (16, "launch", RECIPE.name, "h100")
    assert ran.shell_env == {"NCCL_X": "1"}


@pytest.mark.parametrize(
    "flags, settings, directive, per_file, expected",
    [
        ({"world_size": 8}, {"world_size": 32}, {"world_size": 4}, {"world_size": 2}, (8, "flag")),
        ({}, {"world_size": 32}, {"world_size": 4}, {"world_size": 2}, (4, "directive")),
        ({}, {"world_size": 32}, None, {"world_size": 2}, (2, "per-file-target")),
        ({}, {"world_size": 32}, None, None, (16, "launch")),
    ],
)
def test_world_size_precedence_above_the_launch(flags, settings, directive, per_file, expected):
    class D:
        line, file, table = 3, "run.sh", Table(directive or {})

    t = build_target(flags, Settings("p.toml", settings), None, None,
                     [("*.sh", Table(per_file))] if per_file else (), D() if directive else None)
    ran = for_run(t, recipe=RECIPE, launch_world_size=16)
    assert (ran.world_size, ran.source("world_size")) == expected


def test_recipe_name_ranks_above_pyproject_and_below_the_launch():
    t = build_target({}, Settings("p.toml", {"nodes": 2, "gpus_per_node": 8}))
    assert (t.world_size, t.nodes) == (16, 2)
    by_recipe = for_run(t, recipe=RECIPE)
    assert (by_recipe.world_size, by_recipe.source("world_size")) == (64, "recipe")
    assert by_recipe.nodes is None and by_recipe.source("nodes") == "unknown"  # pyproject's split is not 64 GPUs
    assert for_run(by_recipe, launch_world_size=128).world_size == 128


def test_detect_and_default_rank_below_everything():
    class Found:
        transformer_engine, te_version, torch_version, gpu_count = False, None, None, 4
        gpu, compute_capability, gpu_name = "a100", "8.0", "NVIDIA A100"

        def to_json(self):
            return {}

    t = build_target({}, None, Found())
    assert (t.gpu, t.source("gpu")) == ("a100", "detected")
    ran = for_run(t, recipe=RECIPE)
    assert (ran.gpu, ran.source("gpu"), ran.gpu_name) == ("h100", "recipe", None)
    assert (ran.transformer_engine, ran.source("transformer_engine")) == (False, "detected")


def test_a_recipe_world_that_does_not_hold_is_forgotten_but_a_stated_one_stays():
    by_recipe = for_run(build_target({}), recipe=RECIPE)
    gone = for_run(by_recipe, recipe_world_holds=False)
    assert (gone.world_size, gone.source("world_size")) == (None, "unknown")
    stated = for_run(build_target({"world_size": 8}), recipe=RECIPE, recipe_world_holds=False)
    assert (stated.world_size, stated.source("world_size")) == (8, "flag")


def test_the_launch_env_is_over_the_shell_env():
    t = build_target({"env_from_shell": True}, shell_env={"A": "shell", "B": "shell"})
    assert for_run(t, launch_env={"A": "launch"}).shell_env == {"A": "launch", "B": "shell"}


def test_build_target_takes_the_recipe_lookup_it_is_given():
    seen = []

    def lookup(name, target):  # the target: its release's catalog is the one to look in
        seen.append((name, target.bridge_version))
        return RECIPE

    t = build_target({"recipe": "llama3_8b", "bridge_version": "0.5.1"}, recipe_launch=lookup)
    assert seen == [("llama3_8b", "0.5.1")] and (t.recipe, t.world_size, t.source("world_size")) == (RECIPE.name, 64, "recipe")
    assert build_target({"recipe": "llama3_8b"}).world_size is None  # no lookup: the run applies it (for_run)
