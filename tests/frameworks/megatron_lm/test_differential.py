"""The Megatron-LM resolver against the real thing: megatron-core 0.19.2's ``parse_args`` + ``validate_args``
(+ ``get_megatron_ddp_config``, ``resolve_ddp_bucket_size``, ``core_transformer_config_from_args``), run by
mlm_reference.py in an environment that has megatron-core installed. Skips when there is none.

For every launch: when the real code asserts, `overlap check` reports an error quoting that message; when
it does not, `overlap check` reports no error and its effective values equal the real ones.
"""

from __future__ import annotations

import json
import shlex

import pytest

from lmref import reference_case, run_reference, target_flags, write_launch

BASE = ("--num-layers 8 --hidden-size 64 --num-attention-heads 4 --seq-length 128 --max-position-embeddings 128 "
        "--micro-batch-size 1")
ONE = {"CUDA_DEVICE_MAX_CONNECTIONS": "1"}
FSDP2 = "--use-torch-fsdp2 --untie-embeddings-and-output-weights --no-gradient-accumulation-fusion"
OPG = "--use-distributed-optimizer --overlap-grad-reduce --overlap-param-gather"
# (id, extra flags, world size, GPU architecture major (9 Hopper, 10 Blackwell), launch environment)
LAUNCHES = [
    ("plain", "", 8, 9, {}),
    ("tp2-sp", "--tensor-model-parallel-size 2 --sequence-parallel", 8, 9, ONE),
    ("tp2-no-conn-hopper", "--tensor-model-parallel-size 2 --sequence-parallel", 8, 9, {}),
    ("tp2-no-conn-blackwell", "--tensor-model-parallel-size 2 --sequence-parallel", 8, 10, {}),
    ("tp2-conn8-hopper", "--tensor-model-parallel-size 2", 8, 9, {"CUDA_DEVICE_MAX_CONNECTIONS": "8"}),
    ("cp2-no-conn-hopper", "--context-parallel-size 2", 8, 9, {}),
    ("tp-overlap-no-sp", "--tensor-model-parallel-size 2 --tp-comm-overlap", 8, 9, ONE),
    ("tp-overlap-sp", "--tensor-model-parallel-size 2 --sequence-parallel --tp-comm-overlap", 8, 9, ONE),
    ("tp-overlap-tp1", "--sequence-parallel --tp-comm-overlap", 8, 9, {}),
    ("sp-tp1", "--sequence-parallel", 8, 9, {}),
    ("pp2", "--pipeline-model-parallel-size 2", 8, 9, {}),
    ("pp4-vpp-layers", "--pipeline-model-parallel-size 4 --num-layers-per-virtual-pipeline-stage 1", 8, 9, {}),
    ("pp2-vpp-stages", "--pipeline-model-parallel-size 2 --num-virtual-stages-per-pipeline-rank 2", 8, 9, {}),
    ("pp2-vpp-no-p2p", "--pipeline-model-parallel-size 2 --num-virtual-stages-per-pipeline-rank 2 --no-overlap-p2p-communication", 8, 9, {}),
    ("pp4-vpp-no-p2p", "--pipeline-model-parallel-size 4 --num-virtual-stages-per-pipeline-rank 2 --no-overlap-p2p-communication", 8, 9, {}),
    ("pp1-vpp", "--num-virtual-stages-per-pipeline-rank 2", 8, 9, {}),
    ("vpp-layers-not-divisible", "--pipeline-model-parallel-size 4 --num-layers-per-virtual-pipeline-stage 4", 8, 9, {}),
    ("layers-not-divisible", "--pipeline-model-parallel-size 3", 6, 9, {}),
    ("vpp-two-ways", "--pipeline-model-parallel-size 2 --num-layers-per-virtual-pipeline-stage 2 --num-virtual-stages-per-pipeline-rank 2", 8, 9, {}),
    ("vpp-one", "--pipeline-model-parallel-size 2 --num-virtual-stages-per-pipeline-rank 1", 8, 9, {}),
    ("layout-not-divisible", "--pipeline-model-parallel-size 2 --pipeline-model-parallel-layout 'Ett|tt|ttL'", 8, 9, {}),
    ("vpp-no-align", "--pipeline-model-parallel-size 2 --num-virtual-stages-per-pipeline-rank 2 --no-align-param-gather", 8, 9, {}),
    ("layout", "--pipeline-model-parallel-size 2 --pipeline-model-parallel-layout 'Ett|tt|tt|ttL'", 8, 9, {}),
    ("dp-overlap", OPG, 8, 9, {}),
    ("opg-no-distopt", "--overlap-grad-reduce --overlap-param-gather", 8, 9, {}),
    ("opg-no-ogr", "--use-distributed-optimizer --overlap-param-gather", 8, 9, {}),
    ("ops-no-vpp", OPG + " --overlap-param-gather-with-optimizer-step", 8, 9, {}),
    ("ops-dist-ckpt", OPG + " --overlap-param-gather-with-optimizer-step --pipeline-model-parallel-size 2 "
     "--num-virtual-stages-per-pipeline-rank 2", 8, 9, {}),
    ("ops-ok", OPG + " --overlap-param-gather-with-optimizer-step --pipeline-model-parallel-size 2 "
     "--num-virtual-stages-per-pipeline-rank 2 --ckpt-format torch", 8, 9, {}),
    ("bucket-dp64", "--overlap-grad-reduce", 64, 9, {}),
    ("bucket-dp-cp", "--overlap-grad-reduce --context-parallel-size 2", 128, 9, ONE),
    ("bucket-given", "--overlap-grad-reduce --ddp-bucket-size 12345", 8, 9, {}),
    ("bucket-without-overlap", "--ddp-bucket-size 12345", 8, 9, {}),
    ("buckets-both", "--overlap-grad-reduce --ddp-num-buckets 4 --ddp-bucket-size 100", 8, 9, {}),
    ("world-not-divisible", "--tensor-model-parallel-size 4", 6, 9, ONE),
    ("mfsdp", "--use-megatron-fsdp --ckpt-format fsdp_dtensor", 8, 9, {}),
    ("mfsdp-conn1", "--use-megatron-fsdp --ckpt-format fsdp_dtensor", 8, 9, ONE),
    ("fsdp2-distopt", FSDP2 + " --use-distributed-optimizer", 8, 9, {}),
    ("fsdp2-conn1", FSDP2, 8, 9, ONE),
    ("fsdp2-tp2-hopper", FSDP2 + " --tensor-model-parallel-size 2 --sequence-parallel", 8, 9, {}),
    ("freeze", "--freeze-all-layers " + OPG, 8, 9, {}),
    ("defer-wgrad-pp1", "--defer-embedding-wgrad-compute", 8, 9, {}),
    ("defer-wgrad-no-fusion", "--defer-embedding-wgrad-compute --pipeline-model-parallel-size 2 "
     "--no-gradient-accumulation-fusion", 8, 9, {}),
    ("defer-wgrad-pp2", "--defer-embedding-wgrad-compute --pipeline-model-parallel-size 2", 8, 9, {}),
    ("warmup-flush-no-vpp", "--overlap-p2p-communication-warmup-flush --pipeline-model-parallel-size 2", 8, 9, {}),
    ("warmup-flush-vpp", "--overlap-p2p-communication-warmup-flush --pipeline-model-parallel-size 2 "
     "--num-virtual-stages-per-pipeline-rank 2", 8, 9, {}),
    ("delay-wgrad-no-ep-overlap", "--delay-wgrad-compute", 8, 9, {}),
    ("deterministic-tp-overlap", "--deterministic-mode --tensor-model-parallel-size 2 --sequence-parallel "
     "--tp-comm-overlap", 8, 9, ONE),
    ("deterministic", "--deterministic-mode --tensor-model-parallel-size 2 --sequence-parallel", 8, 9, ONE),
    ("muon-distopt", "--optimizer muon --use-distributed-optimizer --overlap-grad-reduce", 8, 9, {}),
    ("ep-overlap-ep1", "--num-experts 8 --moe-token-dispatcher-type alltoall --overlap-moe-expert-parallel-comm "
     "--bf16", 8, 9, {}),
    ("ep-overlap-no-bf16", "--expert-model-parallel-size 8 --num-experts 8 --moe-token-dispatcher-type alltoall "
     "--overlap-moe-expert-parallel-comm", 8, 9, {}),
    ("ep-overlap-pp-no-vpp", "--expert-model-parallel-size 4 --num-experts 8 --moe-token-dispatcher-type alltoall "
     "--overlap-moe-expert-parallel-comm --bf16 --pipeline-model-parallel-size 2", 8, 9, {}),
    ("ep-overlap", "--expert-model-parallel-size 8 --num-experts 8 --moe-token-dispatcher-type alltoall "
     "--overlap-moe-expert-parallel-comm --bf16", 8, 9, {}),
    ("ep-overlap-tp2-hopper", "--tensor-model-parallel-size 2 --sequence-parallel --expert-model-parallel-size 4 "
     "--num-experts 8 --moe-token-dispatcher-type alltoall --overlap-moe-expert-parallel-comm --bf16 "
     "--disable-bias-linear", 8, 9, {}),
    ("early-attn-release-no-ep-overlap", "--ep-overlap-early-attn-memory-release", 8, 9, {}),
    ("dispatch-backward-with-ep-overlap", "--expert-model-parallel-size 8 --num-experts 8 --moe-token-dispatcher-type "
     "alltoall --overlap-moe-expert-parallel-comm --bf16 --overlap-dispatch-backward-with-experts-wgrad", 8, 9, {}),
    ("fp8-param-gather-no-distopt", "--fp8-format hybrid --fp8-param-gather", 8, 9, {}),
    ("fp8-param-gather-distopt", "--fp8-format hybrid --fp8-param-gather --use-distributed-optimizer", 8, 9, {}),
    ("delay-wgrad-local-impl", "--delay-wgrad-compute --transformer-impl local", 8, 9, {}),
    ("hybrid-vpp", "--hybrid-layer-pattern 'M*|M*|M*|M*' --pipeline-model-parallel-size 2", 8, 9, {}),
    ("hybrid-segments-not-divisible", "--hybrid-layer-pattern 'M*|M*|M*' --pipeline-model-parallel-size 2", 8, 9, {}),
    ("hybrid-with-vpp-flag", "--hybrid-layer-pattern 'M*|M*|M*|M*' --pipeline-model-parallel-size 2 "
     "--num-virtual-stages-per-pipeline-rank 2", 8, 9, {}),
    ("hybrid-no-pipes", "--hybrid-layer-pattern 'M*M*' --pipeline-model-parallel-size 2", 8, 9, {}),
    ("gbs-derived", "--tensor-model-parallel-size 2 --sequence-parallel --micro-batch-size 2", 16, 10, {}),
    # the gradient-reduction dtype (arguments.py:1181-1194): bf16 reduces in fp32 unless told otherwise
    ("bf16-grads-fp32", "--bf16 --overlap-grad-reduce", 8, 9, {}),
    ("bf16-grad-reduce-in-bf16", "--bf16 --grad-reduce-in-bf16", 8, 9, {}),
    ("bf16-grad-reduce-in-bf16-overrides", "--bf16 --grad-reduce-in-bf16 --accumulate-allreduce-grads-in-fp32", 8, 9, {}),
    ("fp16-grads", "--fp16", 8, 9, {}),
    ("fp16-grads-fp32", "--fp16 --accumulate-allreduce-grads-in-fp32", 8, 9, {}),
    ("fp32-grads", "", 8, 9, {}),
    ("bf16-main-grads-bf16", "--bf16 --main-grads-dtype bf16", 8, 9, {}),
    ("bf16-main-grads-bf16-precision-aware", "--bf16 --main-grads-dtype bf16 --use-precision-aware-optimizer "
     "--use-distributed-optimizer", 8, 9, {}, "2.12"),
    ("bf16-main-grads-bf16-accumulate", "--bf16 --main-grads-dtype bf16 --accumulate-allreduce-grads-in-fp32", 8, 9, {}),
    ("fp8-param-gather-fp32-grads", "--bf16 --fp8-format hybrid --fp8-param-gather --use-distributed-optimizer", 8, 9, {}),
]

