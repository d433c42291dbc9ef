"""The release checked against, on the command line: --bridge-version / --core-version on every command that
takes a target, the JSON ``release`` of each result and where it came from, the default note said once per
run, and a release the tool holds no data for as one line, exit 2."""

from __future__ import annotations

import json

import pytest
from frameworks.test_releases import _installed, site  # noqa: F401 (site: a folder of package metadata on sys.path)

TUNED = "examples/llama3_70b_tuned.yaml"
LAUNCH = "examples/megatron-lm/gpt_pretrain_tp_overlap.sh"
NOT_HELD = "0.0.1"


def _newest():
    from overlap_cli.frameworks.bridge.releases import BRIDGE

    return BRIDGE.newest()


def _pin(version):
    from overlap_cli.frameworks.bridge.releases import BRIDGE

    return BRIDGE.get(version).CORE_VERSION


def _results(run_cli, *args) -> list:
    code, out, err = run_cli("check", *args, "--format", "json")
    assert code in (0, 1), err
    return json.loads(out)["results"]


def _release_notes(result: dict) -> list:
    return [n for n, kind in zip(result.get("notes", []), result.get("note_kinds", [])) if kind.startswith("release")]


# Every command that takes a target (cli.options.TARGET), with arguments that check TUNED.
COMMANDS = {
    "check": ["check", TUNED],
    "fix": ["fix", "--diff", TUNED],
    "env": ["env", TUNED],
    "diff": ["diff", TUNED, "--vs-world-size", "64"],
    "estimate": ["estimate", TUNED, "--world-size", "64"],
    "presets suggest": ["presets", "suggest", TUNED],
}


@pytest.mark.parametrize("command", COMMANDS)
def test_every_command_refuses_a_release_without_data_in_one_line(command, run_cli, root, monkeypatch):
    monkeypatch.chdir(root)
    code, out, err = run_cli(*COMMANDS[command], "--bridge-version", NOT_HELD)
    assert code == 2 and out == ""
    assert err.count("\n") == 1 and "--bridge-version" in err and NOT_HELD in err and _newest() in err
    code, out, err = run_cli(*COMMANDS[command], "--bridge-version", _newest())
    assert code in (0, 1), err


def test_tune_takes_the_release_too(run_cli, root, monkeypatch):
    monkeypatch.chdir(root)
    code, _, err = run_cli("tune", TUNED, "--world-size", "64", "--top", "1", "--core-version", NOT_HELD)
    assert code == 2 and "--core-version" in err and NOT_HELD in err


@pytest.mark.parametrize("spelt", ["0.6.x", "0.6.2rc0", "main branch"])
def test_a_misspelt_release_is_a_usage_error(spelt, run_cli, root):
    code, out, err = run_cli("check", str(root / TUNED), "--bridge-version", spelt)
    assert (code, out) == (2, "") and "--bridge-version must be a release" in err and "Traceback" not in err


def test_the_git_tag_spelling_names_the_same_release(run_cli, root):
    (result,) = _results(run_cli, str(root / TUNED), "--bridge-version", "v" + _newest())
    assert result["release"]["megatron-bridge"] == _newest() and result["target"]["bridge_version"] == _newest()


def test_a_bridge_result_names_its_release_and_where_it_came_from(run_cli, root, tmp_path):
    newest = _newest()
    (default,) = _results(run_cli, str(root / TUNED))
    assert default["release"] == {"megatron-bridge": newest, "megatron-core": _pin(newest),
                                  "sources": {"megatron-bridge": "default", "megatron-core": "default"}}
    (flag,) = _results(run_cli, str(root / TUNED), "--bridge-version", newest)
    assert flag["release"]["sources"] == {"megatron-bridge": "flag", "megatron-core": "pinned"}
    (core,) = _results(run_cli, str(root / TUNED), "--core-version", _pin(newest))
    assert core["release"]["sources"] == {"megatron-bridge": "pinned", "megatron-core": "flag"}
    assert core["release"]["megatron-bridge"] == newest  # the newest release that pins that core
    config = tmp_path / "run.yaml"
    config.write_text(f"# overlap: target bridge-version={newest}\n" + (root / TUNED).read_text(encoding="utf-8"),
                      encoding="utf-8")
    (tmp_path / "pyproject.toml").write_text(f'[tool.overlap]\ncore_version = "{_pin(newest)}"\n', encoding="utf-8")
    (stated,) = _results(run_cli, str(config))
    assert stated["release"]["sources"] == {"megatron-bridge": "directive", "megatron-core": "pyproject"}
    assert [_release_notes(r) for r in (flag, stated)] == [[], []]  # a release the user named needs no note
    assert len(_release_notes(core)) == 1 and "newest Bridge release" in _release_notes(core)[0]


