"""The one reader of the resolved view: everything the step-time model needs, as a ``Shape``.

It reads only ``view.final`` (sections ``model``, ``ddp``, ``optimizer`` with Megatron-Core's field names),
``view.effective`` (dotted key -> Value), the parallel sizes (``view.tp/pp/vp/cp/dp``), the launch
environment the resolver computed (``launch_env.effective_entries``), ``view.cfg`` for ``train`` /
``dataset`` / ``peft`` and ``view.target`` -- the same names a Megatron-LM front end produces, so it
plugs in unchanged. A config the model cannot represent raises ``Unsupported`` with one sentence.
"""

from __future__ import annotations

import re

from overlap_cli.estimate import gpus as gpu_table


class Unsupported(Exception):
    """The estimate cannot model this config; ``str(exc)`` is one sentence saying why."""


class NoStepTimeFigures(Unsupported):
    """The target GPU has no figures for the step time (gpus.NOT_MODELLED); its memory can still be counted."""


class Shape:
    """Plain record of the model, batch, parallel layout, precision and overlap settings of one config."""

    def __init__(self, **fields):
        self.__dict__.update(fields)

    def replace(self, **changes) -> "Shape":
        new = Shape(**self.__dict__)
        new.__dict__.update(changes)
        return new

    def __repr__(self) -> str:
        return "Shape(" + ", ".join(f"{k}={v!r}" for k, v in sorted(self.__dict__.items())) + ")"


# Megatron-Core TransformerConfig defaults for fields a hand-written file may leave out
# (megatron/core/transformer/transformer_config.py).
ASSUMED_VOCAB = 131072  # used (and said) when model.vocab_size is null: the tokenizer decides it at launch
_FREQ_TERM = re.compile(r"^\[\s*([01])\s*\]\s*\*\s*(\d+)$")


def _int(value, what: str, minimum: int = 1) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < minimum:
        raise Unsupported(f"{what} is {value!r}: the estimate needs an integer >= {minimum}")
    return value


# The largest size the estimate computes with: past it no model Megatron-Core builds (its sizes are int32 /
# int64 tensor dimensions) and Python's float arithmetic overflows.
MAX_SIZE = 1 << 40


def _too_large(view) -> "str | None":
    """Why the run's sizes are past what the estimate computes with (a model or train integer over MAX_SIZE),
    or None. ``train`` is the view's (Megatron-LM) or the file's section (Bridge's view carries no train)."""
    for section in ("model", "train"):
        values = view.final.get(section)
        if values is None:
            values = view.cfg.section(section)
        for key, value in (values or {}).items():
            if isinstance(value, int) and not isinstance(value, bool) and abs(value) > MAX_SIZE:
                return (f"{section}.{key} is {value}: past the largest size the estimate computes with "
                        f"({MAX_SIZE:,}); no model Megatron-Core builds has it")
    return None


def moe_layer_pattern(freq, num_layers: int) -> list:
    """Which layers are MoE layers, as Megatron-Core reads ``moe_layer_freq`` (an int k: every k-th layer,
    layer 0 included; a list of 0/1; or a string such as ``([0]*3+[1]*58)``)."""
    if isinstance(freq, bool):
        raise Unsupported(f"model.moe_layer_freq is {freq!r}: expected an integer, a list or a pattern string")
    if isinstance(freq, int) and freq >= 1:
        return [1 if i % freq == 0 else 0 for i in range(num_layers)]
    if isinstance(freq, list) and all(x in (0, 1) for x in freq):
        pattern = list(freq)
    elif isinstance(freq, str):
        pattern = []
        for term in freq.strip().strip("()").split("+"):
            m = _FREQ_TERM.match(term.strip())
            if m is None:
                raise Unsupported(f"model.moe_layer_freq {freq!r} is not a pattern of '[0|1]*N' terms the estimate can read")
            pattern += [int(m.group(1))] * int(m.group(2))
    else:
        raise Unsupported(f"model.moe_layer_freq is {freq!r}: expected an integer, a list or a pattern string")
    if len(pattern) != num_layers:
        raise Unsupported(f"model.moe_layer_freq has {len(pattern)} entries for {num_layers} layers")
    return pattern


