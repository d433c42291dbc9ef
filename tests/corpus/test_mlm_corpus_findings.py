"""NVIDIA's CI launches the Megatron-LM functional-test configs its recipes schedule for every merge request
and every night, so none of them may get an error finding: each such launch (MODEL_ARGS and MODEL_ARGS_N of
core_r0.19.0, scopes in DAILY) is checked on the targets its recipes give it (tests/test_utils/recipes/<platform>/*.yaml: the spec's nodes, the platforms of
the spec or of the product entry). The launcher runs ``--nproc_per_node $GPUS_PER_NODE --nnodes $NUM_NODES``
with ``GPUS_PER_NODE`` defaulting to 8 (a checkpoint-consistency test sets it per MODEL_ARGS_N) (tests/functional_tests/shell_test_utils/_run_training.sh:184-196),
whatever the recipe's ``gpus`` request (inference recipes ask for 1 GPU and run TP2 x PP2): a node has 8
GPUs, a GB200 node (tray) 4. Skipped without a Megatron-LM tree (bench/mlm_corpus.py)."""

from __future__ import annotations

import re

import pytest
import yaml

from bench import mlm_corpus

pytestmark = pytest.mark.skipif(not mlm_corpus.available(), reason=f"no Megatron-LM tree at {mlm_corpus.source()} (set OVERLAP_MLM_TESTS)")

GPUS = {"dgx_h100": "h100", "dgx_a100": "a100", "dgx_gb200": "gb200"}
# Scopes that run on every merge request or every night; weekly, broken, flaky, deprecated and
# temporarily disabled products do not.
DAILY = {"mr", "mr-github", "mr-slim", "mr-github-slim", "nightly", "L0-smoke"}
# Launches outside DAILY that do get an error, each confirmed with the real parse_args + validate_args of
# megatron-core 0.19.2: the weekly TP-overlap test also asks for --deterministic-mode, whose check
# (megatron/training/determinism.py:143, since 3ab71eeb3e) rejects --tp-comm-overlap.
KNOWN_FAILING = {"gpt3_weekly_mcore_tp2_pp2_current_scaling_native_fp8_tp_pp_sp_tp_overlap": {"LM104"}}
GPUS_PER_NODE = {"h100": 8, "a100": 8, "gb200": 4}


def recipe_targets(src: str) -> dict:
    """test case name -> {(world size, gpu, daily)} over the recipes that schedule it."""
    out: dict = {}
    for text in mlm_corpus.read_tree(src, mlm_corpus.RECIPES, ".yaml").values():
        try:
            doc = yaml.safe_load(text)
        except yaml.YAMLError:
            continue
        if not isinstance(doc, dict) or not isinstance(doc.get("spec"), dict):
            continue
        spec = doc["spec"]
        nodes = spec.get("nodes") or 1
        default = spec.get("platforms")
        for entry in doc.get("products") or ():
            cases = entry.get("test_case") or ()
            runs = set()
            for product in entry.get("products") or [{}]:
                p = product.get("platforms", default)
                scope = product.get("scope")
                daily = scope is None or bool(DAILY & set(scope if isinstance(scope, list) else [scope]))
                runs.update((platform, daily) for platform in (p if isinstance(p, list) else [p]))
            for case in cases if isinstance(cases, list) else [cases]:
                for platform, daily in runs:
                    if platform in GPUS:
                        gpu = GPUS[platform]
                        out.setdefault(case, set()).add((nodes * GPUS_PER_NODE[gpu], gpu, daily))
    return out


def launches(src: str) -> list:
    """(path, MODEL_ARGS key, text, world size, gpu, daily) for every scheduled launch."""
    targets = recipe_targets(src)
    out = []
    for path, text in sorted(mlm_corpus.read_tree(src, mlm_corpus.CASES, ".yaml").items()):
        if not path.endswith("model_config.yaml"):
            continue
        for ws, gpu, daily in sorted(targets.get(path.split("/")[-2], ())):
            for key in re.findall(r"^(MODEL_ARGS(?:_\d+)?)[ \t]*:", text, re.M):
                out.append((path, key, text, _world_of_key(text, key, ws, gpu), gpu, daily))
    return out


def _world_of_key(text: str, key: str, ws: int, gpu: str) -> int:
    """A checkpoint-consistency test runs each MODEL_ARGS_N on MODEL_ENV_VARS.<key>.GPUS_PER_NODE GPUs per node
    (tests/functional_tests/shell_test_utils/run_ci_test.sh:266-297)."""
    try:
        doc = yaml.safe_load(text)
    except yaml.YAMLError:
        return ws
    if not isinstance(doc, dict) or doc.get("TEST_TYPE") != "checkpoint-consistency":
        return ws
    per_node = ((doc.get("MODEL_ENV_VARS") or {}).get(key) or {}).get("GPUS_PER_NODE")
    return ws // GPUS_PER_NODE[gpu] * per_node if isinstance(per_node, int) else ws


@pytest.fixture(scope="module")
def checked():
    """[(path, key, ws, gpu, daily, findings)] for every scheduled launch that reads (the reader's own corpus
    test holds the rest)."""
    from overlap_cli.problems import InputError
    from overlap_cli.config.mlm_yaml import read_mlm_yaml
    from overlap_cli.frameworks.megatron_lm.args import launch_from_text
    from overlap_cli.frameworks.megatron_lm.resolver import resolve
    from overlap_cli.rules import run_rules
    from overlap_cli.launch_profile.profile import Target

    out = []
    for path, key, text, ws, gpu, daily in launches(mlm_corpus.source()):
        try:
            launch = launch_from_text(read_mlm_yaml(path, text, key=key))
        except InputError:
            continue
        target = Target(world_size=ws)
        target.gpu = gpu
        out.append((path, key, ws, gpu, daily, run_rules(resolve(launch, target))))
    return out


def test_no_launch_ci_runs_daily_gets_an_error(checked):
    assert sum(1 for c in checked if c[4]) > 300
    errors = [f"{p} {k} (world {ws}, {gpu}): {f.code} {f.message}"
              for p, k, ws, gpu, daily, findings in checked if daily for f in findings if f.severity == "error"]
    assert not errors, f"{len(errors)} error findings, e.g.\n" + "\n".join(errors[:10])


def test_errors_elsewhere_are_the_known_ones(checked):
    """Weekly, broken or disabled products: only the confirmed failures of KNOWN_FAILING."""
    got: dict = {}
    for p, _k, _ws, _gpu, daily, findings in checked:
        if not daily:
            for f in findings:
                if f.severity == "error":
                    got.setdefault(p.split("/")[-2], set()).add(f.code)
    assert got == KNOWN_FAILING


def test_the_rules_still_see_something(checked):
    """Not vacuous: the corpus has TP, PP and DP overlap for the rules to read (warnings and infos appear)."""
    codes = {f.code for *_, findings in checked for f in findings}
    assert {"LM201", "LM303"} <= codes, codes
