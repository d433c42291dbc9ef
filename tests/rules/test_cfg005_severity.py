"""CFG005's severity follows what is lost: at DP = 1 an overlap Bridge switches off hides nothing (info);
at DP > 1 a value the file wrote and Bridge overwrites is a warning."""

from __future__ import annotations

import json

from conftest import ROOT


def _cfg005(run_cli, *args):
    code, out, err = run_cli("check", *args, "--format", "json")
    result = json.loads(out)["results"][0]
    assert result["error"] is None, err
    return [f for f in result["findings"] if f["code"] == "CFG005"]


def test_dp1_overlap_switched_off_is_info(run_cli):
    found = _cfg005(run_cli, ROOT / "tests" / "cases" / "dp1_forced_off.yaml", "--world-size", "8")
    assert found and {f["severity"] for f in found} == {"info"}
    assert all("no data-parallel communication" in f["message"] for f in found)


def test_dp2_value_overwritten_is_a_warning(run_cli, tmp_path):
    cfg = tmp_path / "c.yaml"
    cfg.write_text(
        "model: {tensor_model_parallel_size: 8, sequence_parallel: true}\n"
        "ddp:\n  use_distributed_optimizer: true\n  overlap_grad_reduce: false\n"
        "comm_overlap:\n  tp_comm_overlap: false\n",
        encoding="utf-8",
    )
    found = _cfg005(run_cli, cfg, "--world-size", "16")
    assert [f["severity"] for f in found] == ["warning"] and "to make it effective" in found[0]["message"]
