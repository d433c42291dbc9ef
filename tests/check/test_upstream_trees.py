"""Folder runs over real upstream trees: the example scripts, model cards and override files of Megatron-LM and
Megatron-Bridge vendored under tests/data/upstream (SOURCES.json), walked through the real CLI as a user
walks a repository. Every file is accounted for — checked, or skipped with its reason —, a non-training
file gets no training finding, and a launch checks at the scale asked for."""

from __future__ import annotations

import json
import shutil

import pytest

from conftest import ROOT

UPSTREAM = ROOT / "tests" / "data" / "upstream"
MLM = UPSTREAM / "NVIDIA+Megatron-LM" / "examples"
BRIDGE = UPSTREAM / "NVIDIA-NeMo+Megatron-Bridge" / "examples"

# Each skipped file and the start of its reason (what the summary counts it as).
SKIPPED = {
    "NVIDIA+Megatron-LM/examples/academic_paper_scripts/detxoify_lm/annotations/preprocess.sh": "not a launch",
    "NVIDIA+Megatron-LM/examples/academic_paper_scripts/msdp/prompt_knwl_gen.sh": "a template with placeholders to fill in (<PATH_OF_LANGUAGE_MODEL>, line 15)",
    "NVIDIA+Megatron-LM/examples/academic_paper_scripts/sc21/CONFIG.sh": "a fragment sourced by ",
    "NVIDIA+Megatron-LM/examples/academic_paper_scripts/sc21/run_figure_11.sh": "not a launch",
    "NVIDIA+Megatron-LM/examples/inference/run_offline_inference.sh": "not a training run: -m examples.inference.offline_inference is an inference",
    "NVIDIA+Megatron-LM/examples/mamba/run_text_gen_server_8b.sh": "not a training run: run_hybrid_text_generation_server.py",
    "NVIDIA+Megatron-LM/examples/megatron_fsdp/sbatch_checkpoint_convert.sh": "not a launch",
    "NVIDIA+Megatron-LM/examples/post_training/modelopt/conf/arguments.sh": "a fragment sourced by ",
    "NVIDIA+Megatron-LM/examples/rl/environment_configs/gsm8k.yaml": "not a training config",
    # the --yaml-cfg file of a launch (frameworks/megatron_lm/yaml_cfg.py), read where the launch names it
    "NVIDIA+Megatron-LM/examples/gpt3/gpt_config.yaml": "not a training config: its top-level keys (language_model, model_parallel,",
    "NVIDIA-NeMo+Megatron-Bridge/examples/megatron_mimo/qwen35_vl/slurm_sft.sh": "not a launch",
    "NVIDIA-NeMo+Megatron-Bridge/examples/model_verification_cards/gpt-oss-20b/card.yaml": "not a training config: its top-level keys (title, summary,",
    "NVIDIA-NeMo+Megatron-Bridge/examples/model_verification_cards/qwen3-8b/card.yaml": "not a training config: its top-level keys (title, summary,",
    "NVIDIA-NeMo+Megatron-Bridge/examples/models/deepseek_v4/conversion.sh": "not a launch",
    "NVIDIA-NeMo+Megatron-Bridge/examples/models/glm47/conversion.sh": "not a training run: hf_megatron_roundtrip_multi_gpu.py is a checkpoint conversion",
    "NVIDIA-NeMo+Megatron-Bridge/examples/models/glm47/inference.sh": "not a training run: hf_to_megatron_generate_text.py is an inference",
    "NVIDIA-NeMo+Megatron-Bridge/examples/models/gpt_oss/pack_data_job.sh": "not a launch",
    "NVIDIA-NeMo+Megatron-Bridge/examples/models/qwen/qwen_vl/conf/qwen3_vl_pretrain_override_example.yaml":
        "an override file: sets 54 keys of a ConfigContainer: name its recipe with `# overlap: recipe=NAME` or in pyproject",
    "NVIDIA-NeMo+Megatron-Bridge/examples/quantization/conf/quantized_llama3_8b_pretrain_override_example.yaml":
        "an override file: sets 11 keys of a ConfigContainer",
    "NVIDIA-NeMo+Megatron-Bridge/examples/models/qwen/qwen3_omni/local_train_thinker_full.sh":
        "not a Megatron training launch as far as can be told",
    "NVIDIA-NeMo+Megatron-Bridge/tests/functional_tests/launch_scripts/h100/active/L0_Launch_training_pretrain.sh":
        "not a Megatron training launch: -m coverage is a test run",
}
FRAGMENT_OF = {  # the script that sources it, and whether the fragment is read there
    "NVIDIA+Megatron-LM/examples/academic_paper_scripts/sc21/CONFIG.sh":
        "sc21/run_figure_11.sh (line 36), not a launch itself; neither is NVIDIA+Megatron-LM/examples/academic_paper_scripts/"
        "sc21/run_figure_11.sh, so it is not checked",
    "NVIDIA+Megatron-LM/examples/post_training/modelopt/conf/arguments.sh":
        "modelopt/train.sh (line 6), not a launch itself; read where that script is checked",
}
# Files that are no training run: whatever else happens, no finding may be reported on them.
NOT_TRAINING = [k for k, v in SKIPPED.items() if v.startswith(("not a training", "an override", "a template"))]


