"""`overlap env`, the ENV5xx rules' fixes, --env-from-shell, and the CUDA_DEVICE_MAX_CONNECTIONS decision
table, all through real config files and the CLI."""

from __future__ import annotations

import json
import shutil
import textwrap

import pytest

TUNED = "examples/llama3_70b_tuned.yaml"  # TP4 + SP + TP overlap, PP4/VPP2, env_vars with 1 / 16 / 16 / 1
NO_ENV = "examples/tp_overlap_without_sp.yaml"  # TP2, TP overlap requested, no env_vars


def env_json(run_cli, *args):
    code, out, err = run_cli("env", *args, "--format", "json")
    assert code == 0, err
    return json.loads(out)


def check_json(run_cli, *args):
    code, out, err = run_cli("check", *args, "--format", "json")
    return code, json.loads(out)["results"][0]


def write(tmp_path, text: str, name: str = "c.yaml") -> str:
    p = tmp_path / name
    p.write_text(textwrap.dedent(text), encoding="utf-8")
    return str(p)


# -- overlap env -------------------------------------------------------------------------------


def test_env_shell_hopper_prints_1_with_reason(run_cli, root):
    code, out, err = run_cli("env", root / TUNED, "--gpu", "h100", "--format", "shell")
    assert code == 0, err
    line = next(l for l in out.splitlines() if l.startswith("export CUDA_DEVICE_MAX_CONNECTIONS="))
    value, _, reason = line.partition("  # ")
    assert value == "export CUDA_DEVICE_MAX_CONNECTIONS=1"
    assert "Hopper" in reason and "TP overlap needs 1" in reason
    assert "# target: gpu h100 (flag)" in out


def test_env_b200_pipeline_prints_32_and_overrides_env_vars(run_cli, root):
    code, out, _ = run_cli("env", root / TUNED, "--gpu", "b200", "--world-size", "64")
    line = next(l for l in out.splitlines() if l.startswith("export CUDA_DEVICE_MAX_CONNECTIONS="))
    assert line.startswith("export CUDA_DEVICE_MAX_CONNECTIONS=32  # ")
    assert "env_vars has 1" in line and "disagree" in line  # ENV-001: other implementations differ on SM100+


@pytest.mark.parametrize("world, value", [("16", "32"), ("2", "8")])
def test_env_b200_without_pipeline_depends_on_dp(run_cli, root, world, value):
    doc = env_json(run_cli, root / NO_ENV, "--gpu", "b200", "--world-size", world)
    assert doc["env"]["CUDA_DEVICE_MAX_CONNECTIONS"]["value"] == value
    assert doc["env"]["CUDA_DEVICE_MAX_CONNECTIONS"]["source"] == "recommended"
    assert doc["target"]["data_parallel_size"] == int(world) // 2


def test_env_unknown_gpu_says_so(run_cli, root):
    code, out, _ = run_cli("env", root / NO_ENV)
    assert code == 0
    assert "export CUDA_DEVICE_MAX_CONNECTIONS" not in out
    assert "# CUDA_DEVICE_MAX_CONNECTIONS: depends on GPU" in out
    doc = env_json(run_cli, root / NO_ENV)
    assert doc["env"]["CUDA_DEVICE_MAX_CONNECTIONS"]["value"] is None


def test_env_dotenv_and_json_shapes(run_cli, root):
    code, out, _ = run_cli("env", root / TUNED, "--gpu", "h100", "--format", "dotenv")
    assert code == 0
    body = [l for l in out.splitlines() if not l.startswith("#")]
    assert "CUDA_DEVICE_MAX_CONNECTIONS=1" in body and "NVTE_FWD_LAYERNORM_SM_MARGIN=16" in body
    assert all("=" in l and not l.startswith("export") for l in body)
    doc = env_json(run_cli, root / TUNED, "--gpu", "h100")
    assert set(doc) >= {"file", "target", "env"}
    assert doc["env"]["CUDA_DEVICE_MAX_CONNECTIONS"]["value"] == "1"
    assert doc["env"]["CUDA_DEVICE_MAX_CONNECTIONS"]["source"] == "env_vars"
    assert doc["env"]["NCCL_P2P_NET_CHUNKSIZE"] == {
        "value": "2097152",
        "source": "recommended",
        "reason": doc["env"]["NCCL_P2P_NET_CHUNKSIZE"]["reason"],
    }
    assert doc["target"]["gpu"] == "h100" and doc["target"]["sources"]["gpu"] == "flag"


