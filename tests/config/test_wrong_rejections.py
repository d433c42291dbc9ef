"""Inputs Bridge accepts are accepted: templates, key=value overrides of fields a file leaves out, and the
TE-dependent defaults a Bridge dump wrote on a machine without Transformer Engine. Through the real CLI."""

from __future__ import annotations

import json

import pytest

from conftest import CORPUS

NO_VPP = (
    "model:\n  tensor_model_parallel_size: 2\n  pipeline_model_parallel_size: 4\n"
    "comm_overlap:\n  tp_comm_overlap: false\n"
)


def _json(run_cli, *args):
    code, out, err = run_cli("check", "--format", "json", "--show-info", *args)
    return code, json.loads(out) if out.strip() else None, err


def test_template_with_zero_layers_is_checked(run_cli, corpus):
    """Bridge's vanilla_gpt recipe leaves num_layers 0: Bridge resolves it, so the tool does."""
    path = CORPUS / "vanilla_gpt_pretrain_1gpu_h100_bf16_config.yaml"
    code, doc, err = _json(run_cli, path, "--world-size", "1", "--gpu", "h100")
    assert code in (0, 1), err
    result = doc["results"][0]
    assert result["error"] is None and result["effective"]
    assert "parallel size" not in err


@pytest.mark.parametrize("value", ["0", "-1"])
def test_a_parallel_size_of_zero_is_still_refused(run_cli, tmp_path, value):
    path = tmp_path / "c.yaml"
    path.write_text(NO_VPP.replace("tensor_model_parallel_size: 2", f"tensor_model_parallel_size: {value}"))
    code, _, err = run_cli("check", path)
    assert code == 2 and "non-positive parallel size" in err and "model.tensor_model_parallel_size" in err


def test_non_positive_sequence_length_is_no_parallel_size(run_cli, tmp_path):
    path = tmp_path / "c.yaml"
    path.write_text(NO_VPP.replace("model:\n", "model:\n  seq_length: 0\n"))
    code, _, err = run_cli("check", path)
    assert code == 2 and "non-positive value" in err and "parallel size" not in err


def test_known_field_left_out_takes_a_plain_override(run_cli, tmp_path):
    """Bridge merges the file onto a full ConfigContainer (every dataclass field exists), so Hydra's
    key=value reaches model.virtual_pipeline_model_parallel_size although the file leaves it out."""
    path = tmp_path / "c.yaml"
    path.write_text(NO_VPP)
    code, doc, err = _json(run_cli, path, "model.virtual_pipeline_model_parallel_size=2", "--world-size", "8")
    assert code in (0, 1), err
    eff = doc["results"][0]["effective"]
    assert eff["model.virtual_pipeline_model_parallel_size"] == {
        "value": 2, "source": "user", "reason": "set in command-line override"
    }
    assert eff["model.overlap_p2p_comm"]["value"] is True  # PP 4 x VPP 2: Bridge now picks p2p overlap
    for override in ("ddp.overlap_grad_reduce=true", "optimizer.overlap_param_gather=true", "comm_overlap.overlap_p2p_comm=false"):
        code, _, err = run_cli("check", path, override)
        assert code in (0, 1), (override, err)


def test_unknown_field_still_needs_plus(run_cli, tmp_path):
    path = tmp_path / "c.yaml"
    path.write_text(NO_VPP)
    code, _, err = run_cli("check", path, "model.not_a_field=2")
    assert code == 2 and "+model.not_a_field=" in err and "not a field overlap-cli knows" in err
    code, _, err = run_cli("check", path, "+model.not_a_field=2")
    assert code in (0, 1), err


def test_field_of_a_section_the_file_lacks(run_cli, tmp_path):
    """comm_overlap / mixed_precision are null in a ConfigContainer unless the recipe sets them: a plain
    key=value cannot reach into them (Hydra: "Could not override"), + adds them."""
    path = tmp_path / "c.yaml"
    path.write_text("model:\n  tensor_model_parallel_size: 2\n")
    code, _, err = run_cli("check", path, "mixed_precision.grad_reduce_in_fp32=false")
    assert code == 2 and "+mixed_precision.grad_reduce_in_fp32=" in err
    code, _, err = run_cli("check", path, "+comm_overlap.tp_comm_overlap=true")
    assert code in (0, 1), err


