"""The bash reader's step budget (config/shell_budget.py): a script that takes too many steps to follow is
still read — the top-level command past the budget is given up, each variable it may set unknown with the
reason (the budget and the line), the rest of the script read on, the key not lost — never an input error,
never a hang. Generated scripts, read in process; one run through the real CLI."""

from __future__ import annotations

import random
import time

import pytest

from bench.hostile_shell import LAUNCH, forty_loops_past_the_step_budget
from overlap_cli.problems import InputError
from overlap_cli.config import shell, shell_budget
from overlap_cli.config.shell_eval import Reader

SMALL = 10_000  # the budget the in-process tests read with (the real one's behaviour, ten times sooner)
BUDGET = f"more than {SMALL:,} steps to follow statically (the reader's step budget)"


@pytest.fixture(autouse=True)
def small_budget(monkeypatch):
    monkeypatch.setattr(shell_budget, "STEP_LIMIT", SMALL)


def _read(body: str, launch: str = LAUNCH):
    shell._READINGS.clear()
    text = "#!/bin/bash\nTP=2\n" + body + launch
    return shell.read_launch_script("gen.sh", text), text


def _tp(found) -> object:
    i = next(k for k, t in enumerate(found.tokens) if t.text == "--tensor-model-parallel-size")
    return found.tokens[i + 1].text


def _loops(rng: random.Random, depth: int, assigns: str) -> str:
    """``depth`` nested loops of a random kind, each of 40-100 iterations, ``assigns`` in the innermost."""
    body = assigns
    for d in range(depth):
        n = rng.randint(40, 100)
        kind = rng.choice(["cfor", "while", "for"])
        v = f"i{d}"
        if kind == "cfor":
            body = f"for (({v}=0; {v}<{n}; {v}++)); do {body}; done"
        elif kind == "while":
            body = f"{v}=0; while (( {v} < {n} )); do {body}; {v}=$(({v}+1)); done"
        else:
            body = f"for {v} in " + " ".join(str(k) for k in range(min(n, 250))) + f"; do {body}; done"
    return body + "\n"


@pytest.mark.parametrize("seed", range(6))
def test_loops_past_the_budget_make_what_they_set_unknown_and_nothing_else(seed):
    rng = random.Random(seed)
    loops = _loops(rng, rng.randint(3, 4), "X=$i0; Y+=a")
    found, _text = _read("A=1\n" + loops + "B=$X\n")
    assert any(f"line 4: the commands there take {BUDGET}" in u for u in found.unknowns), found.unknowns
    assert _tp(found) == "2"  # TP is not set in the loops: still known
    env = found.env
    assert env["A"].value == "1"  # set before: known
    assert str(env["X"].value) == str(env["B"].value) and env["X"].value != "1"  # set there: unknown, and what uses it


def test_a_variable_the_given_up_command_sets_is_unknown_with_the_budget_and_the_line():
    found, _text = _read("f() { TP=8; f; f; }\nf\n")
    assert _tp(found) is None
    assert any(f"$TP may be set by the commands on line 4, which take {BUDGET}" in u for u in found.unknowns)


def test_eval_in_a_given_up_command_makes_every_variable_unknown():
    found, _text = _read("A=1\nfor ((i=0;i<200;i++)); do for ((j=0;j<200;j++)); do eval V$j=1; done; done\n")
    assert _tp(found) is None and found.env["A"].value != "1"


def test_many_paths_past_the_budget_become_one_and_the_script_is_read_to_its_launch():
    forks = "".join(f'if [ -n "$E{i}" ]; then V{i}=1; fi\n' for i in range(6))
    found, _text = _read(forks + "".join(f"W{i}={i}\n" for i in range(400)) + "TP=4\n")
    assert _tp(found) == "4"  # set after the command given up: known again
    assert any(BUDGET in u for u in found.unknowns)


def test_a_launch_inside_an_if_after_forty_given_up_loops_is_still_read(tmp_path):
    path = forty_loops_past_the_step_budget(tmp_path)
    shell._READINGS.clear()
    start = time.process_time()
    found = shell.read_launch_script(str(path), path.read_text())
    assert _tp(found) == "2"
    note = next(u for u in found.unknowns if BUDGET in u)
    assert note.startswith("lines 3, 4, 5, 6, 7, 8, 9, 10 and ")  # one sentence, the lines named
    assert time.process_time() - start < 30  # a hang guard, not a measurement (bench/hostile_shell.py)


@pytest.mark.parametrize("seed", range(4))
def test_the_whole_reading_stays_within_its_steps(seed, monkeypatch):
    """However many top-level commands run past the budget, the reading takes at most TOTAL_STEPS steps
    and the skimming reserve, plus one step per top-level simple command."""
    rng = random.Random(100 + seed)
    items = [_loops(rng, 2, "X=$i0") if rng.random() < 0.7 else f"V{k}=1\n" for k in range(rng.randint(20, 60))]
    text = "#!/bin/bash\nTP=2\n" + "".join(items) + "if true; then " + LAUNCH.strip() + "; fi\n"
    seen: list = []
    real = Reader.run_script

    def counted(self, start=None):
        real(self, start)
        seen.append(self.steps)

    monkeypatch.setattr(Reader, "run_script", counted)
    shell._READINGS.clear()
    found = shell.read_launch_script("gen.sh", text)
    assert max(seen) <= shell_budget.total_steps() + shell_budget.skim_reserve() + len(items) + 2
    assert _tp(found) in ("2", None)


@pytest.mark.parametrize("tail, tp", [("bash -c '" + LAUNCH.strip().replace("$TP", "8") + "'\n", "8"),
                                      ("A=1 bash -c 'echo x'\n" + LAUNCH, "2")])
def test_a_bash_c_string_after_the_whole_budget_is_read_or_given_up_never_an_error(tail, tp):
    loops = "for ((i=0;i<300;i++)); do for ((j=0;j<300;j++)); do X=$j; done; done\n" * 30
    found, _text = _read(loops, tail)
    assert _tp(found) == tp


def test_a_script_that_spends_the_skimming_reserve_on_decoys_is_one_line_naming_the_budget():
    """Past the whole budget and the reserve, a launch in a compound command is not read: the input error
    says why (never a hang, never an internal error)."""
    decoy = "for ((i=0;i<100;i++)); do for ((j=0;j<100;j++)); do X=$j; done; echo torchrun; done\n"
    with pytest.raises(InputError) as err:
        _read(decoy * 400, "if true; then " + LAUNCH.strip() + "; fi\n")
    assert "no Megatron-LM launch line found" in str(err.value) and BUDGET in str(err.value)


def test_through_the_cli_with_the_real_budget_the_file_is_checked(run_cli, tmp_path, monkeypatch):
    monkeypatch.undo()
    path = tmp_path / "train.sh"
    path.write_text("#!/bin/bash\nTP=2\nf() { TP=8; f; f; }\nf\n" + LAUNCH)
    code, out, err = run_cli("check", str(path), "--show-effective", "--show-info")
    assert code == 0, out + err
    assert "model.tensor_model_parallel_size                    unknown" in out
    real = f"more than {shell_budget.STEP_LIMIT:,} steps to follow statically (the reader's step budget)"
    assert f"$TP may be set by the commands on line 4, which take {real}" in out
