"""Megatron-Bridge 0.5.1 (with megatron-core 0.18.2, the release NeMo 26.06.01 pairs it with): the facts of
this release the code reads through ``frameworks.bridge.releases.of(target)``. Lines are those of the 0.5.1
wheel (bridge) and of megatron-core 0.18.2 (tc = megatron/core/transformer/transformer_config.py, mpc =
megatron/core/model_parallel_config.py).

Shared with 0.6.2 by import, because 0.5.1's own source holds the same values (the lines cited there are
0.6.2's): CommOverlapConfig's fields and defaults and what its setup writes (comm_overlap.py:358-438 and the
DP path are the same code, 13 lines earlier after line 470), the model / ddp / optimizer / mixed-precision
class defaults the tool reads, validate()'s other defaults, the keys ``effective`` reports.
Shared with 0.6.0 by import: the mixed-precision recipes (mixed_precision.py differs from 0.6.0's only in an
import).

Its own: no ``env_vars`` (ConfigContainer has no such field until 0.6.0: a YAML ``env_vars`` is dropped
with a warning, and the launch environment is the launcher's), megatron-core 0.18.2's MoE fields (no ncclep
backend, ``moe_deepep_num_sms`` 20), the EP-overlap checks of its comm_overlap.py and core, the evaluation
batch check on the training DP size.
"""

from overlap_cli.frameworks.bridge.releases.v0_6_0 import MP_RECIPES  # noqa: F401 (re-exported release data)
from overlap_cli.frameworks.bridge.releases.v0_6_2 import (  # noqa: F401 (re-exported release data)
    BUCKET_SIZE,
    COMM_OVERLAP_FIELDS,
    DDP_DEFAULTS,
    DP_OVERLAP_DEFAULTS,
    DP_OVERLAP_WHEN_DP,
    DP_OVERLAP_WHEN_INTERLEAVED,
    EFFECTIVE_KEYS,
    ENERGON_PACKING_CLEARS_EP_OVERLAP,
    MODEL_DEFAULTS,
    MODEL_OVERLAP_DEFAULTS,
    MP_DEFAULTS,
    OPTIMIZER_DEFAULTS,
    OTHER_FIELD_DEFAULTS,
    RECIPE_PEFT_SCHEME,
    SECTION_DEFAULTS,
    SYNCS_OVERLAP_PARAM_GATHER,
    TP_COMM_BOOTSTRAP_BACKEND,
    UNKNOWN_KEY_SKIPPED_AT,
    VALIDATE_DEFAULTS,
)

BRIDGE_VERSION = "0.5.1"
CORE_VERSION = "0.18.2"

# The release the recipe catalog of this release is built from.
CATALOG_VERSIONS = {"megatron-bridge": BRIDGE_VERSION, "megatron-core": CORE_VERSION}

# ConfigContainer has no env_vars (config.py:1017-1051) and runtime_config_update installs none (1674-1706):
# a YAML env_vars is dropped by _apply_overrides (UNKNOWN_KEY_SKIPPED_AT).
HAS_ENV_VARS = False

# Fields of megatron-core 0.19.2 the tool reads that 0.18.2's TransformerConfig does not have.
ABSENT_FIELDS: frozenset = frozenset({("model", "moe_ncclep_static_shape"), ("model", "moe_flex_dispatcher_num_sms")})

