"""DP311-DP312 — Megatron-FSDP: what Bridge forces and asserts when it is on.

Source: megatron-bridge 0.6.2 ``ConfigContainer._validate_and_apply_megatron_fsdp_configs``
(``megatron/bridge/training/config.py:1065-1116``), called from ``validate()`` at 1345 — after
comm_overlap.setup and after the ddp / optimizer / model configs were finalized. 0.6.2 has only this path
(no separate "FSDP v2" block).
"""

from __future__ import annotations

from overlap_cli.results import Edit
from overlap_cli.rules.registry import rule
from overlap_cli.rules.common import finding, safe, unsafe


def _fsdp_key(view) -> str:
    if view.cfg.get(("ddp", "use_megatron_fsdp")) is True:
        return "ddp.use_megatron_fsdp"
    return "dist.use_megatron_fsdp"


@rule("DP311", "megatron-fsdp-forces", "warning", "Megatron-FSDP overrides settings the file asked for", fix="keeps/unsafe")
def fsdp_forces(view):
    """
    ## What it does
    With Megatron-FSDP on (`dist.use_megatron_fsdp` or `ddp.use_megatron_fsdp`), reports the values the
    file asked for that Bridge replaces in `validate()`:
    - the distributed optimizer is switched on in ddp and optimizer, printing
      `use_distributed_optimizer=True is required for Megatron-FSDP. Activating...`;
    - `reuse_grad_buf_for_mxfp8_param_ag` (ddp / optimizer, often from an MXFP8 recipe) is switched off,
      printing `reuse_grad_buf_for_mxfp8_param_ag not implemented for Megatron FSDP. Deactivating...`;
    - `ddp.average_in_collective` is switched off unless `disable_symmetric_registration`, printing
      `average_in_collective not supported with NCCL symmetric registration. Deactivating...`.

    ## Why it matters
    These run after comm_overlap. If `ddp.use_distributed_optimizer` was false when comm_overlap ran,
    Bridge's data-parallel defaults (bucket size, overlap_grad_reduce, overlap_param_gather) were skipped,
    and the run gets the distributed optimizer without them.

    ## Example
    Checked with `--world-size 64`:
    ```yaml
    ddp: {use_megatron_fsdp: true, use_distributed_optimizer: false}
    comm_overlap: {tp_comm_overlap: false}
    ```

    ## Fix
    Sets `ddp.use_distributed_optimizer: true` and `optimizer.use_distributed_optimizer: true`. **Safe — every effective value stays** when comm_overlap
    already ran with the distributed optimizer (FSDP forces the flags anyway). **Unsafe** when Bridge's
    DP defaults were skipped: written in the file, comm_overlap applies them (bucket size, overlap flags),
    which today's run does not get.
    """
    if not view.megatron_fsdp:
        return
    forced = []
    forces_distopt = view.release.FSDP_FORCES_DISTRIBUTED_OPTIMIZER  # not 0.4.2's validate() (config.py:1115-1139)
    for section in ("ddp", "optimizer") if forces_distopt else ():
        if view.cfg.has((section, "use_distributed_optimizer")) and view.cfg.get((section, "use_distributed_optimizer")) is not True:
            forced.append(f"{section}.use_distributed_optimizer: false -> true")
    for section in ("ddp", "optimizer"):
        if view.get_final(section, "reuse_grad_buf_for_mxfp8_param_ag") is True:
            forced.append(f"{section}.reuse_grad_buf_for_mxfp8_param_ag: true -> false")
    if view.cfg.get(("ddp", "average_in_collective")) is True and view.cfg.get(("ddp", "disable_symmetric_registration")) is not True:
        forced.append("ddp.average_in_collective: true -> false")
    skipped = forces_distopt and view.comm_overlap_present and not view.distopt_at_setup
    if not forced and not skipped:
        return
    msg = "Megatron-FSDP overrides " + ("; ".join(forced) if forced else "the distributed-optimizer flags")
    if skipped:
        msg += " — after comm_overlap ran with the distributed optimizer off, so Bridge's DP overlap defaults were skipped"
    fix = None
    if skipped or any("use_distributed_optimizer" in f for f in forced):
        # Written in the file, comm_overlap applies its DP defaults, which a skipped DP path did not: unsafe then.
        fix = (unsafe if skipped else safe)(
            "set ddp.use_distributed_optimizer and optimizer.use_distributed_optimizer: true (FSDP forces them)",
            Edit("set", "ddp.use_distributed_optimizer", True),
            Edit("set", "optimizer.use_distributed_optimizer", True),
        )
    yield finding(view, "DP311", "warning", msg, _fsdp_key(view), fix)


