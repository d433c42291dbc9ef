"""`overlap fix` on the command line: what it prints, what it writes, and its exit codes."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from conftest import ROOT as ROOT_DIR  # noqa: E402

ROOT = ROOT_DIR
EXAMPLES = ROOT / "examples"
CASES = ROOT / "tests" / "cases"


def copy(src: Path, tmp_path: Path, name: str = None) -> Path:
    dst = tmp_path / (name or src.name)
    shutil.copyfile(src, dst)
    return dst


# examples/tp_overlap_without_sp.yaml with its model section as Bridge serialises it (``_target_``): there
# sequence_parallel: false is Bridge's value, not the user's, so TP102's fix (turn it on) is safe.
DUMPED_MODEL = (ROOT / "tests" / "data" / "tp102_dumped_model.yaml").read_text(encoding="utf-8")


def dumped_model(tmp_path: Path, name: str = "dumped_model.yaml") -> Path:
    path = tmp_path / name
    path.write_text(DUMPED_MODEL, encoding="utf-8")
    return path


def test_dry_run_lists_fixes_and_writes_nothing(run_cli, tmp_path):
    path = dumped_model(tmp_path)
    code, out, err = run_cli("fix", path)
    assert code == 1
    assert f"{path}: " in out and "would be applied" in out
    assert "TP102 [safe] line 7: set model.sequence_parallel: true" in out
    assert path.read_text(encoding="utf-8") == DUMPED_MODEL
    # The user's own overlap_p2p_comm: true crashes without VPP: its removal is listed only with
    # --unsafe-fixes, naming where the user wrote it; the dry run without it says what it holds back.
    path = copy(EXAMPLES / "pp_without_vpp.yaml", tmp_path)
    code, out, err = run_cli("fix", path)
    assert (code, out) == (0, f"{path}: 1 more with --unsafe-fixes: PP202\n")
    code, out, err = run_cli("fix", path, "--unsafe-fixes")
    assert code == 1 and "would be applied" in out
    assert ("PP202 [unsafe] line 17: remove comm_overlap.overlap_p2p_comm (crashes without VPP) "
            f"(unsafe here: you wrote comm_overlap.overlap_p2p_comm: true at {path}:17)") in out
    assert "PP201" not in out  # info: not fixed (nor offered) below --severity-threshold info
    code, out, _ = run_cli("fix", path, "--severity-threshold", "info")
    assert "more with --unsafe-fixes: ENV505, ENV506, PP202" in out
    assert path.read_bytes() == (EXAMPLES / "pp_without_vpp.yaml").read_bytes()


def test_dry_run_on_a_file_with_nothing_to_fix_exits_0(run_cli, tmp_path):
    path = copy(CASES / "tp105_sp_tp1.yaml", tmp_path)
    code, out, _ = run_cli("fix", path, "--world-size", "8")
    assert code == 0 and "nothing to fix" in out


def test_diff_shows_the_minimal_change_with_comments(run_cli, tmp_path):
    path = dumped_model(tmp_path)
    code, out, _ = run_cli("fix", path, "--diff", "--select", "TP102")
    assert code == 1
    lines = out.splitlines()
    assert lines[:2] == [f"--- {path}", f"+++ {path}"]
    changed = [l for l in lines[2:] if l[:1] in "+-" and not l.startswith(("+++", "---"))]
    assert changed == [
        "-  sequence_parallel: false   # userbuffers overlap needs this",
        "+  sequence_parallel: true    # userbuffers overlap needs this  # overlap: TP102 TP overlap needs sequence parallelism",
    ]
    assert path.read_text(encoding="utf-8") == DUMPED_MODEL


def test_write_then_nothing_left(run_cli, tmp_path):
    path = dumped_model(tmp_path)
    code, out, _ = run_cli("fix", path, "--write")
    assert code == 0
    assert out.startswith(f"fixed {path}: TP102")
    assert "0 warning/error finding(s) remain" in out
    assert run_cli("fix", path, "--diff") == (0, "", "")


def test_write_exits_1_when_unfixable_warnings_remain(run_cli, tmp_path):
    # TP overlap without Transformer Engine on the target: nothing in the file can fix that (TP103).
    path = copy(CASES / "tp103_no_te.yaml", tmp_path)
    code, out, _ = run_cli("fix", path, "--write", "--world-size", "8", "--no-te")
    assert code == 1
    assert ": TP103 warning:" in out


def test_write_exits_1_when_only_unsafe_fixes_would_help(run_cli, tmp_path):
    path = copy(CASES / "pp204_defer_no_limit.yaml", tmp_path)
    code, out, _ = run_cli("fix", path, "--write")
    assert code == 1 and "PP204 error" in out and "(fix with --unsafe-fixes)" in out
    code, out, _ = run_cli("fix", path, "--write", "--unsafe-fixes")
    assert code == 0, out


def test_dotlist_overrides_are_a_usage_error(run_cli, tmp_path):
    path = copy(EXAMPLES / "tp_overlap_without_sp.yaml", tmp_path)
    code, out, err = run_cli("fix", path, "model.sequence_parallel=true", "--write")
    assert code == 2
    assert "overrides" in err and "model.sequence_parallel=true" in err
    assert path.read_bytes() == (EXAMPLES / "tp_overlap_without_sp.yaml").read_bytes()


def test_write_and_diff_exclude_each_other(run_cli, tmp_path):
    path = copy(EXAMPLES / "tp_overlap_without_sp.yaml", tmp_path)
    code, _, err = run_cli("fix", path, "--write", "--diff")
    assert code == 2 and "exclude each other" in err


def test_input_errors_exit_2_and_other_files_are_still_fixed(run_cli, tmp_path):
    good = dumped_model(tmp_path)
    bad = copy(EXAMPLES / "invalid_parallel_size.yaml", tmp_path)
    code, out, err = run_cli("fix", bad, good, tmp_path / "missing.yaml", "--write")
    assert code == 2
    assert "invalid_parallel_size.yaml:4:3: model.tensor_model_parallel_size:" in err and "not edited" in err
    assert "missing.yaml: file not found" in err
    assert bad.read_bytes() == (EXAMPLES / "invalid_parallel_size.yaml").read_bytes()
    assert "sequence_parallel: true" in good.read_text()


def test_no_file_is_a_usage_error(run_cli):
    code, _, _ = run_cli("fix")
    assert code == 2


# --- rounds, cycles and the cap: driven by rules registered for the test ------------------------


@pytest.fixture
def extra_rules():
    """Register throw-away rules (codes ZZ9xx) for one test, and take them out again afterwards."""
    from overlap_cli import rules
    from overlap_cli.rules import registry

    rules.all_rules()
    added = []

    def register(code, check):
        registry.rule(code, f"test-{code.lower()}", "warning", "test rule")(check)
        added.append(code)

    yield register
    for code in added:
        registry.RULES.pop(code, None)


def _flip(key: str, to):
    from overlap_cli.results import Edit, Fix
    from overlap_cli.rules.common import finding

    def check(view):
        section, name = key.split(".")
        if view.cfg.get((section, name)) is not to:
            yield finding(view, "", "warning", f"{key} is not {to}", key, Fix("safe", f"set {key} (test)", (Edit("set", key, to),)))

    return check


def test_fixes_that_undo_each_other_are_reported_not_looped(extra_rules, run_cli, tmp_path):
    extra_rules("ZZ901", _flip("train.flag", True))
    extra_rules("ZZ902", _flip("train.flag", False))
    path = tmp_path / "c.yaml"
    path.write_text("train:\n  flag: false\n")
    # The file writes train.flag itself, so the test rules' fixes are offered as unsafe (a safe fix never
    # changes a value the user wrote): --unsafe-fixes applies them; what is tested is the loop.
    code, out, err = run_cli("fix", path, "--write", "--unsafe-fixes", "--select", "ZZ")
    assert "undo each other" in err and "left untouched" in err
    assert path.read_text() == "train:\n  flag: false\n"
    assert code == 1


def test_rounds_are_capped(extra_rules, run_cli, tmp_path):
    from overlap_cli.fix.loop import MAX_ROUNDS
    from overlap_cli.results import Edit, Fix
    from overlap_cli.rules.common import finding

    def count_up(view):  # never satisfied: every round sets a new value
        n = view.cfg.get(("train", "n"))
        yield finding(view, "", "warning", "n", "train.n", Fix("safe", "bump (test)", (Edit("set", "train.n", n + 1),)))

    extra_rules("ZZ903", count_up)
    path = tmp_path / "c.yaml"
    path.write_text("train:\n  n: 0\n")
    code, out, err = run_cli("fix", path, "--write", "--unsafe-fixes", "--select", "ZZ903")  # train.n is the file's
    assert f"did not settle after {MAX_ROUNDS} rounds" in err
    assert path.read_text() == "train:\n  n: 0\n"


def test_a_fix_that_needs_another_round_gets_it(extra_rules, run_cli, tmp_path):
    """The second rule only fires once the first one's fix is in: both land, with their notes."""
    from overlap_cli.results import Edit, Fix
    from overlap_cli.rules.common import finding

    def first(view):
        if view.cfg.get(("train", "a")) is not True:
            yield finding(view, "", "warning", "a", "train.a", Fix("safe", "set a (first reason)", (Edit("set", "train.a", True),)))

    def second(view):
        if view.cfg.get(("train", "a")) is True and view.cfg.get(("train", "b")) is None:
            yield finding(view, "", "warning", "b", "train", Fix("safe", "add b (second reason)", (Edit("add", "train.b", 1),)))

    extra_rules("ZZ904", first)
    extra_rules("ZZ905", second)
    path = tmp_path / "c.yaml"
    path.write_text("train:\n  a: false\n")
    code, out, err = run_cli("fix", path, "--write", "--unsafe-fixes", "--select", "ZZ904,ZZ905")  # train.a is the file's
    assert path.read_text() == "train:\n  a: true  # overlap: ZZ904 first reason\n  b: 1  # overlap: ZZ905 second reason\n"
    assert code == 0, out + err


