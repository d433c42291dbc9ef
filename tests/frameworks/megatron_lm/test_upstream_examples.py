"""Megatron-LM's own example launches (copied unchanged into tests/data/upstream/, listed in SOURCES.json) through
the real CLI, with what the real megatron-core 0.19.2 does with them."""

from __future__ import annotations

import json
import re

from conftest import ROOT

UPSTREAM = ROOT / "tests" / "data" / "upstream"
MIXTRAL = UPSTREAM / "NVIDIA+Megatron-LM" / "examples" / "mixtral" / "train_mixtral_8x7b_distributed.sh"


def test_every_upstream_file_is_listed_with_its_commit():
    sources = json.loads((UPSTREAM / "SOURCES.json").read_text(encoding="utf-8"))
    listed = set()
    for entry in sources:
        owner, repo = entry["repo"].split("/")
        path = UPSTREAM / f"{owner}+{repo}" / entry["path"]
        assert path.is_file(), path
        if "commit" in entry:
            assert set(entry) >= {"repo", "path", "commit"}, entry
            assert re.fullmatch(r"[0-9a-f]{40}", entry["commit"]), entry
        else:  # a file of a published release (its wheel), named by release and content hash
            import hashlib

            assert set(entry) >= {"repo", "path", "release", "sha256"}, entry
            assert hashlib.sha256(path.read_bytes()).hexdigest() == entry["sha256"], entry
        listed.add(path)
    on_disk = {p for p in UPSTREAM.rglob("*") if p.is_file() and p.name != "SOURCES.json"}
    assert on_disk == listed


def _check(run_cli, *flags):
    code, out, _ = run_cli("check", MIXTRAL, "--format", "json", *flags)
    result = json.loads(out)["results"][0]
    assert result["error"] is None, result["error"]
    return code, result


def test_mixtral_8x7b_on_one_node_does_not_fit_the_expert_grid(run_cli):
    """EP 8 x PP 4 with one node of 8 GPUs (its GPUS_PER_NODE=8, NNODES defaulting to 1): the expert grid needs
    ETP 1 (= TP) x EP 8 x PP 4 = 32 ranks; parallel_state.initialize_model_parallel raises (parallel_state.py:882)."""
    code, result = _check(run_cli, "--world-size", "8")
    assert result["target"]["world_size"] == 8
    grid = [f for f in result["findings"] if f["code"] == "DP313"]
    assert [f["severity"] for f in grid] == ["error"]
    assert '"world_size (8) is not divisible by expert_tensor_model_pipeline_parallel size (32)"' in grid[0]["message"]
    assert grid[0]["key"] == "--expert-model-parallel-size" and grid[0]["line"] == 85
    assert code == 1


def test_mixtral_8x7b_effective_values(run_cli):
    """What validate_args makes of the script's flags: bf16 reduces gradients in fp32, TP = 1 drops --sequence-parallel,
    PP 4 without a virtual pipeline turns p2p overlap and aligned param gather off."""
    _, result = _check(run_cli, "--world-size", "8")
    eff = {k: (v["value"], v["source"]) for k, v in result["effective"].items()}
    assert eff["ddp.grad_reduce_in_fp32"] == (True, "derived")
    assert eff["model.sequence_parallel"] == (False, "forced-off")
    assert eff["model.overlap_p2p_comm"] == (False, "forced-off")
    assert eff["ddp.align_param_gather"] == (False, "forced-off")
    assert eff["model.expert_model_parallel_size"] == (8, "user")


def test_mixtral_8x7b_on_four_nodes_fits(run_cli, tmp_path):
    """With SLURM_NNODES=4 (its NNODES) the script runs on 32 GPUs: the expert grid is exactly the world."""
    text = MIXTRAL.read_text(encoding="utf-8").replace("#!/bin/bash\n", "#!/bin/bash\nSLURM_NNODES=4\n", 1)
    script = tmp_path / MIXTRAL.name
    script.write_text(text, encoding="utf-8")
    code, out, _ = run_cli("check", script, "--format", "json")
    result = json.loads(out)["results"][0]
    assert result["error"] is None, result["error"]
    assert result["target"]["world_size"] == 32
    assert not [f for f in result["findings"] if f["code"] == "DP313" or f["severity"] == "error"]
