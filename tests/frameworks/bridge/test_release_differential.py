"""`overlap check --bridge-version R` against Megatron-Bridge R itself, for every release the tool mirrors
besides the default one (0.6.2 is test_bridge_differential's, over its 456-recipe corpus).

Per release R: recipes of R are built and written by R's own code (bridge_release_dumps.py, in R's
environment), so each dump holds exactly R's fields; seeded runs edit them as users do (bridge_runs._edit:
model, comm_overlap, ddp, optimizer, mixed precision, env_vars, sections nulled or replaced, batch sizes), and
probes aim at what differs between releases (env_vars, MTP depth and "moe" recompute with EP overlap, the
overlap_param_gather sync, Megatron-FSDP, MXFP8 reuse, the 0.6.2-only mixed-precision recipe, ddp.num_buckets,
the evaluation batch check).
R's environment runs each one (bridge_reference.py: from_yaml, R's runtime_config_update steps, validate()
and the launch checks after it); the tool checks the same file with ``bridge_version = R`` in a pyproject
beside it. differential.compare holds the tool to the outcome, the data-parallel size and every printed key.

Skips per release without its environment (tests/differential.py: reference_python(R)); CI has none.
"""

from __future__ import annotations

import json
import random
import subprocess
from pathlib import Path

import pytest

import bridge_compare
import bridge_runs
from differential import cached, reference_python, run_tool

HERE = Path(__file__).parent
RELEASES = ("0.4.2", "0.5.1", "0.6.0", "main")
RUNS_PER_RELEASE = 100
SEED = 20261204

# Recipes every release builds on CPU without a Hugging Face download (the others read a model's config from
# the Hub), with the world sizes a run may take (the recipe's own first). Pretraining only: an SFT recipe's
# dump names its example processor as a callable, which 0.5.1's from_yaml refuses to load back.
_R = "megatron.bridge.recipes"
RECIPES = (
    (f"{_R}.gpt.gpt3_175b:gpt3_175b_pretrain_config", (32, 64, 128)),
    (f"{_R}.nemotronh.nemotronh:nemotronh_8b_pretrain_config", (2, 8, 16)),
    (f"{_R}.nemotronh.nemotron_nano_v2:nemotron_nano_9b_v2_pretrain_config", (2, 8, 4)),
    (f"{_R}.nemotronh.nemotron_3_nano:nemotron_3_nano_pretrain_config", (16, 8, 32)),
    (f"{_R}.olmoe.olmoe_7b:olmoe_7b_pretrain_config", (8, 16, 32)),
)

# Edits aimed at what differs between releases: (name, edits, world size or None for the recipe's first).
_EP = [(("model", "expert_model_parallel_size"), 4), (("model", "moe_token_dispatcher_type"), "alltoall"),
       (("mixed_precision",), "bf16_mixed"), (("comm_overlap", "overlap_moe_expert_parallel_comm"), True),
       (("model", "pipeline_model_parallel_size"), 1), (("model", "virtual_pipeline_model_parallel_size"), None),
       (("model", "recompute_granularity"), None), (("model", "recompute_method"), None),
       (("model", "recompute_num_layers"), None), (("model", "moe_shared_expert_overlap"), False)]
