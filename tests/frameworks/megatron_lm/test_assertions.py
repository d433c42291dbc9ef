"""Every launch check of frameworks/megatron_lm/assertions.py (and the process grid, DP313), as data: a launch
that fails it and a launch that does not, each run through the real CLI (a script written to tmp_path,
`overlap check --format json`) and through the real megatron-core 0.19.2 (mlm_reference.py: parse_args,
validate_args, the microbatch calculator, _initialize_distributed, the TransformerConfig, DDP and
optimizer configs). The expected message is written here, from the upstream source, not taken from the
code under test.

For each row: the failing launch gets an error finding of the row's code quoting the message, the
other gets no error; the real code raises exactly that message on the first and launches the second. A row of
a check only an older release has runs on that release (its setup's ``core``), and every row's launches also run
on each older release, against its real code (``test_each_launch_does_on_an_older_release_what_that_release_does``).
"""

from __future__ import annotations

import json
import shlex

import pytest

from lmref import ABSENT, reference_case, run_reference, target_flags, write_launch
from overlap_cli.frameworks.megatron_lm.releases import CORE

BASE = ("--num-layers 8 --hidden-size 64 --num-attention-heads 4 --seq-length 128 --max-position-embeddings 128 "
        "--micro-batch-size 1")
FSDP2 = "--use-torch-fsdp2 --untie-embeddings-and-output-weights --no-gradient-accumulation-fusion"
MFSDP = "--use-megatron-fsdp --ckpt-format fsdp_dtensor"
HCP = "--hybrid-context-parallel --calculate-per-token-loss"
DSR = "--distribute-saved-activations --recompute-granularity full --recompute-method uniform --recompute-num-layers 1"
# GTP's remat degree counts in the microbatch calculator's DP (global_vars.py:131) but not in the default
# global batch (arguments.py:685): a GTP launch must give its global batch (row global-batch-gtp).
GTP = "--tensor-parallel-num-weight-shards 2 --global-batch-size 8"
MOE = "--num-experts 4 --disable-bias-linear"
HYBRID = "--hybrid-layer-pattern 'M*|M*' --pipeline-model-parallel-size 2"
FP8 = "--bf16 --fp8-format hybrid"
MXFP8 = "--bf16 --fp8-format e4m3 --fp8-recipe mxfp8 --fp8-param-gather --use-distributed-optimizer"
PRECISION_AWARE = "--use-precision-aware-optimizer --use-distributed-optimizer"
EP_OVERLAP = ("--expert-model-parallel-size 8 --num-experts 8 --moe-token-dispatcher-type alltoall "
              "--overlap-moe-expert-parallel-comm --bf16 --delay-wgrad-compute --no-gradient-accumulation-fusion")
TE = "2.12"


def S(ws=8, arch=10, env=None, te=None, torch=None, core=None) -> dict:
    """A launch target: world size, GPU architecture (9 Hopper, 10 Blackwell), launch variables, versions, the
    megatron-core release (None: the default; a check only an older release has is run there, both by the CLI
    and by that release's real code)."""
    return {"ws": ws, "arch": arch, "env": env or {}, "te": te, "torch": torch, "core": core}


def R(id_, code, bad, good, message, bad_setup=None, good_setup=None, bare=False):
    return pytest.param(code, bad, good, message, bad_setup or S(), good_setup or bad_setup or S(), bare, id=id_)


