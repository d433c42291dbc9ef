"""Types of the config keys this tool reads. A value of the wrong type is an input error (exit 2):
Bridge would fail on it too, in a less readable way, or silently misbehave."""

from __future__ import annotations

TYPE_CHECKING = False  # the typing module costs ~2.5 ms of start-up; annotations here are strings (PEP 563)
if TYPE_CHECKING:
    from typing import Any

from overlap_cli.config.document import Config
from overlap_cli.config.yamlnodes import dotted
from overlap_cli.frameworks.limits import MAX_PARALLEL_SIZE
from overlap_cli.problems import InputError, InputProblem

MAPPING_SECTIONS = ("model", "ddp", "optimizer", "comm_overlap", "env_vars", "dataset", "train", "dist", "checkpoint")

# Types of the keys this tool reads. A value of the wrong type is an input error (exit 2), as Bridge
# would fail on it in some less readable way. bucket_size is checked by a rule instead (DP304).
_POSITIVE_INT = "positive int"
_OPT_POSITIVE_INT = "positive int or null"
_BOOL = "bool"
_OPT_BOOL = "bool or null"
_INT = "int"
_OPT_INT = "int or null"
_OPT_STR = "string or null"

KEY_TYPES: dict = {
    ("model", "tensor_model_parallel_size"): _POSITIVE_INT,
    ("model", "pipeline_model_parallel_size"): _POSITIVE_INT,
    ("model", "virtual_pipeline_model_parallel_size"): _OPT_POSITIVE_INT,
    ("model", "context_parallel_size"): _POSITIVE_INT,
    ("model", "expert_model_parallel_size"): _POSITIVE_INT,
    # A template may leave num_layers 0 (Bridge's vanilla_gpt recipe does): Bridge loads and resolves it, and
    # nothing about communication overlap depends on it, so only its type is checked.
    ("model", "num_layers"): _OPT_INT,
    ("model", "sequence_parallel"): _BOOL,
    ("model", "tp_comm_overlap"): _BOOL,
    ("model", "overlap_p2p_comm"): _BOOL,
    ("model", "batch_p2p_comm"): _BOOL,
    ("model", "defer_embedding_wgrad_compute"): _BOOL,
    ("model", "wgrad_deferral_limit"): _INT,
    ("model", "overlap_moe_expert_parallel_comm"): _BOOL,
    ("model", "delay_wgrad_compute"): _BOOL,
    ("model", "gradient_accumulation_fusion"): _BOOL,
    ("model", "tp_comm_bootstrap_backend"): _OPT_STR,
    ("ddp", "use_distributed_optimizer"): _BOOL,
    ("ddp", "overlap_grad_reduce"): _BOOL,
    ("ddp", "overlap_param_gather"): _BOOL,
    ("ddp", "align_param_gather"): _BOOL,
    ("ddp", "grad_reduce_in_fp32"): _BOOL,
    ("ddp", "fp8_param_gather"): _BOOL,
    ("ddp", "num_buckets"): _OPT_INT,
    ("optimizer", "use_distributed_optimizer"): _BOOL,
    ("optimizer", "overlap_param_gather"): _BOOL,
    ("optimizer", "overlap_param_gather_with_optimizer_step"): _BOOL,
    ("comm_overlap", "tp_comm_overlap"): _BOOL,
    ("comm_overlap", "overlap_p2p_comm"): _OPT_BOOL,
    ("comm_overlap", "batch_p2p_comm"): _OPT_BOOL,
    ("comm_overlap", "overlap_grad_reduce"): _OPT_BOOL,
    ("comm_overlap", "overlap_param_gather"): _OPT_BOOL,
    ("comm_overlap", "overlap_param_gather_with_optimizer_step"): _OPT_BOOL,
    ("comm_overlap", "align_param_gather"): _OPT_BOOL,
    ("comm_overlap", "defer_embedding_wgrad_compute"): _OPT_BOOL,
    ("comm_overlap", "wgrad_deferral_limit"): _OPT_INT,
    ("comm_overlap", "overlap_moe_expert_parallel_comm"): _OPT_BOOL,
    ("comm_overlap", "delay_wgrad_compute"): _OPT_BOOL,
    ("comm_overlap", "data_parallel_size"): _OPT_POSITIVE_INT,
    ("comm_overlap", "tp_comm_bootstrap_backend"): _OPT_STR,
    # Read by the launch-time rules (EP / CP / layout / FSDP families).
    ("model", "bf16"): _BOOL,
    ("model", "fp16"): _BOOL,
    ("model", "num_moe_experts"): _OPT_INT,
    ("model", "mtp_num_layers"): _OPT_INT,
    ("model", "moe_token_dispatcher_type"): _OPT_STR,
    ("model", "moe_flex_dispatcher_backend"): _OPT_STR,
    ("model", "moe_ncclep_static_shape"): _BOOL,
    ("model", "moe_flex_dispatcher_num_sms"): _OPT_INT,
    ("model", "moe_deepep_num_sms"): _OPT_INT,
    ("model", "moe_hybridep_num_sms"): _OPT_INT,
    ("model", "moe_shared_expert_overlap"): _BOOL,
    ("model", "recompute_granularity"): _OPT_STR,
    ("model", "recompute_method"): _OPT_STR,
    ("model", "recompute_num_layers"): _OPT_INT,
    ("model", "overlap_dispatch_backward_with_experts_wgrad"): _BOOL,
    ("model", "ep_overlap_early_attn_memory_release"): _BOOL,
    ("model", "overlap_p2p_comm_warmup_flush"): _BOOL,
    ("model", "fine_grained_activation_offloading"): _BOOL,
    ("model", "multi_latent_attention"): _BOOL,
    ("model", "add_bias_linear"): _BOOL,
    ("model", "add_qkv_bias"): _BOOL,
    ("model", "cuda_graph_impl"): _OPT_STR,
    ("model", "seq_length"): _POSITIVE_INT,
    ("ddp", "use_megatron_fsdp"): _BOOL,
    ("ddp", "delay_wgrad_compute"): _OPT_BOOL,
    ("ddp", "reuse_grad_buf_for_mxfp8_param_ag"): _BOOL,
    ("optimizer", "optimizer"): _OPT_STR,
    ("optimizer", "use_layer_wise_distributed_optimizer"): _BOOL,
    ("optimizer", "use_precision_aware_optimizer"): _BOOL,
    ("optimizer", "reuse_grad_buf_for_mxfp8_param_ag"): _BOOL,
    ("dist", "use_megatron_fsdp"): _BOOL,
    ("dist", "use_torch_fsdp2"): _BOOL,
}
assert all(len(p) == 2 for p in KEY_TYPES)  # validate_types reads each as (section, key)


