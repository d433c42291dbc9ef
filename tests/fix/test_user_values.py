"""A safe fix never changes a value the user wrote in their own file (issue 30's override file).

"Written" is one notion (frameworks.bridge.view.written_at and each framework view's ``written``): a value
of the user's override file, dotlist, Python assignment or launch word is theirs; a recipe's, a dump's
(``--base``, or a ``_target_`` section Bridge serialised), a class default's or a preset's is not. A safe fix
that would change the user's value is offered as unsafe, naming it and where it is written; TP102 instead
turns off a TP overlap request that is not the user's (Bridge switches it off anyway). Through the CLI.
"""

from __future__ import annotations

import json
import subprocess
import sys

from conftest import ROOT

RECIPE = "llama3_70b_pretrain_64gpu_h100_bf16_config"  # requests TP overlap, TP 4 with sequence parallelism
DEBUG_RUN = "model:\n  sequence_parallel: false  # simpler activations while debugging\n"
DUMP = ROOT / "examples" / "bridge" / "deepseek_v3_pretrain_256gpu_b300_fp8mx_config.yaml"


def _result(run_cli, *args) -> dict:
    _, out, _ = run_cli("check", *args, "--format", "json")
    return json.loads(out)["results"][0]


def _finding(result: dict, code: str) -> dict:
    return next(f for f in result["findings"] if f["code"] == code)


def test_the_override_files_sequence_parallel_is_kept_and_the_recipes_request_turned_off(run_cli, tmp_path):
    over = tmp_path / "over.yaml"
    over.write_text(DEBUG_RUN)
    fix = _finding(_result(run_cli, "--recipe", RECIPE, over, "--world-size", "64"), "TP102")["fix"]
    assert fix["applicability"] == "safe"
    assert fix["edits"] == [{"op": "set", "key": "comm_overlap.tp_comm_overlap", "value": False}]
    code, out, err = run_cli("fix", "--recipe", RECIPE, over, "--world-size", "64", "--write")
    assert f"fixed {over}: TP102" in out, out + err
    text = over.read_text()
    assert text.startswith(DEBUG_RUN), text  # the user's line, byte for byte
    assert "comm_overlap:\n  tp_comm_overlap: false  # overlap: TP102 " in text
    after = _result(run_cli, "--recipe", RECIPE, over, "--world-size", "64")
    assert "TP102" not in {f["code"] for f in after["findings"]}
    sp = after["effective"]["model.sequence_parallel"]
    assert (sp["value"], sp["layer"]) == (False, f"{over}:2")
    assert after["effective"]["model.tp_comm_overlap"]["value"] is False


def test_the_same_run_as_a_dotlist_and_as_a_python_run(run_cli, tmp_path):
    """The command line's word and a Python assignment are the user's words as much as an override file's."""
    result = _result(run_cli, "--recipe", RECIPE, "model.sequence_parallel=false", "--world-size", "64")
    assert _finding(result, "TP102")["fix"]["edits"] == [{"op": "set", "key": "comm_overlap.tp_comm_overlap", "value": False}]
    run = tmp_path / "train.py"
    run.write_text("from megatron.bridge.recipes.llama import llama3_70b_pretrain_config\n\n"
                   "cfg = llama3_70b_pretrain_config()\n"
                   "cfg.model.sequence_parallel = False  # simpler activations while debugging\n")
    fix = _finding(_result(run_cli, run, "--world-size", "64"), "TP102")["fix"]
    assert fix["applicability"] == "safe"
    assert fix["edits"] == [{"op": "set", "key": "comm_overlap.tp_comm_overlap", "value": False}]
    run_cli("fix", run, "--world-size", "64", "--write")
    text = run.read_text()
    assert "cfg.model.sequence_parallel = False  # simpler activations while debugging\n" in text
    assert "cfg.comm_overlap.tp_comm_overlap = False" in text


def test_where_the_user_wrote_both_the_fix_is_theirs_to_accept(run_cli, tmp_path):
    over = tmp_path / "over.yaml"
    over.write_text(DEBUG_RUN + "comm_overlap:\n  tp_comm_overlap: true\n")
    fix = _finding(_result(run_cli, "--recipe", RECIPE, over, "--world-size", "64"), "TP102")["fix"]
    assert fix["applicability"] == "unsafe"
    assert fix["edits"] == [{"op": "set", "key": "model.sequence_parallel", "value": True}]
    assert fix["message"].endswith(f"(unsafe here: you wrote model.sequence_parallel: false at {over}:2)"), fix["message"]
    before = over.read_text()
    code, out, _ = run_cli("fix", "--recipe", RECIPE, over, "--world-size", "64", "--write")
    assert over.read_text() == before and code == 1 and "TP102" in out
    run_cli("fix", "--recipe", RECIPE, over, "--world-size", "64", "--write", "--unsafe-fixes", "--select", "TP102")
    # the comment keeps its column; the note says why the fix was made, not why it was unsafe
    assert over.read_text() == ("model:\n  sequence_parallel: true   # simpler activations while debugging  "
                                "# overlap: TP102 TP overlap needs sequence parallelism\n"
                                "comm_overlap:\n  tp_comm_overlap: true\n")


