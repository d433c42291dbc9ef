"""Bridge runs written in Python, through the real CLI: read statically (never imported), each key with its
``FILE:LINE``, what the reader cannot evaluate unknown with the reason, bad Python one line, exit 2."""

from __future__ import annotations

import json
import textwrap

import pytest

IMPORTS = """\
from megatron.bridge.recipes.llama import llama3_70b_pretrain_config
from megatron.bridge.training.comm_overlap import CommOverlapConfig, userbuffers_bf16_h100_h12288_tp4_mbs1_seqlen2048
from megatron.bridge.training.config import ConfigContainer
from megatron.bridge.training.pretrain import pretrain
from megatron.bridge.training.gpt_step import forward_step
"""

# The card's own example of a Bridge override, written as a script ...
SCRIPT = IMPORTS + """
cfg = llama3_70b_pretrain_config()
cfg.model.tensor_model_parallel_size = 4
cfg.comm_overlap = CommOverlapConfig(tp_comm_overlap=True)
cfg.comm_overlap.tp_comm_overlap_cfg = userbuffers_bf16_h100_h12288_tp4_mbs1_seqlen2048
cfg.ddp.overlap_grad_reduce = True

pretrain(cfg, forward_step)
"""

# ... and as a recipe function.
FUNCTION = IMPORTS + """

def my_recipe() -> ConfigContainer:
    cfg = llama3_70b_pretrain_config()
    cfg.model.tensor_model_parallel_size = 4
    cfg.comm_overlap = CommOverlapConfig(tp_comm_overlap=True)
    cfg.comm_overlap.tp_comm_overlap_cfg = userbuffers_bf16_h100_h12288_tp4_mbs1_seqlen2048
    cfg.ddp.overlap_grad_reduce = True
    return cfg
"""


def _check(run_cli, path, *flags):
    code, out, err = run_cli("check", str(path), "--format", "json", "--world-size", "64", *flags)
    return code, json.loads(out)["results"], err


def _eff(result):
    return {k: (v["value"], v["source"], v.get("layer")) for k, v in result["effective"].items()}


@pytest.mark.parametrize("text, label", [(SCRIPT, "train.py"), (FUNCTION, "train.py::my_recipe")])
def test_the_cards_snippet_as_a_script_and_as_a_function(tmp_path, run_cli, text, label):
    path = tmp_path / "train.py"
    path.write_text(text)
    code, results, _ = _check(run_cli, path)
    assert [r["file"] for r in results] == [str(tmp_path / label)]
    r = results[0]
    assert r["error"] is None, r["error"]
    eff = _eff(r)
    first = 8 if label == "train.py" else 10  # the line of the first assignment
    assert eff["model.tensor_model_parallel_size"] == (4, "user", f"{path}:{first}")
    assert eff["ddp.overlap_grad_reduce"][0] is True
    # The recipe's sequence_parallel (the alias names llama3_70b_pretrain_32gpu_h100_bf16_config, TP 4, SP on)
    # stays, so TP overlap is effective, with the preset the script named.
    assert eff["model.tp_comm_overlap"][:2] == (True, "user")
    assert eff["model.tp_comm_overlap_cfg"][0]["preset"] == "userbuffers_bf16_h100_h12288_tp4_mbs1_seqlen2048"
    assert r["target"]["recipe"] == "llama3_70b_pretrain_32gpu_h100_bf16_config"
    # A finding about a key the script wrote points at the script's line.
    for f in r["findings"]:
        if f["key"] == "comm_overlap.tp_comm_overlap_cfg":
            assert f["line"] == first + 2


