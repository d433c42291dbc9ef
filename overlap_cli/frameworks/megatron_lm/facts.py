"""What Megatron-LM decides about overlap after ``parse_args``, each fact defined once with its source.

Line numbers are those of megatron-core 0.19.2 (the wheel ships ``megatron/training``; its
``arguments.py`` equals the ``core_r0.19.0`` branch of NVIDIA/Megatron-LM). ``ARGS`` abbreviates
``megatron/training/arguments.py``. The assertion messages are the exact text the launch prints. A launch
checked against an older release prints that release's lines and messages (cites.py, from its release module).
"""

from __future__ import annotations

ARGS = "megatron/training/arguments.py"
TRAINING = "megatron/training/training.py"
ARG_UTILS = "megatron/training/argument_utils.py"
MPC = "megatron/core/model_parallel_config.py"
DDP_CFG = "megatron/core/distributed/distributed_data_parallel_config.py"

# -- --use-checkpoint-args (arguments.py:90-100 -> megatron/training/checkpointing.py:1821-1985) ----------
# parse_and_validate_args loads these from the --load / --pretrained-checkpoint checkpoint before validate_args:
# forced ones replace the command line's value, the others fill a value that is None. Which values the
# checkpoint holds is not known statically. (--use-mp-args-from-checkpoint-args adds the parallel sizes.)
CHECKPOINT_ARGS_AT = "megatron/training/checkpointing.py:1894-1985"
CHECKPOINT_ARGS_FORCED = (
    "num_query_groups", "group_query_attention", "position_embedding_type", "add_position_embedding",
    "use_rotary_position_embeddings", "rotary_base", "rotary_percent", "rotary_interleaved", "add_bias_linear",
    "add_qkv_bias", "squared_relu", "swiglu", "untie_embeddings_and_output_weights", "normalization",
    "apply_query_key_layer_scaling", "attention_dropout", "hidden_dropout", "mtp_hybrid_override_pattern",
    "mtp_num_layers", "mtp_use_repeated_layer", "spec", "num_experts", "moe_layer_freq", "moe_ffn_hidden_size",
    "moe_router_topk", "moe_router_pre_softmax", "moe_grouped_gemm", "moe_single_grouped_weight",
    "moe_single_grouped_bias", "moe_shared_expert_intermediate_size", "moe_router_score_function",
    "moe_router_enable_expert_bias", "moe_router_topk_scaling_factor", "mamba_state_dim", "mamba_head_dim",
    "mamba_num_groups", "mamba_num_heads", "heterogeneous_layers_config_path",
    "heterogeneous_layers_config_encoded_json", "moe_latent_size",
)  # fmt: skip
CHECKPOINT_ARGS_IF_NONE = (
    "num_layers", "hidden_size", "ffn_hidden_size", "seq_length", "num_attention_heads", "kv_channels",
    "max_position_embeddings", "hybrid_layer_pattern", "padded_vocab_size", "ckpt_format",
)  # fmt: skip
CHECKPOINT_MP_ARGS_FORCED = (
    "tensor_model_parallel_size", "pipeline_model_parallel_size", "virtual_pipeline_model_parallel_size",
    "expert_model_parallel_size",
)  # fmt: skip
CHECKPOINT_MP_ARGS_IF_NONE = ("num_layers_per_virtual_pipeline_stage",)

# -- validate_args assertions (message, where) -----------------------------------------------------
# arguments.py:430 — the world size must be a multiple of TP * PP * CP (* GTP weight shards, 1 here).
WORLD_NOT_DIVISIBLE = "world size ({ws}) is not divisible by total_model_size (total_model_size={size})"
WORLD_NOT_DIVISIBLE_AT = f"{ARGS}:430"

