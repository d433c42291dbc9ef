"""How often a long launch script is read (config/shell.py ``_read``): each reading of a 40,000-line script
costs most of a second, so discovery and the check share one whole reading (discovery's reading stopped at the
first launch, and the check read the script again when a second path reached it)."""

from __future__ import annotations

import pytest

from bench.hostile_shell import LAUNCH
from overlap_cli.config import shell


@pytest.fixture
def runs(monkeypatch) -> list:
    """The take_defaults of each reading config.shell makes (its ``_run``), in order."""
    made: list = []
    real = shell._run
    monkeypatch.setattr(shell, "_run", lambda path, text, take_defaults=True, env=None: made.append(take_defaults)
                        or real(path, text, take_defaults, env))
    shell._READINGS.clear()
    return made


def test_a_script_whose_launch_ends_it_is_read_once_for_discovery_and_the_check(run_cli, tmp_path, runs):
    path = tmp_path / "train.sh"
    path.write_text("#!/bin/bash\nTP=2\n" + "".join(f"V{i}={i}\n" for i in range(200)) + LAUNCH)
    code, out, err = run_cli("check", str(path), "--show-effective")
    assert "model.tensor_model_parallel_size                    2" in out, out + err
    assert runs == [True]


@pytest.mark.parametrize("cases", [2, 5_000])
def test_a_launch_reached_on_many_paths_is_read_once(run_cli, tmp_path, runs, cases):
    path = tmp_path / "train.sh"
    items = "".join(f"  p{i}) TP={i % 2 * 2 + 2} ;;\n" for i in range(cases))
    path.write_text("#!/bin/bash\ncase $1 in\n" + items + "esac\n" + LAUNCH)
    code, out, err = run_cli("check", str(path), "--show-effective")
    assert "model.tensor_model_parallel_size                    unknown" in out, out + err
    assert runs == [True]
