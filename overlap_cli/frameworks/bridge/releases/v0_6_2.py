"""Megatron-Bridge 0.6.2 (with megatron-core 0.19.2, the release it pins): the facts of this release the
code reads through ``frameworks.bridge.releases.of(target)``. Lines are those of NVIDIA-NeMo/Megatron-Bridge@067f987
(the source facts.py is checked against) where that file is the same in 0.6.2; the behaviour tables at the end
cite the 0.6.2 wheel; co.py = src/megatron/bridge/training/comm_overlap.py. The other release modules import
from here what their own source holds unchanged (tests/frameworks/bridge/test_release_sources.py proves each
table against each release's source)."""

BRIDGE_VERSION = "0.6.2"
CORE_VERSION = "0.19.2"

# The release the recipe catalog (frameworks/bridge/recipe_catalog/index.json "versions") was built from.
CATALOG_VERSIONS = {"megatron-bridge": BRIDGE_VERSION, "megatron-core": CORE_VERSION}

# The default ``peft_scheme`` of every PEFT recipe of the release (each recipe's signature:
# ``peft_scheme: str | PEFT = "lora"``, 76 of them under src/megatron/bridge/recipes): the catalog's recipe is
# built with it.
RECIPE_PEFT_SCHEME = "lora"

# CommOverlapConfig.tp_comm_bootstrap_backend's dataclass default (co.py:386): the one field that is not None.
TP_COMM_BOOTSTRAP_BACKEND = "nccl"

# _get_model_comm_overlap_cfgs (co.py:433-438; tp_comm_bootstrap_backend is _CommOverlapConfig's None, :358): what comm_overlap writes onto the model before the TP gate,
# the PP p2p choice and the user's values.
MODEL_OVERLAP_DEFAULTS = {
    "tp_comm_overlap": False,
    "tp_comm_overlap_cfg": None,
    "defer_embedding_wgrad_compute": False,
    "wgrad_deferral_limit": -1,
    "overlap_moe_expert_parallel_comm": False,
    "delay_wgrad_compute": False,
    "tp_comm_bootstrap_backend": None,
}

# _get_optimizer_overlap_cfgs (co.py:569-583): the DP overlap defaults with the distributed optimizer, then
# what changes when DP > 1, and with an interleaved pipeline (PP > 1 and VPP > 1) on top.
DP_OVERLAP_DEFAULTS = {
    "bucket_size": None,
    "overlap_grad_reduce": False,
    "overlap_param_gather": False,
    "overlap_param_gather_with_optimizer_step": False,
    "align_param_gather": False,
}
BUCKET_SIZE = 128 * 1024 * 1024  # parameters (co.py:577)
DP_OVERLAP_WHEN_DP = {"bucket_size": BUCKET_SIZE, "overlap_grad_reduce": True, "overlap_param_gather": True}
DP_OVERLAP_WHEN_INTERLEAVED = {"align_param_gather": True}

# The keys every result's ``effective`` holds for a Bridge run, whatever the file sets (the JSON contract in
# README): the fields comm_overlap and mixed precision decide, with the parallel sizes they depend on.
EFFECTIVE_KEYS = (
    "model.tensor_model_parallel_size",
    "model.pipeline_model_parallel_size",
    "model.virtual_pipeline_model_parallel_size",
    "model.context_parallel_size",
    "model.sequence_parallel",
    "model.tp_comm_overlap",
    "model.tp_comm_overlap_cfg",
    "model.tp_comm_bootstrap_backend",
    "model.overlap_p2p_comm",
    "model.batch_p2p_comm",
    "model.defer_embedding_wgrad_compute",
    "model.wgrad_deferral_limit",
    "model.overlap_moe_expert_parallel_comm",
    "model.delay_wgrad_compute",
    "ddp.use_distributed_optimizer",
    "ddp.overlap_grad_reduce",
    "ddp.overlap_param_gather",
    "ddp.align_param_gather",
    "ddp.bucket_size",
    "ddp.grad_reduce_in_fp32",
    "ddp.fp8_param_gather",
    "optimizer.overlap_param_gather",
    "optimizer.overlap_param_gather_with_optimizer_step",
)

