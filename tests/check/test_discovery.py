"""Folders of configs: what is found, what is skipped, and that --jobs never changes the result."""

from __future__ import annotations

import json
import random
from pathlib import Path

import pytest
from conftest import ROOT as ROOT_DIR  # noqa: E402

ROOT = ROOT_DIR
EXAMPLES = ROOT / "examples"

CONFIG = "model:\n  tensor_model_parallel_size: 2\n  sequence_parallel: false\ncomm_overlap:\n  tp_comm_overlap: true\n"


def tree(base: Path, files: dict) -> Path:
    for rel, text in files.items():
        p = base / rel
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_text(text, encoding="utf-8")
    return base


def rel(paths, base: Path):
    return [str(Path(p).relative_to(base)) for p in paths]


def test_walks_yaml_skips_hidden_and_non_configs(tmp_path):
    from overlap_cli.check.discovery import discover

    tree(
        tmp_path,
        {
            "b.yaml": CONFIG,
            "a.yml": "ddp:\n  use_distributed_optimizer: true\n",
            "sub/c.yaml": "'optimizer': {lr: 1}\n",  # quoted top-level key
            "sub/deeper/d.YAML": "mixed_precision: bf16_mixed\n",
            "notes.txt": CONFIG,  # not YAML
            ".hidden/e.yaml": CONFIG,  # hidden folder
            "sub/.f.yaml": CONFIG,  # hidden file
            "__pycache__/g.yaml": CONFIG,
            "workflow.yaml": "on: [push]\njobs: {}\n",
            "nested.yaml": "train:\n  model: 3\n",  # `model` only below the top level
        },
    )
    found = discover([str(tmp_path)])
    assert rel(found.files, tmp_path) == ["a.yml", "b.yaml", "sub/c.yaml", "sub/deeper/d.YAML"]
    assert sorted(rel([p for p, _ in found.skipped], tmp_path)) == ["nested.yaml", "workflow.yaml"]
    assert all("not a training config" in why for _, why in found.skipped)


def test_explicit_non_config_is_skipped_like_in_a_folder(tmp_path):
    from overlap_cli.check.discovery import discover

    tree(tmp_path, {"workflow.yaml": "on: [push]\n", "c.yaml": CONFIG, "flow.yaml": "# flow\n{model: {tensor_model_parallel_size: 2}}\n",
                    "env.yaml": "env_vars:\n  NCCL_P2P_NET_CHUNKSIZE: 4194304\n"})
    wf, c, flow, env = (str(tmp_path / n) for n in ("workflow.yaml", "c.yaml", "flow.yaml", "env.yaml"))
    found = discover([wf, c, flow, env])
    # named explicitly: a flow-style file and an env_vars-only override file (a ConfigContainer section) are checked
    assert found.files == [c, flow, env]
    assert [p for p, _ in found.skipped] == [wf] and "not a training config" in found.skipped[0][1]
    only = discover([wf, c, flow, env], configs_only=True)
    assert only.files == [c] and [p for p, _ in only.skipped] == [wf, flow, env]
    assert discover([str(tmp_path)]).files == [c]  # a folder walk keeps to the five overlap sections
    # not a mapping of other keys: checked, so the check says what is wrong (exit 2), not skipped
    tree(tmp_path, {"list.yaml": "- 1\n- 2\n", "empty.yaml": ""})
    odd = [str(tmp_path / "list.yaml"), str(tmp_path / "empty.yaml")]
    assert discover(odd).files == odd


def test_cli_explicit_ci_workflow_is_not_a_training_config(run_cli, tmp_path):
    """A GitHub workflow named on the command line: no CFG001, no table; the note, exit 0."""
    wf = tmp_path / "ci.yml"
    wf.write_text("name: CI\non: [push]\njobs:\n  test:\n    runs-on: ubuntu-latest\n    steps:\n      - uses: actions/checkout@v4\n")
    code, out, err = run_cli("check", wf, "--show-info", "--show-effective")
    assert code == 0
    assert "CFG001" not in out and "effective" not in out
    assert f"{wf}: skipped: not a training config" in err
    code, out, _ = run_cli("check", wf, "--format", "json")
    doc = json.loads(out)
    assert code == 0 and doc["results"] == [] and doc["skipped"][0]["file"] == str(wf)


