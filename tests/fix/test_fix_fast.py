"""The text fast path of `overlap fix` (fixfast) writes exactly what the round-trip tree would.

Each rule case and example is fixed twice, with safe and with unsafe fixes: once as `fix` runs (plain
scalar edits straight on the text) and once with every edit made on ruamel's round-trip tree. The two
texts must be identical, byte for byte.
"""

from __future__ import annotations

import sys
from pathlib import Path

import pytest
from conftest import ROOT as ROOT_DIR  # noqa: E402

ROOT = ROOT_DIR
sys.path.insert(0, str(ROOT / "tests"))
from caselib import CASES, read_header  # noqa: E402

FILES = CASES + sorted((ROOT / "examples").glob("*.yaml"))
FILES += sorted((ROOT / "examples" / "bridge").glob("*.yaml"))


def _fix(path: Path, unsafe: bool) -> str:
    from overlap_cli.cli.check import target_from_options
    from overlap_cli.cli.options import TARGET, options
    from overlap_cli.fix.loop import fix_text

    args = read_header(path)["args"] if path.parent.name == "cases" else []
    flags = {"--world-size": None, "--gpu": None, "--te-version": None, "--torch-version": None}
    te = None
    i = 0
    while i < len(args):
        if args[i] in flags and i + 1 < len(args):
            flags[args[i]] = args[i + 1]
            i += 2
            continue
        te = False if args[i] == "--no-te" else te
        i += 1
    world = int(flags["--world-size"]) if flags["--world-size"] else None
    given = options(TARGET, world_size=world, te=te, gpu=flags["--gpu"], te_version=flags["--te-version"],
                    torch_version=flags["--torch-version"])  # fmt: skip
    target = target_from_options(given, str(path))
    return fix_text(str(path), path.read_text(encoding="utf-8"), target, unsafe=unsafe, threshold="info").fixed


@pytest.mark.parametrize("unsafe", [False, True], ids=["safe", "unsafe"])
@pytest.mark.parametrize("path", FILES, ids=lambda p: str(p.relative_to(ROOT)))
def test_fast_path_matches_the_round_trip_tree(path, unsafe, monkeypatch):
    from overlap_cli.fix import fast as fixfast

    fast = _fix(path, unsafe)
    monkeypatch.setattr(fixfast, "possible", lambda text: False)  # every edit on the round-trip tree
    assert _fix(path, unsafe) == fast


def test_fast_path_is_taken_for_a_scalar_edit(monkeypatch):
    """A Bridge dump with one scalar fix never loads ruamel's tree (its sequence_parallel: false is Bridge's
    serialised value, so turning it on is safe)."""
    from overlap_cli.fix import tree as fixtree

    calls = []
    real = fixtree.load
    monkeypatch.setattr(fixtree, "load", lambda text: calls.append(1) or real(text))
    text = _fix(ROOT / "tests" / "data" / "tp102_dumped_model.yaml", False)
    assert "sequence_parallel: true" in text and not calls


@pytest.mark.parametrize(
    "value, written",
    [(True, "true"), (8, "8"), ("nccl", "nccl"), ("yes", '"yes"'), ("a b", '"a b"'), ("1.5", '"1.5"'), (None, "null")],
)
def test_rendered_scalars_read_back_as_the_same_value(value, written):
    from overlap_cli.fix.fast import render
    from overlap_cli.config.yamlnodes import parse_yaml

    assert render(value) == written
    assert parse_yaml(f"k: {written}\n", "<t>")[0] == {"k": value}