# ConfigContainer.validate() (rules/cfg_validate.py): the class defaults of the non-model fields its checks
# read (megatron-bridge 0.6.2 training/config.py:
# ValidationConfig.eval_global_batch_size / eval_micro_batch_size None, DistributedInitConfig.
# eval_context_parallel_size None; megatron-core 0.19.2 BlendedMegatronDatasetConfig.fast_cache_load False,
# path_to_cache None; TransformerConfig fp8_output_proj False, calculate_per_token_loss False, fp8 / fp4 /
# fp8_param / fp4_param None, expert_model_parallel_size 1 (model_parallel_config.py)).
VALIDATE_DEFAULTS = {
    ("validation", "eval_global_batch_size"): None,
    ("validation", "eval_micro_batch_size"): None,
    ("dist", "eval_context_parallel_size"): None,
    ("dataset", "fast_cache_load"): False,
    ("dataset", "path_to_cache"): None,
    ("model", "fp8_output_proj"): False,
    ("model", "calculate_per_token_loss"): False,
    ("model", "expert_model_parallel_size"): 1,
    ("ddp", "average_in_collective"): False,
}


# ----------------------------------------------------------------------------------------------
# Dataclass defaults used when a key is missing from the file
# ----------------------------------------------------------------------------------------------

# megatron/core/model_parallel_config.py (ModelParallelConfig), line numbers from megatron-core 0.19.2;
# Bridge's GPTModelProvider (megatron/bridge/models/gpt_provider.py) adds tp_comm_overlap_cfg and seq_length.
MODEL_DEFAULTS: dict = {
    "tensor_model_parallel_size": 1,  # mpc.py:55
    "pipeline_model_parallel_size": 1,  # mpc.py:83
    "virtual_pipeline_model_parallel_size": None,  # mpc.py:86
    "sequence_parallel": False,  # mpc.py:94
    "context_parallel_size": 1,  # mpc.py:100
    "expert_model_parallel_size": 1,  # mpc.py:127
    "gradient_accumulation_fusion": False,  # mpc.py:250 (Bridge providers turn it on when TE is present)
    "tp_comm_overlap": False,  # mpc.py:265
    "tp_comm_bootstrap_backend": "nccl",  # mpc.py:340
    "overlap_moe_expert_parallel_comm": False,  # mpc.py:343
    "delay_wgrad_compute": False,  # mpc.py:348
    "overlap_p2p_comm": False,  # mpc.py:385
    "batch_p2p_comm": True,  # mpc.py:390
    "defer_embedding_wgrad_compute": False,  # mpc.py:410
    "wgrad_deferral_limit": 0,  # mpc.py:415
    "tp_comm_overlap_cfg": None,  # bridge gpt_provider.py:164
    "seq_length": 1024,  # bridge gpt_provider.py:159
    "num_layers": None,  # TransformerConfig requires it; unknown when absent
    "bf16": False,
    "fp16": False,
    "fp8": None,
    "fp4": None,
    "transformer_impl": "transformer_engine",
}

# megatron/core/distributed/distributed_data_parallel_config.py (DistributedDataParallelConfig);
# Bridge's subclass (megatron/bridge/training/config.py:90) keeps these defaults.
DDP_DEFAULTS: dict = {
    "grad_reduce_in_fp32": False,  # ddpc.py:15
    "overlap_grad_reduce": False,  # ddpc.py:18
    "overlap_param_gather": False,  # ddpc.py:21
    "align_param_gather": False,  # ddpc.py:24
    "use_distributed_optimizer": False,  # ddpc.py:29
    "bucket_size": None,  # ddpc.py:48
    "num_buckets": None,  # ddpc.py:53
    "fp8_param_gather": False,  # ddpc.py:78
    "use_megatron_fsdp": False,  # ddpc.py:90
    "delay_wgrad_compute": False,  # ddpc.py:182
}

