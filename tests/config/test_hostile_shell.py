"""Hostile launch scripts and Megatron-LM parallel sizes: each is checked within the reader's budgets (the value a
budget gave up on is unknown with the reason, the file still checked) or refused in one line — never a hang,
an internal error or a traceback.

Behaviour only, through the real CLI in a fresh interpreter; bench/hostile_shell.py measures time and memory.
The subprocess timeouts stop a hang from hanging the suite; they are not measurements.
"""

from __future__ import annotations

import os
import random
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from hypothesis import HealthCheck, Phase, given, note, settings
from hypothesis import strategies as st

from bench.hostile_shell import LAUNCH, SHELL_HOSTILE
from conftest import ROOT
from overlap_cli.config.shell_cond import glob_pattern

HANG_GUARD = 60  # seconds; a hang, not a measurement


def overlap(*args):
    proc = subprocess.run([sys.executable, "-m", "overlap_cli", *map(str, args)], capture_output=True, text=True,
                          timeout=HANG_GUARD, cwd=ROOT, env={**os.environ, "PYTHONPATH": str(ROOT)})
    return proc.returncode, proc.stdout, proc.stderr


def assert_contract(code, out, err, path):
    assert code in (0, 1, 2), (code, out, err)
    assert "Traceback" not in out + err
    assert "internal error" not in out + err, err
    if code == 2:
        naming = [ln for ln in (out + err).splitlines() if ln.startswith(str(path))]
        assert len(naming) == 1, (out, err)


@pytest.mark.parametrize("name,make,expected", SHELL_HOSTILE, ids=[h[0] for h in SHELL_HOSTILE])
def test_hostile_script_is_checked_within_budgets(tmp_path, name, make, expected):
    path = make(tmp_path)
    code, out, err = overlap("check", path, "--show-effective", "--show-info")
    assert_contract(code, out, err, path)
    want_code, want_text = expected
    assert code == want_code, (out, err)
    assert want_text in out + err, (out, err)


def test_a_value_past_the_expansion_budget_is_unknown_with_its_reason_and_the_rest_is_checked(tmp_path):
    path = tmp_path / "doubling.sh"
    path.write_text("#!/bin/bash\nA=x\n" + "A=$A$A\n" * 40 + "export CUDA_DEVICE_MAX_CONNECTIONS=$A\n"
                    + LAUNCH.replace("$TP", "4"))
    code, out, err = overlap("check", path, "--show-effective", "--show-info", "--format", "json")
    assert_contract(code, out, err, path)
    import json

    result = json.loads(out)["results"][0]
    effective = {e["key"]: e for e in result["effective"]} if isinstance(result["effective"], list) else result["effective"]
    assert effective["model.tensor_model_parallel_size"]["value"] == 4  # the key not lost
    assert effective["env.CUDA_DEVICE_MAX_CONNECTIONS"]["value"] is None
    assert "more than 65,536 characters" in out


def test_a_stray_keyword_is_bash_syntax_error_but_a_quoted_one_is_a_word(tmp_path):
    path = tmp_path / "quoted.sh"
    path.write_text('#!/bin/bash\nTP=2\necho "fi" done\n"esac" || true\n' + LAUNCH)
    code, out, err = overlap("check", path)
    assert_contract(code, out, err, path)
    assert code in (0, 1) and "syntax error" not in out + err


@pytest.mark.skipif(shutil.which("bash") is None, reason="bash is the oracle")
def test_glob_matches_as_bash_does_on_seeded_patterns():
    """Patterns and subjects drawn from the characters that matter (``*``, ``?``, brackets, ``!``, ``^``,
    ranges forwards and reversed): every answer of the linear matcher is bash's own."""
    rnd = random.Random(31)
    cases = []
    for _ in range(1500):
        pattern = "".join(rnd.choice("ab*?[]!-z^") for _ in range(rnd.randint(1, 8)))
        subject = "".join(rnd.choice("abz-]!^") for _ in range(rnd.randint(0, 7)))
        cases.append((pattern, subject))
    cases += [("*a*a*a*a*a*a*b", "a" * 100), ("[z-a]", "b"), ("[[:digit:]]x", "7x"), ("[!a-c]", "d")]
    # an unquoted expansion on the right of == is a pattern to bash: no case is ever parsed as code
    script = 'while IFS= read -r p && IFS= read -r s; do [[ $s == $p ]] && echo Y || echo n; done'
    feed = "".join(f"{p}\n{s}\n" for p, s in cases)
    answers = subprocess.run(["bash", "-c", script], input=feed, capture_output=True, text=True,
                             timeout=HANG_GUARD).stdout.split()
    assert len(answers) == len(cases)
    compared = 0
    for (pattern, subject), answer in zip(cases, answers):
        glob = glob_pattern([(pattern, True)])
        if glob is None:  # an extended pattern: not known statically
            continue
        assert glob.matches(subject) == (answer == "Y"), (pattern, subject, answer)
        compared += 1
    assert compared > 1000


# --- parallel sizes -----------------------------------------------------------------------------------

