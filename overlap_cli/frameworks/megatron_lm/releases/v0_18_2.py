"""megatron-core 0.18.2's Megatron-LM training code (megatron/training): the facts of this release the code
reads through ``frameworks.megatron_lm.releases.of(target)``."""

CORE_VERSION = "0.18.2"

# The option table of this release's parser (tools/build_mlm_arguments.py in an environment holding
# megatron-core 0.18.2, the optional groups from NVIDIA/Megatron-LM core_v0.18.2).
ARGUMENTS = "arguments-0.18.2.json"

# The keys of ``effective`` are the JSON contract of a Megatron-LM result, the same for every release: the
# newest release states them.
from overlap_cli.frameworks.megatron_lm.releases.v0_19_2 import EFFECTIVE_KEYS  # noqa: E402

# DistributedDataParallelConfig's defaults of the ddp keys ``effective`` reports, which a Torch-FSDP2 launch
# keeps (get_megatron_ddp_config passes it only reshard_after_forward): megatron/core/distributed/
# distributed_data_parallel_config.py.
DDP_DEFAULTS = {
    "grad_reduce_in_fp32": False,  # :15
    "overlap_grad_reduce": False,  # :18
    "overlap_param_gather": False,  # :21
    "align_param_gather": False,  # :24
    "use_distributed_optimizer": False,  # :29
    "fp8_param_gather": False,  # :78
}

# Where this release's source has each line the mirror cites (megatron-core 0.19.2's lines): built by
# tools/build_mlm_release_lines.py from the two wheels.
LINES = "lines-0.18.2.json"
# What the newest release does in a function this one lacks, and where this one does it: the default DDP bucket
# (resolve_ddp_bucket_size, training.py:1552 there) inline in get_model.
CITES = {"megatron/training/training.py:1552": "megatron/training/training.py:1772"}

# The launch checks of the newest release this one does not have (frameworks/megatron_lm/cites.py), and the
# Muon asserts of 0.17 (0.18 turns to the layer-wise distributed optimizer, arguments.py:1560-1570).
CHECKS_ABSENT = frozenset({
    # generalized TP (--tensor-parallel-num-weight-shards, gtp_api) arrives in 0.19
    "gtp-shards-min", "gtp-shards-divisible", "expert-gtp-shards-min", "expert-gtp-shards-divisible", "gtp-fp4",
    "gtp-node-priority", "gtp-average-in-collective", "gtp-ckpt", "gtp-reshardable", "gtp-mxfp8-param-gather",
    "gtp-mxfp8-reuse", "gtp-needs-te",
    # Megatron-FSDP with single grouped MoE parameters: checked from 0.19 (arguments.py:1120 there)
    "mfsdp-grouped",
    # --deterministic-mode's determinism.py (0.19: the TP-overlap requirement, determinism.py:143)
    "determinism",
    "muon-ogr", "muon-distopt", "muon-fsdp2", "muon-mfsdp",
    # 0.17's TransformerConfig checks that 0.18 widened
    "gdn-key-heads-tp", "shared-expert-overlap-alltoall",
    # DSAttention takes no context parallelism at all here (dsa-cp), and OptimizerConfig has no MXFP8 buffer-reuse
    # check with the optimizer-step overlap
    "dsa-cp-allgather", "reuse-grad-buf-with-ops", "batch-invariant-cp",
})

# What this release prints otherwise, and where (megatron/training/arguments.py of 0.18.2).
CHECKS_CHANGED = {
    # --deterministic-mode, asserted in validate_args itself (arguments.py:1536-1542)
    "det-flash-attn": {"at": "megatron/training/arguments.py:1537"},
    "det-ce-fusion": {"at": "megatron/training/arguments.py:1538"},
    "det-nccl-algo": {"at": "megatron/training/arguments.py:1541"},
    "single-grouped-mxfp8": {"at": "megatron/core/transformer/transformer_config.py:1433"},
    "dsa-cp": {"at": "megatron/core/transformer/transformer_config.py:2543"},
}