def test_a_megatron_lm_launch_names_its_core_only(run_cli, root):
    (default,) = _results(run_cli, str(root / LAUNCH))
    assert set(default["release"]) == {"megatron-core", "sources"}
    assert default["release"]["sources"] == {"megatron-core": "default"}
    (pinned,) = _results(run_cli, str(root / LAUNCH), "--bridge-version", _newest())
    assert pinned["release"] == {"megatron-core": _pin(_newest()), "sources": {"megatron-core": "pinned"}}


def test_a_nemo_rl_config_is_checked_against_a_bridge_release(run_cli, root):
    path = root / "tests/data/upstream/NVIDIA-NeMo+RL/examples/configs/grpo_math_1B_megatron.yaml"
    (result,) = _results(run_cli, str(path))
    assert result["release"]["megatron-bridge"] == _newest() and "megatron-core" in result["release"]


def test_the_default_note_is_printed_once_for_a_folder(run_cli, root, tmp_path):
    for i in range(5):
        (tmp_path / f"run{i}.yaml").write_text((root / TUNED).read_text(encoding="utf-8"), encoding="utf-8")
    code, out, err = run_cli("check", str(tmp_path))
    assert code in (0, 1), err
    lines = [line for line in out.splitlines() if line.startswith("note: checked against Megatron-Bridge")]
    assert len(lines) == 1 and "--bridge-version" in lines[0] and "files" not in lines[0]  # every file: said bare
    code, out, _ = run_cli("check", str(tmp_path), "--bridge-version", _newest())
    assert "checked against" not in out
    for result in _results(run_cli, str(tmp_path)):  # JSON: on each result, with its kind
        assert len(_release_notes(result)) == 1


def test_a_settings_file_naming_a_release_without_data_is_one_error_for_the_folder(run_cli, root, tmp_path):
    for i in range(4):
        (tmp_path / f"run{i}.yaml").write_text((root / TUNED).read_text(encoding="utf-8"), encoding="utf-8")
    (tmp_path / "pyproject.toml").write_text(f'[tool.overlap]\nbridge_version = "{NOT_HELD}"\n', encoding="utf-8")
    for where in (tmp_path, tmp_path / "run0.yaml"):
        code, out, err = run_cli("check", str(where))
        assert code == 2 and "Traceback" not in err
        (line,) = err.splitlines()  # the folder's files share it: said once (a usage error for a file's own run)
        assert line.endswith(f"{tmp_path / 'pyproject.toml'}: tool.overlap.bridge_version: overlap-cli holds no data "
                             f"for Megatron-Bridge {NOT_HELD} (it mirrors " + ", ".join(_versions()) + "); checking "
                             "against another release's defaults would be a guess")


def _versions():
    from overlap_cli.frameworks.bridge.releases import BRIDGE

    return BRIDGE.versions()


