"""`overlap fix` keeps the file's own layout: comments, key order, quoting, indentation, blank lines, list
offsets, flow collections, null spellings, line ends and byte-order mark survive byte for byte outside
the edited keys. Each edited key gets `# overlap: CODE reason`, after the user's own comment.

The configs are real (the rules fire on them); `--select` limits a run to the rule under test, so the
launch-environment fixes (ENV5xx) do not add lines these tests do not look at. Each config writes the
values its fix edits by hand, so the fix is offered as unsafe (a safe fix never changes a value the user
wrote); `--unsafe-fixes` applies it here, where what is tested is how the edit is placed.
"""

from __future__ import annotations

import difflib
from pathlib import Path

import pytest
import yaml

NOTE_TP102 = "# overlap: TP102 TP overlap needs sequence parallelism"


def fix(run_cli, tmp_path: Path, text, *args, name="config.yaml", binary=False):
    path = tmp_path / name
    if binary:
        path.write_bytes(text)
    else:
        path.write_bytes(text.encode("utf-8"))
    code, out, err = run_cli("fix", path, "--write", "--unsafe-fixes", *args)
    return code, path.read_bytes(), out + err


def changed_lines(before: str, after: str) -> tuple[list, list]:
    """(original lines replaced or deleted, new lines) between two texts."""
    a, b = before.splitlines(True), after.splitlines(True)
    gone, new = [], []
    for tag, i1, i2, j1, j2 in difflib.SequenceMatcher(None, a, b, autojunk=False).get_opcodes():
        if tag != "equal":
            gone += a[i1:i2]
            new += b[j1:j2]
    return gone, new


# A TP102 config (TP overlap without sequence parallelism) in several layouts. The edited line is the
# one holding `sequence_parallel: false`; nothing else may move.
LAYOUTS = {
    "comments-blank-lines-quotes": """\
# Team config — do not reorder
# (second header line)

model:
  num_layers: 32          # from the paper
  name: "llama # not a comment"
  tokenizer: 'it''s quoted'

  tensor_model_parallel_size: 2
  # sequence parallel is off for now
  sequence_parallel: false   # see ticket 123
  pipeline_model_parallel_size: 1


comm_overlap:
  tp_comm_overlap: true  # we want this
# trailing comment
""",
    "four-space-indent": """\
model:
    tensor_model_parallel_size: 2
    sequence_parallel: false
    layers:
        - attention
        - mlp
comm_overlap:
    tp_comm_overlap: true
""",
    "dash-offset-lists": """\
model:
  tensor_model_parallel_size: 2
  recompute_modules:
    - core_attn
    - mlp
  sequence_parallel: false
  extra:
  - a
  - b
comm_overlap:
  tp_comm_overlap: true
""",
    "null-spellings-and-sets": """\
model:
  tensor_model_parallel_size: 2
  virtual_pipeline_model_parallel_size:
  context_parallel_size: 1
  sequence_parallel: false
  moe_router_topk: ~
  tp_comm_overlap_cfg: null
peft:
  target_modules: !!set {}
  fp8_buf:
  - false
comm_overlap:
  tp_comm_overlap: true
""",
    "keys-in-unusual-order-and-anchors": """\
comm_overlap:
  tp_comm_overlap: true
defaults: &defaults
  lr: 3.0e-4
optimizer:
  <<: *defaults
  min_lr: 3.0e-5
model:
  sequence_parallel: no
  tensor_model_parallel_size: 2
""",
}


@pytest.mark.parametrize("name", list(LAYOUTS))
def test_only_the_edited_line_changes(name, run_cli, tmp_path):
    before = LAYOUTS[name]
    code, after_bytes, output = fix(run_cli, tmp_path, before, "--select", "TP102")
    after = after_bytes.decode("utf-8")
    assert code == 0, output
    gone, new = changed_lines(before, after)
    assert len(gone) == 1 and "sequence_parallel:" in gone[0], (gone, output)
    assert len(new) == 1 and "sequence_parallel: true" in new[0]
    assert new[0].rstrip().endswith(NOTE_TP102)
    # the user's comment on that line is kept, ahead of ours
    if "#" in gone[0]:
        user = gone[0][gone[0].index("#"):].strip()
        assert user in new[0] and new[0].index(user) < new[0].index("# overlap:")
    assert yaml.safe_load(after)["model"]["sequence_parallel"] is True


