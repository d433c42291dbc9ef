"""Megatron-Bridge 0.6.0 (with megatron-core 0.19.2, the release NeMo 26.08 pairs it with): the facts of this
release the code reads through ``frameworks.bridge.releases.of(target)``. Lines are those of the 0.6.0 wheel.

Shared with 0.6.2 by import, because 0.6.0's own source holds them unchanged: comm_overlap.py is the same
file (every CommOverlapConfig field, default and check at the same line), megatron-core is the same release
(every class default), and config.py differs only by 0.6.2's HybridEP THD padding switch
(``_enable_safe_hybridep_dispatch``, which touches no field this tool reads).

Its own: the mixed-precision recipes (0.6.0 has no ``nemotron_3_ultra_bf16_with_nvfp4_mixed``: asking for it
raises "Unknown mixed-precision recipe"), and the lines of config.py the behaviour tables cite (0.6.0's
config.py is 5 lines shorter before ``validate()``).
"""

from overlap_cli.frameworks.bridge.releases.v0_6_2 import (  # noqa: F401 (re-exported release data)
    ABSENT_FIELDS,
    BUCKET_SIZE,
    COMM_OVERLAP_FIELDS,
    DDP_DEFAULTS,
    DP_OVERLAP_DEFAULTS,
    DP_OVERLAP_WHEN_DP,
    DP_OVERLAP_WHEN_INTERLEAVED,
    EFFECTIVE_KEYS,
    ENERGON_PACKING_CLEARS_EP_OVERLAP,
    EP_CORE_CUDA_GRAPH,
    EP_CORE_LINES,
    EP_CORE_MTP_NEEDS_PP_LINE,
    EP_CORE_NCCLEP,
    EP_MTP_LAYERS,
    EP_MTP_MESSAGE,
    EP_PRECHECK_LINES,
    HAS_ENV_VARS,
    LAUNCH_MODEL_DEFAULTS,
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
from overlap_cli.frameworks.bridge.releases.v0_6_2 import MP_RECIPES as _MP_RECIPES_0_6_2

BRIDGE_VERSION = "0.6.0"
CORE_VERSION = "0.19.2"

# The release the recipe catalog of this release is built from.
CATALOG_VERSIONS = {"megatron-bridge": BRIDGE_VERSION, "megatron-core": CORE_VERSION}

# The registered recipes of mixed_precision.py:184-429: 0.6.2's without nemotron_3_ultra_bf16_with_nvfp4_mixed
# (added in 0.6.2, mixed_precision.py:432-442 there); every other recipe's body is the same.
MP_RECIPES: dict = {k: v for k, v in _MP_RECIPES_0_6_2.items() if k != "nemotron_3_ultra_bf16_with_nvfp4_mixed"}

# Megatron-FSDP in validate() (config.py:1341 -> 1065-1116): forces the distributed optimizer on (1073-1077)
# and asserts CUDA_DEVICE_MAX_CONNECTIONS != "1" (config.py:1101).
FSDP_FORCES_DISTRIBUTED_OPTIMIZER = True
FSDP_MAX_CONNECTIONS_ASSERT_AT = "megatron/bridge/training/config.py:1101"
# The MXFP8 fp8_param_gather assert: in validate(), skipped under Megatron-FSDP (config.py:1344-1354).
MXFP8_REUSE_ASSERT = {"at": "megatron/bridge/training/config.py:1351", "under_fsdp": False}
# validate()'s evaluation batch check (config.py:1289-1334), honouring dist.eval_context_parallel_size.
EVAL_BATCH_CHECK = {"at": "megatron/bridge/training/config.py:1330", "eval_context_parallel": True,
                    "dp_name": "eval_data_parallel_size"}
