"""A finding's message never contradicts the effective table of the same result.

Runs the real CLI (``overlap check --format json``) over every recipe of the corpus under several
targets, and over hand-made configs for the cases a recipe does not cover, and reads each message's
statements about effective values with tests/message_consistency.py.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections import defaultdict

import pytest

from conftest import CORPUS, ROOT
from message_consistency import contradictions


def _check_json(run_cli, *args) -> list:
    code, out, err = run_cli("check", "--format", "json", *args)
    assert code in (0, 1, 2), err
    return json.loads(out)["results"]


def _assert_consistent(results: list) -> None:
    problems = [p for r in results for p in contradictions(r)]
    assert not problems, f"{len(problems)} contradictions, e.g.:\n" + "\n".join(problems[:15])


def test_the_checker_catches_a_contradiction():
    """The reader itself: each kind of statement, made false on purpose, is reported."""
    eff = {
        "model.tensor_model_parallel_size": {"value": 2, "source": "user"},
        "model.pipeline_model_parallel_size": {"value": 4, "source": "user"},
        "model.virtual_pipeline_model_parallel_size": {"value": None, "source": "default"},
        "model.context_parallel_size": {"value": 1, "source": "default"},
        "model.tp_comm_overlap": {"value": False, "source": "forced-off"},
        "ddp.overlap_grad_reduce": {"value": True, "source": "user"},
        "ddp.overlap_param_gather": {"value": False, "source": "bridge-auto"},
        "optimizer.overlap_param_gather": {"value": False, "source": "bridge-auto"},
        "ddp.bucket_size": {"value": None, "source": "bridge-auto"},
        "env.CUDA_DEVICE_MAX_CONNECTIONS": {"value": "32", "source": "env_vars"},
    }
    result = {"file": "x.yaml", "effective": eff, "target": {"world_size": 8, "data_parallel_size": 1}}
    wrong = [
        "DP=1: Bridge forces overlap_grad_reduce off",
        "DP=2: bucket_size=134,217,728 parameters",
        "data-parallel size unknown (give --world-size): ...",
        "PP=4, VPP=2: overlap_p2p_comm=true",
        "TP overlap is on: keep 16 SMs free",
        "DP overlap is off",
        "ddp.overlap_grad_reduce: true is overwritten by comm_overlap's data-parallel path with false; ...",
        "env_vars has no CUDA_DEVICE_MAX_CONNECTIONS (unset = 8)",
        "env_vars sets CUDA_DEVICE_MAX_CONNECTIONS=8; the target needs 1",
        "overlap_param_gather=true",
    ]
    for message in wrong:
        found = contradictions({**result, "findings": [{"code": "X", "message": message}]})
        assert found, message
    for message in ("ENV501 depends on GPU: ...; give --gpu or [tool.overlap] gpu",):
        found = contradictions({**result, "target": {**result["target"], "gpu": "h100", "compute_capability": "9.0"},
                                "findings": [{"code": "X", "message": message}]})
        assert found, message
    vpp2 = {**eff, "model.virtual_pipeline_model_parallel_size": {"value": 2, "source": "user"}}
    assert contradictions({**result, "effective": vpp2, "findings": [{"code": "X", "message": "PP=4 without VPP: ..."}]})
    assert contradictions({**result, "target": {"world_size": 7, "data_parallel_size": None},
                           "findings": [{"code": "X", "message": "DP overlap (on when DP > 1: world size not given) is on"}]})
    right = [
        "DP=1: Bridge forces overlap_param_gather off and bucket_size to null; comm_overlap sets overlap_grad_reduce=true",
        "PP=4 without VPP: with DP > 1 Bridge sets bucket_size to 134,217,728 parameters",
        "TP overlap is off; DP overlap is on",
        "env_vars sets CUDA_DEVICE_MAX_CONNECTIONS=32; the target needs 8",
    ]
    for message in right:
        assert not contradictions({**result, "findings": [{"code": "X", "message": message}]}), message


def _cases(tmp_path):
    """Configs a recipe does not cover: a value moved into comm_overlap at DP = 1 (what a fix may write)."""
    path = tmp_path / "dp1_user_overlap.yaml"
    path.write_text(
        "model:\n  tensor_model_parallel_size: 2\n  pipeline_model_parallel_size: 4\n"
        "ddp:\n  use_distributed_optimizer: true\n"
        "comm_overlap:\n  tp_comm_overlap: false\n  overlap_grad_reduce: true\n  align_param_gather: true\n"
    )
    return path


@pytest.mark.parametrize("world_size", [None, "8", "7", "16"])
def test_messages_agree_with_the_table_on_hand_made_configs(run_cli, tmp_path, world_size):
    path = _cases(tmp_path)
    results = _check_json(run_cli, path, *(["--world-size", world_size] if world_size else []))
    _assert_consistent(results)
    dp301 = [f["message"] for r in results for f in r["findings"] if f["code"] == "DP301"]
    assert dp301
    if world_size == "7":  # TP*PP*CP = 8: DP is undefined, not "not given"
        assert "give --world-size" not in dp301[0] and "DP307" in dp301[0]
    if world_size == "8":  # DP = 1: what comm_overlap sets is not "forced off"
        assert "overlap_grad_reduce" not in dp301[0].split(";")[0] and "overlap_grad_reduce=true" in dp301[0]


def test_messages_agree_with_the_table_on_the_corpus_with_its_targets(run_cli, corpus):
    groups = defaultdict(list)
    for row in corpus:
        groups[(row["world_size"], row["gpu"])].append(row["path"])
    results = []
    for (world_size, gpu), paths in sorted(groups.items(), key=str):
        results += _check_json(run_cli, *paths, "--world-size", world_size, *(["--gpu", gpu] if gpu else []))
    assert len(results) == len(corpus)
    _assert_consistent(results)


@pytest.mark.parametrize(
    "flags",
    [
        ["--world-size", "7"],  # not divisible by TP*PP*CP for most recipes: DP undefined
        # DP = 1 everywhere, with a DP overlap the file asks for, and TP overlap switched off (no TE)
        ["--world-size", "1", "++comm_overlap.overlap_grad_reduce=true", "--no-te"],
    ],
    ids=["ws7", "ws1-user-overlap-no-te"],
)
def test_messages_agree_with_the_table_on_the_corpus(run_cli, corpus, flags):
    results = _check_json(run_cli, str(CORPUS), *flags)
    assert len(results) >= len(corpus)
    _assert_consistent(results)


@pytest.mark.parametrize("world_size", ["1", "7", "8", "64"])
def test_messages_agree_with_the_table_after_a_fix(run_cli, tmp_path, world_size):
    """`fix --write --unsafe-fixes` on the examples (the hand-written ones and the Bridge dumps), then
    `check`: what the fixed files say agrees with what they resolve to."""
    import shutil

    examples = sorted((ROOT / "examples").glob("*.yaml")) + sorted((ROOT / "examples" / "bridge").glob("*.yaml"))
    copies = []
    for src in examples:
        if "invalid" in src.name:
            continue
        dst = tmp_path / src.name
        shutil.copy(src, dst)
        copies.append(dst)
    assert len(copies) >= 8
    code, _, err = run_cli("fix", *copies, "--write", "--unsafe-fixes", "--world-size", world_size, "--gpu", "h100")
    assert code in (0, 1), err
    results = _check_json(run_cli, *copies, "--world-size", world_size, "--gpu", "h100")
    assert len(results) == len(copies) and not any(r["error"] for r in results)
    _assert_consistent(results)
