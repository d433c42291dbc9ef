"""Brace expansion in launch scripts (config/shell_braces.py): ``{a,b}``, ``{1..N}``, ``{01..10..3}``, ``{a..e}``
in command words, ``for`` lists and array elements, as bash makes them (bash itself is the oracle on seeded
words), bounded by the expansion budget: ``{1..1000000000}`` is unknown with the reason, never built."""

from __future__ import annotations

import random
import shutil
import subprocess
import time

import pytest

from bench.hostile_shell import LAUNCH
from overlap_cli.config import shell
from overlap_cli.config.shell_expand import MAX_EXPANSION

HANG_GUARD = 60


def _words(word_text: str) -> list:
    """The words the reader makes of ``torchrun pretrain_gpt.py WORDS`` after the script name (None: unknown)."""
    shell._READINGS.clear()
    reader = shell._run("b.sh", f"torchrun pretrain_gpt.py {word_text}\n")
    fields = reader.records[0][2]
    return [f.text for f in fields[2:]]


@pytest.mark.skipif(shutil.which("bash") is None, reason="bash is the oracle")
def test_seeded_brace_words_expand_as_bash_does():
    rng = random.Random(7)
    pieces = ["{", "}", ",", "a", "b", "x", "1", "3", "..", "0", "-", "\\{", "\\,", "'q,r'", '"{1,2}"', "{a,b}",
              "{1..4}", "{c..a}", "{05..1..2}", "{}", "{z}"]
    words = []
    for _ in range(400):
        w = "".join(rng.choice(pieces) for _ in range(rng.randint(1, 7)))
        if w.count("'") % 2 or w.count('"') % 2:
            continue
        words.append(w)
    script = "".join(f"printf '%s\\n' {w}; echo '--END--'\n" for w in words)
    out = subprocess.run(["bash", "-c", script], capture_output=True, text=True, timeout=HANG_GUARD).stdout
    answers = [block.strip("\n").split("\n") if block.strip("\n") else [""] for block in out.split("--END--\n")[:-1]]
    assert len(answers) == len(words)
    compared = 0
    for w, answer in zip(words, answers):
        got = _words(w)
        assert got == answer, (w, got, answer)
        compared += 1
    assert compared > 300


@pytest.mark.parametrize("body, tp", [
    ("for t in {1..4}; do TP=$t; done\n", "4"),
    ("S=({2..8..2}); TP=${S[2]}\n", "6"),
    ("for t in {a..c}{1,2}; do TP=$t; done\n", "c2"),
    ("S=(x{,y}); TP=${S[1]}\n", "xy"),
    ("TP={1,2}\n", "{1,2}"),  # an assignment's value is not brace-expanded
])
def test_braces_expand_before_the_launch_reads_the_sizes(body, tp):
    shell._READINGS.clear()
    found = shell.read_launch_script("b.sh", "#!/bin/bash\n" + body + LAUNCH)
    i = next(k for k, t in enumerate(found.tokens) if t.text == "--tensor-model-parallel-size")
    assert found.tokens[i + 1].text == tp


@pytest.mark.parametrize("word", ["{1..1000000000}", "{a,b}{1..100000}", "{1..10}{1..10}{1..10}{1..10}{1..10}",
                                  "{0001..9999999999999999999999}"])
def test_a_brace_past_the_budget_is_unknown_with_the_reason_never_built(word):
    start = time.process_time()
    shell._READINGS.clear()
    found = shell.read_launch_script("b.sh", f"#!/bin/bash\nfor t in {word}; do TP=$t; done\nA=({word})\n" + LAUNCH)
    assert time.process_time() - start < 10  # a hang guard: counted, not built
    i = next(k for k, t in enumerate(found.tokens) if t.text == "--tensor-model-parallel-size")
    assert found.tokens[i + 1].text is None
    assert any(f"more than {MAX_EXPANSION:,} characters" in u for u in found.unknowns), found.unknowns


def test_a_brace_in_a_variable_value_is_not_expanded_again():
    """bash does brace expansion before parameter expansion: ``$V`` holding ``{1,2}`` is one word."""
    assert _words("$V") == [None]
    shell._READINGS.clear()
    reader = shell._run("b.sh", "V='{1,2}'\ntorchrun pretrain_gpt.py $V\n")
    assert [f.text for f in reader.records[0][2][2:]] == ["{1,2}"]