def test_a_directive_naming_a_release_without_data_is_that_files_error(run_cli, root, tmp_path):
    good, bad = tmp_path / "good.yaml", tmp_path / "bad.yaml"
    good.write_text((root / TUNED).read_text(encoding="utf-8"), encoding="utf-8")
    bad.write_text(f"# overlap: target bridge-version={NOT_HELD}\n" + good.read_text(encoding="utf-8"), encoding="utf-8")
    code, out, err = run_cli("check", str(tmp_path), "--format", "json")
    assert code == 2
    results = {r["file"]: r for r in json.loads(out)["results"]}
    assert results[str(good)]["error"] is None and "release" in results[str(good)]
    error = results[str(bad)]["error"]
    assert error["line"] == 1 and error["key"] == "# overlap: target bridge-version" and NOT_HELD in error["message"]
    assert "release" not in results[str(bad)]
    code, out, err = run_cli("check", str(tmp_path))
    assert code == 2 and err.splitlines() == [f"{bad}:1: # overlap: target bridge-version: {error['message']}"]


def test_a_core_only_megatron_lm_holds_is_refused_for_a_bridge_run_and_read_for_a_launch(run_cli, root):
    """A Bridge run names a pair some release is; a core that no Bridge release pins is refused for it."""
    from overlap_cli.frameworks.bridge.releases import pinning
    from overlap_cli.frameworks.megatron_lm.releases import CORE

    cores = [c for c in CORE.versions() if pinning(c) is None]
    code, _, err = run_cli("check", str(root / TUNED), "--core-version", NOT_HELD)
    assert code == 2 and "no Megatron-Bridge release" in err and NOT_HELD in err
    for core in cores:  # a launch-only core: the launch is checked, a Bridge config refused
        (launch,) = _results(run_cli, str(root / LAUNCH), "--core-version", core)
        assert launch["release"]["megatron-core"] == core


def test_a_bridge_release_and_another_core_are_no_pair(run_cli, root):
    code, out, err = run_cli("check", str(root / TUNED), "--bridge-version", _newest(), "--core-version", NOT_HELD)
    assert code == 2 and out == "" and err.count("\n") == 1
    assert f"Megatron-Bridge {_newest()} is mirrored with megatron-core {_pin(_newest())}" in err


def test_diff_compares_one_config_under_two_releases(run_cli, root, monkeypatch):
    monkeypatch.chdir(root)
    code, out, err = run_cli("diff", TUNED, "--bridge-version", _newest(), "--vs-bridge-version", _newest(), "-f", "json")
    assert code == 0, err  # the same release on both sides: nothing differs
    doc = json.loads(out)
    assert doc["old"]["target"]["bridge_version"] == doc["new"]["target"]["bridge_version"] == _newest()
    code, _, err = run_cli("diff", TUNED, "--vs-bridge-version", NOT_HELD)
    assert code == 2 and NOT_HELD in err


def test_detect_checks_against_the_installed_release(site, run_cli, root):  # noqa: F811
    newest = _newest()
    _installed(site, "megatron-bridge", newest)
    _installed(site, "megatron-core", _pin(newest))
    (result,) = _results(run_cli, str(root / TUNED), "--detect")
    assert result["release"]["sources"] == {"megatron-bridge": "detected", "megatron-core": "detected"}
    assert _release_notes(result) == [f"checked against Megatron-Bridge {newest} / megatron-core {_pin(newest)}, "
                                      "installed here (--detect)"]
    assert f"Megatron-Bridge {newest}" in result["target"]["detected"]["found"]


def test_detect_refuses_an_installed_release_without_data_unless_one_is_named(site, run_cli, root):  # noqa: F811
    _installed(site, "megatron-bridge", "0.7.0+067f987")  # a source build of Bridge's main
    _installed(site, "megatron-core", "0.19.2")
    # the installed core is one a Megatron-LM launch could be checked against: the Bridge config's own error
    code, out, err = run_cli("check", str(root / TUNED), "--detect")
    assert code == 2 and err.count("\n") == 1
    assert err.startswith("--detect: bridge_version: Megatron-Bridge 0.7.0+067f987 is installed")
    assert "--bridge-version" in err and all(v in err for v in _versions())
    (named,) = _results(run_cli, str(root / TUNED), "--detect", "--bridge-version", _newest())
    assert named["release"]["sources"]["megatron-bridge"] == "flag"