def test_flow_mapping_edit_and_note_after_it(run_cli, tmp_path):
    before = "model: {tensor_model_parallel_size: 2, sequence_parallel: false}  # compact\ncomm_overlap: {tp_comm_overlap: true}\n"
    code, after, output = fix(run_cli, tmp_path, before, "--select", "TP102")
    assert code == 0, output
    assert after.decode().splitlines() == [
        # ruamel keeps the user's comment in its column, so one space makes up for `false` -> `true`
        f"model: {{tensor_model_parallel_size: 2, sequence_parallel: true}}   # compact  {NOTE_TP102}",
        "comm_overlap: {tp_comm_overlap: true}",
    ]


@pytest.mark.parametrize(
    "raw, check",
    [
        (b"model:\r\n  tensor_model_parallel_size: 2\r\n  sequence_parallel: false\r\ncomm_overlap:\r\n  tp_comm_overlap: true\r\n", "crlf"),
        (b"model:\n  tensor_model_parallel_size: 2\n  sequence_parallel: false\ncomm_overlap:\n  tp_comm_overlap: true", "no-final-newline"),
        (b"\xef\xbb\xbfmodel:\n  tensor_model_parallel_size: 2\n  sequence_parallel: false\ncomm_overlap:\n  tp_comm_overlap: true\n", "bom"),
    ],
    ids=["crlf", "no-final-newline", "bom"],
)
def test_line_ends_final_newline_and_bom_kept(raw, check, run_cli, tmp_path):
    code, after, output = fix(run_cli, tmp_path, raw, "--select", "TP102", binary=True)
    assert code == 0, output
    expected = raw.replace(b"sequence_parallel: false", b"sequence_parallel: true  " + NOTE_TP102.encode())
    assert after == expected


def test_no_comments_flag(run_cli, tmp_path):
    before = LAYOUTS["four-space-indent"]
    code, after, _ = fix(run_cli, tmp_path, before, "--select", "TP102", "--no-comments")
    assert code == 0
    assert after.decode() == before.replace("sequence_parallel: false", "sequence_parallel: true")


def test_our_old_note_is_replaced_and_suppressions_kept(run_cli, tmp_path):
    before = (
        "model:\n  tensor_model_parallel_size: 2\n"
        "  sequence_parallel: false  # mine  # overlap: TP102 an older note\n"
        "  pipeline_model_parallel_size: 1  # overlap: ignore[PP201]\n"
        "comm_overlap:\n  tp_comm_overlap: true\n"
    )
    code, after, _ = fix(run_cli, tmp_path, before, "--select", "TP102")
    lines = after.decode().splitlines()
    assert lines[2] == f"  sequence_parallel: true   # mine  {NOTE_TP102}"  # the user's comment keeps its column
    assert lines[3] == "  pipeline_model_parallel_size: 1  # overlap: ignore[PP201]"
    assert after.decode().count("# overlap: TP102") == 1


def test_removal_keeps_the_comments_around_it(run_cli, tmp_path):
    before = """\
model:
  pipeline_model_parallel_size: 4
comm_overlap:
  tp_comm_overlap: false
  overlap_p2p_comm: true   # crashes: non-interleaved schedule
  # null = Transformer Engine's defaults
  tp_comm_overlap_cfg: null
# end of file
"""
    code, after, output = fix(run_cli, tmp_path, before, "--select", "PP202")
    assert code == 0, output
    assert after.decode() == before.replace(
        "  overlap_p2p_comm: true   # crashes: non-interleaved schedule\n",
        "  # overlap: PP202 removed overlap_p2p_comm: true (crashes without VPP)  # crashes: non-interleaved schedule\n",
    )


def test_removing_the_only_key_keeps_an_empty_section_and_its_trailing_comment(run_cli, tmp_path):
    before = "mixed_precision: bf16_mixed\nddp:\n  grad_reduce_in_fp32: false\n  # tuned by hand\noptimizer: {}\n"
    code, after, output = fix(run_cli, tmp_path, before, "--select", "MP401", "--unsafe-fixes")
    text = after.decode()
    note = "  # overlap: MP401 moved grad_reduce_in_fp32: false to mixed_precision (mixed precision overwrites ddp)\n"
    assert "ddp: {}\n" + note + "  # tuned by hand\noptimizer: {}\n" in text, text
    assert yaml.safe_load(text)["ddp"] == {}


