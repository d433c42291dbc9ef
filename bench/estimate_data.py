"""The calibration data of ``overlap estimate``: Megatron-Bridge's published throughput rows joined to the
recipes they were measured with, resolved by the tool's own pipeline into estimate Shapes, and the fit.

``data/bridge_throughput.jsonl`` is a copy of the team's reference table (rows of Megatron-Bridge's
``docs/performance-summary*.md`` at 067f987d, step time = GBS * seq / (tokens/s/GPU * GPUs)).
A row is joined to a recipe of the shipped catalog (Bridge 0.6.2): the recipe the row names
(``bridge_recipe``) when there is one, else the closest recipe of the same model and task (same GPU and
precision when possible) with the row's parallel sizes, batch, sequence length and precision applied as
dotlist overrides -- the same path ``overlap estimate CONFIG OVERRIDES`` takes. Rows of models without a
shipped recipe (Kimi K2, Nemotron 3 Super/Ultra, DeepSeek V4) and rows without a precision (25.09) are
left out, with the count printed.

Each row is also given the performance settings of its own release (``release_overrides``): Bridge's
benchmark scripts apply a ``WorkloadBaseConfig`` per model x task x GPU x precision over the recipe, and those
settings moved between releases (a whole-iteration CUDA graph, EP overlap, Transformer Engine's fused grouped
MLP, recomputation). ``data/release_perf_configs.json`` holds them for every release tag
(tools/build_release_perf_configs.py); a row takes the config whose parallel layout, batch and micro-batch
equal its own (else the first of its model x task x GPU x precision) and the settings it states are applied as
dotlist overrides. Fields it leaves unset keep the 0.6.2 recipe's value.
"""

from __future__ import annotations

import json
import math
import re
from pathlib import Path

DATA = Path(__file__).resolve().parent / "data"
RELEASE = "0.6.2"  # the catalog the rows are joined to (Bridge 0.6.2, as the module docstring says)

MODEL_PREFIX = {
    "DeepSeekV3": "deepseek_v3",
    "GPT OSS 120B": "gpt_oss_120b",
    "LLAMA3_70B": "llama3_70b",
    "LLAMA3_8B": "llama3_8b",
    "Nemotron_3_Nano": "nemotron_3_nano",
    "Qwen3_30B_a3B": "qwen3_30b_a3b",
}
PRECISION_TOKEN = {"BF16": "bf16", "FP8": "fp8cs", "FP8-CS": "fp8cs", "MXFP8": "fp8mx", "FP8-MX": "fp8mx", "NVFP4": "nvfp4"}
PRECISION_OVERRIDES = {
    "bf16": ["mixed_precision.fp8=null", "mixed_precision.fp4=null"],
    "fp8cs": ["mixed_precision.fp8=e4m3", "mixed_precision.fp8_recipe=tensorwise", "mixed_precision.fp4=null"],
    "fp8mx": ["mixed_precision.fp8=e4m3", "mixed_precision.fp8_recipe=mxfp8", "mixed_precision.fp4=null"],
    "nvfp4": ["mixed_precision.fp4=e2m1", "mixed_precision.fp4_recipe=nvfp4"],
}
_NAME = re.compile(r"^(?P<model>.+?)_(?P<task>pretrain|sft|peft)_(?P<n>\d+)gpu_(?P<gpu>[a-z0-9]+)_(?P<prec>bf16|fp8cs|fp8mx|fp8sc|nvfp4)(?P<var>_.*)?_config$")


def rows() -> list:
    return [json.loads(line) for line in (DATA / "bridge_throughput.jsonl").read_text().splitlines() if line.strip()]


def _catalog() -> list:
    from overlap_cli.frameworks.bridge.recipes import names

    out = []
    for name in names(RELEASE):
        m = _NAME.match(name)
        if m:
            out.append((name, m.groupdict()))
    return out


def base_recipe(row: dict, catalog: list):
    """(recipe name, exact?) for a row, or (None, False)."""
    from overlap_cli.frameworks.bridge.recipes import canonical

    if row.get("bridge_recipe") and canonical(RELEASE, row["bridge_recipe"]):
        return canonical(RELEASE, row["bridge_recipe"]), True
    prefix = MODEL_PREFIX.get(row["model"])
    token = PRECISION_TOKEN.get(row.get("precision") or "")
    if prefix is None or token is None:
        return None, False
    same = [(n, g) for n, g in catalog if g["model"] == prefix and g["task"] == row["task"]]
    if not same:
        return None, False

    def score(item):
        n, g = item
        return ((g["gpu"] == row["gpu"]) * 4 + (g["prec"] == token) * 2 + (not g["var"]) + (int(g["n"]) == row["num_gpus"]) * 0.5, n)

    return max(same, key=score)[0], False