def test_env_lists_every_env_vars_entry(run_cli, root):
    doc = env_json(run_cli, root / "examples/bridge/llama3_70b_pretrain_32gpu_h100_bf16_config.yaml", "--gpu", "h100")
    assert doc["env"]["PYTORCH_CUDA_ALLOC_CONF"] == {
        "value": "expandable_segments:True", "source": "env_vars", "reason": "from env_vars"
    }
    assert doc["env"]["CUDA_DEVICE_MAX_CONNECTIONS"]["value"] == "1"  # the recipe lacks it (ENV-005)


def test_env_input_errors_exit_2(run_cli, root, tmp_path):
    code, out, err = run_cli("env", tmp_path / "missing.yaml")
    assert code == 2 and out == "" and len(err.strip().splitlines()) == 1
    code, _, err = run_cli("env", root / TUNED, "--gpu", "v100")
    assert code == 2 and "unknown GPU 'v100'" in err
    code, _, err = run_cli("env", root / TUNED, root / NO_ENV)
    assert code == 2 and "exactly one" in err


def test_env_shell_quotes_values(run_cli, tmp_path):
    cfg = write(tmp_path, """\
        env_vars:
          NCCL_DEBUG_SUBSYS: "INIT, COLL"
    """)
    code, out, _ = run_cli("env", cfg, "--format", "shell")
    assert "export NCCL_DEBUG_SUBSYS='INIT, COLL'" in out


# -- check: effective env entries and rule fixes --------------------------------------------------


def test_check_effective_env_entries(run_cli, root):
    code, r = check_json(run_cli, root / NO_ENV, "--gpu", "h100")
    # unset at launch: the value the target wants is in the reason, not in the value's place
    got = r["effective"]["env.CUDA_DEVICE_MAX_CONNECTIONS"]
    assert (got["value"], got["source"]) == (None, "default")
    assert "to export: 1" in got["reason"]
    env501 = next(f for f in r["findings"] if f["code"] == "ENV501")
    assert env501["severity"] == "warning"  # TP overlap requested on Hopper
    # sequence_parallel is off, so TP overlap is not effective: adding 1 would make nothing take effect
    assert env501["fix"]["applicability"] == "unsafe"
    (edit,) = env501["fix"]["edits"]
    assert edit["op"] == "set" and edit["key"] == "env_vars.CUDA_DEVICE_MAX_CONNECTIONS" and edit["value"] == 1
    assert edit["comment"]  # the fixer writes it next to the value


def test_fix_write_adds_env_vars_block(run_cli, root, tmp_path):
    cfg = tmp_path / "tp.yaml"
    shutil.copy(root / NO_ENV, cfg)
    # The example writes sequence_parallel: false itself, so TP102's fix needs --unsafe-fixes.
    code, out, err = run_cli("fix", cfg, "--gpu", "h100", "--write", "--unsafe-fixes")
    text = cfg.read_text()
    assert "env_vars:" in text
    assert "CUDA_DEVICE_MAX_CONNECTIONS: 1  # overlap: ENV501" in text
    # ENV501 in round 2, once TP102's fix made TP overlap effective; the margins and NCCL priority are
    # info findings, below the threshold fix works at
    assert "NVTE_FWD_LAYERNORM_SM_MARGIN" not in text and "TORCH_NCCL_HIGH_PRIORITY" not in text
    code, r = check_json(run_cli, cfg, "--gpu", "h100")
    codes = {f["code"] for f in r["findings"]}
    assert not codes & {"ENV501", "ENV502", "TP102"}
    assert r["effective"]["env.CUDA_DEVICE_MAX_CONNECTIONS"]["source"] == "env_vars"


