"""Issue 31's budget, as the pre-commit hook runs it: a 40,000-line launch script checked in a fresh interpreter
within about a second of CPU (user + system, which the machine's load barely moves; bench/hostile_shell.py
prints it). Before the run's objects were frozen at exit (cli/fast.py ``_exit``) the collection at interpreter
exit walked the whole reading again: 1.5 s."""

from __future__ import annotations

from bench.hostile_shell import forty_thousand_lines, run_one
from conftest import ROOT


def test_forty_thousand_lines_are_checked_within_a_second_of_cpu(tmp_path):
    path = forty_thousand_lines(tmp_path)
    runs = [run_one(path, 60.0, ROOT) for _ in range(2)]
    _seconds, _rss, code, cpu = min(runs, key=lambda r: r[3])  # the cheaper of two: a busy moment is not the code
    assert code == 1  # the launch is read: TP=2 is checked (bench.hostile_shell.SHELL_HOSTILE's expectation)
    assert cpu < 1.25, cpu