def hybrid_counts(pattern: str) -> dict:
    """Layer counts of a hybrid (Mamba) layer pattern: M Mamba, * attention, - MLP, E MoE, G gated delta net.
    ``|`` separates pipeline stages; what follows ``/`` is the multi-token-prediction block."""
    main, _, mtp = pattern.partition("/")
    counts = {s: main.count(s) for s in "M*-EG"}
    unknown = set(main) - set("M*-EG|")
    if unknown:
        raise Unsupported(f"model.hybrid_layer_pattern has layer symbol(s) {''.join(sorted(unknown))!r} the estimate does not model")
    counts["mtp_depths"] = (mtp.count("/") + 1) if mtp else 0
    return counts


def _precision(model: dict) -> tuple:
    """(efficiency class, peak class): bf16 | fp8cs | mxfp8 | nvfp4, and bf16 | fp8 | fp4."""
    if model.get("fp4"):
        return "nvfp4", "fp4"
    if model.get("fp8"):
        recipe = str(model.get("fp8_recipe") or "delayed")
        return ("mxfp8", "fp8") if recipe == "mxfp8" else ("fp8cs", "fp8")
    return "bf16", "bf16"


def _env(view) -> dict:
    from overlap_cli.frameworks.bridge.launch_env import effective_entries

    return {k[len("env."):]: v.value for k, v in effective_entries(view).items()}


def _int_env(value, default: int = 0) -> int:
    try:
        return int(str(value))
    except (TypeError, ValueError):
        return default


