"""The configs Megatron-LM builds from ``args`` after ``validate_args`` — the second half of the resolver.

``final``: the TransformerConfig fields (``core_transformer_config_from_args``, megatron/training/
argument_utils.py:277-340), the DDP config (``get_megatron_ddp_config``, megatron/training/training.py:1977)
with the bucket size ``resolve_ddp_bucket_size`` computes (training.py:1552-1567), the optimizer config and
the training sizes; ``effective``: the overlap keys with their provenance (the release's EFFECTIVE_KEYS, the names
Bridge's resolver uses) and the launch environment (``env.*``).
"""

from __future__ import annotations

from overlap_cli.results import DEFAULT, UNKNOWN as UNKNOWN_SOURCE, USER, Value
from overlap_cli.frameworks.megatron_lm import facts as lm

DERIVED = "derived"
MAX_CONNECTIONS = "CUDA_DEVICE_MAX_CONNECTIONS"
# Launch variables shown in ``effective`` when the launch sets them (the overlap-related ones).
SHOWN_ENV = (
    MAX_CONNECTIONS, "NVTE_FWD_LAYERNORM_SM_MARGIN", "NVTE_BWD_LAYERNORM_SM_MARGIN", "TORCH_NCCL_HIGH_PRIORITY",
    "NCCL_P2P_NET_CHUNKSIZE",
)  # fmt: skip


def how_set(env) -> str:
    """How the launch sets a variable, in words."""
    return {"export": "exported", "prefix": "set before the launcher", "ENV_VARS": "set in ENV_VARS",
            "assignment": "assigned"}.get(env.how, "set")


