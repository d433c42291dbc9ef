"""A value validate_args derives from an input the launch does not know is unknown, with the reason naming that
input — never a default. Each row: a launch with one value left to the environment ($X), the effective keys
that depend on it, and two values X may take under which the real megatron-core 0.19.2 (mlm_reference.py)
gives those keys different values — so reporting either would be a guess."""

from __future__ import annotations

import json
import shlex

import pytest

from lmref import reference_case, run_reference, target_flags, write_launch

BASE = ("--num-layers 8 --hidden-size 64 --num-attention-heads 4 --seq-length 128 --max-position-embeddings 128 "
        "--micro-batch-size 1")

# (id, launch words with $X, the flag X is the value of, effective key -> real value key, two values for X)
ROWS = [
    ("tp-decides-sequence-parallel", "--tensor-model-parallel-size $X --sequence-parallel", "--tensor-model-parallel-size",
     {"model.sequence_parallel": "model.sequence_parallel"}, ("1", "2")),
    ("vpp-decides-p2p-overlap", "--pipeline-model-parallel-size 4 --num-virtual-stages-per-pipeline-rank $X",
     "--num-virtual-stages-per-pipeline-rank",
     {"model.overlap_p2p_comm": "model.overlap_p2p_comm", "ddp.align_param_gather": "ddp.align_param_gather",
      "model.batch_p2p_comm": "model.batch_p2p_comm",
      "model.virtual_pipeline_model_parallel_size": "model.virtual_pipeline_model_parallel_size"}, ("1", "2")),
    ("pp-decides-vpp-and-dp", "--pipeline-model-parallel-size $X --num-layers-per-virtual-pipeline-stage 1 "
     "--overlap-grad-reduce --use-distributed-optimizer", "--pipeline-model-parallel-size",
     {"model.overlap_p2p_comm": "model.overlap_p2p_comm", "ddp.bucket_size": "ddp.bucket_size",
      "model.virtual_pipeline_model_parallel_size": "model.virtual_pipeline_model_parallel_size"}, ("2", "8")),
    ("tp-decides-the-bucket", "--tensor-model-parallel-size $X --overlap-grad-reduce", "--tensor-model-parallel-size",
     {"ddp.bucket_size": "ddp.bucket_size"}, ("1", "2")),
    ("optimizer-decides-distopt", "--optimizer $X --use-distributed-optimizer", "--optimizer",
     {"ddp.use_distributed_optimizer": "ddp.use_distributed_optimizer"}, ("adam", "muon")),
    ("main-grads-dtype-decides-grad-dtype", "--bf16 --main-grads-dtype $X --use-precision-aware-optimizer "
     "--use-distributed-optimizer", "--main-grads-dtype",
     {"ddp.grad_reduce_in_fp32": "ddp.grad_reduce_in_fp32"}, ("fp32", "bf16")),
]
WORLD = 128  # DP large enough that the bucket (max(40M, 1M x DP x CP)) follows it


@pytest.fixture(scope="module")
def reference():
    cases = [reference_case(shlex.split(f"{BASE} {words.replace('$X', x)}"), WORLD, 10, {}, "2.12")
             for _, words, _, _, xs in ROWS for x in xs]
    results = run_reference(cases)
    return {row[0]: results[2 * i: 2 * i + 2] for i, row in enumerate(ROWS)}


def _value(values: dict, name: str):
    return values[name]


@pytest.mark.parametrize("name, words, flag, keys, xs", ROWS, ids=[r[0] for r in ROWS])
def test_the_derived_values_are_unknown_naming_the_input(run_cli, tmp_path, name, words, flag, keys, xs):
    script = write_launch(tmp_path / "launch.sh", f"{BASE} {words}", WORLD, {})
    _, out, _ = run_cli("check", script, *target_flags(10, "2.12"), "--format", "json")
    result = json.loads(out)["results"][0]
    assert result["error"] is None, result["error"]
    for key in keys:
        got = result["effective"][key]
        assert (got["value"], got["source"]) == (None, "unknown"), (key, got)
        assert flag in got["reason"], (key, got["reason"])
    assert not [f for f in result["findings"] if f["severity"] == "error"]


@pytest.mark.parametrize("name, words, flag, keys, xs", ROWS, ids=[r[0] for r in ROWS])
def test_megatron_lm_gives_them_different_values(reference, name, words, flag, keys, xs):
    first, second = reference[name]
    assert first["error"] is None and second["error"] is None, (first, second)
    for real in keys.values():
        assert _value(first["values"], real) != _value(second["values"], real), real


def test_a_value_that_does_not_depend_on_the_unknown_stays_known(reference_cp, run_cli, tmp_path):
    """The bucket is max(40M, 1M x DP x CP), and DP x CP is the world over TP x PP whatever CP is: with CP left to
    the environment it is still known, and the real code gives it for any CP."""
    script = write_launch(tmp_path / "launch.sh", f"{BASE} --context-parallel-size $X --overlap-grad-reduce", WORLD, {})
    _, out, _ = run_cli("check", script, *target_flags(10, "2.12"), "--format", "json")
    got = json.loads(out)["results"][0]["effective"]["ddp.bucket_size"]
    assert got["source"] == "derived"
    assert {r["values"]["ddp.bucket_size"] for r in reference_cp} == {got["value"]}


@pytest.fixture(scope="module")
def reference_cp():
    return run_reference([reference_case(shlex.split(f"{BASE} --context-parallel-size {cp} --overlap-grad-reduce"),
                                         WORLD, 10, {}, "2.12") for cp in ("1", "2", "4")])
