"""Each megatron-core release's shipped option table is what tools/build_mlm_arguments.py makes from that
release's real parser, and args.py gives a command line the meaning argparse gives it there (Megatron-LM's
parser, run in the environment holding that release: the Bridge release whose container pins it). A
release's comparison is skipped without its environment."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest

from conftest import ROOT
from lmref import core_python
from overlap_cli.problems import InputError
from overlap_cli.config.argv import LAUNCH_LINE, Token
from overlap_cli.frameworks.megatron_lm.args import UNKNOWN, parse_tokens, table_path
from overlap_cli.frameworks.megatron_lm.releases import CORE


# argv lists, each parsed by both; the real parser is core + the ModelOpt group (pretrain_gpt.py's).
ARGVS = [
    ["--tensor-model-parallel-size", "2", "--sequence-parallel"],
    ["--tensor-model-parallel-size=4", "--tensor-model-parallel-size", "2"],
    ["--no-overlap-p2p-communication", "--overlap-grad-reduce", "--use-distributed-optimizer"],
    ["--lr", "3e-4", "--min-lr", ".01", "--weight-decay", "1e-2"],
    ["--recompute-modules", "core_attn", "mlp", "--seed", "-1"],
    ["--attention-backend", "flash", "--transformer-impl", "local"],
    ["--hierarchical-context-parallel-sizes", "2", "2"],
    ["--tensor-model-parallel-size", "four"],
    ["--tensor-model-parallel", "2"],  # no abbreviations
    ["--sequence-parallel=true"],
    ["--num-layers"],
    ["--attention-backend", "fastest"],
    ["--sequence-parallel", "false"],
    ["--no-such-flag"],
]
# Options of the ModelOpt group, which only a Megatron-LM source tree holds (the wheel has no post_training/):
# compared only where the real parser could be given that group.
SOURCE_ARGVS = [
    ["--export-model-type", "HybridModel", "--export-te-mcore-model"],
]

REAL = r"""
import argparse, contextlib, io, json, sys, warnings
warnings.simplefilter("ignore")
tools, source, table_out = sys.argv[1:4]
sys.path.insert(0, tools)
import build_mlm_arguments as build
from megatron.training.arguments import add_megatron_arguments
if table_out:  # the table, built in this same process (one megatron import serves both tests)
    sys.argv = ["build_mlm_arguments.py", "--mlm-source", source, "-o", table_out]
    with contextlib.redirect_stderr(io.StringIO()):
        build.main()
text = build.read_source(source, "megatron/post_training/arguments.py")
out = []
for argv in json.loads(sys.stdin.read()):
    parser = argparse.ArgumentParser(allow_abbrev=False)
    add_megatron_arguments(parser)
    if text:
        build.provider_function(source, text, "add_modelopt_args", "arguments.py")(parser)
    err = io.StringIO()
    try:
        with contextlib.redirect_stderr(err):
            ns = parser.parse_args(argv)
    except SystemExit:
        out.append({"error": err.getvalue().strip().splitlines()[-1]})
        continue
    except Exception as exc:  # an Enum-typed option's handler raises KeyError past argparse: the launch fails too
        out.append({"error": repr(exc)})
        continue
    given = {a.dest for a in parser._actions for s in a.option_strings if any(w == s or w.startswith(s + "=") for w in argv)}
    out.append({d: (getattr(ns, d).name if hasattr(getattr(ns, d), "name") else getattr(ns, d)) for d in sorted(given)})
print(json.dumps(out, default=repr))
"""


def source_of(core: str) -> str:
    """The Megatron-LM source the release's table was built from: the ref its ``mlm_source`` names, in the
    mirror bench.mlm_corpus reads (``OVERLAP_MLM_SOURCE`` overrides it for the newest release only)."""
    from bench.mlm_corpus import DEFAULT_SOURCE

    ref = json.loads(Path(table_path(core)).read_text())["mlm_source"].split(" ")[1]
    if core == CORE.newest() and os.environ.get("OVERLAP_MLM_SOURCE"):
        return os.environ["OVERLAP_MLM_SOURCE"]
    return DEFAULT_SOURCE.rsplit("@", 1)[0] + "@" + ref


@pytest.fixture(scope="module", params=CORE.versions())
def real(request, tmp_path_factory):
    """(release, the table built from its source or None, the real parser's reading of each ARGVS)."""
    from bench.mlm_corpus import available

    core = request.param
    python = core_python(core)
    if python is None:
        pytest.skip(f"no environment with megatron-core {core} (a Bridge release's that pins it)")
    source = source_of(core)
    table_out = str(tmp_path_factory.mktemp("table") / "arguments.json") if available(source) else ""
    proc = subprocess.run([str(python), "-c", REAL, str(ROOT / "tools"), source, table_out],
                          input=json.dumps(ARGVS + SOURCE_ARGVS), capture_output=True, text=True, timeout=240)
    assert proc.returncode == 0, proc.stderr[-2000:]
    return core, table_out or None, json.loads(proc.stdout.strip().splitlines()[-1])


def tokens(argv):
    return [Token(w, 1, i + 1, LAUNCH_LINE) for i, w in enumerate(argv)]


def mine(argv, core):
    try:
        args = parse_tokens("x.sh", tokens(argv), script="pretrain_gpt.py", core=core)
    except InputError as exc:
        return {"error": exc.problem.message}
    return {d: a.value for d, a in args.items() if a.value is not UNKNOWN}


def test_argv_meaning_matches_the_real_parser(real):
    _same_meaning(ARGVS, real[2][: len(ARGVS)], real[0])


def test_modelopt_group_meaning_matches_the_real_parser(real):
    if real[1] is None:
        pytest.skip("no Megatron-LM source tree (OVERLAP_MLM_SOURCE) for the ModelOpt group")
    _same_meaning(SOURCE_ARGVS, real[2][len(ARGVS):], real[0])


def _same_meaning(argvs, reals, core):
    for argv, theirs in zip(argvs, reals, strict=True):
        ours = mine(argv, core)
        if "error" in theirs:
            assert "error" in ours, (argv, theirs, ours)
        else:
            assert ours == theirs, argv


def test_shipped_table_is_what_the_build_writes(real):
    if real[1] is None:
        pytest.skip("no Megatron-LM source tree (OVERLAP_MLM_SOURCE) for the optional groups")
    built, shipped = json.loads(Path(real[1]).read_text()), json.loads(Path(table_path(real[0])).read_text())
    assert built.pop("mlm_source").split(" ")[:2] == shipped.pop("mlm_source").split(" ")[:2]
    assert built == shipped and shipped["megatron_core"] == real[0]


def test_each_release_has_its_own_table():
    """No release reads another's table: each file names its own release, and the parsers differ (a flag
    only 0.19.x has, one only 0.17.x has), as the real ones do."""
    tables = {core: json.loads(Path(table_path(core)).read_text()) for core in CORE.versions()}
    assert len({table_path(core) for core in tables}) == len(tables) >= 3
    for core, doc in tables.items():
        assert doc["megatron_core"] == core and doc["mlm_source"].startswith("NVIDIA/Megatron-LM core_")
    flags = {core: {f for o in doc["options"] for f in o["flags"]} for core, doc in tables.items()}
    oldest, newest = CORE.versions()[0], CORE.newest()
    assert flags[newest] - flags[oldest] and flags[oldest] - flags[newest]
