"""The words after ``--``: a Python script's own command line (its ``sys.argv[1:]``), read by its argparse as
a launch passes them -- through the fast entry point, through Typer and through a real process alike."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest
from conftest import ROOT, run_entry_point

TRAIN = '''\
import argparse

from megatron.bridge.recipes.llama import llama3_8b_pretrain_config
from megatron.bridge.training.gpt_step import forward_step
from megatron.bridge.training.pretrain import pretrain


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--tp", type=int, default=1)
    parser.add_argument("--pp", type=int, default=1)
    args = parser.parse_args()
    cfg = llama3_8b_pretrain_config()
    cfg.model.tensor_model_parallel_size = args.tp
    cfg.model.pipeline_model_parallel_size = args.pp
    pretrain(cfg, forward_step)


if __name__ == "__main__":
    main()
'''
TP = "model.tensor_model_parallel_size"
PP = "model.pipeline_model_parallel_size"


@pytest.fixture
def script(tmp_path, monkeypatch):
    (tmp_path / "train.py").write_text(TRAIN)
    monkeypatch.chdir(tmp_path)
    return "train.py"


def typer_run(*args):
    from typer.testing import CliRunner

    from overlap_cli.cli.app import app

    result = CliRunner().invoke(app, [str(a) for a in args])
    return result.exit_code, result.stdout, result.stderr


def effective(out: str) -> dict:
    return json.loads(out)["results"][0]["effective"]


@pytest.mark.parametrize("runner", [run_entry_point, typer_run], ids=["fast", "typer"])
def test_words_set_what_argparse_reads_and_name_the_command_line(script, runner):
    code, out, err = runner("check", script, "--world-size", "8", "-f", "json", "--", "--tp", "4", "--pp=2")
    assert code in (0, 1), err
    eff = effective(out)
    assert eff[TP]["value"] == 4 and eff[PP]["value"] == 2
    assert eff[TP]["reason"] == "set in train.py:14 from the command line's --tp 4"
    assert eff[PP]["reason"] == "set in train.py:15 from the command line's --pp=2"


def test_without_words_the_defaults_have_no_command_line(script):
    code, out, err = run_entry_point("check", script, "--world-size", "8", "-f", "json")
    eff = effective(out)
    assert eff[TP]["value"] == 1 and eff[TP]["reason"] == "set in train.py:14"
    # "--" alone: the script runs with no words, which is the same reading as its defaults here
    code2, out2, _ = run_entry_point("check", script, "--world-size", "8", "-f", "json", "--")
    assert effective(out2)[TP] == eff[TP] and code2 == code


@pytest.mark.parametrize("runner", [run_entry_point, typer_run], ids=["fast", "typer"])
def test_an_unknown_option_is_argparse_s_exit(script, runner):
    code, out, err = runner("check", script, "-f", "concise", "--", "--tpx", "4")
    assert code == 2
    lines = [line for line in (out + err).splitlines() if "error" in line]
    assert lines == ["train.py:12:12: argparse at train.py:12: error: unrecognized arguments: --tpx 4 "
                     "(the script exits with status 2)"]


@pytest.mark.parametrize("args, says", [
    (["train.py", "other.py"], "name exactly one FILE.py before -- (got 2 files)"),
    (["."], "(. is a folder)"),
    (["conf.yaml"], "conf.yaml is not one (a file whose name starts with - is written ./-NAME)"),
    (["train.py::main"], "train.py::main is not one"),
    ([], "(got 0 files)"),
])
@pytest.mark.parametrize("runner", [run_entry_point, typer_run], ids=["fast", "typer"])
def test_words_belong_to_one_script(script, runner, args, says):
    code, out, err = runner("check", *args, "--", "--tp", "4")
    assert code == 2 and out == ""
    assert err.startswith("overlap: error: ") and says in err and len(err.splitlines()) == 1, err


@pytest.mark.parametrize("command", [["diff", "train.py", "train.py"], ["diff", "train.py", "--vs-world-size", "16"]])
def test_diff_takes_no_script_words(script, command):
    code, out, err = run_entry_point(*command, "--", "--tp", "4")
    assert code == 2 and err == ("overlap: error: this command takes no script words after --; a file whose name "
                                 "starts with - is written ./-NAME\n")


def test_a_file_starting_with_a_dash_is_written_dot_slash(tmp_path, monkeypatch):
    (tmp_path / "-run.yaml").write_text((ROOT / "examples/llama3_70b_tuned.yaml").read_text())
    monkeypatch.chdir(tmp_path)
    code, out, err = run_entry_point("check", "./-run.yaml", "-f", "json")
    assert code == 0, err
    assert json.loads(out)["results"][0]["file"] == "./-run.yaml"


@pytest.mark.parametrize("command, says", [("env", "TP=4"), ("estimate", "TP 4 PP 1"), ("tune", None)])
def test_other_commands_read_the_script_with_its_words(script, command, says):
    plain = run_entry_point(command, script, "--world-size", "8")
    worded = run_entry_point(command, script, "--world-size", "8", "--", "--tp", "4")
    assert plain[0] == worded[0] == 0, (plain[2], worded[2])
    assert plain[1] != worded[1]
    if says is not None:
        assert says in worded[1] and says not in plain[1]


def test_fix_reads_the_script_with_its_words(script):
    code, out, err = run_entry_point("fix", "--diff", script, "--world-size", "8", "--", "--tpx", "4")
    assert code == 2 and "unrecognized arguments: --tpx 4" in err


def test_through_a_real_process(script, tmp_path):
    proc = subprocess.run([sys.executable, "-m", "overlap_cli", "check", script, "--world-size", "8", "-f", "json",
                           "--", "--tp", "4"], cwd=tmp_path, capture_output=True, text=True, timeout=120,
                          env={"PYTHONPATH": str(ROOT), "PATH": "/usr/bin:/bin"})
    assert effective(proc.stdout)[TP]["value"] == 4, proc.stderr


@pytest.mark.parametrize("argv, at", [
    (["a.py", "--", "x"], 1),
    (["-o", "--", "a.py"], None),  # "--" is -o's value
    (["--output", "--", "a.py", "--", "x"], 3),
    (["--output=--", "--", "x"], 1),
    (["-qo", "--", "--", "x"], 2),  # a cluster: -o takes the next word
    (["-j2", "--", "x"], 1),
    (["a.py", "--show-info", "--", "--", "x"], 2),
    (["a.py"], None),
])
def test_where_the_options_end(argv, at):
    from overlap_cli.cli.check import options_end

    takes_value = {"-o": True, "--output": True, "-j": True, "-q": False, "--show-info": False}
    assert options_end(argv, takes_value.get) == at