# arguments.py:894-904 — at most one way of asking for a virtual pipeline.
VPP_EXCLUSIVE = (
    "No more than one of the following arguments can be set at the same time: "
    "--num-layers-per-virtual-pipeline-stage, --num-virtual-stages-per-pipeline-rank,"
    "--pipeline-model-parallel-layout. args.num_layers_per_virtual_pipeline_stage={nl!r}, "
    "args.num_virtual_stages_per_pipeline_rank={nvs!r}, args.pipeline_model_parallel_layout={layout!r}."
)
VPP_EXCLUSIVE_AT = f"{ARGS}:894"
# arguments.py:911 — the layout's stage count must divide by PP.
LAYOUT_NOT_DIVISIBLE = (
    "The length of pipeline_model_parallel_layout must be divisible by pipeline_model_parallel_size "
    "(num_stages={stages}, args.pipeline_model_parallel_size={pp})"
)
LAYOUT_NOT_DIVISIBLE_AT = f"{ARGS}:911"
# arguments.py:921, 934, 938 — --num-layers-per-virtual-pipeline-stage.
VPP_UNEVEN = (
    "please use --num-virtual-stages-per-pipeline-rank to specify virtual pipeline parallel degree when "
    "enable uneven pipeline parallelism"
)
VPP_UNEVEN_AT = f"{ARGS}:921"
LAYERS_NOT_DIVISIBLE_PP = "number of layers of the model must be divisible pipeline model parallel size"
LAYERS_NOT_DIVISIBLE_PP_AT = f"{ARGS}:934"
# arguments.py:963 — without a virtual pipeline (and no uneven first/last stage) the same divisibility.
LAYERS_NOT_DIVISIBLE_PP_PLAIN = "Number of layers should be divisible by the pipeline-model-parallel size"
LAYERS_NOT_DIVISIBLE_PP_PLAIN_AT = f"{ARGS}:963"
LAYERS_NOT_DIVISIBLE_VPP = (
    "number of layers per pipeline stage must be divisible number of layers per virtual pipeline stage"
)
LAYERS_NOT_DIVISIBLE_VPP_AT = f"{ARGS}:938"

# arguments.py:788-802, 826 — a hybrid layer pattern describes the pipeline split itself.
HYBRID_WITH = {
    "num_layers_per_virtual_pipeline_stage": (
        "--num-layers-per-virtual-pipeline-stage should not be used with --hybrid-layer-pattern. To specify "
        "virtual pipelining, describe a number of pipeline segments in --hybrid-layer-pattern that is a multiple "
        "of --pipeline-model-parallel-size greater than 1"),
    "num_virtual_stages_per_pipeline_rank": (
        "--num-virtual-stages-per-pipeline-rank should not be used with --hybrid-layer-pattern. Virtual pipeline "
        "stages are derived from the number of | segments in the pattern."),
    "pipeline_model_parallel_layout": (
        "--pipeline-model-parallel-layout should not be used with --hybrid-layer-pattern. Pipeline stage layout "
        "is defined by | separators in the pattern."),
}
HYBRID_WITH_AT = f"{ARGS}:788"
HYBRID_SEGMENTS = (
    "The number of hybrid pipeline segments described by --hybrid-layer-pattern must be evenly divisible by "
    "--pipeline-model-parallel-size. Got {segments} segments and {pp} pipeline parallel size."
)
HYBRID_SEGMENTS_AT = f"{ARGS}:826"

# arguments.py:966-976 — the interleaved schedule's pipeline size.
INTERLEAVED_PP_1 = (
    "When interleaved schedule is used, pipeline-model-parallel size should be greater than 1"
)
INTERLEAVED_PP_2 = (
    "When interleaved schedule is used and p2p communication overlap is disabled, pipeline-model-parallel "
    "size should be greater than 2 to avoid having multiple p2p sends and recvs between same 2 ranks per "
    "communication batch"
)
INTERLEAVED_AT = f"{ARGS}:966"
# arguments.py:977-985 — no virtual pipeline: both silently False (a WARNING line when PP > 1).
NO_VPP_FORCING = (
    "WARNING: Setting args.overlap_p2p_comm and args.align_param_gather to False since non-interleaved "
    "schedule does not support overlapping p2p communication and aligned param AG"
)
NO_VPP_FORCING_AT = f"{ARGS}:977"

# arguments.py:990-995 — --overlap-param-gather.
OPG_NEEDS_DISTOPT = "--overlap-param-gather only supported with distributed optimizer, megatron fsdp, or dist_muon"
OPG_NEEDS_DISTOPT_AT = f"{ARGS}:991"
OPG_NEEDS_OGR = "Must use --overlap-param-gather with --overlap-grad-reduce"
OPG_NEEDS_OGR_AT = f"{ARGS}:994"

