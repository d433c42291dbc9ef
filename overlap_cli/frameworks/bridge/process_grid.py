"""The sizes Megatron-Bridge 0.6.2 hands to Megatron-Core's process grid (frameworks/process_grid.py), from
the resolved view: ``initialize_megatron`` -> ``_initialize_distributed`` (megatron/bridge/training/
initialize.py:694-828).

Expert tensor parallelism: Bridge sets an unset ``expert_tensor_parallel_size`` to 1 when EP > 1
(``_set_moe_expert_tensor_parallel_default``, megatron/bridge/models/transformer_config.py:80-88, called
at model finalize, :181, and before the groups are built, initialize.py:704); otherwise Megatron-Core
makes it TP (model_parallel_config.py:506-507). Bridge passes no GTP remat degree (the grid's default, 1).
"""

from __future__ import annotations

from overlap_cli.frameworks.process_grid import Grid


def _int(value):
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def grid(view) -> Grid:
    model, ddp, cfg = view.final.get("model", {}), view.final.get("ddp", {}), view.cfg
    tp, ep = _int(model.get("tensor_model_parallel_size")), _int(model.get("expert_model_parallel_size"))
    etp = model.get("expert_tensor_parallel_size")
    if etp is None:
        etp = 1 if isinstance(ep, int) and ep > 1 else tp
    mapping, decentralized = cfg.get(("dist", "use_tp_pp_dp_mapping")), cfg.get(("dist", "use_decentralized_pg"))
    hybrid_cp = model.get("hybrid_context_parallel")
    return Grid(
        framework="bridge", world=view.target.world_size, tp=tp, pp=_int(model.get("pipeline_model_parallel_size")),
        cp=_int(model.get("context_parallel_size")), vpp=view.vpp_final, ep=ep, etp=_int(etp),
        order="tp-cp-ep-pp-dp" if mapping is True else "tp-cp-ep-dp-pp",
        distopt_instances=_int(ddp.get("num_distributed_optimizer_instances", 1)),
        hybrid_cp=hybrid_cp if isinstance(hybrid_cp, bool) else False,
        decentralized=decentralized is True,
        where={"tp": "model.tensor_model_parallel_size", "pp": "model.pipeline_model_parallel_size",
               "vpp": "model.virtual_pipeline_model_parallel_size", "ep": "model.expert_model_parallel_size",
               "etp": "model.expert_tensor_parallel_size", "distopt_instances": "ddp.num_distributed_optimizer_instances",
               "hybrid_cp": "model.hybrid_context_parallel"},
    )