@rule("DP312", "megatron-fsdp-launch-error", "error", "Megatron-FSDP setup that Bridge rejects at launch", fix="crash/unsafe")
def fsdp_launch_errors(view):
    """
    ## What it does
    With Megatron-FSDP on, predicts the start-up errors of its setup:
    - together with `dist.use_torch_fsdp2`: `ValueError: use_megatron_fsdp and use_torch_fsdp2 are mutually
      exclusive.` (megatron-bridge 0.6.2, `config.py:1343`);
    - saving or loading checkpoints in a format other than `fsdp_dtensor` (the default is `torch_dist`):
      `Megatron-FSDP requires the fsdp_dtensor checkpointing format!` (`config.py:1099`);
    - `optimizer.use_precision_aware_optimizer: true` while `optimizer.use_distributed_optimizer` is false
      in the file: Megatron-Core's optimizer post-init runs **before** FSDP turns the distributed optimizer
      on, and raises `--use-precision-aware-optimizer only supported with distributed optimizer`
      (megatron-core 0.19.2, `optimizer_config.py:434`).

    ## Why it matters
    Each of these stops every rank during start-up, before the first step. The first two are Bridge's own
    checks in `validate()`; the third is Megatron-Core's `OptimizerConfig` post-init, which Bridge runs
    when it finalizes the optimizer config (megatron-bridge 0.6.2, `config.py:1256`) — before the
    Megatron-FSDP validation (`config.py:1346`) would have switched the distributed optimizer on. The
    default checkpoint format is `torch_dist`, so any Megatron-FSDP run that saves or loads checkpoints
    without naming `fsdp_dtensor` stops here.

    ## Example
    ```yaml
    dist: {use_megatron_fsdp: true}
    checkpoint: {save: /ckpt}   # ckpt_format defaults to torch_dist
    ```

    ## Fix
    For the precision-aware optimizer: sets `optimizer.use_distributed_optimizer: true`. **Safe (a) — removes a launch crash**: FSDP
    forces it a moment later anyway. For the checkpoint format: sets `checkpoint.ckpt_format:
    fsdp_dtensor`. **Unsafe**: it changes the checkpoint format (older checkpoints do not load).
    """
    if not view.megatron_fsdp:
        return
    key = _fsdp_key(view)
    if view.cfg.get(("dist", "use_megatron_fsdp")) is True and view.cfg.get(("dist", "use_torch_fsdp2")) is True:
        yield finding(
            view, "DP312", "error",
            "Megatron-FSDP together with torch FSDP2: Bridge raises \"use_megatron_fsdp and use_torch_fsdp2 are mutually exclusive.\"",
            "dist.use_torch_fsdp2",
        )
    if view.get_final("optimizer", "use_precision_aware_optimizer") is True and view.cfg.get(("optimizer", "use_distributed_optimizer")) is not True:
        yield finding(
            view, "DP312", "error",
            "precision-aware optimizer with Megatron-FSDP but optimizer.use_distributed_optimizer not true in the file: "
            "the optimizer config is checked before FSDP turns it on, and Megatron-Core raises "
            "\"--use-precision-aware-optimizer only supported with distributed optimizer\"",
            "optimizer.use_precision_aware_optimizer",
            safe("set optimizer.use_distributed_optimizer: true (FSDP forces it, but too late for this check)", Edit("set", "optimizer.use_distributed_optimizer", True)),
        )
    ckpt = view.cfg.section("checkpoint") or {}
    fmt = ckpt.get("ckpt_format", "torch_dist")
    if (ckpt.get("save") is not None or ckpt.get("load") is not None) and fmt != "fsdp_dtensor":
        yield finding(
            view, "DP312", "error",
            f"Megatron-FSDP with checkpoints in {fmt!r}: Bridge asserts \"Megatron-FSDP requires the fsdp_dtensor checkpointing format!\"",
            "checkpoint.ckpt_format" if "ckpt_format" in ckpt else key,
            unsafe("set checkpoint.ckpt_format: fsdp_dtensor (the only format Megatron-FSDP accepts)", Edit("set", "checkpoint.ckpt_format", "fsdp_dtensor")),
        )
