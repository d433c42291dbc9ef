"""Megatron-Core's process grid: what ``parallel_state.initialize_model_parallel`` (megatron-core 0.19.2,
megatron/core/parallel_state.py:601-1470) and Megatron-Bridge's decentralized process groups
(megatron/bridge/training/initialize.py:401-470, ``dist.use_decentralized_pg``) raise for the parallel
sizes — a pure function of the sizes, shared by both frameworks.

Two grids share the world: the dense one, TP · CP · PP · DP (times the GTP remat degree), and the expert
one, ETP · EP · PP · expert-DP (times the expert GTP remat degree; CP folds into expert-DP). Each
framework fills a ``Grid`` from what it hands to Megatron-Core (Megatron-LM: megatron/training/
initialize.py:370-394; Bridge: megatron/bridge/training/initialize.py:808-828 and ``process_grid.grid``
in frameworks/bridge). A size that is not known is None, and every check reading it stays silent.

What parallel_state asserts that never fails from these inputs: the pipeline groups of both grids are the
same (parallel_state.py:904) whenever the DP sizes agree (parallel_state.py:898) or the order is pp-last;
SHARP's group names and the UCC backend's environment are Megatron-LM launch checks (assertions.py) or
Bridge's ENV503.
"""

from __future__ import annotations

TYPE_CHECKING = False  # the typing module costs ~2.5 ms of start-up; annotations here are strings (PEP 563)
if TYPE_CHECKING:
    from typing import Optional

from overlap_cli.records import dataclass, field  # not dataclasses: start-up time (records.py)

PS = "megatron/core/parallel_state.py"
BRIDGE_INIT = "megatron/bridge/training/initialize.py"


@dataclass
class Grid:
    framework: str  # "bridge" | "megatron-lm"
    world: Optional[int]
    tp: Optional[int]
    pp: Optional[int]
    cp: Optional[int]
    vpp: Optional[int]
    ep: Optional[int]
    etp: Optional[int]
    vpp_known: bool = True
    gtp: Optional[int] = 1
    egtp: Optional[int] = 1
    order: str = "tp-cp-ep-dp-pp"
    distopt_instances: Optional[int] = 1
    hybrid_cp: Optional[bool] = False
    decentralized: bool = False  # Bridge's dist.use_decentralized_pg: HyperCommGrid instead of parallel_state
    # size name ("tp", "ep", ...) -> the key or dest a finding about it is located at
    where: dict = field(default_factory=dict)

    @property
    def dp(self) -> Optional[int]:
        size = _product(self.tp, self.pp, self.cp, self.gtp)
        return self.world // size if size and self.world is not None and self.world % size == 0 else None

    @property
    def expert_dp(self) -> Optional[int]:
        size = self.expert_size
        return self.world // size if size and self.world is not None and self.world % size == 0 else None

    @property
    def expert_size(self) -> Optional[int]:
        return _product(self.etp, self.ep, self.pp, 1 if self.decentralized else self.egtp)


@dataclass(frozen=True)
class GridError:
    id: str
    message: str  # what the launch prints
    at: str  # file:line of the raise / assert
    about: str  # the size it is located at ("ep", "pp", ...: a key of Grid.where)
    raises: bool = True  # RuntimeError (else an assert)


def _product(*sizes) -> Optional[int]:
    out = 1
    for s in sizes:
        if not isinstance(s, int) or isinstance(s, bool) or s <= 0:
            return None
        out *= s
    return out


def errors(g: Grid) -> list:
    """What initialize_model_parallel (or Bridge's HyperCommGrid path) raises, in the order it checks."""
    out: list = []
    if g.world is None:
        return out
    instances = g.distopt_instances
    if not g.decentralized and isinstance(instances, int) and instances > 1 and None not in (g.gtp, g.egtp) \
            and (g.gtp > 1 or g.egtp > 1):
        out.append(GridError("gtp-distopt-instances", "GTP_remat with num_distributed_optimizer_instances > 1 is not yet "
                             "supported.", f"{PS}:808", "distopt_instances", raises=False))
    dense = _product(g.tp, g.pp, g.cp, g.gtp)
    if dense is not None and g.world % dense:
        at = f"{BRIDGE_INIT}:428" if g.decentralized else f"{PS}:823"
        out.append(GridError("dense", f"world_size ({g.world}) is not divisible by {dense}", at, "tp"))
        return out  # the data-parallel size, and everything below, is undefined
    if not g.decentralized and g.vpp_known and g.vpp is not None and isinstance(g.pp, int) and g.pp <= 1:
        out.append(GridError("vpp-pp", "pipeline-model-parallel size should be greater than 1 with interleaved "
                             "schedule", f"{PS}:829", "vpp"))
    expert = g.expert_size
    if expert is not None and g.world % expert:
        if g.decentralized:
            out.append(GridError("expert", f"world_size ({g.world}) is not divisible by expert_tensor_model_pipeline "
                                 f"size ({expert})", f"{BRIDGE_INIT}:459", "ep"))
        else:
            out.append(GridError("expert", f"world_size ({g.world}) is not divisible by "
                                 f"expert_tensor_model_pipeline_parallel size ({expert})", f"{PS}:882", "ep"))
        return out
    dp, edp = g.dp, g.expert_dp
    if not g.decentralized and not g.order.endswith("pp") and isinstance(g.pp, int) and g.pp > 1 \
            and None not in (dp, edp) and dp != edp:
        out.append(GridError("order", "When not using pp-last rank ordering, the data parallel size of the attention "
                             "and moe layers must be the same", f"{PS}:898", "ep", raises=False))
    if not isinstance(instances, int) or instances < 1:
        return out
    if not g.decentralized and dp is not None and isinstance(g.cp, int) and (dp * g.cp) % instances:
        out.append(GridError("dp-distopt-instances", "Data parallel size should be divisible by partial DistOpt shard "
                             "factor", f"{PS}:922", "distopt_instances", raises=False))
    if not g.decentralized and g.hybrid_cp is True and dp is not None and isinstance(g.cp, int) and (dp * g.cp) % 2:
        out.append(GridError("hybrid-cp-even", "Hybrid context parallel requires an even number of ranks",
                             f"{PS}:1043", "hybrid_cp", raises=False))
    if edp is not None and edp % instances:
        if g.decentralized:
            out.append(GridError("expert-distopt-instances", "Expert DP size must be divisible by the number of optimizer "
                                 "instances.", f"{BRIDGE_INIT}:467", "distopt_instances", raises=False))
        else:
            out.append(GridError("expert-distopt-instances", "Expert data parallel size should be divisible by partial "
                                 "DistOpt shard factor", f"{PS}:1447", "distopt_instances", raises=False))
    return out