# Effective keys compared with the real values (Megatron-Core name -> argparse dest / reference key).
COMPARED = {
    "model.tensor_model_parallel_size": "tensor_model_parallel_size",
    "model.pipeline_model_parallel_size": "pipeline_model_parallel_size",
    "model.context_parallel_size": "context_parallel_size",
    "model.virtual_pipeline_model_parallel_size": "virtual_pipeline_model_parallel_size",
    "model.sequence_parallel": "sequence_parallel",
    "model.tp_comm_overlap": "tp_comm_overlap",
    "model.overlap_p2p_comm": "overlap_p2p_comm",
    "model.batch_p2p_comm": "batch_p2p_comm",
    "ddp.bucket_size": "bucket_size",
    # the DistributedDataParallelConfig the run builds (its fields, not the argparse dests)
    "ddp.align_param_gather": "ddp.align_param_gather",
    "ddp.use_distributed_optimizer": "ddp.use_distributed_optimizer",
    "ddp.overlap_grad_reduce": "ddp.overlap_grad_reduce",
    "ddp.overlap_param_gather": "ddp.overlap_param_gather",
    "ddp.grad_reduce_in_fp32": "ddp.grad_reduce_in_fp32",
    "ddp.fp8_param_gather": "ddp.fp8_param_gather",
}


