"""The engine's CheckedFile (the serialised FileResult plus the resolved view, declared), its isolation of
internal errors per file, and the runner: the same results, in input order, with one job or several."""

import json
import multiprocessing
import shutil

import pytest

from overlap_cli.check.engine import CheckedFile, check, check_file
from overlap_cli.results import FileResult
from overlap_cli.check.runner import check_files, check_files_with_views, effective_jobs
from overlap_cli.frameworks.bridge.view import Resolved
from overlap_cli.launch_profile.profile import Target

GOOD = "model:\n  tensor_model_parallel_size: 4\n  sequence_parallel: false\ncomm_overlap:\n  tp_comm_overlap: true\n"


def test_check_returns_the_result_and_its_view(tmp_path):
    cfg = tmp_path / "good.yaml"
    cfg.write_text(GOOD)
    checked = check(str(cfg), Target())
    assert isinstance(checked, CheckedFile) and isinstance(checked.result, FileResult)
    assert isinstance(checked.view, Resolved)
    assert checked.view.cfg.text == GOOD and checked.view.tp == 4
    assert "_view" not in vars(checked.result)  # nothing hangs on the serialised result
    assert checked.result == check_file(str(cfg), Target())
    assert any(f.code == "TP102" for f in checked.result.findings)  # TP overlap forced off: no SP


def test_an_input_error_has_no_view(tmp_path):
    cfg = tmp_path / "bad.yaml"
    cfg.write_text("model:\n  tensor_model_parallel_size: four\n")
    checked = check(str(cfg), Target())
    assert checked.view is None
    assert checked.result.error is not None and not checked.result.error.internal


def _crash_on_marker(original):
    """``original`` unless the view's model section holds ``crash_here``: then a bug's exception."""

    def method(view, *args, **kwargs):
        if "crash_here" in (view.cfg.data.get("model") or {}):
            raise ZeroDivisionError("a bug")
        return original(view, *args, **kwargs)

    return method


def _folder(tmp_path, n=40, crash_at=5):  # 40 files: enough for two workers (see effective_jobs)
    folder = tmp_path / "configs"
    folder.mkdir()
    files = []
    for i in range(n):
        text = GOOD.replace("4", str(2 + i % 3 * 2))
        if i == crash_at:
            text = text.replace("model:\n", "model:\n  crash_here: 1\n")
        path = folder / f"cfg_{i:02d}.yaml"
        path.write_text(text)
        files.append(str(path))
    return files


# With two jobs the patched method must reach the workers: forked ones inherit it.
@pytest.mark.parametrize("jobs", [1, pytest.param(2, marks=pytest.mark.skipif(
    "fork" not in multiprocessing.get_all_start_methods(), reason="workers are not forked here"))])
def test_a_rule_that_raises_fails_only_its_file(tmp_path, monkeypatch, jobs):
    # Resolved.get_final is read by the rules only (the resolver fills ``final``), so the raise happens
    # inside a rule's check and the engine names that rule.
    monkeypatch.setattr(Resolved, "get_final", _crash_on_marker(Resolved.get_final))
    files = _folder(tmp_path)
    assert effective_jobs(jobs, len(files)) == jobs
    results = check_files(files, Target(), jobs=jobs)
    assert [r.file for r in results] == files
    crashed = results[5]
    assert crashed.error is not None and crashed.error.internal and crashed.error.rule
    assert "ZeroDivisionError: a bug" in crashed.error.message
    assert crashed.effective is None and crashed.findings == []
    doc = crashed.to_json()
    assert doc["error"]["internal"] is True and doc["error"]["rule"] == crashed.error.rule
    assert all(r.error is None and r.findings for i, r in enumerate(results) if i != 5)


def test_a_raise_outside_the_rules_is_an_internal_error_without_a_rule(tmp_path, monkeypatch):
    from overlap_cli.frameworks.bridge import launch_env

    monkeypatch.setattr(launch_env, "needs", _crash_on_marker(launch_env.needs))
    files = _folder(tmp_path, n=3, crash_at=1)
    checked = [check(f, Target()) for f in files]
    assert checked[1].view is None
    assert checked[1].result.error.internal and checked[1].result.error.rule is None
    assert checked[0].result.error is None and checked[2].result.error is None


def test_jobs_give_the_same_results_in_input_order(tmp_path, root):
    folder = tmp_path / "many"
    folder.mkdir()
    sources = sorted((root / "examples").glob("*.yaml")) + sorted((root / "examples" / "bridge").glob("*.yaml"))
    files = []
    for i in range(40):
        src = sources[i % len(sources)]
        dst = folder / f"{39 - i:02d}_{src.name}"  # names do not sort in input order
        shutil.copy(src, dst)
        files.append(str(dst))
    assert effective_jobs(2, len(files)) == 2
    seen = []
    one = check_files(files, Target(world_size=64), jobs=1)
    two = check_files(files, Target(world_size=64), jobs=2, on_result=lambda r: seen.append(r.file))
    assert [r.file for r in two] == files and seen == files
    assert [json.dumps(r.to_json(), sort_keys=True, default=str) for r in one] == [
        json.dumps(r.to_json(), sort_keys=True, default=str) for r in two
    ]
    assert sum(len(r.findings) for r in two) > 20


def test_views_are_kept_only_when_asked(tmp_path):
    files = _folder(tmp_path, n=4, crash_at=-1)
    kept = check_files_with_views(files, Target())
    assert [c.result.file for c in kept] == files
    assert all(isinstance(c.view, Resolved) for c in kept)
    assert [c.result for c in kept] == check_files(files, Target())


def test_the_launch_environment_plan_is_computed_once_per_view(tmp_path):
    from overlap_cli.frameworks.bridge.launch_env import plan

    cfg = tmp_path / "env.yaml"
    cfg.write_text(GOOD + "env_vars:\n  CUDA_DEVICE_MAX_CONNECTIONS: '8'\n")
    view = check(str(cfg), Target()).view
    cached = view.launch_env_plan  # the engine's effective entries already asked for it
    assert cached is not None and any(e.name == "CUDA_DEVICE_MAX_CONNECTIONS" for e in cached)
    assert plan(view, all_variables=True) == cached and view.launch_env_plan is cached
    fresh = check(str(cfg), Target()).view
    fresh.launch_env_plan = None
    assert fresh == view  # the cache takes no part in comparing views