def overrides_for(row: dict, exact: bool, base_precision: str = None) -> list:
    out = []
    if not exact:
        vp = row.get("vp")
        out += [
            f"model.tensor_model_parallel_size={row['tp']}",
            f"model.pipeline_model_parallel_size={row['pp']}",
            f"model.context_parallel_size={row['cp']}",
            f"model.virtual_pipeline_model_parallel_size={vp if vp and vp > 1 else 'null'}",
            f"model.expert_model_parallel_size={row.get('ep') or 1}",
            f"train.global_batch_size={row['gbs']}",
            f"train.micro_batch_size={row['mbs']}",
            f"model.seq_length={row['seq_len']}",
            f"dataset.seq_length={row['seq_len']}",
            "model.pipeline_model_parallel_layout=null",
        ]
        if base_precision != PRECISION_TOKEN[row["precision"]]:
            out += PRECISION_OVERRIDES[PRECISION_TOKEN[row["precision"]]]
        if row.get("fsdp"):
            out += ["ddp.use_megatron_fsdp=true", "ddp.data_parallel_sharding_strategy=optim_grads_params"]
    return out


RELEASE_MODEL_TOKEN = {"DeepSeekV3": "DEEPSEEK_V3", "GPT OSS 120B": "GPT_OSS_120B", "LLAMA3_70B": "LLAMA3_70B",
                       "LLAMA3_8B": "LLAMA3_8B", "Nemotron_3_Nano": "NEMOTRON_3_NANO", "Qwen3_30B_a3B": "QWEN3_30B_A3B"}
RELEASE_PRECISION_TOKEN = {"BF16": "BF16", "FP8": "FP8_CS", "FP8-CS": "FP8_CS", "MXFP8": "FP8_MX", "FP8-MX": "FP8_MX", "NVFP4": "NVFP4"}
RELEASE_TASK_TOKEN = {"pretrain": "PRETRAIN", "sft": "SFT", "peft": "LORA"}
_LAYOUT = ("tensor_model_parallel_size", "pipeline_model_parallel_size", "context_parallel_size",
           "virtual_pipeline_model_parallel_size", "expert_model_parallel_size", "global_batch_size", "micro_batch_size")


def _release_configs() -> dict:
    path = DATA / "release_perf_configs.json"
    return json.loads(path.read_text())["releases"] if path.exists() else {}


def _row_layout(row: dict) -> tuple:
    vp = row.get("vp")
    return (row["tp"], row["pp"], row["cp"], vp if vp and vp > 1 else None, row.get("ep") or 1, row["gbs"], row["mbs"])


def _config_layout(c: dict) -> tuple:
    vp = c.get("virtual_pipeline_model_parallel_size")
    return tuple(c.get(k) for k in _LAYOUT[:3]) + (vp if vp and vp > 1 else None, c.get("expert_model_parallel_size") or 1,
                                                   c.get("global_batch_size"), c.get("micro_batch_size"))


def release_config(row: dict, table: dict) -> tuple:
    """(name, fields, layout matched?) of the WorkloadBaseConfig the row's release benchmarked it with, or
    (None, None, False)."""
    rel = table.get(row["release"])
    model = RELEASE_MODEL_TOKEN.get(row["model"])
    if rel is None or model is None or row.get("precision") not in RELEASE_PRECISION_TOKEN:
        return None, None, False
    gpu, prec, task = row["gpu"].upper(), RELEASE_PRECISION_TOKEN[row["precision"]], RELEASE_TASK_TOKEN[row["task"]]
    found = []
    for name in sorted(rel["configs"]):
        if not name.startswith(model + "_"):
            continue
        toks = name[len(model) + 1:].split("_")
        if gpu not in toks or f"_{prec}_" not in "_" + "_".join(toks) + "_":
            continue
        fine_tuning = [t for t in toks if t in ("SFT", "LORA", "PEFT")]
        if (task == "PRETRAIN" and fine_tuning) or (task != "PRETRAIN" and task not in toks):
            continue
        found.append((name, {**rel["defaults"], **rel["configs"][name]}))
    for name, fields in found:
        if _config_layout(fields) == _row_layout(row):
            return name, fields, True
    return (found[0][0], found[0][1], False) if found else (None, None, False)