def test_fsdp_with_one_fix_sets_a_legal_value(run_cli, root):
    code, r = check_json(run_cli, root / "tests/cases/env503_fsdp.yaml", "--gpu", "h100", "--world-size", "16")
    f = next(f for f in r["findings"] if f["code"] == "ENV503")
    assert "FSDP requires CUDA_DEVICE_MAX_CONNECTIONS > 1 or unset." in f["message"]
    assert f["fix"]["edits"][0]["value"] == 8  # Hopper + TP>1 would be 1, which FSDP forbids


def test_annotate_keeps_env_in_env_vars(run_cli, root):
    code, out, _ = run_cli("check", root / TUNED, "--gpu", "h100", "--annotate")
    assert "\nenv:" not in out
    line = next(l for l in out.splitlines() if l.strip().startswith("CUDA_DEVICE_MAX_CONNECTIONS"))
    assert "overlap: effective 1 (env_vars" in line


# -- --env-from-shell ----------------------------------------------------------------------------


def test_shell_value_overrides_env_vars_and_warns(run_cli, root, monkeypatch):
    monkeypatch.setenv("CUDA_DEVICE_MAX_CONNECTIONS", "32")
    code, r = check_json(run_cli, root / TUNED, "--gpu", "h100", "--env-from-shell")
    eff = r["effective"]["env.CUDA_DEVICE_MAX_CONNECTIONS"]
    assert eff["value"] == "32" and eff["source"] == "shell" and "over env_vars 1" in eff["reason"]
    env510 = [f for f in r["findings"] if f["code"] == "ENV510"]
    assert [f["severity"] for f in env510] == ["warning"] and env510[0]["fix"] is None
    assert code == 1
    doc = env_json(run_cli, root / TUNED, "--gpu", "h100", "--env-from-shell")
    assert doc["env"]["CUDA_DEVICE_MAX_CONNECTIONS"]["source"] == "shell"
    # without the flag the shell is not consulted
    code, r = check_json(run_cli, root / TUNED, "--gpu", "h100")
    assert r["effective"]["env.CUDA_DEVICE_MAX_CONNECTIONS"]["source"] == "env_vars"
    assert "ENV510" not in {f["code"] for f in r["findings"]}


def test_shell_one_with_fsdp_is_an_error_without_fix(run_cli, root, monkeypatch, tmp_path):
    monkeypatch.setenv("CUDA_DEVICE_MAX_CONNECTIONS", "1")
    cfg = write(tmp_path, """\
        model: {tensor_model_parallel_size: 2, sequence_parallel: true}
        ddp: {use_megatron_fsdp: true}
    """)
    code, r = check_json(run_cli, cfg, "--gpu", "h100", "--env-from-shell")
    f = next(f for f in r["findings"] if f["code"] == "ENV503")
    assert "exported in the shell" in f["message"] and f["fix"] is None
    assert "ENV510" not in {x["code"] for x in r["findings"]}  # one finding for one problem


def test_env_from_shell_in_pyproject(run_cli, root, monkeypatch, tmp_path):
    monkeypatch.setenv("CUDA_DEVICE_MAX_CONNECTIONS", "8")
    (tmp_path / "pyproject.toml").write_text('[tool.overlap]\nenv_from_shell = true\ngpu = "h100"\n')
    cfg = tmp_path / "tuned.yaml"
    shutil.copy(root / TUNED, cfg)
    code, r = check_json(run_cli, cfg)
    assert r["target"]["env_from_shell"] is True and r["target"]["sources"]["env_from_shell"] == "pyproject"
    assert r["effective"]["env.CUDA_DEVICE_MAX_CONNECTIONS"]["source"] == "shell"


