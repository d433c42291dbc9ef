"""Whole launches against Bridge itself: megatron-bridge 0.6.2's ``ConfigContainer.from_yaml``,
``process_config_with_overrides`` (Hydra struct mode) and the whole ``runtime_config_update`` -- ``validate()``
and the model finalize included -- run by bridge_launch_reference.py in an environment that has Bridge and
the hydra-core it declares (one subprocess for every case; skipped when there is none).

- every recipe dump of the corpus checked as a file (Bridge loads it with ``from_yaml``: the values the
  dumping machine wrote are the ones that run) and as ``--recipe NAME`` (the recipe as Bridge builds it on
  a target with Transformer Engine 2.12);
- generated dotlists: every Hydra form (``key=``, ``+``, ``++``, ``~``) on keys that hold a value, hold
  null, are missing, sit under a null section, hold a mapping, a list, a callable, a ``_target_``.

For every case: where Bridge stops while applying the dotlists, ``overlap check`` refuses the input (exit 2,
naming the override); where it stops later, ``overlap check`` reports an error finding; where it launches,
no error and the same effective values. Refusals of Bridge's that depend on nothing the tool reads are
listed in OUTSIDE (each is named in docs/commands.md's "What is not modelled") and are counted, not compared.
"""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

from conftest import CORPUS, ROOT
from differential import reference_python

HERE = Path(__file__).parent
PYTHON = reference_python()
MARKER = "@@bridge-launch-results@@\n"

# Bridge's refusals that depend on nothing overlap-cli reads: (words of Bridge's message, why not modelled)
OUTSIDE = [
    ("is not a supported primitive type", "OmegaConf 2.3 (the hydra-core 1.3 Bridge pins) holds no set: PEFT dumps' !!set"),
    ("--data-cache-path must be provided", "dataset settings"),
    ("Please ensure sequence length configuration in model config and dataset config match", "dataset settings"),
]
GPUS = ("h100", "b200", "b300", "gb200", "gb300")  # the GPUs the reference can stand in for (no Rubin)

L70 = "llama3_70b_pretrain_64gpu_h100_bf16_config"
WAN = "wan_1_3b_pretrain_8gpu_h100_bf16_config"
GEMMA = "gemma3_1b_pretrain_1gpu_h100_bf16_config"
DSV3 = "deepseek_v3_pretrain_64gpu_h100_bf16_config"
QWEN_MOE = "qwen3_30b_a3b_pretrain_16gpu_h100_bf16_config"
VANILLA = "vanilla_gpt_pretrain_1gpu_h100_bf16_config"
WS = {L70: 64, WAN: 8, GEMMA: 8, DSV3: 512, QWEN_MOE: 16}  # DeepSeek-V3's EP 64 x PP 8 needs 512 ranks (DP313)

# Refusals of the model's construction and of validate() on recipe + dotlist runs (MP408, MP409, CFG007, DP314),
# each beside a neighbour that launches
REFUSALS = [
    ("delayed+moe_act", QWEN_MOE, ["mixed_precision=bf16_with_fp8_delayed_scaling_mixed", "model.recompute_granularity=selective",
                                   "model.recompute_modules=[moe_act]"]),
    ("delayed+layernorm", QWEN_MOE, ["mixed_precision=bf16_with_fp8_delayed_scaling_mixed", "model.recompute_granularity=selective",
                                     "model.recompute_modules=[layernorm]"]),
    ("current+moe_act", QWEN_MOE, ["mixed_precision=bf16_with_fp8_current_scaling_mixed", "model.recompute_granularity=selective",
                                   "model.recompute_modules=[moe_act]"]),
    ("padding-bf16", QWEN_MOE, ["model.moe_router_padding_for_quantization=true"]),
    ("padding-fp8-alias", QWEN_MOE, ["model.moe_router_padding_for_fp8=true"]),
    ("padding-fp8", QWEN_MOE, ["model.moe_router_padding_for_quantization=true", "mixed_precision=bf16_with_fp8_current_scaling_mixed"]),
    ("template-no-heads", VANILLA, []),
    ("template-no-layers", VANILLA, ["model.num_attention_heads=8", "model.hidden_size=512"]),
    ("template-filled", VANILLA, ["model.num_attention_heads=8", "model.hidden_size=512", "model.num_layers=2"]),
    ("eval-batch-7", L70, ["validation.eval_global_batch_size=7"]),
    ("eval-batch-6", L70, ["validation.eval_global_batch_size=6"]),
    ("eval-cp", L70, ["validation.eval_global_batch_size=6", "dist.eval_context_parallel_size=1"]),
]

