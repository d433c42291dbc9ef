"""`overlap presets list | show | suggest`, and the presets shipped in an installed wheel."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest
import yaml

from overlap_cli.frameworks.bridge import presets as P
from conftest import ROOT as ROOT_DIR  # noqa: E402

ROOT = ROOT_DIR
DATA = ROOT / "tests" / "data"
REFERENCE = json.loads((DATA / "userbuffers_presets.json").read_text(encoding="utf-8"))["presets"]
TUNED = ROOT / "examples" / "llama3_70b_tuned.yaml"
LLAMA_DUMP = ROOT / "examples" / "bridge" / "llama3_70b_pretrain_32gpu_h100_bf16_config.yaml"
LLAMA_PRESET = "userbuffers_bf16_h100_h8192_tp4_mbs1_seqlen8192"
NAME_RE = re.compile(
    r"userbuffers_(?P<precision>bf16|fp8)_(?P<gpu>h100|b200)_h(?P<hidden>\d+)_tp(?P<tp>\d+)"
    r"(?:_cp(?P<cp>\d+))?_mbs(?P<mbs>\d+)_seqlen(?P<seq>\d+)(?P<lora>_lora)?"
)


def expected_row(name: str) -> dict:
    """The list entry for a preset, computed from its name and the reference JSON alone."""
    m = NAME_RE.fullmatch(name)
    return {
        "name": name, "precision": m["precision"], "gpu": m["gpu"], "hidden_size": int(m["hidden"]),
        "tp": int(m["tp"]), "cp": int(m["cp"] or 1), "micro_batch_size": int(m["mbs"]),
        "seq_length": int(m["seq"]), "lora": bool(m["lora"]), "gemms": REFERENCE[name],
    }  # fmt: skip


def list_json(run_cli, *args):
    code, out, err = run_cli("presets", "list", "--format", "json", *args)
    assert code == 0, err
    doc = json.loads(out)
    assert doc["version"] == 1
    return doc["presets"]


# -- list ----------------------------------------------------------------------------------------


def test_list_json_all_19_with_fields_and_gemms(run_cli):
    rows = list_json(run_cli)
    assert [r["name"] for r in rows] == sorted(REFERENCE) and len(rows) == 19
    for row in rows:
        same = row.pop("same_values_as")
        assert row == expected_row(row["name"])
        assert same == sorted(n for n in REFERENCE if n != row["name"] and REFERENCE[n] == REFERENCE[row["name"]])


def test_list_text_table(run_cli):
    code, out, _ = run_cli("presets", "list")
    assert code == 0
    lines = out.splitlines()
    assert lines[0].split() == ["name", "precision", "GPU", "hidden", "TP", "CP", "MBS", "seq", "LoRA"]
    rows = {l.split()[0]: l.split() for l in lines[1:20]}
    assert set(rows) == set(REFERENCE)
    assert rows["userbuffers_fp8_b200_h16384_tp4_cp2_mbs1_seqlen8192"][1:] == ["fp8", "b200", "16384", "4", "2", "1", "8192", "no"]
    assert rows["userbuffers_fp8_h100_h8192_tp2_mbs1_seqlen4096_lora"][-1] == "yes"
    assert "19 preset(s)" in out
    assert "userbuffers_fp8_b200_h8192_tp2_mbs1_seqlen8192 = userbuffers_fp8_h100_h8192_tp4_mbs1_seqlen8192" in out


@pytest.mark.parametrize(
    "args, gpu, precision, count",
    [(("--gpu", "h100"), "h100", None, 10), (("--gpu", "H200"), "h100", None, 10), (("--gpu", "gb300"), "b200", None, 9),
     (("--precision", "bf16"), None, "bf16", 9), (("--gpu", "b200", "--precision", "fp8"), "b200", "fp8", 4)],
)  # fmt: skip
def test_list_filters(run_cli, args, gpu, precision, count):
    rows = list_json(run_cli, *args)
    assert len(rows) == count
    assert all((gpu is None or r["gpu"] == gpu) and (precision is None or r["precision"] == precision) for r in rows)


def test_list_bad_filters_exit_2(run_cli):
    for args in (("--gpu", "v100"), ("--precision", "fp16")):
        code, out, err = run_cli("presets", "list", *args)
        assert code == 2 and err.startswith("overlap: error:") and "Traceback" not in err
    assert list_json(run_cli, "--gpu", "a100") == []


# -- show ----------------------------------------------------------------------------------------


@pytest.mark.parametrize("name", sorted(REFERENCE))
def test_show_yaml_is_bridge_serialized_form(run_cli, name):
    code, out, _ = run_cli("presets", "show", name)
    assert code == 0
    assert out.startswith(f"# {name}: tuned for")
    assert yaml.safe_load(out) == {"tp_comm_overlap_cfg": P.serialized_form(name)}


def test_show_output_pasted_into_a_config_is_recognised(run_cli, tmp_path):
    code, out, _ = run_cli("presets", "show", LLAMA_PRESET)
    text = TUNED.read_text(encoding="utf-8").replace("  tp_comm_overlap_cfg: null\n", "".join("  " + l + "\n" for l in out.splitlines()))
    path = tmp_path / "pasted.yaml"
    path.write_text(text, encoding="utf-8")
    code, out, _ = run_cli("check", path, "--gpu", "h100", "--world-size", "64", "--format", "json")
    r = json.loads(out)["results"][0]
    assert r["effective"]["model.tp_comm_overlap_cfg"]["value"]["preset"] == LLAMA_PRESET
    assert not [f for f in r["findings"] if f["code"].startswith("UB")]


def test_show_json(run_cli):
    code, out, _ = run_cli("presets", "show", "userbuffers_fp8_h100_h8192_tp4_mbs1_seqlen8192", "--format", "json")
    doc = json.loads(out)
    assert doc["tp"] == 4 and doc["gpu"] == "h100" and doc["same_values_as"] == ["userbuffers_fp8_b200_h8192_tp2_mbs1_seqlen8192"]
    assert doc["tp_comm_overlap_cfg"] == P.serialized_form("userbuffers_fp8_h100_h8192_tp4_mbs1_seqlen8192")


def test_show_unknown_exits_2_with_closest(run_cli):
    code, out, err = run_cli("presets", "show", "userbuffers_bf16_h100_h8192_tp4_mbs1_seqlen8129")
    assert code == 2 and out == ""
    assert err.count("\n") == 1 and f"closest: {LLAMA_PRESET}" in err
    code, _, err = run_cli("presets", "show", "userbuffers_bf16_h100_h8192_tp4")
    assert code == 2 and "malformed preset name" in err and "missing the micro-batch size" in err


# -- suggest -------------------------------------------------------------------------------------


def test_suggest_names_the_fitting_preset_for_the_llama_example(run_cli):
    code, out, _ = run_cli("presets", "suggest", TUNED, "--gpu", "h100")
    assert code == 0
    first = next(l for l in out.splitlines() if l.strip().startswith("1."))
    assert LLAMA_PRESET in first and "fits exactly" in first
    assert f"{LLAMA_PRESET} fits this run" in out
    code, out, _ = run_cli("presets", "suggest", TUNED, "--gpu", "h100", "--format", "json")
    doc = json.loads(out)
    assert doc["verdict"] == "fit" and doc["fits"] == [LLAMA_PRESET]
    assert doc["candidates"][0] == {"name": LLAMA_PRESET, "exact": True, "same_values_as": [], "differences": []}
    assert doc["run"]["tp"] == 4 and doc["run"]["hidden_size"] == 8192 and doc["current"] is None
    # Every other candidate says how it differs.
    assert all(c["differences"] for c in doc["candidates"][1:]) and len(doc["candidates"]) == 19


def test_suggest_without_gpu_still_fits_and_says_gpu_was_not_compared(run_cli):
    code, out, _ = run_cli("presets", "suggest", TUNED)
    assert code == 0 and "not compared (unknown): GPU" in out and "fits what is known" in out


def test_suggest_when_nothing_fits_says_so(run_cli, tmp_path):
    path = tmp_path / "odd.yaml"
    path.write_text(TUNED.read_text().replace("hidden_size: 8192", "hidden_size: 5120").replace("tensor_model_parallel_size: 4", "tensor_model_parallel_size: 16"))
    code, out, _ = run_cli("presets", "suggest", path, "--gpu", "h100")
    assert code == 1
    assert "No shipped preset was tuned for this run" in out and "tp_comm_overlap_cfg: null" in out
    # Bridge's own llama dump (CP=2): the closest differs only in CP -> a start to benchmark, not a fit.
    code, out, _ = run_cli("presets", "suggest", LLAMA_DUMP, "--gpu", "h100")
    assert code == 1 and "differs only in CP" in out and LLAMA_PRESET in out


def test_suggest_needs_tp_overlap(run_cli, tmp_path):
    path = tmp_path / "off.yaml"
    path.write_text(TUNED.read_text().replace("sequence_parallel: true", "sequence_parallel: false"))
    code, out, _ = run_cli("presets", "suggest", path)
    assert code == 1 and "TP overlap is not effective here" in out and "sequence_parallel" in out
    code, out, _ = run_cli("presets", "suggest", path, "--format", "json")
    assert json.loads(out)["verdict"] == "tp-overlap-off" and json.loads(out)["candidates"] == []


def test_suggest_bad_input_exit_2(run_cli, tmp_path):
    code, out, err = run_cli("presets", "suggest", tmp_path / "missing.yaml")
    assert code == 2 and "not found" in err and "Traceback" not in err
    code, out, err = run_cli("presets", "suggest", TUNED, TUNED)
    assert code == 2


def test_suggest_with_override(run_cli):
    # An override turns the tuned example into a TP2 run: the TP4 preset no longer fits.
    code, out, _ = run_cli("presets", "suggest", TUNED, "model.tensor_model_parallel_size=2", "--gpu", "h100", "--format", "json")
    doc = json.loads(out)
    assert doc["run"]["tp"] == 2 and LLAMA_PRESET not in doc["fits"]


# -- installed wheel -------------------------------------------------------------------------------


@pytest.mark.network
def test_presets_found_from_an_installed_wheel(tmp_path):
    """Build the wheel (pip fetches hatchling), install it into a fresh venv, list the presets elsewhere."""
    wheels = tmp_path / "wheels"
    subprocess.run([sys.executable, "-m", "pip", "wheel", "--no-deps", "-q", "-w", str(wheels), str(ROOT)], check=True)
    (wheel,) = wheels.glob("overlap_cli-*.whl")
    names = zipfile.ZipFile(wheel).namelist()
    shipped = sorted(Path(n).stem for n in names if n.startswith("overlap_cli/_presets/") and n.endswith(".yaml"))
    assert shipped == sorted(REFERENCE)
    assert not [n for n in names if n.startswith("presets/")]

    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
    bindir = venv / ("Scripts" if os.name == "nt" else "bin")
    subprocess.run([str(bindir / "python"), "-m", "pip", "install", "-q", str(wheel)], check=True)
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "VIRTUAL_ENV")}
    result = subprocess.run([str(bindir / "overlap"), "presets", "list", "--format", "json"], cwd=elsewhere,
                            capture_output=True, text=True, env=env, check=True)  # fmt: skip
    rows = json.loads(result.stdout)["presets"]
    for row in rows:
        row.pop("same_values_as")
    assert rows == [expected_row(n) for n in sorted(REFERENCE)]
    where = subprocess.run([str(bindir / "python"), "-c", "from overlap_cli.frameworks.bridge import presets; print(presets.presets_dir())"],
                           cwd=elsewhere, capture_output=True, text=True, env=env, check=True)  # fmt: skip
    assert Path(where.stdout.strip()).parts[-2:] == ("overlap_cli", "_presets")
    assert str(ROOT) not in where.stdout
