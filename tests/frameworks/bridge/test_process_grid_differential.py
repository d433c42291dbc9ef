"""DP313 on Bridge configs against Bridge itself: megatron-bridge 0.6.2's ``_initialize_distributed`` (its expert-TP
default, then parallel_state's or HyperCommGrid's size checks) on a recipe dump with overrides, run by
bridge_grid_reference.py in an environment that has Bridge installed (skips when there is none).

For every case: where Bridge raises, `overlap check` reports a DP313 error quoting the message; where it builds the
groups, no DP313 finding.
"""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

from conftest import CORPUS, ROOT
from differential import reference_python

HERE = Path(__file__).parent
PYTHON = reference_python()

DSV3 = "deepseek_v3_pretrain_64gpu_h100_bf16_config"
QWEN235 = "qwen3_235b_a22b_pretrain_64gpu_gb200_fp8cs_config"
OLMOE = "olmoe_7b_pretrain_8gpu_h100_bf16_config"
TP2 = ["model.tensor_model_parallel_size=2", "model.sequence_parallel=true"]

# (id, recipe dump, section.field=value overrides, world size)
CASES = [
    ("dsv3-64gpu-recipe-on-64", DSV3, [], 64),  # the 64-GPU recipe keeps the 1024-GPU layout: EP 64 x PP 8
    ("dsv3-64gpu-recipe-on-512", DSV3, [], 512),
    ("dsv3-decentralized-on-64", DSV3, ["dist.use_decentralized_pg=true"], 64),
    ("dsv3-decentralized-on-1024", DSV3, ["dist.use_decentralized_pg=true"], 1024),
    ("qwen3-235b-64gpu-recipe-on-64", QWEN235, [], 64),
    ("qwen3-235b-64gpu-recipe-on-256", QWEN235, [], 256),
    ("olmoe-as-recipe", OLMOE, [], 8),
    ("olmoe-tp2-etp-default", OLMOE, TP2, 8),  # Bridge: unset ETP -> 1 with EP > 1, so 1 x 8 x 1 = 8 fits
    ("olmoe-tp2-etp-2", OLMOE, [*TP2, "model.expert_tensor_parallel_size=2"], 8),
    ("olmoe-ep8-pp2", OLMOE, ["model.pipeline_model_parallel_size=2"], 8),
    ("olmoe-vpp-without-pp", OLMOE, ["model.virtual_pipeline_model_parallel_size=2"], 8),
    ("olmoe-distopt-instances-3", OLMOE, ["ddp.num_distributed_optimizer_instances=3"], 24),
    ("olmoe-expert-dp-instances", OLMOE, ["ddp.num_distributed_optimizer_instances=2"], 8),
    ("olmoe-expert-dp-instances-ok", OLMOE, ["ddp.num_distributed_optimizer_instances=2"], 16),
    ("olmoe-tp-pp-dp-order", OLMOE, ["dist.use_tp_pp_dp_mapping=true", "model.pipeline_model_parallel_size=2",
                                     "model.expert_model_parallel_size=2"], 8),
    ("olmoe-pp-last-order", OLMOE, ["model.pipeline_model_parallel_size=2", "model.expert_model_parallel_size=2"], 8),
]


@pytest.fixture(scope="module")
def reference():
    if PYTHON is None:
        pytest.skip("no environment with megatron-bridge 0.6.2 (set OVERLAP_BRIDGE_ENV)")
    if not all((CORPUS / f"{recipe}.yaml").is_file() for _, recipe, _, _ in CASES):
        pytest.skip(f"the recipe dumps are not at {CORPUS}")
    cases = [{"base": str(CORPUS / f"{recipe}.yaml"), "dotlists": dots, "world_size": ws} for _, recipe, dots, ws in CASES]
    proc = subprocess.run([str(PYTHON), str(HERE / "bridge_grid_reference.py")], input=json.dumps(cases),
                          capture_output=True, text=True, timeout=900)
    marker = "@@bridge-grid-results@@\n"
    if proc.returncode or marker not in proc.stdout:
        pytest.fail(f"the reference environment cannot run Bridge's initialization: {proc.stderr.strip()[-800:]}")
    return dict(zip([c[0] for c in CASES], json.loads(proc.stdout.split(marker, 1)[1])))


@pytest.mark.parametrize("name, recipe, dots, ws", CASES, ids=[c[0] for c in CASES])
def test_same_process_grid_errors_as_bridge(reference, run_cli, name, recipe, dots, ws):
    if not (CORPUS / f"{recipe}.yaml").exists():
        pytest.skip(f"no recipe dump {recipe} in {CORPUS}")
    real = reference[name]
    _, out, _ = run_cli("check", CORPUS / f"{recipe}.yaml", *dots, "--world-size", str(ws), "--format", "json")
    result = json.loads(out)["results"][0]
    assert result["error"] is None, result["error"]
    grid = [f["message"] for f in result["findings"] if f["code"] == "DP313"]
    if real["error"] is None:
        assert grid == []
    else:
        assert any(f'"{real["error"]}"' in m for m in grid), f"Bridge raises {real['error']!r}; DP313: {grid}"


def test_the_cases_cover_both_outcomes(reference):
    failing = [n for n, r in reference.items() if r["error"] is not None]
    assert len(failing) >= 6 and len(reference) - len(failing) >= 6, failing
