"""Refusals of the model's own construction and of Bridge's ``validate()`` that follow from settings the tool
reads: precision written onto the model (MP408, MP409), a model template whose shape was never filled in
(CFG007), the evaluation batch against the data-parallel size (DP313).

Each mirrors one check of megatron-core 0.19.2's ``TransformerConfig.__post_init__`` (run when Bridge
finalizes the model, megatron/bridge/training/config.py:1262) or of ``ConfigContainer.validate``
(config.py:1136-1340), quoting its message."""

from __future__ import annotations

from overlap_cli.rules.common import finding, model_value
from overlap_cli.rules.registry import rule

# TransformerConfig's defaults for the fields below (megatron/core/transformer/transformer_config.py)
_FP8_RECIPE_DEFAULT = "delayed"  # tc:573
_HIDDEN_DEFAULT = 0  # tc:138


def _model(view, key, default=None):
    return view.get_final("model", key, model_value(view, key) if default is None else default)


def _key(view, section_key: str, fallback: str) -> str:
    section, key = section_key.split(".", 1)
    return section_key if view.cfg.has((section, key)) else fallback


@rule("MP408", "fp8-delayed-recompute-moe-act-layernorm", "error", "FP8 delayed scaling with moe_act / layernorm recompute", fix="none")
def delayed_scaling_recompute(view):
    """
    ## What it does
    Flags selective recompute of `moe_act` or `layernorm` (`model.recompute_modules` with
    `recompute_granularity: selective`) while the model runs FP8 with the `delayed` recipe — the model's
    `fp8` / `fp8_recipe` after mixed precision wrote them (a recipe name such as `bf16_with_fp8_delayed_scaling_mixed`
    sets both).

    ## Why it matters
    Megatron-Core's `TransformerConfig.__post_init__` raises when Bridge finalizes the model
    (megatron-core 0.19.2, `megatron/core/transformer/transformer_config.py:1821-1827`):
    `ValueError: Delayed scaling does not support moe_act and layernorm recompute for fp8.`
    `fp8_recipe` defaults to `delayed` on the model (`transformer_config.py:573`), so a model given `fp8`
    without a recipe meets it too.

    ## Example
    ```yaml
    model: {num_moe_experts: 8, moe_grouped_gemm: true, recompute_granularity: selective, recompute_modules: [moe_act]}
    mixed_precision: bf16_with_fp8_delayed_scaling_mixed
    ```

    ## Fix
    None: choose another FP8 recipe (tensorwise, blockwise, mxfp8) or another recompute module; either
    changes the numerics or the memory, which is the user's call.
    """
    if not _model(view, "fp8") or _model(view, "fp8_recipe", _FP8_RECIPE_DEFAULT) != "delayed":
        return
    if _model(view, "recompute_granularity") != "selective":
        return
    modules = _model(view, "recompute_modules")
    modules = ["core_attn"] if modules is None else modules  # tc:1763
    if not isinstance(modules, list):
        return
    hit = [m for m in ("moe_act", "layernorm") if m in modules]
    if not hit:
        return
    yield finding(
        view, "MP408", "error",
        f"recompute_modules holds {' and '.join(hit)} while the model runs FP8 with the delayed recipe "
        f"(fp8={_model(view, 'fp8')}): Megatron-Core raises \"Delayed scaling does not support moe_act and "
        "layernorm recompute for fp8.\" when Bridge finalizes the model",
        _key(view, "model.recompute_modules", "model"),
    )


@rule("MP409", "moe-router-padding-without-fp8", "error", "moe_router_padding_for_quantization without FP8 or FP4", fix="none")
def router_padding_without_quantization(view):
    """
    ## What it does
    Flags `model.moe_router_padding_for_quantization: true` (or the deprecated `moe_router_padding_for_fp8`,
    which turns it on) when the model has neither `fp8` nor `fp4` after mixed precision wrote them.

    ## Why it matters
    Megatron-Core's `TransformerConfig.__post_init__` raises when Bridge finalizes the model
    (megatron-core 0.19.2, `megatron/core/transformer/transformer_config.py:2308-2320`):
    `ValueError: fp8/fp4 must be specified when moe_router_padding_for_quantization is True.` A recipe
    built for FP8 that is run with a BF16 mixed-precision override keeps the padding flag and meets it.

    ## Example
    ```yaml
    model: {num_moe_experts: 8, moe_router_padding_for_quantization: true}
    mixed_precision: bf16_mixed
    ```

    ## Fix
    None: set the flag false for a run without FP8/FP4, or keep the FP8 recipe; which one is the user's call.
    """
    padding = _model(view, "moe_router_padding_for_quantization", False) or _model(view, "moe_router_padding_for_fp8", False)
    if padding is not True or _model(view, "fp8") is not None or _model(view, "fp4") is not None:
        return
    name = "moe_router_padding_for_quantization" if _model(view, "moe_router_padding_for_quantization", False) else "moe_router_padding_for_fp8"
    yield finding(
        view, "MP409", "error",
        f"{name} is true but the model has neither fp8 nor fp4: Megatron-Core raises \"fp8/fp4 must be "
        "specified when moe_router_padding_for_quantization is True.\" when Bridge finalizes the model",
        _key(view, f"model.{name}", "model"),
    )


