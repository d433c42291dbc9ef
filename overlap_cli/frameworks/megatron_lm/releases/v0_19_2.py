"""megatron-core 0.19.2's Megatron-LM training code (megatron/training): the facts of this release the code
reads through ``frameworks.megatron_lm.releases.of(target)``."""

CORE_VERSION = "0.19.2"

# The option table of this release's parser (tools/build_mlm_arguments.py in an environment holding
# megatron-core 0.19.2, the optional groups from NVIDIA/Megatron-LM core_r0.19.0).
ARGUMENTS = "arguments-0.19.2.json"

# The keys of ``effective`` for a Megatron-LM launch: the Megatron-Core names Bridge's view reports too, plus
# the two a launch states that Bridge's comm_overlap derives (expert parallelism, the optimizer's
# distributed flag), less the TP bootstrap backend, which only Bridge's CommOverlapConfig carries.
EFFECTIVE_KEYS = (
    "model.tensor_model_parallel_size",
    "model.pipeline_model_parallel_size",
    "model.virtual_pipeline_model_parallel_size",
    "model.context_parallel_size",
    "model.expert_model_parallel_size",
    "model.sequence_parallel",
    "model.tp_comm_overlap",
    "model.tp_comm_overlap_cfg",
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
    "optimizer.use_distributed_optimizer",
    "optimizer.overlap_param_gather",
    "optimizer.overlap_param_gather_with_optimizer_step",
)

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

# What this release's launch checks lack that an older mirrored release has (frameworks/megatron_lm/cites.py):
# validate_args' own --deterministic-mode asserts (0.19 moved them to determinism.py) and the Muon asserts of
# 0.17 (0.18 uses the layer-wise distributed optimizer instead).
CHECKS_ABSENT = frozenset({
    "det-flash-attn", "det-ce-fusion", "det-nccl-algo",
    "muon-ogr", "muon-distopt", "muon-fsdp2", "muon-mfsdp",
    # TransformerConfig's checks of 0.17 / 0.18 that 0.19 widened or dropped
    "gdn-key-heads-tp", "single-grouped-mxfp8", "shared-expert-overlap-alltoall", "dsa-cp",
})
# The checks this release prints otherwise than the mirror's text (the mirror is written in this release's
# words and lines): none.
CHECKS_CHANGED: dict = {}
# The line map to the newest release's cites (None: this is it), and the cites it places elsewhere (none).
LINES = None
CITES: dict = {}
