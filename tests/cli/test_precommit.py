"""The pre-commit hooks, run by the real pre-commit in throw-away git repositories.

pre-commit installs a hook repository from a git commit, so the test first copies this checkout's
working tree (tracked and untracked-but-not-ignored files: what is on disk, not what HEAD says) into a
temporary repository and commits it there. A second repository plays the user's project: its
.pre-commit-config.yaml points at the first by path, `pre-commit install` puts the hook in place, and
real `git commit`s run it. Installing the hook environment needs the package index (marked ``network``;
deselect with ``-m 'not network'``).
"""

from __future__ import annotations

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
HOOK_IDS = ("overlap-check", "overlap-fix")


def test_hooks_file_is_what_pre_commit_expects():
    hooks = yaml.safe_load((ROOT / ".pre-commit-hooks.yaml").read_text())
    by_id = {h["id"]: h for h in hooks}
    assert set(by_id) == set(HOOK_IDS)
    assert by_id["overlap-check"]["entry"].startswith("overlap check")
    assert by_id["overlap-fix"]["entry"].startswith("overlap fix --write")
    for h in hooks:
        assert h["language"] == "python" and h["types"] == ["yaml"] and h["name"]
        # pre-commit passes every staged YAML file; the entry itself must keep non-configs out.
        assert "--configs-only" in h["entry"]


@pytest.mark.parametrize(
    "path, excluded",
    [
        (".github/workflows/ci.yml", True),
        (".pre-commit-config.yaml", True),
        ("deploy/docker-compose.yml", True),
        ("compose.yaml", True),
        ("charts/trainer/templates/job.yaml", True),
        ("mkdocs.yml", True),
        ("configs/llama3_70b.yaml", False),
        ("recipes/pretrain/deepseek_v3.yml", False),
    ],
)
def test_exclude_default(path, excluded):
    import re

    hooks = yaml.safe_load((ROOT / ".pre-commit-hooks.yaml").read_text())
    for h in hooks:
        assert bool(re.search(h["exclude"], path)) == excluded, (h["id"], path)


def test_check_entry_skips_non_configs_it_is_handed(run_cli, tmp_path):
    """What pre-commit does: hand over a workflow file by name next to a config."""
    workflow = tmp_path / "ci.yaml"
    workflow.write_text("on: [push]\njobs:\n  test:\n    runs-on: ubuntu-latest\n")
    code, out, err = run_cli("check", "--configs-only", "--format", "concise", workflow, EXAMPLES / "llama3_70b_tuned.yaml")
    assert code == 0, out + err
    assert "skipped" in err and str(workflow) in err
    assert "1 file(s)" in out


# ---------------------------------------------------------------------------------------------
# The real thing
# ---------------------------------------------------------------------------------------------


def _git_env(home: Path) -> dict:
    env = dict(os.environ)
    (home / "gitconfig").write_text("")
    env.update(
        GIT_CONFIG_GLOBAL=str(home / "gitconfig"),  # no user hooksPath, signing or templates
        GIT_CONFIG_NOSYSTEM="1",
        GIT_AUTHOR_NAME="overlap test",
        GIT_AUTHOR_EMAIL="overlap@example.invalid",
        GIT_COMMITTER_NAME="overlap test",
        GIT_COMMITTER_EMAIL="overlap@example.invalid",
        PRE_COMMIT_HOME=str(home / "pre-commit-cache"),
        PRE_COMMIT_COLOR="never",
        NO_COLOR="1",
    )
    env.pop("GITHUB_ACTIONS", None)  # the hooks' output format must not depend on where the suite runs
    return env


def _run(cmd, cwd, env, check=True, timeout=900):
    proc = subprocess.run(cmd, cwd=cwd, env=env, capture_output=True, text=True, timeout=timeout)
    if check and proc.returncode != 0:
        raise AssertionError(f"{cmd} failed ({proc.returncode}):\n{proc.stdout}\n{proc.stderr}")
    return proc


def _snapshot_of_working_tree(dest: Path, env: dict) -> str:
    """Copy what is on disk (tracked + untracked, minus ignored) into a new repo; return its commit."""
    listed = subprocess.run(
        ["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"],
        cwd=ROOT, capture_output=True, text=True, check=True,
    ).stdout.split("\0")
    dest.mkdir()
    for rel in filter(None, listed):
        src = ROOT / rel
        if not src.is_file():  # deleted in the working tree, or a folder entry
            continue
        (dest / rel).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(src, dest / rel)
    _run(["git", "init", "-q"], dest, env)
    _run(["git", "add", "-A"], dest, env)
    _run(["git", "commit", "-q", "--no-verify", "-m", "snapshot of the working tree"], dest, env)
    return _run(["git", "rev-parse", "HEAD"], dest, env).stdout.strip()