@rule("CFG007", "model-shape-not-set", "error", "A model without attention heads (an unfilled template)", fix="none")
def model_without_heads(view):
    """
    ## What it does
    Flags a model that writes `num_attention_heads: 0` (TransformerConfig's default) with `kv_channels`
    unset, or `num_layers: 0` with no `output_layer_init_method`: a template recipe (`vanilla_gpt_*`)
    whose shape is left to the user. A file that does not write the key is taken as a snippet and not
    flagged.

    ## Why it matters
    `TransformerConfig.__post_init__` computes `kv_channels = hidden_size // num_attention_heads`
    (megatron-core 0.19.2, `megatron/core/transformer/transformer_config.py:1332-1333`) when Bridge
    finalizes the model, so the launch dies with `ZeroDivisionError: integer division or modulo by zero`.
    Given heads but no layers, the default output-layer initializer `scaled_init_method_normal(init_method_std,
    num_layers)` divides by `sqrt(2 * num_layers)` (`transformer_config.py:2263-2277`, `megatron/core/utils.py:833-835`):
    `ZeroDivisionError: float division by zero`. Neither depends on the parallel sizes.

    ## Example
    ```yaml
    model: {num_layers: 0, hidden_size: 0, num_attention_heads: 0}
    ```

    ## Fix
    None: the model's shape (`num_layers`, `hidden_size`, `num_attention_heads`, ...) is the user's.
    """
    # Only a written 0: a file that leaves the shape out is a snippet checked for its overlap settings.
    cfg = view.cfg
    if cfg.get(("model", "num_attention_heads")) == 0 and _model(view, "kv_channels") is None:
        yield finding(
            view, "CFG007", "error",
            f"model.num_attention_heads is 0 (hidden_size {_model(view, 'hidden_size', _HIDDEN_DEFAULT)}): Megatron-Core's "
            "kv_channels = hidden_size // num_attention_heads raises \"ZeroDivisionError: integer division or modulo "
            "by zero\" when Bridge finalizes the model",
            "model.num_attention_heads",
        )
    elif cfg.get(("model", "num_layers")) == 0 and _model(view, "output_layer_init_method") is None and not _model(view, "use_mup"):
        yield finding(
            view, "CFG007", "error",
            "model.num_layers is 0 and output_layer_init_method is unset: Megatron-Core's "
            "scaled_init_method_normal(init_method_std, num_layers) divides by sqrt(2 * num_layers) and raises "
            "\"ZeroDivisionError: float division by zero\" when Bridge finalizes the model",
            "model.num_layers",
        )


@rule("DP313", "eval-batch-not-divisible", "error", "Evaluation batch not divisible by eval micro-batch x DP", fix="none")
def eval_batch(view):
    """
    ## What it does
    Checks `validation.eval_global_batch_size` (default: `train.global_batch_size`) against
    `validation.eval_micro_batch_size` (default: `train.micro_batch_size`) times the evaluation's
    data-parallel size: the training DP, or `world / (TP * PP * dist.eval_context_parallel_size)` when that
    is set.

    ## Why it matters
    Bridge's `ConfigContainer.validate` asserts (megatron-bridge 0.6.2,
    `megatron/bridge/training/config.py:1293-1339`): `eval_global_batch_size (G) must be divisible by
    eval_micro_batch_size * eval_data_parallel_size (M * D = P)`. A recipe written for one world size and
    launched on a larger one meets it even though training's own batch arithmetic is left to the
    micro-batch calculator.

    ## Example
    Checked with `--world-size 256`:
    ```yaml
    model: {tensor_model_parallel_size: 2}
    train: {global_batch_size: 192, micro_batch_size: 1}
    ```

    ## Fix
    None: the batch size or the world size is the user's.
    """
    if view.dp is None or view.target.world_size is None:
        return
    cfg = view.cfg
    gbs = cfg.get(("validation", "eval_global_batch_size"))
    gbs_key = "validation.eval_global_batch_size"
    if gbs is None:
        gbs, gbs_key = cfg.get(("train", "global_batch_size")), "train.global_batch_size"
    mbs = cfg.get(("validation", "eval_micro_batch_size"))
    if mbs is None:
        mbs = cfg.get(("train", "micro_batch_size"))
    if not all(isinstance(v, int) and not isinstance(v, bool) and v > 0 for v in (gbs, mbs)):
        return
    dp = view.dp
    ecp = cfg.get(("dist", "eval_context_parallel_size"))
    if ecp is not None:
        if not (isinstance(ecp, int) and ecp > 0) or view.target.world_size % (view.tp * view.pp * ecp):
            return  # Bridge's own assertion before this one (config.py:1327); not modelled here
        dp = view.target.world_size // (view.tp * view.pp * ecp)
    if gbs % (mbs * dp) == 0:
        return
    yield finding(
        view, "DP313", "error",
        f"Bridge asserts \"eval_global_batch_size ({gbs}) must be divisible by eval_micro_batch_size * "
        f"eval_data_parallel_size ({mbs} * {dp} = {mbs * dp})\" in validate()",
        gbs_key if cfg.has(tuple(gbs_key.split("."))) else "train",
    )
