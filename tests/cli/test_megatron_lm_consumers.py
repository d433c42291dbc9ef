"""The consumers of a check work on Megatron-LM launches as on Bridge configs: JSON, SARIF, --annotate,
`overlap env` and `overlap diff`, through the CLI on real launch scripts."""

from __future__ import annotations

import json

TP4 = """#!/bin/bash
torchrun --nproc_per_node 8 --nnodes 2 pretrain_gpt.py \\
    --tensor-model-parallel-size 4 \\
    --tp-comm-overlap \\
    --use-distributed-optimizer
"""


def _write(tmp_path, name: str, text: str):
    path = tmp_path / name
    path.write_text(text)
    return path


def test_json_effective_uses_megatron_core_names(run_cli, tmp_path):
    path = _write(tmp_path, "tp4.sh", TP4)
    code, out, _ = run_cli("check", path, "--gpu", "h100", "--format", "json")
    result = json.loads(out)["results"][0]
    assert code == 1 and result["target"]["world_size"] == 16 and result["target"]["data_parallel_size"] == 4
    assert result["target"]["sources"]["world_size"] == "launch"
    eff = result["effective"]
    assert eff["model.tp_comm_overlap"] == {"value": True, "source": "user", "reason": "--tp-comm-overlap on line 4"}
    assert eff["ddp.overlap_grad_reduce"]["value"] is False and eff["ddp.bucket_size"]["value"] is None
    assert eff["env.CUDA_DEVICE_MAX_CONNECTIONS"]["source"] == "default"
    lm101 = next(f for f in result["findings"] if f["code"] == "LM101")
    assert (lm101["key"], lm101["line"], lm101["column"]) == ("--tp-comm-overlap", 4, 5)
    assert lm101["fix"]["edits"] == [{"op": "add", "key": "--sequence-parallel", "value": True}]


def test_sarif_points_at_the_flag(run_cli, tmp_path):
    path = _write(tmp_path, "tp4.sh", TP4)
    _, out, _ = run_cli("check", path, "--gpu", "h100", "--format", "sarif")
    results = json.loads(out)["runs"][0]["results"]
    lm101 = next(r for r in results if r["ruleId"] == "LM101")
    loc = lm101["locations"][0]["physicalLocation"]
    assert loc["artifactLocation"]["uri"].endswith("tp4.sh") and loc["region"]["startLine"] == 4


def test_annotate_keeps_the_launch_and_appends_the_settings(run_cli, tmp_path):
    path = _write(tmp_path, "tp4.sh", TP4)
    code, out, _ = run_cli("check", path, "--gpu", "h100", "--annotate")
    assert out.startswith(TP4)
    tail = out[len(TP4):].splitlines()
    assert all(line.startswith("# overlap: ") for line in tail)
    assert any(line.startswith("# overlap: model.tp_comm_overlap = true (user: --tp-comm-overlap on line 4) [LM101]")
               for line in tail), tail


def test_env_says_what_validate_args_checks(run_cli, tmp_path):
    path = _write(tmp_path, "tp4.sh", TP4)
    code, out, _ = run_cli("env", path, "--gpu", "h100")
    assert code == 0 and "export CUDA_DEVICE_MAX_CONNECTIONS=1  # TP=4, CP=1 on h100: validate_args asserts it is 1" in out
    fsdp = _write(tmp_path, "fsdp.sh", "export CUDA_DEVICE_MAX_CONNECTIONS=1\nexport NCCL_ALGO=Ring\nX=1\n"
                  "torchrun --nproc_per_node 8 pretrain_gpt.py --use-megatron-fsdp --ckpt-format fsdp_dtensor\n")
    _, out, _ = run_cli("env", fsdp, "--gpu", "h100", "--format", "json")
    env = json.loads(out)["env"]
    assert env["CUDA_DEVICE_MAX_CONNECTIONS"]["value"] is None and "not 1" in env["CUDA_DEVICE_MAX_CONNECTIONS"]["reason"]
    assert env["NCCL_ALGO"]["value"] == "Ring" and "X" not in env  # a plain assignment is not exported


def test_diff_of_two_launches(run_cli, tmp_path):
    old = _write(tmp_path, "old.sh", TP4)
    new = _write(tmp_path, "new.sh", TP4.replace("--use-distributed-optimizer\n", "--use-distributed-optimizer \\\n    --overlap-grad-reduce\n"))
    code, out, _ = run_cli("diff", old, new, "--gpu", "h100", "--format", "json")
    doc = json.loads(out)
    keys = {e["key"]: e for e in doc["effective"]}
    assert code == 1 and keys["ddp.overlap_grad_reduce"]["new"]["value"] is True
    assert keys["ddp.bucket_size"]["new"] == {"value": 40000000, "source": "derived",
                                              "reason": "max(40,000,000, 1,000,000 · DP 4 · CP 1) parameters (megatron/training/training.py:1552)"}
    code, out, _ = run_cli("diff", old, old, "--gpu", "h100")
    assert code == 0, out


def test_suppressions_in_a_script(run_cli, tmp_path):
    """A comment line inside a continued command would end it in bash, so a script suppresses a finding on
    the comment line above its flag inside an array, or for the whole file."""
    path = _write(tmp_path, "sup.sh", "#!/bin/bash\n# overlap: ignore-file[LM303]\nARGS=(\n    # overlap: ignore[LM101]\n"
                  "    --tp-comm-overlap\n)\nexport CUDA_DEVICE_MAX_CONNECTIONS=1\n"
                  "torchrun --nproc_per_node 8 pretrain_gpt.py --tensor-model-parallel-size 2 \"${ARGS[@]}\"\n")
    code, out, _ = run_cli("check", path, "--gpu", "h100", "--format", "json")
    codes = [f["code"] for f in json.loads(out)["results"][0]["findings"]]
    assert "LM101" not in codes and "LM303" not in codes and code == 0, codes