@pytest.fixture(scope="module")
def hook_repo(tmp_path_factory):
    if shutil.which("git") is None:
        pytest.skip("git is not installed")
    import importlib.util

    if importlib.util.find_spec("pre_commit") is None:
        pytest.fail("pre-commit is not installed: it is part of the `test` extra in pyproject.toml")
    home = tmp_path_factory.mktemp("precommit")
    env = _git_env(home)
    rev = _snapshot_of_working_tree(home / "overlap-cli", env)
    return home, env, rev


def _project(hook_repo, name: str, hooks) -> tuple[Path, dict]:
    home, env, rev = hook_repo
    project = home / name
    project.mkdir()
    _run(["git", "init", "-q"], project, env)
    config = {"repos": [{"repo": str(home / "overlap-cli"), "rev": rev, "hooks": [{"id": h} for h in hooks]}]}
    (project / ".pre-commit-config.yaml").write_text(yaml.safe_dump(config, sort_keys=False))
    _run([sys.executable, "-m", "pre_commit", "install"], project, env)
    # A workflow file rides along in every commit: the hooks must leave it alone.
    (project / ".github" / "workflows").mkdir(parents=True)
    (project / ".github" / "workflows" / "ci.yml").write_text("on: [push]\n")
    (project / "docker-compose.yml").write_text("services:\n  app:\n    image: busybox\n")
    _run(["git", "add", "-A"], project, env)
    _run(["git", "commit", "-q", "-m", "tooling"], project, env)
    return project, env


def _commit(project: Path, env: dict, files, message: str):
    for f in files:
        _run(["git", "add", f], project, env)
    return _run(["git", "commit", "-m", message], project, env, check=False)


@pytest.mark.network
def test_commit_with_bad_config_fails_and_good_config_passes(hook_repo):
    project, env = _project(hook_repo, "project-check", ["overlap-check"])
    (project / "configs").mkdir()

    shutil.copy(EXAMPLES / "llama3_70b_tuned.yaml", project / "configs" / "tuned.yaml")
    good = _commit(project, env, ["configs/tuned.yaml"], "a tuned config")
    assert good.returncode == 0, good.stdout + good.stderr
    assert "Passed" in good.stdout + good.stderr

    shutil.copy(EXAMPLES / "tp_overlap_without_sp.yaml", project / "configs" / "no_sp.yaml")
    bad = _commit(project, env, ["configs/no_sp.yaml"], "TP overlap without SP")
    output = bad.stdout + bad.stderr
    assert bad.returncode != 0, output
    assert "Failed" in output
    assert "configs/no_sp.yaml:8:3: TP102" in output  # the finding, located, in the hook's output
    head = _run(["git", "log", "--format=%s", "-1"], project, env).stdout.strip()
    assert head == "a tuned config"  # the bad commit did not happen


@pytest.mark.network
def test_fix_hook_rewrites_then_passes(hook_repo):
    project, env = _project(hook_repo, "project-fix", ["overlap-fix", "overlap-check"])
    (project / "configs").mkdir()
    # sequence_parallel: false in a model section Bridge serialised (_target_) is Bridge's value, so the
    # hook's safe fix turns it on (the example that writes it by hand gets that fix only with --unsafe-fixes).
    shutil.copy(EXAMPLES.parent / "tests" / "data" / "tp102_dumped_model.yaml", project / "configs" / "no_sp.yaml")

    first = _commit(project, env, ["configs/no_sp.yaml"], "TP overlap without SP")
    output = first.stdout + first.stderr
    assert first.returncode != 0, output
    assert "files were modified by this hook" in output
    fixed = yaml.safe_load((project / "configs" / "no_sp.yaml").read_text())
    assert fixed["model"]["sequence_parallel"] is True
    assert "# userbuffers overlap needs this" in (project / "configs" / "no_sp.yaml").read_text()  # comment kept

    second = _commit(project, env, ["configs/no_sp.yaml"], "TP overlap without SP, fixed")
    assert second.returncode == 0, second.stdout + second.stderr
    assert (project / ".github" / "workflows" / "ci.yml").read_text() == "on: [push]\n"
