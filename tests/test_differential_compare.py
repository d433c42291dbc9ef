"""The differential comparison has no list of keys to forget: every key `overlap check` prints in ``effective``
is held to the reference, so a key added to ``effective`` later is compared the day it is added, and a key
the reference does not produce is a failure, never passed over. Runs without the reference environment:
the tool's side is a real `overlap check` result; the reference side is built from it here."""

from __future__ import annotations

import copy

import pytest

import differential
from differential import DP, OUTCOME, compare, run_tool

SCRIPT = ("#!/bin/bash\nexport CUDA_DEVICE_MAX_CONNECTIONS=1\n"
          "torchrun --nproc_per_node 8 pretrain_gpt.py --num-layers 8 --hidden-size 64 --num-attention-heads 4 "
          "--seq-length 128 --max-position-embeddings 128 --micro-batch-size 1 --tensor-model-parallel-size 2 "
          "--sequence-parallel --bf16 --use-distributed-optimizer --overlap-grad-reduce\n")


def lookup(variant, key):
    if key.startswith("env."):
        return variant["env"].get(key[len("env."):])
    return variant["values"][key]


@pytest.fixture(scope="module")
def printed(tmp_path_factory):
    path = tmp_path_factory.mktemp("launch") / "train.sh"
    path.write_text(SCRIPT)
    result = run_tool(path, "--gpu", "h100")
    assert "crash" not in result and result["effective"], result
    return result


def agreeing(result):
    """A launched reference run holding exactly what the tool printed."""
    eff = result["effective"]
    return {"failed": False, "error": None, "data_parallel_size": result["target"]["data_parallel_size"],
            "values": {k: v["value"] for k, v in eff.items() if not k.startswith("env.")},
            "env": {k[4:]: v["value"] for k, v in eff.items() if k.startswith("env.") and v["value"] is not None}}


def test_a_reference_with_every_value_agrees(printed):
    assert compare(printed, [agreeing(printed)], lookup) == []


def test_every_printed_key_is_compared(printed):
    """Each key, changed alone in the reference, is a disagreement naming that key: none is left out."""
    for key in printed["effective"]:
        real = agreeing(printed)
        if key.startswith("env."):
            real["env"][key[4:]] = "changed"
        else:
            real["values"][key] = "changed"
        assert [d.key for d in compare(printed, [real], lookup)] == [key]


def test_a_key_added_to_effective_later_is_compared(printed):
    """A key the tool starts printing is compared at once: the reference has no value for it -> failure."""
    result = copy.deepcopy(printed)
    result["effective"]["ddp.some_key_added_later"] = {"value": 3, "source": "default", "reason": "new"}
    found = compare(result, [agreeing(printed)], lookup)
    assert [(d.key, d.cause) for d in found] == [("ddp.some_key_added_later", "no reference value")]


def test_a_key_the_reference_does_not_produce_fails(printed):
    real = agreeing(printed)
    key = next(k for k in printed["effective"] if not k.startswith("env."))
    del real["values"][key]
    assert [(d.key, d.cause) for d in compare(printed, [real], lookup)] == [(key, "no reference value")]


def test_the_data_parallel_size_and_the_outcome_are_compared(printed):
    real = agreeing(printed)
    real["data_parallel_size"] += 1
    assert [d.key for d in compare(printed, [real], lookup)] == [DP]
    failed = {"failed": True, "error": "some assertion", "stage": "validate_args", "data_parallel_size": None}
    assert [d.key for d in compare(printed, [failed], lookup)] == [OUTCOME]


def test_unknown_agrees_only_where_the_real_value_depends_on_the_caller(printed):
    result = copy.deepcopy(printed)
    key = "model.tensor_model_parallel_size"
    result["effective"][key] = {"value": None, "source": "unknown", "reason": "test"}
    one = agreeing(printed)
    assert [(d.key, d.cause) for d in compare(result, [one], lookup)] == [(key, "tool unknown, but determined")]
    other = agreeing(printed)
    other["values"][key] = 4
    assert compare(result, [one, other], lookup) == []  # two caller environments, two real values


def test_the_environment_switch_turns_the_differential_tests_off(monkeypatch):
    monkeypatch.setenv("OVERLAP_BRIDGE_ENV", "off")
    assert differential.reference_python() is None
