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

    from overlap_cli.cli.app import app

    def run(*args, input=None):
        runner = CliRunner()
        res = runner.invoke(app, [str(a) for a in args], input=input, catch_exceptions=False)
        return res.exit_code, res.stdout, res.stderr

    return run


# Megatron-Bridge 0.6.2's own recipes, as its serializer writes them, with each one's world size and GPU
# (manifest.jsonl). The shared reference folder sits beside the repository on developer machines and CI;
# OVERLAP_CORPUS names another copy.
CORPUS = Path(os.environ.get("OVERLAP_CORPUS") or ROOT.parent / "shared" / "reference" / "bridge_recipes")


def corpus_manifest() -> list:
    """[{file, recipe, world_size, gpu, path}] for every recipe of the corpus; [] when it is absent."""
    import json

    manifest = CORPUS / "manifest.jsonl"
    if not manifest.is_file():
        return []
    rows = [json.loads(line) for line in manifest.read_text().splitlines() if line.strip()]
    for row in rows:
        row["path"] = str(CORPUS / row["file"])
    return rows


@pytest.fixture(scope="session")
def corpus() -> list:
    rows = corpus_manifest()
    if not rows:
        pytest.skip(f"the recipe corpus is not at {CORPUS} (set OVERLAP_CORPUS)")
    return rows
