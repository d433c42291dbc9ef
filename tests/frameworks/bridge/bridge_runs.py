"""Seeded Megatron-Bridge runs for the differential test: a recipe of the corpus, what a user changes about
it and how, the world size and the GPU.

``generate(n, seed)`` draws with ``random.Random(seed)`` from the corpus manifest alone (no dump is read,
so collecting the test costs nothing); ``render`` writes a run's files. FORMS:

- ``dump``         a recipe's full dump, edited (keys set, deleted, sections nulled), checked as the config
- ``dump-gptcfg``  the same with the model in the ``GPTModelConfig`` form Bridge accepts (training/
                   config.py:975-981): ``model: {_target_: megatron.training.models.gpt.GPTModelConfig,
                   transformer: {_target_: megatron.bridge.models.transformer_config.TransformerConfig, ...}}``
- ``recipe``       ``--recipe NAME`` + small hand-written override files + dotlists (``key=v``, ``+key=v``,
                   ``++key=v``, ``~key``), the recipe built on the target (bridge_reference.py)
- ``base``         ``--base DUMP`` + override files + dotlists: the dump's values, not the recipe's

Edits are ``(path, value)`` with ``path`` a tuple of keys; ``DELETE`` removes the key.
"""

from __future__ import annotations

import json
import random
from dataclasses import dataclass, field
from pathlib import Path

FORMS = ("dump", "dump-gptcfg", "recipe", "base")
DELETE = "<delete>"
CO_TARGET = "megatron.bridge.training.comm_overlap.CommOverlapConfig"
GPT_CONFIG = "megatron.training.models.gpt.GPTModelConfig"
TRANSFORMER = "megatron.bridge.models.transformer_config.TransformerConfig"
GPUS = {"h100": (9, "NVIDIA H100 80GB HBM3"), "b200": (10, "NVIDIA B200"), "gb200": (10, "NVIDIA GB200"),
        "b300": (10, "NVIDIA B300 SXM6 AC"), "gb300": (10, "NVIDIA GB300")}


@dataclass
class BridgeRun:
    id: str
    form: str
    recipe: str
    world_size: int
    gpu: str
    edits: list = field(default_factory=list)  # dump forms: [(path, value)]
    files: list = field(default_factory=list)  # recipe / base: override documents (nested dicts, or YAML text)
    dotlists: list = field(default_factory=list)

    @property
    def dump(self) -> str:
        return f"{self.recipe}.yaml"


# What a user changes, by section: key -> candidate values.
MODEL = {
    "tensor_model_parallel_size": [1, 2, 4, 8], "pipeline_model_parallel_size": [1, 2, 4],
    "virtual_pipeline_model_parallel_size": [None, 2, 4], "context_parallel_size": [1, 2],
    "expert_model_parallel_size": [1, 2, 4, 8], "sequence_parallel": [True, False], "tp_comm_overlap": [True, False],
    "overlap_p2p_comm": [True, False], "batch_p2p_comm": [True, False], "defer_embedding_wgrad_compute": [True, False],
    "gradient_accumulation_fusion": [True, False], "pipeline_model_parallel_layout": [None],
    "overlap_moe_expert_parallel_comm": [True, False], "delay_wgrad_compute": [True, False],
    "moe_token_dispatcher_type": ["alltoall", "allgather"], "wgrad_deferral_limit": [0, 2],
}
COMM = {
    "tp_comm_overlap": [True, False], "overlap_grad_reduce": [True, False], "overlap_param_gather": [True, False],
    "align_param_gather": [True, False], "bucket_size": [None, 50000000], "overlap_p2p_comm": [True, False],
    "batch_p2p_comm": [True, False], "defer_embedding_wgrad_compute": [True, False], "wgrad_deferral_limit": [-1, 2],
    "overlap_moe_expert_parallel_comm": [True, False], "delay_wgrad_compute": [True, False],
    "tp_comm_overlap_cfg": [None], "tp_comm_bootstrap_backend": ["nccl", "mpi"],
    "overlap_param_gather_with_optimizer_step": [False, True],
}
DDP = {
    "use_distributed_optimizer": [True, False], "overlap_grad_reduce": [True, False],
    "overlap_param_gather": [True, False], "align_param_gather": [True, False], "bucket_size": [None, 40000000],
    "grad_reduce_in_fp32": [True, False], "average_in_collective": [True, False], "fp8_param_gather": [False, True],
}
OPTIMIZER = {"use_distributed_optimizer": [True, False], "overlap_param_gather": [True, False],
             "overlap_param_gather_with_optimizer_step": [False, True]}