def _dot(value) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (list, tuple)):
        return "[" + ",".join(str(v) for v in value) + "]"
    return str(value)


def release_overrides(fields: dict, recipe_text: str = "") -> list:
    """Dotlist overrides for what a release's WorkloadBaseConfig sets that the model reads, applied as that
    release's scripts/performance/utils/overrides.py:set_workload_base_configs does (a key the recipe lacks is
    added with ``+``; EP overlap is left alone on a recipe without ``comm_overlap``, which the scripts only
    create to turn it on)."""
    if not fields:
        return []
    has_comm_overlap = "\ncomm_overlap: null" not in recipe_text
    out = []
    impl, scope = fields.get("cuda_graph_impl"), fields.get("cuda_graph_scope")
    scope = [scope] if isinstance(scope, str) else scope
    if impl is None and not scope:
        # Up to 0.5.x the scripts took CUDA graphs from the WorkloadBaseConfig alone; the library recipes
        # they ran over set none (0.6.x moved the scripts' settings into the recipes, which is why the
        # 0.6.2 recipe may have one the older release did not run with).
        out.append("model.cuda_graph_impl=none")
    else:
        if (impl == "full_iteration") or (scope and "full_iteration" in scope and impl not in ("none",)):
            out += ["model.cuda_graph_impl=full_iteration", "model.cuda_graph_modules=[]"]
        elif impl == "none":
            out += ["model.cuda_graph_impl=none"]
        else:
            if impl is not None:
                out.append(f"model.cuda_graph_impl={impl}")
            if scope is not None:
                out.append(f"model.cuda_graph_modules={_dot(list(scope))}")
    a2a = bool(fields.get("moe_a2a_overlap"))
    if has_comm_overlap:
        out.append(f"comm_overlap.overlap_moe_expert_parallel_comm={_dot(a2a)}")
        if a2a:
            out.append("comm_overlap.delay_wgrad_compute=true")
    cute = bool(fields.get("cutedsl_fused_grouped_mlp"))
    env_key = "env_vars.NVTE_CUTEDSL_FUSED_GROUPED_MLP"
    out += [f"model.use_transformer_engine_op_fuser={_dot(cute)}",
            f"{'' if 'NVTE_CUTEDSL_FUSED_GROUPED_MLP:' in recipe_text else '+'}{env_key}={int(cute)}"]
    if fields.get("recompute_modules") is not None:
        out += ["model.recompute_granularity=selective", f"model.recompute_modules={_dot(fields['recompute_modules'])}"]
    return out


def joined(verbose: bool = False) -> tuple:
    """([(row, shape, recipe, exact)], skipped counts by reason)."""
    from overlap_cli.problems import InputError
    from overlap_cli.config.loader import load_config
    from overlap_cli.frameworks.bridge.resolver import resolve
    from overlap_cli.estimate.inputs import Unsupported, shape_from_view
    from overlap_cli.frameworks.bridge.recipes import text
    from overlap_cli.launch_profile.profile import Target
    from overlap_cli.cli.check import parse_overrides

    catalog = _catalog()
    releases = _release_configs()
    out, skipped = [], {}
    for row in rows():
        if not row.get("precision"):
            skipped["no precision (25.09 table)"] = skipped.get("no precision (25.09 table)", 0) + 1
            continue
        name, exact = base_recipe(row, catalog)
        if name is None:
            key = f"no shipped recipe for {row['model']} {row['task']}"
            skipped[key] = skipped.get(key, 0) + 1
            continue
        target = Target(world_size=row["num_gpus"])
        target.set("world_size", row["num_gpus"], "flag")
        target.set("gpu", row["gpu"], "flag")
        # The resolver alone (no rules): calibration needs the effective settings, not the findings.
        base_prec = _NAME.match(name).group("prec") if _NAME.match(name) else None
        rel_name, rel_fields, rel_exact = release_config(row, releases)
        words = overrides_for(row, exact, base_prec) + release_overrides(rel_fields, text(RELEASE, name))
        row = dict(row, release_config=rel_name, release_config_layout=rel_exact)
        try:
            cfg = load_config(f"{name}.yaml", parse_overrides(words), text=text(RELEASE, name))
            view = resolve(cfg, target)
        except InputError as exc:
            key = f"input error: {exc.problem.one_line()}"
            skipped[key] = skipped.get(key, 0) + 1
            continue
        try:
            shape = shape_from_view(view)
        except Unsupported as exc:
            skipped[str(exc)] = skipped.get(str(exc), 0) + 1
            continue
        out.append((row, shape, name, exact))
    return out, skipped


