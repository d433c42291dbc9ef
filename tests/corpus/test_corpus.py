"""Megatron-Bridge 0.6.2's own 456 recipes are test data: every rule over every recipe, under the targets a
user meets (none; the recipe's own world size and GPU; each with Transformer Engine 2.12, 2.6 and absent),
must end in a report, never an internal error; and a folder run with a per-file target for each recipe
reports no data-parallel size problem (they all launch)."""

from __future__ import annotations

import collections
import json
import os
import subprocess
import sys

import pytest

from conftest import ROOT

VARIANTS = {
    "plain": {},
    "te-2.12": {"te_version": "2.12"},
    "te-2.6": {"te_version": "2.6"},
    "no-te": {"te": False},
}


def _target(row, manifest: bool, variant: dict):
    from overlap_cli.cli.check import target_from_options
    from overlap_cli.cli.options import TARGET, options

    return target_from_options(options(
        TARGET, world_size=row["world_size"] if manifest else None, te=variant.get("te"),
        gpu=row["gpu"] if manifest else None, te_version=variant.get("te_version"),
    ))  # fmt: skip


@pytest.mark.parametrize("manifest", [False, True], ids=["no-target", "manifest-target"])
@pytest.mark.parametrize("variant", list(VARIANTS), ids=list(VARIANTS))
def test_no_internal_error_on_any_recipe(corpus, manifest, variant):
    from overlap_cli.frameworks.bridge.preset_suggestion import suggestion
    from overlap_cli.check.engine import check
    from overlap_cli.frameworks.bridge.launch_env import plan

    problems = collections.defaultdict(list)
    for row in corpus:
        checked = check(row["path"], _target(row, manifest, VARIANTS[variant]))
        r = checked.result
        if r.error is not None:
            problems[r.error.one_line().split(": ", 1)[1]].append(row["file"])
            continue
        view = checked.view
        plan(view, all_variables=True)  # overlap env
        suggestion(view)  # overlap presets suggest
    assert not problems, {k: (len(v), v[:3]) for k, v in problems.items()}


def test_folder_run_with_a_target_per_file_has_no_dp_size_finding(corpus, tmp_path):
    """One folder run over the whole corpus with each recipe's world size and GPU from a per-file-target
    table: every recipe's DP size divides (DP307 and friends stay silent) and nothing is an input error."""
    lines = ["[tool.overlap.per-file-target]"]
    for row in corpus:
        gpu = f', gpu = "{row["gpu"]}"' if row["gpu"] else ""  # a few recipes name no GPU
        lines.append(f'"{row["file"]}" = {{ world-size = {row["world_size"]}{gpu} }}')
    settings = tmp_path / "pyproject.toml"
    settings.write_text("\n".join(lines) + "\n", encoding="utf-8")
    env = {**os.environ, "PYTHONPATH": str(ROOT), "NO_COLOR": "1"}
    p = subprocess.run(
        [sys.executable, "-m", "overlap_cli", "check", str(corpus[0]["path"]).rsplit(os.sep, 1)[0],
         "--settings", str(settings), "--format", "json", "--jobs", "2"],
        capture_output=True, text=True, env=env,
    )  # fmt: skip
    assert p.returncode in (0, 1), p.stderr[-2000:]
    results = json.loads(p.stdout)["results"]
    by_file = {os.path.basename(r["file"]): r for r in results}
    assert len([r for r in corpus if r["file"] in by_file]) == len(corpus)
    for row in corpus:
        r = by_file[row["file"]]
        assert r["error"] is None, (row["file"], r["error"])
        t = r["target"]
        assert (t["world_size"], t["gpu"]) == (row["world_size"], row["gpu"]), row["file"]
        assert t["sources"]["world_size"] == "per-file-target"
        assert t["data_parallel_size"] is not None, row["file"]
        assert not [f for f in r["findings"] if f["code"] == "DP307"], row["file"]


