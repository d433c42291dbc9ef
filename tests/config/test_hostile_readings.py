"""How often a long launch script is read (config/shell.py ``_read``): each reading of a 40,000-line script
costs most of a second, so discovery's first-launch reading that reaches the end of the script is the check's
whole reading."""

from __future__ import annotations

import pytest

from bench.hostile_shell import LAUNCH
from overlap_cli.config import shell
from overlap_cli.config.shell_eval import Reader


@pytest.fixture
def runs(monkeypatch) -> list:
    calls: list = []
    real = Reader.run_script

    def counted(self, start=None):
        calls.append((self.first_only, self.take_defaults))
        return real(self, start)

    monkeypatch.setattr(Reader, "run_script", counted)
    shell._READINGS.clear()
    return calls


def test_a_script_whose_launch_ends_it_is_read_once_for_discovery_and_the_check(run_cli, tmp_path, runs):
    path = tmp_path / "train.sh"
    path.write_text("#!/bin/bash\nTP=2\n" + "".join(f"V{i}={i}\n" for i in range(200)) + LAUNCH)
    code, out, err = run_cli("check", str(path), "--show-effective")
    assert "model.tensor_model_parallel_size                    2" in out, out + err
    assert runs == [(True, True)]  # the sniff's reading reached the end of the script: the check's too


def test_a_launch_reached_on_many_paths_is_read_for_discovery_then_whole(run_cli, tmp_path, runs):
    """The sniff stops at the second path that reaches the launch: not a whole reading, so the check reads again."""
    path = tmp_path / "train.sh"
    path.write_text('#!/bin/bash\nif [ -n "$A" ]; then TP=2; else TP=4; fi\n' + LAUNCH)
    run_cli("check", str(path))
    assert runs == [(True, True), (False, True)]