# ------------------------------------------------------------------------------------------- fit

FREE = ("eff:h100", "eff:b200", "eff:b300", "eff:gb200", "eff:gb300",
        "prec:fp8cs", "prec:mxfp8", "prec:nvfp4", "mem_bytes_per_element", "moe_bytes_per_element", "moe_sync_s")
BOUNDS = {"eff": (0.05, 1.0), "prec": (0.2, 1.5), "mem_bytes_per_element": (0.0, 400.0), "moe_bytes_per_element": (0.0, 400.0),
          "moe_sync_s": (0.0, 0.02)}


def _get(const: dict, key: str) -> float:
    if key.startswith("eff:"):
        return const["efficiency"][key[4:]]
    if key.startswith("prec:"):
        return const["precision_factor"][key[5:]]
    return const[key]


def _set(const: dict, key: str, value: float) -> None:
    if key.startswith("eff:"):
        const["efficiency"][key[4:]] = value
    elif key.startswith("prec:"):
        const["precision_factor"][key[5:]] = value
    else:
        const[key] = value


def _bounds(key: str) -> tuple:
    return BOUNDS[key.split(":")[0]] if ":" in key else BOUNDS[key]


def predict(shape, const: dict) -> float:
    from overlap_cli.estimate.model import estimate

    return estimate(shape, const).step_time


def release_key(release: str) -> tuple:
    """A NeMo container release as a sortable tuple: 26.04.01 -> (26, 4, 1)."""
    parts = [int(x) for x in release.split(".")]
    return tuple(parts + [0] * (3 - len(parts)))


def family(gpu: str) -> str:
    return "hopper" if gpu in ("h100", "h200", "a100") else "blackwell"


def group(shape) -> tuple:
    """The software-release group of a row: GPU family x dense/MoE (a release speeds these up differently)."""
    return (family(shape.gpu), "moe" if shape.kinds["moe"] else "dense")


def pinned_releases(data: list) -> dict:
    """group -> the newest release with a row in ``data``: the calibration predicts that release's software."""
    out = {}
    for row, shape, *_ in data:
        g = group(shape)
        if g not in out or release_key(row["release"]) > release_key(out[g]):
            out[g] = row["release"]
    return out


def release_factors(data: list, preds: list) -> dict:
    """(group, release) -> mean log(measured / predicted) of its rows, for every release older than the group's
    pinned one (the pinned release's factor is 1 by definition)."""
    pinned = pinned_releases(data)
    cells = {}
    for (row, shape, *_), p in zip(data, preds):
        key = (group(shape), row["release"])
        if row["release"] != pinned[key[0]]:
            cells.setdefault(key, []).append(math.log(row["step_time_s"] / p))
    return {k: sum(v) / len(v) for k, v in cells.items()}


def loss(data: list, const: dict) -> float:
    """Mean squared log error of the step time, each older release's rows first scaled by the factor that
    release x GPU family x dense/MoE (``release_factors``) fits best: the constants follow the newest
    software of each group, and an older release informs them through the differences within it."""
    preds = [predict(shape, const) for _, shape, *_ in data]
    factors = release_factors(data, preds)
    total = 0.0
    for (row, shape, *_), p in zip(data, preds):
        f = factors.get((group(shape), row["release"]), 0.0)
        total += (math.log(p / row["step_time_s"]) + f) ** 2
    return total / max(1, len(data))