def test_values_the_reader_cannot_evaluate_are_unknown_with_file_and_line(tmp_path, run_cli):
    path = tmp_path / "run.py"
    path.write_text(IMPORTS + textwrap.dedent("""
        import os
        TP = 2
        cfg = llama3_70b_pretrain_config()
        cfg.model.tensor_model_parallel_size = TP * 2
        cfg.model.pipeline_model_parallel_size = int(os.environ["PP"])
        if TP > 1:
            cfg.model.sequence_parallel = False
        else:
            cfg.model.sequence_parallel = True
        cfg.env_vars = {**cfg.env_vars, "CUDA_DEVICE_MAX_CONNECTIONS": 1}
        pretrain(cfg, forward_step)
    """))
    code, results, _ = _check(run_cli, path)
    r = results[0]
    assert r["error"] is None, r["error"]
    eff = _eff(r)
    assert eff["model.tensor_model_parallel_size"][:2] == (4, "user")  # module constant, literal arithmetic
    pp = r["effective"]["model.pipeline_model_parallel_size"]
    assert pp["source"] == "unknown" and f"{path}:11" in pp["reason"], pp
    assert eff["model.sequence_parallel"][:2] == (False, "user")  # an if on a literal
    # DP = 64 / (TP * PP * CP) with PP unknown: what Bridge's DP path decides from it is unknown too.
    assert r["effective"]["ddp.overlap_grad_reduce"]["source"] == "unknown"
    assert r["effective"]["env.CUDA_DEVICE_MAX_CONNECTIONS"]["value"] in (1, "1")


def test_a_field_set_on_an_unknown_model_stays_known_through_an_undecidable_if(tmp_path, run_cli):
    # Bridge's perf recipes: the model comes from a Hugging Face config, the recipe sets the layout on it,
    # then a helper branches on a model field (perf_recipes/_common.py's CUDA-graph check).
    path = tmp_path / "run.py"
    path.write_text(IMPORTS + textwrap.dedent("""
        from my_models import make_model

        cfg = llama3_70b_pretrain_config()
        cfg.model = make_model()
        cfg.model.tensor_model_parallel_size = 4
        cfg.model.expert_model_parallel_size = 8
        impl = getattr(cfg.model, "cuda_graph_impl", None)
        if impl is not None:
            cfg.rng.te_rng_tracker = cfg.model.use_te_rng_tracker = True
        cfg.comm_overlap = CommOverlapConfig(tp_comm_overlap=False, overlap_moe_expert_parallel_comm=True)
        pretrain(cfg, forward_step)
    """))
    code, results, _ = _check(run_cli, path)
    r = results[0]
    assert r["error"] is None, r["error"]
    eff = r["effective"]
    assert (eff["model.tensor_model_parallel_size"]["value"], eff["model.tensor_model_parallel_size"]["source"]) == (4, "user")
    assert eff["model.sequence_parallel"]["source"] == "unknown"  # the model's own value: not written
    # EP overlap's pre-check reads num_moe_experts, which the unknown model holds: its class default (null)
    # stands in for it in the view, so "num_moe_experts is null" is no finding, only a note.
    assert "EP701" not in {f["code"] for f in r["findings"]}, r["findings"]
    assert any("EP701" in n for n in r["notes"]), r["notes"]


def test_a_call_receiving_cfg_makes_what_it_may_set_unknown(tmp_path, run_cli):
    path = tmp_path / "run.py"
    path.write_text(IMPORTS + textwrap.dedent("""
        from my_helpers import tune

        def known(c):
            c.model.sequence_parallel = True

        cfg = llama3_70b_pretrain_config()
        known(cfg)
        cfg.model.tensor_model_parallel_size = 8
        tune(cfg.ddp)
        pretrain(cfg, forward_step)
    """))
    code, results, _ = _check(run_cli, path)
    r = results[0]
    assert r["error"] is None, r["error"]
    eff = r["effective"]
    assert eff["model.sequence_parallel"]["value"] is True  # a function of the same module, followed
    assert eff["model.tensor_model_parallel_size"]["value"] == 8
    og = eff["ddp.overlap_grad_reduce"]
    assert og["source"] == "unknown" and "tune" in og["reason"] and f"{path}:15" in og["reason"], og


@pytest.mark.parametrize("text, needle", [
    ("from megatron.bridge.recipes.llama import llama3_8b_pretrain_config\ncfg = (\n", "not valid Python"),
    (IMPORTS + "\ndef r() -> ConfigContainer:\n    return None\n", "no config is built"),
    ("from megatron.bridge.recipes.llama import llama3_8b_pretran_config\ncfg = llama3_8b_pretran_config()\n",
     "unknown recipe 'llama3_8b_pretran_config'"),
])
def test_bad_python_is_one_line_exit_2(tmp_path, run_cli, text, needle):
    path = tmp_path / "bad.py"
    path.write_text(text)
    code, out, err = run_cli("check", str(path))
    assert code == 2
    lines = [l for l in (out + err).splitlines() if l.strip() and not l.startswith(("note:", "1 file", "Found", "0 files"))]
    assert any(needle in l and "bad.py" in l for l in lines), out + err
    assert "Traceback" not in out + err


