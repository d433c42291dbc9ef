"""The target profile: flags, [tool.overlap] in the nearest pyproject.toml (or --settings), --detect,
and the JSON `target` object that says where each value came from."""

from __future__ import annotations

import importlib.util
import json
import os
import shutil
import subprocess
import sys
from importlib import metadata

import pytest
from conftest import ROOT as ROOT_DIR  # noqa: E402

TUNED = "examples/llama3_70b_tuned.yaml"


def result(run_cli, *args):
    code, out, err = run_cli("check", *args, "--format", "json")
    assert out, err
    return code, json.loads(out)["results"][0]


@pytest.fixture
def project(tmp_path, root):
    """A project folder with a pyproject.toml and the tuned example two folders below it."""
    conf = tmp_path / "configs" / "llama"
    conf.mkdir(parents=True)
    shutil.copy(root / TUNED, conf / "tuned.yaml")

    def settings(text: str):
        (tmp_path / "pyproject.toml").write_text("[project]\nname = 'x'\n\n[tool.overlap]\n" + text, encoding="utf-8")

    return conf / "tuned.yaml", settings


def test_target_reports_every_field_with_a_source(run_cli, root):
    from overlap_cli.launch_profile.profile import FIELDS

    _, r = result(run_cli, root / TUNED)
    t = r["target"]
    for key in FIELDS + ("data_parallel_size",):
        assert key in t, key
    assert set(FIELDS) <= set(t["sources"])
    assert t["sources"]["gpu"] == "unknown" and t["gpu"] is None
    assert t["sources"]["transformer_engine"] == "default" and t["transformer_engine"] is True


def test_flags_map_gpu_to_its_generation(run_cli, root):
    for gpu, cc, gen in (("a100", "8.0", "hopper-or-older"), ("H200", "9.0", "hopper-or-older"), ("gb300", "10.3", "sm100-or-newer")):
        _, r = result(run_cli, root / TUNED, "--gpu", gpu, "--nodes", "8", "--gpus-per-node", "4")
        t = r["target"]
        assert (t["gpu"], t["compute_capability"], t["gpu_generation"]) == (gpu.lower(), cc, gen)
        assert t["sources"]["gpu"] == t["sources"]["gpu_generation"] == "flag"
        assert (t["world_size"], t["nodes"], t["gpus_per_node"]) == (32, 8, 4)


def test_pyproject_changes_the_target_and_says_so(run_cli, project):
    cfg, settings = project
    settings('gpu = "b200"\nworld_size = 64\n')
    code, r = result(run_cli, cfg)
    t = r["target"]
    assert (t["gpu"], t["world_size"], t["data_parallel_size"]) == ("b200", 64, 4)
    assert t["sources"]["gpu"] == t["sources"]["world_size"] == "pyproject"
    assert t["settings"].endswith("pyproject.toml")
    assert any(n.startswith("target from [tool.overlap] in ") and "gpu=b200" in n for n in r["notes"])
    # the b200 target wants 32 where the file has the Hopper value
    assert "ENV502" in {f["code"] for f in r["findings"]}
    code, out, _ = run_cli("check", cfg)  # plain text says so too
    assert "note: target from [tool.overlap]" in out
    code, out, _ = run_cli("env", cfg)
    assert "# target: gpu b200 (pyproject), world size 64 (pyproject)" in out
    assert "export CUDA_DEVICE_MAX_CONNECTIONS=32" in out


def test_flags_win_over_pyproject(run_cli, project):
    cfg, settings = project
    settings('gpu = "b200"\nnodes = 4\ngpus_per_node = 8\ntransformer_engine = false\nte_version = "2.7"\n')
    _, r = result(run_cli, cfg, "--gpu", "h100", "--te")
    t = r["target"]
    assert (t["gpu"], t["sources"]["gpu"]) == ("h100", "flag")
    assert (t["world_size"], t["sources"]["world_size"]) == (32, "pyproject")
    assert (t["transformer_engine"], t["sources"]["transformer_engine"]) == (True, "flag")
    assert (t["te_version"], t["sources"]["te_version"]) == ("2.7", "pyproject")
    _, r = result(run_cli, cfg, "--world-size", "16")
    assert (r["target"]["world_size"], r["target"]["nodes"], r["target"]["sources"]["nodes"]) == (16, None, "unknown")


def test_explicit_settings_file(run_cli, root, tmp_path):
    s = tmp_path / "cluster.toml"
    s.write_text('[tool.overlap]\ngpu = "h100"\n')
    _, r = result(run_cli, root / TUNED, "--settings", s)
    assert r["target"]["gpu"] == "h100" and r["target"]["settings"] == str(s)