@pytest.fixture(scope="module")
def walked(tmp_path_factory):
    """One folder run over both vendored trees (copied, so paths are short and stable)."""
    import os

    from conftest import run_entry_point

    root = tmp_path_factory.mktemp("upstream")
    for name in ("NVIDIA+Megatron-LM", "NVIDIA-NeMo+Megatron-Bridge"):
        shutil.copytree(UPSTREAM / name, root / name, symlinks=True)
    here = os.getcwd()
    os.chdir(root)
    try:
        code, out, err = run_entry_point("check", "NVIDIA+Megatron-LM", "NVIDIA-NeMo+Megatron-Bridge", "--format", "json")
        text_code, text_out, text_err = run_entry_point("check", "NVIDIA+Megatron-LM", "NVIDIA-NeMo+Megatron-Bridge")
        quiet = run_entry_point("check", "-q", "NVIDIA+Megatron-LM", "NVIDIA-NeMo+Megatron-Bridge")
    finally:
        os.chdir(here)
    return root, code, json.loads(out), err, (text_code, text_out, text_err), quiet


def test_every_file_is_checked_or_skipped_with_its_reason(walked):
    root, code, doc, err, _text, _quiet = walked
    assert "Traceback" not in err
    results = {r["file"]: r for r in doc["results"]}
    skipped = {s["file"]: s["reason"] for s in doc["skipped"]}
    on_disk = sorted(str(p.relative_to(root)) for p in root.rglob("*")
                     if p.is_file() and p.suffix in (".sh", ".yaml", ".yml"))
    assert len(on_disk) == 46
    dropped = [f for f in on_disk if f not in results and f not in skipped]
    assert dropped == []
    assert not set(results) & set(skipped)
    assert {f: skipped[f][:len(SKIPPED[f])] for f in SKIPPED if f in skipped} == SKIPPED
    # the Python files that hold no run (__init__.py, the perf recipes' shared helpers, tests, entry points) are
    # skipped, saying so
    python = {f: r for f, r in skipped.items() if f.endswith(".py")}
    assert len(python) == 74
    assert sum(r.startswith("not a training run: builds no ConfigContainer") for r in python.values()) == 67
    assert set(skipped) - set(python) == set(SKIPPED)
    for fragment, by in FRAGMENT_OF.items():
        assert skipped[fragment].endswith(by)
    # Megatron-FSDP's sbatch example: the launch is the bash -x -c string of the here-document sbatch is given
    fsdp = results["NVIDIA+Megatron-LM/examples/megatron_fsdp/sbatch_mfsdp_deepseek_v3.sh"]
    assert fsdp["error"] is None, fsdp["error"]
    assert fsdp["effective"]["model.expert_model_parallel_size"]["value"] == 8
    assert fsdp["effective"]["ddp.overlap_grad_reduce"] == {"value": True, "source": "user", "reason": "--overlap-grad-reduce on line 35"}
    # the fragment is read through the script that sources it by a path known statically
    train = results["NVIDIA+Megatron-LM/examples/post_training/modelopt/train.sh"]
    assert "line 6: read conf/arguments.sh, which the script sources; what it sets is placed on that line" in train["notes"]
    _code, _out, text_err = walked[4]
    for f, reason in skipped.items():
        if f not in python:
            assert f"note: {f}: skipped: {reason}\n" in text_err
    assert "note: 72 Python files skipped: not a training run (e.g. " in text_err


