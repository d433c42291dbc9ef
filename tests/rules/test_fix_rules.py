"""Each rule's fix, applied for real to the rule's own case file: what it edits, that the finding is gone
afterwards, that Bridge's effective value now is what the user asked for, and that unsafe fixes need
--unsafe-fixes."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
import yaml
from conftest import ROOT as ROOT_DIR  # noqa: E402

ROOT = ROOT_DIR
CASES = ROOT / "tests" / "cases"
EXAMPLES = ROOT / "examples"

MISSING = object()


def get(data, dotted: str):
    node = data
    for part in dotted.split("."):
        if not isinstance(node, dict) or part not in node:
            return MISSING
        node = node[part]
    return node


def run_fix(run_cli, tmp_path, src: Path, *args):
    dst = tmp_path / src.name
    shutil.copyfile(src, dst)
    code, out, err = run_cli("fix", dst, "--write", *args)
    return code, dst, out + err


def threshold_for(code: str) -> list:
    """An info rule's fix is applied only with --severity-threshold info (and, being unsafe, --unsafe-fixes)."""
    from overlap_cli.rules import get_rule

    return ["--severity-threshold", "info"] if get_rule(code).severity == "info" else []


def effective(run_cli, path: Path, *args) -> tuple[dict, list]:
    """(effective values, codes reported). PP201 always reports the p2p choice (info); it counts only
    while it still offers its fix."""
    _, out, _ = run_cli("check", path, "--format", "json", *args)
    result = json.loads(out)["results"][0]
    codes = [f["code"] for f in result["findings"] if f["code"] != "PP201" or f["fix"]]
    return {k: v["value"] for k, v in result["effective"].items()}, codes


# (id, file, target args, code, unsafe?, file keys after the fix, effective values after the fix)
FIXES = [
    ("TP101", CASES / "tp101_tp_too_small.yaml", ["--world-size", "8"], False,
     {"comm_overlap.tp_comm_overlap": False}, {"model.tp_comm_overlap": False}),
    ("TP102", CASES / "tp102_no_sp.yaml", [], False,
     {"model.sequence_parallel": True}, {"model.tp_comm_overlap": True, "model.sequence_parallel": True}),
    ("CFG002", CASES / "cfg002_missing_required.yaml", [], False,
     {"comm_overlap.tp_comm_overlap": False}, {}),
    # batch_p2p_comm is the p2p mode, not an overlap: moving it changes what runs (unsafe)
    ("CFG004", CASES / "cfg004_model_overwritten.yaml", [], True,
     {"model.batch_p2p_comm": MISSING}, {"model.overlap_p2p_comm": True}),
    # DP = 1: there is nothing to overlap, Bridge switches DP overlap off on purpose (unsafe)
    ("CFG005", CASES / "dp1_forced_off.yaml", ["--world-size", "8"], True,
     {"ddp.overlap_grad_reduce": MISSING, "comm_overlap.overlap_grad_reduce": True}, {"ddp.overlap_grad_reduce": True}),
    ("PP202", CASES / "pp202_overlap_no_vpp.yaml", [], False,
     {"comm_overlap.overlap_p2p_comm": MISSING}, {"model.overlap_p2p_comm": False, "model.batch_p2p_comm": True}),
    ("PP203", CASES / "pp203_both_true.yaml", [], False,
     {"comm_overlap.batch_p2p_comm": False}, {"model.overlap_p2p_comm": True, "model.batch_p2p_comm": False}),
    # applies Bridge's DP defaults the run does not get today (unsafe)
    ("DP303", CASES / "dp303_out_of_sync.yaml", ["--world-size", "16"], True,
     {"ddp.use_distributed_optimizer": True}, {"ddp.bucket_size": 134217728, "ddp.overlap_grad_reduce": True}),
    ("DP302", CASES / "dp302_no_distopt.yaml", ["--world-size", "16"], True,
     {"ddp.use_distributed_optimizer": True, "optimizer.use_distributed_optimizer": True},
     {"ddp.overlap_grad_reduce": True}),
    ("DP305", CASES / "dp305_num_buckets.yaml", ["--world-size", "16"], True,
     {"ddp.num_buckets": MISSING}, {"ddp.bucket_size": 134217728}),
    ("PP201", CASES / "pp_no_vpp_auto.yaml", ["--world-size", "32"], True,
     {"model.virtual_pipeline_model_parallel_size": 2}, {"model.overlap_p2p_comm": True, "model.batch_p2p_comm": False}),
    ("PP204", CASES / "pp204_defer_no_limit.yaml", [], True,
     {"comm_overlap.wgrad_deferral_limit": 0}, {"model.wgrad_deferral_limit": 0}),
    ("MP401", CASES / "mp401_grad_reduce.yaml", [], True,
     {"ddp.grad_reduce_in_fp32": MISSING, "mixed_precision.grad_reduce_in_fp32": False}, {"ddp.grad_reduce_in_fp32": False}),
]


