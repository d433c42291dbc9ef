"""``--base FILE`` takes a Megatron-Bridge config: a file another form reads (NeMo-RL's config, Megatron-LM's
functional-test YAML, a launch script, a Python run) or a YAML with no ``model`` section is refused with one
line naming the file (exit 2) by every command that takes ``--base``, never read as Bridge's ConfigContainer
with class defaults printed as that file's settings. NeMo-RL's and Megatron-LM's own files are the vendored
ones under tests/data/upstream (SOURCES.json: path and commit)."""

from __future__ import annotations

import pytest

from conftest import ROOT

UPSTREAM = ROOT / "tests" / "data" / "upstream"
NEMO_RL = UPSTREAM / "NVIDIA-NeMo+RL" / "examples" / "configs" / "grpo_math_1B.yaml"
MLM_TEST_YAML = ROOT / "examples" / "megatron-lm" / "model_config.yaml"  # a functional-test YAML (MODEL_ARGS)
LAUNCH = UPSTREAM / "NVIDIA+Megatron-LM" / "examples" / "gpt3" / "train_gpt3_175b_distributed.sh"
DUMP = ROOT / "examples" / "bridge" / "llama3_70b_pretrain_32gpu_h100_bf16_config.yaml"

COMMANDS = [
    ["check"],
    ["check", "--format", "json"],
    ["estimate", "--world-size", "64"],
    ["diff", "--world-size", "64", "--vs-world-size", "128"],
    ["env"],
]


def _bases(tmp_path) -> dict:
    unknown = tmp_path / "service.yaml"
    unknown.write_text("server:\n  port: 8080\n  workers: 4\n")
    override = tmp_path / "override.yaml"
    override.write_text("comm_overlap:\n  tp_comm_overlap: true\n")
    script = tmp_path / "train.py"
    script.write_text("from megatron.bridge.recipes.llama import llama3_8b_pretrain_config\ncfg = llama3_8b_pretrain_config()\n")
    return {"nemo-rl": (NEMO_RL, "NeMo-RL config"), "megatron-lm test yaml": (MLM_TEST_YAML, "is a Megatron-LM functional-test YAML"),
            "launch": (LAUNCH, "is a Megatron-LM launch"), "python": (script, "is a Python file"),
            "unknown yaml": (unknown, "no model section (top-level keys: server)"),
            "override file": (override, "no model section (top-level keys: comm_overlap)")}


@pytest.mark.parametrize("command", COMMANDS, ids=lambda c: " ".join(c))
def test_base_that_is_no_bridge_config_is_refused(run_cli, tmp_path, command):
    for kind, (base, says) in _bases(tmp_path).items():
        code, out, err = run_cli(*command, "--base", str(base))
        if "json" in command:  # the error is the result's, in the document
            import json

            [result] = json.loads(out)["results"]
            assert not result.get("effective") and result["error"]["key"] == "--base", (kind, result)
            out, err = "", f"{base}: --base: {result['error']['message']}\n"
        lines = err.strip().splitlines()
        assert code == 2 and len(lines) == 1, (kind, command, out, err)
        assert lines[0].startswith(f"{base}: --base: ") and says in lines[0], (kind, lines[0])
        assert "Traceback" not in err
        assert "class default" not in out and "effective" not in out, (kind, out)  # nothing printed as its settings


def test_base_dump_is_still_read(run_cli):
    code, out, err = run_cli("check", "--base", str(DUMP), "--world-size", "64", "--format", "json")
    assert code in (0, 1) and "--base" not in err, err
    import json

    [result] = json.loads(out)["results"]
    assert result["error"] is None
    assert result["effective"]["model.tensor_model_parallel_size"]["value"] == 4
