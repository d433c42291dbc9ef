"""`overlap fix` loses no comment the user wrote, not even one on a key it removes.

A removed key's line becomes a comment line at the key's indentation: our note saying what was removed
and why, then the user's comment of that line as written. Comments inside a removed block stay (as
comment lines at their own indentation); comment lines above it stay where they are. `--no-comments`
drops only our note. The configs are real (the rules fire on them); `--select` keeps other rules out.
Each config writes the values its fix edits by hand, so the fix is offered as unsafe (a safe fix never
changes a value the user wrote: tests/rules/test_fix_classes.py); `--unsafe-fixes` applies it here, where
what is tested is how the edit is placed.
"""

from __future__ import annotations

import sys
from pathlib import Path

import pytest
import yaml

from bench.mutate import lost_comments
from overlap_cli.fix import text as fixtext
from conftest import ROOT as ROOT_DIR  # noqa: E402

PP202_NOTE = "# overlap: PP202 removed overlap_p2p_comm: true (crashes without VPP)"
UB608_NOTE = "# overlap: UB608 removed tp_comm_overlap_cfg (unused)"


def fix(run_cli, tmp_path: Path, text: str, *args) -> tuple[int, str, str]:
    path = tmp_path / "config.yaml"
    path.write_text(text, encoding="utf-8")
    code, out, err = run_cli("fix", path, "--write", "--unsafe-fixes", *args)
    return code, path.read_text(encoding="utf-8"), out + err


def assert_idempotent(run_cli, tmp_path: Path, text: str, *args) -> None:
    """A second fix changes nothing: the note line is not read as anything to act on."""
    path = tmp_path / "again.yaml"
    path.write_text(text, encoding="utf-8")
    run_cli("fix", path, "--write", *args)
    assert path.read_text(encoding="utf-8") == text
    code, out, _ = run_cli("fix", path, "--diff", *args)
    assert (code, out) == (0, "")


PP202 = """\
model:
  pipeline_model_parallel_size: 4
comm_overlap:
  tp_comm_overlap: false
  overlap_p2p_comm: true   # crashes: non-interleaved schedule
  overlap_grad_reduce: true
"""


def test_eol_comment_of_a_removed_key_stays_on_a_note_line(run_cli, tmp_path):
    code, after, output = fix(run_cli, tmp_path, PP202, "--select", "PP202")
    assert code == 0, output
    assert after == PP202.replace(
        "  overlap_p2p_comm: true   # crashes: non-interleaved schedule\n",
        f"  {PP202_NOTE}  # crashes: non-interleaved schedule\n",
    )
    assert "overlap_p2p_comm" not in yaml.safe_load(after)["comm_overlap"]
    assert_idempotent(run_cli, tmp_path, after, "--select", "PP202")
    assert_idempotent(run_cli, tmp_path, after)  # nor does any other rule read the note line


def test_no_comments_keeps_the_users_comment_and_drops_only_our_note(run_cli, tmp_path):
    code, after, output = fix(run_cli, tmp_path, PP202, "--select", "PP202", "--no-comments")
    assert code == 0, output
    assert after == PP202.replace(
        "  overlap_p2p_comm: true   # crashes: non-interleaved schedule\n", "  # crashes: non-interleaved schedule\n"
    )
    assert_idempotent(run_cli, tmp_path, after, "--select", "PP202", "--no-comments")


def test_removed_key_without_a_comment_leaves_the_note(run_cli, tmp_path):
    # Every removal says in place what went and why; --no-comments leaves nothing.
    before = PP202.replace("   # crashes: non-interleaved schedule", "")
    code, after, output = fix(run_cli, tmp_path, before, "--select", "PP202")
    assert code == 0, output
    assert after == before.replace("  overlap_p2p_comm: true\n", f"  {PP202_NOTE}\n")
    code, plain, _ = fix(run_cli, tmp_path, before, "--select", "PP202", "--no-comments")
    assert plain == before.replace("  overlap_p2p_comm: true\n", "")


def test_comment_lines_above_a_removed_key_get_the_note_after_them(run_cli, tmp_path):
    # Without the note they would seem to describe the next key.
    before = PP202.replace(
        "  overlap_p2p_comm: true   # crashes: non-interleaved schedule\n",
        "  # p2p overlap, for speed\n  overlap_p2p_comm: true\n",
    )
    code, after, output = fix(run_cli, tmp_path, before, "--select", "PP202")
    assert code == 0, output
    assert after == before.replace("  overlap_p2p_comm: true\n", f"  {PP202_NOTE}\n")
    code, plain, _ = fix(run_cli, tmp_path, before, "--select", "PP202", "--no-comments")
    assert plain == before.replace("  overlap_p2p_comm: true\n", "")