MIXED = ["bf16_mixed", "fp16_mixed", "bf16_with_fp8_delayed_scaling_mixed", "bf16_with_fp8_current_scaling_mixed",
         "bf16_with_mxfp8_mixed"]
MIXED_FIELDS = {"grad_reduce_in_fp32": [True, False], "fp8_param_gather": [True, False], "fp8": [None, "hybrid"],
                "fp8_recipe": ["tensorwise", "delayed", "mxfp8"]}
ENV = {"CUDA_DEVICE_MAX_CONNECTIONS": ["1", "32", 8], "NVTE_FWD_LAYERNORM_SM_MARGIN": ["16"],
       "TORCH_NCCL_HIGH_PRIORITY": ["0", "1"], "NCCL_P2P_NET_CHUNKSIZE": ["524288"]}


def manifest(corpus: Path) -> list:
    """The corpus recipes a run may start from: pretraining and SFT recipes (the PEFT dumps hold a Python
    set Bridge's own ``from_yaml`` cannot read back: not a run anyone can launch from the file)."""
    path = corpus / "manifest.jsonl"
    if not path.is_file():
        return []
    rows = [json.loads(line) for line in path.read_text().splitlines() if line.strip()]
    return [r for r in rows if "peft" not in r["recipe"]]


def _edit(rng: random.Random) -> list:
    """One change a user makes: [(path, value)] (a section replaced counts as one change)."""
    kind = rng.choices(["model", "comm", "ddp", "optimizer", "mixed", "env", "section", "train"],
                       [0.3, 0.22, 0.14, 0.06, 0.1, 0.08, 0.07, 0.03])[0]
    if kind == "model":
        key = rng.choice(sorted(MODEL))
        return [(("model", key), rng.choice(MODEL[key]))]
    if kind == "comm":
        key = rng.choice(sorted(COMM))
        return [(("comm_overlap", key), rng.choice(COMM[key]))]
    if kind == "ddp":
        key = rng.choice(sorted(DDP))
        return [(("ddp", key), rng.choice(DDP[key]))]
    if kind == "optimizer":
        key = rng.choice(sorted(OPTIMIZER))
        return [(("optimizer", key), rng.choice(OPTIMIZER[key]))]
    if kind == "mixed":
        if rng.random() < 0.5:
            return [(("mixed_precision",), rng.choice(MIXED + [None]))]
        key = rng.choice(sorted(MIXED_FIELDS))
        return [(("mixed_precision", key), rng.choice(MIXED_FIELDS[key]))]
    if kind == "env":
        key = rng.choice(sorted(ENV))
        return [(("env_vars", key), rng.choice(ENV[key] + [DELETE]))]
    if kind == "section":
        choice = rng.random()
        if choice < 0.4:
            return [(("comm_overlap",), None)]
        mapping = {"tp_comm_overlap": rng.choice([True, False])}
        if rng.random() < 0.5:
            mapping["_target_"] = CO_TARGET
        if rng.random() < 0.5:
            key = rng.choice(["overlap_grad_reduce", "overlap_param_gather", "bucket_size"])
            mapping[key] = rng.choice([True, False]) if key != "bucket_size" else 30000000
        return [(("comm_overlap",), mapping)]
    return [(("train", rng.choice(["global_batch_size", "micro_batch_size"])), rng.choice([1, 2, 3, 64, 256]))]