# megatron/core/optimizer/optimizer_config.py (OptimizerConfig); Bridge subclass at config.py:121.
OPTIMIZER_DEFAULTS: dict = {
    "fp16": False,  # optimizer_config.py:174
    "bf16": False,  # optimizer_config.py:177
    "use_distributed_optimizer": False,  # optimizer_config.py:321
    "overlap_param_gather": False,  # optimizer_config.py:330
    "overlap_param_gather_with_optimizer_step": False,  # optimizer_config.py:337
}

SECTION_DEFAULTS = {"model": MODEL_DEFAULTS, "ddp": DDP_DEFAULTS, "optimizer": OPTIMIZER_DEFAULTS}

# Defaults of the other fields schema.KEY_TYPES reads (megatron-core 0.19.2).
OTHER_FIELD_DEFAULTS: dict = {
    ("ddp", "reuse_grad_buf_for_mxfp8_param_ag"): False,  # distributed_data_parallel_config.py:86
    ("optimizer", "optimizer"): "adam",  # optimizer_config.py:209
    ("optimizer", "use_layer_wise_distributed_optimizer"): False,  # optimizer_config.py:324
    ("optimizer", "use_precision_aware_optimizer"): False,  # optimizer_config.py:187
    ("optimizer", "reuse_grad_buf_for_mxfp8_param_ag"): False,  # optimizer_config.py:180
}