UNUSED_CFG = """\
model:
  tensor_model_parallel_size: 1
  sequence_parallel: false
comm_overlap:
  tp_comm_overlap: false
  # tuned on 8xH100 last spring
  tp_comm_overlap_cfg:   # our own preset
    qkv_dgrad:
      method: bulk   # fastest here
      num_sm: 4
    # proj_fprop stays at the default
    fc1_fprop:
      method: ring_exchange
  overlap_grad_reduce: true
"""


UB608_FLAGS = ("--select", "UB608", "--unsafe-fixes", "--severity-threshold", "info", "--world-size", "8")


def test_comments_inside_and_above_a_removed_block_survive(run_cli, tmp_path):
    code, after, output = fix(run_cli, tmp_path, UNUSED_CFG, *UB608_FLAGS)
    assert code == 0, output
    assert after == """\
model:
  tensor_model_parallel_size: 1
  sequence_parallel: false
comm_overlap:
  tp_comm_overlap: false
  # tuned on 8xH100 last spring
  %s  # our own preset
      # fastest here
    # proj_fprop stays at the default
  overlap_grad_reduce: true
""" % UB608_NOTE
    assert yaml.safe_load(after)["comm_overlap"] == {"tp_comm_overlap": False, "overlap_grad_reduce": True}
    assert_idempotent(run_cli, tmp_path, after, *UB608_FLAGS)


def test_comments_of_a_removed_block_with_no_comments(run_cli, tmp_path):
    code, after, output = fix(run_cli, tmp_path, UNUSED_CFG, *UB608_FLAGS, "--no-comments")
    assert code == 0, output
    assert "# overlap:" not in after
    assert not lost_comments(UNUSED_CFG, after)
    assert "  # tuned on 8xH100 last spring\n  # our own preset\n      # fastest here\n    # proj_fprop stays at the default\n" in after
    assert_idempotent(run_cli, tmp_path, after, *UB608_FLAGS, "--no-comments")


def test_removal_in_a_flow_mapping_keeps_its_comment(run_cli, tmp_path):
    before = "model: {pipeline_model_parallel_size: 4}\ncomm_overlap: {tp_comm_overlap: false, overlap_p2p_comm: true}  # p2p for speed\n"
    code, after, output = fix(run_cli, tmp_path, before, "--select", "PP202")
    assert code == 0, output
    lines = after.splitlines()
    assert lines[1].startswith("comm_overlap: {tp_comm_overlap: false}") and lines[1].endswith("  # p2p for speed")
    assert yaml.safe_load(after)["comm_overlap"] == {"tp_comm_overlap": False}
    assert_idempotent(run_cli, tmp_path, after, "--select", "PP202")


def test_moved_key_says_where_it_went(run_cli, tmp_path):
    before = "mixed_precision: bf16_mixed\nddp:  # tuned by hand\n  grad_reduce_in_fp32: false  # bf16 reduction on purpose\n"
    code, after, output = fix(run_cli, tmp_path, before, "--select", "MP401", "--unsafe-fixes")
    assert code == 0, output
    assert after.startswith("mixed_precision:  # overlap: MP401 mixed precision overwrites ddp\n")
    assert after.endswith(
        "ddp: {}  # tuned by hand\n"
        "  # overlap: MP401 moved grad_reduce_in_fp32: false to mixed_precision (mixed precision overwrites ddp)"
        "  # bf16 reduction on purpose\n"
    ), after
    data = yaml.safe_load(after)
    assert data["ddp"] == {} and data["mixed_precision"]["grad_reduce_in_fp32"] is False
    assert_idempotent(run_cli, tmp_path, after, "--unsafe-fixes")


def test_emptied_section_keeps_the_comments_before_its_first_key(run_cli, tmp_path):
    # ruamel keeps these on the mapping itself and would write them between `ddp:` and `{}`.
    before = "mixed_precision: bf16_mixed\nddp:\n  # why fp32 is off\n  grad_reduce_in_fp32: false\noptimizer: {}\n"
    code, after, output = fix(run_cli, tmp_path, before, "--select", "MP401", "--unsafe-fixes", "--no-comments")
    assert code == 0, output
    assert "ddp: {}\n  # why fp32 is off\noptimizer: {}\n" in after, after


