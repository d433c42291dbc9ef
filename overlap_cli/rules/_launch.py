"""Shared readers for the launch-time rules (EP7xx, CP8xx and the newer PP/DP/MP/TP checks).

These rules predict assertions that Megatron-Bridge 0.6.2 and Megatron-Core 0.19.2 raise after the
config is built. They need model fields the core resolver does not carry, Megatron-Core's defaults for
those fields, and the target's Transformer Engine / PyTorch versions.
"""

from __future__ import annotations

TYPE_CHECKING = False  # the typing module costs ~2.5 ms of start-up; annotations here are strings (PEP 563)
if TYPE_CHECKING:
    from typing import Any, Optional

from overlap_cli.target import versions

# Megatron-Core 0.19.2 defaults of model fields read here and absent from bridge.MODEL_DEFAULTS
# (tc = megatron/core/transformer/transformer_config.py, mpc = megatron/core/model_parallel_config.py).
MCORE_MODEL_DEFAULTS: dict = {
    "num_moe_experts": None,  # tc:232 (also GPTModelProvider, gpt_provider.py:186)
    "mtp_num_layers": None,  # tc:68
    "moe_token_dispatcher_type": "allgather",  # tc:862
    "moe_flex_dispatcher_backend": "deepep",  # tc:869
    "moe_ncclep_static_shape": False,  # tc:952
    "moe_flex_dispatcher_num_sms": None,  # tc:926
    "moe_deepep_num_sms": None,  # tc:931 (deprecated)
    "moe_hybridep_num_sms": None,  # tc:935 (deprecated)
    "moe_shared_expert_intermediate_size": None,  # tc:680
    "moe_shared_expert_overlap": False,  # tc:696
    "recompute_granularity": None,  # tc:518
    "recompute_method": None,  # tc:529
    "recompute_num_layers": None,  # tc:537
    "recompute_modules": None,  # tc:546; becomes ["core_attn"] in __post_init__ (tc:1763)
    "multi_latent_attention": False,  # tc:281
    "add_bias_linear": True,  # tc:205
    "add_qkv_bias": False,  # tc:211
    "cuda_graph_impl": "none",  # tc:1032
    "cuda_graph_modules": "full",  # tc:1047 ("full" = whole layer = no named module)
    "cuda_graph_scope": None,  # tc:1086 (deprecated)
    "fine_grained_activation_offloading": False,  # tc:1229
    "offload_modules": [],  # tc:1234
    "cp_comm_type": None,  # tc:987 (Bridge reads None as "p2p")
    "hierarchical_context_parallel_sizes": None,  # mpc:103
    "overlap_dispatch_backward_with_experts_wgrad": False,  # mpc:351
    "ep_overlap_early_attn_memory_release": False,  # mpc:360
    "overlap_p2p_comm_warmup_flush": False,  # mpc:422
    "pipeline_model_parallel_layout": None,  # tc:104
    "num_layers_in_first_pipeline_stage": None,  # tc:96
    "num_layers_in_last_pipeline_stage": None,  # tc:100
    "account_for_embedding_in_pipeline_split": False,  # tc:130
    "account_for_loss_in_pipeline_split": False,  # tc:134
}


def model_value(view, key: str, at_setup: bool = False) -> Any:
    """A model field after every launch step (or as comm_overlap.setup reads it, with ``at_setup``)."""
    source = view.model_at_setup if at_setup and view.model_at_setup else view.final.get("model", {})
    if key in source:
        return source[key]
    return MCORE_MODEL_DEFAULTS.get(key)


def model_key(view, key: str, fallback: str) -> str:
    """``model.<key>`` when the file writes it, else ``fallback`` (where the finding is located)."""
    return f"model.{key}" if view.cfg.has(("model", key)) else fallback


def as_int(value: Any) -> Optional[int]:
    return value if isinstance(value, int) and not isinstance(value, bool) else None


# ----------------------------------------------------------------------------------------------
# CUDA-graph module names
# ----------------------------------------------------------------------------------------------


def graph_module_names(value: Any) -> set[str]:
    """Module names in a cuda_graph_modules / cuda_graph_scope value, as Bridge's ``has_cuda_graph_module``
    reads them (megatron/bridge/utils/cuda_graph.py:108-118): a string is split on ","; "full" and "" mean the
    whole layer (no named module); "CudaGraphModule.attn" counts as "attn"."""
    if value is None:
        return set()
    items = value if isinstance(value, (list, tuple, set)) else str(value).split(",")  # no strip(), like Bridge
    out = set()
    for item in items:
        name = str(item).rsplit(".", 1)[-1]
        if name and name != "full":
            out.add(name)
    return out


def has_graph_module(view, name: str, at_setup: bool = False) -> bool:
    return name in graph_module_names(model_value(view, "cuda_graph_modules", at_setup)) or name in graph_module_names(
        model_value(view, "cuda_graph_scope", at_setup)
    )


# ----------------------------------------------------------------------------------------------
# Target versions
# ----------------------------------------------------------------------------------------------


def te_version(view) -> Optional[str]:
    """The target's Transformer Engine version. Without Transformer Engine, Megatron-Core's
    ``get_te_version`` reports 0.0.0 (megatron/core/utils.py:322), so every minimum fails."""
    if not view.target.transformer_engine:
        return "0.0.0"
    return view.target.get("te_version")


def torch_version(view) -> Optional[str]:
    return view.target.get("torch_version")


def version_status(have: Optional[str], need: str) -> str:
    """"ok" | "too-old" | "unknown" (not given, or not a version this tool can read)."""
    ok = versions.at_least(have, need)
    if ok is None:
        return "unknown"
    return "ok" if ok else "too-old"


def unknown_version_text(have: Optional[str], what: str, flag: str) -> str:
    if have is None:
        return f"{what} version not given: pass {flag}"
    return f"cannot read the {what} version {have!r} given with {flag}"
