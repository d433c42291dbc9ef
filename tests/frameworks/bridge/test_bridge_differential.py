"""Everything `overlap check` prints for a Megatron-Bridge run, against Bridge itself.

The runs are generated (bridge_runs.py: seeded, from the corpus manifest) in four forms — an edited full
dump as the config, the same with the model in the GPTModelConfig form, ``--recipe NAME`` with override
files and dotlists (``key=v``, ``+``, ``++``, ``~`` on fields and sections, null ones included), and
``--base DUMP`` with them — plus the hand-written runs of the first version of this test. megatron-bridge
0.6.2 builds each one (bridge_reference.py: ``from_yaml``, ``process_config_with_overrides``, the steps of
``runtime_config_update`` and all of ``validate()``; a ``--recipe`` run as the recipe is built on the target,
with Transformer Engine), one subprocess for all, in an environment that has Bridge; everything here
skips without it. differential.compare holds the tool to the outcome, the data-parallel size and every key
of ``effective`` (``env.*`` against the process environment after ``apply_environment_variables``,
``model.tp_comm_overlap_cfg``'s te_config against the dict Bridge hands Transformer Engine).

These are real assertions: where the resolver prints a wrong value they fail, naming the key, the tool's
value and Bridge's (bench/differential.py prints the same as a table).
"""

from __future__ import annotations

import collections

import pytest

import bridge_compare
import bridge_runs
from differential import reference_python

RUNS = bridge_compare.runs()


@pytest.fixture(scope="module")
def reference(tmp_path_factory):
    python = reference_python()
    if python is None:
        pytest.skip("no environment with megatron-bridge 0.6.2 (set OVERLAP_BRIDGE_ENV)")
    if not RUNS:
        pytest.skip("the recipe corpus is not there (set OVERLAP_CORPUS)")
    try:
        return bridge_compare.reference_cached(python, RUNS, tmp_path_factory.mktemp("bridge-reference"))
    except RuntimeError as exc:
        pytest.skip(str(exc))


_TOOL: dict = {}


def tool_result(run, folder):
    if run.id not in _TOOL:
        _TOOL[run.id] = bridge_compare.check(run, folder)
    return _TOOL[run.id]


@pytest.mark.parametrize("run", RUNS, ids=[run.id for run in RUNS])
def test_same_as_bridge(reference, tmp_path, run):
    why = bridge_compare.unmodelled(run, reference[run.id])
    if why:
        pytest.skip(why)
    found = bridge_compare.disagreements(run, tool_result(run, tmp_path), reference[run.id])
    assert not found, "\n".join(str(d) for d in found)


def test_every_printed_key_has_a_reference_value(reference, tmp_path):
    """The no-list-to-forget guarantee: every key the tool prints, over every run Bridge launches, has its
    real counterpart; a key the real configs do not hold is refused, not answered with None."""
    missing = collections.defaultdict(list)
    printed = set()
    for run in RUNS:
        real = reference[run.id][0]
        if real["failed"]:
            continue
        keys = tool_result(run, tmp_path).get("effective", {})
        printed |= set(keys)
        for key in keys:
            try:
                bridge_compare.lookup(real, key)
            except KeyError:
                missing[key].append(run.id)
    assert not missing, {k: v[:3] for k, v in missing.items()}
    assert {k.split(".")[0] for k in printed} >= {"model", "ddp", "optimizer", "env"}
    launched = next(reference[run.id][0] for run in RUNS if not reference[run.id][0]["failed"])
    with pytest.raises(KeyError):
        bridge_compare.lookup(launched, "ddp.no_such_field")


def test_the_generated_runs_are_meaningful():
    """Without the environment too: the set is large, seeded, and spans every form and kind of change."""
    if not RUNS:
        pytest.skip("the recipe corpus is not there (set OVERLAP_CORPUS)")
    assert len(RUNS) >= 500
    assert [repr(r) for r in bridge_compare.runs()] == [repr(r) for r in RUNS]
    forms = collections.Counter(run.form for run in RUNS)
    assert set(forms) == set(bridge_runs.FORMS) and min(forms.values()) >= 30, forms
    words = [w for run in RUNS for w in run.dotlists]
    assert sum(w.startswith("~") for w in words) >= 10
    assert sum(w.startswith("++") for w in words) >= 10
    assert sum(w.startswith("+") and not w.startswith("++") for w in words) >= 10
    assert sum(w[0] not in "+~" for w in words) >= 50
    assert sum(len(run.files) > 1 for run in RUNS) >= 10
    edits = [e for run in RUNS for e in run.edits] + \
        [(tuple(w.lstrip("+~").split("=")[0].split(".")), None) for w in words]
    sections = collections.Counter(path[0] for path, _ in edits)
    assert all(sections[s] >= 10 for s in ("model", "comm_overlap", "ddp", "mixed_precision", "env_vars")), sections
    assert sum(1 for run in RUNS for path, value in run.edits if path == ("comm_overlap",) and value is None) >= 5
    assert len({run.recipe for run in RUNS}) >= 150
    assert len({run.gpu for run in RUNS}) >= 4


def test_both_outcomes_are_well_represented(reference):
    launched = [run for run in RUNS if not reference[run.id][0]["failed"]]
    refused = [run for run in RUNS if reference[run.id][0]["failed"]]
    assert len(launched) >= 150 and len(refused) >= 100, (len(launched), len(refused))
    for form in bridge_runs.FORMS:
        ok = sum(1 for run in launched if run.form == form)
        bad = sum(1 for run in refused if run.form == form)
        assert ok >= 5 and bad >= 5, (form, ok, bad)
    stages = collections.Counter(reference[run.id][0]["stage"] for run in refused)
    assert len(stages) >= 4, stages
