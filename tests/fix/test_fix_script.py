"""`overlap fix` on Megatron-LM launches: one flag (or one variable) changes on its own line, every other byte
stays (line endings included: a functional-test YAML written with CRLF keeps them), the write is atomic and keeps the mode, a second run changes nothing, and a flag that arrives
through a variable it cannot edit exactly is left alone with the reason. Through the CLI, on real launches."""

from __future__ import annotations

import json
import os
import stat
from pathlib import Path

import pytest


def _fix(run_cli, tmp_path, name: str, text: str, *args, newline: str = "\n"):
    path = tmp_path / name
    path.write_bytes(text.replace("\n", newline).encode())
    code, out, err = run_cli("fix", path, "--write", *args)
    return code, path.read_bytes().decode(), out + err, path


def _codes(run_cli, path, *args) -> list:
    _, out, _ = run_cli("check", path, "--format", "json", *args)
    return [f["code"] for f in json.loads(out)["results"][0]["findings"]]


SCRIPT = """#!/bin/bash
# pretrain a small GPT
GPT_ARGS=(
    --num-layers 8
    --hidden-size 512   # kept as written
)
torchrun --nproc_per_node 8 pretrain_gpt.py \\
    "${GPT_ARGS[@]}" \\
    --tensor-model-parallel-size 4 \\
    --tp-comm-overlap \\
    --use-distributed-optimizer \\
    --overlap-param-gather
"""


def test_adds_each_flag_on_its_own_line_and_nothing_else(run_cli, tmp_path):
    code, text, out, path = _fix(run_cli, tmp_path, "train.sh", SCRIPT, "--gpu", "h100")
    assert code == 0, out
    want = SCRIPT.replace(
        "    --tp-comm-overlap \\\n", "    --tp-comm-overlap \\\n    --sequence-parallel \\\n"
    ).replace(
        "    --use-distributed-optimizer \\\n", "    --use-distributed-optimizer \\\n    --overlap-grad-reduce \\\n"
    ).replace("torchrun", "export CUDA_DEVICE_MAX_CONNECTIONS=1\ntorchrun", 1)
    assert text == want
    assert not {"LM101", "LM302", "LM501"} & set(_codes(run_cli, path, "--gpu", "h100"))
    again = run_cli("fix", path, "--write", "--gpu", "h100")
    assert path.read_text() == want, again


def test_mode_is_kept_and_no_temporary_file_is_left(run_cli, tmp_path):
    path = tmp_path / "train.sh"
    path.write_text(SCRIPT)
    os.chmod(path, 0o751)
    run_cli("fix", path, "--write", "--gpu", "h100")
    assert "--sequence-parallel" in path.read_text()
    assert stat.S_IMODE(os.stat(path).st_mode) == 0o751
    assert not [p for p in os.listdir(tmp_path) if p != "train.sh"]  # no temporary file left behind


def test_removing_the_last_word_of_the_command_drops_the_continuation_before_it(run_cli, tmp_path):
    text = "torchrun --nproc_per_node 8 pretrain_gpt.py \\\n    --sequence-parallel \\\n    --tp-comm-overlap\necho done\n"
    # The launch writes --tp-comm-overlap itself: removing it is offered as unsafe (and applied with it).
    code, fixed, out, path = _fix(run_cli, tmp_path, "tp1.sh", text, "--unsafe-fixes")
    assert fixed == "torchrun --nproc_per_node 8 pretrain_gpt.py \\\n    --sequence-parallel\necho done\n", out
    assert "LM102" not in _codes(run_cli, path)


def test_a_flag_from_a_variable_is_not_edited_and_the_reason_is_given(run_cli, tmp_path):
    text = 'OVERLAP="--tp-comm-overlap"\ntorchrun --nproc_per_node 8 pretrain_gpt.py $OVERLAP --micro-batch-size 1\n'
    code, fixed, out, path = _fix(run_cli, tmp_path, "var.sh", text, "--unsafe-fixes")
    assert fixed == text
    assert "LM102 fix skipped" in out and "variable OVERLAP" in out, out
    assert code == 1


def test_functional_test_yaml(run_cli, tmp_path):
    text = (
        "ENV_VARS:\n  NCCL_ALGO: Ring\nMODEL_ARGS:\n  --num-layers: 12\n  --tensor-model-parallel-size: 2\n"
        "  --tp-comm-overlap: true  # userbuffers\n  --data-path: ${DATA_PATH}/text\nTEST_TYPE: regular\n"
    )
    code, fixed, out, path = _fix(run_cli, tmp_path, "model_config.yaml", text, "--gpu", "h100")
    assert fixed == text.replace("  NCCL_ALGO: Ring\n", "  NCCL_ALGO: Ring\n  CUDA_DEVICE_MAX_CONNECTIONS: 1\n").replace(
        "  --tp-comm-overlap: true  # userbuffers\n", "  --tp-comm-overlap: true  # userbuffers\n  --sequence-parallel: true\n"
    ), out
    assert code == 0 and not {"LM101", "LM501"} & set(_codes(run_cli, path, "--gpu", "h100"))


