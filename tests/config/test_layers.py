"""A recipe + override files + dotlists, through the CLI: the merged run Bridge's entry points build
(process_config_with_overrides), with the layer of every effective value and findings placed in the layer
that wrote the value. One case per recipe family of megatron-bridge 0.6.2's catalog (it has no Kimi, GLM
or Mixtral recipes; its MoE families are Qwen3-MoE, DeepSeek-V3, GPT-OSS, OLMoE and Nemotron-3-Nano)."""

from __future__ import annotations

import json

import pytest

CO_TARGET = "megatron.bridge.training.comm_overlap.CommOverlapConfig"

# (id, recipe, override file, dotlists, extra flags,
#  {effective key: (value, layer)}, (code, line) of a finding at the override file's line or (code, "recipe"))
RECIPES = [
    ("llama3", "llama3_70b_pretrain_64gpu_h100_bf16_config",
     "model:\n  tensor_model_parallel_size: 4  # tp\nddp:\n  overlap_grad_reduce: false\n",
     ["model.context_parallel_size=1"], [],
     {"model.tensor_model_parallel_size": (4, "over.yaml:2"), "model.context_parallel_size": (1, "command line"),
      "model.pipeline_model_parallel_size": (4, "recipe"), "model.tp_comm_overlap": (True, "recipe"),
      "ddp.overlap_grad_reduce": (True, "bridge-auto"), "ddp.grad_reduce_in_fp32": (False, "mixed-precision"),
      "env.CUDA_DEVICE_MAX_CONNECTIONS": ("1", "recipe")},
     ("CFG005", 4)),
    ("llama31", "llama31_8b_pretrain_2gpu_h100_bf16_config",
     f"model:\n  tensor_model_parallel_size: 2\n  sequence_parallel: true\ncomm_overlap:\n  _target_: {CO_TARGET}\n"
     "  tp_comm_overlap: true\n", [], ["--world-size", "8"],
     {"model.tensor_model_parallel_size": (2, "over.yaml:2"), "model.sequence_parallel": (True, "over.yaml:3"),
      "model.tp_comm_overlap": (True, "over.yaml:6"), "model.tp_comm_bootstrap_backend": ("nccl", "default"),
      "ddp.overlap_grad_reduce": (True, "bridge-auto")},
     ("ENV501", "recipe")),
    ("llama32", "llama32_1b_pretrain_1gpu_h100_bf16_config",
     "ddp:\n  overlap_grad_reduce: true\n  use_distributed_optimizer: false\n", [], ["--world-size", "8"],
     # Bridge syncs use_distributed_optimizer with the optimizer's (training/config.py:1955-1967)
     {"ddp.overlap_grad_reduce": (True, "over.yaml:2"), "ddp.use_distributed_optimizer": (True, "bridge-auto"),
      "model.tensor_model_parallel_size": (1, "recipe")},
     None),
    ("qwen25", "qwen25_7b_pretrain_2gpu_h100_bf16_config",
     "model:\n  pipeline_model_parallel_size: 2\n  virtual_pipeline_model_parallel_size: 2\n", [], ["--world-size", "8"],
     {"model.pipeline_model_parallel_size": (2, "over.yaml:2"), "model.virtual_pipeline_model_parallel_size": (2, "over.yaml:3"),
      # comm_overlap is null in this recipe: nothing derives the p2p flags, the recipe's stay
      "model.overlap_p2p_comm": (False, "recipe"), "env.NCCL_P2P_NET_CHUNKSIZE": (None, "default")},
     None),
    ("qwen3-moe", "qwen3_30b_a3b_pretrain_16gpu_h100_bf16_config",
     "comm_overlap:\n  overlap_moe_expert_parallel_comm: true\n", [], [],
     {"model.overlap_moe_expert_parallel_comm": (True, "over.yaml:2"), "model.tp_comm_overlap": (False, "forced-off"),
      "ddp.overlap_grad_reduce": (True, "bridge-auto")},
     ("TP101", "recipe")),
    ("deepseek", "deepseek_v3_pretrain_64gpu_h100_bf16_config",
     "comm_overlap:\n  tp_comm_overlap: false\n", ["model.sequence_parallel=false"], [],
     {"model.tp_comm_overlap": (False, "over.yaml:2"), "model.sequence_parallel": (False, "command line"),
      "model.overlap_p2p_comm": (True, "bridge-auto")},
     None),
    ("gpt-oss", "gpt_oss_20b_pretrain_16gpu_h100_bf16_config",
     "mixed_precision: bf16_with_fp8_current_scaling_mixed\n", [], [],
     {"ddp.fp8_param_gather": (True, "mixed-precision"), "ddp.grad_reduce_in_fp32": (True, "mixed-precision"),
      "model.pipeline_model_parallel_size": (4, "recipe")},
     None),
    ("nemotronh", "nemotronh_8b_pretrain_2gpu_h100_bf16_config",
     "model:\n  tensor_model_parallel_size: 2\n", [], [],
     {"model.tensor_model_parallel_size": (2, "over.yaml:2"), "ddp.overlap_grad_reduce": (False, "bridge-auto")},
     ("ENV501", "recipe")),
    ("nemotron-3-nano", "nemotron_3_nano_pretrain_16gpu_h100_bf16_config",
     "ddp:\n  bucket_size: 1000\n", [], [],
     {"ddp.bucket_size": (134217728, "bridge-auto"), "model.tp_comm_overlap": (False, "forced-off")},
     ("CFG005", 2)),
    ("gemma3", "gemma3_1b_pretrain_1gpu_h100_bf16_config",
     "mixed_precision:\n  grad_reduce_in_fp32: false\n", [], ["--world-size", "2"],
     {"ddp.overlap_grad_reduce": (True, "recipe")},
     ("CFG006", 1)),
    ("olmoe", "olmoe_7b_pretrain_8gpu_h100_bf16_config",
     "model:\n  expert_model_parallel_size: 4\n  tensor_model_parallel_size: 2\n",
     ["++model.moe_shared_expert_overlap=true", "+model.my_note=1", "model.tensor_model_parallel_size=1"], [],
     {"model.tensor_model_parallel_size": (1, "command line"), "ddp.overlap_grad_reduce": (True, "bridge-auto")},
     None),
    ("qwen2", "qwen2_7b_pretrain_2gpu_h100_bf16_config",
     'env_vars:\n  CUDA_DEVICE_MAX_CONNECTIONS: "1"\n', [], [],
     {"env.CUDA_DEVICE_MAX_CONNECTIONS": ("1", "over.yaml:2"), "model.tensor_model_parallel_size": (2, "recipe")},
     None),
]