# The sizes of the parallel groups: only these are "parallel sizes" in an input error.
PARALLEL_SIZES = frozenset(
    (
        ("model", "tensor_model_parallel_size"),
        ("model", "pipeline_model_parallel_size"),
        ("model", "virtual_pipeline_model_parallel_size"),
        ("model", "context_parallel_size"),
        ("model", "expert_model_parallel_size"),
        ("comm_overlap", "data_parallel_size"),
    )
)


# Sections of Bridge's ConfigContainer that always exist (dataclass fields with a default instance), and
# those that may be null (Optional, None unless a recipe sets them). Bridge's scripts merge the file onto
# the full container before applying Hydra overrides (megatron/bridge/training/utils/omegaconf_utils.py
# parse_hydra_overrides, in struct mode), so ``key=value`` reaches any field of such a section.
ALWAYS_PRESENT_SECTIONS = ("model", "ddp", "optimizer")
OPTIONAL_SECTIONS = ("comm_overlap", "mixed_precision")


def known_field(release, section: str, key: str) -> bool:
    """Whether ``section.key`` is a field this tool knows of Bridge's config class for that section in
    ``release`` (a frameworks.bridge.releases module). A field of another release that this one lacks
    (release.ABSENT_FIELDS) is none."""
    if (section, key) in release.ABSENT_FIELDS:
        return False
    if section in ALWAYS_PRESENT_SECTIONS:
        return key in release.SECTION_DEFAULTS.get(section, {}) or (section, key) in KEY_TYPES
    if section == "comm_overlap":
        return key in release.COMM_OVERLAP_FIELDS
    if section == "mixed_precision":
        return key in release.MP_DEFAULTS
    return False


def _type_ok(kind: str, value: Any) -> bool:
    if value is None:
        return kind.endswith("or null")
    is_int = isinstance(value, int) and not isinstance(value, bool)
    if kind in (_POSITIVE_INT, _OPT_POSITIVE_INT):
        return is_int and value > 0
    if kind in (_INT, _OPT_INT):
        return is_int
    if kind in (_BOOL, _OPT_BOOL):
        return isinstance(value, bool)
    if kind == _OPT_STR:
        return isinstance(value, str)
    return True


def validate_types(cfg: Config) -> None:
    """Exit-2 problems: a section that is not a mapping, a read key of the wrong type."""
    for name in MAPPING_SECTIONS:
        if name in cfg.data and cfg.data[name] is not None and not isinstance(cfg.data[name], dict):
            file, line, col = cfg.locate((name,))
            raise InputError(
                InputProblem(file, f"section must be a mapping, got {_describe(cfg.data[name])}", name, line, col)
            )
    mp = cfg.data.get("mixed_precision")
    if mp is not None and not isinstance(mp, (str, dict)):
        file, line, col = cfg.locate(("mixed_precision",))
        raise InputError(
            InputProblem(
                file, f"must be a recipe name or a mapping, got {_describe(mp)}", "mixed_precision", line, col
            )
        )
    for path, kind in KEY_TYPES.items():  # (section, key) pairs
        sec = cfg.data.get(path[0])
        if not isinstance(sec, dict) or path[1] not in sec:
            continue
        value = sec[path[1]]
        if not _type_ok(kind, value):
            file, line, col = cfg.locate(path)
            what = "a positive integer" if "positive" in kind else f"a {kind}"
            if kind.endswith("or null") and "positive" in kind:
                what = "a positive integer or null"
            problem = "wrong type"
            if "positive" in kind and isinstance(value, int) and not isinstance(value, bool):
                problem = "non-positive parallel size" if path in PARALLEL_SIZES else "non-positive value"
            raise InputError(
                InputProblem(file, f"{problem}: expected {what}, got {_describe(value)}", dotted(path), line, col)
            )
        if path in PARALLEL_SIZES and isinstance(value, int) and not isinstance(value, bool) and value > MAX_PARALLEL_SIZE:
            file, line, col = cfg.locate(path)
            raise InputError(InputProblem(file, f"parallel size too large: expected at most 2**31, got int {value}",
                                          dotted(path), line, col))


def _describe(value: Any) -> str:
    if isinstance(value, bool):
        return f"boolean {str(value).lower()}"
    if isinstance(value, (int, float)):
        return f"{type(value).__name__} {value!r}"
    if isinstance(value, str):
        return f"string {value!r}"
    if value is None:
        return "null"
    return type(value).__name__