def shape_from_view(view, step_time: bool = True) -> Shape:
    """The Shape of a resolved config. Raises Unsupported (one sentence) when it cannot be modelled
    (``step_time=False``: a GPU without step-time figures is accepted; the memory count does not need them)."""
    if getattr(view, "framework", None) == "nemo-rl":
        raise Unsupported("a NeMo-RL config: its model shape comes from the Hugging Face checkpoint NeMo-RL "
                          "converts at launch, not from the file")
    model, ddp = view.final.get("model", {}), view.final.get("ddp", {})
    optimizer = view.final.get("optimizer", {})
    cfg = view.cfg
    assumptions = []

    gpu_name = view.target.get("gpu")
    gpu_stated = gpu_name is not None
    if gpu_name is None:
        gpu_name = "h100"
        assumptions.append("GPU not given (--gpu): h100 assumed")
    if gpu_name in gpu_table.NOT_MODELLED and step_time:
        raise NoStepTimeFigures(gpu_table.NOT_MODELLED[gpu_name])
    unknown = unknown_input(view)
    if unknown is not None:
        raise Unsupported(f"{unknown}: the estimate is not built on a class default standing in for it")
    world = view.target.world_size
    # Who said the world size: the user (a flag, directive, [tool.overlap], the launch's torchrun) or not
    # (a catalog recipe's name, or none: assumed below); memory.py reads it for its verdict.
    world_from = view.target.source("world_size") if world is not None else "assumed"
    world_label = view.target.source_label("world_size") if world is not None else "assumed"
    too_large = _too_large(view)
    if too_large is not None:
        raise Unsupported(too_large)
    for key in ("num_layers", "hidden_size", "num_attention_heads"):
        if model.get(key) is None:
            raise Unsupported(f"model.{key} is not set: the estimate needs the model's shape (num_layers, hidden_size, num_attention_heads, ...)")
    layers = _int(model["num_layers"], "model.num_layers")
    hidden = _int(model["hidden_size"], "model.hidden_size")
    heads = _int(model["num_attention_heads"], "model.num_attention_heads")
    groups = model.get("num_query_groups") or heads
    kv_channels = model.get("kv_channels") or hidden // heads
    ffn = model.get("ffn_hidden_size") or 4 * hidden

    seq = model.get("seq_length") or cfg.get(("dataset", "seq_length")) or cfg.get(("dataset", "sequence_length"))
    seq = _int(seq, "model.seq_length / dataset.seq_length")
    gbs = _int(cfg.get(("train", "global_batch_size")), "train.global_batch_size")
    mbs = _int(cfg.get(("train", "micro_batch_size")), "train.micro_batch_size")

    tp, pp, cp, vp = view.tp, view.pp, view.cp, (view.vpp_final or view.vp or 1)
    ep = _int(model.get("expert_model_parallel_size") or 1, "model.expert_model_parallel_size")
    etp = model.get("expert_tensor_parallel_size") or tp
    if world is None:
        world = tp * pp * cp * max(1, ep // max(1, cp) if ep > 1 else 1)
        world = max(world, tp * pp * cp)
        assumptions.append(f"world size not given (--world-size): {world} assumed (one data-parallel replica)")
    if world % (tp * pp * cp):
        raise Unsupported(f"world size {world} is not a multiple of TP*PP*CP = {tp * pp * cp}")
    dp = world // (tp * pp * cp)
    if gbs % (mbs * dp):
        raise Unsupported(f"train.global_batch_size {gbs} is not a multiple of micro_batch_size*DP = {mbs * dp}")
    microbatches = gbs // (mbs * dp)

    vocab, vocab_how, vocab_unknown = vocabulary(view, model, tp)
    if vocab_unknown is not None:  # the step time's logits and embedding need a size: one is assumed and said
        vocab = ASSUMED_VOCAB
        assumptions.append(f"vocabulary unknown ({vocab_unknown}): {ASSUMED_VOCAB} assumed for the step time; "
                           "the memory of the embedding and output layer is left unknown")

    # Layer kinds.
    experts = model.get("num_moe_experts") or 0
    pattern = model.get("hybrid_layer_pattern") or model.get("hybrid_override_pattern")
    if pattern:
        c = hybrid_counts(str(pattern))
        if c["G"]:
            raise Unsupported("gated delta net layers (G) in model.hybrid_layer_pattern are not modelled")
        kinds = {"attn": c["*"], "mamba": c["M"], "mlp": c["-"], "moe": c["E"]}
        layers_total = sum(kinds.values())
        mixer_per_layer = True  # each symbol is one sub-layer (mixer or MLP)
        mtp = model.get("mtp_num_layers") or c["mtp_depths"]
    else:
        moe_layers = sum(moe_layer_pattern(model.get("moe_layer_freq", 1), layers)) if experts else 0
        kinds = {"attn": layers, "mamba": 0, "mlp": layers - moe_layers, "moe": moe_layers}
        layers_total = layers
        mixer_per_layer = False
        mtp = model.get("mtp_num_layers") or 0
    if experts and kinds["moe"] and ep > experts:
        raise Unsupported(f"expert_model_parallel_size {ep} exceeds num_moe_experts {experts}")
    if model.get("experimental_attention_variant"):
        raise Unsupported(f"model.experimental_attention_variant {model['experimental_attention_variant']!r} is not modelled")

    mla = bool(model.get("multi_latent_attention"))
    window = model.get("window_size")
    if isinstance(window, (list, tuple)):
        window = window[0] + window[1] + 1
    skip = model.get("window_attn_skip_freq")
    swa_layers = 0
    if window:
        if skip is None:
            swa_layers = kinds["attn"]
        elif isinstance(skip, int) and skip > 0:
            swa_layers = sum(1 for i in range(kinds["attn"]) if (i + 1) % skip != 0)
        elif isinstance(skip, list):
            swa_layers = sum(1 for x in skip[: kinds["attn"]] if x)

    granularity = model.get("recompute_granularity")
    recompute = {"granularity": granularity, "method": model.get("recompute_method"),
                 "num_layers": model.get("recompute_num_layers"),
                 "modules": list(model.get("recompute_modules") or (["core_attn"] if granularity == "selective" else []))}

    eff_class, peak_class = _precision(model)
    env = _env(view)
    ub = view.ub
    ub_fields = (ub.te_config if isinstance(ub.te_config, dict) else ub.given) if ub is not None else None
    ub_sms_used = ub_sms(ub_fields if isinstance(ub_fields, dict) else {})
    fsdp = bool(view.megatron_fsdp) or (ddp.get("data_parallel_sharding_strategy") in ("optim_grads_params",) and bool(view.megatron_fsdp))
    peft = cfg.get(("peft",)) is not None and isinstance(cfg.get(("peft",)), dict)

    bucket = view.value("ddp.bucket_size") if "ddp.bucket_size" in view.effective else ddp.get("bucket_size")
    grad_dtype = view.effective.get("ddp.grad_reduce_in_fp32")
    if grad_dtype is not None and grad_dtype.source == "unknown":  # e.g. --bf16 from an unknown expansion
        assumptions.append("ddp.grad_reduce_in_fp32 not known statically: gradients reduced in bf16 assumed")
    shape = Shape(
        gpu=gpu_name, gpu_stated=gpu_stated, world=world, world_from=world_from, world_label=world_label, layers=layers_total, kinds=kinds, mixer_per_layer=mixer_per_layer,
        hidden=hidden, heads=heads, groups=groups, kv_channels=kv_channels, ffn=ffn,
        gated=bool(model.get("gated_linear_unit")), vocab=vocab, vocab_how=vocab_how, vocab_unknown=vocab_unknown,
        mtp=int(mtp or 0),
        tied=bool(model.get("share_embeddings_and_output_weights")),
        experts=experts, topk=model.get("moe_router_topk") or 1,
        moe_ffn=model.get("moe_ffn_hidden_size") or ffn,
        shared_ffn=model.get("moe_shared_expert_intermediate_size") or 0,
        latent=model.get("moe_latent_size"),
        mla=mla, q_lora=model.get("q_lora_rank"), kv_lora=model.get("kv_lora_rank") or 0,
        qk_dim=model.get("qk_head_dim") or 128, rope_dim=model.get("qk_pos_emb_head_dim") or 0,
        v_dim=model.get("v_head_dim") or 128, gate=bool(model.get("attention_output_gate")),
        window=window, swa_layers=swa_layers,
        mamba_heads=model.get("mamba_num_heads"), mamba_head_dim=model.get("mamba_head_dim") or 64,
        mamba_state=model.get("mamba_state_dim") or 128, mamba_groups=model.get("mamba_num_groups") or 8,
        seq=seq, gbs=gbs, mbs=mbs, microbatches=microbatches,
        tp=tp, pp=pp, vp=vp, cp=cp, dp=dp, ep=ep, etp=etp,
        eff_class=eff_class, peak_class=peak_class, recompute=recompute, peft=peft,
        sp=bool(view.value("model.sequence_parallel")),
        tp_overlap=bool(view.value("model.tp_comm_overlap")), ub_sms=ub_sms_used,
        overlap_p2p=bool(view.value("model.overlap_p2p_comm")),
        ep_overlap=bool(view.value("model.overlap_moe_expert_parallel_comm")),
        delay_wgrad=bool(view.value("model.delay_wgrad_compute")),
        shared_expert_overlap=bool(model.get("moe_shared_expert_overlap")),
        flex=(model.get("moe_token_dispatcher_type") == "flex") or model.get("moe_enable_deepep") is True,
        group_topk=model.get("moe_router_group_topk"),
        cp_comm_type=model.get("cp_comm_type") or "p2p",
        distopt=bool(view.value("ddp.use_distributed_optimizer")),
        overlap_grad_reduce=bool(view.value("ddp.overlap_grad_reduce")),
        overlap_param_gather=bool(view.value("ddp.overlap_param_gather")),
        bucket_size=bucket, grad_fp32=bool(view.value("ddp.grad_reduce_in_fp32")),
        fp8_param_gather=bool(view.value("ddp.fp8_param_gather")), fsdp=fsdp,
        cuda_graph=_cuda_graph(model), fused_grouped_mlp=_fused_grouped_mlp(model, env, cfg),
        dropless=model.get("moe_expert_capacity_factor") is None and not model.get("moe_pad_expert_input_to_capacity"),
        cdmc=None if env.get("CUDA_DEVICE_MAX_CONNECTIONS") is None else str(env["CUDA_DEVICE_MAX_CONNECTIONS"]),
        ln_margin_fwd=_int_env(env.get("NVTE_FWD_LAYERNORM_SM_MARGIN")),
        ln_margin_bwd=_int_env(env.get("NVTE_BWD_LAYERNORM_SM_MARGIN")),
        # Read by estimate/memory.py only.
        normalization=model.get("normalization") or "LayerNorm",
        activation=_activation_name(model.get("activation_func")),
        hybrid_pattern=str(pattern) if pattern else None,
        pp_layout=model.get("pipeline_model_parallel_layout"),
        first_stage_layers=model.get("num_layers_in_first_pipeline_stage"),
        last_stage_layers=model.get("num_layers_in_last_pipeline_stage"),
        peft_dim=_peft_field(cfg, "dim"), peft_targets=_peft_field(cfg, "target_modules"),
        fsdp_strategy=ddp.get("data_parallel_sharding_strategy") if fsdp else None,
        offload_layers=(model.get("cpu_offloading_num_layers") or 0)
        if model.get("cpu_offloading") and model.get("cpu_offloading_activations", True) else 0,
        fine_grained_offload=bool(model.get("fine_grained_activation_offloading")),
        generation=view.target.gpu_generation or ("sm100-or-newer" if gpu_name.startswith(("b", "gb")) else "hopper-or-older"),
        assumptions=assumptions,
    )
    _ = optimizer
    return shape


# What the estimate reads: the effective settings (view.value, view.tp/pp/vp/cp) and the run's own keys (final
# model / train / dataset / tokenizer). ddp.grad_reduce_in_fp32 is not here: an unknown one is an assumption
# the estimate states (BF16 gradients), as for a Megatron-LM launch whose --bf16 comes from an unknown expansion.
EFFECTIVE_INPUTS = (
    "model.tensor_model_parallel_size", "model.pipeline_model_parallel_size", "model.virtual_pipeline_model_parallel_size",
    "model.context_parallel_size", "model.sequence_parallel", "model.tp_comm_overlap", "model.tp_comm_overlap_cfg",
    "model.overlap_p2p_comm", "model.overlap_moe_expert_parallel_comm", "model.delay_wgrad_compute",
    "ddp.use_distributed_optimizer", "ddp.overlap_grad_reduce", "ddp.overlap_param_gather", "ddp.bucket_size",
    "ddp.fp8_param_gather",
)
RUN_INPUTS = tuple(("model", k) for k in (
    "num_layers", "hidden_size", "num_attention_heads", "num_query_groups", "kv_channels", "ffn_hidden_size",
    "seq_length", "vocab_size", "make_vocab_size_divisible_by", "num_moe_experts", "moe_layer_freq", "moe_ffn_hidden_size",
    "moe_router_topk", "moe_shared_expert_intermediate_size", "expert_model_parallel_size", "expert_tensor_parallel_size",
    "hybrid_layer_pattern", "hybrid_override_pattern", "multi_latent_attention", "gated_linear_unit", "fp8", "fp4",
    "recompute_granularity", "recompute_method", "recompute_num_layers", "share_embeddings_and_output_weights",
)) + (("train", "global_batch_size"), ("train", "micro_batch_size"), ("dataset", "seq_length"),
      ("tokenizer", "use_tokenizer_vocab_size"), ("tokenizer", "tokenizer_type"), ("tokenizer", "vocab_size"))


def unknown_input(view):
    """``KEY is unknown (why)`` for the first value the estimate reads that the run leaves unknown (a Python run
    whose value comes from the environment, an argument, a call the reader cannot follow), or None. The view
    holds a class default there; an estimate built on it would state a number nobody wrote."""
    effective = getattr(view, "effective", None) or {}
    for key in EFFECTIVE_INPUTS:
        value = effective.get(key)
        if value is not None and value.source == "unknown":
            return f"{key} is unknown ({value.reason})"
    cfg = view.cfg
    if getattr(cfg, "unknown", None):
        from overlap_cli.frameworks.bridge.unknowns import unknown_reason

        for path in RUN_INPUTS:
            reason = unknown_reason(cfg, path)
            if reason is not None:
                return f"{'.'.join(path)} is unknown ({reason})"
    return None


def _padded(size: int, model: dict, tp: int) -> int:
    """Megatron's padding: up to a multiple of make_vocab_size_divisible_by x TP (megatron/training/vocab_utils.py:
    45-59, _calculate_padded_vocab_size_cached, which Bridge's calculate_padded_vocab_size calls)."""
    multiple = (model.get("make_vocab_size_divisible_by") or 128) * tp
    return -(-int(size) // multiple) * multiple


def tokenizer_size(cfg):
    """(the vocabulary size the run's tokenizer reports, None) or (None, why it is not known statically). Only
    Megatron-Core's NullTokenizer states its size in the config (``tokenizer.vocab_size``; its ``vocab_size``
    property returns it, megatron/core/tokenizers/text/libraries/null_tokenizer.py:16-18,59-61); every other
    tokenizer is read from its files at launch (``build_tokenizer``, training/setup.py:292)."""
    tokenizer = cfg.get(("tokenizer",))
    if not isinstance(tokenizer, dict):
        return None, "no tokenizer section: the tokenizer that sets it is not in the file"
    kind, size = tokenizer.get("tokenizer_type"), tokenizer.get("vocab_size")
    if kind == "NullTokenizer":
        if isinstance(size, int) and not isinstance(size, bool) and size > 0:
            return size, None
        return None, f"tokenizer.vocab_size is {size!r} for the NullTokenizer"
    name = tokenizer.get("tokenizer_model")
    return None, (f"tokenizer {kind}" + (f" {name}" if name else "") + ": its size is read from the tokenizer's "
                  "files at launch, not known statically")


def vocabulary(view, model: dict, tp: int) -> tuple:
    """(vocabulary rows the model allocates, how that was decided, None) or (None, None, why it is unknown).

    Bridge: as ``setup()`` sets it before the model is built (training/setup.py:292-298 in 0.6.2):
    ``_validate_and_set_vocab_size`` (setup.py:681-720) takes the tokenizer's size when
    ``tokenizer.use_tokenizer_vocab_size`` is set or ``model.vocab_size`` is null, and pads it
    (``should_pad_vocab``); otherwise ``model.vocab_size`` as written, unpadded (a size below the
    tokenizer's raises there). The provider pads only when ``should_pad_vocab`` (models/gpt_provider.py:265-270).
    Megatron-LM: ``--vocab-size`` padded by build_tokenizer (configs.py's padded_vocab_size)."""
    if getattr(view, "framework", None) == "megatron-lm":
        size = model.get("padded_vocab_size") or model.get("vocab_size")
        if size is None:
            return None, None, "--vocab-size not given: the tokenizer sets it at launch"
        padded = model.get("padded_vocab_size") or _padded(size, model, tp)
        return padded, f"--vocab-size {model.get('vocab_size')} padded to {padded}", None
    cfg = view.cfg
    from_tokenizer = cfg.get(("tokenizer", "use_tokenizer_vocab_size")) is True
    written = model.get("vocab_size")
    if not from_tokenizer and written is not None:
        return int(written), f"model.vocab_size {written} (set by the config, not padded)", None
    size, why = tokenizer_size(cfg)
    reason = ("tokenizer.use_tokenizer_vocab_size is true" if from_tokenizer else "model.vocab_size is null")
    if size is None:
        return None, None, f"{reason}, so setup() takes the tokenizer's size; {why}"
    padded = _padded(size, model, tp)
    return padded, f"the tokenizer's {size} ({reason}), padded to {padded}", None


def _cuda_graph(model: dict):
    """What CUDA graphs capture, as Megatron-Core 0.19.2 reads ``cuda_graph_impl`` / ``cuda_graph_modules``
    (transformer_config.py:1032-1064; Bridge's is_full_iteration_cuda_graph, utils/cuda_graph.py:121):
    "full_iteration" (the whole forward-backward of the step), a frozenset of per-layer modules (attn, mlp,
    moe, moe_router, moe_preprocess, mamba; "layer" for the whole layer), or None (no graph)."""
    impl = model.get("cuda_graph_impl") or "none"
    if model.get("enable_cuda_graph") and impl == "none":
        impl = "local"
    mods = model.get("cuda_graph_modules")
    if mods is None:
        mods = model.get("cuda_graph_scope")
    if isinstance(mods, (str, dict)):
        mods = [mods]
    names = []
    for m in mods or []:
        name = m.get("_name_") if isinstance(m, dict) else m
        if isinstance(name, str):
            names.append(name.rsplit(".", 1)[-1])
    if impl == "full_iteration" or (impl == "local" and "full_iteration" in names):
        return "full_iteration"
    if impl in ("local", "transformer_engine"):
        names = [n for n in names if n != "full"]
        return frozenset(names) if names else frozenset(["layer"])
    return None


def _fused_grouped_mlp(model: dict, env: dict, cfg) -> bool:
    """Transformer Engine's CuTe DSL fused grouped MLP for the routed experts: the op fuser path of the
    experts (``use_transformer_engine_op_fuser``) with NVTE_CUTEDSL_FUSED_GROUPED_MLP=1, as Bridge's
    performance scripts set them together (scripts/performance/utils/overrides.py, set_workload_base_configs)."""
    value = env.get("NVTE_CUTEDSL_FUSED_GROUPED_MLP")
    if value is None:
        value = cfg.get(("env_vars", "NVTE_CUTEDSL_FUSED_GROUPED_MLP"))
    flag = str(value if value is not None else 0).strip().lower()
    return bool(model.get("use_transformer_engine_op_fuser")) and flag in ("1", "true", "yes", "on")


def _activation_name(value):
    """The function a model's ``activation_func`` names (a ``_target_`` mapping or a dotted string), or None."""
    if isinstance(value, dict):
        value = value.get("_target_")
    return str(value).rsplit(".", 1)[-1] if value else None


def _peft_field(cfg, key: str):
    peft = cfg.get(("peft",))
    return peft.get(key) if isinstance(peft, dict) else None


def ub_sms(fields: dict) -> int:
    """Mean SMs a userbuffers config gives its communication kernels (``num_sm`` of each GEMM's entry)."""
    sms = [v.get("num_sm") for v in fields.values() if isinstance(v, dict) and isinstance(v.get("num_sm"), int)]
    return round(sum(sms) / len(sms)) if sms else UB_DEFAULT_SMS


# Transformer Engine's userbuffers default when a config gives no per-GEMM table (an assumption: TE's
# defaults range from 1 SM for ring exchange to 16 for pipelined and bulk overlaps).
UB_DEFAULT_SMS = 8