# arguments.py:1004, 1014 — Torch-FSDP2.
FSDP2_DISTOPT = "--use-torch-fsdp2 is not supported with MCore's distributed optimizer"
FSDP2_DISTOPT_AT = f"{ARGS}:1004"
FSDP2_MAX_CONN = "FSDP always requires CUDA_DEVICE_MAX_CONNECTIONS value large than one"
FSDP2_MAX_CONN_AT = f"{ARGS}:1014"

# arguments.py:1032-1040 — --overlap-param-gather-with-optimizer-step.
OPS_DISTOPT = "--overlap-param-gather-with-optimizer-step only supported with distributed optimizer"
OPS_OPG = "Must use --overlap-param-gather-with-optimizer-step with --overlap-param-gather"
OPS_VPP = "--overlap-param-gather-with-optimizer-step only supported with interleaved pipeline parallelism"
OPS_DIST_CKPT = "--overlap-param-gather-with-optimizer-step not supported with distributed checkpointing yet"
OPS_AT = f"{ARGS}:1032"

# arguments.py:1017-1030 — Torch-FSDP2 gathers bf16 parameters instead of FP8 (TE >= 2.0) / FP4 (TE < 2.7.0.dev0).
FSDP2_FP8_OFF = (
    "FSDP2 FP8 param gather is not supported yet in TE 2.0, will fallback to bf16all_gather instead, turning off "
    "fp8_param_gather"
)
FSDP2_FP4_OFF = (
    "FSDP2 FP4 param gather is not supported yet in TE 2.0, will fallback to bf16all_gather instead, turning off "
    "fp4_param_gather"
)

# arguments.py:1060-1062 — FP8 parameters are all-gathered by the distributed optimizer or FSDP.
FP8_PARAM_GATHER = (
    "--fp8-param-gather only supported with distributed optimizer, torch fsdp2, megatron fsdp, or inference mode"
)
FP8_PARAM_GATHER_AT = f"{ARGS}:1061"

# arguments.py:1100-1112, 1143 — Megatron-FSDP.
MFSDP_FORCES_DISTOPT = (
    "Megatron-FSDP is only compatible with --use-distributed-optimizer. Using DistributedOptimizer..."
)
MFSDP_FORCES_DISTOPT_AT = f"{ARGS}:1107"
MFSDP_MAX_CONN = "FSDP requires CUDA_DEVICE_MAX_CONNECTIONS > 1 or unset."
MFSDP_MAX_CONN_AT = f"{ARGS}:1143"

# arguments.py:1181-1194 — bf16 reduces gradients in fp32 unless --grad-reduce-in-bf16 (training.py:1988 hands
# accumulate_allreduce_grads_in_fp32 to DistributedDataParallelConfig.grad_reduce_in_fp32).
BF16_GRADS_FP32 = "accumulate and all-reduce gradients in fp32 for bfloat16 data type."

# arguments.py:1393-1402 — TP = 1 turns sequence parallelism off, then --tp-comm-overlap asserts it.
SP_OFF_AT_TP1 = "Disabling sequence parallelism because tensor model parallelism is disabled"
SP_OFF_AT_TP1_AT = f"{ARGS}:1393"
TP_OVERLAP_NEEDS_SP = (
    "Tensor parallel communication/GEMM overlap can happen only when sequence parallelism is enabled"
)
TP_OVERLAP_NEEDS_SP_AT = f"{ARGS}:1402"

# arguments.py:1413-1439 — TP or CP > 1 before Blackwell (get_device_arch_version() < 10).
MAX_CONN_ONE = (
    "Using tensor model parallelism or context parallelism require setting the environment variable "
    "CUDA_DEVICE_MAX_CONNECTIONS to 1"
)
MAX_CONN_ONE_AT = f"{ARGS}:1437"
MAX_CONN_FSDP_WARNING = (
    "Using tensor model parallelism or context parallelism with {impl} together. Try not to using them "
    "together since they require different CUDA_MAX_CONNECTIONS settings for best performance."
)
MAX_CONN_EP_WARNING = (
    "For Hopper and before, try not to use tensor model parallelism or context parallelism with "
    "overlap_moe_expert_parallel_comm."
)
MAX_CONN_WARNINGS_AT = f"{ARGS}:1416"