_NO_CKPT = [(("checkpoint", "save"), None), (("checkpoint", "load"), None)]  # FSDP wants fsdp_dtensor to save
PROBES = (
    ("env-vars-one-fsdp", "nemotronh_8b_pretrain", [(("env_vars",), {"CUDA_DEVICE_MAX_CONNECTIONS": "1"}),
                                        (("ddp", "use_megatron_fsdp"), True)] + _NO_CKPT, 8),
    ("env-vars-32", "nemotronh_8b_pretrain", [(("env_vars",), {"CUDA_DEVICE_MAX_CONNECTIONS": 32, "NVTE_FWD_LAYERNORM_SM_MARGIN": 16})], 8),
    ("ep-mtp-zero", "olmoe_7b", _EP + [(("model", "mtp_num_layers"), 0)], 16),
    ("ep-mtp-one", "olmoe_7b", _EP + [(("model", "mtp_num_layers"), 1)], 16),
    ("ep-moe-recompute", "olmoe_7b", _EP + [(("model", "recompute_granularity"), "selective"),
                                                 (("model", "recompute_modules"), ["moe"])], 16),
    ("ep-clean", "olmoe_7b", _EP, 16),
    ("param-gather-optimizer-only", "nemotronh_8b_pretrain", [(("ddp", "overlap_param_gather"), False),
                                                  (("optimizer", "overlap_param_gather"), True),
                                                  (("ddp", "use_distributed_optimizer"), True),
                                                  (("comm_overlap",), None)], 8),
    ("param-gather-ddp-only", "nemotronh_8b_pretrain", [(("ddp", "overlap_param_gather"), True),
                                            (("optimizer", "overlap_param_gather"), False),
                                            (("ddp", "use_distributed_optimizer"), True),
                                            (("comm_overlap",), None)], 8),
    ("fsdp-distopt-off", "nemotronh_8b_pretrain", [(("ddp", "use_megatron_fsdp"), True), (("ddp", "use_distributed_optimizer"), False),
                                       (("optimizer", "use_distributed_optimizer"), False)] + _NO_CKPT, 8),
    ("fsdp-mxfp8", "nemotronh_8b_pretrain", [(("ddp", "use_megatron_fsdp"), True),
                                 (("mixed_precision",), {"_target_": "megatron.bridge.training.mixed_precision.MixedPrecisionConfig",
                                                         "bf16": True, "fp8": "e4m3", "fp8_recipe": "mxfp8",
                                                         "fp8_param_gather": True})] + _NO_CKPT, 8),
    ("mxfp8-no-reuse", "nemotronh_8b_pretrain", [(("mixed_precision",), {"_target_": "megatron.bridge.training.mixed_precision.MixedPrecisionConfig",
                                                             "bf16": True, "fp8": "e4m3", "fp8_recipe": "mxfp8",
                                                             "fp8_param_gather": True})], 8),
    ("ultra-recipe", "nemotronh_8b_pretrain", [(("mixed_precision",), "nemotron_3_ultra_bf16_with_nvfp4_mixed")], 8),
    ("num-buckets", "nemotronh_8b_pretrain", [(("ddp", "num_buckets"), 4), (("ddp", "bucket_size"), None)], 8),
    ("eval-batch", "nemotronh_8b_pretrain", [(("train", "global_batch_size"), 12), (("train", "micro_batch_size"), 1)], 16),
    ("eval-batch-eval-cp", "nemotronh_8b_pretrain", [(("train", "global_batch_size"), 12), (("train", "micro_batch_size"), 1),
                                                     (("dist", "eval_context_parallel_size"), 2)], 16),
)


def _function(spec: str) -> str:
    return spec.split(":")[1]


def dumps(release: str, python: Path) -> dict:
    """{recipe function: dump path} of the recipes ``release`` builds (cached per release)."""
    folder = Path(bridge_runs.__file__).parent  # noqa: F841 (the helpers live beside this test)

    def build():
        import tempfile

        out = Path(tempfile.gettempdir()) / f"overlap-release-dumps-{release}"
        out.mkdir(exist_ok=True)
        proc = subprocess.run([str(python), str(HERE / "bridge_release_dumps.py"), str(out), *[s for s, _ in RECIPES]],
                              capture_output=True, text=True, timeout=7200)
        marker = "@@bridge-release-dumps@@"
        if proc.returncode or marker not in proc.stdout:
            raise RuntimeError(f"the {release} environment cannot build recipes: {proc.stderr.strip()[-400:]}")
        built = json.loads(proc.stdout.split(marker + "\n", 1)[1])
        return {name: str(out / f"{name}.yaml") for name, error in built.items() if error is None}

    return cached(f"release-dumps-{release}", [str(python), (HERE / "bridge_release_dumps.py").read_text()]
                  + [s for s, _ in RECIPES], build)


def runs(release: str, built: dict) -> list:
    """Seeded runs over the recipes ``release`` built, then the probes: BridgeRun in the ``dump`` form."""
    rng = random.Random(f"{SEED}-{release}")
    worlds = {_function(s): w for s, w in RECIPES if _function(s) in built}
    names = sorted(worlds)
    out = []
    for i in range(RUNS_PER_RELEASE):
        name = rng.choice(names)
        edits = [e for _ in range(rng.choices([0, 1, 2, 3], [0.1, 0.35, 0.35, 0.2])[0]) for e in bridge_runs._edit(rng)]
        out.append(bridge_runs.BridgeRun(id=f"r{i:03d}", form="dump", recipe=name, world_size=rng.choice(worlds[name]),
                                         gpu=rng.choice(["h100", "b200"]), edits=edits))
    for probe, recipe, edits, world in PROBES:
        name = next((n for n in names if n.startswith(recipe)), None)
        if name is not None:
            out.append(bridge_runs.BridgeRun(id=f"p-{probe}", form="dump", recipe=name, world_size=world, gpu="h100",
                                             edits=list(edits)))
    return out


