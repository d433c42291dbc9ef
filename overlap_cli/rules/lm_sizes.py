"""The parallel-size checks of a Megatron-LM launch: LM003 (batch sizes), LM106 (tensor / expert tensor
parallelism), LM204 (pipeline parallelism), LM310 (sharded data parallelism and the optimizer), LM701
(expert parallelism), LM801 (context parallelism).

Each reports the checks of frameworks/megatron_lm/assertions.py with its code: what validate_args, the
microbatch calculator and the configs Megatron-LM builds next (TransformerConfig, the DDP and optimizer
configs) assert, quoting the message the launch prints, at the flag it is about.
"""

from __future__ import annotations

from overlap_cli.rules.lm import LM, assertion_findings
from overlap_cli.rules.registry import rule


def _table(view, code: str):
    from overlap_cli.frameworks.megatron_lm.assertions import ids_of

    yield from assertion_findings(view, code, ids_of(code))


@rule("LM003", "batch-size-not-divisible", "error", "A batch size that micro batch × data-parallel size does not divide",
      frameworks=LM)
def batch_size_not_divisible(view):
    """
    ## What it does
    Flags a global batch size (and the evaluation batch size, which defaults to it) that micro batch
    size × data-parallel size does not divide. The data-parallel size is the world size over
    TP · PP · CP (and the GTP weight-shard degree), so it needs the world size: torchrun's sizes on the
    launch, else `--world-size`.

    ## Why it matters
    `validate_args` asserts the evaluation batch first (megatron-core 0.19.2,
    `megatron/training/arguments.py:694`): `eval_global_batch_size (12) must be divisible by
    eval_micro_batch_size (2) * data_parallel_size (8)`; then the microbatch calculator, built at
    `initialize_megatron`, asserts the training batch (`megatron/core/num_microbatches_calculator.py:381`):
    `global batch size (12) is not divisible by micro batch size (2) times data parallel size (8)`. With
    `--decrease-batch-size-if-needed` the batch is rounded down instead, and a batch smaller than one
    micro batch per rank stops with `number of microbatches should be at least 1, got 0.`

    ## Example
    Checked with `--world-size 8`:
    ```yaml
    MODEL_ARGS:
      --micro-batch-size: 2
      --global-batch-size: 12
    ```

    ## Fix
    None offered: choose a global batch size that is a multiple of micro batch × DP (16 or 32 here).
    """
    yield from _table(view, "LM003")


@rule("LM106", "tensor-parallel-size-rejected", "error", "A tensor or expert-tensor parallel size the launch rejects",
      frameworks=LM)
def tensor_parallel_size_rejected(view):
    """
    ## What it does
    Flags what Megatron-LM rejects about the tensor-parallel sizes: attention heads or query groups that TP
    does not divide, MoE layers with bias when expert tensor parallelism (ETP, TP unless
    `--expert-tensor-parallel-size`) is above 1, GTP weight shards (`--tensor-parallel-num-weight-shards`)
    that are not a multiple of TP and what GTP needs, `--distribute-saved-activations` at TP = 1 or with
    sequence parallelism, `--ckpt-format torch_dcp` with TP, inference-optimized MoE with ETP, gated
    delta-net heads that TP × CP does not divide.

    ## Why it matters
    Each stops the launch: `TransformerConfig` (megatron-core 0.19.2,
    `megatron/core/transformer/transformer_config.py:1323-1380`, `2280`) raises for instance
    `num_attention_heads (6) must be a multiple of tensor_model_parallel_size (4).`, and
    `Bias in Moe is only supported when ETP==1` for a MoE model without `--disable-bias-linear` at TP > 1
    (ETP follows TP, `megatron/training/arguments.py:569`); `validate_args` asserts the rest
    (`arguments.py:416`, `1371`, `1467-1547`, `1614`).

    ## Example
    ```yaml
    MODEL_ARGS:
      --tensor-model-parallel-size: 4
      --num-attention-heads: 6
    ```

    ## Fix
    None offered: TP is the model's sharding; pick a TP that divides the heads (and groups), or
    `--disable-bias-linear` / `--expert-tensor-parallel-size 1` for MoE.
    """
    yield from _table(view, "LM106")


@rule("LM204", "pipeline-parallel-setting-rejected", "error", "A setting that pipeline parallelism rules out",
      frameworks=LM)