def test_unknown_recipe_names_the_closest_including_aliases(tmp_path, run_cli):
    path = tmp_path / "bad.py"
    path.write_text("from megatron.bridge.recipes.llama import llama3_8b_pretran_config\ncfg = llama3_8b_pretran_config()\n")
    code, out, err = run_cli("check", str(path))
    assert code == 2 and "llama3_8b_pretrain_config (-> llama3_8b_pretrain_2gpu_h100_bf16_config)" in out + err


def test_a_module_without_a_config_is_skipped_in_a_folder_and_named_once(tmp_path, run_cli):
    (tmp_path / "util.py").write_text("import os\n\ndef f():\n    return 1\n")
    (tmp_path / "mentions.py").write_text("from megatron.bridge.recipes.llama import llama3_8b_pretrain_config\n")
    (tmp_path / "run.py").write_text(SCRIPT)
    code, out, err = run_cli("check", str(tmp_path), "--format", "json", "--world-size", "64")
    files = [r["file"] for r in json.loads(out)["results"]]
    assert files == [str(tmp_path / "run.py")]
    code, out, err = run_cli("check", str(tmp_path / "mentions.py"))
    assert "builds no ConfigContainer" in err and "--recipe llama3_8b_pretrain_config" in err
    assert code == 0


def test_several_runs_in_a_module_are_reported_file_function(tmp_path, run_cli):
    path = tmp_path / "recipes.py"
    path.write_text(FUNCTION + "\n\ndef other() -> ConfigContainer:\n    cfg = my_recipe()\n    cfg.model.sequence_parallel = False\n    return cfg\n")
    code, results, _ = _check(run_cli, path)
    assert [r["file"].rsplit("::", 1)[1] for r in results] == ["my_recipe", "other"]
    assert results[1]["effective"]["model.tp_comm_overlap"]["source"] == "forced-off"
    code, results, _ = _check(run_cli, f"{path}::other")
    assert len(results) == 1 and results[0]["effective"]["model.sequence_parallel"]["value"] is False


def test_a_preset_name_where_the_preset_belongs_is_refused(tmp_path, run_cli):
    path = tmp_path / "run.py"
    path.write_text(SCRIPT.replace("= userbuffers_bf16_h100_h12288_tp4_mbs1_seqlen2048", '= "userbuffers_bf16_h100_h12288_tp4_mbs1_seqlen2048"'))
    code, out, err = run_cli("check", str(path))
    assert code == 2 and "run.py:10" in out + err and "preset object" in out + err


def test_comm_overlap_config_without_tp_comm_overlap_is_refused(tmp_path, run_cli):
    path = tmp_path / "run.py"
    path.write_text(SCRIPT.replace("CommOverlapConfig(tp_comm_overlap=True)", "CommOverlapConfig(overlap_grad_reduce=True)"))
    code, out, err = run_cli("check", str(path))
    assert code == 2 and "run.py:9" in out + err and "tp_comm_overlap" in out + err


def test_distributed_optimizer_off_with_a_precision_aware_optimizer_is_an_error(tmp_path, run_cli):
    """OptimizerConfig.__post_init__ asserts the distributed optimizer with the precision-aware one
    (megatron-core 0.19.2 optimizer_config.py:434), run when validate() finalizes the optimizer config
    (megatron-bridge 0.6.2 training/config.py:1256), before the sync at :1365 could turn it on."""
    path = tmp_path / "run.py"
    path.write_text(SCRIPT.replace("cfg.ddp.overlap_grad_reduce = True",
                                   "cfg.optimizer.use_precision_aware_optimizer = True\ncfg.optimizer.use_distributed_optimizer = False\n"
                                   "cfg.dist.use_megatron_fsdp = True"))
    code, results, _ = _check(run_cli, path)
    codes = {f["code"]: f for f in results[0]["findings"]}
    assert "DP312" in codes and codes["DP312"]["line"] is not None


