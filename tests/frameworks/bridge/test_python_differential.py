"""The Python reader against Python itself: generated Bridge scripts are EXECUTED in an environment with
megatron-bridge 0.6.2 (bridge_reference.py, one subprocess for all; skips without it) and every printed
key of ``overlap check SCRIPT`` compared with what Bridge's runtime update computes from the executed
``cfg`` -- known keys must be equal; a key overlap-cli reports unknown is allowed to be anything.

The scripts start from a recipe dump (``ConfigContainer.from_yaml``: the recipe functions want Hugging
Face downloads) and use what the reader claims to read: section assignments, module constants, literal
arithmetic, ``if`` on constants, ``CommOverlapConfig(...)``, presets by name, mixed precision by function
and by name, ``env_vars`` dicts with ``{**X, ...}`` and item assignments, a function of the same module;
and scripts that build ``ConfigContainer(...)`` from its fields (generate_container), each section left out
being its class default.
"""

from __future__ import annotations

import json
import random
import subprocess

import pytest

from bridge_compare import HERE, MARKER, lookup, project
from bridge_runs import GPUS
from conftest import CORPUS
from differential import compare, reference_python, run_tool

CONTAINER_SEEDS = range(100, 124)  # scripts that build ConfigContainer(...) from its fields (generate_container)

BASES = [("llama3_70b_pretrain_64gpu_h100_bf16_config", 64), ("llama32_1b_pretrain_1gpu_h100_bf16_config", 8),
         ("qwen3_30b_a3b_pretrain_16gpu_h100_bf16_config", 16), ("gemma3_1b_pretrain_1gpu_h100_bf16_config", 8)]
SEEDS = range(24)


def generate(seed: int, dump: str) -> str:
    rnd = random.Random(seed)
    tp = rnd.choice([1, 2, 4])
    lines = [
        "from megatron.bridge.training.config import ConfigContainer",
        "from megatron.bridge.training.comm_overlap import CommOverlapConfig, userbuffers_bf16_h100_h8192_tp4_mbs1_seqlen8192",
        "from megatron.bridge.training.mixed_precision import bf16_mixed",
        f"TP = {tp}",
        f"PP = {rnd.choice([1, 2])}",
        f"BUCKET = {rnd.choice([2, 4])} * 1024 * 1024",
        "BASE_ENV = {'NCCL_NVLS_ENABLE': 0}",
        "",
        "def tweak(c):",
        f"    c.ddp.overlap_param_gather = {rnd.choice([True, False])}",
        "",
        f"cfg = ConfigContainer.from_yaml({dump!r})",
        "cfg.model.tensor_model_parallel_size = TP",
        "cfg.model.pipeline_model_parallel_size = PP",
        "cfg.model.virtual_pipeline_model_parallel_size = None",
        "cfg.model.pipeline_model_parallel_layout = None",
        "cfg.model.context_parallel_size = 1",
        "if TP > 1:",
        f"    cfg.model.sequence_parallel = {rnd.choice([True, False])}",
        "else:",
        "    cfg.model.sequence_parallel = False",
    ]
    if rnd.random() < 0.7:
        kw = [f"tp_comm_overlap={rnd.choice([True, False])}"]
        if rnd.random() < 0.5:
            kw.append(f"overlap_grad_reduce={rnd.choice([True, False])}")
        if rnd.random() < 0.4:
            kw.append("bucket_size=BUCKET")
        lines.append(f"cfg.comm_overlap = CommOverlapConfig({', '.join(kw)})")
        if tp == 4 and rnd.random() < 0.5:
            lines.append("cfg.comm_overlap.tp_comm_overlap_cfg = userbuffers_bf16_h100_h8192_tp4_mbs1_seqlen8192")
    elif rnd.random() < 0.5:
        lines.append("cfg.comm_overlap = None")
    lines.append(f"cfg.ddp.use_distributed_optimizer = {rnd.choice([True, False])}")
    lines.append(f"cfg.optimizer.use_distributed_optimizer = cfg.ddp.use_distributed_optimizer")
    if rnd.random() < 0.5:
        lines.append(f"cfg.ddp.overlap_grad_reduce = {rnd.choice([True, False])}")
    if rnd.random() < 0.4:
        lines.append("tweak(cfg)")
    mp = rnd.choice(["bf16_mixed()", "'bf16_mixed'", None])
    if mp:
        lines.append(f"cfg.mixed_precision = {mp}")
        if mp == "bf16_mixed()" and rnd.random() < 0.5:
            lines.append(f"cfg.mixed_precision.grad_reduce_in_fp32 = {rnd.choice([True, False])}")
    if rnd.random() < 0.5:
        lines.append("cfg.env_vars = {**BASE_ENV, 'CUDA_DEVICE_MAX_CONNECTIONS': %d}" % rnd.choice([1, 8]))
    else:
        lines.append("cfg.env_vars['NCCL_NVLS_ENABLE'] = 1")
    return "\n".join(lines) + "\n"


