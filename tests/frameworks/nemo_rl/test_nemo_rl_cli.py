"""NeMo-RL configs through the CLI, on NeMo-RL's own files: tests/data/upstream/NVIDIA-NeMo+RL holds files of
NVIDIA-NeMo/RL at 7ea279abfbeb698b092856d0dab61e7cf39bc909 (Apache-2.0) unchanged at their upstream paths, each
listed in tests/data/upstream/SOURCES.json, so their `defaults:` chains resolve as upstream: the GRPO / SFT /
DPO / distillation bases, Megatron recipes (colocated and non-colocated GRPO, CP with packing, fused linear
logprobs, a five-file chain through examples/modelopt/), a DTensor recipe, two evaluation configs, and
nemo_rl/utils/config.py, the loader frameworks/nemo_rl/loader.py mirrors (never imported or run)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[3]
DATA = ROOT / "tests" / "data" / "upstream" / "NVIDIA-NeMo+RL"
CONFIGS = DATA / "examples" / "configs"


def _json(run_cli, *args):
    code, out, err = run_cli("check", *map(str, args), "--format", "json")
    return code, json.loads(out), err


def _eff(result: dict, key: str) -> tuple:
    v = result["effective"][key]
    return v["value"], v["source"]


def test_grpo_math_1b_megatron_values_nemo_rl_uses(run_cli):
    """grpo_math_1B_megatron.yaml: what _create_megatron_config passes, not Bridge's class defaults."""
    path = CONFIGS / "grpo_math_1B_megatron.yaml"
    code, doc, _ = _json(run_cli, path, "--show-effective")
    assert code == 0
    r = doc["results"][0]
    assert r["error"] is None and r["findings"] == []
    assert _eff(r, "ddp.use_distributed_optimizer") == (True, "user")
    assert _eff(r, "ddp.overlap_grad_reduce") == (True, "user")
    assert _eff(r, "ddp.overlap_param_gather") == (True, "user")
    assert _eff(r, "optimizer.overlap_param_gather") == (True, "user")
    assert _eff(r, "ddp.average_in_collective") == (False, "default")
    assert _eff(r, "model.tp_comm_overlap") == (False, "default")
    assert _eff(r, "model.tensor_model_parallel_size") == (1, "user")
    # the key's own line in the file: overlap_grad_reduce is line 186 of the upstream file
    assert f"{path}:186" in r["effective"]["ddp.overlap_grad_reduce"]["reason"]
    # cluster: 1 GPU x 1 node, colocated generation: DP 1, Megatron-Core's bucket floor
    assert r["target"]["world_size"] == 1 and r["target"]["data_parallel_size"] == 1
    assert _eff(r, "ddp.bucket_size") == (40_000_000, "default")
    assert sum("CommOverlapConfig" in n for n in r["notes"]) == 1


def test_defaults_chain_keys_name_the_file_that_wrote_them(run_cli):
    """A Megatron recipe over the DTensor base grpo_math_1B.yaml: optimizer_cpu_offload is written only there."""
    path = CONFIGS / "recipes" / "llm" / "grpo-llama3.2-1b-instruct-1n8g-megatron.yaml"
    code, doc, _ = _json(run_cli, path)
    r = doc["results"][0]
    assert code == 0, r
    reason = r["effective"]["optimizer.optimizer_cpu_offload"]["reason"]
    assert "examples/configs/grpo_math_1B.yaml:" in reason
    assert r["target"]["world_size"] == 8
    # the recipe turns Megatron on (its line 14); the sizes come from the base's megatron_cfg section
    assert "examples/configs/grpo_math_1B.yaml:" in r["effective"]["model.tensor_model_parallel_size"]["reason"]
    assert r["effective"]["model.tensor_model_parallel_size"]["value"] == 1


def test_dotlist_overrides_apply_as_the_launch_passes_them(run_cli):
    path = CONFIGS / "grpo_math_1B_megatron.yaml"
    code, doc, _ = _json(run_cli, path, "policy.megatron_cfg.distributed_data_parallel_config.overlap_grad_reduce=false",
                         "cluster.gpus_per_node=8", "policy.megatron_cfg.tensor_model_parallel_size=2")
    r = doc["results"][0]
    assert code == 0, r
    assert _eff(r, "ddp.overlap_grad_reduce") == (False, "user")
    assert "command line" in r["effective"]["ddp.overlap_grad_reduce"]["reason"]
    assert _eff(r, "ddp.bucket_size") == (None, "default")
    assert r["target"]["data_parallel_size"] == 4


def test_a_dotlist_word_for_a_key_the_config_lacks_is_an_input_error(run_cli):
    code, out, err = run_cli("check", str(CONFIGS / "grpo_math_1B_megatron.yaml"), "policy.megatron_cfg.no_such_key=1")
    assert code == 2
    assert "no_such_key" in err and "Traceback" not in err