def check_json(run_cli, *args):
    code, out, err = run_cli("check", *args, "--show-effective", "--format", "json")
    assert code in (0, 1), err
    return json.loads(out)["results"]


@pytest.mark.parametrize("name, recipe, text, dotlists, flags, want, finding", RECIPES, ids=[c[0] for c in RECIPES])
def test_recipe_with_override_file(run_cli, tmp_path, monkeypatch, name, recipe, text, dotlists, flags, want, finding):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "over.yaml").write_text(text)
    [result] = check_json(run_cli, "--recipe", recipe, "over.yaml", *dotlists, *flags)
    assert result["error"] is None, result["error"]
    assert result["target"]["recipe"] == recipe
    eff = result["effective"]
    for key, (value, layer) in want.items():
        got_layer = eff[key]["layer"]
        assert eff[key]["value"] == value, (key, eff[key])
        assert got_layer == (f"recipe {recipe}" if layer == "recipe" else layer), (key, eff[key])
    # every value of a merged run names its layer
    assert all(v.get("layer") for v in eff.values())
    if finding is not None:
        code, where = finding
        hits = [f for f in result["findings"] if f["code"] == code]
        assert hits, [f["code"] for f in result["findings"]]
        if where == "recipe":
            assert hits[0]["origin"] == f"recipe {recipe}" and hits[0]["line"] is None
        else:
            assert hits[0]["line"] == where and hits[0].get("origin") is None


def test_text_output_names_the_layer(run_cli, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "over.yaml").write_text("model:\n  tensor_model_parallel_size: 2\n")
    recipe = "qwen3_30b_a3b_pretrain_16gpu_h100_bf16_config"
    code, out, _ = run_cli("check", "--recipe", recipe, "over.yaml", "--show-effective")
    assert code == 1
    assert "set in over.yaml:2" in out
    # a finding on a value of the recipe: the file, then the layer and key the value came from
    assert f"over.yaml (recipe {recipe}: model.sequence_parallel): TP102 warning:" in out
    assert f"model.sequence_parallel  " in out and f"set in recipe {recipe}" in out


def test_several_override_files_later_wins(run_cli, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "a.yaml").write_text("model:\n  tensor_model_parallel_size: 2\n  sequence_parallel: true\n")
    (tmp_path / "b.yaml").write_text("# second\nmodel:\n  tensor_model_parallel_size: 4\n")
    results = check_json(run_cli, "--recipe", "qwen25_7b_pretrain_2gpu_h100_bf16_config", "a.yaml", "b.yaml",
                         "--world-size", "8")
    assert len(results) == 1 and results[0]["file"] == "b.yaml"
    eff = results[0]["effective"]
    assert eff["model.tensor_model_parallel_size"]["value"] == 4
    assert eff["model.tensor_model_parallel_size"]["layer"] == "b.yaml:3"
    assert eff["model.sequence_parallel"] == {**eff["model.sequence_parallel"], "value": True, "layer": "a.yaml:3"}
    assert results[0]["target"]["data_parallel_size"] == 2
    # the other order: a.yaml is merged last and wins
    eff = check_json(run_cli, "--recipe", "qwen25_7b_pretrain_2gpu_h100_bf16_config", "b.yaml", "a.yaml",
                     "--world-size", "8")[0]["effective"]
    assert (eff["model.tensor_model_parallel_size"]["value"], eff["model.tensor_model_parallel_size"]["layer"]) == (2, "a.yaml:2")


