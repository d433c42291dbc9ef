"""MP408-MP409: precision settings the model's own construction refuses (megatron-core 0.19.2's
``TransformerConfig.__post_init__``, run when Bridge finalizes the model, megatron/bridge/training/config.py:1262),
read after mixed precision wrote them onto the model."""

from __future__ import annotations

from overlap_cli.rules.common import finding, model_value
from overlap_cli.rules.registry import rule

# TransformerConfig's default (megatron/core/transformer/transformer_config.py:573)
_FP8_RECIPE_DEFAULT = "delayed"


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
    None offered: choose another FP8 recipe (tensorwise, blockwise, mxfp8) or another recompute module; either
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
    None offered: set the flag false for a run without FP8/FP4, or keep the FP8 recipe; which one is the user's call.
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