def test_dry_run_names_the_edits_and_writes_nothing(run_cli, tmp_path):
    path = tmp_path / "train.sh"
    path.write_text(SCRIPT)
    code, out, _ = run_cli("fix", path, "--gpu", "h100")
    assert code == 1 and path.read_text() == SCRIPT
    assert "LM101 [safe]" in out and "add --sequence-parallel" in out, out
    code, out, _ = run_cli("fix", path, "--gpu", "h100", "--diff")
    assert "+    --sequence-parallel \\" in out and "+export CUDA_DEVICE_MAX_CONNECTIONS=1" in out, out


def test_crlf_yaml_keeps_its_line_endings(run_cli, tmp_path):
    text = "MODEL_ARGS:\n  --tensor-model-parallel-size: 1\n  --sequence-parallel: true\n  --tp-comm-overlap: true\n"
    code, fixed, out, path = _fix(run_cli, tmp_path, "model_config.yaml", text, "--unsafe-fixes", newline="\r\n")
    assert fixed == "MODEL_ARGS:\r\n  --tensor-model-parallel-size: 1\r\n  --sequence-parallel: true\r\n", out


LM_CASES = sorted((Path(__file__).resolve().parents[1] / "cases" / "megatron_lm").glob("*.sh"))
LM_CASES = [c for c in LM_CASES if ".fixed." not in c.name]


def _expected_fix_output(case: Path, unsafe: bool):
    """NAME.fixed.sh (or, with --unsafe-fixes, NAME.unsafe.fixed.sh when it exists) beside the case: what
    `overlap fix --write` makes of it (checked by tests/rules/test_fix_rules.py); None: the fix leaves the
    case as it is."""
    from caselib import fixed_path

    candidates = [fixed_path(case, True), fixed_path(case, False)] if unsafe else [fixed_path(case, False)]
    return next((c for c in candidates if c.exists()), None)


# Only the cases a fix edits: where it leaves the script as it is, no replaced line is there to account for.
EDITED_LM_CASES = [
    pytest.param(case, unsafe, id=f"{case.stem}-{'unsafe' if unsafe else 'safe'}")
    for case in LM_CASES
    for unsafe in (False, True)
    if _expected_fix_output(case, unsafe) is not None
]


@pytest.mark.parametrize(("case", "unsafe"), EDITED_LM_CASES)
def test_only_edited_flags_change(case, unsafe):
    """Every original line the fix replaced or deleted is the line of an edited flag or variable, the line
    before a removed last word (its continuation), or the line beside which a flag was added."""
    import difflib

    from caselib import fix_case
    from overlap_cli.fix.script_place import ANCHORS, flag_row
    from overlap_cli.frameworks.megatron_lm.args import load_launch

    out = fix_case(case, unsafe)
    assert out.error is None, out.error
    assert out.fixed == _expected_fix_output(case, unsafe).read_text(encoding="utf-8")
    launch = load_launch(str(case), out.original)
    allowed: set = set()
    for a in out.applied:
        for e in a.edits:
            if e.key.startswith("env."):
                var = launch.env.get(e.key[4:])
                if var is not None:
                    allowed.add(var.line)
                continue
            dest = flag_row(e.key)["dest"] if e.key.startswith("-") else e.key.split(".")[-1]
            near = [dest, *ANCHORS.get(dest, ())]
            lines = {launch.args[d].line for d in near if d in launch.args}
            lines |= {a.finding.line} if a.finding.line else set()
            if e.op == "add" and launch.insert_at and not any(launch.args[d].placeable for d in near if d in launch.args):
                lines.add(launch.insert_at[0])  # no neighbour written on the launch line: the flag goes after the script
            allowed |= lines | {ln - 1 for ln in lines}
    a_lines, b_lines = out.original.splitlines(True), out.fixed.splitlines(True)
    for tag, i1, i2, _j1, _j2 in difflib.SequenceMatcher(None, a_lines, b_lines, autojunk=False).get_opcodes():
        if tag in ("replace", "delete"):
            stray = [i + 1 for i in range(i1, i2) if i + 1 not in allowed]
            assert not stray, f"lines {stray} changed but no edit names them"


def test_a_one_line_launch_gets_the_flag_beside_its_neighbour(run_cli, tmp_path):
    text = "export CUDA_DEVICE_MAX_CONNECTIONS=1\ntorchrun --nproc_per_node 8 pretrain_gpt.py --tensor-model-parallel-size 2 --tp-comm-overlap --bf16\n"
    code, fixed, out, path = _fix(run_cli, tmp_path, "one.sh", text, "--gpu", "h100")
    assert fixed == text.replace("--tp-comm-overlap --bf16", "--tp-comm-overlap --sequence-parallel --bf16"), out