# arguments.py:1653-1656 -> megatron/training/determinism.py:117-145 — --deterministic-mode checks, never
# changes, the options it needs: TP overlap must be off (and cross-entropy loss fusion).
DETERMINISM = "--deterministic-mode requires: {mismatched}. Adjust these options to continue."
DETERMINISM_REQUIRED = (("cross_entropy_loss_fusion", False), ("tp_comm_overlap", False))  # determinism.py:24
DETERMINISM_AT = "megatron/training/determinism.py:143"
# megatron/training/initialize.py:157-159 -> 186-198: userbuffers are set up by Transformer Engine.
TP_OVERLAP_NEEDS_TE = (
    "Tensor Parallel Communication/GEMM Overlap optimization needs 'yaml' and 'transformer_engine' packages"
)
TP_OVERLAP_NEEDS_TE_AT = "megatron/training/initialize.py:195"

# arguments.py:1822-1828 — --delay-wgrad-compute's own launch checks.
DELAY_WGRAD_TE_IMPL = "Delaying wgrad compute is only supported with transformer_engine implementation"
DELAY_WGRAD_TE_IMPL_AT = f"{ARGS}:1823"
DELAY_WGRAD_OGR_TE = "overlap_grad_reduce is only supported with TE >= 2.8.0 when enabling delay_wgrad_compute"
DELAY_WGRAD_OGR_TE_AT = f"{ARGS}:1826"

# arguments.py:1759-1768 — --freeze-all-layers.
FREEZE_AT = f"{ARGS}:1759"

# -- after validate_args ------------------------------------------------------------------------------
# training.py:1552-1567 resolve_ddp_bucket_size, called at training.py:1850 for DDP and Megatron-FSDP.
BUCKET_FLOOR = 40_000_000
BUCKET_PER_DP_CP_RANK = 1_000_000
BUCKET_AT = f"{TRAINING}:1552"
# distributed_data_parallel_config.py:269-271.
NUM_BUCKETS_AND_SIZE = "Cannot specify both num_buckets and bucket_size"
NUM_BUCKETS_AT = f"{DDP_CFG}:270"
# argument_utils.py:307 — core_transformer_config_from_args.
BATCH_P2P_AT = f"{ARG_UTILS}:307"

# argparse dests whose Megatron-Core field has another name (training.py:1977-2014, get_megatron_ddp_config;
# argument_utils.py:307-313, core_transformer_config_from_args).
DEST_OF = {
    "ddp.bucket_size": "ddp_bucket_size",
    "ddp.num_buckets": "ddp_num_buckets",
    "ddp.grad_reduce_in_fp32": "accumulate_allreduce_grads_in_fp32",
    "ddp.average_in_collective": "ddp_average_in_collective",
    "model.num_moe_experts": "num_experts",
    "model.num_layers_in_first_pipeline_stage": "decoder_first_pipeline_num_layers",
    "model.num_layers_in_last_pipeline_stage": "decoder_last_pipeline_num_layers",
    "model.fp8_param": "fp8_param_gather",
}

# The keys of ``effective``: release data (frameworks/megatron_lm/releases/), read through releases.of(target).

# Section of a Megatron-Core field in ``final`` (the rest of the dests go to "train").
DDP_FIELDS = (
    "use_distributed_optimizer", "overlap_grad_reduce", "overlap_param_gather", "align_param_gather",
    "bucket_size", "num_buckets", "grad_reduce_in_fp32", "fp8_param_gather", "use_megatron_fsdp",
    "data_parallel_sharding_strategy", "average_in_collective", "nccl_ub", "delay_wgrad_compute",
    "reuse_grad_buf_for_mxfp8_param_ag", "check_for_nan_in_grad", "use_custom_fsdp",
)  # fmt: skip
OPTIMIZER_FIELDS = (
    "optimizer", "lr", "min_lr", "weight_decay", "clip_grad", "use_distributed_optimizer",
    "overlap_param_gather", "overlap_param_gather_with_optimizer_step", "use_precision_aware_optimizer",
    "adam_beta1", "adam_beta2", "adam_eps", "bf16", "fp16",
)  # fmt: skip
TRAIN_FIELDS = (
    "micro_batch_size", "global_batch_size", "train_iters", "train_samples", "seq_length",
    "max_position_embeddings", "rampup_batch_size", "eval_iters", "eval_interval",
)  # fmt: skip

# The tokenizer pads the vocabulary to a multiple of this times TP (megatron/core/tokenizers/utils/
# build_tokenizer.py:124 vocab_size_with_padding; --make-vocab-size-divisible-by, default 128).
VOCAB_DIVISIBLE_DEFAULT = 128