def test_python_runs_work_with_env_diff_estimate_and_annotate(tmp_path, run_cli):
    path = tmp_path / "train.py"
    path.write_text(SCRIPT + "cfg.env_vars['CUDA_DEVICE_MAX_CONNECTIONS'] = 1\n")
    code, out, err = run_cli("env", str(path), "--world-size", "64")
    assert code in (0, 1) and "CUDA_DEVICE_MAX_CONNECTIONS" in out, out + err
    code, out, err = run_cli("estimate", str(path), "--world-size", "64")
    assert code in (0, 1) and "Traceback" not in out + err
    code, out, err = run_cli("check", str(path), "--world-size", "64", "--annotate")
    assert "# overlap:" in out and "cfg.model.tensor_model_parallel_size = 4" in out, out + err


def test_fix_edits_the_assignment_in_place_and_adds_after_the_recipe_call(tmp_path, run_cli):
    path = tmp_path / "fixme.py"
    path.write_text(
        "from megatron.bridge.recipes.llama import llama3_70b_pretrain_config\n"
        "from megatron.bridge.training.comm_overlap import CommOverlapConfig\n\n"
        "cfg = llama3_70b_pretrain_config()  # the recipe\n"
        "cfg.model.sequence_parallel = False   # keep this comment\n"
        "cfg.comm_overlap = CommOverlapConfig(tp_comm_overlap=True)\n"
    )
    code, out, err = run_cli("fix", str(path), "--write", "--unsafe-fixes")
    text = path.read_text()
    assert "cfg.model.sequence_parallel = True   # keep this comment\n" in text, text
    assert text.splitlines()[4] == "cfg.env_vars['CUDA_DEVICE_MAX_CONNECTIONS'] = 1", text
    code, out, err = run_cli("check", str(path), "--format", "json")
    codes = {f["code"] for f in json.loads(out)["results"][0]["findings"]}
    assert "TP102" not in codes and "ENV501" not in codes


def test_fix_refuses_what_it_cannot_place(tmp_path, run_cli):
    path = tmp_path / "fixme.py"
    original = (
        "from megatron.bridge.recipes.llama import llama3_70b_pretrain_config\n"
        "from megatron.bridge.training.comm_overlap import CommOverlapConfig\n"
        "SP = False\n\n"
        "cfg = llama3_70b_pretrain_config()\n"
        "cfg.model.sequence_parallel = SP or SP\n"
        "cfg.env_vars = {'CUDA_DEVICE_MAX_CONNECTIONS': 1}\n"
        "cfg.comm_overlap = CommOverlapConfig(tp_comm_overlap=True)\n"
    )
    path.write_text(original)
    code, out, err = run_cli("fix", str(path), "--write", "--unsafe-fixes")
    assert path.read_text() == original
    assert "TP102 fix skipped" in err and "not a literal" in err, err


RECIPE_64 = "qwen35_vl_397b_a17b_pretrain_64gpu_b200_fp8cs_config"


def test_fix_removes_an_assignment_comm_overlap_overwrites(tmp_path, run_cli):
    """CFG005's (unsafe) removal in a Python run: the run's own line goes, as a removed YAML key does (a comment
    line saying what and why, the user's comment kept); the recipe's value is the class default, so the
    run then has what comm_overlap decides."""
    path = tmp_path / "run.py"
    path.write_text(f"from megatron.bridge.recipes import {RECIPE_64}\n\ncfg = {RECIPE_64}()\n"
                    "cfg.ddp.overlap_grad_reduce = True  # keep grads in flight\n"
                    "cfg.comm_overlap.overlap_grad_reduce = False\n")
    # the run wrote the value itself: removing it is offered as unsafe (it changes no effective value)
    code, out, err = run_cli("fix", str(path), "--write", "--world-size", "64", "--unsafe-fixes")
    text = path.read_text()
    assert "cfg.ddp.overlap_grad_reduce = True" not in text.replace("removed cfg.ddp.overlap_grad_reduce = True", "")
    assert ("# overlap: CFG005 removed cfg.ddp.overlap_grad_reduce = True (comm_overlap.overlap_grad_reduce decides it)"
            "  # keep grads in flight") in text, text
    assert "CFG005" not in " ".join(_codes_of(run_cli, path, "--world-size", "64"))


