"""DP314: the evaluation batch against the evaluation's data-parallel size, as Bridge's
``ConfigContainer.validate`` asserts it (megatron/bridge/training/config.py:1293-1339)."""

from __future__ import annotations

from overlap_cli.rules.common import finding
from overlap_cli.rules.registry import rule


@rule("DP314", "eval-batch-not-divisible", "error", "Evaluation batch not divisible by eval micro-batch x DP", fix="none")
def eval_batch(view):
    """
    ## What it does
    Checks `validation.eval_global_batch_size` (default: `train.global_batch_size`) against
    `validation.eval_micro_batch_size` (default: `train.micro_batch_size`) times the evaluation's
    data-parallel size: the training DP, or `world / (TP * PP * dist.eval_context_parallel_size)` when that
    is set.

    ## Why it matters
    Bridge's `ConfigContainer.validate` asserts (megatron-bridge 0.6.2,
    `megatron/bridge/training/config.py:1293-1339`): `eval_global_batch_size (G) must be divisible by
    eval_micro_batch_size * eval_data_parallel_size (M * D = P)`. A recipe written for one world size and
    launched on a larger one meets it even though training's own batch arithmetic is left to the
    micro-batch calculator.

    ## Example
    Checked with `--world-size 256`:
    ```yaml
    model: {tensor_model_parallel_size: 2}
    train: {global_batch_size: 192, micro_batch_size: 1}
    ```

    ## Fix
    None offered: the batch size or the world size is the user's.
    """
    check = view.release.EVAL_BATCH_CHECK  # None: the release's validate() has no such check (0.4.2)
    if view.dp is None or view.target.world_size is None or check is None:
        return
    cfg = view.cfg
    gbs = cfg.get(("validation", "eval_global_batch_size"))
    gbs_key = "validation.eval_global_batch_size"
    if gbs is None:
        gbs, gbs_key = cfg.get(("train", "global_batch_size")), "train.global_batch_size"
    mbs = cfg.get(("validation", "eval_micro_batch_size"))
    if mbs is None:
        mbs = cfg.get(("train", "micro_batch_size"))
    if not all(isinstance(v, int) and not isinstance(v, bool) and v > 0 for v in (gbs, mbs)):
        return
    dp = view.dp
    ecp = cfg.get(("dist", "eval_context_parallel_size")) if check["eval_context_parallel"] else None
    if ecp is not None:
        if not (isinstance(ecp, int) and ecp > 0) or view.target.world_size % (view.tp * view.pp * ecp):
            return  # Bridge's own assertion before this one (config.py:1327); not modelled here
        dp = view.target.world_size // (view.tp * view.pp * ecp)
    if gbs % (mbs * dp) == 0:
        return
    yield finding(
        view, "DP314", "error",
        f"Bridge asserts \"eval_global_batch_size ({gbs}) must be divisible by eval_micro_batch_size * "
        f"{check['dp_name']} ({mbs} * {dp} = {mbs * dp})\" in validate() ({check['at']})",
        gbs_key if cfg.has(tuple(gbs_key.split("."))) else "train",
    )