ROWS = [
    # -- validate_args ----------------------------------------------------------------------------
    R("gtp-shards-min", "LM106", "--tensor-model-parallel-size 2 --tensor-parallel-num-weight-shards 1",
      "--tensor-model-parallel-size 2", "tensor_parallel_num_weight_shards (1) must be >= tensor_model_parallel_size (2)."),
    R("gtp-shards-divisible", "LM106", "--tensor-model-parallel-size 2 --tensor-parallel-num-weight-shards 3",
      "--tensor-model-parallel-size 2",
      "tensor_parallel_num_weight_shards (3) must be divisible by tensor_model_parallel_size (2)."),
    R("hcp-product", "LM801", "--context-parallel-size 2 --hierarchical-context-parallel-sizes 2 2",
      "--context-parallel-size 2 --hierarchical-context-parallel-sizes 2 1",
      "assert args.context_parallel_size == prod(args.hierarchical_context_parallel_sizes)", bare=True),
    R("a2a-p2p-hcp", "LM801", "--context-parallel-size 2 --cp-comm-type a2a+p2p",
      "--context-parallel-size 2 --cp-comm-type a2a+p2p --hierarchical-context-parallel-sizes 2 1",
      "--hierarchical-context-parallel-sizes must be set when a2a+p2p is used in cp comm"),
    R("eval-batch", "LM003", "--global-batch-size 16 --eval-global-batch-size 12",
      "--global-batch-size 16 --eval-global-batch-size 24",
      "eval_global_batch_size (12) must be divisible by eval_micro_batch_size (1) * data_parallel_size (8)"),
    R("hybrid-pipes-first", "LM203", f"{HYBRID} --decoder-first-pipeline-num-layers 2", HYBRID,
      "If --hybrid-layer-pattern contains pipe separators, --decoder-first-pipeline-num-layers should not be specified "
      "as the pipeline layout is explicitly defined."),
    R("hybrid-pipes-last", "LM203", f"{HYBRID} --decoder-last-pipeline-num-layers 2", HYBRID,
      "If --hybrid-layer-pattern contains pipe separators, --decoder-last-pipeline-num-layers should not be specified "
      "as the pipeline layout is explicitly defined."),
    R("hybrid-account-embedding", "LM203", "--hybrid-layer-pattern 'M*M*' --account-for-embedding-in-pipeline-split",
      "--hybrid-layer-pattern 'M*M*'",
      "--account-for-embedding-in-pipeline-split should not be used with --hybrid-layer-pattern. Pipeline stage layout "
      "is defined by | separators in the pattern."),
    R("hybrid-account-loss", "LM203", "--hybrid-layer-pattern 'M*M*' --account-for-loss-in-pipeline-split",
      "--hybrid-layer-pattern 'M*M*'",
      "--account-for-loss-in-pipeline-split should not be used with --hybrid-layer-pattern. Pipeline stage layout is "
      "defined by | separators in the pattern."),
    R("fsdp2-torch", "LM504", FSDP2, FSDP2, "FSDP2 requires PyTorch >= 2.4.0 with FSDP 2 support.",
      S(torch="2.3.0"), S(torch="2.4.0")),
    R("fsdp2-pp", "LM204", f"{FSDP2} --pipeline-model-parallel-size 2", FSDP2,
      "--use-torch-fsdp2 is not supported with pipeline parallelism"),
    R("fsdp2-ep", "LM701", f"{FSDP2} --num-experts 4 --expert-model-parallel-size 2", f"{FSDP2} --num-experts 4",
      "--use-torch-fsdp2 is not supported with expert parallelism"),
    R("fsdp2-gaf", "LM310", "--use-torch-fsdp2 --untie-embeddings-and-output-weights", FSDP2,
      "--use-torch-fsdp2 is not supported with gradient accumulation fusion"),
    R("fsdp2-ckpt", "LM310", f"{FSDP2} --ckpt-format torch", FSDP2,
      "--use-torch-fsdp2 requires --ckpt-format torch_dist or torch_dcp"),
    R("fsdp2-untie", "LM310", "--use-torch-fsdp2 --no-gradient-accumulation-fusion", FSDP2,
      "--use-torch-fsdp2 requires --untie-embeddings-and-output-weights"),
    R("fsdp2-fp16", "LM401", f"{FSDP2} --fp16", f"{FSDP2} --bf16", "--use-torch-fsdp2 not supported with fp16 yet"),
    R("fp4-with-fp8", "LM401", f"{FP8} --fp4-format e2m1", FP8,
      "--fp4-format and --fp8-format cannot be used simultaneously. Please choose one.", S(te=TE)),
    R("fp4-param-gather", "LM401", "--bf16 --fp4-param-gather", "--bf16",
      "--fp4-param-gather must be used together with --fp4-format."),
    R("fp4-te", "LM504", "--bf16 --fp4-format e2m1", "--bf16 --fp4-format e2m1",
      "--fp4-format requires Transformer Engine >= 2.7.0.dev0 for NVFP4BlockScaling support.", S(te="2.6"), S(te=TE)),
    R("mfsdp-grouped", "LM310", f"{MFSDP} --num-experts 4 --moe-grouped-gemm --moe-single-grouped-weight",
      f"{MFSDP} --num-experts 4 --moe-grouped-gemm",
      "Megatron-FSDP does not currently support moe_single_grouped_weight or moe_single_grouped_bias. Disable single "
      "grouped MoE parameters or use the regular DDP/distributed optimizer path until Megatron-FSDP supports TE "
      "GroupedTensor param buffers.", S(te="2.14")),
    R("mfsdp-optimizer", "LM310", f"{MFSDP} --optimizer muon", f"{MFSDP} --optimizer sgd",
      "Megatron-FSDP does not support the muon optimizer yet."),
    R("mfsdp-weight-hash", "LM310", f"{MFSDP} --check-weight-hash-across-dp-replicas-interval 10", MFSDP,
      "check_weight_hash_across_dp_replicas_interval is not supported with optim_grads_params"),
    R("mfsdp-ckpt", "LM310", "--use-megatron-fsdp", MFSDP, "Megatron-FSDP requires the `fsdp_dtensor` checkpointing format."),
    R("mfsdp-meta-device", "LM310", f"{MFSDP} --init-model-with-meta-device --data-parallel-sharding-strategy no_shard",
      f"{MFSDP} --data-parallel-sharding-strategy no_shard",
      "Meta device initialization (init_model_with_meta_device=True) is not supported or necessary for the 'no_shard' / "
      "0 sharding strategy."),
    R("fsdp-registration-mfsdp", "LM310", "--fsdp-manual-registration", "",
      "FSDP manual registration is only supported with Megatron FSDP."),
    R("fsdp-registration-ub", "LM310", f"{MFSDP} --fsdp-manual-registration", MFSDP,
      "FSDP manual registration is only supported with --nccl-ub argument."),
    R("fp16-with-bf16", "LM401", "--fp16 --bf16", "--bf16", "assert not args.bf16", bare=True),
    R("bf16-main-grads", "LM401", "--bf16 --accumulate-allreduce-grads-in-fp32 --main-grads-dtype bf16",
      "--bf16 --accumulate-allreduce-grads-in-fp32",
      "--main-grads-dtype can only be fp32 when --accumulate-allreduce-grads-in-fp32 is set"),
    R("full-iteration-nan-check", "LM401", "--cuda-graph-impl full_iteration", "--fp16 --cuda-graph-impl full_iteration",
      "--no-check-for-nan-in-loss-and-grad should be set with --cuda-graph-impl=full_iteration for training."),
    R("cp-seq-length", "LM801", "--context-parallel-size 2 --seq-length 126", "--context-parallel-size 2",
      "seq-length should be a multiple of 2 * context-parallel-size if context-parallel-size > 1."),
    R("fp16-lm-cross-entropy", "LM401", "--fp16-lm-cross-entropy", "--fp16 --fp16-lm-cross-entropy",
      "lm cross entropy in fp16 only support in fp16 mode."),
    R("fp32-residual", "LM401", "--fp32-residual-connection", "--bf16 --fp32-residual-connection",
      "residual connection in fp32 only supported when using fp16 or bf16."),
    R("distribute-saved-tp", "LM106", DSR, f"--tensor-model-parallel-size 2 {DSR}",
      "can distribute recomputed activations only across tensor model parallel groups"),
    R("hybrid-cp-pp", "LM801", f"{HCP} --pipeline-model-parallel-size 2", HCP,
      "Hybrid context parallelism not supported with pipeline parallelism"),
    R("hybrid-cp-mfsdp", "LM801", f"{HCP} {MFSDP}", HCP, "Hybrid context parallelism not supported with Megatron FSDP"),
    R("hybrid-cp-dataloader", "LM801", f"{HCP} --dataloader-type cyclic", f"{HCP} --dataloader-type single",
      "Hybrid context parallelism only supported with single dataloader type"),
    R("hybrid-cp-per-token-loss", "LM801", "--hybrid-context-parallel", HCP,
      "Hybrid context parallelism must be used with --calculate-per-token-loss"),
    R("expert-gtp-shards-min", "LM106", f"{MOE} --expert-tensor-parallel-size 2 --expert-tensor-parallel-num-weight-shards 1",
      f"{MOE} --expert-tensor-parallel-size 2",
      "tensor_parallel_num_weight_shards (1) must be >= tensor_model_parallel_size (2)."),
    R("expert-gtp-shards-divisible", "LM106",
      f"{MOE} --expert-tensor-parallel-size 2 --expert-tensor-parallel-num-weight-shards 3",
      f"{MOE} --expert-tensor-parallel-size 2",
      "tensor_parallel_num_weight_shards (3) must be divisible by tensor_model_parallel_size (2)."),
    R("gtp-fp4", "LM106", f"{GTP} --bf16 --fp4-format e2m1", f"{GTP} --bf16 --fp4-format e2m1 --fp4-param-gather",
      "GTP (--tensor-parallel-num-weight-shards / --expert-tensor-parallel-num-weight-shards > 1) with --fp4-format "
      "requires --fp4-param-gather so NVFP4 weights are all-gathered as native NVFP4.", S(te=TE)),
    R("gtp-node-priority", "LM504", f"{GTP} --cuda-graph-impl local", f"{GTP} --cuda-graph-impl local",
      "GTP requires CUDA_GRAPHS_USE_NODE_PRIORITY=1 to make sure fine-grained GTP comms can be well overlapped with "
      "GEMMs when CudaGraph is enabled for Blackwell and later architecture.",
      S(te=TE), S(te=TE, env={"CUDA_GRAPHS_USE_NODE_PRIORITY": "1"})),
    R("gtp-average-in-collective", "LM106", f"{GTP} --ddp-average-in-collective", GTP,
      "GTP requires --ddp-average-in-collective off (the default); averaged collectives would need per-buffer "
      "1/gtp_remat scaling.", S(te=TE)),
    R("gtp-ckpt", "LM106", f"{GTP} --ckpt-format torch_dcp", GTP,
      "GTP supports only --ckpt-format 'torch' (legacy) or 'torch_dist', got 'torch_dcp'.", S(te=TE)),
    R("gtp-reshardable", "LM106",
      f"{GTP} --dist-ckpt-optim-fully-reshardable --distrib-optim-fully-reshardable-mem-efficient",
      f"{GTP} --dist-ckpt-optim-fully-reshardable",
      "GTP does not support the distributed-optimizer fully-reshardable + mem-efficient checkpoint mode. Disable "
      "--distrib-optim-fully-reshardable-mem-efficient (or --dist-ckpt-optim-fully-reshardable).", S(te=TE)),
    R("gtp-mxfp8-param-gather", "LM106", f"{GTP} --bf16 --fp8-format e4m3 --fp8-recipe mxfp8",
      f"{GTP} {MXFP8} --reuse-grad-buf-for-mxfp8-param-ag",
      "GTP + mxfp8 requires --fp8-param-gather (the optimizer maintains the fp8 shard; GTP does not keep or "
      "re-quantize a bf16 weight).", S(te=TE)),
    R("gtp-mxfp8-reuse", "LM106", f"{GTP} {MXFP8}", f"{GTP} {MXFP8} --reuse-grad-buf-for-mxfp8-param-ag",
      "GTP + mxfp8 + --fp8-param-gather requires --reuse-grad-buf-for-mxfp8-param-ag (MXFP8 params keep their own "
      "quantized storage; mapping them into the param buffer via replace_raw_data is unsupported).", S(te=TE)),
    R("ep-needs-experts", "LM701", "--expert-model-parallel-size 2", "--expert-model-parallel-size 2 --num-experts 4",
      "num_experts must be non None to use expert model parallelism"),
    R("ep-experts-multiple", "LM701", "--expert-model-parallel-size 4 --num-experts 6",
      "--expert-model-parallel-size 2 --num-experts 6", "Number of experts should be a multiple of expert model parallel_size."),
    R("dcp-fsdp2", "LM310", "--ckpt-format torch_dcp", f"{FSDP2} --ckpt-format torch_dcp",
      "--ckpt-format torch_dcp is only tested with FSDP."),
    R("dcp-tp", "LM106", f"{FSDP2} --ckpt-format torch_dcp --tensor-model-parallel-size 2", f"{FSDP2} --ckpt-format torch_dcp",
      "--ckpt-format torch_dcp is not tested with megatron tensor parallelism."),
    R("fsdp-dtensor-mfsdp", "LM310", "--ckpt-format fsdp_dtensor", MFSDP,
      "--ckpt-format fsdp_dtensor is only tested with Megatron FSDP."),
    R("emerging-fsdp2", "LM310", f"{FSDP2} --optimizer muon", FSDP2, "Emerging optimizer does not support Torch-FSDP2 for now."),
    # -- checks only older releases have (their validate_args' own --deterministic-mode asserts, 0.17's Muon) --
    R("det-flash-attn", "LM310", "--deterministic-mode --use-flash-attn", "--deterministic-mode",
      "Flash attention can not be used in deterministic mode.", S(env={"NCCL_ALGO": "Ring"}, core="0.18.2")),
    R("det-ce-fusion", "LM310", "--deterministic-mode --cross-entropy-loss-fusion", "--deterministic-mode",
      "Cross Entropy Fusion is currently not deterministic.", S(env={"NCCL_ALGO": "Ring"}, core="0.17.1")),
    R("det-nccl-algo", "LM504", "--deterministic-mode", "--deterministic-mode",
      "NCCL_ALGO must be one of ['Tree', 'Ring', 'CollnetDirect', 'CollnetChain', '^NVLS'].",
      S(env={"NCCL_ALGO": "NVLS"}, core="0.18.2"), S(env={"NCCL_ALGO": "Tree"}, core="0.18.2")),
    R("gdn-key-heads-tp", "LM106",
      "--experimental-attention-variant gated_delta_net --linear-attention-freq 4 --tensor-model-parallel-size 4 "
      "--linear-num-key-heads 6 --linear-num-value-heads 12",
      "--experimental-attention-variant gated_delta_net --linear-attention-freq 4 --tensor-model-parallel-size 2 "
      "--linear-num-key-heads 6 --linear-num-value-heads 12",
      "linear_num_key_heads must be a multiple of tensor_model_parallel_size.", S(core="0.17.1")),
    R("single-grouped-mxfp8", "LM401", "--num-experts 4 --moe-grouped-gemm --moe-single-grouped-weight",
      f"{MXFP8} --num-experts 4 --moe-grouped-gemm --moe-single-grouped-weight",
      "moe_single_grouped_weight is currently supported only with fp8 mode and fp8_recipe='mxfp8'.",
      S(te="2.14", core="0.18.2")),
    R("shared-expert-overlap-alltoall", "LM701",
      "--num-experts 4 --moe-shared-expert-intermediate-size 128 --moe-shared-expert-overlap --moe-token-dispatcher-type allgather",
      "--num-experts 4 --moe-shared-expert-intermediate-size 128 --moe-shared-expert-overlap --moe-token-dispatcher-type alltoall",
      "moe_shared_expert_overlap only works with alltoall token dispatcher.", S(core="0.17.1")),
    R("dsa-cp", "LM801", "--experimental-attention-variant dsa --disable-bias-linear --context-parallel-size 2 "
      "--cp-comm-type allgather", "--experimental-attention-variant dsa --disable-bias-linear",
      "Currently context parallelism is not supported by DSAttention!", S(core="0.18.2")),
    R("muon-ogr", "LM310", "--optimizer muon --overlap-grad-reduce", "--optimizer muon",
      "Muon optimizer does not support overlap grad reduce. Use dist_muon instead.", S(core="0.17.1")),
    R("muon-distopt", "LM310", "--optimizer dist_muon --use-distributed-optimizer", "--optimizer dist_muon",
      "Muon optimizer does not support distributed optimizer for now.", S(core="0.17.1")),
    R("muon-fsdp2", "LM310", f"{FSDP2} --optimizer dist_muon", "--optimizer dist_muon",
      "Muon optimizer does not support Torch-FSDP2 for now.", S(core="0.17.1")),
    R("muon-mfsdp", "LM310", f"{MFSDP} --optimizer dist_muon", "--optimizer dist_muon",
      "Muon optimizer does not support Megatron-FSDP for now.", S(core="0.17.1")),
    R("no-gloo-dist-ckpt", "LM310", "--disable-gloo-process-groups --use-distributed-optimizer --ckpt-format torch",
      "--disable-gloo-process-groups --use-distributed-optimizer", "assert args.use_dist_ckpt", bare=True),
    R("no-gloo-reshardable", "LM310",
      "--disable-gloo-process-groups --use-distributed-optimizer --dist-ckpt-optim-fully-reshardable "
      "--distrib-optim-fully-reshardable-mem-efficient",
      "--disable-gloo-process-groups --use-distributed-optimizer --dist-ckpt-optim-fully-reshardable",
      "--distrib-optim-fully-reshardable-mem-efficient requires -enable-gloo-process-groups"),
    R("inference-threshold-pp", "LM204", "--inference-batch-times-seqlen-threshold 16",
      "--inference-batch-times-seqlen-threshold 16 --pipeline-model-parallel-size 2",
      "--inference-batch-times-seqlen-threshold requires setting --pipeline-model-parallel-size > 1."),
    R("inference-threshold-cuda-graph", "LM204",
      "--inference-batch-times-seqlen-threshold 16 --pipeline-model-parallel-size 2 --cuda-graph-impl local",
      "--inference-batch-times-seqlen-threshold 16 --pipeline-model-parallel-size 2",
      "Pipeline-parallel microbatched inference is incompatible with CUDA graphs"),
    R("cpu-offload-precision-aware", "LM401", "--optimizer-cpu-offload",
      f"--bf16 --optimizer-cpu-offload {PRECISION_AWARE}",
      "The optimizer cpu offload must be used in conjunction with `--use-precision-aware-optimizer`, as the hybrid "
      "device optimizer reuses the code path of this flag."),
    R("cpu-offload-fp8-recipe", "LM401", f"{FP8} --optimizer-cpu-offload {PRECISION_AWARE} --fp8-param-gather --fp8-recipe tensorwise",
      f"{FP8} --optimizer-cpu-offload {PRECISION_AWARE} --fp8-param-gather --fp8-recipe delayed",
      "When `--fp8-param-gather` is enabled, the optimizer cpu offload must be used in conjunction with "
      "`--fp8-recipe delayed`.", S(te=TE)),
    R("delay-wgrad-no-gaf-te", "LM504", EP_OVERLAP, EP_OVERLAP,
      "disabling gradient_accumulation_fusion is only supported with TE >= 2.7.0 when enabling delay_wgrad_compute",
      S(te="2.6"), S(te=TE)),
    R("fine-grained-offload-te-impl", "LM504",
      "--fine-grained-activation-offloading --offload-modules core_attn --transformer-impl local",
      "--fine-grained-activation-offloading --offload-modules core_attn",
      "Fine-grained activation offloading is only supported with transformer_engine implementation",
      S(te=TE, env={"NVTE_CPU_OFFLOAD_V1": "1"})),
    R("fine-grained-offload-env", "LM504", "--fine-grained-activation-offloading --offload-modules core_attn",
      "--fine-grained-activation-offloading --offload-modules core_attn",
      "For fine-grained activation offloading with TE >= 2.10.0, NVTE_CPU_OFFLOAD_V1 should be set to 1 to avoid "
      "offloading weights.", S(te=TE), S(te=TE, env={"NVTE_CPU_OFFLOAD_V1": "1"})),
    R("cuda-graph-expandable-segments", "LM504", "--cuda-graph-impl transformer_engine", "--cuda-graph-impl transformer_engine",
      "Setting NCCL_GRAPH_REGISTER=0 to avoid illegal memory access when using CUDA Graph with "
      "PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True.",
      S(te=TE, env={"PYTORCH_CUDA_ALLOC_CONF": "expandable_segments:True"}),
      S(te=TE, env={"PYTORCH_CUDA_ALLOC_CONF": "expandable_segments:True", "NCCL_GRAPH_REGISTER": "0"})),
    # -- the microbatch calculator, initialize_megatron ---------------------------------------------
    R("global-batch", "LM003", "--global-batch-size 12 --eval-global-batch-size 16",
      "--global-batch-size 16 --eval-global-batch-size 16",
      "global batch size (12) is not divisible by micro batch size (1) times data parallel size (8)"),
    R("global-batch-gtp", "LM003", "--tensor-parallel-num-weight-shards 2", GTP,
      "global batch size (4) is not divisible by micro batch size (1) times data parallel size (8)", S(te=TE)),
    R("microbatches-at-least-one", "LM003", "--decrease-batch-size-if-needed --global-batch-size 4 --eval-global-batch-size 8",
      "--decrease-batch-size-if-needed --global-batch-size 12 --eval-global-batch-size 8",
      "number of microbatches should be at least 1, got 0."),
    R("gtp-needs-te", "LM504", GTP, GTP,
      "GTP requires TransformerEngine >= 2.19. Set both --gtp_remat-weight-remat-size and "
      "--expert-generalized-tensor-parallel-remat-size to 1 to disable GTP.", S(te=ABSENT), S(te=TE)),
    R("ucc-max-connections", "LM504", "--pipeline-model-parallel-comm-backend ucc --pipeline-model-parallel-size 2",
      "--pipeline-model-parallel-comm-backend ucc --pipeline-model-parallel-size 2",
      "UCC-backend requires CUDA_DEVICE_MAX_CONNECTIONS > 1", S(env={"CUDA_DEVICE_MAX_CONNECTIONS": "1"}), S()),
    # -- ModelParallelConfig / TransformerConfig -----------------------------------------------------
    R("defer-wgrad-limit", "LM204", "--defer-embedding-wgrad-compute --pipeline-model-parallel-size 2 --wgrad-deferral-limit -1",
      "--defer-embedding-wgrad-compute --pipeline-model-parallel-size 2",
      "Wgrad deferral limit should be greater than or equal to 0 when it is enabled!"),
    R("heads-tp", "LM106", "--tensor-model-parallel-size 8", "--tensor-model-parallel-size 4",
      "num_attention_heads (4) must be a multiple of tensor_model_parallel_size (8)."),
    R("query-groups-tp", "LM106", "--tensor-model-parallel-size 4 --group-query-attention --num-query-groups 3",
      "--tensor-model-parallel-size 4 --group-query-attention --num-query-groups 2",
      "num_query_groups (3) must be a multiple or divisor of tensor_model_parallel_size (4)."),
    R("gdn-key-heads", "LM106",
      "--experimental-attention-variant gated_delta_net --linear-attention-freq 4 --tensor-model-parallel-size 4 "
      "--linear-num-key-heads 6 --linear-num-value-heads 12",
      "--experimental-attention-variant gated_delta_net --linear-attention-freq 4 --tensor-model-parallel-size 2 "
      "--linear-num-key-heads 6 --linear-num-value-heads 12",
      "self.linear_num_key_heads=6 must be a multiple of (self.tensor_model_parallel_size=4 * "
      "self.context_parallel_size=1)."),
    R("fp8-bf16-layers-delayed", "LM401", f"{FP8} --first-last-layers-bf16", f"{FP8} --first-last-layers-bf16 --fp8-recipe tensorwise",
      "Delayed scaling does not support first / last layer in BF16.", S(te=TE)),
    R("fp8-bf16-layers-start", "LM204",
      f"{FP8} --fp8-recipe tensorwise --first-last-layers-bf16 --pipeline-model-parallel-size 4 --num-layers-at-start-in-bf16 3",
      f"{FP8} --fp8-recipe tensorwise --first-last-layers-bf16 --pipeline-model-parallel-size 4 --num-layers-at-start-in-bf16 2",
      "num_layers_at_start_in_bf16 (3) must be between 0 and number of layers per pipeline stage (2).", S(te=TE)),
    R("fp8-bf16-layers-end", "LM204",
      f"{FP8} --fp8-recipe tensorwise --first-last-layers-bf16 --pipeline-model-parallel-size 4 --num-layers-at-end-in-bf16 3",
      f"{FP8} --fp8-recipe tensorwise --first-last-layers-bf16 --pipeline-model-parallel-size 4 --num-layers-at-end-in-bf16 2",
      "num_layers_at_end_in_bf16 (3) must be between 0 and number of layers per pipeline stage (2).", S(te=TE)),
    R("fp8-custom-factory", "LM401", f"{FP8} --fp8-recipe custom",
      f"{FP8} --fp8-recipe custom --fp8-quantizer-factory package.module.quantizer_factory",
      "fp8_quantizer_factory must be provided when fp8_recipe is 'custom'. Specify a Python import path (e.g., "
      "package.module.quantizer_factory) via --fp8-quantizer-factory.", S(te=TE)),
    R("fp8-param-without-fp8", "LM401", "--fp8-param-gather --use-distributed-optimizer",
      f"{FP8} --fp8-param-gather --use-distributed-optimizer", "fp8_param must be used together with fp8 mode.", S(te=TE)),
    R("fp8-output-proj-fp8", "LM401", "--fp8-output-proj", "--bf16 --fp8-format e4m3 --fp8-recipe mxfp8 --fp8-output-proj",
      "fp8_output_proj must be used together with fp8 mode.", S(te=TE)),
    R("fp8-output-proj-mxfp8", "LM401", f"{FP8} --fp8-output-proj", "--bf16 --fp8-format e4m3 --fp8-recipe mxfp8 --fp8-output-proj",
      "fp8_output_proj requires fp8_recipe='mxfp8', got 'delayed'.", S(te=TE)),
    R("fp4-custom-factory", "LM401", "--bf16 --fp4-format e2m1 --fp4-recipe custom",
      "--bf16 --fp4-format e2m1 --fp4-recipe custom --fp4-quantizer-factory package.module.quantizer_factory",
      "fp4_quantizer_factory must be provided when fp4_recipe is 'custom'. Specify a Python import path (e.g., "
      "package.module.quantizer_factory) via --fp4-quantizer-factory.", S(te=TE)),
    R("inference-moe-etp", "LM106",
      f"--transformer-impl inference_optimized {MOE} --normalization RMSNorm --moe-router-dtype fp32 --expert-tensor-parallel-size 2",
      f"--transformer-impl inference_optimized {MOE} --normalization RMSNorm --moe-router-dtype fp32",
      "Inference-optimized MoE layers does not support expert tensor parallelism."),
    R("moe-single-grouped-te", "LM504", "--num-experts 4 --moe-grouped-gemm --moe-single-grouped-weight --use-transformer-engine-op-fuser",
      "--num-experts 4 --moe-grouped-gemm --moe-single-grouped-weight --use-transformer-engine-op-fuser",
      "moe_single_grouped_weight and moe_single_grouped_bias require transformer-engine>=2.14.0, but your version is 2.12.",
      S(te="2.12"), S(te="2.14")),
    R("shared-expert-overlap-dispatcher", "LM701", "--num-experts 4 --moe-shared-expert-intermediate-size 128 --moe-shared-expert-overlap",
      "--num-experts 4 --moe-shared-expert-intermediate-size 128 --moe-shared-expert-overlap --moe-token-dispatcher-type alltoall",
      "moe_shared_expert_overlap only works with alltoall or flex token dispatcher."),
    R("cpu-offload-pp", "LM204", "--cpu-offloading-num-layers 1 --pipeline-model-parallel-size 2", "--cpu-offloading-num-layers 1",
      "Currently there is no support for Pipeline parallelism with CPU offloading"),
    R("recompute-num-layers", "LM204", "--recompute-granularity full --recompute-method uniform --pipeline-model-parallel-size 2",
      "--recompute-granularity full --recompute-method uniform --pipeline-model-parallel-size 2 --recompute-num-layers 1",
      "When using recompute_granularity: full recompute_num_layers must be between 1 and num_layers_per_pipeline_rank: 4"),
    R("distribute-saved-sp", "LM106", f"--tensor-model-parallel-size 2 --sequence-parallel {DSR}", f"--tensor-model-parallel-size 2 {DSR}",
      "distribute_saved_activations: True must be false when sequence parallel is enabled: True"),
    R("shared-experts-recompute", "LM701",
      "--num-experts 4 --moe-shared-expert-intermediate-size 128 --moe-token-dispatcher-type alltoall "
      "--recompute-granularity selective --recompute-modules shared_experts --moe-shared-expert-overlap",
      "--num-experts 4 --moe-shared-expert-intermediate-size 128 --moe-token-dispatcher-type alltoall "
      "--recompute-granularity selective --recompute-modules shared_experts",
      "shared_experts recompute cannot work with --moe-shared-expert-overlap."),
    R("fp8-recompute-delayed", "LM401", f"{FP8} --recompute-granularity selective --recompute-modules layernorm",
      f"{FP8} --fp8-recipe tensorwise --recompute-granularity selective --recompute-modules layernorm",
      "Delayed scaling does not support moe_act and layernorm recompute for fp8.", S(te=TE)),
    R("fp8-recompute-te", "LM504", f"{FP8} --fp8-recipe tensorwise --recompute-granularity selective --recompute-modules layernorm",
      f"{FP8} --fp8-recipe tensorwise --recompute-granularity selective --recompute-modules layernorm",
      "moe_act and layernorm recompute for fp8 needs transformer-engine>=2.6.0dev0, but your version is 2.5.",
      S(te="2.5"), S(te=TE)),
    R("uneven-with-accounting", "LM203",
      "--pipeline-model-parallel-size 2 --decoder-first-pipeline-num-layers 4 --account-for-embedding-in-pipeline-split",
      "--pipeline-model-parallel-size 2 --decoder-first-pipeline-num-layers 4",
      "num_layers_in_first_pipeline_stage and num_layers_in_last_pipeline_stage cannot beset at the same time with "
      "account_for_embedding_in_pipeline_splitand account_for_loss_in_pipeline_split"),
    *(R(f"layout-layers-{line}", "LM203", f"--pipeline-model-parallel-size 2 --pipeline-model-parallel-layout '{bad}'{extra}",
        f"--pipeline-model-parallel-size 2 --pipeline-model-parallel-layout '{good}'{extra}", message)
      for line, bad, good, extra, message in (  # validate_layer_layout (pipeline_parallel_layer_layout.py:85-119)
          (94, "tttt|ttttL", "Etttt|ttttL", "", "The first layer must be embedding, but got LayerType.decoder"),
          (97, "Etttt|tttt", "Etttt|ttttL", "", "The last layer must be loss, but got LayerType.decoder"),
          (102, "EEtttt|ttttL", "Etttt|ttttL", "", "Embedding must be specified exactly once"),
          (105, "Etttt|ttttLL", "Etttt|ttttL", "", "Loss must be specified exactly once"),
          (106, "Ettt|ttttL", "Etttt|ttttL", "", "Number of decoder layers 7must match num_layers 8"),
          (111, "Etttt|ttttmL", "Etttt|ttttL", "", "Number of mtp layers in layout must match mtp_num_layers"),
          (116, "Etttt|tttmtL", "Etttt|ttttmL", " --mtp-num-layers 1 --position-embedding-type rope --no-rope-fusion",
           "decoder layers must be placed before MTP layers"),
      )),
    R("layout-with-split-args", "LM203",
      "--pipeline-model-parallel-size 2 --pipeline-model-parallel-layout 'Etttt|ttttL' --decoder-first-pipeline-num-layers 4",
      "--pipeline-model-parallel-size 2 --pipeline-model-parallel-layout 'Etttt|ttttL'",
      "pipeline_model_parallel_layout cannot be set with other pipeline layout arguments. "
      "self.num_layers_in_first_pipeline_stage=4, self.num_layers_in_last_pipeline_stage=None, "
      "self.account_for_embedding_in_pipeline_split=False, self.account_for_loss_in_pipeline_split=False."),
    R("uneven-first-positive", "LM203", "--pipeline-model-parallel-size 2 --decoder-first-pipeline-num-layers 0",
      "--pipeline-model-parallel-size 2 --decoder-first-pipeline-num-layers 4",
      "num_layers_in_first_pipeline_stage must be larger than 0"),
    R("uneven-first-vpp", "LM203",
      "--pipeline-model-parallel-size 2 --num-virtual-stages-per-pipeline-rank 2 --decoder-first-pipeline-num-layers 3",
      "--pipeline-model-parallel-size 2 --num-virtual-stages-per-pipeline-rank 2 --decoder-first-pipeline-num-layers 4",
      "number of layers at first stage: 3must be divisible by virtual pipelineparallel degree 2"),
    R("uneven-last-positive", "LM203", "--pipeline-model-parallel-size 2 --decoder-last-pipeline-num-layers 0",
      "--pipeline-model-parallel-size 2 --decoder-last-pipeline-num-layers 4",
      "num_layers_in_last_pipeline_stage must be larger than 0"),
    R("uneven-last-vpp", "LM203",
      "--pipeline-model-parallel-size 2 --num-virtual-stages-per-pipeline-rank 2 --decoder-last-pipeline-num-layers 3",
      "--pipeline-model-parallel-size 2 --num-virtual-stages-per-pipeline-rank 2 --decoder-last-pipeline-num-layers 4",
      "number of layers at last stage: 3must be divisible by virtual pipelineparallel degree 2"),
    R("uneven-mismatch", "LM203", "--pipeline-model-parallel-size 2 --decoder-first-pipeline-num-layers 8",
      "--pipeline-model-parallel-size 2 --decoder-first-pipeline-num-layers 4",
      "Mismatch: 0 middle layers remaining but 1 middle PP stages available."),
    R("uneven-middle", "LM203", "--pipeline-model-parallel-size 4 --decoder-first-pipeline-num-layers 3",
      "--pipeline-model-parallel-size 4 --decoder-first-pipeline-num-layers 2",
      "number of layers at middle stage: 5 must be divisible bythe middle pipeline model parallel size 3"),
    R("uneven-middle-vpp", "LM203",
      "--pipeline-model-parallel-size 3 --num-virtual-stages-per-pipeline-rank 2 --decoder-first-pipeline-num-layers 2",
      "--pipeline-model-parallel-size 3 --num-virtual-stages-per-pipeline-rank 2 --decoder-first-pipeline-num-layers 4",
      "number of layers on each middle pipeline rank:3 must be divisible by virtualpipeline parallel degree 2", S(ws=6)),
    R("accounted-vpp-pp", "LM203",
      "--pipeline-model-parallel-size 2 --num-virtual-stages-per-pipeline-rank 2 --account-for-embedding-in-pipeline-split",
      "--num-layers 7 --pipeline-model-parallel-size 2 --num-virtual-stages-per-pipeline-rank 2 "
      "--account-for-embedding-in-pipeline-split",
      "num_layers: 9 after enableaccount_for_embedding_in_pipeline_split or account_for_loss_in_pipeline_split must be "
      "divisibleby pipeline_model_parallel_size 2"),
    R("accounted-vpp-per-rank", "LM203",
      "--num-layers 9 --pipeline-model-parallel-size 2 --num-virtual-stages-per-pipeline-rank 2 "
      "--account-for-embedding-in-pipeline-split",
      "--num-layers 7 --pipeline-model-parallel-size 2 --num-virtual-stages-per-pipeline-rank 2 "
      "--account-for-embedding-in-pipeline-split",
      "number of layers on each pipeline rank: 5(after enable account_for_embedding_in_pipeline_split or "
      "account_for_loss_in_pipeline_split) must be divisible byvirtual_pipeline_model_parallel_size2"),
    R("moe-bias-etp", "LM106", "--tensor-model-parallel-size 2 --num-experts 4",
      "--tensor-model-parallel-size 2 --num-experts 4 --disable-bias-linear", "Bias in Moe is only supported when ETP==1"),
    R("router-padding-quantization", "LM401",
      "--num-experts 4 --moe-token-dispatcher-type alltoall --moe-router-padding-for-quantization",
      f"{FP8} --num-experts 4 --moe-token-dispatcher-type alltoall --moe-router-padding-for-quantization",
      "fp8/fp4 must be specified when moe_router_padding_for_quantization is True.", S(te=TE)),
    R("cp-comm-type-length", "LM801", "--context-parallel-size 2 --cp-comm-type p2p a2a",
      "--context-parallel-size 2 --cp-comm-type p2p p2p p2p p2p a2a a2a a2a a2a",
      "Length of cp_comm_type (2) should equal to the total number of transformer layers (8)!"),
    R("dsa-cp-allgather", "LM801", "--experimental-attention-variant dsa --disable-bias-linear --context-parallel-size 2",
      "--experimental-attention-variant dsa --disable-bias-linear --context-parallel-size 2 --cp-comm-type allgather",
      "DSAttention context parallelism currently supports cp_comm_type=allgather only."),
    R("batch-invariant-cp", "LM801",
      "--batch-invariant-mode --attention-backend flash --flash-attention-version 3 --attention-dropout 0.0 "
      "--context-parallel-size 2",
      "--batch-invariant-mode --attention-backend flash --flash-attention-version 3 --attention-dropout 0.0",
      "Batch invariant mode does not support context parallelism"),
    # -- DistributedDataParallelConfig / OptimizerConfig ---------------------------------------------
    R("reuse-grad-buf-needs-fp8-param", "LM401", "--reuse-grad-buf-for-mxfp8-param-ag",
      f"{MXFP8} --reuse-grad-buf-for-mxfp8-param-ag", "Reuse grad buffer only when keeping params in MXFP8.", S(te=TE)),
    R("nccl-ub-expandable-segments", "LM504", "--use-nccl-ub", "--use-nccl-ub",
      "PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True is currently not supported with nccl_ub due to compatibility "
      "issue with torch.cuda.MemPool API.",
      S(torch="2.10.0", env={"PYTORCH_CUDA_ALLOC_CONF": "expandable_segments:True"}), S(torch="2.10.0")),
    R("fp32-patterns-with-fp32-grads", "LM401", "--bf16 --ddp-param-name-patterns-for-fp32-local-accumulation router",
      "--bf16 --grad-reduce-in-bf16 --ddp-param-name-patterns-for-fp32-local-accumulation router",
      "Only need to explicitly specify param_name patterns for FP32 local accumulation if .main_grads aren't already "
      "in FP32"),
    R("num-buckets-positive", "LM310", "--ddp-num-buckets 0", "--ddp-num-buckets 2", "num_buckets must be greater than 0"),
    R("reuse-grad-buf-with-ops", "LM310",
      f"{MXFP8} --reuse-grad-buf-for-mxfp8-param-ag --overlap-grad-reduce --overlap-param-gather "
      "--pipeline-model-parallel-size 2 --num-virtual-stages-per-pipeline-rank 2 --ckpt-format torch "
      "--overlap-param-gather-with-optimizer-step",
      f"{MXFP8} --reuse-grad-buf-for-mxfp8-param-ag --overlap-grad-reduce --overlap-param-gather "
      "--pipeline-model-parallel-size 2 --num-virtual-stages-per-pipeline-rank 2 --ckpt-format torch",
      "overlap_param_gather_with_optimizer_step is not supported with reuse_grad_buf_for_mxfp8_param_ag.", S(te=TE)),
    R("precision-aware-adam", "LM401", f"{PRECISION_AWARE} --optimizer sgd", PRECISION_AWARE,
      "--use-precision-aware-optimizer only supported with adam", S(te=TE)),
    R("precision-aware-distopt", "LM401", "--use-precision-aware-optimizer", PRECISION_AWARE,
      "--use-precision-aware-optimizer only supported with distributed optimizer", S(te=TE)),
    R("precision-aware-needs-te", "LM504", PRECISION_AWARE, PRECISION_AWARE,
      "--use-precision-aware-optimizer requires FusedAdam from TransformerEngine, but not found.", S(te=ABSENT), S(te=TE)),
    R("main-grads-dtype-fp32", "LM401", "--bf16 --main-grads-dtype bf16", f"--bf16 --main-grads-dtype bf16 {PRECISION_AWARE}",
      "main_grads_dtype can only be fp32 when not using precision-aware optimizer", S(te=TE)),
    R("main-params-dtype-fp32", "LM401", "--main-params-dtype fp16", f"--main-params-dtype fp16 {PRECISION_AWARE}",
      "main_params_dtype can only be fp32 when not using precision-aware optimizer", S(te=TE)),
    R("exp-avg-dtype-fp32", "LM401", "--exp-avg-dtype bf16", f"--exp-avg-dtype bf16 {PRECISION_AWARE}",
      "exp_avg_dtype can only be fp32 when not using precision-aware optimizer", S(te=TE)),
    R("exp-avg-sq-dtype-fp32", "LM401", "--exp-avg-sq-dtype bf16", f"--exp-avg-sq-dtype bf16 {PRECISION_AWARE}",
      "exp_avg_sq_dtype can only be fp32 when not using precision-aware optimizer", S(te=TE)),
    # -- the process grid (initialize_model_parallel, DP313) ------------------------------------------
    R("grid-expert", "DP313", "--pipeline-model-parallel-size 4 --expert-model-parallel-size 8 --num-experts 8",
      "--pipeline-model-parallel-size 4 --expert-model-parallel-size 2 --num-experts 8",
      "world_size (8) is not divisible by expert_tensor_model_pipeline_parallel size (32)"),
    R("grid-expert-etp", "DP313", f"--tensor-model-parallel-size 2 --expert-model-parallel-size 8 {MOE} --num-experts 8",
      f"--tensor-model-parallel-size 2 --expert-model-parallel-size 4 {MOE} --num-experts 8",
      "world_size (8) is not divisible by expert_tensor_model_pipeline_parallel size (16)"),
    R("grid-order", "DP313", "--use-tp-pp-dp-mapping --pipeline-model-parallel-size 2 --expert-model-parallel-size 2 --num-experts 4",
      "--pipeline-model-parallel-size 2 --expert-model-parallel-size 2 --num-experts 4",
      "When not using pp-last rank ordering, the data parallel size of the attention and moe layers must be the same"),
    R("grid-dp-instances", "DP313", "--use-distributed-optimizer --num-distributed-optimizer-instances 3",
      "--use-distributed-optimizer --num-distributed-optimizer-instances 2",
      "Data parallel size should be divisible by partial DistOpt shard factor"),
    R("grid-expert-instances", "DP313",
      "--use-distributed-optimizer --num-distributed-optimizer-instances 4 --num-experts 8 --expert-model-parallel-size 4",
      "--use-distributed-optimizer --num-distributed-optimizer-instances 2 --num-experts 8 --expert-model-parallel-size 4",
      "Expert data parallel size should be divisible by partial DistOpt shard factor"),
    R("grid-gtp-instances", "DP313", f"{GTP} --use-distributed-optimizer --num-distributed-optimizer-instances 2",
      f"{GTP} --use-distributed-optimizer", "GTP_remat with num_distributed_optimizer_instances > 1 is not yet supported.",
      S(te=TE)),
    R("grid-hybrid-cp-even", "DP313", HCP, HCP, "Hybrid context parallel requires an even number of ranks", S(ws=3), S(ws=4)),
]
IDS = [r.id for r in ROWS]