def _crashing_rule_driver(tmp_path):
    """A Python entry point that registers one extra rule which raises on files named *boom*, then runs
    the real `overlap` entry point: a stand-in for a rule with a bug."""
    driver = tmp_path / "driver.py"
    driver.write_text(
        "import sys\n"
        "from overlap_cli import rules\n"
        "from overlap_cli.rules.registry import rule\n"
        "rules.all_rules()\n"
        "@rule('ZZ999', 'test-crash', 'warning', 'raises on purpose')\n"
        "def crash(view):\n"
        "    '''Raises for files named *boom*.'''\n"
        "    if 'boom' in view.cfg.file:\n"
        "        raise ZeroDivisionError('division by zero')\n"
        "    return ()\n"
        "from overlap_cli.cli.fast import main\n"
        "sys.argv = ['overlap'] + sys.argv[1:]\n"
        "main()\n",
        encoding="utf-8",
    )
    return driver


def test_a_rule_that_raises_is_one_line_for_its_file_only(tmp_path):
    import shutil

    driver = _crashing_rule_driver(tmp_path)
    shutil.copy(ROOT / "examples" / "pp_without_vpp.yaml", tmp_path / "boom.yaml")
    shutil.copy(ROOT / "examples" / "pp_without_vpp.yaml", tmp_path / "fine.yaml")
    env = {**os.environ, "PYTHONPATH": str(ROOT), "NO_COLOR": "1"}

    def run(*args):
        return subprocess.run([sys.executable, str(driver), *args], capture_output=True, text=True, env=env, cwd=tmp_path)

    p = run("check", "boom.yaml", "fine.yaml", "--world-size", "64")
    assert p.returncode == 2 and "Traceback" not in p.stderr
    assert "boom.yaml: internal error in rule ZZ999: ZeroDivisionError: division by zero (please report)" in p.stderr
    assert "fine.yaml" in p.stdout  # the other file is still checked and reported
    p = run("check", "boom.yaml", "fine.yaml", "--world-size", "64", "--format", "json")
    assert p.returncode == 2
    results = {r["file"]: r for r in json.loads(p.stdout)["results"]}
    assert results["boom.yaml"]["error"]["internal"] is True and results["boom.yaml"]["error"]["rule"] == "ZZ999"
    assert results["fine.yaml"]["error"] is None and results["fine.yaml"]["findings"]
    for fmt in ("concise", "sarif", "github"):
        p = run("check", "boom.yaml", "--format", fmt)
        assert p.returncode == 2 and "Traceback" not in p.stderr, fmt
        assert "internal error in rule ZZ999" in p.stdout + p.stderr, fmt
    before = (tmp_path / "boom.yaml").read_bytes()
    p = run("fix", "boom.yaml", "--write", "--world-size", "64", "--unsafe-fixes")
    assert p.returncode == 2 and "Traceback" not in p.stderr and "internal error in rule ZZ999" in p.stderr
    assert (tmp_path / "boom.yaml").read_bytes() == before
    for cmd in (["env", "boom.yaml"], ["presets", "suggest", "boom.yaml"]):
        p = run(*cmd)
        assert p.returncode == 2 and p.stderr.count("\n") == 1 and "internal error" in p.stderr, cmd


@pytest.mark.parametrize("value", ["9" * 400, "-1", "0", "3", "1e309", "true", "[1, 2]"])
def test_extreme_bucket_size_on_a_real_dump_is_no_internal_error(corpus, value):
    """Found by bench/fuzz_long.py: DP301 sized a 400-digit bucket_size with a float division."""
    from overlap_cli.cli.check import target_from_options
    from overlap_cli.cli.options import TARGET, options
    from overlap_cli.check.engine import check_file

    row = next(r for r in corpus if r["file"].startswith("nemotronh_56b_pretrain_64gpu_b200_fp8cs"))
    text = open(row["path"], encoding="utf-8").read().replace("\n  bucket_size: null\n", f"\n  bucket_size: {value}\n", 1)
    assert f"bucket_size: {value}" in text
    r = check_file(row["path"], target_from_options(options(TARGET, world_size=row["world_size"], gpu=row["gpu"])), text=text)
    assert r.error is None or not r.error.internal, r.error.one_line()