def pipeline_parallel_setting_rejected(view):
    """
    ## What it does
    Flags settings the launch rejects with pipeline parallelism (or without it): activation CPU offloading
    (`--cpu-offloading-num-layers`), Torch-FSDP2 and `--ckpt-format torch_dcp` with PP > 1,
    `--inference-batch-times-seqlen-threshold` with PP = 1, FP8 BF16 edge layers
    (`--num-layers-at-start-in-bf16`) beyond one pipeline stage's layers, a negative
    `--wgrad-deferral-limit` with deferred embedding wgrad, full recompute without
    `--recompute-num-layers`.

    ## Why it matters
    `validate_args` (megatron-core 0.19.2, `megatron/training/arguments.py:1000`, `1616`, `1775-1778`) and
    the configs built after it (`megatron/core/transformer/transformer_config.py:1412-1430`, `1714`,
    `1742`; `megatron/core/model_parallel_config.py:556`) stop the launch, for instance with
    `Currently there is no support for Pipeline parallelism with CPU offloading`.

    ## Example
    ```yaml
    MODEL_ARGS:
      --num-layers: 8
      --pipeline-model-parallel-size: 2
      --cpu-offloading-num-layers: 1
    ```

    ## Fix
    None offered: drop the setting or the pipeline parallelism.
    """
    yield from _table(view, "LM204")


@rule("LM310", "sharded-data-parallel-rejected", "error", "An FSDP, distributed-optimizer or optimizer setting the launch rejects",
      frameworks=LM)
def sharded_data_parallel_rejected(view):
    """
    ## What it does
    Flags what the launch rejects about its data-parallel mode: Torch-FSDP2 with gradient accumulation
    fusion, tied embeddings or a checkpoint format other than `torch_dist` / `torch_dcp`; Megatron-FSDP
    with an optimizer other than adam / sgd, a checkpoint format other than `fsdp_dtensor`, single grouped
    MoE weights or meta-device init without sharding; `--fsdp-manual-registration` without Megatron-FSDP
    and `--use-nccl-ub`; emerging optimizers (muon, ...) with FSDP or another checkpoint format; the
    distributed optimizer without Gloo groups (`--disable-gloo-process-groups`) and without a distributed
    checkpoint; MXFP8 grad-buffer reuse with the optimizer-step param-gather overlap; `--ddp-num-buckets 0`.

    ## Why it matters
    `validate_args` (megatron-core 0.19.2, `megatron/training/arguments.py:1006-1010`, `1115-1168`,
    `1613-1621`, `1684-1699`) and the DDP and optimizer configs
    (`megatron/core/distributed/distributed_data_parallel_config.py:271`,
    `megatron/core/optimizer/optimizer_config.py:424`) stop the launch, for instance with
    `--use-torch-fsdp2 is not supported with gradient accumulation fusion`.

    ## Example
    ```yaml
    MODEL_ARGS:
      --use-torch-fsdp2: true
      --untie-embeddings-and-output-weights: true
    ```

    ## Fix
    None offered: each needs a choice (here `--no-gradient-accumulation-fusion`).
    """
    yield from _table(view, "LM310")


@rule("LM701", "expert-parallel-setting-rejected", "error", "An expert-parallel size or MoE overlap setting the launch rejects",
      frameworks=LM)
def expert_parallel_setting_rejected(view):
    """
    ## What it does
    Flags `--expert-model-parallel-size` above 1 without `--num-experts`, or with an expert count it does
    not divide; Torch-FSDP2 with expert parallelism; `--moe-shared-expert-overlap` with a token dispatcher
    other than `alltoall` / `flex`, or with the shared experts recomputed.

    ## Why it matters
    `validate_args` asserts (megatron-core 0.19.2, `megatron/training/arguments.py:1002`, `1600-1603`):
    `Number of experts should be a multiple of expert model parallel_size.`; `TransformerConfig` raises
    for the shared-expert overlap (`megatron/core/transformer/transformer_config.py:1644`, `1817`).
    Whether EP × ETP × PP fits the world size is DP313.

    ## Example
    ```yaml
    MODEL_ARGS:
      --expert-model-parallel-size: 4
      --num-experts: 6
    ```

    ## Fix
    None offered: pick an EP that divides the experts.
    """
    yield from _table(view, "LM701")


@rule("LM801", "context-parallel-setting-rejected", "error", "A context-parallel size or setting the launch rejects",
      frameworks=LM)
def context_parallel_setting_rejected(view):
    """
    ## What it does
    Flags a sequence length that 2 × CP does not divide, `--hierarchical-context-parallel-sizes` whose
    product is not CP, `--cp-comm-type a2a+p2p` without them, a per-layer `--cp-comm-type` list of the
    wrong length, hybrid context parallelism with PP, Megatron-FSDP, another dataloader or without
    per-token loss, batch-invariant mode and DSA attention with CP.

    ## Why it matters
    `validate_args` asserts (megatron-core 0.19.2, `megatron/training/arguments.py:1296`): `seq-length
    should be a multiple of 2 * context-parallel-size if context-parallel-size > 1.` — each rank holds two
    chunks of the sequence for load balance. The others stop the launch in `validate_args`
    (`arguments.py:564-567`, `1405-1409`) or `TransformerConfig`
    (`megatron/core/transformer/transformer_config.py:2780`, `2845`, `2890`).

    ## Example
    ```yaml
    MODEL_ARGS:
      --context-parallel-size: 2
      --seq-length: 1022
    ```

    ## Fix
    None offered: the sequence length is the data's; pick one divisible by 2 × CP (1024 here).
    """
    yield from _table(view, "LM801")