def test_a_lower_file_value_is_the_findings_origin(run_cli, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "lower.yaml").write_text("model:\n  sequence_parallel: false\n")
    (tmp_path / "top.yaml").write_text("ddp:\n  overlap_param_gather: true\n")
    [r] = check_json(run_cli, "--recipe", "llama3_70b_pretrain_64gpu_h100_bf16_config", "lower.yaml", "top.yaml")
    [tp102] = [f for f in r["findings"] if f["code"] == "TP102"]
    assert tp102["origin"] == "lower.yaml:2" and tp102["line"] is None


R70 = "llama3_70b_pretrain_64gpu_h100_bf16_config"


@pytest.mark.parametrize("dotlist, key, value, layer", [
    ("model.tensor_model_parallel_size=2", "model.tensor_model_parallel_size", 2, "command line"),
    ("++model.tensor_model_parallel_size=8", "model.tensor_model_parallel_size", 8, "command line"),
    ("+model.brand_new_key=3", "model.tensor_model_parallel_size", 4, "recipe"),
    ("model.virtual_pipeline_model_parallel_size=null", "model.virtual_pipeline_model_parallel_size", None, "command line"),
    # ~key: the merged dict has no entry, so the recipe's dataclass keeps its own value (not the file's)
    ("~model.sequence_parallel", "model.sequence_parallel", True, "recipe"),
    ("~comm_overlap", "model.overlap_p2p_comm", True, "bridge-auto"),  # the recipe's comm_overlap still runs
], ids=["set", "force", "add", "null", "delete-field", "delete-section"])
def test_dotlists_in_struct_mode(run_cli, tmp_path, monkeypatch, dotlist, key, value, layer):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "over.yaml").write_text("model:\n  sequence_parallel: false\n")
    [r] = check_json(run_cli, "--recipe", R70, "over.yaml", dotlist)
    assert r["error"] is None, r["error"]
    v = r["effective"][key]
    assert (v["value"], v["layer"]) == (value, f"recipe {R70}" if layer == "recipe" else layer)


def test_recipe_alone_and_without_config_suffix(run_cli):
    [a] = check_json(run_cli, "--recipe", R70)
    [b] = check_json(run_cli, "--recipe", R70[: -len("_config")])
    assert a["file"] == b["file"] == f"recipe {R70}"
    assert a["effective"] == b["effective"]
    assert a["target"]["world_size"] == 64 and a["target"]["sources"]["world_size"] == "recipe"


def test_base_file_from_a_dump(run_cli, tmp_path, monkeypatch, corpus):
    import shutil

    monkeypatch.chdir(tmp_path)
    row = next(r for r in corpus if r["recipe"] == R70)
    shutil.copy(row["path"], tmp_path / "run_config.yaml")
    (tmp_path / "over.yaml").write_text("model:\n  sequence_parallel: false\n")
    [based] = check_json(run_cli, "--base", "run_config.yaml", "over.yaml", "--world-size", "64", "--gpu", "h100")
    [recipe] = check_json(run_cli, "--recipe", R70, "over.yaml")
    assert based["error"] is None
    eff = based["effective"]
    assert eff["model.sequence_parallel"]["layer"] == "over.yaml:2"
    line = eff["model.pipeline_model_parallel_size"]["layer"]
    assert line.startswith("run_config.yaml:") and int(line.split(":")[1]) > 1
    assert {k: v["value"] for k, v in eff.items()} == {k: v["value"] for k, v in recipe["effective"].items()}
    assert sorted(f["code"] for f in based["findings"]) == sorted(f["code"] for f in recipe["findings"])
    # a finding on a value of the dump points at its line there
    [dp301] = [f for f in based["findings"] if f["code"] == "DP301"]
    assert dp301["origin"].startswith("run_config.yaml:") and dp301["line"] is None


def test_a_dotlist_mapping_onto_a_null_section(run_cli):
    """+comm_overlap.KEY=... onto a recipe whose comm_overlap is null starts a plain dict (CFG006, placed on
    the command line); onto a section a file set to null over the recipe's dataclass, Bridge recurses into
    the recipe's object and the run is fine."""
    gemma = "gemma3_1b_pretrain_1gpu_h100_bf16_config"
    [r] = check_json(run_cli, "--recipe", gemma, "+comm_overlap.overlap_grad_reduce=true", "--world-size", "8")
    [cfg006] = [f for f in r["findings"] if f["code"] == "CFG006"]
    assert (cfg006["severity"], cfg006["origin"], cfg006["line"]) == ("error", "command line", None)
    [r] = check_json(run_cli, "--recipe", gemma, f"++comm_overlap={{_target_:{CO_TARGET},tp_comm_overlap:false}}",
                     "--world-size", "8")
    assert not [f for f in r["findings"] if f["severity"] == "error"]


def test_null_in_a_file_then_a_dotlist_mapping(run_cli, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "over.yaml").write_text("comm_overlap: null\n")
    [r] = check_json(run_cli, "--recipe", R70, "over.yaml", "+comm_overlap.tp_comm_overlap=false")
    assert not [f for f in r["findings"] if f["code"] == "CFG006"]
    assert (r["effective"]["model.tp_comm_overlap"]["value"], r["effective"]["model.tp_comm_overlap"]["layer"]) == (False, "command line")
