"""Everything `overlap check` prints for a Megatron-LM launch, against the real thing.

The launches are generated (mlm_launches.py: seeded, the same on every machine) in every form a launch is
written in; bash runs each one with stand-in launchers to say which words and variables reach the launch
(mlm_shim.py); each megatron-core release's real ``parse_args`` + ``validate_args`` and the configs training.py
builds say what the launch does (mlm_reference.py, one subprocess for all, in the environment holding that
release: 0.17.1 in Bridge 0.4.2's, 0.18.2 in 0.5.1's, 0.19.2 in 0.6.2's; a release skips without it), and
the tool checks the same file against that release (``core_version``). differential.compare then holds the tool to the outcome,
the data-parallel size and every key of ``effective`` — the keys are the tool's own, so a key added later
is compared without a list to update.

These are real assertions: on a branch where the resolver prints a wrong value they fail, naming the key,
the tool's value and the real one (bench/differential.py prints the same as a table).
"""

from __future__ import annotations

import collections

import pytest

import mlm_compare
import mlm_launches
import mlm_shim
from lmref import core_python
from overlap_cli.frameworks.megatron_lm.releases import CORE

LAUNCHES = mlm_compare.launches()
_REFERENCES: dict = {}


def reference_of(core: str, tmp_path_factory) -> dict:
    """id -> the real results of megatron-core ``core`` (computed once per release and run)."""
    if core not in _REFERENCES:
        python = core_python(core)
        if python is None:
            _REFERENCES[core] = f"no environment with megatron-core {core} (a Bridge release's that pins it)"
        elif not mlm_shim.available():
            _REFERENCES[core] = "bash (with env, envsubst, xargs) is needed to run the launches"
        else:
            try:
                _REFERENCES[core] = mlm_compare.reference_cached(python, LAUNCHES, tmp_path_factory.mktemp("mlm-ground-truth"))
            except RuntimeError as exc:
                _REFERENCES[core] = str(exc)
    if isinstance(_REFERENCES[core], str):
        pytest.skip(_REFERENCES[core])
    return _REFERENCES[core]


@pytest.fixture(scope="module", params=CORE.versions())
def reference(request, tmp_path_factory):
    return request.param, reference_of(request.param, tmp_path_factory)


_TOOL: dict = {}


def tool_result(launch, folder, core):
    if (core, launch.id) not in _TOOL:
        _TOOL[core, launch.id] = mlm_compare.check(launch, folder, core)
    return _TOOL[core, launch.id]


@pytest.mark.parametrize("core", CORE.versions())
@pytest.mark.parametrize("launch", LAUNCHES, ids=[launch.id for launch in LAUNCHES])
def test_same_as_megatron_lm(tmp_path_factory, tmp_path, launch, core):
    real = reference_of(core, tmp_path_factory)
    found = mlm_compare.disagreements(launch, tool_result(launch, tmp_path, core), real[launch.id])
    assert not found, "\n".join(str(d) for d in found)


def test_every_printed_key_has_a_reference_value(reference, tmp_path):
    """The no-list-to-forget guarantee: every key the tool prints, over every launch Megatron-LM starts, has
    its real counterpart in that release — and a key the real configs do not have is refused, not answered
    with None."""
    core, reference = reference
    missing = collections.defaultdict(list)
    printed = set()
    for launch in LAUNCHES:
        for variant in reference[launch.id]:
            if variant["failed"]:
                continue
            keys = tool_result(launch, tmp_path, core).get("effective", {})
            printed |= set(keys)
            for key in keys:
                try:
                    mlm_compare.lookup(variant, key)
                except KeyError:
                    missing[key].append(launch.id)
    assert not missing, {k: v[:3] for k, v in missing.items()}
    assert {k.split(".")[0] for k in printed} >= {"model", "ddp", "optimizer", "env"}
    launched = next(v for launch in LAUNCHES for v in reference[launch.id] if not v["failed"])
    with pytest.raises(KeyError):
        mlm_compare.lookup(launched, "model.no_such_field")


def test_the_generated_launches_are_meaningful():
    """Without the environment too: the set is large, seeded, and spans every form and dimension."""
    assert len(LAUNCHES) >= 500
    again = mlm_compare.launches()
    assert [mlm_launches.render(a) for a in again] == [mlm_launches.render(b) for b in LAUNCHES]
    forms = collections.Counter(launch.form for launch in LAUNCHES)
    assert set(forms) == set(mlm_launches.FORMS) and min(forms.values()) >= 15, forms
    flags = collections.Counter(f for launch in LAUNCHES for f in {f for f, _ in launch.flags})
    for flag in ("--bf16", "--fp16", "--fp8-format", "--fp8-recipe", "--fp8-param-gather", "--grad-reduce-in-bf16",
                 "--main-grads-dtype", "--accumulate-allreduce-grads-in-fp32", "--tensor-model-parallel-size",
                 "--sequence-parallel", "--tp-comm-overlap", "--pipeline-model-parallel-size",
                 "--num-layers-per-virtual-pipeline-stage", "--num-virtual-stages-per-pipeline-rank",
                 "--pipeline-model-parallel-layout", "--context-parallel-size", "--num-experts",
                 "--expert-model-parallel-size", "--expert-tensor-parallel-size", "--moe-token-dispatcher-type",
                 "--overlap-moe-expert-parallel-comm", "--use-distributed-optimizer", "--overlap-grad-reduce",
                 "--overlap-param-gather", "--ddp-bucket-size", "--ddp-num-buckets", "--use-megatron-fsdp",
                 "--use-torch-fsdp2", "--overlap-param-gather-with-optimizer-step"):
        assert flags[flag] >= 8, (flag, flags[flag])
    hows = collections.Counter(launch.conn_how if launch.conn else "unset" for launch in LAUNCHES)
    assert {"export", "prefix", "env", "assigned", "caller-default", "ENV_VARS", "unset"} <= set(hows), hows
    assert {launch.arch for launch in LAUNCHES} == {9, 10}
    assert sum(1 for launch in LAUNCHES if launch.caller) >= 40
    sizes = collections.Counter(launch.world_size for launch in LAUNCHES)
    assert len(sizes) >= 6


def test_both_outcomes_are_well_represented(reference):
    reference = reference[1]
    launched = [launch for launch in LAUNCHES if not any(v["failed"] for v in reference[launch.id])]
    refused = [launch for launch in LAUNCHES if all(v["failed"] for v in reference[launch.id])]
    assert len(launched) >= 200 and len(refused) >= 150, (len(launched), len(refused))
    for form in mlm_launches.FORMS:
        ok = sum(1 for launch in launched if launch.form == form)
        bad = sum(1 for launch in refused if launch.form == form)
        assert ok >= 3 and bad >= 3, (form, ok, bad)
    messages = {v["error"] for launch in refused for v in reference[launch.id]}
    assert len(messages) >= 25, len(messages)
    # and no launch was lost on the way: bash reached a launcher in every one
    assert not [launch.id for launch in LAUNCHES for v in reference[launch.id] if v.get("stage") == "bash"]
