"""LM401 — the precision checks of a Megatron-LM launch (frameworks/megatron_lm/assertions.py, code LM401)."""

from __future__ import annotations

from overlap_cli.rules.lm import LM, assertion_findings
from overlap_cli.rules.registry import rule


@rule("LM401", "precision-setting-rejected", "error", "A precision setting the launch rejects", frameworks=LM)
def precision_setting_rejected(view):
    """
    ## What it does
    Flags the precision combinations the launch rejects: `--fp16` with `--bf16`, `--fp4-format` with
    `--fp8-format`, FP8 / FP4 parameter gather without the format, `--main-grads-dtype`,
    `--main-params-dtype`, `--exp-avg-dtype` or `--exp-avg-sq-dtype` other than fp32 without
    `--use-precision-aware-optimizer` (which needs adam and the distributed optimizer), `--main-grads-dtype
    bf16` with `--accumulate-allreduce-grads-in-fp32` under bf16, MXFP8 grad-buffer reuse without FP8
    parameter gather, fp32-accumulation name patterns when the gradients are fp32 already, FP8 recipes
    with settings they do not support (BF16 edge layers or activation recompute with delayed scaling,
    `fp8_output_proj` outside mxfp8, a custom recipe without a quantizer factory), router padding without
    FP8 / FP4, `--fp16-lm-cross-entropy` / `--fp32-residual-connection` outside their precision, CUDA
    graphs of the whole iteration with the NaN check on, optimizer CPU offload outside its setup.

    ## Why it matters
    Each stops the launch in `validate_args` (megatron-core 0.19.2, `megatron/training/arguments.py:1012`,
    `1064-1075`, `1170-1197`, `1333-1336`, `1803-1811`), in `TransformerConfig`
    (`megatron/core/transformer/transformer_config.py:1403-1460`, `1824`, `2317`) or in the DDP and
    optimizer configs (`megatron/core/distributed/distributed_data_parallel_config.py:254-267`,
    `megatron/core/optimizer/optimizer_config.py:430-481`). With `--bf16` and the default
    `--main-grads-dtype fp32`, validate_args reduces gradients in fp32 (`ddp.grad_reduce_in_fp32`), unless
    `--grad-reduce-in-bf16`; with `--main-grads-dtype bf16` it leaves them in bf16, and the optimizer config
    then asserts `main_grads_dtype can only be fp32 when not using precision-aware optimizer`.

    ## Example
    ```yaml
    MODEL_ARGS:
      --bf16: true
      --main-grads-dtype: bf16
    ```

    ## Fix
    None offered: which precision you want is your choice (here `--use-precision-aware-optimizer` with the
    distributed optimizer, or fp32 main gradients).
    """
    from overlap_cli.frameworks.megatron_lm.assertions import ids_of

    yield from assertion_findings(view, "LM401", ids_of("LM401"))
