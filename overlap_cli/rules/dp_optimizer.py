"""DP315 — the precision-aware optimizer without the distributed optimizer in the optimizer config.

Source: megatron-core 0.19.2 ``OptimizerConfig.__post_init__`` (``megatron/core/optimizer/optimizer_config.py
:430-436``), which megatron-bridge 0.6.2 runs when ``validate()`` finalizes the optimizer config
(``megatron/bridge/training/config.py:1256``) — before ``_validate_and_sync_distributed_optimizer_settings``
(``config.py:1365``) would turn the optimizer's flag on to match ``ddp.use_distributed_optimizer``.
"""

from __future__ import annotations

from overlap_cli.results import Edit
from overlap_cli.rules.registry import rule
from overlap_cli.rules.common import finding, safe


@rule("DP315", "precision-aware-optimizer-without-distopt", "error",
      "Precision-aware optimizer with optimizer.use_distributed_optimizer off: the launch asserts", fix="crash")
def precision_aware_without_distopt(view):
    """
    ## What it does
    Reports `optimizer.use_precision_aware_optimizer: true` while the optimizer config's own
    `use_distributed_optimizer` is not true (and Megatron-FSDP is off; DP312 covers it on): Megatron-Core
    asserts `--use-precision-aware-optimizer only supported with distributed optimizer`
    (megatron-core 0.19.2, `optimizer_config.py:434`), and first `--use-precision-aware-optimizer only
    supported with adam` when the optimizer is not adam (`optimizer_config.py:431`).

    ## Why it matters
    Bridge runs the optimizer config's post-init when `validate()` finalizes it (megatron-bridge 0.6.2,
    `config.py:1256`), before it syncs the distributed-optimizer flags of ddp and optimizer (`config.py:1365`).
    So `ddp.use_distributed_optimizer: true` does not save a run whose optimizer says false: a recipe with
    the precision-aware optimizer and a script line `cfg.optimizer.use_distributed_optimizer = False`
    stops every rank at start-up.

    ## Example
    ```yaml
    optimizer:
      use_precision_aware_optimizer: true
      use_distributed_optimizer: false
    ```

    ## Fix
    Sets `optimizer.use_distributed_optimizer: true`. **Safe (a) — removes a launch crash**: the
    precision-aware optimizer runs only with it.
    """
    if view.megatron_fsdp:
        return
    if view.get_final("optimizer", "use_precision_aware_optimizer") is not True:
        return
    if view.cfg.get(("optimizer", "use_distributed_optimizer"), False) is True:
        return
    kind = view.cfg.get(("optimizer", "optimizer"), "adam")
    message = "--use-precision-aware-optimizer only supported with distributed optimizer"
    if kind != "adam":
        message = "--use-precision-aware-optimizer only supported with adam"
    key = "optimizer.use_distributed_optimizer" if view.cfg.has(("optimizer", "use_distributed_optimizer")) else "optimizer.use_precision_aware_optimizer"
    yield finding(
        view, "DP315", "error",
        f"precision-aware optimizer with optimizer.use_distributed_optimizer not true: Megatron-Core checks the "
        f"optimizer config before Bridge syncs it with ddp, and raises \"{message}\"",
        key,
        safe("set optimizer.use_distributed_optimizer: true (the precision-aware optimizer needs it)",
             Edit("set", "optimizer.use_distributed_optimizer", True)) if kind == "adam" else None,
    )
