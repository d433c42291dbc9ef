"""Everything `overlap check` prints for a Megatron-LM launch, against the real thing.

The launches are generated (mlm_launches.py: seeded, the same on every machine) in every form a launch is
written in; bash runs each one with stand-in launchers to say which words and variables reach the launch
(mlm_shim.py); megatron-core 0.19.2's real ``parse_args`` + ``validate_args`` and the configs training.py
builds say what the launch does (mlm_reference.py, one subprocess for all, in an environment that has
megatron-core; everything here skips without it). differential.compare then holds the tool to the outcome,
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
from differential import reference_python

LAUNCHES = mlm_compare.launches()


@pytest.fixture(scope="module")
def reference(tmp_path_factory):
    python = reference_python()
    if python is None:
        pytest.skip("no environment with megatron-core 0.19.2 (set OVERLAP_BRIDGE_ENV)")
    if not mlm_shim.available():
        pytest.skip("bash (with env, envsubst, xargs) is needed to run the launches")
    try:
        return mlm_compare.reference_cached(python, LAUNCHES, tmp_path_factory.mktemp("mlm-ground-truth"))
    except RuntimeError as exc:
        pytest.skip(str(exc))


_TOOL: dict = {}


def tool_result(launch, folder):
    if launch.id not in _TOOL:
        _TOOL[launch.id] = mlm_compare.check(launch, folder)
    return _TOOL[launch.id]


@pytest.mark.parametrize("launch", LAUNCHES, ids=[launch.id for launch in LAUNCHES])
def test_same_as_megatron_lm(reference, tmp_path, launch):
    found = mlm_compare.disagreements(launch, tool_result(launch, tmp_path), reference[launch.id])
    assert not found, "\n".join(str(d) for d in found)


def test_every_printed_key_has_a_reference_value(reference, tmp_path):
    """The no-list-to-forget guarantee: every key the tool prints, over every launch Megatron-LM starts, has
    its real counterpart — and a key the real configs do not have is refused, not answered with None."""
    missing = collections.defaultdict(list)
    printed = set()
    for launch in LAUNCHES:
        for variant in reference[launch.id]:
            if variant["failed"]:
                continue
            keys = tool_result(launch, tmp_path).get("effective", {})
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