def test_order_and_duplicates(tmp_path):
    from overlap_cli.check.discovery import discover

    tree(tmp_path, {"x/1.yaml": CONFIG, "x/2.yaml": CONFIG, "y.yaml": CONFIG})
    y, x1 = str(tmp_path / "y.yaml"), str(tmp_path / "x" / "1.yaml")
    found = discover([y, str(tmp_path / "x"), x1, str(tmp_path)])
    assert rel(found.files, tmp_path) == ["y.yaml", "x/1.yaml", "x/2.yaml"]  # first position wins


def test_cli_directory_and_notes(run_cli, tmp_path):
    tree(tmp_path, {"cfgs/a.yaml": CONFIG, "cfgs/ci.yaml": "on: [push]\n"})
    code, out, err = run_cli("check", tmp_path / "cfgs", "--format", "json")
    doc = json.loads(out)
    assert [Path(r["file"]).name for r in doc["results"]] == ["a.yaml"]
    assert doc["skipped"][0]["file"].endswith("ci.yaml") and "not a training config" in doc["skipped"][0]["reason"]
    assert "ci.yaml: skipped: not a training config" in err
    assert code == 1  # TP102 in a.yaml


def test_directory_without_yaml_is_an_input_error(run_cli, tmp_path):
    (tmp_path / "empty").mkdir()
    code, out, err = run_cli("check", tmp_path / "empty")
    assert code == 2 and "no *.yaml, *.yml or launch-script files" in err and str(tmp_path / "empty") in err


def test_only_non_configs_is_clean(run_cli, tmp_path):
    tree(tmp_path, {"ci.yaml": "on: [push]\n"})
    code, out, err = run_cli("check", "--configs-only", tmp_path / "ci.yaml")
    assert code == 0 and "skipped" in err


def _generate(folder: Path, n: int) -> None:
    """n varied configs (clean, warnings, errors, one unreadable) spread over nested folders."""
    rnd = random.Random(20260717)
    for i in range(n):
        tp = rnd.choice([1, 2, 4, 8])
        pp = rnd.choice([1, 2, 4])
        vpp = rnd.choice(["null", 2]) if pp > 1 else "null"
        text = (
            f"model:\n  tensor_model_parallel_size: {tp}\n  sequence_parallel: {rnd.choice(['true', 'false'])}\n"
            f"  pipeline_model_parallel_size: {pp}\n  virtual_pipeline_model_parallel_size: {vpp}\n"
            f"ddp:\n  use_distributed_optimizer: {rnd.choice(['true', 'false'])}\n"
            f"optimizer:\n  use_distributed_optimizer: true\nmixed_precision: {rnd.choice(['bf16_mixed', 'fp16_mixed'])}\n"
            f"comm_overlap:\n  tp_comm_overlap: {rnd.choice(['true', 'false'])}\n"
            f"  overlap_p2p_comm: {rnd.choice(['true', 'false'])}\n"
        )
        if i == 57:
            text = "model:\n  tensor_model_parallel_size: four\n"
        sub = folder / f"group{i % 7}" / ("nested" if i % 3 == 0 else "")
        sub.mkdir(parents=True, exist_ok=True)
        (sub / f"cfg_{i:03d}.yaml").write_text(text, encoding="utf-8")


def test_jobs_do_not_change_the_result(run_cli, tmp_path):
    _generate(tmp_path / "configs", 200)
    outputs = {}
    for jobs in ("1", "2"):
        for fmt in ("json", "text"):
            code, out, err = run_cli("check", tmp_path / "configs", "--world-size", "64", "--format", fmt, "--jobs", jobs)
            outputs[jobs, fmt] = (code, out, err)
    assert outputs["1", "json"] == outputs["2", "json"]
    assert outputs["1", "text"] == outputs["2", "text"]
    code, out, _ = outputs["2", "json"]
    doc = json.loads(out)
    assert code == 2 and len(doc["results"]) == 200 and doc["summary"]["unreadable"] == 1
    files = [r["file"] for r in doc["results"]]
    assert files == sorted(files, key=lambda f: (Path(f).parent.parts, Path(f).name))  # walk order, not finish order
    assert doc["summary"]["warning"] + doc["summary"]["error"] > 50  # the folder has real findings to compare