def render(release: str, run, built: dict, folder: Path) -> dict:
    """The run's file (the release's dump, edited) beside a pyproject naming the release; tool args and case."""
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "pyproject.toml").write_text(f'[tool.overlap]\nbridge_version = "{release}"\n', encoding="utf-8")
    tree = bridge_runs._load(Path(built[run.recipe]))
    # 0.4.2 writes train.exit_signal as ``_target_: signal.Signals`` and its from_yaml refuses that target
    # (utils/instantiate_utils.py:36-64 allows megatron., torch., nvidia., transformers., numpy., nemo.): its own
    # dump does not load back. The field is left to its default (SIGTERM in every release), as a user does.
    if isinstance(tree.get("train"), dict):
        tree["train"].pop("exit_signal", None)
    bridge_runs._apply(tree, run.edits)
    path = folder / f"{run.id}.yaml"
    path.write_text(bridge_runs._dump_yaml(tree))
    gpu = {"major": bridge_runs.GPUS[run.gpu][0], "name": bridge_runs.GPUS[run.gpu][1]}
    return {"args": [str(path), "--world-size", str(run.world_size), "--gpu", run.gpu],
            "case": {"mode": "file", "config": str(path), "files": [], "dotlists": [], "world_size": run.world_size,
                     "gpu": gpu}}


def reference(python: Path, cases: list) -> list:
    proc = subprocess.run([str(python), str(HERE / "bridge_reference.py")], input=json.dumps(cases),
                          capture_output=True, text=True, timeout=7200)
    if proc.returncode or bridge_compare.MARKER not in proc.stdout:
        raise RuntimeError(f"the reference environment cannot run Bridge's config code: {proc.stderr.strip()[-500:]}")
    out = json.loads(proc.stdout.split(bridge_compare.MARKER + "\n", 1)[1])
    for result in out:
        result["failed"] = result["stage"] is not None
    return out


def compared(release: str, folder: Path) -> tuple:
    """(runs, {run id: [disagreements]}, {run id: the real result}) of ``release``; skips without its environment."""
    from overlap_cli.launch_profile.profile import check_release

    try:
        check_release(release, "bridge_version")
    except ValueError as exc:
        pytest.skip(f"the target settings do not take bridge_version {release}: {exc}")
    python = reference_python(release)
    if python is None:
        pytest.skip(f"no environment with megatron-bridge {release} (tests/differential.py: reference_python)")
    try:
        built = dumps(release, python)
    except RuntimeError as exc:
        pytest.skip(str(exc))
    items = runs(release, built)
    rendered = [render(release, run, built, folder / release) for run in items]
    real = cached(f"release-reference-{release}", [str(python), (HERE / "bridge_reference.py").read_text()]
                  + [Path(r["case"]["config"]).read_text() + json.dumps(r["case"], sort_keys=True) for r in rendered],
                  lambda: reference(python, [r["case"] for r in rendered]))
    found = {}
    for run, r, result in zip(items, rendered, real):
        found[run.id] = bridge_compare.disagreements(run, run_tool(*r["args"]), [result])
    return items, found, dict(zip((run.id for run in items), real))


@pytest.mark.parametrize("release", RELEASES)
def test_the_tool_agrees_with_each_release(release, tmp_path):
    items, found, real = compared(release, tmp_path)
    launched = sum(1 for run in items if not real[run.id]["failed"])
    agreeing = sum(1 for run in items if not found[run.id])
    print(f"Megatron-Bridge {release}: {len(items)} configs compared ({launched} launched, "
          f"{len(items) - launched} refused), {agreeing} agreeing")
    assert len(items) >= RUNS_PER_RELEASE and 0 < launched < len(items)
    bad = {rid: [str(d) for d in ds] for rid, ds in found.items() if ds}
    assert not bad, "\n".join(f"{rid}: {'; '.join(ds)}" for rid, ds in sorted(bad.items()))
