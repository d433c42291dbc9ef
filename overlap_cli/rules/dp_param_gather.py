"""DP308-DP310 — ``overlap_param_gather_with_optimizer_step`` (OPS): overlapping the first model chunk's
parameter all-gather with the optimizer step.

Bridge never turns it on by itself ("Currently disabled due to an issue with checkpointing",
megatron-bridge 0.6.2 ``comm_overlap.py:581-582``); users and older perf scripts do. Megatron-Core checks
two incompatibilities; Megatron-LM's launcher checks four prerequisites that Bridge does not run.
"""

from __future__ import annotations

from overlap_cli.rules.registry import rule
from overlap_cli.rules.common import finding, safe, set_, unsafe

_OPS = "overlap_param_gather_with_optimizer_step"


def ops_on(view) -> bool:
    return view.value(f"optimizer.{_OPS}") is True


def ops_key(view) -> str:
    """Where the effective OPS value comes from: comm_overlap's DP path wins when it ran."""
    if view.dp_path_ran and view.cfg.get(("comm_overlap", _OPS)) is not None:
        return f"comm_overlap.{_OPS}"
    return f"optimizer.{_OPS}"


def _off(view, why: str, applicability=safe):
    key = ops_key(view)
    return applicability(f"set {key}: false ({why})", set_(key, False))


@rule("DP308", "ops-with-mxfp8-reuse", "error", "overlap_param_gather_with_optimizer_step with MXFP8 grad-buffer reuse", fix="crash")
def ops_with_mxfp8_reuse(view):
    """
    ## What it does
    Flags an effective `optimizer.overlap_param_gather_with_optimizer_step: true` (set on the optimizer,
    or in comm_overlap when its data-parallel path runs) together with
    `optimizer.reuse_grad_buf_for_mxfp8_param_ag: true` (written by the `*_with_mxfp8_mixed` recipes).

    ## Why it matters
    Megatron-Core's `OptimizerConfig.__post_init__` raises when Bridge finalizes the optimizer config
    (megatron-core 0.19.2, `megatron/core/optimizer/optimizer_config.py:424-428`):
    `ValueError: overlap_param_gather_with_optimizer_step is not supported with reuse_grad_buf_for_mxfp8_param_ag.`
    Megatron-FSDP switches the reuse off only later in `validate()`, so it does not avoid the error.

    ## Example
    Checked with `--world-size 16`:
    ```yaml
    ddp: {use_distributed_optimizer: true}
    optimizer: {use_distributed_optimizer: true}
    mixed_precision: bf16_with_mxfp8_mixed   # turns reuse_grad_buf_for_mxfp8_param_ag on
    comm_overlap: {tp_comm_overlap: false, overlap_param_gather_with_optimizer_step: true}
    ```

    ## Fix
    Turns `overlap_param_gather_with_optimizer_step` off. **Safe (a) — removes a launch crash**: the combination cannot start, and
    MXFP8 with fp8_param_gather requires the reuse (MP406).
    """
    if ops_on(view) and view.get_final("optimizer", "reuse_grad_buf_for_mxfp8_param_ag") is True:
        yield finding(
            view, "DP308", "error",
            "overlap_param_gather_with_optimizer_step with reuse_grad_buf_for_mxfp8_param_ag: Megatron-Core raises "
            "\"overlap_param_gather_with_optimizer_step is not supported with reuse_grad_buf_for_mxfp8_param_ag.\"",
            ops_key(view),
            _off(view, "not supported with MXFP8 buffer reuse"),
        )


@rule("DP309", "ops-layer-wise-optimizer", "error", "overlap_param_gather_with_optimizer_step with the layer-wise distributed optimizer", fix="crash")
def ops_with_layer_wise(view):
    """
    ## What it does
    Flags overlap_param_gather_with_optimizer_step with an emerging optimizer (`optimizer.optimizer` other
    than adam / sgd) run layer-wise (`use_layer_wise_distributed_optimizer: true`, or a legacy `dist_*`
    name such as `dist_muon`).

    ## Why it matters
    Megatron-Core asserts while building the optimizer (megatron-core 0.19.2,
    `megatron/core/optimizer/__init__.py:761-766`): `overlap_param_gather_with_optimizer_step is not
    supported with use_layer_wise_distributed_optimizer: the emerging-optimizer path does not split
    model_chunks into (first, rest) groups, so the per-chunk param-gather dispatch never fires. Disable one
    of the two flags.` Adam and SGD take the standard path and are not checked.

    ## Example
    ```yaml
    optimizer: {optimizer: dist_muon, overlap_param_gather_with_optimizer_step: true}
    ```

    ## Fix
    Turns overlap_param_gather_with_optimizer_step off. **Safe (a) — removes a launch crash**: it never works on this path.
    """
    if not ops_on(view):
        return
    name = view.get_final("optimizer", "optimizer") or "adam"
    if name in ("adam", "sgd") or not isinstance(name, str):
        return
    if view.get_final("optimizer", "use_layer_wise_distributed_optimizer") is True or name.startswith("dist_"):
        yield finding(
            view, "DP309", "error",
            f"overlap_param_gather_with_optimizer_step with the layer-wise optimizer {name!r}: Megatron-Core asserts "
            "\"overlap_param_gather_with_optimizer_step is not supported with use_layer_wise_distributed_optimizer\"",
            ops_key(view),
            _off(view, "the layer-wise optimizer never dispatches it"),
        )


@rule("DP310", "ops-unsupported-setup", "warning", "overlap_param_gather_with_optimizer_step outside its supported setup", fix="unsafe")
def ops_unsupported(view):
    """
    ## What it does
    Flags overlap_param_gather_with_optimizer_step when checkpoints are saved (`checkpoint.save` set), or
    when a prerequisite that Megatron-LM's launcher asserts is missing: the distributed optimizer,
    `overlap_param_gather`, and the interleaved schedule (VPP set).

    ## Why it matters
    Neither Bridge nor Megatron-Core checks these, so the run starts. Bridge keeps the flag off in its
    own defaults "due to an issue with checkpointing" (megatron-bridge 0.6.2, `comm_overlap.py:581-582`),
    and Megatron-LM refuses the other setups (megatron/training/arguments.py:1032-1040 in megatron-core
    0.19.2): `--overlap-param-gather-with-optimizer-step only supported with distributed optimizer`,
    `Must use --overlap-param-gather-with-optimizer-step with --overlap-param-gather`,
    `--overlap-param-gather-with-optimizer-step only supported with interleaved pipeline parallelism`.
    With the flag on, Bridge also disables gradient bucketing for every model chunk
    (megatron/training/models/dist_utils.py:314-317).

    ## Example
    ```yaml
    checkpoint: {save: /ckpt}
    optimizer: {overlap_param_gather_with_optimizer_step: true}
    ```

    ## Fix
    Turns the flag off. **Unsafe**: it changes when parameters are gathered (a performance choice).
    """
    if not ops_on(view):
        return
    problems = []
    if view.cfg.get(("checkpoint", "save")) is not None:
        problems.append("checkpoints are saved (Bridge keeps this flag off because of a checkpointing issue)")
    if view.get_final("ddp", "use_distributed_optimizer") is not True:
        problems.append("the distributed optimizer is off")
    if view.value("ddp.overlap_param_gather") is False:
        problems.append("overlap_param_gather is off")
    if view.vpp_final is None:
        problems.append("the schedule is not interleaved (no VPP)")
    if problems:
        yield finding(
            view, "DP310", "warning",
            "overlap_param_gather_with_optimizer_step is on but " + "; ".join(problems),
            ops_key(view),
            _off(view, "outside its supported setup", unsafe),
        )
