"""Training scripts written the ways people write them, against Python and Megatron-Bridge themselves.

tests/pyidioms.py generates seeded scripts, the idioms in turn (``IDIOMS`` below, the generator's own list
checked equal to it): statements at module level; the run under ``if __name__ == "__main__":``; ``main()``
called from it; argparse's defaults; argparse reading words (``=``, abbreviations, a word it refuses);
``parse_known_args`` whose leftover words go to ``process_config_with_overrides``; ``os.environ`` /
``os.getenv`` fed by ``--set``; helpers of the module (a closure among them); a ``@dataclass`` and a class
whose methods build the config; a loop over builder names; a mapping of lambdas chosen by an argparse
argument; a mapping of override profiles applied key by key; ``process_config_with_overrides`` with a YAML file
beside the script (``Path(__file__)``); ``OmegaConf.from_cli``; ``@hydra.main``; argparse reading the script's own
command line (``sys.argv[1:]``: ``python train.py WORDS`` for Bridge, ``overlap check train.py -- WORDS``);
the config built by a module of the user's beside the script (``import settings_lib``, ``from settings_lib import
build``, a package's module), which ``python train.py`` imports from the script's folder.

Each script is executed in an environment with megatron-bridge 0.6.2 (bridge_reference.py: run as
``python train.py`` runs it, the config taken where it is handed to ``pretrain``, then Bridge's runtime
update and validation; one subprocess for all) and ``overlap check train.py`` (with ``--set`` for the
environment the script is run with) is held to it by differential.compare: the outcome, the data-parallel
size and every key it prints. Everything here but the generator's own test skips without the environment
(``OVERLAP_BRIDGE_ENV``). OVERLAP_IDIOMS_RUNS=N / OVERLAP_IDIOMS_SEED=S run another seeded sample (say 60
for a quick look); the default is 595 scripts (35 per idiom) from seed 0.
"""

from __future__ import annotations

import collections
import json
import os
import subprocess

import pytest

import pyidioms
from bridge_compare import HERE, MARKER, lookup, project
from bridge_runs import GPUS
from conftest import CORPUS
from differential import cached, compare, reference_python, run_tool

IDIOMS = ("module", "main_guard", "main_function", "argparse_defaults", "argparse_words", "parse_known_overrides",
          "environ", "helper_functions", "helper_class", "recipe_loop", "dict_of_lambdas", "dict_overrides",
          "yaml_overrides", "omegaconf_from_cli", "hydra_main", "argparse_argv", "own_module")
COUNT = int(os.environ.get("OVERLAP_IDIOMS_RUNS", "595"))
SEED = int(os.environ.get("OVERLAP_IDIOMS_SEED", "0"))
CASES = pyidioms.generate(CORPUS, COUNT, SEED)


def _tool_args(case, script) -> list:
    args = [str(script), "--world-size", str(case.world_size), "--gpu", "h100", "--te-version", "2.12"]
    for name, value in case.environ.items():
        args += ["--set", f"{name}={value}"]
    if case.argv is not None:  # the script's own command line, as a launch passes it
        args += ["--", *case.argv]
    return args


@pytest.fixture(scope="module")
def executed(tmp_path_factory):
    """case id -> (script path, the real result)."""
    python = reference_python()
    if python is None:
        pytest.skip("no environment with megatron-bridge 0.6.2 (set OVERLAP_BRIDGE_ENV): the scripts cannot be executed")
    if not CASES:
        pytest.skip(f"the recipe dumps are not at {CORPUS} (set OVERLAP_CORPUS)")
    folder = tmp_path_factory.mktemp("py-idioms")
    scripts = {case.id: case.write(folder) for case in CASES}
    items = [{"mode": "script", "main": True, "config": str(scripts[case.id]), "files": [], "dotlists": [],
              "world_size": case.world_size, "environ": case.environ, "argv": case.argv or [],
              "gpu": {"major": GPUS["h100"][0], "name": GPUS["h100"][1]}} for case in CASES]

    def run() -> list:
        proc = subprocess.run([str(python), str(HERE / "bridge_reference.py")], input=json.dumps(items),
                              capture_output=True, text=True, timeout=5400)
        if proc.returncode != 0 or MARKER not in proc.stdout:
            raise RuntimeError(proc.stderr.strip()[-400:])
        return json.loads(proc.stdout.split(MARKER + "\n", 1)[1])

    inputs = [str(python), str(CORPUS)] + [case.text + repr(case.beside) + repr(case.environ) + repr(case.argv) for case in CASES] + \
        [(HERE / name).read_text() for name in ("bridge_reference.py",)]
    try:
        results = cached("py-idioms", inputs, run)
    except RuntimeError as exc:
        pytest.skip(f"the reference environment cannot run the scripts: {exc}")
    out = {}
    for case, result in zip(CASES, results):
        result["failed"] = result["stage"] is not None
        out[case.id] = (scripts[case.id], result)
    return out


@pytest.mark.parametrize("case", CASES, ids=[c.id for c in CASES])
def test_every_printed_key_agrees_with_the_executed_script(executed, case):
    """differential.compare: the outcome, the data-parallel size and every key `overlap check` prints
    against the script Bridge executed; where Bridge refuses (an argparse word, a Hydra override), the tool
    refuses the input too."""
    script, real = executed[case.id]
    result = run_tool(*_tool_args(case, script))
    found = compare(result, [real], lookup, quote=lambda v: False, project=project, input_stages=("load",))
    assert not found, (case.id, case.text, "\n".join(str(d) for d in found))
    if not real["failed"]:
        unknown = [k for k, v in result["effective"].items() if v["source"] == "unknown"]
        assert not unknown, (case.id, unknown[:5], result["effective"][unknown[0]]["reason"])


def test_both_outcomes_are_there(executed):
    """The sample holds scripts Bridge launches in every idiom and some it refuses."""
    launched = collections.Counter(case.idiom for case in CASES if not executed[case.id][1]["failed"])
    refused = [case.id for case in CASES if executed[case.id][1]["failed"]]
    assert launched and sum(launched.values()) + len(refused) == len(CASES)
    if COUNT >= 500:
        assert set(launched) == set(IDIOMS) and min(launched.values()) >= 20, launched
        assert len(refused) >= 5, refused


def test_the_generated_scripts_are_meaningful():
    """Without the environment too: the default sample is 500+ scripts over every idiom, seeded (the same
    scripts every time), each idiom's scripts different from one another."""
    if not CASES:
        pytest.skip(f"the recipe dumps are not at {CORPUS} (set OVERLAP_CORPUS)")
    assert tuple(pyidioms.IDIOMS) == IDIOMS
    assert [c.text for c in pyidioms.generate(CORPUS, COUNT, SEED)] == [c.text for c in CASES]
    by_idiom = collections.Counter(case.idiom for case in CASES)
    if COUNT >= 500:
        assert len(CASES) >= 500 and len(by_idiom) >= 12 and min(by_idiom.values()) >= 30, by_idiom
    for idiom in by_idiom:  # a script and the files beside it (a module of the user's builds the config there)
        texts = {case.text + "".join(sorted(case.beside.values())) for case in CASES if case.idiom == idiom}
        assert len(texts) > by_idiom[idiom] // 2, idiom
    assert any(case.environ for case in CASES) and any(case.beside for case in CASES)
