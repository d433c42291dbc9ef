"""Recipe + override files + dotlists against Bridge itself: megatron-bridge 0.6.2's ConfigContainer built
from the recipe's dump, ``process_config_with_overrides`` and the runtime update (bridge_reference.py, one
subprocess for every case, in an environment that has Bridge installed; skips when there is none).

For every case: where Bridge raises, ``overlap check`` reports an error finding; where it launches,
``overlap check``'s effective values equal the ones Bridge computed.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path

import pytest

from conftest import CORPUS, ROOT

HERE = Path(__file__).parent
_ENVS = [os.environ.get("OVERLAP_BRIDGE_ENV"), str(ROOT.parent / "shared" / "bridge-env"), "/tmp/bridge-env"]
PYTHON = next((Path(e) / "bin" / "python" for e in _ENVS if e and (Path(e) / "bin" / "python").exists()), None)

L70 = "llama3_70b_pretrain_64gpu_h100_bf16_config"
GEMMA = "gemma3_1b_pretrain_1gpu_h100_bf16_config"
L1B = "llama32_1b_pretrain_1gpu_h100_bf16_config"
QWEN_MOE = "qwen3_30b_a3b_pretrain_16gpu_h100_bf16_config"
GPT_OSS = "gpt_oss_20b_pretrain_16gpu_h100_bf16_config"
DSV3 = "deepseek_v3_pretrain_64gpu_h100_bf16_config"
OLMOE = "olmoe_7b_pretrain_8gpu_h100_bf16_config"
NANO = "nemotron_3_nano_pretrain_16gpu_h100_bf16_config"
NH8 = "nemotronh_8b_pretrain_2gpu_h100_bf16_config"
Q25 = "qwen25_7b_pretrain_2gpu_h100_bf16_config"
CO = "_target_: megatron.bridge.training.comm_overlap.CommOverlapConfig\n"

# (id, recipe, override files (YAML texts, merged in order), dotlists, world size)
CASES = [
    ("ddp-under-comm-overlap", L70, ["model:\n  tensor_model_parallel_size: 4\nddp:\n  overlap_grad_reduce: false\n"],
     ["model.context_parallel_size=1"], 64),
    ("comm-overlap-onto-null", GEMMA, ["comm_overlap:\n  tp_comm_overlap: false\n  overlap_grad_reduce: true\n"], [], 8),
    ("comm-overlap-onto-null-with-target", GEMMA,
     ["comm_overlap:\n  " + CO + "  tp_comm_overlap: false\n  overlap_grad_reduce: true\n"], [], 8),
    ("mixed-precision-mapping-onto-name", L1B, ["mixed_precision:\n  grad_reduce_in_fp32: true\n"], [], 8),
    ("mixed-precision-recursed", QWEN_MOE, ["mixed_precision:\n  grad_reduce_in_fp32: true\n"], [], 16),
    # DeepSeek-V3's EP 64 x PP must fit the world too (the expert grid, DP313): 256 ranks for PP 4, 512 for PP 8
    ("list-replaced", DSV3, ["model:\n  cuda_graph_scope: [attn]\n  pipeline_model_parallel_size: 4\n"
                             "  virtual_pipeline_model_parallel_size: null\n  pipeline_model_parallel_layout: null\n"], [], 256),
    ("dotlist-plus-new-key", GPT_OSS, [], ["+model.some_new_flag=1", "model.sequence_parallel=false"], 16),
    ("dotlist-delete-section", L70, [], ["~comm_overlap"], 64),
    ("dotlist-delete-field", L70, ["ddp:\n  overlap_param_gather: false\n"], ["~ddp.overlap_param_gather"], 64),
    ("dotlist-force", OLMOE, [], ["++model.expert_model_parallel_size=4", "ddp.overlap_param_gather=false"], 8),
    ("moe-ep-overlap", NANO, ["comm_overlap:\n  overlap_moe_expert_parallel_comm: true\n"], [], 16),
    ("two-files-later-wins", Q25, ["model:\n  tensor_model_parallel_size: 2\n  sequence_parallel: true\n",
                                   "model:\n  tensor_model_parallel_size: 4\n"], [], 8),
    ("tp-overlap-enabled", NH8, ["comm_overlap:\n  tp_comm_overlap: true\nmodel:\n  tensor_model_parallel_size: 2\n"
                                 "  sequence_parallel: true\n"], [], 8),
    ("comm-overlap-null-in-file", L70, ["comm_overlap: null\n"], [], 64),
    ("bigger-world", DSV3, [], [], 1024),
    ("dotlist-null-vpp", L70, [], ["model.virtual_pipeline_model_parallel_size=null"], 64),
    ("dotlist-plus-onto-null-section", GEMMA, [], ["+comm_overlap.overlap_grad_reduce=true"], 8),
    ("dotlist-force-section-with-target", GEMMA, [],
     ["++comm_overlap={_target_:megatron.bridge.training.comm_overlap.CommOverlapConfig,tp_comm_overlap:false}"], 8),
    ("interpolation-across-layers", L70, ["model:\n  context_parallel_size: ${model.tensor_model_parallel_size}\n"], [], 64),
    ("mixed-precision-null", QWEN_MOE, ["mixed_precision: null\n"], [], 16),
    # null in the file, a mapping started on the command line: _apply_overrides meets the recipe's dataclass
    ("null-then-dotlist-mapping", L70, ["comm_overlap: null\n"], ["+comm_overlap.tp_comm_overlap=false"], 64),
]

COMPARED = [
    "model.tensor_model_parallel_size", "model.pipeline_model_parallel_size", "model.virtual_pipeline_model_parallel_size",
    "model.context_parallel_size", "model.sequence_parallel", "model.tp_comm_overlap", "model.overlap_p2p_comm",
    "model.batch_p2p_comm", "model.defer_embedding_wgrad_compute", "model.wgrad_deferral_limit",
    "model.overlap_moe_expert_parallel_comm", "model.delay_wgrad_compute", "ddp.use_distributed_optimizer",
    "ddp.overlap_grad_reduce", "ddp.overlap_param_gather", "ddp.align_param_gather", "ddp.bucket_size",
    "ddp.grad_reduce_in_fp32", "ddp.fp8_param_gather", "optimizer.overlap_param_gather",
    "optimizer.overlap_param_gather_with_optimizer_step",
]


def _files(folder: Path, name: str, texts: list) -> list:
    paths = []
    for i, text in enumerate(texts):
        p = folder / f"{name}-{i}.yaml"
        p.write_text(text)
        paths.append(str(p))
    return paths


@pytest.fixture(scope="module")
def reference(tmp_path_factory):
    if PYTHON is None:
        pytest.skip("no environment with megatron-bridge 0.6.2 (set OVERLAP_BRIDGE_ENV)")
    if not (CORPUS / f"{L70}.yaml").is_file():
        pytest.skip(f"the recipe dumps are not at {CORPUS}")
    folder = tmp_path_factory.mktemp("bridge-reference")
    cases = [{"base": str(CORPUS / f"{recipe}.yaml"), "files": _files(folder, name, texts), "dotlists": dotlists,
              "world_size": ws} for name, recipe, texts, dotlists, ws in CASES]
    proc = subprocess.run([str(PYTHON), str(HERE / "bridge_reference.py")], input=json.dumps(cases),
                          capture_output=True, text=True, timeout=600)
    if proc.returncode or "@@bridge-reference-results@@\n" not in proc.stdout:
        pytest.skip(f"the reference environment cannot run Bridge's config code: {proc.stderr.strip()[-300:]}")
    results = json.loads(proc.stdout.split("@@bridge-reference-results@@\n", 1)[1])
    return dict(zip([c[0] for c in CASES], results))


@pytest.mark.parametrize("name, recipe, texts, dotlists, ws", CASES, ids=[c[0] for c in CASES])
def test_same_as_bridge(reference, run_cli, tmp_path, name, recipe, texts, dotlists, ws):
    real = reference[name]
    files = _files(tmp_path, name, texts)
    code, out, err = run_cli("check", "--recipe", recipe, *files, *dotlists, "--world-size", ws,
                             "--show-effective", "--format", "json")
    assert code in (0, 1), err
    results = json.loads(out)["results"]
    result = results[-1]
    assert result["error"] is None, result["error"]
    errors = [f"{f['code']}: {f['message']}" for f in result["findings"] if f["severity"] == "error"]
    if real.get("error") is not None:
        assert errors, f"Bridge fails with {real['error']!r}; overlap reports no error"
        return
    assert not errors, f"Bridge launches this; overlap reports errors: {errors}"
    got = {k: result["effective"][k]["value"] for k in COMPARED}
    want = {k: real["values"][k] for k in COMPARED}
    assert got == want
    assert result["target"]["data_parallel_size"] == real["values"]["data_parallel_size"]


def test_the_cases_cover_both_outcomes(reference):
    failing = [n for n, r in reference.items() if r.get("error") is not None]
    assert len(failing) >= 2 and len(reference) - len(failing) >= 10, failing
