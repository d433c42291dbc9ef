"""megatron-core 0.17.1's Megatron-LM training code (megatron/training): the facts of this release the code
reads through ``frameworks.megatron_lm.releases.of(target)``."""

CORE_VERSION = "0.17.1"

# The option table of this release's parser (tools/build_mlm_arguments.py in an environment holding
# megatron-core 0.17.1, the optional groups from NVIDIA/Megatron-LM core_v0.17.1).
ARGUMENTS = "arguments-0.17.1.json"

# The keys of ``effective`` are the JSON contract of a Megatron-LM result, the same for every release: the
# newest release states them.
from overlap_cli.frameworks.megatron_lm.releases.v0_19_2 import EFFECTIVE_KEYS  # noqa: E402

# DistributedDataParallelConfig's defaults of the ddp keys ``effective`` reports, which a Torch-FSDP2 launch
# keeps (get_megatron_ddp_config passes it only reshard_after_forward): megatron/core/distributed/
# distributed_data_parallel_config.py.
DDP_DEFAULTS = {
    "grad_reduce_in_fp32": False,  # :13
    "overlap_grad_reduce": False,  # :16
    "overlap_param_gather": False,  # :19
    "align_param_gather": False,  # :22
    "use_distributed_optimizer": False,  # :27
    "fp8_param_gather": False,  # :71
}

# Where this release's source has each line the mirror cites (megatron-core 0.19.2's lines): built by
# tools/build_mlm_release_lines.py from the two wheels.
LINES = "lines-0.17.1.json"
# What the newest release does in a function this one lacks or moved, and where this one does it: the default DDP
# bucket (resolve_ddp_bucket_size, training.py:1552 there) inline in get_model; core_transformer_config_from_args
# in arguments.py (argument_utils.py:307 there).
CITES = {"megatron/training/training.py:1552": "megatron/training/training.py:1471",
         "megatron/training/argument_utils.py:307": "megatron/training/arguments.py:1669"}

# The launch checks of the newest release this one does not have (frameworks/megatron_lm/cites.py).
CHECKS_ABSENT = frozenset({
    # generalized TP (--tensor-parallel-num-weight-shards, gtp_api) arrives in 0.19
    "gtp-shards-min", "gtp-shards-divisible", "expert-gtp-shards-min", "expert-gtp-shards-divisible", "gtp-fp4",
    "gtp-node-priority", "gtp-average-in-collective", "gtp-ckpt", "gtp-reshardable", "gtp-mxfp8-param-gather",
    "gtp-mxfp8-reuse", "gtp-needs-te",
    # Megatron-FSDP with single grouped MoE parameters: checked from 0.19 (arguments.py:1120 there)
    "mfsdp-grouped",
    # --deterministic-mode's determinism.py (0.19: the TP-overlap requirement, determinism.py:143)
    "determinism",
    # flags this release's parser does not have (--eval-micro-batch-size, --fp8-output-proj, single grouped MoE
    # parameters)
    "eval-batch", "fp8-output-proj-fp8", "fp8-output-proj-mxfp8", "moe-single-grouped-te",
    # Megatron-FSDP: no forced distributed optimizer, no optimizer or meta-device asserts (arguments.py:949-972)
    "mfsdp-distopt", "mfsdp-optimizer", "mfsdp-meta-device",
    # an optimizer other than adam / sgd: Muon asserts (arguments.py:1482-1493), no layer-wise distributed
    # optimizer
    "layer-wise", "emerging-fsdp2",
    # TransformerConfig / OptimizerConfig checks this release has in another form (the *-tp, -alltoall and dsa-cp
    # checks) or not at all
    "gdn-key-heads", "single-grouped-mxfp8", "shared-expert-overlap-dispatcher", "dsa-cp-allgather",
    "reuse-grad-buf-with-ops", "batch-invariant-cp",
})

# What this release prints otherwise, and where (its own file:line).
CHECKS_CHANGED = {
    "mfsdp-ckpt": {"message": "Megatron FSDP only supports fsdp_dtensor checkpoint format",
                   "at": "megatron/training/arguments.py:971"},
    "fsdp-max-conn": {"message": "FSDP always requires CUDA_DEVICE_MAX_CONNECTIONS value large than one"},
    "fsdp-registration-mfsdp": {"message": "FSDP manual registration is only supported with Megatron FSDP",
                                "at": "megatron/training/arguments.py:975"},
    "fsdp-registration-ub": {"message": "FSDP manual registration is only supported with nccl-ub option",
                             "at": "megatron/training/arguments.py:976"},
    # get_model asserts it before building the DDP config, which has no num_buckets (training.py:1445-1450)
    "num-buckets": {"message": "Cannot specify both --ddp-num-buckets and --ddp-bucket-size",
                    "at": "megatron/training/training.py:1446"},
    "num-buckets-positive": {"message": "--ddp-num-buckets must be greater than 0",
                             "at": "megatron/training/training.py:1448"},
    # --deterministic-mode, asserted in validate_args itself (arguments.py:1363-1369)
    "det-flash-attn": {"at": "megatron/training/arguments.py:1364"},
    "det-ce-fusion": {"at": "megatron/training/arguments.py:1365"},
    "det-nccl-algo": {"at": "megatron/training/arguments.py:1368"},
    "gdn-key-heads-tp": {"at": "megatron/core/transformer/transformer_config.py:1107"},
    "shared-expert-overlap-alltoall": {"at": "megatron/core/transformer/transformer_config.py:1273"},
    "dsa-cp": {"at": "megatron/core/transformer/transformer_config.py:2230"},
    "muon-ogr": {"at": "megatron/training/arguments.py:1487"},
    "muon-distopt": {"at": "megatron/training/arguments.py:1490"},
    "muon-fsdp2": {"at": "megatron/training/arguments.py:1491"},
    "muon-mfsdp": {"at": "megatron/training/arguments.py:1492"},
}
