"""Per-file targets through the real command line: the `# overlap: target ...` directive,
`[tool.overlap.per-file-target]`, the order of precedence per field, and the Rubin GPU names."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys

import pytest

from conftest import ROOT

TUNED = ROOT / "examples" / "llama3_70b_tuned.yaml"  # TP 4 · PP 4 · CP 1 (DP = world / 16)


def overlap(*args, cwd=None):
    env = {**os.environ, "PYTHONPATH": str(ROOT), "NO_COLOR": "1"}
    p = subprocess.run(
        [sys.executable, "-m", "overlap_cli", *map(str, args)], capture_output=True, text=True, cwd=cwd, env=env
    )
    return p.returncode, p.stdout, p.stderr


def targets(*args, cwd=None) -> dict:
    code, out, err = overlap("check", *args, "--format", "json", cwd=cwd)
    assert code in (0, 1), err
    return {os.path.basename(r["file"]): r for r in json.loads(out)["results"]}


def with_directive(path, line: str):
    path.write_text(line + "\n" + TUNED.read_text(encoding="utf-8"), encoding="utf-8")
    return path


def test_directive_sets_the_target_of_its_file(tmp_path):
    cfg = with_directive(tmp_path / "a.yaml", "# overlap: target world-size=256 gpu=b200 te-version=2.12")
    r = targets(cfg)["a.yaml"]
    t = r["target"]
    assert (t["world_size"], t["data_parallel_size"], t["gpu"], t["te_version"]) == (256, 16, "b200", "2.12")
    assert t["gpu_generation"] == "sm100-or-newer"
    assert {k: t["sources"][k] for k in ("world_size", "gpu", "te_version")} == dict.fromkeys(
        ("world_size", "gpu", "te_version"), "directive"
    )
    assert any("# overlap: target (line 1)" in n for n in r["notes"])


def test_per_file_target_gives_each_folder_its_launch(tmp_path):
    for sub in ("big", "small"):
        (tmp_path / sub).mkdir()
        shutil.copy(TUNED, tmp_path / sub / "cfg.yaml")
    (tmp_path / "pyproject.toml").write_text(
        '[tool.overlap]\ngpu = "h100"\n\n[tool.overlap.per-file-target]\n'
        '"big/*.yaml" = { world-size = 1024 }\n"small/*.yaml" = { world-size = 16, gpu = "b200" }\n',
        encoding="utf-8",
    )
    code, out, err = overlap("check", "big", "small", "--format", "json", cwd=tmp_path)
    results = {r["file"].split(os.sep)[0]: r["target"] for r in json.loads(out)["results"]}
    assert results["big"]["data_parallel_size"] == 64 and results["big"]["gpu"] == "h100"
    assert results["big"]["sources"]["world_size"] == "per-file-target"
    assert results["big"]["sources"]["gpu"] == "pyproject"
    assert results["small"]["data_parallel_size"] == 1 and results["small"]["gpu"] == "b200"
    assert results["small"]["sources"]["gpu"] == "per-file-target"


def test_precedence_flag_directive_per_file_pyproject_detect_default(tmp_path):
    (tmp_path / "pyproject.toml").write_text(
        '[tool.overlap]\nworld-size = 16\ngpu = "h100"\nte-version = "2.6"\ntorch-version = "2.5"\n'
        'env-from-shell = false\n\n[tool.overlap.per-file-target]\n'
        '"cfg.yaml" = { world-size = 32, te-version = "2.7", torch-version = "2.6" }\n',
        encoding="utf-8",
    )
    with_directive(tmp_path / "cfg.yaml", "# overlap: target world-size=64 te-version=2.8")
    t = targets("cfg.yaml", "--world-size", "128", "--detect", cwd=tmp_path)["cfg.yaml"]["target"]
    got = {k: (t[k], t["sources"][k]) for k in ("world_size", "te_version", "torch_version", "gpu", "env_from_shell")}
    assert got == {
        "world_size": (128, "flag"),
        "te_version": ("2.8", "directive"),
        "torch_version": ("2.6", "per-file-target"),
        "gpu": ("h100", "pyproject"),  # [tool.overlap] outranks what --detect reads of this machine
        "env_from_shell": (False, "default"),
    }
    # Without the flag, the directive decides; without the directive, the per-file-target table.
    t = targets("cfg.yaml", cwd=tmp_path)["cfg.yaml"]["target"]
    assert (t["world_size"], t["sources"]["world_size"]) == (64, "directive")
    with_directive(tmp_path / "cfg.yaml", "# an ordinary comment")
    t = targets("cfg.yaml", cwd=tmp_path)["cfg.yaml"]["target"]
    assert (t["world_size"], t["sources"]["world_size"]) == (32, "per-file-target")


@pytest.mark.parametrize(
    "line, words",
    [
        ("# overlap: target wrld-size=8", ["a.yaml:1:", "unknown key 'wrld-size'", "did you mean world-size?"]),
        ("# overlap: target world-size=eight", ["a.yaml:1:", "world-size must be a positive integer"]),
        ("# overlap: target world-size=0", ["a.yaml:1:", "world_size", "positive integer"]),
        ("# overlap: target gpu=h900", ["a.yaml:1:", "unknown GPU 'h900'"]),
        ("# overlap: target te=maybe", ["a.yaml:1:", "te must be true or false"]),
        ("# overlap: target world-size=8 world-size=16", ["a.yaml:1:", "given twice"]),
        ("# overlap: target", ["a.yaml:1:", "no target keys"]),
        ("# overlap: target nodes=2", ["a.yaml:1:", "nodes and gpus_per_node go together"]),
    ],
)
def test_bad_directive_is_one_line_naming_the_line(tmp_path, line, words):
    cfg = with_directive(tmp_path / "a.yaml", line)
    code, out, err = overlap("check", cfg)
    assert code == 2 and "Traceback" not in err
    lines = err.strip().splitlines()
    assert len(lines) == 1, err
    for w in words:
        assert w in lines[0], lines[0]


def test_bad_per_file_target_names_the_key(tmp_path):
    shutil.copy(TUNED, tmp_path / "cfg.yaml")
    (tmp_path / "pyproject.toml").write_text(
        '[tool.overlap.per-file-target]\n"*.yaml" = { world-sise = 8 }\n', encoding="utf-8"
    )
    code, out, err = overlap("check", "cfg.yaml", cwd=tmp_path)
    assert code == 2 and "Traceback" not in err
    assert "tool.overlap.per-file-target.*.yaml.world-sise" in err and "did you mean world-size?" in err
    (tmp_path / "pyproject.toml").write_text('[tool.overlap.per-file-target]\n"*.yaml" = { gpu = "z9" }\n', encoding="utf-8")
    code, out, err = overlap("check", "cfg.yaml", cwd=tmp_path)
    assert code == 2 and "unknown GPU 'z9'" in err and "per-file-target" in err


def test_directive_inside_a_string_is_not_a_directive(tmp_path):
    text = TUNED.read_text(encoding="utf-8") + "notes: |\n  # overlap: target world-size=8\n"
    (tmp_path / "a.yaml").write_text(text, encoding="utf-8")
    t = targets(tmp_path / "a.yaml")["a.yaml"]["target"]
    assert t["world_size"] is None and t["sources"]["world_size"] == "unknown"


def test_directive_does_not_come_from_the_file_name(tmp_path):
    shutil.copy(TUNED, tmp_path / "llama3_70b_pretrain_64gpu_h100_bf16_config.yaml")
    t = targets(tmp_path / "llama3_70b_pretrain_64gpu_h100_bf16_config.yaml")[
        "llama3_70b_pretrain_64gpu_h100_bf16_config.yaml"
    ]["target"]
    assert t["world_size"] is None and t["gpu"] is None


@pytest.mark.parametrize("gpu", ["vr200", "r100"])
def test_rubin_gpus_are_blackwell_or_newer(gpu):
    t = targets(TUNED, "--gpu", gpu)["llama3_70b_tuned.yaml"]["target"]
    assert t["gpu"] == gpu and t["gpu_generation"] == "sm100-or-newer"
    assert t["compute_capability"] is None  # not stated by Bridge or Megatron-Core: never made up


@pytest.mark.parametrize("gpu", ["vr200", "r100", "b200"])
def test_rubin_keeps_32_connections_as_blackwell_does(gpu):
    """Bridge's Blackwell and Rubin recipes set CUDA_DEVICE_MAX_CONNECTIONS=32 with TP > 1: on those targets
    nothing above info is said about it; on Hopper, where TP > 1 needs 1, a warning is."""

    def cdmc_findings(gpu):
        r = targets(TUNED, "++env_vars.CUDA_DEVICE_MAX_CONNECTIONS=32", "--world-size", 64, "--gpu", gpu)[TUNED.name]
        assert r["error"] is None
        assert r["effective"]["env.CUDA_DEVICE_MAX_CONNECTIONS"]["value"] in (32, "32")
        return [f for f in r["findings"] if f["key"] == "env_vars.CUDA_DEVICE_MAX_CONNECTIONS" and f["severity"] != "info"]

    assert cdmc_findings(gpu) == []
    assert cdmc_findings("h100")


def test_every_rubin_recipe_checks_on_its_own_gpu(corpus):
    rows = [r for r in corpus if r["gpu"] in ("vr200", "r100")]
    assert len(rows) >= 30
    for row in rows[:3] + [r for r in rows if r["gpu"] == "r100"][:1]:
        r = targets(row["path"], "--world-size", row["world_size"], "--gpu", row["gpu"])[row["file"]]
        assert r["error"] is None and r["target"]["gpu_generation"] == "sm100-or-newer"
