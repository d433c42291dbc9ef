"""How Megatron-Bridge moves values between its config's sections, and the look-ups over a release's data.

The defaults, CommOverlapConfig's fields and the mixed-precision recipes are the release's
(``frameworks/bridge/releases/v0_6_2.py``, read through ``releases.of(target)``); what is here is the
shape of the code that reads them (where ``_apply_cfgs`` and ``MixedPrecisionConfig.setup`` land a
field), read from megatron-bridge 0.6.2 / megatron-core 0.19.2, checked against the source of
NVIDIA-NeMo/Megatron-Bridge@067f987. Nothing here imports them.
"""

from __future__ import annotations


# ``gradient_accumulation_fusion`` is machine-dependent where the model class declares it as
# ``field(default_factory=fusions.can_enable_gradient_accumulation_fusion)`` (true when Transformer Engine or
# apex's fused kernel imports, megatron/bridge/utils/fusions.py:34-63): GPTModelProvider
# (models/gpt_provider.py:205), HybridModelProvider (models/hybrid/hybrid_provider.py:148) and the subclasses
# that do not redeclare it. The classes below declare a plain ``False`` instead (or inherit
# ModelParallelConfig's, mpc.py:250, ahead of the provider's in their MRO): for them the machine never decides.
GAF_PLAIN_FALSE_MODELS = frozenset(
    {
        "megatron.training.models.gpt.GPTModelConfig",  # a TransformerConfig under model.transformer
        "megatron.training.models.hybrid.HybridModelConfig",
        "megatron.bridge.models.mla_provider.MLAModelProvider",  # MLATransformerConfig first in the MRO
        "megatron.bridge.diffusion.models.wan.wan_provider.WanModelProvider",  # a TransformerConfig
        "megatron.bridge.models.qwen_audio.qwen2_audio_provider.Qwen2AudioModelProvider",  # :86
        "megatron.bridge.models.exaone.exaone45.exaone45_provider.Exaone45ModelProvider",  # :105
        "megatron.bridge.models.exaone.exaone_moe.exaone_moe_provider.ExaoneMoeModelProvider",  # :133
    }
)


def gaf_default_is_machine_dependent(model_target) -> bool:
    """Whether the model class named by ``model._target_`` computes gradient_accumulation_fusion's default
    on the machine that builds it. A section without ``_target_`` is read as Bridge's GPTModelProvider."""
    return model_target not in GAF_PLAIN_FALSE_MODELS


# _CommOverlapConfig fields (everything above except tp_comm_overlap's required-ness and
# data_parallel_size) and where ``_apply_cfgs`` lands them: it sets every field the destination has.
# Verified against the sections of the configs Bridge itself writes (``ConfigContainer.to_yaml()``).
LANDS_ON_MODEL = (
    "tp_comm_overlap",
    "tp_comm_overlap_cfg",
    "tp_comm_bootstrap_backend",
    "overlap_p2p_comm",
    "batch_p2p_comm",
    "defer_embedding_wgrad_compute",
    "wgrad_deferral_limit",
    "overlap_moe_expert_parallel_comm",
    "delay_wgrad_compute",
)
LANDS_ON_DDP = ("overlap_grad_reduce", "overlap_param_gather", "align_param_gather", "bucket_size", "delay_wgrad_compute")
LANDS_ON_OPTIMIZER = ("overlap_param_gather", "overlap_param_gather_with_optimizer_step")
DP_FIELDS = ("bucket_size", "overlap_grad_reduce", "overlap_param_gather", "overlap_param_gather_with_optimizer_step", "align_param_gather")

# Bridge's DP defaults (the bucket size, what DP > 1 turns on): release data, frameworks/bridge/releases/.


# Where MixedPrecisionConfig.setup lands each field: every field the destination dataclass has
# (update_config_with_precision_overrides). Read off the sections of Bridge's own dumps.
MP_LANDS_ON = {
    "model": (
        "fp16", "bf16", "params_dtype", "pipeline_dtype", "autocast_dtype", "fp8", "fp8_recipe",
        "first_last_layers_bf16", "fp8_margin", "fp8_amax_history_len", "fp8_amax_compute_algo", "fp8_wgrad",
        "fp8_dot_product_attention", "fp8_multi_head_attention", "fp8_param", "fp4", "fp4_recipe", "fp4_param",
        "num_layers_at_start_in_bf16", "num_layers_at_end_in_bf16",
    ),
    "optimizer": (
        "fp16", "bf16", "params_dtype", "fp8_recipe", "loss_scale", "initial_loss_scale", "min_loss_scale",
        "loss_scale_window", "hysteresis", "reuse_grad_buf_for_mxfp8_param_ag",
    ),
    "ddp": ("grad_reduce_in_fp32", "fp8_param_gather", "fp4_param_gather", "reuse_grad_buf_for_mxfp8_param_ag"),
}


def mp_recipe_names(release) -> list[str]:
    """All names ``release`` accepts: Bridge registers every recipe with underscores and with hyphens."""
    names = set(release.MP_RECIPES)
    names |= {n.replace("_", "-") for n in release.MP_RECIPES}
    return sorted(names)


def lookup_mp_recipe(name: str, release) -> dict | None:
    """The fields of the mixed-precision recipe ``name`` of ``release`` (a releases.of(target) module)."""
    return release.MP_RECIPES.get(name.replace("-", "_"))


def finalize_mp(cfg: dict) -> dict:
    """MixedPrecisionConfig.finalize: fp8_param / fp4_param follow their *_param_gather when unset."""
    out = dict(cfg)
    if out.get("fp8_param") is None:
        out["fp8_param"] = out.get("fp8_param_gather")
    if out.get("fp4_param") is None:
        out["fp4_param"] = out.get("fp4_param_gather")
    return out