# Megatron-Core 0.18.2 defaults of the model fields the launch-time rules read, beyond MODEL_DEFAULTS.
LAUNCH_MODEL_DEFAULTS: dict = {
    "num_moe_experts": None,  # tc:216
    "mtp_num_layers": None,  # tc:67
    "moe_token_dispatcher_type": "allgather",  # tc:792
    "moe_flex_dispatcher_backend": "deepep",  # tc:799 (deepep or hybridep: no ncclep in this core)
    "moe_deepep_num_sms": 20,  # tc:848
    "moe_hybridep_num_sms": None,  # tc:851
    "moe_shared_expert_intermediate_size": None,  # tc:632
    "moe_shared_expert_overlap": False,  # tc:648
    "recompute_granularity": None,  # tc:472
    "recompute_method": None,  # tc:483
    "recompute_num_layers": None,  # tc:491
    "recompute_modules": None,  # tc:500; becomes ["core_attn"] in __post_init__
    "multi_latent_attention": False,  # tc:265
    "add_bias_linear": True,  # tc:189
    "add_qkv_bias": False,  # tc:195
    "cuda_graph_impl": "none",  # tc:927
    "cuda_graph_modules": "full",  # tc:942
    "cuda_graph_scope": None,  # tc:981 (deprecated)
    "fine_grained_activation_offloading": False,  # tc:1120
    "offload_modules": [],  # tc:1125
    "cp_comm_type": None,  # tc:884
    "hierarchical_context_parallel_sizes": None,  # mpc:48
    "overlap_dispatch_backward_with_experts_wgrad": False,  # mpc:264
    "ep_overlap_early_attn_memory_release": False,  # mpc:273
    "overlap_p2p_comm_warmup_flush": False,  # mpc:335
    "pipeline_model_parallel_layout": None,  # tc:98
    "num_layers_in_first_pipeline_stage": None,  # tc:90
    "num_layers_in_last_pipeline_stage": None,  # tc:94
    "account_for_embedding_in_pipeline_split": False,  # tc:124
    "account_for_loss_in_pipeline_split": False,  # tc:128
}

# Bridge's EP-overlap pre-check (comm_overlap.py:470-506): no check of "moe" in recompute_modules (Megatron-
# Core's copy makes it at finalize), and MTP must be None or 1 (co.py:503). Megatron-Core 0.18.2's copy
# (tc:2399-2452; 1327: EP > 1 without experts).
EP_PRECHECK_LINES = {"ep": 471, "experts-null": 474, "experts": 474, "dispatcher": 478, "half": 482, "torch": 485,
                     "vpp": 487, "full": 491, "method": 494, "num-layers": 497, "shared": 500, "mtp": 503}
EP_CORE_LINES = {"experts-null": 1327, "torch": 2401, "vpp": 2405, "ep": 2410, "dispatcher": 2413, "full": 2418,
                 "method": 2421, "num-layers": 2424, "moe-module": 2427, "half": 2432, "shared": 2436, "mtp": 2439}
EP_MTP_LAYERS = (None, 1)
EP_MTP_MESSAGE = "MTP layernum only supports 1 when enabling overlap_moe_expert_parallel_comm."
EP_CORE_MTP_NEEDS_PP_LINE = None
# tc:2443-2451: with cuda_graph_impl transformer_engine, neither moe nor mlp in cuda_graph_modules.
EP_CORE_CUDA_GRAPH = {"line": 2445, "fields": ("cuda_graph_modules",), "other_impls_refused": False}
EP_CORE_NCCLEP = False

# Megatron-FSDP in validate() (config.py:1233 -> 1105-1156): forces the distributed optimizer on (1114-1117)
# and asserts CUDA_DEVICE_MAX_CONNECTIONS != "1" (config.py:1142).
FSDP_FORCES_DISTRIBUTED_OPTIMIZER = True
FSDP_MAX_CONNECTIONS_ASSERT_AT = "megatron/bridge/training/config.py:1142"
# The MXFP8 fp8_param_gather assert: in validate(), skipped under Megatron-FSDP (config.py:1236-1246).
MXFP8_REUSE_ASSERT = {"at": "megatron/bridge/training/config.py:1243", "under_fsdp": False}
# validate()'s evaluation batch check (config.py:1208-1226): on the training data-parallel size (this release
# does not read dist.eval_context_parallel_size there).
EVAL_BATCH_CHECK = {"at": "megatron/bridge/training/config.py:1222", "eval_context_parallel": False,
                    "dp_name": "data_parallel_size"}