def generate_container(seed: int) -> tuple:
    """(script, world size) of a run that builds ``ConfigContainer(...)`` field by field: sections inline or
    bound to a local first (and changed afterwards), the optimizer from a same-module helper returning a
    tuple, sections left out (their class defaults), Bridge's or Megatron-Core's DDP class, comm_overlap
    / mixed precision given or not."""
    rnd = random.Random(seed)
    tp, pp, cp = rnd.choice([1, 2, 4]), rnd.choice([1, 2]), rnd.choice([1, 1, 2])
    ws = tp * pp * cp * rnd.choice([1, 2, 4])
    ddp_module = rnd.choice(["megatron.core.distributed", "megatron.bridge.training.config"])
    lines = [
        f"from {ddp_module} import DistributedDataParallelConfig",
        "from megatron.bridge.models.gpt_provider import GPTModelProvider",
        "from megatron.bridge.training.comm_overlap import CommOverlapConfig",
        "from megatron.bridge.training.config import (CheckpointConfig, ConfigContainer, GPTDatasetConfig,",
        "    LoggerConfig, OptimizerConfig, SchedulerConfig, TokenizerConfig, TrainingConfig)",
        "from megatron.bridge.training.mixed_precision import bf16_mixed, get_mixed_precision_config",
        f"TP = {tp}",
        "SEQ = 2048",
        "",
        "def optim(distributed=True):",
        "    o = OptimizerConfig(optimizer='adam', lr=1e-4, bf16=True, use_distributed_optimizer=distributed)",
        "    return o, SchedulerConfig(lr_warmup_iters=10)",
        "",
    ]
    dist_opt = rnd.choice([True, False])
    model_kw = [f"tensor_model_parallel_size=TP", f"pipeline_model_parallel_size={pp}", f"context_parallel_size={cp}",
                "num_layers=8", "hidden_size=1024", "num_attention_heads=16", "seq_length=SEQ"]
    if tp > 1:
        model_kw.append(f"sequence_parallel={rnd.choice([True, False])}")
    inline_model = rnd.random() < 0.5
    model = f"GPTModelProvider({', '.join(model_kw)})"
    if not inline_model:
        lines.append(f"model = {model}")
        if rnd.random() < 0.5:
            lines.append(f"model.cross_entropy_loss_fusion = {rnd.choice([True, False])}")
        model = "model"
    ddp_kw = [f"use_distributed_optimizer={dist_opt}"]
    for key in ("overlap_grad_reduce", "overlap_param_gather", "grad_reduce_in_fp32"):
        if rnd.random() < 0.5:
            ddp_kw.append(f"{key}={rnd.choice([True, False])}")
    if rnd.random() < 0.3:
        ddp_kw.append("bucket_size=SEQ * 1000")
    ddp_form = rnd.choice(["inline", "local", "absent"])
    if ddp_form == "local":
        lines.append(f"ddp = DistributedDataParallelConfig({', '.join(ddp_kw)})")
        lines.append(f"ddp.overlap_grad_reduce = {rnd.choice([True, False])}")
    lines.append(f"opt, sched = optim({dist_opt if ddp_form != 'absent' else False})")
    kw = [f"model={model}", "train=TrainingConfig(global_batch_size=%d, micro_batch_size=1, train_iters=10)" % (ws * 4),
          "optimizer=opt", "scheduler=sched",
          "dataset=GPTDatasetConfig(random_seed=1234, seq_length=SEQ, blend=None, split='99,1,0', "
          "reset_position_ids=False, reset_attention_mask=False, eod_mask_loss=False)",
          "logger=LoggerConfig()", "tokenizer=TokenizerConfig(tokenizer_type='NullTokenizer', vocab_size=32000)",
          "checkpoint=CheckpointConfig()"]
    if ddp_form == "inline":
        kw.append(f"ddp=DistributedDataParallelConfig({', '.join(ddp_kw)})")
    elif ddp_form == "local":
        kw.append("ddp=ddp")
    co = rnd.random()
    if co < 0.4:
        co_kw = [f"tp_comm_overlap={rnd.choice([True, False])}"]
        if rnd.random() < 0.5:
            co_kw.append(f"overlap_grad_reduce={rnd.choice([True, False])}")
        kw.append(f"comm_overlap=CommOverlapConfig({', '.join(co_kw)})")
    elif co < 0.6:
        kw.append("comm_overlap=None")
    mp = rnd.choice(["'bf16_mixed'", "bf16_mixed()", "get_mixed_precision_config('bf16_mixed')", None])
    if mp:
        kw.append(f"mixed_precision={mp}")
    if rnd.random() < 0.5:
        kw.append("env_vars={'CUDA_DEVICE_MAX_CONNECTIONS': %d}" % rnd.choice([1, 8]))
    lines.append("cfg = ConfigContainer(")
    lines.extend(f"    {k}," for k in kw)
    lines.append(")")
    if rnd.random() < 0.4:
        lines.append(f"cfg.ddp.overlap_param_gather = {rnd.choice([True, False])}")
    return "\n".join(lines) + "\n", ws


