"""Megatron-Bridge 0.6.2 (with megatron-core 0.19.2, the release it pins): the facts of this release the
code reads through ``frameworks.bridge.releases.of(target)``. Lines are those of NVIDIA-NeMo/Megatron-Bridge@067f987
(the source facts.py is checked against); co.py = src/megatron/bridge/training/comm_overlap.py."""

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
