"""A whole repository as input: a slice of each of Megatron-Bridge, Megatron-LM, NeMo-RL and verl (files vendored
unchanged under tests/data/upstream/OWNER+NAME/<path>, listed with their commit in SOURCES.json), laid out as in
the repository and walked by one folder run through the real CLI. Every file gets its verdict -- checked, skipped
with its reason, or an input error only where the file is a Megatron training run that cannot be checked -- and the
same file named explicitly (as pre-commit names each changed file) gets the same verdict."""

from __future__ import annotations

import json
import shutil

import pytest

from conftest import ROOT

UPSTREAM = ROOT / "tests" / "data" / "upstream"
BRIDGE, MLM, RL, VERL = "NVIDIA-NeMo+Megatron-Bridge", "NVIDIA+Megatron-LM", "NVIDIA-NeMo+RL", "volcengine+verl"
CHECKED = "checked"
NOT_A_LAUNCH = "not a launch (no torchrun, python -m torch.distributed.run, pretrain_*.py or run_recipe.py line)"

# Each file of the slice and its verdict: CHECKED, ("error", start of the message), or the start of the skip reason.
VERDICTS = {
    # Megatron-Bridge: its functional tests run pytest under coverage; its own recipe runner and the launch of it;
    # a tutorial's Python run and the sbatch script that starts it; a conversion script (test modules are not
    # vendored: pytest would collect them; tests/check/test_entry_points.py holds their verdict)
    f"{BRIDGE}/tests/functional_tests/launch_scripts/h100/active/L0_Launch_training_pretrain.sh":
        "not a Megatron training launch: -m coverage is a test run",
    # Bridge's own sbatch example passes --step, which run_recipe.py at this commit (allow_abbrev=False, only
    # --step-func / --step_func: scripts/training/run_recipe.py:162-181) refuses with "Unknown option: --step":
    # a Megatron training run that cannot be checked, as it cannot be run
    f"{BRIDGE}/scripts/training/launch_with_sbatch.sh": ("error", "scripts/training/run_recipe.py: Unknown option: --step"),
    f"{BRIDGE}/scripts/training/run_recipe.py": "not a training run: Megatron-Bridge's recipe runner",
    f"{BRIDGE}/tutorials/recipes/llama/00_quickstart_pretrain.py": CHECKED,
    # the sbatch script's torchrun starts the tutorial's script: read as launched (forms/python_run.py)
    f"{BRIDGE}/tutorials/recipes/llama/launch_with_sbatch.sh": CHECKED,
    f"{BRIDGE}/examples/conversion/mfsdp/convert_checkpoints_fsdp.py":
        "not a training run: convert_checkpoints_fsdp.py is a checkpoint conversion / export script",
    f"{BRIDGE}/examples/models/qwen/qwen3_omni/local_train_thinker_full.sh":
        "not a Megatron training launch as far as can be told: the script its torchrun starts is not known statically",
    # Megatron-LM: its entry point and a module of its package; a launch of examples/multimodal/train.py (whose
    # source calls megatron.training's pretrain)
    f"{MLM}/pretrain_gpt.py": "not a training run by itself: pretrain_gpt.py is a Megatron-LM training entry point",
    f"{MLM}/megatron/core/__init__.py": "a module of the megatron package (megatron.core): library code",
    f"{MLM}/examples/multimodal/train.py": "not a training run by itself: train.py is a Megatron-LM training entry point",
    f"{MLM}/examples/multimodal/pretrain_mistral_clip.sh": CHECKED,
    # "--step-batch-size-schedule "0:16 2.4B:320 ..."" inside an array expanded unquoted (${GPT_MODEL_ARGS[@]}):
    # bash splits the schedule into words and argparse exits 2 on the rest -- the real launch fails the same way
    f"{MLM}/examples/gpt3/train_gpt3_175b_distributed.sh": ("error", "unrecognized arguments: 2.4B:320 4.8B:624"),
    # NeMo-RL: a shell test, a config whose policy trains with Megatron and one with the DTensor policy
    f"{RL}/tests/functional/eval.sh": NOT_A_LAUNCH,
    f"{RL}/examples/configs/grpo_math_1B_megatron.yaml": CHECKED,
    f"{RL}/examples/configs/grpo_math_1B.yaml": "a NeMo-RL config for the DTensor",
    # verl: its SFT trainer under torchrun, a distributed test runner (its test module, not vendored, is not found
    # beside it), a generation script, a config of its own
    f"{VERL}/examples/sft/gsm8k/run_qwen_05_sp2.sh":
        "not a Megatron training launch: -m verl.trainer.fsdp_sft_trainer is verl's trainer",
    f"{VERL}/tests/special_distributed/run_all.sh":
        "not a Megatron training launch: test_tensor_dict.py is not a known Megatron training entry point",
    f"{VERL}/examples/generation/run_deepseek7b_mutli_node.sh": NOT_A_LAUNCH,
    f"{VERL}/verl/trainer/config/reward_manager.yaml": "not a training config",
}