# (recipe, key, value for =, +, ++): keys of every kind Hydra treats differently
KEYS = [
    (L70, "comm_overlap.bucket_size", "1000000"),  # null in the recipe
    (L70, "comm_overlap.overlap_p2p_comm", "false"),  # null
    (L70, "comm_overlap.tp_comm_overlap", "false"),  # a value
    (L70, "model.tensor_model_parallel_size", "2"),  # a value
    (L70, "model.virtual_pipeline_model_parallel_size", "null"),  # a value, set to null
    (L70, "model.tp_comm_overlap_cfg", "null"),  # null
    (L70, "model.no_such_key", "1"),  # missing
    (L70, "ddp.bucket_size", "20000000"),  # null on ddp
    (L70, "model.cuda_graph_scope", "[attn]"),  # a list
    (L70, "comm_overlap.tp_comm_overlap_cfg", "{fc1_dgrad:{num_sm:4}}"),  # a mapping merged into a mapping
    (L70, "comm_overlap.tp_comm_overlap_cfg.fc1_dgrad.num_sm", "4"),  # inside a nested mapping
    (L70, "comm_overlap._target_", "megatron.bridge.training.comm_overlap.CommOverlapConfig"),  # the serializer's
    (L70, "model.transformer_layer_spec", "null"),  # a callable: left out of the dict config
    (L70, "comm_overlap", "null"),  # a whole section
    (WAN, "comm_overlap.overlap_p2p_comm", "false"),  # under a null section
    (WAN, "comm_overlap", "{tp_comm_overlap:false}"),  # a mapping onto a null section
    (GEMMA, "comm_overlap.tp_comm_overlap", "false"),
    (GEMMA, "mixed_precision.grad_reduce_in_fp32", "false"),  # a recipe name: a string, no mapping
    (DSV3, "model.transformer_layer_spec.use_transformer_engine", "true"),  # inside a partial
]


def _override_cases():
    out = []
    for recipe, key, value in KEYS:
        for form in ("", "+", "++", "~"):
            words = [f"~{key}"] if form == "~" else [f"{form}{key}={value}"]
            out.append((f"{form or '='}{key}@{recipe.split('_')[0]}", recipe, "recipe", words))
    out += [(f"refusal:{name}", recipe, "recipe", words) for name, recipe, words in REFUSALS]
    # ~key=value: the value must match
    out.append(("~tp=4", L70, "recipe", ["~model.tensor_model_parallel_size=4"]))
    out.append(("~tp=2", L70, "recipe", ["~model.tensor_model_parallel_size=2"]))
    # the same forms on a dump checked as the config (Bridge: from_yaml, then the dotlists)
    for words in (["~comm_overlap.bucket_size"], ["comm_overlap.bucket_size=1000000"], ["+ddp.overlap_grad_reduce=true"],
                  ["model.no_such_key=1"], ["+model.no_such_key=1"], ["~model.sequence_parallel"]):
        out.append((f"file:{words[0]}", L70, "file", words))
    return out


def _manifest():
    return [json.loads(line) for line in (CORPUS / "manifest.jsonl").read_text(encoding="utf-8").splitlines()]


def _corpus_cases():
    rows = [r for r in _manifest() if r["gpu"] in GPUS]
    return [(f"{mode}:{r['recipe']}", r["recipe"], mode, []) for mode in ("file", "recipe") for r in rows]


def _row(recipe):
    return next(r for r in _manifest() if r["recipe"] == recipe)


def _launch(cases):
    if PYTHON is None:
        pytest.skip("no environment with megatron-bridge 0.6.2 (set OVERLAP_BRIDGE_ENV)")
    if not (CORPUS / "manifest.jsonl").is_file():
        pytest.skip(f"the recipe dumps are not at {CORPUS}")
    payload = []
    for _name, recipe, mode, words in cases:
        row = _row(recipe)
        payload.append({"base": str(CORPUS / row["file"]), "files": [], "dotlists": words, "mode": mode,
                        "world_size": WS.get(recipe, row["world_size"]), "gpu": row["gpu"]})
    proc = subprocess.run([str(PYTHON), str(HERE / "bridge_launch_reference.py")], input=json.dumps(payload),
                          capture_output=True, text=True, timeout=3600)
    if proc.returncode or MARKER not in proc.stdout:
        pytest.skip(f"the reference environment cannot run Bridge's launch code: {proc.stderr.strip()[-300:]}")
    results = json.loads(proc.stdout.split(MARKER, 1)[1])
    return dict(zip([c[0] for c in cases], results))


