"""The Python reader against Python itself: generated Bridge scripts are EXECUTED in an environment with
megatron-bridge 0.6.2 (bridge_reference.py, one subprocess for all; skips without it) and every printed
key of ``overlap check SCRIPT`` compared with what Bridge's runtime update computes from the executed
``cfg`` -- known keys must be equal; a key overlap-cli reports unknown is allowed to be anything.

The scripts start from a recipe dump (``ConfigContainer.from_yaml``: the recipe functions want Hugging
Face downloads) and use what the reader claims to read: section assignments, module constants, literal
arithmetic, ``if`` on constants, ``CommOverlapConfig(...)``, presets by name, mixed precision by function
and by name, ``env_vars`` dicts with ``{**X, ...}`` and item assignments, a function of the same module.
"""

from __future__ import annotations

import json
import random
import subprocess

import pytest

from conftest import CORPUS
from test_layers_differential import HERE, PYTHON

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


@pytest.fixture(scope="module")
def cases(tmp_path_factory):
    if PYTHON is None:
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
        out.append({"seed": seed, "script": str(script), "world_size": ws, "base": None, "files": [], "dotlists": []})
    proc = subprocess.run([str(PYTHON), str(HERE / "bridge_reference.py")], input=json.dumps(out),
                          capture_output=True, text=True, timeout=900)
    marker = "@@bridge-reference-results@@\n"
    if proc.returncode != 0 or marker not in proc.stdout:
        pytest.skip(f"the reference environment cannot run Bridge's config code: {proc.stderr.strip()[-300:]}")
    results = json.loads(proc.stdout.split(marker, 1)[1])
    return list(zip(out, results))


def test_every_printed_key_agrees_with_the_executed_script(cases, run_cli):
    compared = errors = 0
    for case, ref in cases:
        code, out, err = run_cli("check", case["script"], "--format", "json", "--world-size", str(case["world_size"]))
        result = json.loads(out)["results"][0]
        if "error" in ref:  # Bridge raised: overlap-cli must not print a clean launch
            assert result["error"] is not None or any(f["severity"] == "error" for f in result["findings"]), (case, ref)
            errors += 1
            continue
        assert result["error"] is None, (case["script"], result["error"])
        for key, expected in ref["values"].items():
            if key not in result["effective"]:
                continue
            got = result["effective"][key]
            if got["source"] == "unknown":
                continue
            if key == "model.tp_comm_overlap_cfg":
                continue
            assert got["value"] == expected, (case["script"], key, got, expected, open(case["script"]).read())
            compared += 1
    print(f"python differential: {compared} keys compared over {len(cases)} executed scripts, {errors} that Bridge refuses")
    assert compared > 200 and errors < len(cases)