def test_summary_counts_each_kind_and_quiet_keeps_it_to_one_line(walked):
    _root, _code, _doc, _err, (_c, text_out, _e), (_qc, qout, qerr) = walked
    line = next(line for line in text_out.splitlines() if " skipped (" in line)
    counts = ("95 skipped (76 not a training run, 6 not a launch, 4 not a training config, 2 fragment sourced by another "
              "script, 2 not a Megatron training launch, 2 override file without a recipe, "
              "1 megatron package module, 1 template with placeholders, 1 test module)")
    assert counts in line
    skip_lines = [line for line in qerr.splitlines() if "skipped" in line]
    assert skip_lines == ["note: " + counts]


def test_no_training_finding_on_a_non_training_file(walked):
    _root, _code, doc, _err, _text, _quiet = walked
    assert len(NOT_TRAINING) == 11
    for r in doc["results"]:
        assert r["file"] not in NOT_TRAINING


@pytest.mark.parametrize("rel", [
    "models/glm47/conversion.sh", "models/glm47/inference.sh", "model_verification_cards/qwen3-8b/card.yaml",
])
def test_a_named_non_training_bridge_file_is_skipped_not_checked(run_cli, rel):
    code, out, err = run_cli("check", str(BRIDGE / rel), "--format", "json")
    assert code == 0, err
    doc = json.loads(out)
    assert doc["results"] == [] and len(doc["skipped"]) == 1


def test_a_named_inference_launch_gets_no_training_rule(run_cli):
    code, out, err = run_cli("check", str(MLM / "mamba" / "run_text_gen_server_8b.sh"), "--format", "json")
    assert code == 0, err
    doc = json.loads(out)
    assert doc["results"] == []
    assert doc["skipped"][0]["reason"].startswith("not a training run: run_hybrid_text_generation_server.py")


def test_world_size_flag_beats_the_launch_sizes(run_cli):
    script = MLM / "bert" / "train_bert_340m_distributed.sh"
    code, out, _ = run_cli("check", str(script), "--format", "json")
    own = json.loads(out)["results"][0]
    assert own["target"]["world_size"] == 8 and own["target"]["sources"]["world_size"] == "launch"
    code, out, _ = run_cli("check", str(script), "--format", "json", "--world-size", "128")
    r = json.loads(out)["results"][0]
    assert r["target"]["world_size"] == 128 and r["target"]["sources"]["world_size"] == "flag"
    assert "world size 128 from command line (flag > file): the launch's own sizes (line 7) give 8" in r["notes"]
    code, out, _ = run_cli("check", str(script), "--format", "json", "--nodes", "16", "--gpus-per-node", "8")
    assert json.loads(out)["results"][0]["target"]["world_size"] == 128
    # the LM001 world-size assertion of the one-node launch does not hold at 128 GPUs
    assert any(f["code"] == "LM001" for f in own["findings"])
    assert not any(f["code"] == "LM001" for f in r["findings"])


def test_set_feeds_a_variable_default(run_cli, tmp_path):
    script = tmp_path / "launch.sh"
    script.write_text('NNODES=${SLURM_NNODES:-"1"}\nTP=${TP:-2}\n'
                      "torchrun --nproc_per_node 8 --nnodes $NNODES pretrain_gpt.py --tensor-model-parallel-size $TP "
                      "--num-layers 4 --hidden-size 64 --num-attention-heads 4 --seq-length 128 "
                      "--max-position-embeddings 128 --micro-batch-size 1\n")
    code, out, _ = run_cli("check", str(script), "--format", "json")
    r = json.loads(out)["results"][0]
    assert (r["target"]["world_size"], r["effective"]["model.tensor_model_parallel_size"]["value"]) == (8, 2)
    code, out, _ = run_cli("check", str(script), "--format", "json", "--set", "SLURM_NNODES=16", "--set", "TP=4")
    r = json.loads(out)["results"][0]
    assert (r["target"]["world_size"], r["target"]["data_parallel_size"]) == (128, 32)
    assert r["effective"]["model.tensor_model_parallel_size"]["value"] == 4
    code, _out, err = run_cli("check", str(script), "--set", "1X=2")
    assert code == 2 and "--set 1X=2: expected VAR=VALUE" in err