# Megatron-Core 0.19.2 defaults of the model fields the launch-time rules read, beyond MODEL_DEFAULTS
# (the resolver does not carry them)
# (tc = megatron/core/transformer/transformer_config.py, mpc = megatron/core/model_parallel_config.py).
LAUNCH_MODEL_DEFAULTS: dict = {
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

# ----------------------------------------------------------------------------------------------
# CommOverlapConfig (megatron/bridge/training/comm_overlap.py:376)
# ----------------------------------------------------------------------------------------------

# Public fields and their defaults. ``tp_comm_overlap`` has no default: the dataclass is kw_only and
# construction fails without it. Every other field defaults to None, meaning "let Bridge decide".
COMM_OVERLAP_FIELDS: dict = {
    "tp_comm_overlap": "<required>",
    "tp_comm_overlap_cfg": None,
    "tp_comm_bootstrap_backend": "nccl",
    "overlap_p2p_comm": None,
    "batch_p2p_comm": None,
    "overlap_grad_reduce": None,
    "overlap_param_gather": None,
    "overlap_param_gather_with_optimizer_step": None,
    "align_param_gather": None,
    "bucket_size": None,
    "defer_embedding_wgrad_compute": None,
    "wgrad_deferral_limit": None,
    "data_parallel_size": None,  # written by Bridge itself (set_data_parallel_size)
    "overlap_moe_expert_parallel_comm": None,
    "delay_wgrad_compute": None,
}

# ----------------------------------------------------------------------------------------------
# Mixed precision (megatron/bridge/training/mixed_precision.py)
# ----------------------------------------------------------------------------------------------

# MixedPrecisionConfig field defaults (mixed_precision.py:33-76). dtypes are written as the strings
# Bridge's serializer uses for ``_target_``.
MP_DEFAULTS: dict = {
    "fp32": False,
    "fp16": False,
    "bf16": False,
    "params_dtype": None,
    "pipeline_dtype": None,
    "autocast_dtype": None,
    "autocast_enabled": False,
    "grad_reduce_in_fp32": True,
    "fp8": None,
    "fp8_recipe": "tensorwise",
    "first_last_layers_bf16": False,
    "fp8_margin": 0,
    "fp8_amax_history_len": 1,
    "fp8_amax_compute_algo": "most_recent",
    "fp8_wgrad": True,
    "fp8_dot_product_attention": False,
    "fp8_multi_head_attention": False,
    "fp8_param": None,
    "fp8_param_gather": False,
    "fp4": None,
    "fp4_recipe": "nvfp4",
    "fp4_param": None,
    "fp4_param_gather": False,
    "loss_scale": None,
    "initial_loss_scale": 4294967296,
    "min_loss_scale": 1.0,
    "loss_scale_window": 1000,
    "hysteresis": 2,
    "num_layers_at_start_in_bf16": 0,
    "num_layers_at_end_in_bf16": 0,
    "reuse_grad_buf_for_mxfp8_param_ag": False,
}

_BF16 = {"_call_": False, "_target_": "torch.bfloat16"}
_FP16 = {"_call_": False, "_target_": "torch.float16"}


def _recipe(base: str | None = None, **fields) -> dict:
    out = dict(MP_RECIPES[base]) if base else dict(MP_DEFAULTS)
    out.update(fields)
    return out


MP_RECIPES: dict = {}
# Registered recipe functions (mixed_precision.py:184-429), each spelled out.
MP_RECIPES["bf16_mixed"] = _recipe(bf16=True, params_dtype=_BF16, pipeline_dtype=_BF16, grad_reduce_in_fp32=True)
MP_RECIPES["fp16_mixed"] = _recipe(fp16=True, params_dtype=_FP16, pipeline_dtype=_FP16, grad_reduce_in_fp32=False)
for _p in ("bf16", "fp16"):
    MP_RECIPES[f"{_p}_with_fp8_delayed_scaling_mixed"] = _recipe(
        f"{_p}_mixed", fp8="hybrid", fp8_recipe="delayed", fp8_margin=0, fp8_amax_history_len=1024,
        fp8_amax_compute_algo="max", fp8_param_gather=True,
    )
    MP_RECIPES[f"{_p}_with_mxfp8_mixed"] = _recipe(
        f"{_p}_mixed", fp8="e4m3", fp8_recipe="mxfp8", fp8_param_gather=True, reuse_grad_buf_for_mxfp8_param_ag=True
    )
    MP_RECIPES[f"{_p}_with_fp8_current_scaling_mixed"] = _recipe(
        f"{_p}_mixed", fp8="hybrid", fp8_recipe="tensorwise", first_last_layers_bf16=True,
        num_layers_at_start_in_bf16=1, num_layers_at_end_in_bf16=1, fp8_param_gather=True,
    )
    MP_RECIPES[f"{_p}_with_fp8_subchannel_scaling_mixed"] = _recipe(
        f"{_p}_mixed", fp8="hybrid", fp8_recipe="blockwise", fp8_param_gather=False
    )
MP_RECIPES["nemotron_h_bf16_with_fp8_current_scaling_mixed"] = _recipe(
    "bf16_mixed", fp8="hybrid", fp8_recipe="tensorwise", first_last_layers_bf16=True,
    num_layers_at_start_in_bf16=2, num_layers_at_end_in_bf16=2, fp8_param_gather=True,
)
MP_RECIPES["nanov2_bf16_with_fp8_current_scaling_mixed"] = _recipe(
    "bf16_mixed", fp8="hybrid", fp8_recipe="blockwise", first_last_layers_bf16=True,
    num_layers_at_start_in_bf16=2, num_layers_at_end_in_bf16=2, fp8_param_gather=True,
)
MP_RECIPES["bf16_with_nvfp4_mixed"] = _recipe(
    "bf16_mixed", fp8=None, fp4="e2m1", fp4_recipe="nvfp4", fp8_param_gather=False, fp4_param_gather=True
)
MP_RECIPES["nemotron_3_super_bf16_with_nvfp4_mixed"] = _recipe(
    "bf16_with_nvfp4_mixed", first_last_layers_bf16=True, num_layers_at_end_in_bf16=14
)
MP_RECIPES["nemotron_3_ultra_bf16_with_nvfp4_mixed"] = _recipe(
    "bf16_with_nvfp4_mixed", first_last_layers_bf16=True, num_layers_at_start_in_bf16=0, num_layers_at_end_in_bf16=16
)


# ----------------------------------------------------------------------------------------------
# Behaviour that differs between releases: read by the resolver and the rules (never a version test)
# ----------------------------------------------------------------------------------------------

# ConfigContainer.env_vars (config.py:965) and apply_environment_variables (config.py:1832-1850), called
# first in runtime_config_update (config.py:1870).
HAS_ENV_VARS = True

# Where a YAML key the release's config class lacks is dropped: _apply_overrides logs "Key '...' in
# overrides not found in config object ...  Skipping." (utils/omegaconf_utils.py:470-474).
UNKNOWN_KEY_SKIPPED_AT = "megatron/bridge/training/utils/omegaconf_utils.py:470-474"

# (section, key) of fields the tool reads that this release's config classes do not have (a file's key is
# dropped as UNKNOWN_KEY_SKIPPED_AT says; a dotlist on it is refused by Hydra's struct mode).
ABSENT_FIELDS: frozenset = frozenset()

# Bridge's EP-overlap pre-check (co.py:478-518), each check's id and assert line; Megatron-Core's copy at
# model finalize (megatron-core 0.19.2 transformer_config.py:2669-2716; 1469: EP > 1 without experts).
EP_PRECHECK_LINES = {"ep": 479, "experts-null": 482, "experts": 482, "dispatcher": 486, "half": 490, "torch": 493,
                     "vpp": 495, "full": 499, "method": 502, "num-layers": 505, "moe-module": 510, "shared": 513,
                     "mtp": 516}
EP_CORE_LINES = {"experts-null": 1469, "torch": 2671, "vpp": 2675, "ep": 2680, "dispatcher": 2683, "full": 2688,
                 "method": 2691, "num-layers": 2694, "moe-module": 2697, "half": 2702, "shared": 2706, "mtp": 2709}
# The mtp_num_layers both copies accept with EP overlap, and their message (co.py:516, tc:2709).
EP_MTP_LAYERS = (None, 0, 1)
EP_MTP_MESSAGE = "MTP supports at most one layer when enabling overlap_moe_expert_parallel_comm."
# Megatron-Core 0.17's "MTP layer needs PP > 1" with EP overlap: not in this core.
EP_CORE_MTP_NEEDS_PP_LINE = None
# Megatron-Core's CUDA-graph check with EP overlap (tc:2737-2744): with cuda_graph_impl transformer_engine,
# neither moe nor mlp in the fields named (cuda_graph_scope: the deprecated spelling the tool also reads);
# other implementations pass.
EP_CORE_CUDA_GRAPH = {"line": 2740, "fields": ("cuda_graph_modules", "cuda_graph_scope"), "other_impls_refused": False}
# Megatron-Core's ncclep checks with EP overlap (tc:2719-2735): the flex dispatcher's ncclep backend exists.
EP_CORE_NCCLEP = True

# validate() -> _validate_and_sync_distributed_optimizer_settings turns overlap_param_gather on in both ddp and
# optimizer when either has it (config.py:1969-1981).
SYNCS_OVERLAP_PARAM_GATHER = True
# Megatron-FSDP in validate() (config.py:1346 -> 1065-1116): forces the distributed optimizer on in ddp and
# optimizer (1074-1077) and asserts CUDA_DEVICE_MAX_CONNECTIONS != "1" (config.py:1102).
FSDP_FORCES_DISTRIBUTED_OPTIMIZER = True
FSDP_MAX_CONNECTIONS_ASSERT_AT = "megatron/bridge/training/config.py:1102"
# The MXFP8 fp8_param_gather assert: in validate(), skipped under Megatron-FSDP (config.py:1349-1359).
MXFP8_REUSE_ASSERT = {"at": "megatron/bridge/training/config.py:1356", "under_fsdp": False}
# validate()'s evaluation batch check (config.py:1294-1339): its data-parallel size honours
# dist.eval_context_parallel_size.
EVAL_BATCH_CHECK = {"at": "megatron/bridge/training/config.py:1335", "eval_context_parallel": True,
                    "dp_name": "eval_data_parallel_size"}
# main's _disable_native_energon_packing_moe_overlap: not in this release.
ENERGON_PACKING_CLEARS_EP_OVERLAP = None