def _cases():
    """(row id, failing?) -> (megatron-core release or None, reference case)."""
    out = {}
    for row in ROWS:
        _code, bad, good, _message, bad_setup, good_setup, _bare = row.values
        for failing, extra, setup in ((True, bad, bad_setup), (False, good, good_setup)):
            out[(row.id, failing)] = setup["core"], reference_case(
                shlex.split(f"{BASE} {extra}"), setup["ws"], setup["arch"], setup["env"], setup["te"], setup["torch"])
    return out


_REAL: dict = {}


def reference_of(core, every_row: bool = False):
    """(row id, failing?) -> the real result of megatron-core ``core`` (None: the default release) for the rows
    run on it, or for every row (skips without its environment)."""
    if (core, every_row) not in _REAL:
        cases = {key: case for key, (c, case) in _cases().items() if every_row or c == core}
        try:
            _REAL[core, every_row] = dict(zip(cases, run_reference(list(cases.values()), core)))
        except pytest.skip.Exception as exc:
            _REAL[core, every_row] = exc
    if isinstance(_REAL[core, every_row], BaseException):
        raise _REAL[core, every_row]
    return _REAL[core, every_row]


def _check(run_cli, tmp_path, extra: str, setup: dict) -> dict:
    script = write_launch(tmp_path / "launch.sh", f"{BASE} {extra}", setup["ws"], setup["env"], setup["core"])
    _, out, _ = run_cli("check", script, *target_flags(setup["arch"], setup["te"], setup["torch"]), "--format", "json")
    result = json.loads(out)["results"][0]
    assert result["error"] is None, result["error"]
    return result


