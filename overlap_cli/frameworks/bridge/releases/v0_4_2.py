"""Megatron-Bridge 0.4.2 (with megatron-core 0.17.1, the release NeMo 26.04.01 pairs it with): the facts of
this release the code reads through ``frameworks.bridge.releases.of(target)``. Lines are those of the 0.4.2
wheel (bridge) and of megatron-core 0.17.1 (tc = megatron/core/transformer/transformer_config.py, mpc =
megatron/core/model_parallel_config.py, ddpc = megatron/core/distributed/distributed_data_parallel_config.py).

Shared with 0.6.2 by import, because 0.4.2's own source holds the same values (the lines cited there are
0.6.2's): CommOverlapConfig's fields and defaults and what its setup writes (comm_overlap.py:358-438 and the
DP path are the same code), the model / optimizer / mixed-precision class defaults the tool reads, the keys
``effective`` reports. Shared with 0.5.1 by import: no ``env_vars``, the EP-overlap pre-check of
comm_overlap.py (the same lines: 0.4.2's file differs only in the delayed-wgrad CUDA-graph check below
them). Shared with 0.6.0 by import: the mixed-precision recipes (the same bodies; 0.4.2 asserts the MXFP8
reuse in ``MixedPrecisionConfig.finalize`` instead, below).

Its own: megatron-core 0.17.1's fields (no ``ddp.num_buckets``, no ``fp8_output_proj``, no
``cuda_graph_modules``: ``cuda_graph_scope`` defaults to "full"), its EP-overlap copy (MTP = 1 needs PP > 1,
CUDA graphs other than Transformer Engine's refused), and validate() without the overlap_param_gather sync,
without Megatron-FSDP forcing the distributed optimizer, without the evaluation batch check.
"""

from overlap_cli.frameworks.bridge.releases.v0_5_1 import (  # noqa: F401 (re-exported release data)
    EP_MTP_LAYERS,
    EP_MTP_MESSAGE,
    EP_PRECHECK_LINES,
    HAS_ENV_VARS,
)
from overlap_cli.frameworks.bridge.releases.v0_6_0 import MP_RECIPES  # noqa: F401 (re-exported release data)
from overlap_cli.frameworks.bridge.releases.v0_6_2 import (  # noqa: F401 (re-exported release data)
    BUCKET_SIZE,
    COMM_OVERLAP_FIELDS,
    DP_OVERLAP_DEFAULTS,
    DP_OVERLAP_WHEN_DP,
    DP_OVERLAP_WHEN_INTERLEAVED,
    EFFECTIVE_KEYS,
    ENERGON_PACKING_CLEARS_EP_OVERLAP,
    MODEL_DEFAULTS,
    MODEL_OVERLAP_DEFAULTS,
    MP_DEFAULTS,
    OPTIMIZER_DEFAULTS,
    RECIPE_PEFT_SCHEME,
    TP_COMM_BOOTSTRAP_BACKEND,
    UNKNOWN_KEY_SKIPPED_AT,
)

BRIDGE_VERSION = "0.4.2"
CORE_VERSION = "0.17.1"

# The release the recipe catalog of this release is built from.
CATALOG_VERSIONS = {"megatron-bridge": BRIDGE_VERSION, "megatron-core": CORE_VERSION}

# Fields of newer releases the tool reads that 0.4.2 / megatron-core 0.17.1 do not have.
ABSENT_FIELDS: frozenset = frozenset({
    ("model", "moe_ncclep_static_shape"), ("model", "moe_flex_dispatcher_num_sms"),
    ("model", "fp8_output_proj"), ("model", "cuda_graph_modules"),
    ("model", "overlap_dispatch_backward_with_experts_wgrad"),
    ("ddp", "num_buckets"), ("optimizer", "use_layer_wise_distributed_optimizer"),
    ("dist", "eval_context_parallel_size"),  # DistributedInitConfig (config.py:105-160)
    ("validation", "eval_global_batch_size"), ("validation", "eval_micro_batch_size"),  # megatron/training/config/training_config.py:94
})

# DistributedDataParallelConfig (megatron-core 0.17.1); Bridge's subclass (config.py:90) keeps these defaults.
DDP_DEFAULTS: dict = {
    "grad_reduce_in_fp32": False,  # ddpc:13
    "overlap_grad_reduce": False,  # ddpc:16
    "overlap_param_gather": False,  # ddpc:19
    "align_param_gather": False,  # ddpc:22
    "use_distributed_optimizer": False,  # ddpc:27
    "bucket_size": None,  # ddpc:46 (no num_buckets in this core)
    "fp8_param_gather": False,  # ddpc:71
    "use_megatron_fsdp": False,  # ddpc:83
    "delay_wgrad_compute": False,  # ddpc:173
}

SECTION_DEFAULTS = {"model": MODEL_DEFAULTS, "ddp": DDP_DEFAULTS, "optimizer": OPTIMIZER_DEFAULTS}