def _verdict(doc: dict, path: str):
    runs = [r for r in doc["results"] if r["file"].split("::")[0] == path]
    reasons = [s["reason"] for s in doc["skipped"] if s["file"] == path]
    assert len(reasons) + bool(runs) == 1, (path, runs, reasons)
    if reasons:
        return reasons[0]
    errors = [r["error"]["message"] for r in runs if r["error"] is not None]
    return ("error", errors[0]) if errors else CHECKED


def _matches(got, expected) -> bool:
    if isinstance(expected, tuple):
        return isinstance(got, tuple) and got[1].startswith(expected[1])
    return got == CHECKED if expected == CHECKED else isinstance(got, str) and got.startswith(expected)


@pytest.fixture(scope="module")
def slice_root(tmp_path_factory):
    """The slice of each repository, copied with its paths (and nothing else of the vendored trees)."""
    root = tmp_path_factory.mktemp("repos")
    for rel in VERDICTS:
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(UPSTREAM / rel, root / rel)
    return root


@pytest.fixture(scope="module")
def walked(slice_root):
    import os

    from conftest import run_entry_point

    here = os.getcwd()
    os.chdir(slice_root)
    try:
        folder = run_entry_point("check", BRIDGE, MLM, RL, VERL, "--format", "json", "--exit-zero")
        named = run_entry_point("check", *VERDICTS, "--format", "json", "--exit-zero")
    finally:
        os.chdir(here)
    return folder, named


def test_every_file_of_each_repository_gets_its_verdict(slice_root, walked):
    (code, out, err), _named = walked
    assert "Traceback" not in err
    doc = json.loads(out)
    on_disk = sorted(str(p.relative_to(slice_root)) for p in slice_root.rglob("*") if p.is_file())
    assert on_disk == sorted(VERDICTS)
    got = {rel: _verdict(doc, rel) for rel in on_disk}
    wrong = {rel: got[rel] for rel in on_disk if not _matches(got[rel], VERDICTS[rel])}
    assert wrong == {}
    # an input error only where the file is a Megatron training run: both are launches Megatron would refuse
    errors = sorted(rel for rel, v in got.items() if isinstance(v, tuple))
    assert errors == [f"{MLM}/examples/gpt3/train_gpt3_175b_distributed.sh", f"{BRIDGE}/scripts/training/launch_with_sbatch.sh"]


def test_a_file_named_gets_its_folder_verdict(walked):
    (_c, out, _e), (code, named_out, named_err) = walked
    folder, named = json.loads(out), json.loads(named_out)
    assert "Traceback" not in named_err
    for rel in VERDICTS:
        assert _verdict(named, rel) == _verdict(folder, rel), rel


def test_checked_launches_read_what_they_say(walked):
    (_c, out, _e), _named = walked
    results = {r["file"]: r for r in json.loads(out)["results"]}
    clip = results[f"{MLM}/examples/multimodal/pretrain_mistral_clip.sh"]
    assert clip["error"] is None, clip["error"]
    assert clip["effective"]["model.tensor_model_parallel_size"]["source"] == "user"
    rl = results[f"{RL}/examples/configs/grpo_math_1B_megatron.yaml"]
    assert rl["error"] is None, rl["error"]