def _quoted(message: str, bare: bool) -> str:
    return f"`{message}`" if bare else f'"{message}"'


@pytest.mark.parametrize("code, bad, good, message, bad_setup, good_setup, bare", ROWS, ids=IDS)
def test_the_failing_launch_gets_the_error(run_cli, tmp_path, code, bad, good, message, bad_setup, good_setup, bare):
    result = _check(run_cli, tmp_path, bad, bad_setup)
    errors = [f for f in result["findings"] if f["severity"] == "error" and f["code"] == code]
    assert any(_quoted(message, bare) in f["message"] for f in errors), (
        f"no {code} error quotes {message!r}: {[f['code'] + ' ' + f['message'] for f in result['findings']]}")


@pytest.mark.parametrize("code, bad, good, message, bad_setup, good_setup, bare", ROWS, ids=IDS)
def test_the_other_launch_gets_no_error(run_cli, tmp_path, code, bad, good, message, bad_setup, good_setup, bare):
    result = _check(run_cli, tmp_path, good, good_setup)
    errors = [f["code"] + " " + f["message"] for f in result["findings"] if f["severity"] == "error"]
    assert not errors


@pytest.mark.parametrize("code, bad, good, message, bad_setup, good_setup, bare", ROWS, ids=IDS)
def test_megatron_lm_fails_and_launches_the_same(code, bad, good, message, bad_setup, good_setup, bare, request):
    row = request.node.callspec.id
    failing, passing = reference_of(bad_setup["core"])[(row, True)], reference_of(good_setup["core"])[(row, False)]
    if bare:  # an assert without a message
        assert failing["error"] == "" and failing.get("kind") == "AssertionError", failing
    else:
        assert failing["error"] == message
    assert passing["error"] is None, passing["error"]


