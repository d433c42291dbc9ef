"""Megatron-Bridge main at NVIDIA-NeMo/Megatron-Bridge@067f987 (the snapshot in ../shared/upstream, run on
megatron-core 0.19.2 as NeMo-RL runs its main commits): the facts of this branch snapshot the code reads through
``frameworks.bridge.releases.of(target)``. Never the default (frameworks/releases.py): chosen only by name.
Lines are those of 067f987.

Shared with 0.6.2 by import, because main's own source holds them unchanged: comm_overlap.py is the same
file, megatron-core is the same release (every class default; Bridge's GPTModelProvider adds only
``logit_dtype``, a field no rule reads).

Shared with 0.6.0 by import: the mixed-precision recipes (mixed_precision.py is 0.6.0's file; main has no
``nemotron_3_ultra_bf16_with_nvfp4_mixed``).

Its own: the lines of config.py, and the Energon-packing switch that clears EP overlap and delayed wgrad
before comm_overlap runs (config.py:1218-1253, called at 2024). main's MFSDP v2 path (config.py:1126-1198:
distributed optimizer and every DP overlap off) runs only where megatron-core has FullyShardedDataParallelV2
(training/fsdp_compat.py:17-29) and ``ddp.megatron_fsdp_version`` is 2; megatron-core 0.19.2 has neither
(distributed/fsdp/mcore_fsdp_adapter.py:63 is its only wrapper), so every Megatron-FSDP run takes the v1 path
(config.py:1072-1073), which is 0.6.2's.
"""

from overlap_cli.frameworks.bridge.releases.v0_6_0 import MP_RECIPES  # noqa: F401 (re-exported release data)
from overlap_cli.frameworks.bridge.releases.v0_6_2 import (  # noqa: F401 (re-exported release data)
    ABSENT_FIELDS,
    BUCKET_SIZE,
    COMM_OVERLAP_FIELDS,
    CORE_VERSION,
    DDP_DEFAULTS,
    DP_OVERLAP_DEFAULTS,
    DP_OVERLAP_WHEN_DP,
    DP_OVERLAP_WHEN_INTERLEAVED,
    EFFECTIVE_KEYS,
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

BRIDGE_VERSION = "main"

# The snapshot the recipe catalog of this branch is built from.
CATALOG_VERSIONS = {"megatron-bridge": BRIDGE_VERSION, "megatron-core": CORE_VERSION}

# Megatron-FSDP v1 in validate() (config.py:1485 -> 1065 -> 1079-1124): forces the distributed optimizer on
# (1082-1085) and asserts CUDA_DEVICE_MAX_CONNECTIONS != "1" (config.py:1110).
FSDP_FORCES_DISTRIBUTED_OPTIMIZER = True
FSDP_MAX_CONNECTIONS_ASSERT_AT = "megatron/bridge/training/config.py:1110"
# The MXFP8 fp8_param_gather assert: in validate(), skipped under Megatron-FSDP (config.py:1488-1498).
MXFP8_REUSE_ASSERT = {"at": "megatron/bridge/training/config.py:1495", "under_fsdp": False}
# validate()'s evaluation batch check (config.py:1433-1478), honouring dist.eval_context_parallel_size.
EVAL_BATCH_CHECK = {"at": "megatron/bridge/training/config.py:1474", "eval_context_parallel": True,
                    "dp_name": "eval_data_parallel_size"}
# _disable_native_energon_packing_moe_overlap (config.py:1218-1253), run by runtime_config_update before
# comm_overlap's setup (config.py:2024): a dataset of this class with packing_buffer_size set clears
# overlap_moe_expert_parallel_comm and delay_wgrad_compute on the model and on comm_overlap, with a warning.
ENERGON_PACKING_CLEARS_EP_OVERLAP = {
    "dataset": "megatron.bridge.data.builders.energon.EnergonDatasetConfig",
    "at": "megatron/bridge/training/config.py:1218-1253",
    "fields": ("overlap_moe_expert_parallel_comm", "delay_wgrad_compute"),
}