def test_added_key_goes_before_the_comments_that_lead_into_the_next_section(run_cli, tmp_path):
    before = """\
model:
  pipeline_model_parallel_size: 4
comm_overlap:
  overlap_p2p_comm: false

# --- data ---
dataset:
  seq_length: 4096
"""
    code, after, output = fix(run_cli, tmp_path, before, "--select", "CFG002")
    assert code == 0, output
    assert after.decode() == before.replace(
        "  overlap_p2p_comm: false\n",
        "  overlap_p2p_comm: false\n  tp_comm_overlap: false  # overlap: CFG002 required field of CommOverlapConfig\n",
    )


def test_missing_section_is_created_at_the_end(run_cli, tmp_path):
    before = "# optimizer wants the distributed optimizer\noptimizer:\n  use_distributed_optimizer: true\ncomm_overlap:\n  tp_comm_overlap: false\n"
    code, after, output = fix(run_cli, tmp_path, before, "--select", "DP303", "--world-size", "16", "--unsafe-fixes")
    assert code == 0, output
    assert after.decode() == before + (
        "ddp:\n  use_distributed_optimizer: true  # overlap: DP303 comm_overlap reads the ddp flag\n"
    )


def test_a_null_ddp_section_gets_no_fix_built_from_class_defaults(run_cli, tmp_path):
    """``ddp:`` with no value is ``ddp=None`` to Bridge's from_yaml: there is no DDP config for DP303 to read (its
    class defaults would stand in for nothing), and validate() fails on it (CFG010, config.py:1345)."""
    before = "optimizer:\n  use_distributed_optimizer: true\nddp:\ncomm_overlap:\n  tp_comm_overlap: false\n"
    code, after, output = fix(run_cli, tmp_path, before, "--select", "DP303", "--world-size", "16", "--unsafe-fixes")
    assert code == 0, output
    assert after.decode() == before
    code, out, err = run_cli("check", tmp_path / "config.yaml", "--world-size", "16")
    assert code == 1 and "CFG010" in out and "'NoneType' object has no attribute 'use_megatron_fsdp'" in out


# --- what fix refuses to touch --------------------------------------------------------------


def test_interpolated_value_is_never_edited(run_cli, tmp_path):
    before = "defaults:\n  sp: false\nmodel:\n  tensor_model_parallel_size: 2\n  sequence_parallel: ${defaults.sp}\ncomm_overlap:\n  tp_comm_overlap: true\n"
    code, after, output = fix(run_cli, tmp_path, before, "--select", "TP102")
    assert after.decode() == before
    assert "TP102 fix skipped" in output and "interpolation" in output
    assert code == 1  # the finding remains


@pytest.mark.parametrize(
    "before, why",
    [
        ("shared: &sp false\nmodel:\n  tensor_model_parallel_size: 2\n  sequence_parallel: *sp\ncomm_overlap:\n  tp_comm_overlap: true\n", "anchor"),
        ("base: &base\n  tensor_model_parallel_size: 2\n  sequence_parallel: false\nmodel:\n  <<: *base\ncomm_overlap:\n  tp_comm_overlap: true\n", "merge"),
    ],
    ids=["alias", "merge-key"],
)
def test_shared_yaml_nodes_are_not_edited(before, why, run_cli, tmp_path):
    code, after, output = fix(run_cli, tmp_path, before, "--select", "TP102")
    assert after.decode() == before
    assert why in output and code == 1


def test_unparseable_file_is_never_touched(run_cli, tmp_path):
    before = "model:\n  tensor_model_parallel_size: [2\ncomm_overlap:\n  tp_comm_overlap: true\n"
    code, after, output = fix(run_cli, tmp_path, before)
    assert code == 2 and after.decode() == before
    assert "config.yaml:" in output and "not edited" in output


def test_layout_ruamel_cannot_reproduce_is_refused_not_mangled(run_cli, tmp_path):
    # A flow mapping over two lines: ruamel writes it on one, so the edited line cannot be mapped back.
    before = "model: {tensor_model_parallel_size: 2,\n  sequence_parallel: false}\ncomm_overlap:\n  tp_comm_overlap: true\n"
    code, after, output = fix(run_cli, tmp_path, before, "--select", "TP102")
    assert after.decode() == before
    assert "not fixed" in output and "left untouched" in output
    assert code == 1
