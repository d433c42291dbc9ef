import os
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
os.environ.setdefault("NO_COLOR", "1")


@pytest.fixture
def root() -> Path:
    return ROOT


@pytest.fixture
def run_cli():
    """Run the CLI in-process (typer's CliRunner); returns (exit_code, stdout, stderr)."""
    from typer.testing import CliRunner

    from overlap_cli.cli import app

    def run(*args, input=None):
        runner = CliRunner()
        res = runner.invoke(app, [str(a) for a in args], input=input, catch_exceptions=False)
        return res.exit_code, res.stdout, res.stderr

    return run