def test_plus_on_a_null_field_adds_it(run_cli, tmp_path):
    """Hydra's +key=value refuses only when a non-null value is there already."""
    path = tmp_path / "c.yaml"
    path.write_text(NO_VPP.replace("model:\n", "model:\n  virtual_pipeline_model_parallel_size: null\n"))
    code, doc, err = _json(run_cli, path, "+model.virtual_pipeline_model_parallel_size=2")
    assert code in (0, 1), err
    assert doc["results"][0]["effective"]["model.virtual_pipeline_model_parallel_size"]["value"] == 2
    code, _, err = run_cli("check", path, "+model.pipeline_model_parallel_size=2")
    assert code == 2 and "++model.pipeline_model_parallel_size" in err


def test_dump_written_without_te_runs_its_false_and_the_recipe_does_not(run_cli, corpus):
    """The corpus was dumped without Transformer Engine, so gradient_accumulation_fusion reads false there
    (GPTModelProvider's default_factory, evaluated on the dumping machine). Checked as a file, that false is
    what Bridge launches on any machine (ConfigContainer.from_yaml passes it to the provider), so Megatron-Core
    refuses defer_embedding_wgrad_compute even with TE on the target: PP205 names the likely cause and offers
    the crash-removing safe fix. Built as ``--recipe`` on a TE target the provider turns it on: no PP205;
    with --no-te it fails there too, for the target's reason."""
    path = CORPUS / "llama3_70b_sft_32gpu_gb200_bf16_config.yaml"
    assert "gradient_accumulation_fusion: false" in path.read_text()
    _, doc, _ = _json(run_cli, path, "--world-size", "32", "--gpu", "gb200")
    pp205 = [f for f in doc["results"][0]["findings"] if f["code"] == "PP205"]
    assert len(pp205) == 1 and pp205[0]["severity"] == "error"
    assert "Transformer Engine was not installed" in pp205[0]["message"]
    assert "Cannot defer embedding wgrad compute when gradient accumulation fusion is not used" in pp205[0]["message"]
    assert pp205[0]["fix"]["applicability"] == "safe"
    assert pp205[0]["fix"]["edits"] == [{"op": "set", "key": "comm_overlap.defer_embedding_wgrad_compute", "value": False}]
    _, doc, _ = _json(run_cli, path, "--world-size", "32", "--gpu", "gb200", "--no-te")
    assert "PP205" in [f["code"] for f in doc["results"][0]["findings"]]
    recipe = "llama3_70b_sft_32gpu_gb200_bf16_config"
    _, doc, _ = _json(run_cli, "--recipe", recipe)
    assert "PP205" not in [f["code"] for f in doc["results"][0]["findings"]]
    _, doc, _ = _json(run_cli, "--recipe", recipe, "--no-te")
    [f] = [f for f in doc["results"][0]["findings"] if f["code"] == "PP205"]
    assert "the target has no Transformer Engine" in f["message"]
    # the dump used as an override file onto the recipe writes its false over the provider's true
    _, doc, _ = _json(run_cli, "--recipe", recipe, path)
    assert "PP205" in [f["code"] for f in doc["results"][-1]["findings"]]


def test_hand_written_gradient_accumulation_fusion_false_is_kept(run_cli, tmp_path):
    path = tmp_path / "c.yaml"
    path.write_text(
        "model:\n  pipeline_model_parallel_size: 4\n  virtual_pipeline_model_parallel_size: 2\n"
        "  gradient_accumulation_fusion: false\n"
        "comm_overlap:\n  tp_comm_overlap: false\n  defer_embedding_wgrad_compute: true\n"
    )
    _, doc, _ = _json(run_cli, path, "--world-size", "8")
    assert "PP205" in [f["code"] for f in doc["results"][0]["findings"]]