@pytest.fixture(scope="module")
def override_launches():
    return _launch(_override_cases())


@pytest.fixture(scope="module")
def corpus_launches():
    if not (CORPUS / "manifest.jsonl").is_file():  # the cases are the corpus's rows
        pytest.skip(f"the recipe dumps are not at {CORPUS}")
    return _launch(_corpus_cases())


def _outside(error: str):
    return next((why for words, why in OUTSIDE if words in error), None)


def _compare(run_cli, real: dict, recipe: str, mode: str, words: list):
    row = _row(recipe)
    target = ["--world-size", WS.get(recipe, row["world_size"]), "--gpu", row["gpu"], "--te-version", "2.12"]
    base = ["--recipe", recipe] if mode == "recipe" else [CORPUS / row["file"]]
    code, out, err = run_cli("check", *base, *words, *target, "--show-effective", "--format", "json")
    assert "Traceback" not in err
    if real.get("stage") == "overrides":
        problem = json.loads(out)["results"][-1]["error"] if out.strip() else {"message": err}
        assert code == 2 and problem and "override" in json.dumps(problem), (real["error"], code, out, err)
        return "refused"
    assert code in (0, 1), (out, err)
    result = json.loads(out)["results"][-1]
    assert result["error"] is None, (real, result["error"])
    errors = [f"{f['code']}: {f['message']}" for f in result["findings"] if f["severity"] == "error"]
    if real.get("error") is not None:
        if _outside(real["error"]):
            return "outside"
        assert errors, f"Bridge fails with {real['error']!r} ({real['where']}); overlap reports no error"
        return "fails"
    assert not errors, f"Bridge launches this; overlap reports errors: {errors}"
    # every model / ddp / optimizer key the tool prints (env.* is the launch environment, which Bridge's
    # config code does not hold); a printed key the reference lacks fails as well
    # (bridge_compare: the part of a printed value Bridge holds, and the value the launch hands on)
    from bridge_compare import lookup, project

    printed = {k: project(k, v["value"]) for k, v in result["effective"].items() if k.split(".")[0] in ("model", "ddp", "optimizer")}
    missing = sorted(k for k in printed if k not in real["values"])
    assert not missing, f"no reference value for {missing}"
    assert printed == {k: lookup(real, k) for k in printed}
    assert result["target"]["data_parallel_size"] == real["values"]["data_parallel_size"]
    return "launches"




@pytest.mark.parametrize("name, recipe, mode, words", _override_cases(), ids=[c[0] for c in _override_cases()])
def test_dotlists_as_bridge_applies_them(override_launches, run_cli, name, recipe, mode, words):
    outcome = _compare(run_cli, override_launches[name], recipe, mode, words)
    real = override_launches[name]
    if name.startswith("refusal:") and outcome == "fails":
        # the error quotes Bridge's message (its type and text up to the first number it formats)
        _, out, _ = run_cli("check", "--recipe", recipe, *words, "--world-size", WS[recipe] if recipe in WS else _row(recipe)["world_size"],
                            "--te-version", "2.12", "--format", "json")
        messages = " ".join(f["message"] for f in json.loads(out)["results"][-1]["findings"] if f["severity"] == "error")
        quoted = real["error"].split(": ", 1)[1]
        assert quoted in messages or (real["error"].startswith("ZeroDivisionError") and real["error"] in messages), (real, messages)


def test_every_dump_as_a_file_and_as_the_recipe(corpus_launches, run_cli):
    outcomes: dict = {}
    failures = []
    for name, recipe, mode, words in _corpus_cases():
        try:
            outcomes.setdefault(mode, []).append((_compare(run_cli, corpus_launches[name], recipe, mode, words), recipe))
        except AssertionError as exc:
            failures.append(f"{name}: {str(exc)[:400]}")
    assert not failures, f"{len(failures)} disagree:\n" + "\n".join(failures[:20])
    fails = {mode: sorted(r for o, r in v if o == "fails") for mode, v in outcomes.items()}
    # As files, the dumps the dumping machine broke fail too (PP205's ten, MP407's seven); as recipes they launch.
    assert len(fails["file"]) > len(fails["recipe"]) >= 1
    assert set(fails["recipe"]) <= set(fails["file"]) | {r for o, r in outcomes["file"] if o == "outside"}


def test_the_cases_cover_every_outcome(override_launches, corpus_launches):
    stages = {r.get("stage", "launches") for r in [*override_launches.values(), *corpus_launches.values()]}
    assert {"overrides", "update", "load", "init", "launches"} <= stages, stages