SIZE_FLAGS = ["--tensor-model-parallel-size", "--pipeline-model-parallel-size", "--context-parallel-size",
              "--num-layers-per-virtual-pipeline-stage"]


def _launch(tmp_path: Path, flag: str, value: str) -> Path:
    path = tmp_path / "train.sh"
    extra = " --pipeline-model-parallel-size 2" if "virtual" in flag else ""
    path.write_text("#!/bin/bash\n" + LAUNCH.replace("$TP", "2").rstrip("\n") + f"{extra} {flag} {value}\n")
    return path


def _functional_yaml(tmp_path: Path, flag: str, value: str) -> Path:
    path = tmp_path / "model_config.yaml"
    extra = "  --pipeline-model-parallel-size: 2\n" if "virtual" in flag else ""
    path.write_text(f"ENV_VARS:\n  CUDA_DEVICE_MAX_CONNECTIONS: 1\nMODEL_ARGS:\n  --num-layers: 8\n{extra}"
                    f"  {flag}: {value}\nTEST_TYPE: regular\n")
    return path


@pytest.mark.parametrize("form", [_launch, _functional_yaml], ids=["script", "functional-yaml"])
@pytest.mark.parametrize("flag", SIZE_FLAGS)
@pytest.mark.parametrize("command", ["check", "env", "estimate", "fix"])
def test_a_zero_parallel_size_is_validate_args_error_naming_the_line(tmp_path, form, flag, command):
    path = form(tmp_path, flag, "0")
    before = path.read_bytes()
    args = [command, path, "--world-size", "8"] + (["--write"] if command == "fix" else [])
    code, out, err = overlap(*args)
    assert_contract(code, out, err, path)
    assert code == 2
    line = next(ln for ln in (out + err).splitlines() if ln.startswith(str(path)))
    assert f"{flag}: non-positive parallel size: expected a positive integer, got int 0" in line
    assert "ZeroDivisionError: integer modulo by zero, megatron/training/arguments.py:" in line
    assert line.split(":")[1].isdigit()  # the line of the flag
    assert path.read_bytes() == before


@pytest.mark.parametrize("form", [_launch, _functional_yaml], ids=["script", "functional-yaml"])
@pytest.mark.parametrize("value,words", [("-2", "non-positive parallel size: expected a positive integer, got int -2"),
                                         ("4294967296", "parallel size too large: expected at most 2**31")])
def test_a_negative_or_absurd_tp_is_refused_as_the_bridge_paths_do(tmp_path, form, value, words):
    path = form(tmp_path, "--tensor-model-parallel-size", value)
    code, out, err = overlap("check", path, "--world-size", "8")
    assert_contract(code, out, err, path)
    assert code == 2 and words in out + err, (out, err)
    bridge = tmp_path / "bridge.yaml"
    bridge.write_text("model:\n  tensor_model_parallel_size: -2\n")
    bcode, bout, berr = overlap("check", bridge)
    if value == "-2":  # the same words as the Bridge form's refusal
        assert bcode == 2 and words in bout + berr, (bout, berr)


def test_a_zero_size_from_a_command_line_override_is_refused(tmp_path):
    path = _launch(tmp_path, "--context-parallel-size", "1")
    code, out, err = overlap("check", path, "model.tensor_model_parallel_size=0")
    assert_contract(code, out, err, path)
    assert code == 2 and "non-positive parallel size" in out + err and "command-line override" in out + err


# --- seeded hostile compositions (tests/test_fuzz.py's style: derandomized, no shrinking) ---------------

_FRAGMENTS = [
    "A=x\n" + "A=$A$A\n" * 30,
    "A=(x)\n" + 'A=("${A[@]}" "${A[@]}")\n' * 20,
    "x=" + "a" * 60 + "\n[[ $x == *a*a*a*a*a*b ]] && TP=4\n",
    "case $1 in\n" + "".join(f"  *{i}*|[z-a]{i}) TP={i % 4 + 1} ;;\n" for i in range(300)) + "esac\n",
    "# overlap: ignore[LM501]\n" * 500,
    "fi\n", "done\n", "esac\n", "}\n",
    "f() { f; }\nf\n",
    "for ((i=0;i<1000000;i++)); do TP=$i; done\n",
    "while true; do A=$A$A; done\n",
    "TP=0\n", "TP=-4\n", "TP=99999999999\n",
    "if [[ $1 == [[:digit:]]* ]]; then TP=8; fi\n",
]


@settings(max_examples=25, deadline=None, derandomize=True, database=None, phases=(Phase.explicit, Phase.generate),
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture])
@given(picks=st.lists(st.sampled_from(range(len(_FRAGMENTS))), min_size=1, max_size=4))
def test_hostile_fragments_together_never_break_the_reader(tmp_path_factory, picks):
    note(f"fragments={picks}")
    path = tmp_path_factory.mktemp("hs") / "train.sh"
    path.write_text("#!/bin/bash\nTP=2\n" + "".join(_FRAGMENTS[i] for i in picks) + LAUNCH)
    code, out, err = overlap("check", path, "--show-effective")
    assert_contract(code, out, err, path)
