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


def run_entry_point(*args, input=None):
    """``overlap ARGS`` in this process, through the console script's function (cli.fast.main: ``check`` on
    the fast path, everything else through it to Typer); returns (exit_code, stdout, stderr)."""
    import io
    import types

    from overlap_cli.cli.fast import main

    saved = sys.argv, sys.stdin, sys.stdout, sys.stderr, sys.modules["__main__"]
    out, err = io.StringIO(), io.StringIO()
    sys.argv = ["overlap", *(str(a) for a in args)]
    sys.stdin, sys.stdout, sys.stderr = io.StringIO(input or ""), out, err
    # The console script's __main__ is a plain script, so click names the program after argv[0] ("overlap");
    # under `python -m pytest` it would otherwise say "python -m pytest".
    sys.modules["__main__"] = types.ModuleType("__main__")
    try:
        main()
        code = 0
    except SystemExit as exc:
        code = exc.code if isinstance(exc.code, int) else (0 if exc.code is None else 1)
    finally:
        sys.argv, sys.stdin, sys.stdout, sys.stderr, sys.modules["__main__"] = saved
    return code, out.getvalue(), err.getvalue()


@pytest.fixture
def run_cli():
    """Run the CLI in-process as users run it (run_entry_point); returns (exit_code, stdout, stderr)."""
    return run_entry_point


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
