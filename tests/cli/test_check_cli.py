"""`overlap check` end to end: examples, Bridge's own dumps, bad input, overrides, JSON shape, annotate."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml
from conftest import ROOT as ROOT_DIR  # noqa: E402

ROOT = ROOT_DIR
EXAMPLES = ROOT / "examples"
BRIDGE = EXAMPLES / "bridge"

REQUIRED_EFFECTIVE = [
    "model.tensor_model_parallel_size", "model.pipeline_model_parallel_size",
    "model.virtual_pipeline_model_parallel_size", "model.context_parallel_size", "model.sequence_parallel",
    "model.tp_comm_overlap", "model.tp_comm_overlap_cfg", "model.tp_comm_bootstrap_backend",
    "model.overlap_p2p_comm", "model.batch_p2p_comm", "model.defer_embedding_wgrad_compute",
    "model.wgrad_deferral_limit", "model.overlap_moe_expert_parallel_comm", "model.delay_wgrad_compute",
    "ddp.use_distributed_optimizer", "ddp.overlap_grad_reduce", "ddp.overlap_param_gather",
    "ddp.align_param_gather", "ddp.bucket_size", "ddp.grad_reduce_in_fp32", "ddp.fp8_param_gather",
    "optimizer.overlap_param_gather", "optimizer.overlap_param_gather_with_optimizer_step",
]
SOURCES = {"user", "default", "bridge-auto", "forced-off", "mixed-precision", "unknown"}
ENV_SOURCES = {"recommended", "default", "env_vars", "shell", "unknown"}  # env.<NAME>: the launch environment (issue 5)


def check_json(run_cli, *args):
    code, out, err = run_cli("check", *args, "--format", "json")
    return code, json.loads(out), err


def codes_of(result):
    return [f["code"] for f in result["findings"]]


# -- examples ---------------------------------------------------------------------------------


def test_tuned_example_is_clean_and_fully_effective(run_cli):
    code, doc, _ = check_json(run_cli, EXAMPLES / "llama3_70b_tuned.yaml", "--world-size", "64")
    r = doc["results"][0]
    assert code == 0
    assert not [f for f in r["findings"] if f["severity"] != "info"]
    eff = r["effective"]
    assert r["target"]["data_parallel_size"] == 4
    assert eff["model.tp_comm_overlap"]["value"] is True
    assert eff["model.overlap_p2p_comm"] == {
        "value": True, "source": "bridge-auto", "reason": eff["model.overlap_p2p_comm"]["reason"]
    }
    assert eff["ddp.bucket_size"]["value"] == 128 * 1024 * 1024
    assert eff["ddp.align_param_gather"]["value"] is True


@pytest.mark.parametrize(
    "name, expected, exit_code",
    [
        ("tp_overlap_without_sp.yaml", {"TP102"}, 1),
        ("pp_without_vpp.yaml", {"PP201", "PP202"}, 1),
        ("dp_overlap_without_distopt.yaml", {"DP302", "DP303"}, 1),
        ("mixed_precision_overwrite.yaml", {"MP401"}, 1),
    ],
)
def test_broken_examples_report_their_codes(run_cli, name, expected, exit_code):
    code, doc, _ = check_json(run_cli, EXAMPLES / name, "--world-size", "64")
    assert expected <= set(codes_of(doc["results"][0]))
    assert code == exit_code


def test_every_example_states_what_it_shows():
    for path in sorted(EXAMPLES.glob("*.yaml")):
        first = path.read_text(encoding="utf-8").splitlines()[0]
        assert first.startswith("# "), f"{path.name} must open with a comment saying what it shows"


def test_invalid_example_exits_2_with_one_line(run_cli):
    code, out, err = run_cli("check", EXAMPLES / "invalid_parallel_size.yaml")
    assert code == 2
    lines = [l for l in err.splitlines() if l.strip()]
    assert len(lines) == 1
    assert "invalid_parallel_size.yaml:4:3" in lines[0]
    assert "model.tensor_model_parallel_size" in lines[0]
    assert "Traceback" not in out + err


# -- Bridge's own dumps are read unchanged -------------------------------------------------------


@pytest.mark.parametrize("path", sorted(BRIDGE.glob("*.yaml")), ids=lambda p: p.stem)
def test_bridge_dumps_are_read(run_cli, path):

    code, doc, _ = check_json(run_cli, path)
    r = doc["results"][0]
    assert r["error"] is None
    assert set(REQUIRED_EFFECTIVE) <= set(r["effective"])
    for key, v in r["effective"].items():
        assert v["source"] in (ENV_SOURCES if key.startswith("env.") else SOURCES), key
        assert isinstance(v["reason"], str) and v["reason"]


def test_llama_dump_with_its_world_size(run_cli):
    # llama3_70b_pretrain_32gpu: TP4 x PP4 x CP2 = 32, so DP = 1 and Bridge's DP path turns the ddp overlaps
    # off. The dump's overlap_grad_reduce: true is the recipe's value as Bridge serialised it, not the user's:
    # Bridge's own doing, as with --recipe, so no CFG005 (a value the user wrote that it overwrites).
    code, doc, _ = check_json(run_cli, BRIDGE / "llama3_70b_pretrain_32gpu_h100_bf16_config.yaml", "--world-size", "32")
    r = doc["results"][0]
    assert r["target"]["data_parallel_size"] == 1
    assert r["effective"]["ddp.overlap_grad_reduce"]["value"] is False
    assert r["effective"]["ddp.overlap_grad_reduce"]["source"] == "bridge-auto"
    assert r["effective"]["model.overlap_p2p_comm"]["value"] is True  # PP4, VPP5
    assert "CFG005" not in codes_of(r)
    _, recipe, _ = check_json(run_cli, "--recipe", "llama3_70b_pretrain_32gpu_h100_bf16_config", "--world-size", "32")
    assert "CFG005" not in codes_of(recipe["results"][0])
    assert recipe["results"][0]["effective"]["ddp.overlap_grad_reduce"]["source"] == "bridge-auto"


def test_nodes_times_gpus_per_node(run_cli):
    _, a, _ = check_json(run_cli, EXAMPLES / "llama3_70b_tuned.yaml", "--nodes", "8", "--gpus-per-node", "8")
    assert a["results"][0]["target"]["world_size"] == 64
    code, out, err = run_cli("check", EXAMPLES / "llama3_70b_tuned.yaml", "--nodes", "8")
    assert code == 2 and "--gpus-per-node" in err


# -- JSON shape --------------------------------------------------------------------------------


def test_json_shape(run_cli, tmp_path):
    bad = tmp_path / "bad.yaml"
    bad.write_text("model: [1, 2\n")
    code, doc, _ = check_json(run_cli, EXAMPLES / "tp_overlap_without_sp.yaml", bad, "--world-size", "16")
    assert doc["version"] == 1
    assert code == 2  # one file could not be checked; the other still was
    good, broken = doc["results"]
    assert good["error"] is None and good["target"]["world_size"] == 16
    assert good["target"]["data_parallel_size"] == 8 and good["target"]["transformer_engine"] is True
    f = good["findings"][0]
    assert set(f) >= {"code", "severity", "message", "key", "line", "column"}
    assert broken["error"]["message"].startswith("invalid YAML") and "effective" not in broken
    s = doc["summary"]
    assert s["files"] == 2 and s["warning"] >= 1 and {"error", "warning", "info"} <= set(s)


# -- bad input: one clear line, exit 2, never a traceback --------------------------------------

BAD_INPUTS = {
    "wrong_type.yaml": ("model:\n  tensor_model_parallel_size: four\n", "model.tensor_model_parallel_size", 2),
    "negative.yaml": ("model:\n  pipeline_model_parallel_size: -2\n", "model.pipeline_model_parallel_size", 2),
    "zero_vpp.yaml": ("model:\n  virtual_pipeline_model_parallel_size: 0\n", "model.virtual_pipeline_model_parallel_size", 2),
    "bool_for_int.yaml": ("model:\n  context_parallel_size: true\n", "model.context_parallel_size", 2),
    "string_bool.yaml": ("comm_overlap:\n  tp_comm_overlap: 'yes please'\n", "comm_overlap.tp_comm_overlap", 2),
    "invalid_yaml.yaml": ("model:\n  a: [1, 2\n", None, 3),
    "top_list.yaml": ("- a\n- b\n", None, 1),
    "section_scalar.yaml": ("comm_overlap: true\n", "comm_overlap", 1),
    "duplicate.yaml": ("model:\n  a: 1\n  a: 2\n", "model.a", 3),
    "interp.yaml": ("model:\n  tensor_model_parallel_size: ${model.missing}\n", "model.tensor_model_parallel_size", 2),
    "python_tag.yaml": ("model: !!python/object/apply:os.system ['true']\n", "model", 1),
}


@pytest.mark.parametrize("name", sorted(BAD_INPUTS))
def test_bad_input_one_line(run_cli, tmp_path, name):
    text, key, line = BAD_INPUTS[name]
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    code, out, err = run_cli("check", path)
    assert code == 2
    lines = [l for l in err.splitlines() if l.strip()]
    assert len(lines) == 1, err
    assert str(path) in lines[0]
    if key:
        assert key in lines[0]
    assert f":{line}:" in lines[0] or f":{line} " in lines[0] or lines[0].startswith(f"{path}:{line}")
    assert "Traceback" not in out + err


def test_missing_file_directory_and_binary(run_cli, tmp_path):
    (tmp_path / "bin.yaml").write_bytes(b"\x00\x01\x02model: 1")
    (tmp_path / "latin1.yaml").write_bytes("model:\n  name: caf\xe9\n".encode("latin-1"))
    empty_dir = tmp_path / "no_yaml_here"
    empty_dir.mkdir()
    for target, words in (
        (tmp_path / "nope.yaml", "not found"),
        (empty_dir, "directory"),
        (tmp_path / "bin.yaml", "binary"),
        (tmp_path / "latin1.yaml", "UTF-8"),
    ):
        code, out, err = run_cli("check", target)
        assert code == 2 and words in err and "Traceback" not in err


def test_other_files_still_checked_after_a_bad_one(run_cli, tmp_path):
    bad = tmp_path / "bad.yaml"
    bad.write_text("model: 3\n")
    code, doc, _ = check_json(run_cli, bad, EXAMPLES / "tp_overlap_without_sp.yaml")
    assert code == 2
    assert doc["results"][0]["error"] is not None
    assert "TP102" in codes_of(doc["results"][1])


# -- OmegaConf value semantics -------------------------------------------------------------------


def test_values_read_as_bridge_reads_them(run_cli, tmp_path):
    path = tmp_path / "c.yaml"
    path.write_text(
        "model:\n"
        "  tensor_model_parallel_size: 4\n"
        "  sequence_parallel: on\n"  # YAML 1.1 boolean, as OmegaConf/PyYAML read it
        "  pipeline_model_parallel_size: ${model.tensor_model_parallel_size}\n"
        "optimizer:\n  lr: 3e-4\n"
        "comm_overlap:\n  tp_comm_overlap: yes\n"
    )
    code, doc, _ = check_json(run_cli, path)
    eff = doc["results"][0]["effective"]
    assert eff["model.sequence_parallel"]["value"] is True
    assert eff["model.tp_comm_overlap"]["value"] is True
    assert eff["model.pipeline_model_parallel_size"]["value"] == 4
    assert "interpolation" in eff["model.pipeline_model_parallel_size"]["reason"]


def test_target_is_never_imported(run_cli, tmp_path, monkeypatch):
    sentinel = tmp_path / "overlap_sentinel_mod.py"
    marker = tmp_path / "imported"
    sentinel.write_text(f"open({str(marker)!r}, 'w').write('x')\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    path = tmp_path / "c.yaml"
    path.write_text(
        "_target_: overlap_sentinel_mod.Thing\nmodel:\n  _target_: overlap_sentinel_mod.Model\n"
        "  activation_func: {_call_: false, _target_: overlap_sentinel_mod.fn}\n"
    )
    code, out, err = run_cli("check", path)
    assert code == 0
    assert not marker.exists()
    assert "overlap_sentinel_mod" not in sys.modules


# -- overrides ---------------------------------------------------------------------------------


def test_dotlist_overrides(run_cli):
    path = EXAMPLES / "tp_overlap_without_sp.yaml"
    _, before, _ = check_json(run_cli, path)
    assert "TP102" in codes_of(before["results"][0])
    _, after, _ = check_json(run_cli, path, "model.sequence_parallel=true", "++env_vars={CUDA_DEVICE_MAX_CONNECTIONS:1}")
    r = after["results"][0]
    assert "TP102" not in codes_of(r)
    assert r["effective"]["model.tp_comm_overlap"]["value"] is True
    assert "override" in r["effective"]["model.sequence_parallel"]["reason"]
    # ~key on a file Bridge loads whole removes the key from Hydra's dict only: the dataclass built from the
    # file keeps its value (omegaconf_utils.py:468-515), so nothing changes
    _, deleted, _ = check_json(run_cli, path, "~comm_overlap")
    assert codes_of(deleted["results"][0]) == codes_of(before["results"][0])
    _, added, _ = check_json(run_cli, path, "+model.virtual_pipeline_model_parallel_size=2", "model.pipeline_model_parallel_size=4")
    assert added["results"][0]["effective"]["model.overlap_p2p_comm"]["value"] is True


@pytest.mark.parametrize(
    "override, words",
    [
        ("model.no_such_key=1", "not in the config"),
        ("+model.tensor_model_parallel_size=2", "already exists"),
        ("~model.no_such_key", "not in the config"),
    ],
)
def test_bad_overrides_exit_2(run_cli, override, words):
    code, out, err = run_cli("check", EXAMPLES / "tp_overlap_without_sp.yaml", override)
    assert code == 2 and words in err + out


# -- annotate ----------------------------------------------------------------------------------


def test_annotate_writes_effective_values_with_provenance(run_cli, tmp_path):
    code, out, err = run_cli("check", EXAMPLES / "tp_overlap_without_sp.yaml", "--annotate", "--world-size", "16")
    assert code == 1
    doc = yaml.safe_load(out)
    assert doc["model"]["tp_comm_overlap"] is False  # effective value written in
    assert doc["ddp"]["bucket_size"] == 134217728
    assert "# overlap: effective false (forced-off" in out
    assert "[TP102]" in out
    assert "# TP overlap requested" in out  # the user's comments survive


def test_annotate_output_file_never_the_input(run_cli, tmp_path):
    src = tmp_path / "c.yaml"
    shutil.copy(EXAMPLES / "pp_without_vpp.yaml", src)
    before = src.read_bytes()
    code, out, err = run_cli("check", src, "--annotate", "-o", src)
    assert code == 2 and src.read_bytes() == before
    dest = tmp_path / "annotated.yaml"
    code, out, err = run_cli("check", src, "--annotate", "-o", dest)
    assert code == 1 and dest.exists() and "PP202" in dest.read_text()
    assert src.read_bytes() == before


# -- real processes ----------------------------------------------------------------------------


def test_python_dash_m_subprocess():
    proc = subprocess.run(
        [sys.executable, "-m", "overlap_cli", "check", str(EXAMPLES / "pp_without_vpp.yaml"), "--format", "json"],
        capture_output=True, text=True, cwd=ROOT, timeout=60,
    )
    assert proc.returncode == 1, proc.stderr
    assert "PP202" in proc.stdout


def test_installed_console_script():
    exe = shutil.which("overlap") or str(Path(sys.executable).parent / "overlap")
    if not os.path.exists(exe):
        pytest.skip("console script not installed in this environment")
    proc = subprocess.run([exe, "check", str(EXAMPLES / "tp_overlap_without_sp.yaml"), "--show-effective"], capture_output=True, text=True, timeout=60)
    assert proc.returncode == 1
    assert "TP102 warning" in proc.stdout
    assert "effective overlap settings" in proc.stdout