def test_a_recipes_own_sequence_parallel_is_turned_on(run_cli, tmp_path):
    """Where the recipe (not the user) holds sequence_parallel: false and the user asks for TP overlap, the
    fix makes their request take effect: safe, as before."""
    over = tmp_path / "over.yaml"
    over.write_text("comm_overlap:\n  tp_comm_overlap: true\n")
    result = _result(run_cli, "--recipe", RECIPE, "model.sequence_parallel=false", over, "--world-size", "64")
    fix = _finding(result, "TP102")["fix"]  # the dotlist is the user's too: unsafe, naming the command line
    assert fix["applicability"] == "unsafe" and fix["message"].endswith("at the command line)"), fix["message"]
    fix = _finding(_result(run_cli, ROOT / "tests" / "data" / "tp102_dumped_model.yaml"), "TP102")["fix"]
    assert fix["applicability"] == "safe" and fix["edits"] == [{"op": "set", "key": "model.sequence_parallel", "value": True}]


def test_mp401_reports_only_the_users_own_value_over_a_base_dump(run_cli, tmp_path):
    """A --base dump's values are Bridge's output: mixed precision overwriting the dump's fp8_param_gather is no
    finding of the user's; their own ddp value over it is, located in their file."""
    over = tmp_path / "over.yaml"
    over.write_text("mixed_precision: bf16_mixed\n")
    codes = {f["code"] for f in _result(run_cli, "--base", DUMP, over, "--world-size", "256")["findings"]}
    assert not codes & {"MP401", "CFG005"}, codes
    over.write_text("mixed_precision: bf16_mixed\nddp:\n  fp8_param_gather: true\n")
    result = _result(run_cli, "--base", DUMP, over, "--world-size", "256")
    mp401 = _finding(result, "MP401")
    assert (mp401["key"], mp401["line"]) == ("ddp.fp8_param_gather", 3)
    assert mp401["message"].startswith("ddp.fp8_param_gather: true is overwritten with false by mixed precision")


def test_a_launch_flag_is_the_users_word(run_cli, tmp_path):
    """Megatron-LM: --tp-comm-overlap at TP 1 asserts; removing the flag the launch gives is offered as unsafe,
    naming its line."""
    launch = tmp_path / "train.sh"
    launch.write_text("torchrun --nproc_per_node 8 pretrain_gpt.py \\\n    --sequence-parallel \\\n    --tp-comm-overlap\n")
    fix = _finding(_result(run_cli, launch), "LM102")["fix"]
    assert fix["applicability"] == "unsafe" and fix["edits"] == [{"op": "remove", "key": "--tp-comm-overlap"}]
    assert fix["message"].endswith(f"(unsafe here: you wrote --tp-comm-overlap: true at {launch}:3)"), fix["message"]


def test_through_a_real_process(tmp_path):
    over = tmp_path / "over.yaml"
    over.write_text(DEBUG_RUN)
    proc = subprocess.run([sys.executable, "-m", "overlap_cli", "fix", "--recipe", RECIPE, str(over), "--world-size", "64",
                           "--diff"], capture_output=True, text=True, cwd=ROOT, timeout=120)
    assert proc.returncode == 1, proc.stderr
    added = [ln for ln in proc.stdout.splitlines() if ln.startswith("+") and not ln.startswith("+++")]
    removed = [ln for ln in proc.stdout.splitlines() if ln.startswith("-") and not ln.startswith("---")]
    assert removed == [] and added[0] == "+comm_overlap:", proc.stdout
    assert added[1].startswith("+  tp_comm_overlap: false  # overlap: TP102 "), proc.stdout


def test_nemo_rl_the_checked_file_and_the_command_line_are_written_its_defaults_chain_is_not():
    """NeMo-RL: a value the checked recipe file or a dotlist word writes is the user's; one inherited through
    ``defaults:`` (NeMo-RL's base config) is not, as a recipe is not for Bridge."""
    from overlap_cli.frameworks.nemo_rl.loader import load
    from overlap_cli.frameworks.nemo_rl.resolver import NemoRLView

    path = str(ROOT / "tests" / "data" / "upstream" / "NVIDIA-NeMo+RL" / "examples" / "configs" / "recipes" / "llm"
               / "grpo-llama3.2-1b-instruct-1n8g-megatron.yaml")
    view = NemoRLView(cfg=load(path), effective={}, values={})
    assert view.written("policy.megatron_cfg.enabled") == (True, f"{path}:14")
    assert view.written("policy.megatron_cfg.tensor_model_parallel_size") is None  # grpo_math_1B.yaml's
    word = "policy.megatron_cfg.tensor_model_parallel_size=2"
    view = NemoRLView(cfg=load(path, overrides=(word,)), effective={}, values={})
    assert view.written("policy.megatron_cfg.tensor_model_parallel_size") == (2, "the command line")


def test_a_run_recipe_launch_word_is_the_users(run_cli, tmp_path):
    """The same run as a run_recipe.py launch: its override word is the user's (named by the script's line)."""
    launch = tmp_path / "launch.sh"
    head = ("#!/bin/bash\ntorchrun --nproc_per_node 8 --nnodes 8 scripts/training/run_recipe.py "
            f"--recipe {RECIPE} \\\n    model.sequence_parallel=false")
    launch.write_text(head + "\n")
    fix = _finding(_result(run_cli, launch), "TP102")["fix"]
    assert fix["applicability"] == "safe"
    assert fix["edits"] == [{"op": "set", "key": "comm_overlap.tp_comm_overlap", "value": False}]
    run_cli("fix", launch, "--write")
    assert launch.read_text() == head + " comm_overlap.tp_comm_overlap=false\n"
    launch.write_text(head + " comm_overlap.tp_comm_overlap=true\n")
    fix = _finding(_result(run_cli, launch), "TP102")["fix"]
    assert fix["applicability"] == "unsafe"
    assert fix["message"].endswith(f"(unsafe here: you wrote model.sequence_parallel: false at {launch}:3)"), fix["message"]
