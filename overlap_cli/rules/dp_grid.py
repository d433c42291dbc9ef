"""DP313 — Megatron-Core's process grid: the dense and the expert grid must both tile the world (both frameworks)."""

from __future__ import annotations

from overlap_cli.rules.common import finding
from overlap_cli.rules.registry import BOTH, rule


@rule("DP313", "process-grid-rejected", "error", "The world size does not fit Megatron-Core's process grid",
      frameworks=BOTH)
def process_grid(view):
    """
    ## What it does
    Builds the two process grids Megatron-Core lays over the world — the dense one (TP · CP · PP · DP) and the
    expert one (ETP · EP · PP · expert-DP) — from the effective sizes and reports what
    `parallel_state.initialize_model_parallel` (megatron-core 0.19.2, `megatron/core/parallel_state.py:800-1450`)
    raises for them: an expert grid that does not divide the world size, a virtual pipeline with PP = 1,
    different dense and expert DP sizes without pp-last rank ordering (`use_tp_pp_dp_mapping`), and DP sizes
    that `num_distributed_optimizer_instances` does not divide. With Bridge's `dist.use_decentralized_pg` the
    same sizes go to its HyperCommGrid path (megatron-bridge 0.6.2, `megatron/bridge/training/initialize.py:401-470`),
    whose messages it quotes.

    ## Why it matters
    Both grids share the world: ETP · EP · PP must divide the world size just as TP · CP · PP does, or every
    rank stops while building its groups, after the job waited in the queue — e.g. `world_size (8) is not
    divisible by expert_tensor_model_pipeline_parallel size (32)` (parallel_state.py:882) for EP 8 × PP 4 on
    one node of 8 GPUs. Expert tensor parallelism counts too: Megatron-Core makes an unset ETP equal to TP
    (model_parallel_config.py:506, arguments.py:569), while Bridge sets it to 1 when EP > 1
    (megatron/bridge/models/transformer_config.py:87). The dense grid's own check is DP307 / LM001 (each
    framework asserts it first).

    ## Example
    Checked with `--world-size 8`:
    ```yaml
    model: {pipeline_model_parallel_size: 4, expert_model_parallel_size: 8, num_moe_experts: 8}
    comm_overlap: {tp_comm_overlap: false}
    ```

    ## Fix
    None offered: the sizes are the model's sharding and the world size is the launch's; pick EP and PP
    (and ETP) whose product divides the world size, e.g. EP 2 × PP 4 on 8 GPUs.
    """
    lm = getattr(view, "framework", "bridge") == "megatron-lm"
    grid = view.grid if lm else _bridge_grid(view)
    if grid is None:
        return
    from overlap_cli.frameworks.process_grid import errors

    for e in errors(grid):
        if e.id == "dense" and view.dp_error:
            continue  # the framework's own assertion comes first: DP307 / LM001
        if e.id == "vpp-pp" and lm:
            continue  # validate_args asserts first (arguments.py:966-976, LM202)
        verb = "raises" if e.raises else "asserts"
        who = "Bridge's HyperCommGrid setup" if grid.decentralized else "initialize_model_parallel"
        message = f"{_sizes(grid, e.id)}: {who} {verb} \"{e.message}\" ({e.at})"
        where = grid.where.get(e.about)
        if lm:
            from overlap_cli.rules.lm import lm_finding

            yield lm_finding(view, "DP313", "error", message, where)
        else:
            yield finding(view, "DP313", "error", message, where)


def _bridge_grid(view):
    from overlap_cli.frameworks.bridge.process_grid import grid

    return grid(view)


def _sizes(g, error: str) -> str:
    """The sizes an error is about, in words."""
    if error == "expert":
        return f"world size {g.world}, ETP {g.etp} × EP {g.ep} × PP {g.pp}" + (f" × expert GTP {g.egtp}" if (g.egtp or 1) > 1 else "")
    if error == "dense":
        return f"world size {g.world}, TP {g.tp} × CP {g.cp} × PP {g.pp}"
    if error == "vpp-pp":
        return f"VPP {g.vpp} with PP {g.pp}"
    if error == "order":
        return f"DP {g.dp} but expert DP {g.expert_dp} with rank order {g.order}"
    if error == "hybrid-cp-even":
        return f"hybrid context parallelism over DP {g.dp} × CP {g.cp} ranks"
    return f"num_distributed_optimizer_instances {g.distopt_instances} with DP {g.dp}, CP {g.cp}, expert DP {g.expert_dp}"