def test_every_check_of_the_table_has_a_row():
    """A check added to assertions.py needs a launch here that fails it (grouped-gemm-arch: see below)."""
    from overlap_cli.frameworks.megatron_lm.assertions import TABLE

    missing = [c.id for c in TABLE if c.id not in IDS and c.id != "grouped-gemm-arch"]
    assert missing == []


def test_grouped_gemm_below_compute_capability_8(tmp_path):
    """No GPU the CLI names has compute capability < 8 (only --detect finds one): the resolver on a target that
    has it, the only input the check reads besides the flag."""
    from overlap_cli.frameworks.megatron_lm.args import load_launch
    from overlap_cli.frameworks.megatron_lm.resolver import resolve
    from overlap_cli.launch_profile.profile import Target

    script = write_launch(tmp_path / "launch.sh", f"{BASE} --num-experts 4 --moe-grouped-gemm", 8, {})
    messages = {}
    for cc in ("7.0", "8.0", None):
        target = Target()
        if cc:
            target.set("compute_capability", cc, "detected")
        messages[cc] = [a.message for a in resolve(load_launch(str(script)), target).assertions]
    assert messages["7.0"] == ["Unsupported compute capability for GroupedGEMM kernels."]
    assert messages["8.0"] == [] and messages[None] == []


