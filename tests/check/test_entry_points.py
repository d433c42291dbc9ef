"""Which launches are Megatron training launches (config.entry_points), through the CLI: only a launcher of a known
Megatron training entry point is read as a launch; a test run, another framework's trainer or an unknown script is
skipped with the reason -- and a file named explicitly (as pre-commit names each changed file) gets the verdict the
same file gets in a folder run: skipped, exit 0, never exit 2."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

MLM_ENTRY = "from megatron.training import pretrain\n\nif __name__ == '__main__':\n    pretrain(None, None)\n"
BRIDGE_ENTRY = ("from megatron.bridge.training.pretrain import pretrain\n"
                "from megatron.bridge.recipes.llama import llama3_8b_pretrain_config\n\n"
                "def main():\n    pretrain(llama3_8b_pretrain_config(), None)\n")
BRIDGE_MAIN = ("import argparse\n\n" + BRIDGE_ENTRY.replace(
    "    pretrain(llama3_8b_pretrain_config(), None)\n",
    "    parser = argparse.ArgumentParser()\n    parser.add_argument('--tp', type=int, default=1)\n"
    "    args = parser.parse_args()\n    cfg = llama3_8b_pretrain_config()\n"
    "    cfg.model.tensor_model_parallel_size = args.tp\n    pretrain(cfg, None)\n")
    + "\n\nif __name__ == '__main__':\n    main()\n")
TOOL = "import argparse\nimport torch\n\nprint(torch.__version__)\n"
FLAGS = "--tensor-model-parallel-size 2 --num-layers 4 --hidden-size 64 --num-attention-heads 4"

# (launch script, the files beside it, the verdict: "checked", or the start of the skip reason)
CASES = {
    "coverage_pytest": ("torchrun --nproc-per-node 2 -m coverage run -m pytest tests/functional -x\n", {},
                        "not a Megatron training launch: -m coverage is a test run"),
    "pytest": ("python -m torch.distributed.run --nproc_per_node 2 -m pytest -q tests\n", {},
               "not a Megatron training launch: -m pytest is a test run"),
    "verl_trainer": ("torchrun --nproc_per_node 8 -m verl.trainer.fsdp_sft_trainer data.prompt_key=extra_info "
                     "model.partial_pretrain=Qwen/Qwen2.5-0.5B\n", {},
                     "not a Megatron training launch: -m verl.trainer.fsdp_sft_trainer is verl's trainer"),
    "unknown_script": ("torchrun --nproc_per_node 8 my_tool.py --epochs 3\n", {},
                       "not a Megatron training launch: my_tool.py is not a known Megatron training entry point"),
    "script_calls_no_training": ("torchrun --nproc_per_node 8 scripts/tool.py --epochs 3\n",
                                 {"scripts/tool.py": TOOL},
                                 "not a Megatron training launch: tool.py (scripts/tool.py) calls no Megatron training"),
    "test_module_launched": ("torchrun --nproc_per_node 2 tests/test_tensor_dict.py\n",
                             {"tests/test_tensor_dict.py": TOOL},
                             "not a Megatron training launch: test_tensor_dict.py"),
    "train_py_of_another_framework": ("torchrun --nproc_per_node 8 train.py --lr 1e-4\n", {"train.py": TOOL},
                                      "not a Megatron training launch: train.py (train.py) calls no Megatron"),
    "megatron_lm_train_py": (f"torchrun --nproc_per_node 8 examples/vlm/train.py {FLAGS}\n",
                             {"examples/vlm/train.py": MLM_ENTRY}, "checked"),
    "megatron_lm_module": (f"torchrun --nproc_per_node 8 -m examples.mimo.pretrain_mimo {FLAGS}\n",
                           {"examples/mimo/pretrain_mimo.py": MLM_ENTRY}, "checked"),
    "pretrain_gpt_not_at_hand": (f"torchrun --nproc_per_node 8 $MEGATRON/pretrain_gpt.py {FLAGS}\n", {}, "checked"),
    "megatron_lm_script_up_the_tree": (f"torchrun --nproc_per_node 8 ../../pretrain_gpt.py {FLAGS}\n",
                                       {"../../pretrain_gpt.py": MLM_ENTRY}, "checked"),
    # a Bridge script of its own: read as launched when running it builds a run (its main() called), else
    # not a training run (a module that only defines main() trains nothing when torchrun starts it)
    "bridge_script": ("torchrun --nproc_per_node 8 run_llama.py --tp 2\n", {"run_llama.py": BRIDGE_MAIN}, "checked"),
    "bridge_script_without_main_call": ("torchrun --nproc_per_node 8 run_llama.py --tp 2\n", {"run_llama.py": BRIDGE_ENTRY},
                                        "not a training run: it launches the Megatron-Bridge script run_llama.py, which "
                                        "builds no run as a script"),
    "conversion": ("torchrun --nproc_per_node 8 examples/conversion/hf_megatron_roundtrip_multi_gpu.py --hf-model x\n", {},
                   "not a training run: hf_megatron_roundtrip_multi_gpu.py is a checkpoint conversion"),
    "data_preparation_no_launch": ("python tools/preprocess_data.py --input x --output-prefix y\n", {},
                                   "not a launch (no torchrun"),
}


def _layout(tmp_path: Path, name: str) -> Path:
    launch, beside, _ = CASES[name]
    repo = tmp_path / "repo"
    script = repo / "a" / "b" / "launch.sh"
    for rel, text in beside.items():
        p = (script.parent / rel).resolve()
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_text(text)
    script.parent.mkdir(parents=True, exist_ok=True)
    script.write_text("#!/bin/bash\n" + launch)
    return script


def _verdict(doc: dict, path: str) -> str:
    for r in doc["results"]:
        if r["file"] == path:
            return "checked"
    reasons = [s["reason"] for s in doc["skipped"] if s["file"] == path]
    assert len(reasons) == 1, (path, doc["skipped"])
    return reasons[0]


@pytest.mark.parametrize("name", sorted(CASES))
def test_named_and_walked_alike(run_cli, tmp_path, name):
    script = _layout(tmp_path, name)
    expected = CASES[name][2]
    code, out, err = run_cli("check", str(script), "--format", "json", "--exit-zero")
    named = _verdict(json.loads(out), str(script))
    assert "Traceback" not in err
    code_dir, out_dir, _ = run_cli("check", str(script.parent), "--format", "json", "--exit-zero")
    walked = _verdict(json.loads(out_dir), str(script))
    assert named == walked
    assert named.startswith(expected), named
    if expected != "checked":
        assert code == 0  # a skip is never exit 2
        result = run_cli("check", str(script))
        assert result[0] == 0 and f"note: {script}: skipped: {named}" in result[2]


def test_a_checked_megatron_lm_launch_reads_its_flags(run_cli, tmp_path):
    script = _layout(tmp_path, "megatron_lm_train_py")
    code, out, err = run_cli("check", str(script), "--format", "json", "--exit-zero")
    (r,) = json.loads(out)["results"]
    assert r["error"] is None, r["error"]
    assert r["effective"]["model.tensor_model_parallel_size"]["value"] == 2


def test_named_recipe_less_override_file_is_skipped_as_pre_commit_passes_it(run_cli, tmp_path):
    """pre-commit's hook (--configs-only) and a plain check name the file: the folder's verdict, exit 0."""
    conf = tmp_path / "conf"
    conf.mkdir()
    f = conf / "llama_override.yaml"
    f.write_text("model:\n  sequence_parallel: false  # simpler activations while debugging\n"
                 "ddp:\n  overlap_grad_reduce: true\n")
    _c, out_dir, _e = run_cli("check", str(tmp_path), "--format", "json")
    walked = _verdict(json.loads(out_dir), str(f))
    assert walked.startswith("an override file: sets 2 keys")
    for extra in ((), ("--configs-only",)):
        code, out, err = run_cli("check", str(f), "--format", "json", *extra)
        assert code == 0, err
        assert _verdict(json.loads(out), str(f)) == walked


@pytest.mark.parametrize("rel, text, reason", [
    ("tests/test_llama.py", BRIDGE_ENTRY, "a test module (pytest collects test_*.py)"),
    ("tools/convert_llama_ckpt.py", "from megatron.bridge import AutoBridge\nfrom megatron.bridge.training.config import "
     "ConfigContainer\n\ndef export():\n    cfg = ConfigContainer(model=None)\n",
     "not a training run: convert_llama_ckpt.py is a checkpoint conversion / export script"),
    ("pretrain_gpt.py", MLM_ENTRY, "not a training run by itself: pretrain_gpt.py is a Megatron-LM training entry point"),
    ("utils/plot.py", TOOL, "not a training run: builds no ConfigContainer"),
    ("src/megatron/bridge/recipes/llama.py", BRIDGE_ENTRY,
     "a module of the megatron package (megatron.bridge.recipes.llama): library code"),
    ("scripts/training/run_recipe.py", BRIDGE_ENTRY, "not a training run: Megatron-Bridge's recipe runner"),
])
def test_python_files_that_hold_no_run_are_skipped_named_or_walked(run_cli, tmp_path, rel, text, reason):
    f = tmp_path / rel
    f.parent.mkdir(parents=True, exist_ok=True)
    f.write_text(text)
    if rel.startswith("src/"):
        for pkg in ("src/megatron/bridge", "src/megatron/bridge/recipes"):
            (tmp_path / pkg / "__init__.py").write_text("")
    code, out, err = run_cli("check", str(f), "--format", "json")
    assert code == 0, err
    named = _verdict(json.loads(out), str(f))
    assert named.startswith(reason), named
    _c, out_dir, _e = run_cli("check", str(tmp_path), "--format", "json", "--exit-zero")
    assert _verdict(json.loads(out_dir), str(f)) == named


def test_a_bridge_script_in_python_is_checked_as_a_run(run_cli, tmp_path):
    f = tmp_path / "examples" / "finetune_llama.py"
    f.parent.mkdir()
    f.write_text(BRIDGE_ENTRY.replace("def main():\n    ", "cfg = llama3_8b_pretrain_config()\n"
                                      "cfg.model.tensor_model_parallel_size = 4\n").replace("pretrain(llama3_8b_pretrain_config(), None)", ""))
    code, out, err = run_cli("check", str(f), "--format", "json", "--exit-zero")
    (r,) = json.loads(out)["results"]
    assert r["error"] is None, r["error"]
    assert r["effective"]["model.tensor_model_parallel_size"]["value"] == 4
