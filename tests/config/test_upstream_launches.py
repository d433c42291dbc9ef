"""Megatron-LM's own launch scripts (vendored under tests/data/upstream, SOURCES.json), through the real CLI:
the values their arrays, ``if`` blocks and ``case`` statements give."""

from __future__ import annotations

import json

import pytest

from conftest import ROOT

EXAMPLES = ROOT / "tests" / "data" / "upstream" / "NVIDIA+Megatron-LM" / "examples"


def check_json(run_cli, path, *extra):
    code, out, err = run_cli("check", "--format", "json", str(path), *extra)
    assert code in (0, 1), err
    result = json.loads(out)["results"][0]
    assert result["error"] is None, result["error"]
    return result, {k: (v["value"], v["source"]) for k, v in result["effective"].items()}


def test_sources_are_recorded():
    sources = json.loads((ROOT / "tests" / "data" / "upstream" / "SOURCES.json").read_text())
    mine = [s for s in sources if s["repo"] == "NVIDIA/Megatron-LM"]
    assert len(mine) >= 8
    for s in mine:
        assert (ROOT / "tests" / "data" / "upstream" / "NVIDIA+Megatron-LM" / s["path"]).is_file()
        assert len(s["commit"]) == 40


def test_llama_fp8_param_gather_from_the_dtype_if(run_cli):
    # DTYPE="fp8" is a literal: the [[ "$DTYPE" == "fp8" ]] block runs, and DTYPE_ARGS holds the flag
    result, eff = check_json(run_cli, EXAMPLES / "llama" / "train_llama3_8b_h100_fp8.sh")
    assert eff["ddp.fp8_param_gather"] == (True, "user")
    assert "(through variable DTYPE_ARGS" in result["effective"]["ddp.fp8_param_gather"]["reason"]
    assert eff["ddp.use_distributed_optimizer"] == (True, "user")
    assert eff["ddp.overlap_param_gather"] == (True, "user")


def test_megatron_fsdp_training_args_survive_the_optional_appends(run_cli):
    result, eff = check_json(run_cli, EXAMPLES / "megatron_fsdp" / "train_llama3_8b_fsdp_h100_fp8.sh")
    assert eff["ddp.use_distributed_optimizer"] == (True, "user")
    assert eff["ddp.overlap_grad_reduce"] == (True, "user")
    assert eff["ddp.overlap_param_gather"] == (True, "user")
    # training.py:1552 resolve_ddp_bucket_size: max(40_000_000, 1_000_000 * DP 8)
    assert eff["ddp.bucket_size"] == (40_000_000, "derived")
    assert eff["ddp.fp8_param_gather"] == (True, "user")
    assert "LM303" not in {f["code"] for f in result["findings"]}
    # the launch line `$VENV_PREFIX "${PROFILE_CMD[@]}" python -m torch.distributed.run ...` is the launch
    assert result["target"]["world_size"] == 8


def test_megatron_fsdp_profile_flags_follow_the_environment_when_no_default_is_taken(run_cli):
    """NSYS_PROFILE=${NSYS_PROFILE:-0}: the profiling block does not run with the default; LM002 says the
    caller's environment can change it, and names what is printed from a default only if one is."""
    result, _eff = check_json(run_cli, EXAMPLES / "megatron_fsdp" / "train_llama3_8b_fsdp_h100_fp8.sh", "--show-info")
    lm002 = next(f for f in result["findings"] if f["code"] == "LM002")
    messages = [u["message"] for u in lm002["details"]["unknowns"]]
    assert "line 27: ${NSYS_PROFILE:-0} is '0' unless the environment sets NSYS_PROFILE" in messages
    assert "line 39: ${USE_MEGATRON_FSDP:-1} is '1' unless the environment sets USE_MEGATRON_FSDP" in messages
    assert len(messages) == 14 and "and 11 more (--format json lists them all)" in lm002["message"]
    assert all(u["line"] == int(u["message"].split(":")[0][5:]) for u in lm002["details"]["unknowns"])


def test_mamba_tensor_parallel_size_from_the_literal_case(run_cli):
    # MODEL_SCALE="800M" is a literal: the case takes its "800M") branch, TENSOR_MODEL_PARALLEL_SIZE=1
    _result, eff = check_json(run_cli, EXAMPLES / "mamba" / "train.sh")
    assert eff["model.tensor_model_parallel_size"] == (1, "user")
    assert eff["model.sequence_parallel"] == (False, "forced-off")
    assert eff["model.overlap_p2p_comm"] == (False, "forced-off")
    assert eff["ddp.align_param_gather"] == (False, "forced-off")


def test_gptoss_values_a_sourced_file_may_set_are_unknown(run_cli):
    """02_train.sh sources --distributed-config-file when one is given; that file may set PP_SIZE's
    inputs, so PP is not printed as a fact. Without such a file PP is 8 over 12 layers: validate_args' layer
    assert is a warning naming the decision (tests/rules/test_upstream_raises.py)."""
    result, eff = check_json(run_cli, EXAMPLES / "gptoss" / "02_train.sh")
    assert eff["model.pipeline_model_parallel_size"] == (None, "unknown")
    assert [f["severity"] for f in result["findings"] if f["code"] == "LM203"] == ["warning"]
    assert eff["model.tensor_model_parallel_size"] == (1, "user")


def test_an_unquoted_array_element_with_blanks_splits_as_bash_splits_it(run_cli):
    # --step-batch-size-schedule "0:16 2.4B:320 ..." inside an array passed as ${ARR[@]}, unquoted
    code, out, err = run_cli("check", str(EXAMPLES / "gpt3" / "train_gpt3_175b_distributed.sh"))
    assert code == 2
    assert "unrecognized arguments: 2.4B:320 4.8B:624 7.2B:928 9.6B:1232 12B:1536" in out + err


@pytest.mark.parametrize("name", ["run_mock_train.sh"])
def test_mimo_scripts_are_read(run_cli, name):
    code, _out, err = run_cli("check", str(EXAMPLES / "mimo" / "scripts" / name))
    assert code in (0, 1), err