def fit(data: list, start: dict, sweeps: int = 5) -> dict:
    """Coordinate descent (golden-section per parameter, in its bounds) on the mean squared log error.
    A parameter no row informs (a GPU without rows) keeps its start value."""
    import copy

    const = copy.deepcopy(start)
    present_gpus = {s.gpu for _, s, *_ in data}
    present_prec = {s.eff_class for _, s, *_ in data}
    free = [k for k in FREE if not (k.startswith("eff:") and k[4:] not in present_gpus)
            and not (k.startswith("prec:") and k[5:] not in present_prec)]
    phi = (math.sqrt(5) - 1) / 2
    for _ in range(sweeps):
        for key in free:
            lo, hi = _bounds(key)
            a, b = lo, hi
            c, d = b - phi * (b - a), a + phi * (b - a)

            def f(x):
                _set(const, key, x)
                return loss(data, const)

            fc, fd = f(c), f(d)
            for _ in range(16):
                if fc < fd:
                    b, d, fd = d, c, fc
                    c = b - phi * (b - a)
                    fc = f(c)
                else:
                    a, c, fc = c, d, fd
                    d = a + phi * (b - a)
                    fd = f(d)
            _set(const, key, round((a + b) / 2, 4))
    return const


def baseline(row: dict, shape) -> float:
    """The 6*N*tokens/(GPUs*peak*0.4) step time: N = the parameters one token uses (dense + top-k of the
    experts; with every expert counted the baseline is far worse on MoE rows), peak = the GPU's dense peak
    for the row's precision."""
    from overlap_cli.estimate import flops as F
    from overlap_cli.estimate import gpus as G

    dense, expert = F.parameters(shape)
    if expert:
        expert *= shape.topk / shape.experts
    peak = G.peak_tflops(G.GPUS[shape.gpu], shape.peak_class) * 1e12
    return 6 * (dense + expert) * shape.gbs * shape.seq / (shape.world * peak * 0.4)


def kendall_tau(xs: list, ys: list) -> float:
    n, conc, disc = len(xs), 0, 0
    for i in range(n):
        for j in range(i + 1, n):
            a, b = xs[i] - xs[j], ys[i] - ys[j]
            if a * b > 0:
                conc += 1
            elif a * b < 0:
                disc += 1
    return (conc - disc) / max(1, conc + disc)


def scores(measured: list, predicted: list) -> dict:
    errs = [abs(p - m) / m for m, p in zip(measured, predicted)]
    return {"mape": 100 * sum(errs) / len(errs), "max": 100 * max(errs), "tau": kendall_tau(measured, predicted), "n": len(errs)}


# ------------------------------------------------------------------------------------------- validation

NEWEST = ("26.06", "26.06.01", "26.08")  # Bridge 0.5.x / 0.6.x containers: the software the 0.6.2 recipes run


def adjusted(data: list, const: dict, test: list) -> list:
    """Predictions for ``test`` with ``const`` fitted on ``data``, scaled to each row's release by the factor the
    training rows give its (group, release); None where no training row informs that release (an older release
    the training data lacks for the group) -- the newest-release predictions need no factor."""
    preds = [predict(s, const) for _, s, *_ in data]
    factors = release_factors(data, preds)
    pinned = pinned_releases(data)
    out = []
    for row, shape, *_ in test:
        g = group(shape)
        if row["release"] == pinned.get(g) or release_key(row["release"]) > release_key(pinned.get(g, "0")):
            out.append(predict(shape, const))
        elif (g, row["release"]) in factors:
            out.append(predict(shape, const) * math.exp(factors[(g, row["release"])]))
        else:
            out.append(None)
    return out


def leave_one_model_out(data: list, start: dict) -> list:
    """[(row, shape, predicted)] for every row, each from constants fitted without its model's rows."""
    out = []
    for model in sorted({r["model"] for r, *_ in data}):
        train = [d for d in data if d[0]["model"] != model]
        test = [d for d in data if d[0]["model"] == model]
        const = fit(train, start)
        for (row, shape, *_), p in zip(test, adjusted(train, const, test)):
            out.append((row, shape, p, const))
    return out


def leave_one_release_out(data: list, start: dict, min_train: int = 2) -> list:
    """[(row, shape, predicted)]: for each release after the first ``min_train``, constants fitted on the
    older releases only predict it (what the next container will do, from what was measured before)."""
    releases = sorted({r["release"] for r, *_ in data}, key=release_key)
    out = []
    for i, rel in enumerate(releases[min_train:], min_train):
        train = [d for d in data if release_key(d[0]["release"]) < release_key(rel)]
        test = [d for d in data if d[0]["release"] == rel]
        const = fit(train, start)
        for row, shape, *_ in test:
            out.append((row, shape, predict(shape, const), const))
    return out


def interval_class(shape) -> tuple:
    """The class an estimate's interval comes from: GPU family x dense/MoE x precision (bf16 | fp8 | fp4)."""
    return group(shape) + (shape.peak_class,)