def test_an_unknown_expansion_that_may_give_a_flag_makes_it_a_warning(run_cli, tmp_path):
    """A check that reads a flag the launch does not give, beside an unquoted expansion that may hold any flags,
    may not fail: a warning naming what the expansion would have to give (rules/lm.py open_words_note)."""
    words = f"{BASE} --tensor-model-parallel-size 2 --num-experts 4"
    for tail, severity in (("", "error"), (" $EXTRA_ARGS", "warning")):
        result = _check(run_cli, tmp_path, words.split(BASE, 1)[1] + tail, S())
        found = [f for f in result["findings"] if f["code"] == "LM106"]
        assert [f["severity"] for f in found] == [severity]
        assert ("unless $EXTRA_ARGS gives --expert-tensor-parallel-size, --disable-bias-linear" in found[0]["message"]) \
            is (severity == "warning")


# -- every row on every older megatron-core release ---------------------------------------------------------
OLDER = [v for v in CORE.versions() if v != CORE.newest()]


@pytest.mark.parametrize("core", OLDER)
@pytest.mark.parametrize("failing", [True, False], ids=["bad", "good"])
@pytest.mark.parametrize("code, bad, good, message, bad_setup, good_setup, bare", ROWS, ids=IDS)
def test_each_launch_does_on_an_older_release_what_that_release_does(run_cli, tmp_path, code, bad, good, message,
                                                                    bad_setup, good_setup, bare, failing, core, request):
    """The rows' launches checked against an older release (its checks, messages and parser) and run by that
    release's real code: where it fails, the tool reports that error (argparse's exit: the input error); where it
    launches, no error."""
    row = request.node.callspec.id.rsplit("-", 2)[0]
    real = reference_of(core, every_row=True)[(row, failing)]
    extra, setup = (bad, bad_setup) if failing else (good, good_setup)
    script = write_launch(tmp_path / "launch.sh", f"{BASE} {extra}", setup["ws"], setup["env"], core)
    _, out, _ = run_cli("check", script, *target_flags(setup["arch"], setup["te"], setup["torch"]), "--format", "json")
    result = json.loads(out)["results"][0]
    errors = [f["message"] for f in result["findings"] if f["severity"] == "error"]
    if real["error"] is None:
        assert result["error"] is None and not errors, (result["error"], errors)
    elif real["stage"] == "argparse":
        assert result["error"] is not None, (real["error"], errors)
    elif real["error"]:
        assert any(_quoted(real["error"], False) in e for e in errors), (real["error"], result["error"], errors)
    else:  # a bare assert
        assert errors, (real, result["error"])