@pytest.mark.parametrize("code, src, args, unsafe, keys, values", FIXES, ids=[f[0] for f in FIXES])
def test_fix_edits_and_makes_the_request_work(code, src, args, unsafe, keys, values, run_cli, tmp_path):
    _, before = effective(run_cli, src, *args)
    assert code in before
    flags = (["--unsafe-fixes"] if unsafe else []) + threshold_for(code)
    _, dst, output = run_fix(run_cli, tmp_path, src, "--select", code, *flags, *args)
    data = yaml.safe_load(dst.read_text())
    for key, want in keys.items():
        assert get(data, key) == want if want is not MISSING else get(data, key) is MISSING, (key, output)
    after, codes = effective(run_cli, dst, *args)
    assert code not in codes, output
    for key, want in values.items():
        assert after[key] == want, (key, after[key])
    if code in ("TP102", "CFG002", "DP303", "PP203", "PP201", "PP204", "DP302", "TP101"):
        assert f"# overlap: {code} " in dst.read_text()


@pytest.mark.parametrize("code, src, args", [(f[0], f[1], f[2]) for f in FIXES if f[3]], ids=[f[0] for f in FIXES if f[3]])
def test_unsafe_fix_needs_the_flag(code, src, args, run_cli, tmp_path):
    rc, dst, output = run_fix(run_cli, tmp_path, src, "--select", code, *threshold_for(code), *args)
    assert dst.read_bytes() == src.read_bytes()
    code_dry, out, _ = run_cli("fix", dst, "--select", code, *threshold_for(code), *args)
    assert f"1 more with --unsafe-fixes: {code}" in out and code_dry == 0


def test_cfg005_keeps_the_request_in_comm_overlap(run_cli, tmp_path):
    """ddp says false, comm_overlap asks for true: the dead ddp value goes, the request stays."""
    (tmp_path / "src").mkdir()
    src = tmp_path / "src" / "config.yaml"
    src.write_text(
        "model: {tensor_model_parallel_size: 1}\nddp:\n  use_distributed_optimizer: true\n  overlap_grad_reduce: false\n"
        "comm_overlap:\n  tp_comm_overlap: false\n  overlap_grad_reduce: true\n"
    )
    _, dst, output = run_fix(run_cli, tmp_path, src, "--select", "CFG005", "--world-size", "8")
    data = yaml.safe_load(dst.read_text())
    assert get(data, "ddp.overlap_grad_reduce") is MISSING
    assert data["comm_overlap"]["overlap_grad_reduce"] is True
    after, codes = effective(run_cli, dst, "--world-size", "8")
    assert after["ddp.overlap_grad_reduce"] is True and "CFG005" not in codes


def test_mixed_precision_move_spells_out_the_recipe(run_cli, tmp_path):
    """MP401 turns `bf16_mixed` into a mapping; every other effective value stays as the recipe had it."""
    src = EXAMPLES / "mixed_precision_overwrite.yaml"
    before, _ = effective(run_cli, src)
    _, dst, _ = run_fix(run_cli, tmp_path, src, "--select", "MP401", "--unsafe-fixes")
    mp = yaml.safe_load(dst.read_text())["mixed_precision"]
    assert mp["_target_"] == "megatron.bridge.training.mixed_precision.MixedPrecisionConfig"
    assert mp["bf16"] is True and mp["grad_reduce_in_fp32"] is False
    after, codes = effective(run_cli, dst)
    assert after.pop("ddp.grad_reduce_in_fp32") is False and before.pop("ddp.grad_reduce_in_fp32") is True
    assert after == before and "MP401" not in codes and "MP403" not in codes


def test_pp202_then_pp201_with_unsafe_makes_p2p_overlap_work(run_cli, tmp_path):
    """The safe fix drops the crashing override; with --unsafe-fixes the next round adds the VPP, and
    Bridge then turns p2p overlap on by itself — the user's request works in the end."""
    src = EXAMPLES / "pp_without_vpp.yaml"
    _, dst, output = run_fix(run_cli, tmp_path, src, "--select", "PP", "--unsafe-fixes", "--severity-threshold", "info")
    after, codes = effective(run_cli, dst)
    assert after["model.overlap_p2p_comm"] is True and after["model.virtual_pipeline_model_parallel_size"] == 2
    assert "PP202" not in codes


def test_fix_object_in_check_json(run_cli):
    _, out, _ = run_cli("check", EXAMPLES / "tp_overlap_without_sp.yaml", "--format", "json")
    fix = next(f["fix"] for f in json.loads(out)["results"][0]["findings"] if f["code"] == "TP102")
    assert fix["applicability"] == "safe" and "sequence parallelism" in fix["message"]
    assert fix["edits"] == [{"op": "set", "key": "model.sequence_parallel", "value": True}]