def test_lowering_tp_under_sequence_parallel_turns_it_off(run_cli):
    """The recipe sets TP 1 (its line 13) under a base, four files up the chain, with sequence_parallel: true:
    Bridge's model finalize turns sequence parallelism off (no launch error, no finding)."""
    path = CONFIGS / "recipes" / "llm" / "distillation-nano3-30ba3b-4n4g-megatron-qa-nvfp4-modelopt-spec.yaml"
    code, doc, _ = _json(run_cli, path)
    r = doc["results"][0]
    assert code == 0 and r["findings"] == []
    assert _eff(r, "model.sequence_parallel") == (False, "forced-off")
    assert "examples/modelopt/qa_distillation_nano3_megatron.yaml:63" in r["effective"]["model.sequence_parallel"]["reason"]
    assert f"{path}:13" in r["effective"]["model.tensor_model_parallel_size"]["reason"]


def test_dtensor_config_is_skipped_with_the_deciding_line(run_cli):
    code, out, err = run_cli("check", str(CONFIGS / "grpo_math_1B.yaml"))
    assert code == 0
    assert "DTensor" in err and "grpo_math_1B.yaml:143" in err


def test_missing_base_file_names_the_file_and_line(run_cli, tmp_path):
    cfg = tmp_path / "child.yaml"
    cfg.write_text("# a recipe\ndefaults: ../nowhere/base.yaml\npolicy:\n  megatron_cfg:\n    enabled: true\n")
    code, out, err = run_cli("check", str(cfg))
    assert code == 2
    assert f"{cfg}:2" in err and "nowhere/base.yaml" in err and "Traceback" not in err


def test_override_marker_replaces_the_base_section(run_cli, tmp_path):
    base = tmp_path / "base.yaml"
    base.write_text("grpo: {}\npolicy:\n  megatron_cfg:\n    enabled: true\n    sequence_parallel: true\n"
                    "    tensor_model_parallel_size: 2\ncluster:\n  gpus_per_node: 8\n  num_nodes: 1\n")
    child = tmp_path / "child.yaml"
    child.write_text("defaults: base.yaml\ncluster:\n  _override_: true\n  gpus_per_node: 4\n")
    code, doc, _ = _json(run_cli, child)
    r = doc["results"][0]
    assert code == 0, r
    # num_nodes came only from the base's cluster, which _override_ removed: the world size is unknown
    assert r["target"]["world_size"] is None


def test_base_flag_with_a_nemo_rl_file_is_refused(run_cli):
    code, out, err = run_cli("check", "--base", str(CONFIGS / "grpo_math_1B_megatron.yaml"))
    assert code == 2
    assert "NeMo-RL config" in err and "Traceback" not in err


def test_folder_run_checks_or_skips_every_file(run_cli):
    code, doc, err = _json(run_cli, DATA / "examples")
    assert code != 2, err
    checked = {Path(r["file"]).name for r in doc["results"]}
    skipped = {Path(s["file"]).name: s["reason"] for s in doc.get("skipped", [])}
    every = {p.name for p in (DATA / "examples").rglob("*.yaml")}
    assert checked | set(skipped) == every
    assert "grpo_math_1B_megatron.yaml" in checked and "grpo_math_1B.yaml" in skipped
    assert all(reason for reason in skipped.values())
    assert all(r["error"] is None for r in doc["results"])
    assert [f["code"] for r in doc["results"] for f in r["findings"]] == []


def test_through_a_real_subprocess():
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    proc = subprocess.run([sys.executable, "-m", "overlap_cli", "check", str(CONFIGS / "grpo_math_1B_megatron.yaml"),
                           "--format", "json"], capture_output=True, text=True, env=env, cwd=ROOT, timeout=120)
    assert proc.returncode == 0, proc.stderr
    r = json.loads(proc.stdout)["results"][0]
    assert r["effective"]["ddp.overlap_param_gather"]["value"] is True


def test_non_colocated_generation_leaves_the_policy_the_other_nodes(run_cli):
    """2 nodes of 8, generation on 1 of them (grpo.py:895-911): the policy has 8 GPUs; --world-size wins."""
    path = CONFIGS / "recipes" / "llm" / "grpo-llama3.2-1b-instruct-2n8g-megatron_generation-noncolocated.yaml"
    code, doc, _ = _json(run_cli, path)
    r = doc["results"][0]
    assert code == 0, r
    assert r["target"]["world_size"] == 8 and r["target"]["data_parallel_size"] == 8
    assert "non-colocated generation" in r["effective"]["target.data_parallel_size"]["reason"]
    code, doc, _ = _json(run_cli, path, "--world-size", "4")
    assert doc["results"][0]["target"]["data_parallel_size"] == 4


