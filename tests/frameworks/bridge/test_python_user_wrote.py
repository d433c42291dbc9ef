"""A Python run's assignment is the user's choice, as the same key in an override file is: when Bridge
overwrites it later (comm_overlap's data-parallel path, the mixed-precision recipe) the run is told so,
even where the value assigned equals the class default (which a dump's value does not count as a choice)."""

from __future__ import annotations

import json

import pytest

RECIPE = "llama3_8b_pretrain_32gpu_gb200_bf16_config"  # distributed optimizer, comm_overlap present


def _codes(run_cli, *args):
    code, out, err = run_cli("check", "--format", "json", "--show-info", "--world-size", "32", "--gpu", "gb200", *args)
    assert code in (0, 1), err
    result = json.loads(out)["results"][0]
    assert result["error"] is None, result["error"]
    return {(f["code"], f["key"]) for f in result["findings"]}


@pytest.mark.parametrize("key, python_value, yaml_value, code", [
    # DP = 8: the DP path writes true over the class default false the run asked for.
    ("ddp.overlap_grad_reduce", "False", "false", "CFG005"),
    # bf16_mixed writes grad_reduce_in_fp32 = true over the run's false.
    ("ddp.grad_reduce_in_fp32", "False", "false", "MP401"),
])
def test_an_assignment_bridge_overwrites_is_reported_as_in_yaml(tmp_path, run_cli, key, python_value, yaml_value, code):
    section, field = key.split(".")
    script = tmp_path / "run.py"
    script.write_text(f"from megatron.bridge.recipes import {RECIPE}\n\ncfg = {RECIPE}()\n"
                      f"cfg.{key} = {python_value}\ncfg.mixed_precision = 'bf16_mixed'\n")
    over = tmp_path / "over.yaml"
    over.write_text(f"{section}:\n  {field}: {yaml_value}\nmixed_precision: bf16_mixed\n")
    from_python = _codes(run_cli, str(script))
    from_yaml = _codes(run_cli, "--recipe", RECIPE, str(over))
    assert (code, key) in from_yaml
    assert (code, key) in from_python
    assert from_python == from_yaml