def test_bash_c_string_and_placeholders_are_read(run_cli):
    # srun ... sh -c "${CMD}": the string is the launch
    code, out, err = run_cli("check", str(MLM / "academic_paper_scripts" / "sc21" / "SRUN.sh"), "--format", "json")
    r = json.loads(out)["results"][0]
    assert r["error"] is None, r["error"]
    # WORKSPACE="<some dir>": a placeholder; only the values that use it are unknown, the launch is read
    code, out, err = run_cli("check", str(MLM / "multimodal" / "nvlm" / "sft_34b_internvit.sh"), "--format", "json")
    r = json.loads(out)["results"][0]
    assert r["error"] is None, r["error"]
    assert r["effective"]["model.tensor_model_parallel_size"]["value"] == 8


def test_run_recipe_launch_is_a_bridge_run(run_cli, tmp_path):
    """Bridge's long-context example, with the recipe's function name (the alias the script uses,
    qwen3_600m_sft_128k_config, resolves where the catalog has Bridge's aliases): CP 8, DP 1 as the recipe
    runs, the launch's overrides layered on it, the world size from torchrun."""
    text = (BRIDGE / "training_features" / "long_context" / "qwen3_600m_sft_128k.sh").read_text()
    script = tmp_path / "qwen3_600m_sft_128k.sh"
    script.write_text(text.replace("--recipe ${MODEL_NAME}_sft_128k_config",
                                   "--recipe ${MODEL_NAME}_sft_8gpu_h100_bf16_128k_config"))
    code, out, err = run_cli("check", str(script), "--format", "json")
    r = json.loads(out)["results"][0]
    assert r["error"] is None, r["error"]
    eff = r["effective"]
    assert eff["model.context_parallel_size"]["value"] == 8
    assert eff["model.tensor_model_parallel_size"]["value"] == 1
    assert (r["target"]["world_size"], r["target"]["data_parallel_size"]) == (8, 1)
    assert any(n.startswith("read as a Megatron-Bridge run: scripts/training/run_recipe.py --recipe "
                            "qwen3_600m_sft_8gpu_h100_bf16_128k_config (line 38), 12 override(s)") for n in r["notes"])
    assert not any(f["code"].startswith("LM") for f in r["findings"])
    # an override of the launch is the script's line; -tp is the runner's convenience flag
    script.write_text(script.read_text().replace("    train.train_iters=$TRAIN_ITERS \\\n",
                                                 "    -cp 4 model.overlap_p2p_comm=true \\\n"))
    code, out, err = run_cli("check", str(script), "--format", "json", "--world-size", "16")
    r = json.loads(out)["results"][0]
    assert r["effective"]["model.context_parallel_size"]["value"] == 4
    assert (r["target"]["world_size"], r["target"]["data_parallel_size"]) == (16, 4)


def test_run_recipe_alias_of_the_upstream_script():
    from overlap_cli.frameworks.bridge import recipes

    if recipes.canonical("0.6.2", "qwen3_600m_sft_128k_config") is None:
        pytest.skip("the catalog has no aliases of Bridge's recipes yet")
    from conftest import run_entry_point

    code, out, err = run_entry_point("check", str(BRIDGE / "training_features" / "long_context" / "qwen3_600m_sft_128k.sh"),
                                     "--format", "json")
    r = json.loads(out)["results"][0]
    assert r["effective"]["model.context_parallel_size"]["value"] == 8
    assert r["target"]["data_parallel_size"] == 1


def test_run_recipe_refuses_what_the_runner_refuses(run_cli, tmp_path):
    script = tmp_path / "run.sh"
    script.write_text("torchrun --nproc_per_node 8 scripts/training/run_recipe.py "
                      "--recipe qwen3_600m_sft_8gpu_h100_bf16_128k_config --config-file conf/x.yaml\n")
    code, out, err = run_cli("check", str(script))
    assert code == 2 and "run.sh:1:" in err and "run_recipe.py: Unknown option: --config-file" in err
    script.write_text("torchrun --nproc_per_node 8 scripts/training/run_recipe.py --recipe no_such_pretrain_config\n")
    code, out, err = run_cli("check", str(script))
    assert code == 2 and "run_recipe.py --recipe no_such_pretrain_config: not in overlap-cli's catalog of Megatron-Bridge 0.6.2" in err