def test_fix_refuses_a_removal_the_recipe_would_undo(tmp_path, run_cli):
    """The recipe sets ddp.overlap_grad_reduce itself (True, not the class default False): taking the
    run's line away would leave the recipe's value, so the removal is refused with the YAML form's words."""
    recipe = "deepseek_v3_pretrain_256gpu_gb300_fp8mx_partial_cg_dev_config"
    path = tmp_path / "run.py"
    original = (f"from megatron.bridge.recipes import {recipe}\n\ncfg = {recipe}()\n"
                "cfg.ddp.overlap_grad_reduce = True\ncfg.comm_overlap.overlap_grad_reduce = False\n")
    path.write_text(original)
    code, out, err = run_cli("fix", str(path), "--write", "--unsafe-fixes")
    assert "\ncfg.ddp.overlap_grad_reduce = True\n" in path.read_text()  # other fixes may add lines
    assert (f"CFG005 fix skipped: ddp.overlap_grad_reduce is also set in recipe {recipe}; a file merged on top "
            "cannot remove it") in err, err


def test_fix_adds_a_line_after_a_recipe_the_catalog_holds_unknowns_of(tmp_path, run_cli):
    """What the recipe leaves unknown is decided before a line added after its call runs: the fix adds
    it. What the run's own later statements leave unknown could overwrite the line: no finding, no line."""
    recipe = "qwen35_vl_35b_a3b_pretrain_16gpu_h100_fp8cs_config"  # its catalog entry leaves model unknown
    path = tmp_path / "run.py"
    path.write_text(f"from megatron.bridge.recipes import {recipe}\n\ncfg = {recipe}()\n"
                    "cfg.model.tensor_model_parallel_size = 8\n")
    code, out, err = run_cli("fix", str(path), "--write", "--world-size", "16")
    assert f"cfg = {recipe}()\ncfg.model.sequence_parallel = True\n" in path.read_text(), err
    assert "TP102" not in _codes_of(run_cli, path, "--world-size", "16")
    original = (f"from megatron.bridge.recipes import {recipe}\nimport tweaks\n\ncfg = {recipe}()\n"
                "cfg.model.tensor_model_parallel_size = 8\ntweaks.apply(cfg.model)\n")
    path.write_text(original)
    code, out, err = run_cli("fix", str(path), "--write", "--world-size", "16")
    assert path.read_text() == original
    _, out, _ = run_cli("check", str(path), "--format", "json", "--world-size", "16")
    assert "TP102 (model.sequence_parallel)" in " ".join(json.loads(out)["results"][0]["notes"])


def _codes_of(run_cli, path, *args) -> list:
    _, out, _ = run_cli("check", str(path), "--format", "json", *args)
    return [f["code"] for f in json.loads(out)["results"][0]["findings"]]


def test_an_alias_is_a_recipe_on_the_command_line_and_in_recipe_run(run_cli):
    """``--recipe ALIAS`` and frameworks.bridge.runs.recipe_run (the entry point for run_recipe.py launches)
    give the run of the function the alias names."""
    from overlap_cli.frameworks.bridge.runs import recipe_run

    code, out, err = run_cli("check", "--recipe", "llama3_8b_pretrain_config", "model.tensor_model_parallel_size=2",
                             "--format", "json")
    r = json.loads(out)["results"][0]
    assert r["error"] is None and r["target"]["recipe"] == "llama3_8b_pretrain_2gpu_h100_bf16_config"
    cfg = recipe_run("llama3_8b_pretrain_config", None, ["model.tensor_model_parallel_size=2"]).load()
    assert cfg.get(("model", "tensor_model_parallel_size")) == 2 == r["effective"]["model.tensor_model_parallel_size"]["value"]
    assert cfg.label(("model", "pipeline_model_parallel_size")) == "recipe llama3_8b_pretrain_2gpu_h100_bf16_config"


def test_overlap_comments_work_in_python(tmp_path, run_cli):
    body = (
        "from megatron.bridge.recipes.llama import llama3_70b_pretrain_config\n"
        "from megatron.bridge.training.comm_overlap import CommOverlapConfig\n"
        "cfg = llama3_70b_pretrain_config()\n"
        "cfg.model.sequence_parallel = False{tail}\n"
        "cfg.comm_overlap = CommOverlapConfig(tp_comm_overlap=True)\n"
    )
    path = tmp_path / "run.py"
    path.write_text(body.format(tail=""))
    code, results, _ = _check(run_cli, path)
    assert "TP102" in {f["code"] for f in results[0]["findings"]}
    path.write_text("# overlap: target world_size=128\n" + body.format(tail="  # overlap: ignore[TP102]"))
    code, out, err = run_cli("check", str(path), "--format", "json")
    r = json.loads(out)["results"][0]
    assert "TP102" not in {f["code"] for f in r["findings"]} and r["target"]["world_size"] == 128