@pytest.fixture(scope="module")
def cases(tmp_path_factory):
    python = reference_python()
    if python is None:
        pytest.skip("no environment with megatron-bridge 0.6.2 (set OVERLAP_BRIDGE_ENV)")
    if not CORPUS.is_dir():
        pytest.skip(f"the recipe dumps are not at {CORPUS}")
    folder = tmp_path_factory.mktemp("py-differential")
    out = []
    for seed in SEEDS:
        recipe, ws = BASES[seed % len(BASES)]
        dump = CORPUS / f"{recipe}.yaml"
        if not dump.is_file():
            continue
        script = folder / f"run_{seed}.py"
        script.write_text(generate(seed, str(dump)))
        out.append({"mode": "script", "config": str(script), "files": [], "dotlists": [], "world_size": ws,
                    "gpu": {"major": GPUS["h100"][0], "name": GPUS["h100"][1]}})
    for seed in CONTAINER_SEEDS:
        text, ws = generate_container(seed)
        script = folder / f"container_{seed}.py"
        script.write_text(text)
        out.append({"mode": "script", "config": str(script), "files": [], "dotlists": [], "world_size": ws,
                    "gpu": {"major": GPUS["h100"][0], "name": GPUS["h100"][1]}})
    proc = subprocess.run([str(python), str(HERE / "bridge_reference.py")], input=json.dumps(out),
                          capture_output=True, text=True, timeout=900)
    if proc.returncode != 0 or MARKER not in proc.stdout:
        pytest.skip(f"the reference environment cannot run Bridge's config code: {proc.stderr.strip()[-300:]}")
    results = json.loads(proc.stdout.split(MARKER + "\n", 1)[1])
    for result in results:
        result["failed"] = result["stage"] is not None
    return list(zip(out, results))


def test_every_printed_key_agrees_with_the_executed_script(cases):
    """differential.compare: the outcome, the data-parallel size and every key `overlap check` prints
    (model / ddp / optimizer fields and env.*) against the executed script's runtime update."""
    launched = failed = 0
    for case, real in cases:
        result = run_tool(case["config"], "--world-size", str(case["world_size"]), "--gpu", "h100", "--te-version", "2.12")
        found = compare(result, [real], lookup, quote=lambda v: False, project=project, input_stages=("load",))
        assert not found, (case["config"], open(case["config"]).read(), "\n".join(str(d) for d in found))
        failed += real["failed"]
        launched += not real["failed"]
    print(f"python differential: {len(cases)} executed scripts, {launched} launch, {failed} that Bridge refuses")
    assert launched and len(cases) == len(SEEDS) + len(CONTAINER_SEEDS)


# Every other release: the scripts that build ConfigContainer(...) field by field (they need no recipe dump,
# which only 0.6.2's corpus holds) executed with that release's own Bridge and checked with --bridge-version.
# Where a release's classes lack a field a script passes (env_vars before 0.6.0), Bridge refuses the call and
# the tool must say so too.
OTHER_RELEASES = [r for r in ("0.4.2", "0.5.1", "0.6.0", "main")]


@pytest.mark.parametrize("release", OTHER_RELEASES)
def test_container_scripts_agree_under_each_release(release, tmp_path):
    python = reference_python(release)
    if python is None:
        pytest.skip(f"no environment with megatron-bridge {release} (tests/differential.py: reference_python)")
    out = []
    for seed in CONTAINER_SEEDS:
        text, ws = generate_container(seed)
        script = tmp_path / f"container_{seed}.py"
        script.write_text(text)
        out.append({"mode": "script", "config": str(script), "files": [], "dotlists": [], "world_size": ws,
                    "gpu": {"major": GPUS["h100"][0], "name": GPUS["h100"][1]}})
    proc = subprocess.run([str(python), str(HERE / "bridge_reference.py")], input=json.dumps(out),
                          capture_output=True, text=True, timeout=900)
    assert proc.returncode == 0 and MARKER in proc.stdout, proc.stderr.strip()[-500:]
    results = json.loads(proc.stdout.split(MARKER + "\n", 1)[1])
    launched = failed = 0
    for case, real in zip(out, results):
        real["failed"] = real["stage"] is not None
        result = run_tool(case["config"], "--world-size", str(case["world_size"]), "--gpu", "h100",
                          "--te-version", "2.12", "--bridge-version", release)
        found = compare(result, [real], lookup, quote=lambda v: False, project=project, input_stages=("load",))
        assert not found, (release, case["config"], open(case["config"]).read(), "\n".join(str(d) for d in found))
        failed += real["failed"]
        launched += not real["failed"]
    print(f"python differential {release}: {len(out)} executed scripts, {launched} launch, {failed} refused")
    assert len(results) == len(CONTAINER_SEEDS) and launched