def test_replaced_block_value_keeps_the_comments_of_its_lines(run_cli, tmp_path):
    before = """\
model:
  num_layers: 8
  expert_model_parallel_size: 2
  num_moe_experts: 8
  moe_token_dispatcher_type: alltoall
  recompute_granularity: selective
  recompute_modules:   # what we recompute
    - core_attn   # cheap
    # moe is costly
    - moe
  bf16: true
comm_overlap:
  tp_comm_overlap: false
  overlap_moe_expert_parallel_comm: true
"""
    args = ("--select", "EP701", "--unsafe-fixes", "--torch-version", "2.6.0")
    code, after, output = fix(run_cli, tmp_path, before, *args)
    assert yaml.safe_load(after)["model"]["recompute_modules"] == ["core_attn"], output
    assert not lost_comments(before, after)
    assert "  recompute_modules:   # what we recompute  # overlap: EP701 " in after
    assert_idempotent(run_cli, tmp_path, after, *args)


def test_a_suppression_on_a_removed_line_does_not_move_onto_the_next_key(run_cli, tmp_path):
    # Alone on a line, `# overlap: ignore[CFG003]` would cover the next key (the typo below); after our
    # note it covers nothing, even with --no-comments.
    before = PP202.replace("   # crashes: non-interleaved schedule", "  # overlap: ignore[CFG003]").replace(
        "  overlap_grad_reduce: true\n", "  overlap_grad_reduc: true\n"
    )
    code, after, output = fix(run_cli, tmp_path, before, "--select", "PP202", "--no-comments")
    assert f"  {PP202_NOTE}  # overlap: ignore[CFG003]\n" in after, output
    path = tmp_path / "config.yaml"
    _, out, _ = run_cli("check", path, "--select", "CFG003")
    assert "CFG003" in out


def test_a_comment_written_twice_is_kept_twice(run_cli, tmp_path):
    before = PP202.replace("  overlap_grad_reduce: true\n", "  overlap_grad_reduce: true   # crashes: non-interleaved schedule\n")
    code, after, output = fix(run_cli, tmp_path, before, "--select", "PP202")
    assert code == 0, output
    assert after.count("# crashes: non-interleaved schedule") == 2
    assert not lost_comments(before, after)


def test_user_part_reads_the_note_line():
    assert fixtext.user_part(f"{PP202_NOTE}  # crashes: non-interleaved schedule") == "# crashes: non-interleaved schedule"
    assert fixtext.user_part(PP202_NOTE) == ""
    assert fixtext.user_part("# mine  # overlap: TP102 TP overlap needs sequence parallelism") == "# mine"
    assert fixtext.user_part("# overlap: ignore[PP202]") == "# overlap: ignore[PP202]"


# --- every example, a comment on every line ----------------------------------------------------

ROOT = ROOT_DIR
CONFIGS = sorted((ROOT / "examples").glob("*.yaml")) + sorted(p for p in (ROOT / "tests" / "cases").glob("*.yaml") if not p.name.endswith(".fixed.yaml"))


def _commented(text: str) -> str:
    """``text`` with a comment line above every line of YAML and a comment at the end of it."""
    out = []
    for i, line in enumerate(text.split("\n")):
        if line.strip() and not line.lstrip().startswith("#"):
            indent = line[: len(line) - len(line.lstrip())]
            out += [f"{indent}# above {i}", f"{line}  # end of {i}"]
        else:
            out.append(line)
    return "\n".join(out)


@pytest.mark.parametrize("path", CONFIGS, ids=lambda p: p.name)
def test_every_comment_survives_every_fix(path):
    from overlap_cli.cli.check import target_from_options
    from overlap_cli.cli.options import TARGET, options
    from overlap_cli.fix.loop import fix_text

    sys.path.insert(0, str(ROOT / "tests"))
    from caselib import read_header

    args = read_header(path)["args"] if path.parent.name == "cases" else []
    world = int(args[args.index("--world-size") + 1]) if "--world-size" in args else None
    target = target_from_options(options(TARGET, world_size=world, te=False if "--no-te" in args else None), str(path))
    text = _commented(path.read_text(encoding="utf-8"))
    for notes in (True, False):
        out = fix_text(str(path), text, target, unsafe=True, comments=notes)
        if out.error is not None or not out.changed:
            continue
        assert out.problem is None, out.problem
        assert not lost_comments(text, out.fixed)
        assert fix_text(str(path), out.fixed, target, unsafe=True, comments=notes).fixed == out.fixed