def test_megatron_fsdp_refusals_a_python_run_meets(tmp_path, run_cli):
    """With Megatron-FSDP, Bridge asserts the fsdp_dtensor checkpoint format when saving and refuses
    CUDA_DEVICE_MAX_CONNECTIONS=1 (megatron-bridge 0.6.2 training/config.py:1099, 1102); the finding on the
    script's own line points there."""
    path = tmp_path / "fsdp.py"
    path.write_text(
        "from megatron.bridge.recipes.llama import llama3_70b_pretrain_config\n"
        "cfg = llama3_70b_pretrain_config()\n"
        "cfg.dist.use_megatron_fsdp = True\n"
        "cfg.checkpoint.save = '/ckpt'\n"
        "cfg.env_vars['CUDA_DEVICE_MAX_CONNECTIONS'] = 1\n"
    )
    code, results, _ = _check(run_cli, path)
    found = {f["code"]: f for f in results[0]["findings"]}
    assert found["DP312"]["severity"] == "error" and "fsdp_dtensor" in found["DP312"]["message"]
    assert found["ENV503"]["line"] == 5 and code == 1


@pytest.mark.parametrize("module, recipe", [
    # Bridge 0.6.2 defines a library recipe and a performance recipe under this one name: the module
    # imported from decides which runs (the performance one turns DP grad-reduce overlap off).
    ("megatron.bridge.perf_recipes.deepseek.h100.deepseek_v3", "perf__deepseek_v3_pretrain_1024gpu_h100_bf16_config"),
    ("megatron.bridge.perf_recipes.deepseek", "perf__deepseek_v3_pretrain_1024gpu_h100_bf16_config"),
    ("megatron.bridge.recipes.deepseek.h100.deepseek_v3", "deepseek_v3_pretrain_1024gpu_h100_bf16_config"),
    ("megatron.bridge.recipes", "deepseek_v3_pretrain_1024gpu_h100_bf16_config"),
])
def test_a_recipe_name_means_what_the_module_it_is_imported_from_binds(tmp_path, run_cli, module, recipe):
    path = tmp_path / "run.py"
    path.write_text(f"from {module} import deepseek_v3_pretrain_1024gpu_h100_bf16_config\n"
                    "cfg = deepseek_v3_pretrain_1024gpu_h100_bf16_config()\n")
    code, out, err = run_cli("check", str(path), "--format", "json", "--world-size", "1024")
    r = json.loads(out)["results"][0]
    assert r["error"] is None, r["error"]
    reduce = r["effective"]["ddp.overlap_grad_reduce"]
    assert f"recipe {recipe}" in json.dumps(r["effective"]), r["effective"]["ddp.use_distributed_optimizer"]
    assert reduce["value"] is (not recipe.startswith("perf__")), reduce


def test_a_name_a_perf_module_imports_as_another_recipe_is_that_recipe(tmp_path, run_cli):
    # perf_recipes/nemotronh/common.py imports the 16-GPU recipe as nemotron_3_super_pretrain_config;
    # recipes/nemotronh/nemotron_3_super.py defines that name as the 64-GPU one (TP 1).
    for module, tp in (("megatron.bridge.perf_recipes.nemotronh.common", 8),
                       ("megatron.bridge.recipes.nemotronh.nemotron_3_super", 1)):
        path = tmp_path / "run.py"
        path.write_text(f"from {module} import nemotron_3_super_pretrain_config\ncfg = nemotron_3_super_pretrain_config()\n")
        code, out, err = run_cli("check", str(path), "--format", "json", "--world-size", "64")
        r = json.loads(out)["results"][0]
        assert r["error"] is None, r["error"]
        assert r["effective"]["model.tensor_model_parallel_size"]["value"] == tp, (module, r["effective"]["model.tensor_model_parallel_size"])
