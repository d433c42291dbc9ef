"""Bridge's GPTModelConfig form (``model: {_target_: ...GPTModelConfig, transformer: {...}}``, training/config.py:
975-981; the wrapper proxies every TransformerConfig attribute to ``transformer``, models/gpt.py:183-207) reads
as the provider form with the same settings: every command gives the same answers, and what a fix or an
annotation writes lands under ``model.transformer``."""

from __future__ import annotations

import json

SHAPE = {"num_layers": 32, "hidden_size": 4096, "num_attention_heads": 32, "ffn_hidden_size": 14336,
         "num_query_groups": 8}
PARALLEL = {"tensor_model_parallel_size": 4, "pipeline_model_parallel_size": 2,
            "virtual_pipeline_model_parallel_size": 4, "sequence_parallel": False}
REST = """comm_overlap:
  _target_: megatron.bridge.training.comm_overlap.CommOverlapConfig
  tp_comm_overlap: true
ddp:
  use_distributed_optimizer: true
train:
  global_batch_size: 256
  micro_batch_size: 1
mixed_precision: bf16_mixed
"""


def _yaml(mapping: dict, indent: str) -> str:
    return "".join(f"{indent}{k}: {str(v).lower() if isinstance(v, bool) else v}\n" for k, v in mapping.items())


def _wrapped() -> str:
    return ("model:\n  _target_: megatron.training.models.gpt.GPTModelConfig\n  vocab_size: 128256\n  seq_length: 8192\n"
            "  transformer:\n    _target_: megatron.core.transformer.transformer_config.TransformerConfig\n"
            + _yaml(SHAPE, "    ") + _yaml(PARALLEL, "    ") + REST)


def _provider() -> str:
    return ("model:\n  _target_: megatron.bridge.models.gpt_provider.GPTModelProvider\n  vocab_size: 128256\n  seq_length: 8192\n"
            "  gradient_accumulation_fusion: false\n" + _yaml(SHAPE, "  ") + _yaml(PARALLEL, "  ") + REST)


def _files(tmp_path):
    wrapped, provider = tmp_path / "wrapped.yaml", tmp_path / "provider.yaml"
    wrapped.write_text(_wrapped(), encoding="utf-8")
    provider.write_text(_provider(), encoding="utf-8")
    return wrapped, provider


TARGET = ("--world-size", "32", "--gpu", "h100", "--te-version", "2.12")


def _check(run_cli, path):
    code, out, err = run_cli("check", path, *TARGET, "--show-effective", "--format", "json")
    assert code in (0, 1) and "Traceback" not in err, err
    return json.loads(out)["results"][0]


def test_check_reads_the_transformer_settings(run_cli, tmp_path):
    wrapped, provider = _files(tmp_path)
    w, p = _check(run_cli, wrapped), _check(run_cli, provider)
    eff = w["effective"]
    assert eff["model.tensor_model_parallel_size"] == {**eff["model.tensor_model_parallel_size"], "value": 4, "source": "user"}
    assert eff["model.virtual_pipeline_model_parallel_size"]["value"] == 4
    assert eff["model.overlap_p2p_comm"]["value"] is True  # VPP > 1: Bridge picks p2p overlap
    assert eff["model.tp_comm_overlap"]["source"] == "forced-off"  # sequence_parallel false under transformer
    assert w["target"]["data_parallel_size"] == 4
    assert {k: (v["value"], v["source"]) for k, v in eff.items()} == {k: (v["value"], v["source"]) for k, v in p["effective"].items()}
    codes = lambda r: sorted((f["code"], f["severity"], f["line"] is not None) for f in r["findings"])  # noqa: E731
    assert codes(w) == codes(p) and "TP102" in [c for c, *_ in codes(w)]
    tp102 = next(f for f in w["findings"] if f["code"] == "TP102")
    assert _wrapped().splitlines()[tp102["line"] - 1].strip() == "sequence_parallel: false"  # the line under transformer


def test_fix_writes_under_transformer(run_cli, tmp_path):
    wrapped, _ = _files(tmp_path)
    code, out, err = run_cli("fix", wrapped, *TARGET, "--write")
    assert "Traceback" not in err
    text = wrapped.read_text(encoding="utf-8")
    assert "    sequence_parallel: true" in text and "\n  sequence_parallel:" not in text
    after = _check(run_cli, wrapped)
    assert after["effective"]["model.tp_comm_overlap"]["value"] is True
    assert "TP102" not in [f["code"] for f in after["findings"]]


def test_annotate_comments_the_transformer_lines(run_cli, tmp_path):
    wrapped, _ = _files(tmp_path)
    code, out, err = run_cli("check", wrapped, *TARGET, "--annotate")
    assert "Traceback" not in err
    lines = out.splitlines()
    tp = next(line for line in lines if "tensor_model_parallel_size" in line)
    assert tp.startswith("    tensor_model_parallel_size: 4") and "effective 4 (user" in tp
    assert not any(line.startswith("  tensor_model_parallel_size") for line in lines)


def test_env_diff_estimate_tune_agree_with_the_provider_form(run_cli, tmp_path):
    wrapped, provider = _files(tmp_path)
    env_w, env_p = run_cli("env", wrapped, *TARGET), run_cli("env", provider, *TARGET)
    assert env_w[0] == env_p[0] and env_w[1].replace("wrapped", "X") == env_p[1].replace("provider", "X")
    code, out, err = run_cli("diff", wrapped, provider, *TARGET, "--format", "json")
    assert "Traceback" not in err and code == 0, (out, err)
    est = [json.loads(run_cli("estimate", f, *TARGET, "--format", "json")[1])["results"][0] for f in (wrapped, provider)]
    assert est[0]["error"] is None and est[0]["estimate"] == est[1]["estimate"]
    tuned = [json.loads(run_cli("tune", f, *TARGET, "--format", "json", "--top", "2")[1]) for f in (wrapped, provider)]
    # the same candidates; each override spelled as the file holds the key (model.transformer.X)
    assert "model.transformer.sequence_parallel=true" in json.dumps(tuned[0])
    normal = json.dumps(tuned[0]).replace("wrapped", "X").replace("model.transformer.", "model.")
    assert normal == json.dumps(tuned[1]).replace("provider", "X")