def test_diff_of_scripts_ignores_moved_lines_and_takes_vs_world_size(run_cli, tmp_path):
    flags = ("--num-layers 4 --hidden-size 64 --num-attention-heads 4 --seq-length 128 "
             "--max-position-embeddings 128 --micro-batch-size 1")
    one, two = tmp_path / "one.sh", tmp_path / "two.sh"
    one.write_text(f"torchrun --nproc_per_node 8 pretrain_gpt.py --tensor-model-parallel-size 2 --sequence-parallel {flags}\n")
    two.write_text(f"# moved down\n\ntorchrun --nproc_per_node 8 pretrain_gpt.py \\\n  --tensor-model-parallel-size 2 \\\n"
                   f"  --sequence-parallel {flags}\n")
    code, out, err = run_cli("diff", str(one), str(two))
    assert code == 0 and "no difference in the effective settings or findings" in out, out + err
    code, out, err = run_cli("diff", str(one), "--vs-world-size", "64")
    assert "target: world size 8 -> 64, DP 4 -> 32" in out, out + err


def test_run_recipe_under_srun_runs_on_the_jobs_task_count(run_cli):
    """Bridge's nemotron_3_omni SFT example: sbatch --nodes=2 --ntasks-per-node=8, ``srun ... bash -c "$CMD"``
    with run_recipe.py. Bridge's world size is srun's SLURM_NTASKS (megatron/core/_rank_utils.py:63-68), 16,
    not the 4 of the recipe's name, so EP 8 fits the expert grid and DP313 does not fire."""
    script = BRIDGE / "models" / "nemotron" / "nemotron_3_omni" / "slurm_sft_cord_v2.sh"
    code, out, err = run_cli("check", str(script), "--format", "json")
    r = json.loads(out)["results"][0]
    assert r["error"] is None, r["error"]
    assert (r["target"]["world_size"], r["target"]["sources"]["world_size"]) == (16, "launch")
    assert "world size 16 from the launch's sizes (line 33)" in r["notes"]
    assert not [f for f in r["findings"] if f["code"] == "DP313"]


def test_run_recipe_of_a_recipe_with_an_unknown_model_states_no_default(run_cli):
    """nemotron_3_nano_peft's model comes from a Hugging Face config and its env_vars from a dict the tool
    cannot read: under the launch, the model's overlap settings and the recipe's environment are unknown
    with the reason, not class defaults, and no finding is made of them."""
    script = BRIDGE / "models" / "nemotron" / "nemotron_3" / "nano" / "slurm_peft.sh"
    code, out, err = run_cli("check", str(script), "--format", "json")
    r = json.loads(out)["results"][0]
    assert r["error"] is None, r["error"]
    eff = r["effective"]
    for key in ("model.tp_comm_overlap", "model.overlap_p2p_comm", "env.TORCH_NCCL_HIGH_PRIORITY",
                "env.CUDA_DEVICE_MAX_CONNECTIONS"):
        assert eff[key]["source"] == "unknown", key
        assert "nemotron_3_nano.py:" in eff[key]["reason"], key
    assert eff["ddp.overlap_grad_reduce"]["source"] == "user"  # what the recipe does set stays known
    assert r["target"]["data_parallel_size"] is None  # TP and PP are the launch's $TP / $PP
    assert not [f for f in r["findings"] if f["key"] and f["key"].startswith(("env_vars.", "model."))]


def test_run_recipe_override_with_a_value_from_a_loop_is_an_unknown_input(run_cli):
    """nemotron_3 nano's pretrain example loops over parallelism layouts (model.tensor_model_parallel_size=$TP):
    TP is unknown, so "TP overlap requested but TP=1" (the recipe's value the launch replaces) is no finding;
    it is named among the findings that depend on unknown keys."""
    script = BRIDGE / "models" / "nemotron" / "nemotron_3" / "nano" / "slurm_pretrain.sh"
    code, out, err = run_cli("check", str(script), "--format", "json")
    r = json.loads(out)["results"][0]
    assert r["error"] is None, r["error"]
    assert r["effective"]["model.tensor_model_parallel_size"]["source"] == "unknown"
    assert r["effective"]["model.tp_comm_overlap"]["source"] == "unknown"
    assert not [f for f in r["findings"] if f["code"] == "TP101"]
    assert any(n.startswith("findings that depend on keys the run leaves unknown") and "TP101" in n for n in r["notes"])