@pytest.mark.parametrize("jobs, n, expected", [(2, 200, 2), (8, 40, 2), (8, 10, 1), (4, 3, 1), (1, 500, 1), (4, 64, 4)])
def test_effective_jobs(jobs, n, expected):
    from overlap_cli.check.runner import effective_jobs

    assert effective_jobs(jobs, n) == expected


def test_folder_with_launch_scripts(run_cli, tmp_path):
    tree(tmp_path, {"runs/train.sh": "torchrun --nproc_per_node 8 pretrain_gpt.py --tensor-model-parallel-size 2 --tp-comm-overlap\n",
                    "runs/setup.sh": "pip install -e .\n"})
    code, out, err = run_cli("check", tmp_path / "runs", "--format", "json")
    doc = json.loads(out)
    assert [Path(r["file"]).name for r in doc["results"]] == ["train.sh"]
    # not a launch: one line saying so (a folder run accounts for every file)
    assert [(Path(s["file"]).name, s["reason"]) for s in doc["skipped"]] == [
        ("setup.sh", "not a launch (no torchrun, python -m torch.distributed.run, pretrain_*.py or run_recipe.py line)")]
    assert "setup.sh: skipped: not a launch" in err
    assert code == 1


def test_override_file_naming_its_recipe_is_found_whatever_it_sets(run_cli, tmp_path):
    # Only train: -- no overlap section -- but the file is a run on top of a recipe: checked, layered.
    tree(tmp_path, {
        "runs/short.yaml": "# overlap: recipe=llama3_8b_pretrain_8gpu_h100_bf16_config\ntrain:\n  train_iters: 10\n",
        "runs/target_form.yaml": "# overlap: target recipe=llama3_8b_pretrain_8gpu_h100_bf16_config\ntrain:\n  train_iters: 10\n",
        "runs/notes.yaml": "train:\n  train_iters: 10\n",
    })
    code, out, err = run_cli("check", str(tmp_path / "runs"), "--format", "json")
    files = [Path(r["file"]).name for r in json.loads(out)["results"]]
    assert files == ["short.yaml", "target_form.yaml"]
    assert "notes.yaml: skipped" in err
    first = json.loads(out)["results"][0]
    assert first["target"]["sources"]["world_size"] == "recipe"
    assert first["effective"]["model.tensor_model_parallel_size"]["layer"] == "recipe llama3_8b_pretrain_8gpu_h100_bf16_config"


def test_override_file_without_a_recipe_says_what_it_needs(run_cli, tmp_path):
    tree(tmp_path, {"conf/llama_override.yaml": "model:\n  tensor_model_parallel_size: 2\ntrain:\n  train_iters: 5\n",
                    "conf/plain.yaml": CONFIG, "mine.yaml": CONFIG})
    code, out, err = run_cli("check", tmp_path, "--format", "json")
    doc = json.loads(out)
    assert sorted(Path(r["file"]).name for r in doc["results"]) == ["mine.yaml"]
    reasons = {Path(s["file"]).name: s["reason"] for s in doc["skipped"]}
    assert reasons["llama_override.yaml"] == ("an override file: sets 2 keys of a ConfigContainer: name its recipe with "
                                              "`# overlap: recipe=NAME` or in pyproject ([tool.overlap] recipe, or per-file-target)")
    assert reasons["plain.yaml"].startswith("an override file: sets 3 keys")
    # named explicitly (as pre-commit names it), the same verdict: skipped with the reason, exit 0
    code, out, err = run_cli("check", tmp_path / "conf" / "llama_override.yaml", "--format", "json")
    named = json.loads(out)
    assert code == 0 and named["results"] == []
    assert [s["reason"] for s in named["skipped"]] == [reasons["llama_override.yaml"]]