def build_configs(r, a, prov, known, unknown, fail) -> None:
    """``final``: the TransformerConfig, DDP config, optimizer config and training sizes Megatron-LM builds
    from ``args``; ``effective``: the overlap keys with their provenance."""
    from overlap_cli.frameworks.megatron_lm import releases

    release = releases.CORE.get(r.launch.core_version)
    effective_keys = release.EFFECTIVE_KEYS
    clean = {k: (None if v is unknown else v) for k, v in a.items()}
    model = dict(clean)
    for key, dest in lm.DEST_OF.items():
        section, name = key.split(".", 1)
        if section == "model":
            model[name] = clean.get(dest)
    model["virtual_pipeline_model_parallel_size"] = r.vpp
    p2p = a.get("overlap_p2p_comm")
    model["batch_p2p_comm"] = None if not known(p2p) else not p2p  # argument_utils.py:307
    unknown_p2p = prov.get("overlap_p2p_comm") if not known(p2p) else None
    prov["batch_p2p_comm"] = Value(
        model["batch_p2p_comm"], DERIVED if known(p2p) else UNKNOWN_SOURCE,
        f"not overlap_p2p_comm (core_transformer_config_from_args, {lm.BATCH_P2P_AT})"
        + (f"; overlap_p2p_comm {unknown_p2p.reason}" if unknown_p2p is not None else ""))
    # argument_utils.py:314-326: --swiglu / --quick-geglu make the MLP gated; gpt_builders.py:95 ties the
    # output layer to the embedding unless --untie-embeddings-and-output-weights.
    model["gated_linear_unit"] = a.get("swiglu") is True or a.get("quick_geglu") is True
    model["share_embeddings_and_output_weights"] = a.get("untie_embeddings_and_output_weights") is not True
    if a.get("group_query_attention") is not True:
        model["num_query_groups"] = None  # argument_utils.py:330-333
    hidden, heads = clean.get("hidden_size"), clean.get("num_attention_heads")
    if model.get("ffn_hidden_size") is None and isinstance(hidden, int):  # arguments.py:1280-1289
        model["ffn_hidden_size"] = int((4 * hidden * 2 / 3) / 64) * 64 if clean.get("swiglu") else 4 * hidden
    if model.get("kv_channels") is None and isinstance(hidden, int) and isinstance(heads, int) and heads:
        model["kv_channels"] = hidden // heads  # arguments.py:1291-1293
    vocab, div = clean.get("vocab_size"), clean.get("make_vocab_size_divisible_by") or lm.VOCAB_DIVISIBLE_DEFAULT
    if isinstance(vocab, int) and isinstance(r.tp, int):  # build_tokenizer.py:124 vocab_size_with_padding
        multiple = div * r.tp
        model["padded_vocab_size"] = -(-vocab // multiple) * multiple

    ddp = {name: clean.get(name) for name in lm.DDP_FIELDS}
    for key, dest in lm.DEST_OF.items():
        section, name = key.split(".", 1)
        if section == "ddp":
            ddp[name] = clean.get(dest)
    ddp["bucket_size"], bucket = _bucket_size(r, a, known)
    prov["ddp_bucket_size"] = bucket
    overrides = {}  # effective key -> Value, where the section's config does not take the dest
    if a.get("use_torch_fsdp2") is True:
        # training.py:1980-1982: Torch-FSDP2 gets TorchFullyShardedDataParallelConfig(reshard_after_forward) only;
        # every other field keeps DistributedDataParallelConfig's default.
        for key in effective_keys:
            section, name = key.split(".", 1)
            if section == "ddp" and name != "bucket_size":
                ddp[name] = release.DDP_DEFAULTS[name]
                overrides[key] = Value(ddp[name], DERIVED, "--use-torch-fsdp2: get_megatron_ddp_config passes only "
                                       "reshard_after_forward (training.py:1980-1982); the DistributedDataParallelConfig "
                                       "default stays")
    if clean.get("ddp_num_buckets") is not None and clean.get("ddp_bucket_size") is not None:  # both known
        fail("num-buckets", lm.NUM_BUCKETS_AND_SIZE, lm.NUM_BUCKETS_AT, "ddp_num_buckets", "ddp_bucket_size")
    optimizer = {name: clean.get(name) for name in lm.OPTIMIZER_FIELDS}
    train = {name: clean.get(name) for name in lm.TRAIN_FIELDS}
    if train.get("global_batch_size") is None and isinstance(train.get("micro_batch_size"), int) and r.dp:
        train["global_batch_size"] = train["micro_batch_size"] * r.dp  # arguments.py:684-686
    r.final = {"model": model, "ddp": ddp, "optimizer": optimizer, "train": train}

    from overlap_cli.frameworks.megatron_lm.args import option

    eff = {}
    for key in effective_keys:
        section, name = key.split(".", 1)
        dest = lm.DEST_OF.get(key, name)
        value = r.final[section].get(name)
        v = overrides.get(key) or prov.get(dest)
        if v is None:
            v = Value(value, DEFAULT, _default_reason(dest, lambda d: option(d, r.launch.core_version)))
        else:
            v = Value(value if v.source != UNKNOWN_SOURCE else None, v.source, v.reason)
        eff[key] = v
    for name in SHOWN_ENV:
        env = r.launch.env.get(name)
        if env is not None and env.how == "assignment":  # not exported: torchrun sees the caller's value
            value = None if r.max_connections is unknown or name != MAX_CONNECTIONS else r.max_connections
            eff[f"env.{name}"] = Value(value, "shell" if value is not None else UNKNOWN_SOURCE,
                                       f"assigned on line {env.line} but not exported: torchrun's processes see "
                                       "the calling shell's value")
        elif env is not None:
            value = None if env.value is unknown else env.value
            source = USER if value is not None else UNKNOWN_SOURCE
            eff[f"env.{name}"] = Value(value, source, f"{how_set(env)} on line {env.line}" + (
                "" if value is not None else ": its value is not known statically"))
        elif name == MAX_CONNECTIONS:
            if r.max_connections_from:
                eff[f"env.{name}"] = Value(r.max_connections, "shell", r.max_connections_from)
            else:
                eff[f"env.{name}"] = Value(None, DEFAULT, "not set by the launch (CUDA's default: 8 queues)")
    r.effective = eff
    from overlap_cli.frameworks.megatron_lm.view import EnvSetting

    r.launch_env_plan = [EnvSetting(k[len("env."):], v) for k, v in eff.items() if k.startswith("env.")]


def _default_reason(dest: str, option) -> str:
    try:
        row = option(dest)
    except Exception:  # a dest the table does not hold (a Megatron-Core field Megatron-LM never sets)
        row = None
    flags = (row.get("flags") if isinstance(row, dict) else getattr(row, "flags", None)) if row is not None else None
    flag = flags[0] if flags else None
    return f"not given: Megatron-LM's default{f' (no {flag} on the launch)' if flag else ''}"


def _bucket_size(r, a, known) -> tuple:
    """(value, Value) of ddp.bucket_size as resolve_ddp_bucket_size (training.py:1552-1567) computes it."""
    at = lm.BUCKET_AT
    if a.get("use_torch_fsdp2") is True:
        return None, Value(None, DERIVED, "Torch-FSDP2 has its own config: no DDP buckets (training.py:1848)")
    ogr, given, num = a.get("overlap_grad_reduce"), a.get("ddp_bucket_size"), a.get("ddp_num_buckets")
    if not known(ogr):
        return None, Value(None, UNKNOWN_SOURCE, "depends on --overlap-grad-reduce, whose value is not known statically")
    if ogr is False:
        return None, Value(None, DERIVED, f"no --overlap-grad-reduce: resolve_ddp_bucket_size gives None ({at})")
    if num is not None:
        return None, Value(None, UNKNOWN_SOURCE, f"--ddp-num-buckets: the parameter count // num_buckets ({at})")
    if given is not None:
        arg = r.launch.args.get("ddp_bucket_size")
        if not known(given):
            return None, Value(None, UNKNOWN_SOURCE, f"{arg.flag} on line {arg.line}: its value is not known statically")
        return given, Value(given, USER, f"{arg.flag} on line {arg.line}")
    if r.dp is not None and r.cp is not None:
        size = max(lm.BUCKET_FLOOR, lm.BUCKET_PER_DP_CP_RANK * r.dp * r.cp)
        return size, Value(size, DERIVED, f"max(40,000,000, 1,000,000 · DP {r.dp} · CP {r.cp}) parameters ({at})")
    # DP · CP is the world over TP · PP · GTP whatever CP is (arguments.py:446), when CP divides it at all
    model = None if None in (r.tp, r.pp, r.gtp) else r.tp * r.pp * r.gtp
    if r.cp is None and r.world_size is not None and model and r.world_size % model == 0:
        dp_cp = r.world_size // model
        size = max(lm.BUCKET_FLOOR, lm.BUCKET_PER_DP_CP_RANK * dp_cp)
        return size, Value(size, DERIVED, f"max(40,000,000, 1,000,000 · DP·CP {dp_cp}) parameters ({at}); DP·CP is the "
                           f"world size {r.world_size} over TP·PP {model}, whatever CP is")
    return None, Value(None, UNKNOWN_SOURCE, f"max(40,000,000, 1,000,000 · DP · CP) parameters ({at}); DP is not known "
                       f"({r.dp_unknown_why})")