def test_folder_run_on_a_terminal_shows_a_fixing_bar_and_piped_runs_do_not(tmp_path):
    """The bar goes to stderr only when stderr is a terminal (here a pseudo-terminal)."""
    import os
    import pty
    import subprocess
    import sys

    for i in range(8):  # progress_bar.SHOW_FROM
        dumped_model(tmp_path, f"c{i}.yaml")
    cmd = [sys.executable, "-m", "overlap_cli", "fix", *sorted(str(p) for p in tmp_path.glob("*.yaml"))]
    env = {**os.environ, "COLUMNS": "100", "TERM": "xterm"}
    env.pop("NO_COLOR", None)
    leader, follower = pty.openpty()
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=follower, env=env)
    os.close(follower)
    seen = b""
    while True:
        try:
            chunk = os.read(leader, 4096)
        except OSError:
            break
        if not chunk:
            break
        seen += chunk
    out = proc.communicate()[0].decode()
    os.close(leader)
    assert proc.returncode == 1 and out.count("would be applied") == 8
    assert b"fixing" in seen
    piped = subprocess.run(cmd, capture_output=True, text=True, env=env)
    assert "fixing" not in piped.stderr and piped.stdout == out


def test_listing_names_every_edit_a_fix_makes(run_cli, tmp_path):
    """CFG005 on ddp.overlap_param_gather also removes optimizer.overlap_param_gather: the listing says so,
    and the diff shows nothing the listing does not name. (At DP = 1 the finding is info, hence the
    threshold.)"""
    path = tmp_path / "c.yaml"
    path.write_text(
        "model: {tensor_model_parallel_size: 8, sequence_parallel: true}\n"
        "ddp:\n  use_distributed_optimizer: true\n  overlap_param_gather: true\n"
        "optimizer:\n  use_distributed_optimizer: true\n  overlap_param_gather: true\n"
        "comm_overlap:\n  tp_comm_overlap: false\n"
    )
    code, out, _ = run_cli("fix", path, "--world-size", "8", "--unsafe-fixes", "--select", "CFG005", "--severity-threshold", "info")
    assert code == 1, out
    assert "set comm_overlap.overlap_param_gather: true" in out
    assert "remove ddp.overlap_param_gather" in out and "remove optimizer.overlap_param_gather" in out
    _, diff, _ = run_cli("fix", path, "--world-size", "8", "--unsafe-fixes", "--select", "CFG005", "--severity-threshold", "info", "--diff")
    removed = [ln[1:].strip() for ln in diff.splitlines() if ln.startswith("-") and not ln.startswith("---")]
    assert removed == ["overlap_param_gather: true", "overlap_param_gather: true"], diff
    # both held the value that now lives in comm_overlap: each removal's note says where it went
    assert diff.count("# overlap: CFG005 moved overlap_param_gather: true to comm_overlap") == 2, diff


def test_diff_names_the_fixes_left_for_unsafe_fixes_on_stderr(run_cli, tmp_path):
    path = dumped_model(tmp_path)
    code, out, err = run_cli("fix", "--diff", path, "--severity-threshold", "info")
    assert out.startswith("---") and "more with --unsafe-fixes" not in out  # stdout stays a patch
    assert f"{path}: 2 more with --unsafe-fixes: ENV505, ENV506" in err
    path = copy(EXAMPLES / "pp_without_vpp.yaml", tmp_path)  # only unsafe fixes: no patch at all
    code, out, err = run_cli("fix", "--diff", path, "--severity-threshold", "info")
    assert (code, out) == (0, "") and f"{path}: 3 more with --unsafe-fixes: ENV505, ENV506, PP202" in err