def test_each_file_gets_its_own_pyproject(run_cli, root, tmp_path):
    files = []
    for name, gpu in (("a", "h100"), ("b", "b200")):
        (tmp_path / name).mkdir()
        (tmp_path / name / "pyproject.toml").write_text(f'[tool.overlap]\ngpu = "{gpu}"\n')
        shutil.copy(root / TUNED, tmp_path / name / "tuned.yaml")
        files.append(tmp_path / name / "tuned.yaml")
    code, out, err = run_cli("check", *files, "--format", "json")
    gpus = [r["target"]["gpu"] for r in json.loads(out)["results"]]
    assert gpus == ["h100", "b200"]


@pytest.mark.parametrize(
    "text, words",
    [
        ('gpu = "v100"', "tool.overlap.gpu: unknown GPU 'v100'"),
        ('world_size = "64"', "tool.overlap.world_size: must be a positive integer"),
        ("te_version = 2.10", "lose"),  # a TOML float: 2.10 would read as 2.1
        ("nodes = 4", "tool.overlap.gpus_per_node: nodes and gpus_per_node go together"),
        ("transformer_engine = 1", "must be true or false"),
        ("[tool.overlap", "invalid TOML"),
    ],
)
def test_bad_settings_exit_2_with_one_line(run_cli, project, text, words):
    cfg, settings = project
    settings(text)
    code, out, err = run_cli("check", cfg)
    assert code == 2 and out == ""
    assert len(err.strip().splitlines()) == 1 and words in err and "pyproject.toml" in err


def test_bad_flags_exit_2(run_cli, root):
    for args, words in ((["--gpu", "t4"], "unknown GPU"), (["--te-version", "latest"], "--te-version must be a version")):
        code, _, err = run_cli("check", root / TUNED, *args)
        assert code == 2 and words in err
    code, _, err = run_cli("env", root / TUNED, "--settings", "/nonexistent/overlap.toml")
    assert code == 2 and "cannot read settings" in err


# -- --detect ------------------------------------------------------------------------------------


def _installed(dist: str) -> bool:
    try:
        metadata.version(dist)
        return True
    except metadata.PackageNotFoundError:
        return False


def test_detect_reports_what_it_found_and_did_not(run_cli, root):
    te_here = importlib.util.find_spec("transformer_engine") is not None
    torch_here = _installed("torch")
    code, r = result(run_cli, root / "examples/tp_overlap_without_sp.yaml", "--detect")
    t = r["target"]
    assert t["sources"]["transformer_engine"] == "detected" and t["transformer_engine"] is te_here
    assert t["sources"]["torch_version"] == "detected"
    assert (t["torch_version"] is not None) is torch_here
    text = " ".join(t["detected"]["found"] + t["detected"]["not_found"])
    assert ("Transformer Engine" in " ".join(t["detected"]["not_found"])) is (not te_here)
    if not torch_here:
        assert "torch (not installed" in text and t["gpu_count"] is None
    assert any(n.startswith("target from --detect") for n in r["notes"])


def test_detect_flags_still_win(run_cli, root):
    _, r = result(run_cli, root / TUNED, "--detect", "--te", "--gpu", "h100")
    t = r["target"]
    assert (t["transformer_engine"], t["sources"]["transformer_engine"]) == (True, "flag")
    assert (t["gpu"], t["sources"]["gpu"]) == ("h100", "flag")


def test_no_te_detected_switches_tp_overlap_off(run_cli, root):
    if importlib.util.find_spec("transformer_engine") is not None:
        pytest.skip("Transformer Engine is installed here")
    cfg = root / "tests/cases/tp_ok.yaml"
    _, r = result(run_cli, cfg, "--detect")
    assert "TP103" in {f["code"] for f in r["findings"]}


def test_torch_is_never_imported_without_detect(run_cli, root):
    before = "torch" in sys.modules
    run_cli("check", root / TUNED, "--gpu", "h100")
    run_cli("env", root / TUNED)
    assert ("torch" in sys.modules) is before


@pytest.mark.skipif(importlib.util.find_spec("torch") is None, reason="torch is not installed in this environment")
def test_detect_with_torch_reads_the_gpus():
    # In a subprocess: importing torch is slow and must not leak into the other tests.
    env = dict(os.environ, NO_COLOR="1")
    out = subprocess.run(
        [sys.executable, "-m", "overlap_cli", "check", "examples/tp_overlap_without_sp.yaml", "--detect", "-f", "json"],
        capture_output=True, text=True, env=env, cwd=str(ROOT_DIR),
    )
    assert out.returncode in (0, 1), out.stderr
    t = json.loads(out.stdout)["results"][0]["target"]
    assert t["torch_version"] == metadata.version("torch")
    assert isinstance(t["gpu_count"], int) and t["sources"]["gpu_count"] == "detected"
    if t["gpu_count"] == 0:
        assert "GPU (torch sees no CUDA device)" in t["detected"]["not_found"]
    else:
        assert t["compute_capability"] and t["sources"]["compute_capability"] == "detected"