# Defaults of the other fields schema.KEY_TYPES reads (megatron-core 0.17.1).
OTHER_FIELD_DEFAULTS: dict = {
    ("ddp", "reuse_grad_buf_for_mxfp8_param_ag"): False,  # ddpc:79
    ("optimizer", "optimizer"): "adam",  # optimizer_config.py:209
    ("optimizer", "use_precision_aware_optimizer"): False,  # optimizer_config.py:187
    ("optimizer", "reuse_grad_buf_for_mxfp8_param_ag"): False,  # optimizer_config.py:180
}

# ConfigContainer.validate() (rules/cfg_validate.py): the class defaults of the non-model fields its checks
# read (megatron-core 0.17.1 BlendedMegatronDatasetConfig.fast_cache_load False (blended_megatron_dataset_
# config.py:91), path_to_cache None (:57); TransformerConfig calculate_per_token_loss False (tc:248),
# expert_model_parallel_size 1 (mpc:72); DistributedDataParallelConfig average_in_collective False (ddpc:67)).
VALIDATE_DEFAULTS = {
    ("dataset", "fast_cache_load"): False,
    ("dataset", "path_to_cache"): None,
    ("model", "calculate_per_token_loss"): False,
    ("model", "expert_model_parallel_size"): 1,
    ("ddp", "average_in_collective"): False,
}

# Megatron-Core 0.17.1 defaults of the model fields the launch-time rules read, beyond MODEL_DEFAULTS.
LAUNCH_MODEL_DEFAULTS: dict = {
    "num_moe_experts": None,  # tc:203
    "mtp_num_layers": None,  # tc:54
    "moe_token_dispatcher_type": "allgather",  # tc:750
    "moe_flex_dispatcher_backend": "deepep",  # tc:757 (deepep or hybridep: no ncclep in this core)
    "moe_deepep_num_sms": 20,  # tc:806
    "moe_hybridep_num_sms": None,  # tc:809
    "moe_shared_expert_intermediate_size": None,  # tc:606
    "moe_shared_expert_overlap": False,  # tc:622
    "recompute_granularity": None,  # tc:455
    "recompute_method": None,  # tc:466
    "recompute_num_layers": None,  # tc:474
    "recompute_modules": None,  # tc:483; becomes ["core_attn"] in __post_init__
    "multi_latent_attention": False,  # tc:252
    "add_bias_linear": True,  # tc:176
    "add_qkv_bias": False,  # tc:182
    "cuda_graph_impl": "none",  # tc:870
    "cuda_graph_scope": "full",  # tc:878 (the field cuda_graph_modules replaced in 0.18)
    "fine_grained_activation_offloading": False,  # tc:1007
    "offload_modules": [],  # tc:1012
    "cp_comm_type": None,  # tc:826
    "hierarchical_context_parallel_sizes": None,  # mpc:48
    "ep_overlap_early_attn_memory_release": False,  # mpc:264
    "overlap_p2p_comm_warmup_flush": False,  # mpc:326
    "pipeline_model_parallel_layout": None,  # tc:85
    "num_layers_in_first_pipeline_stage": None,  # tc:77
    "num_layers_in_last_pipeline_stage": None,  # tc:81
    "account_for_embedding_in_pipeline_split": False,  # tc:111
    "account_for_loss_in_pipeline_split": False,  # tc:115
}

# Megatron-Core 0.17.1's EP-overlap copy (tc:2094-2150; 1181: EP > 1 without experts): also MTP = 1 needs
# PP > 1 (tc:2138), and any cuda_graph_impl but transformer_engine is refused, as is moe / mlp in
# cuda_graph_scope (tc:2142-2151).
EP_CORE_LINES = {"experts-null": 1181, "torch": 2096, "vpp": 2100, "ep": 2105, "dispatcher": 2108, "full": 2113,
                 "method": 2116, "num-layers": 2119, "moe-module": 2122, "half": 2127, "shared": 2131, "mtp": 2134}
EP_CORE_MTP_NEEDS_PP_LINE = 2138
EP_CORE_CUDA_GRAPH = {"line": 2144, "fields": ("cuda_graph_scope",), "other_impls_refused": True}
EP_CORE_NCCLEP = False

# validate() syncs only the distributed-optimizer flags (config.py:1583-1605), not overlap_param_gather.
SYNCS_OVERLAP_PARAM_GATHER = False
# validate()'s Megatron-FSDP block (config.py:1115-1139) turns neither distributed-optimizer flag on and
# asserts nothing about CUDA_DEVICE_MAX_CONNECTIONS.
FSDP_FORCES_DISTRIBUTED_OPTIMIZER = False
FSDP_MAX_CONNECTIONS_ASSERT_AT = None
# The MXFP8 fp8_param_gather assert is MixedPrecisionConfig.finalize's (mixed_precision.py:106-111): it runs
# first in runtime_config_update (config.py:1568), under Megatron-FSDP too.
MXFP8_REUSE_ASSERT = {"at": "megatron/bridge/training/mixed_precision.py:108", "under_fsdp": True}
# No evaluation batch check in validate(): ValidationConfig has no eval batch sizes in this release.
EVAL_BATCH_CHECK = None
