"""frameworks.bridge.preset_suggestion: the verdict over the ranked presets, the near preset, GPU families."""

from __future__ import annotations

import json

import pytest
from conftest import ROOT

from overlap_cli.frameworks.bridge.preset_suggestion import is_fit, near_preset, preset_family

TUNED = ROOT / "examples" / "llama3_70b_tuned.yaml"
LLAMA_DUMP = ROOT / "examples" / "bridge" / "llama3_70b_pretrain_32gpu_h100_bf16_config.yaml"


def suggested(run_cli, path, *flags) -> dict:
    code, out, err = run_cli("presets", "suggest", path, "--format", "json", *flags)
    assert code in (0, 1), err
    return json.loads(out)


def test_an_exact_fit_is_a_fit_and_no_near_preset(run_cli):
    doc = suggested(run_cli, TUNED, "--gpu", "h100")
    assert doc["verdict"] == "fit" and is_fit(doc)
    assert near_preset(doc) is None


def test_a_preset_differing_only_in_info_fields_is_near(run_cli):
    """Bridge's own llama dump runs CP=2; the h8192/tp4 preset was tuned for CP=1 (an info-level field)."""
    doc = suggested(run_cli, LLAMA_DUMP, "--gpu", "h100")
    assert doc["verdict"] == "none" and not is_fit(doc)
    near = near_preset(doc)
    assert near is not None and near["name"] == doc["candidates"][0]["name"]
    assert [d["field"] for d in near["differences"]] == ["cp"]


def test_no_near_preset_when_tp_differs(run_cli, tmp_path):
    path = tmp_path / "tp16.yaml"
    path.write_text(TUNED.read_text().replace("hidden_size: 8192", "hidden_size: 5120").replace("tensor_model_parallel_size: 4", "tensor_model_parallel_size: 16"))
    doc = suggested(run_cli, path, "--gpu", "h100")
    assert doc["verdict"] == "none" and near_preset(doc) is None


def test_a_fit_of_what_is_known_is_a_fit(run_cli):
    """Without --gpu the GPU is not compared; only one preset has this shape, so it still fits."""
    doc = suggested(run_cli, TUNED)
    assert doc["not_compared"] == ["gpu"] and doc["verdict"] == "fit" and is_fit(doc)
    assert near_preset(doc) is None


@pytest.mark.parametrize("gpu, family", [("h100", "h100"), ("H200", "h100"), (" gb300 ", "b200"), ("a100", "none")])
def test_preset_family(gpu, family):
    assert preset_family(gpu) == family


def test_preset_family_refuses_an_unknown_gpu():
    with pytest.raises(ValueError, match=r"unknown GPU 'v100': expected h100\|h200"):
        preset_family("v100")