def _world(rng: random.Random, row: dict) -> int:
    ws = row["world_size"]
    return rng.choices([ws, ws * 2, max(1, ws // 2), ws + 8, 8], [0.55, 0.15, 0.12, 0.08, 0.1])[0]


def _gpu(rng: random.Random, row: dict) -> str:
    gpu = row.get("gpu")
    return gpu if gpu in GPUS and rng.random() < 0.8 else rng.choice(["h100", "b200"])


def _value_word(value) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, dict):
        return "{" + ",".join(f"{k}:{_value_word(v)}" for k, v in value.items()) + "}"
    return str(value)


def _dotlists(rng: random.Random, edits: list) -> list:
    """Edits as Hydra dotlists: plain, ``+`` / ``++`` now and then, ``~`` for deletions and some nulls."""
    words = []
    for path, value in edits:
        key = ".".join(path)
        if value == DELETE:
            words.append(f"~{key}")
            continue
        r = rng.random()
        if value is None and len(path) == 1 and r < 0.3:
            words.append(f"~{key}")  # a whole section removed from the command line
        elif r < 0.15:
            words.append(f"+{key}={_value_word(value)}")
        elif r < 0.35:
            words.append(f"++{key}={_value_word(value)}")
        else:
            words.append(f"{key}={_value_word(value)}")
    return words


def _nest(edits: list) -> dict:
    doc: dict = {}
    for path, value in edits:
        if value == DELETE:
            continue  # an override file cannot delete; such edits stay dotlists
        node = doc
        for key in path[:-1]:
            if not isinstance(node.get(key), dict):
                node[key] = {}
            node = node[key]
        node[path[-1]] = value
    return doc


def _run(rng: random.Random, rows: list, index: int) -> BridgeRun:
    form = rng.choices(FORMS, [0.26, 0.12, 0.47, 0.15])[0]
    row = rng.choice(rows)
    run = BridgeRun(id="", form=form, recipe=row["recipe"], world_size=_world(rng, row), gpu=_gpu(rng, row))
    edits = [e for _ in range(rng.choices([0, 1, 2, 3, 4], [0.08, 0.3, 0.3, 0.2, 0.12])[0]) for e in _edit(rng)]
    if form.startswith("dump"):
        run.edits = edits
    else:
        split = rng.random()
        to_files = [e for e in edits if e[1] != DELETE and (split < 0.4 or (split < 0.8 and rng.random() < 0.5))]
        rest = [e for e in edits if e not in to_files]
        if to_files:
            if len(to_files) > 1 and rng.random() < 0.3:  # two files, merged in order
                run.files = [_nest(to_files[: len(to_files) // 2]), _nest(to_files[len(to_files) // 2:])]
            else:
                run.files = [_nest(to_files)]
        run.dotlists = _dotlists(rng, rest)
        if rng.random() < 0.06:
            run.dotlists.append(f"+model.{rng.choice(['some_new_flag', 'sequence_parallel'])}=true")  # new / existing
    run.id = f"b{index:03d}-{form}"
    return run


def generate(corpus: Path, n: int = 520, seed: int = 20260120) -> list:
    """``n`` seeded runs, then the fixed ones; [] without the corpus."""
    rows = manifest(corpus)
    if not rows:
        return []
    rng = random.Random(seed)
    return [_run(rng, rows, i) for i in range(n)] + fixed()


# Hand-written runs of the first version of this test (recipe, override files as text, dotlists, world size).
_L70, _GEMMA, _L1B = ("llama3_70b_pretrain_64gpu_h100_bf16_config", "gemma3_1b_pretrain_1gpu_h100_bf16_config",
                      "llama32_1b_pretrain_1gpu_h100_bf16_config")
_QWEN_MOE, _GPT_OSS, _DSV3 = ("qwen3_30b_a3b_pretrain_16gpu_h100_bf16_config", "gpt_oss_20b_pretrain_16gpu_h100_bf16_config",
                              "deepseek_v3_pretrain_64gpu_h100_bf16_config")
_OLMOE, _NANO, _NH8, _Q25 = ("olmoe_7b_pretrain_8gpu_h100_bf16_config", "nemotron_3_nano_pretrain_16gpu_h100_bf16_config",
                             "nemotronh_8b_pretrain_2gpu_h100_bf16_config", "qwen25_7b_pretrain_2gpu_h100_bf16_config")
_CO = f"_target_: {CO_TARGET}\n"
_FIXED = [
    ("ddp-under-comm-overlap", _L70, ["model:\n  tensor_model_parallel_size: 4\nddp:\n  overlap_grad_reduce: false\n"],
     ["model.context_parallel_size=1"], 64),
    ("comm-overlap-onto-null", _GEMMA, ["comm_overlap:\n  tp_comm_overlap: false\n  overlap_grad_reduce: true\n"], [], 8),
    ("comm-overlap-onto-null-with-target", _GEMMA,
     ["comm_overlap:\n  " + _CO + "  tp_comm_overlap: false\n  overlap_grad_reduce: true\n"], [], 8),
    ("mixed-precision-mapping-onto-name", _L1B, ["mixed_precision:\n  grad_reduce_in_fp32: true\n"], [], 8),
    ("mixed-precision-recursed", _QWEN_MOE, ["mixed_precision:\n  grad_reduce_in_fp32: true\n"], [], 16),
    ("list-replaced", _DSV3, ["model:\n  cuda_graph_scope: [attn]\n  pipeline_model_parallel_size: 4\n"
                              "  virtual_pipeline_model_parallel_size: null\n  pipeline_model_parallel_layout: null\n"], [], 256),
    ("dotlist-plus-new-key", _GPT_OSS, [], ["+model.some_new_flag=1", "model.sequence_parallel=false"], 16),
    ("dotlist-delete-section", _L70, [], ["~comm_overlap"], 64),
    ("dotlist-delete-field", _L70, ["ddp:\n  overlap_param_gather: false\n"], ["~ddp.overlap_param_gather"], 64),
    ("dotlist-force", _OLMOE, [], ["++model.expert_model_parallel_size=4", "ddp.overlap_param_gather=false"], 8),
    ("moe-ep-overlap", _NANO, ["comm_overlap:\n  overlap_moe_expert_parallel_comm: true\n"], [], 16),
    ("two-files-later-wins", _Q25, ["model:\n  tensor_model_parallel_size: 2\n  sequence_parallel: true\n",
                                    "model:\n  tensor_model_parallel_size: 4\n"], [], 8),
    ("tp-overlap-enabled", _NH8, ["comm_overlap:\n  tp_comm_overlap: true\nmodel:\n  tensor_model_parallel_size: 2\n"
                                  "  sequence_parallel: true\n"], [], 8),
    ("comm-overlap-null-in-file", _L70, ["comm_overlap: null\n"], [], 64),
    ("bigger-world", _DSV3, [], [], 1024),
    ("dotlist-null-vpp", _L70, [], ["model.virtual_pipeline_model_parallel_size=null"], 64),
    ("dotlist-plus-onto-null-section", _GEMMA, [], ["+comm_overlap.overlap_grad_reduce=true"], 8),
    ("dotlist-force-section-with-target", _GEMMA, [],
     [f"++comm_overlap={{_target_:{CO_TARGET},tp_comm_overlap:false}}"], 8),
    ("interpolation-across-layers", _L70, ["model:\n  context_parallel_size: ${model.tensor_model_parallel_size}\n"], [], 64),
    ("mixed-precision-null", _QWEN_MOE, ["mixed_precision: null\n"], [], 16),
    ("null-then-dotlist-mapping", _L70, ["comm_overlap: null\n"], ["+comm_overlap.tp_comm_overlap=false"], 64),
]


def fixed() -> list:
    return [BridgeRun(id=f"f-{name}", form="recipe", recipe=recipe, world_size=ws, gpu="h100", files=list(texts),
                      dotlists=list(dotlists)) for name, recipe, texts, dotlists, ws in _FIXED]


# -- rendering (reads the dumps) --------------------------------------------------------------------------

def _load(path: Path):
    import yaml

    with open(path) as f:
        return yaml.load(f, Loader=getattr(yaml, "CSafeLoader", yaml.SafeLoader))


def _dump_yaml(tree) -> str:
    import yaml

    return yaml.dump(tree, Dumper=getattr(yaml, "CSafeDumper", yaml.SafeDumper), sort_keys=False, width=1000)


def _apply(tree: dict, edits: list) -> None:
    for path, value in edits:
        node = tree
        for key in path[:-1]:
            if not isinstance(node.get(key), dict):
                node[key] = {"_target_": CO_TARGET, "tp_comm_overlap": False} if key == "comm_overlap" else {}
            node = node[key]
        if value == DELETE:
            node.pop(path[-1], None)
        elif isinstance(value, dict) and isinstance(node.get(path[-1]), dict):
            node[path[-1]] = dict(value)  # a section written anew replaces the old one in a full dump
        else:
            node[path[-1]] = value


# GPTModelConfig's own fields (megatron/training/models/gpt.py:150-181); the rest of a model goes to its
# TransformerConfig. Transformer fields copied from a GPT provider's dump into the GPTModelConfig form:
_GPT_FIELDS = ("seq_length", "vocab_size", "make_vocab_size_divisible_by", "share_embeddings_and_output_weights",
               "position_embedding_type", "rotary_percent", "rotary_base", "parallel_output", "fp16_lm_cross_entropy",
               "should_pad_vocab", "tp_comm_overlap_cfg")
_TRANSFORMER_FIELDS = (
    "num_layers", "hidden_size", "ffn_hidden_size", "num_attention_heads", "num_query_groups", "kv_channels",
    "tensor_model_parallel_size", "pipeline_model_parallel_size", "virtual_pipeline_model_parallel_size",
    "context_parallel_size", "expert_model_parallel_size", "expert_tensor_parallel_size", "sequence_parallel",
    "num_moe_experts", "moe_router_topk", "moe_token_dispatcher_type", "moe_grouped_gemm", "moe_ffn_hidden_size",
    "bf16", "fp16", "params_dtype", "pipeline_dtype", "activation_func", "gated_linear_unit", "normalization",
    "add_bias_linear", "add_qkv_bias", "tp_comm_overlap", "overlap_p2p_comm", "batch_p2p_comm",
    "gradient_accumulation_fusion", "defer_embedding_wgrad_compute", "wgrad_deferral_limit",
    "pipeline_model_parallel_layout", "account_for_embedding_in_pipeline_split", "account_for_loss_in_pipeline_split",
    "num_layers_in_first_pipeline_stage", "num_layers_in_last_pipeline_stage", "overlap_moe_expert_parallel_comm",
    "delay_wgrad_compute", "transformer_impl", "attention_dropout", "hidden_dropout", "layernorm_epsilon",
    "cross_entropy_loss_fusion", "tp_comm_bootstrap_backend", "moe_flex_dispatcher_backend",
    "moe_shared_expert_intermediate_size", "moe_shared_expert_overlap", "moe_layer_freq", "moe_router_dtype",
    "moe_permute_fusion", "moe_router_load_balancing_type", "moe_aux_loss_coeff", "qk_layernorm",
)
_SMALL_MODEL = {"num_layers": 8, "hidden_size": 1024, "ffn_hidden_size": 4096, "num_attention_heads": 16,
                "tensor_model_parallel_size": 1, "pipeline_model_parallel_size": 1, "context_parallel_size": 1,
                "sequence_parallel": False, "bf16": True,
                "params_dtype": {"_call_": False, "_target_": "torch.bfloat16"},
                "pipeline_dtype": {"_call_": False, "_target_": "torch.bfloat16"}}


def _gpt_config_form(model: dict) -> dict:
    """The model written as a GPTModelConfig: a GPT provider's values where the dump holds one (no MLA, no
    hybrid), else a small hand-written transformer."""
    target = str(model.get("_target_", ""))
    gpt_like = target.endswith("ModelProvider") and "Hybrid" not in target and "Mamba" not in target \
        and not model.get("multi_latent_attention") and not model.get("is_hybrid_model")
    source = model if gpt_like else {**_SMALL_MODEL, "seq_length": model.get("seq_length", 4096),
                                     "vocab_size": model.get("vocab_size", 32000)}
    transformer = {"_target_": TRANSFORMER}
    transformer.update({k: source[k] for k in _TRANSFORMER_FIELDS if k in source})
    out = {"_target_": GPT_CONFIG}
    out.update({k: source[k] for k in _GPT_FIELDS if k in source})
    out["transformer"] = transformer
    return out


def render(run: BridgeRun, corpus: Path, folder: Path) -> dict:
    """Write the run's files; the CLI arguments of `overlap check` and the reference's case."""
    folder.mkdir(parents=True, exist_ok=True)
    dump = corpus / run.dump
    gpu = {"major": GPUS[run.gpu][0], "name": GPUS[run.gpu][1]}
    common = ["--world-size", str(run.world_size), "--gpu", run.gpu]
    if run.form.startswith("dump"):
        tree = _load(dump)
        if run.form == "dump-gptcfg":
            tree["model"] = _gpt_config_form(tree["model"])
            edits = [(("model", "transformer", *p[1:]) if p[0] == "model" and p[1] not in _GPT_FIELDS else p, v)
                     for p, v in run.edits]
        else:
            edits = run.edits
        _apply(tree, edits)
        path = folder / f"{run.id}.yaml"
        path.write_text(_dump_yaml(tree))
        return {"args": [str(path), *common],
                "case": {"mode": "file", "config": str(path), "files": [], "dotlists": [],
                         "world_size": run.world_size, "gpu": gpu}}
    files = []
    for i, doc in enumerate(run.files):
        p = folder / f"{run.id}-over{i}.yaml"
        p.write_text(doc if isinstance(doc, str) else _dump_yaml(doc))
        files.append(str(p))
    head = ["--recipe", run.recipe] if run.form == "recipe" else ["--base", str(dump)]
    return {"args": [*head, *files, *run.dotlists, *common],
            "case": {"mode": run.form, "config": str(dump), "files": files, "dotlists": list(run.dotlists),
                     "world_size": run.world_size, "gpu": gpu}}