# -- the decision table, config by config ----------------------------------------------------------

MOE = "num_moe_experts: 8, expert_model_parallel_size: 2, "


@pytest.mark.parametrize(
    "model, extra, args, value, words",
    [
        ("tensor_model_parallel_size: 1", "", ["--gpu", "h100", "--world-size", "8"], "8", "default"),
        ("tensor_model_parallel_size: 4, sequence_parallel: true", "", ["--gpu", "a100"], "1", "Hopper or older"),
        ("context_parallel_size: 2", "", ["--gpu", "h200"], "1", "CP=2"),
        ("tensor_model_parallel_size: 4, sequence_parallel: true", "", ["--gpu", "gb200", "--world-size", "4"], "8", "disagree"),
        ("tensor_model_parallel_size: 4, sequence_parallel: true", "", ["--gpu", "gb300", "--world-size", "8"], "32", "DP > 1"),
        ("context_parallel_size: 2, pipeline_model_parallel_size: 2", "", ["--gpu", "b300"], "32", "PP=2"),
        (MOE + "moe_token_dispatcher_type: flex", "", ["--gpu", "h100"], "32", "deepep"),
        (MOE + "moe_token_dispatcher_type: flex, moe_flex_dispatcher_backend: hybridep, tensor_model_parallel_size: 2, sequence_parallel: true",
         "", ["--gpu", "h100"], "1", "Hopper or older"),
        ("tensor_model_parallel_size: 2, sequence_parallel: true", "ddp: {use_megatron_fsdp: true}", ["--gpu", "h100"], "8", "asserts"),
        ("tensor_model_parallel_size: 2, sequence_parallel: true", "", [], None, "depends on GPU"),
        ("tensor_model_parallel_size: 2, sequence_parallel: true", "", ["--gpu", "b200"], None, "depends on data-parallel size"),
    ],
)
def test_max_connections_table(run_cli, tmp_path, model, extra, args, value, words):
    cfg = write(tmp_path, f"model: {{{model}}}\n{extra}\n")
    doc = env_json(run_cli, cfg, *args)
    got = doc["env"]["CUDA_DEVICE_MAX_CONNECTIONS"]
    assert got["value"] == value, got
    assert words in got["reason"], got["reason"]


def test_moe_a2a_overlap_on_hopper_keeps_more_queues(run_cli, tmp_path):
    cfg = write(tmp_path, """\
        model: {tensor_model_parallel_size: 2, sequence_parallel: true, num_moe_experts: 8, expert_model_parallel_size: 2}
        comm_overlap: {tp_comm_overlap: false, overlap_moe_expert_parallel_comm: true}
    """)
    got = env_json(run_cli, cfg, "--gpu", "h100")["env"]["CUDA_DEVICE_MAX_CONNECTIONS"]
    assert got["value"] == "8" and "conflicting" in got["reason"]


def test_margins_20_with_deepep_and_absent_without_overlap(run_cli, tmp_path):
    deepep = write(tmp_path, f"""\
        model: {{{MOE}moe_token_dispatcher_type: flex}}
        ddp: {{use_distributed_optimizer: true}}
        comm_overlap: {{tp_comm_overlap: false}}
    """, "d.yaml")
    env = env_json(run_cli, deepep, "--gpu", "h100", "--world-size", "16")["env"]
    assert env["NVTE_FWD_LAYERNORM_SM_MARGIN"]["value"] == "20"
    plain = write(tmp_path, "model: {tensor_model_parallel_size: 1}\n", "p.yaml")
    env = env_json(run_cli, plain, "--gpu", "h100", "--world-size", "8")["env"]
    assert "NVTE_FWD_LAYERNORM_SM_MARGIN" not in env and "NCCL_P2P_NET_CHUNKSIZE" not in env
