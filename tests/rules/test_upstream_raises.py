"""What upstream raises, held to the upstream files that show it (vendored under tests/data/upstream with their
commit, SOURCES.json), through the real CLI."""

from __future__ import annotations

import json

from conftest import ROOT

UPSTREAM = ROOT / "tests" / "data" / "upstream"
BRIDGE = UPSTREAM / "NVIDIA-NeMo+Megatron-Bridge"
NANO_FSDP = BRIDGE / "examples" / "models" / "nemotron" / "nemotron_3" / "nano" / "slurm_pretrain_fsdp.sh"
COMMON = BRIDGE / "src" / "megatron" / "bridge" / "recipes" / "common.py"
RECIPE_RUNNER = BRIDGE / "scripts" / "training" / "recipe_runner.py"


def _results(run_cli, *args) -> dict:
    code, out, err = run_cli("check", *args, "--format", "json")
    assert code in (0, 1), err
    return {r["file"].replace("\\", "/"): r for r in json.loads(out)["results"]}


def _codes(result) -> list:
    assert result["error"] is None, result["error"]
    return [f["code"] for f in result["findings"]]


# -- CFG010's sequence length, after what run_recipe.py syncs -----------------------------------------------


def test_a_run_recipe_launch_syncs_the_model_sequence_length_before_validate(run_cli):
    """Bridge's nano FSDP example runs run_recipe.py with ``model.seq_length=512 dataset.sequence_length=512`` over
    a recipe whose dataset.seq_length is 8192. run_recipe.py calls sync_model_dataset_sequence_length before it
    validates (run_recipe.py:515, recipe_runner.py:471-486): the model takes the dataset's seq_length, so
    validate()'s sequence-length assert (config.py:1505) cannot fire."""
    runner = RECIPE_RUNNER.read_text(encoding="utf-8")
    assert "def sync_model_dataset_sequence_length" in runner and "config.model.seq_length = dataset_seq_length" in runner
    (result,) = _results(run_cli, str(NANO_FSDP)).values()
    assert "CFG010" not in _codes(result)
    # the same recipe and overrides given to check directly (no runner, no sync): validate() asserts
    by_hand = _results(run_cli, "--recipe", "nemotron_3_nano_pretrain_8gpu_h100_bf16_config",
                       "model.seq_length=512", "dataset.sequence_length=512")
    (direct,) = by_hand.values()
    seq = [f for f in direct["findings"] if f["code"] == "CFG010"]
    assert len(seq) == 1 and "Sequence length in model config: 512, Sequence length in dataset config: 8192" in seq[0]["message"]


def test_the_sync_takes_the_dataset_length_the_launch_gives(run_cli, tmp_path):
    """``-sl 4096`` sets dataset.seq_length (run_recipe.py's convenience flag); the sync carries it to the model,
    so the launch is accepted, where ``--recipe`` with the same dotlist is refused."""
    launch = tmp_path / "train.sh"
    launch.write_text("#!/bin/bash\ntorchrun --nproc_per_node 8 scripts/training/run_recipe.py "
                      "--recipe llama3_8b_pretrain_config -sl 4096\n")
    (result,) = _results(run_cli, str(launch)).values()
    assert "CFG010" not in _codes(result)
    (direct,) = _results(run_cli, "--recipe", "llama3_8b_pretrain_config", "dataset.seq_length=4096").values()
    assert "CFG010" in _codes(direct)


def test_no_sequence_length_finding_for_a_model_nobody_wrote(run_cli):
    """recipes/common.py's _pretrain_common builds ``ConfigContainer(model=None, ...)`` (the caller sets the model):
    no model seq_length exists, so the class default 1024 must not stand in against the dataset's 4096."""
    assert "model=None," in COMMON.read_text(encoding="utf-8")
    result = _results(run_cli, f"{COMMON}::_pretrain_common")
    (pretrain,) = result.values()
    assert "CFG010" not in _codes(pretrain)
    assert not any("1024" in f["message"] for f in pretrain["findings"])