def real_value(values: dict, name: str):
    section, _, field = name.rpartition(".")
    return values[section][field] if section else values[name]


ROWS = [row + (None,) * (6 - len(row)) for row in LAUNCHES]  # (id, extra, ws, arch, env, te)


@pytest.fixture(scope="module")
def reference():
    cases = [reference_case(shlex.split(f"{BASE} {extra}"), ws, arch, env, te) for _, extra, ws, arch, env, te in ROWS]
    return dict(zip([c[0] for c in ROWS], run_reference(cases)))


@pytest.mark.parametrize("name, extra, ws, arch, env, te", ROWS, ids=[c[0] for c in ROWS])
def test_same_as_megatron_lm(reference, run_cli, tmp_path, name, extra, ws, arch, env, te):
    real = reference[name]
    script = write_launch(tmp_path / f"{name}.sh", f"{BASE} {extra}", ws, env)
    _, out, err = run_cli("check", script, *target_flags(arch, te), "--format", "json")
    result = json.loads(out)["results"][0]
    assert result["error"] is None, result["error"]
    errors = [f["message"] for f in result["findings"] if f["severity"] == "error"]
    if real["error"] is not None:
        assert any(f'"{real["error"]}"' in m for m in errors), f"Megatron-LM asserts {real['error']!r}; overlap: {errors}"
        return
    assert not errors, f"Megatron-LM launches this; overlap reports errors: {errors}"
    got = {k: result["effective"][k]["value"] for k in COMPARED}
    want = {k: real_value(real["values"], v) for k, v in COMPARED.items()}
    assert got == want
    assert result["target"]["data_parallel_size"] == real["values"]["data_parallel_size"]


def test_the_launches_cover_both_outcomes(reference):
    """The set stays meaningful: many launches assert, many run."""
    failing = [n for n, r in reference.items() if r["error"] is not None]
    assert len(failing) >= 15 and len(reference) - len(failing) >= 15, failing