def test_a_reward_model_environment_leaves_the_world_size_to_the_flag(run_cli, tmp_path):
    cfg = tmp_path / "rm.yaml"
    cfg.write_text("grpo: {}\ndata:\n  default:\n    env_name: reward_model\npolicy:\n  generation:\n    colocated:\n"
                   "      enabled: true\n  megatron_cfg:\n    enabled: true\n    tensor_model_parallel_size: 3\n"
                   "    pipeline_model_parallel_size: 1\n    context_parallel_size: 1\n"
                   "cluster:\n  gpus_per_node: 8\n  num_nodes: 1\n")
    code, doc, _ = _json(run_cli, cfg)
    r = doc["results"][0]
    assert code == 0 and r["target"]["world_size"] is None
    assert any(n.startswith("world size not known") and "grpo.py" in n for n in r["notes"])
    code, doc, _ = _json(run_cli, cfg, "--world-size", "8")
    assert code == 1 and [f["code"] for f in doc["results"][0]["findings"]] == ["RL002"]


def test_commands_that_model_bridge_or_lm_launches_refuse_a_nemo_rl_config(run_cli):
    path = str(CONFIGS / "grpo_math_1B_megatron.yaml")
    code, out, err = run_cli("env", path)
    assert code == 2 and "NeMo-RL" in err and "Traceback" not in err
    code, out, err = run_cli("estimate", path)
    assert code == 2 and "NeMo-RL config" in err and "Traceback" not in err


def _policy(tp: int, extra: str = "") -> str:
    return ("sft: {}\npolicy:\n  megatron_cfg:\n    enabled: true\n"
            f"    tensor_model_parallel_size: {tp}\n{extra}cluster:\n  gpus_per_node: 8\n  num_nodes: 1\n")


def test_a_list_of_defaults_merges_in_order_the_last_winning(run_cli, tmp_path):
    """config.py:79-95: each parent merged in list order, the file itself last."""
    (tmp_path / "one.yaml").write_text(_policy(2))
    (tmp_path / "sub").mkdir()
    (tmp_path / "sub" / "two.yaml").write_text("policy:\n  megatron_cfg:\n    tensor_model_parallel_size: 4\n")
    child = tmp_path / "child.yaml"
    child.write_text("defaults:\n  - one.yaml\n  - sub/two.yaml\ncluster:\n  num_nodes: 2\n")
    code, doc, _ = _json(run_cli, child)
    r = doc["results"][0]
    assert code == 0, r
    assert _eff(r, "model.tensor_model_parallel_size") == (4, "user")
    assert f"{tmp_path / 'sub' / 'two.yaml'}:3" in r["effective"]["model.tensor_model_parallel_size"]["reason"]
    assert r["target"]["world_size"] == 16  # gpus_per_node from one.yaml, num_nodes from the child


def test_a_defaults_cycle_is_an_input_error(run_cli, tmp_path):
    (tmp_path / "a.yaml").write_text("defaults: b.yaml\n" + _policy(1))
    (tmp_path / "b.yaml").write_text("defaults: a.yaml\npolicy: {}\n")
    code, out, err = run_cli("check", str(tmp_path / "a.yaml"))
    assert code == 2 and "comes back" in err and "Traceback" not in err


def test_interpolations_resolve_as_omegaconf_does(run_cli, tmp_path):
    cfg = tmp_path / "x.yaml"
    cfg.write_text(_policy(2, "    context_parallel_size: ${mul:${policy.megatron_cfg.tensor_model_parallel_size}, 2}\n"
                              "    pipeline_model_parallel_size: ${.tensor_model_parallel_size}\n"))
    code, doc, _ = _json(run_cli, cfg)
    r = doc["results"][0]
    assert _eff(r, "model.context_parallel_size") == (4, "user")
    assert _eff(r, "model.pipeline_model_parallel_size") == (2, "user")
    # 8 GPUs for TP 2 * PP 2 * CP 4 = 16 (lm_policy.py:225), and CP without sequence packing (setup.py:880)
    assert sorted(f["code"] for f in r["findings"]) == ["RL002", "RL801"]


@pytest.mark.parametrize("release,has_num_buckets", [("0.4.2", False), ("0.5.1", True), ("0.6.2", True)])
def test_a_field_the_releases_core_lacks_is_no_effective_value(run_cli, release, has_num_buckets):
    # NeMo-RL never passes ddp.num_buckets: under a release whose megatron-core has the field it is the class
    # default; megatron-core 0.17.1 (Bridge 0.4.2) has no such field, so there is no value to report.
    path = CONFIGS / "grpo_math_1B_megatron.yaml"
    code, doc, err = _json(run_cli, path, "--show-effective", "--bridge-version", release)
    r = doc["results"][0]
    assert r["error"] is None, err
    assert ("ddp.num_buckets" in r["effective"]) is has_num_buckets
    if has_num_buckets:
        assert _eff(r, "ddp.num_buckets") == (None, "default")
