"""A size past what the estimate computes with (inputs.MAX_SIZE) is one line naming the key, exit 2, in
estimate and tune, and "not available" in diff — never Python's OverflowError as an internal error."""

from __future__ import annotations

import pytest

HUGE = """model:
  _target_: megatron.bridge.models.gpt_provider.GPTModelProvider
  tensor_model_parallel_size: 2
  num_layers: 100000000000000000000
  hidden_size: 4096
  num_attention_heads: 8
  seq_length: 4096
train:
  global_batch_size: 1024
  micro_batch_size: 1
"""
WHY = "model.num_layers is 100000000000000000000: past the largest size the estimate computes with (1,099,511,627,776)"


@pytest.mark.parametrize("command", ["estimate", "tune"])
def test_a_huge_size_is_one_line_not_an_internal_error(run_cli, tmp_path, command):
    path = tmp_path / "huge.yaml"
    path.write_text(HUGE)
    code, out, err = run_cli(command, str(path), "--world-size", "8", "--gpu", "h100")
    assert code == 2 and "internal error" not in err and "Traceback" not in err
    assert err.strip() == f"{path}: cannot estimate: {WHY}; no model Megatron-Core builds has it"


def test_diff_says_the_estimate_is_not_available(run_cli, tmp_path):
    old, new = tmp_path / "old.yaml", tmp_path / "new.yaml"
    old.write_text(HUGE)
    new.write_text(HUGE.replace("tensor_model_parallel_size: 2", "tensor_model_parallel_size: 4"))
    code, out, err = run_cli("diff", str(old), str(new), "--world-size", "8", "--gpu", "h100")
    assert "internal error" not in err and WHY in out, out + err
