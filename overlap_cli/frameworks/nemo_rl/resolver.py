"""The settings Megatron-Core receives from a NeMo-RL config, each with its provenance.

NeMo-RL maps ``policy.megatron_cfg`` onto Bridge's ConfigContainer itself
(nemo_rl/models/megatron/setup.py): the parallel sizes onto the model provider (``_apply_parallelism_config``,
setup.py:858-886; ``_apply_moe_config``, :888-894), the precision from ``policy.precision``
(``_apply_precision_config``, :1042-1063), and the DDP and optimizer configs in ``_create_megatron_config``
(:1363-1449), which passes five DDP fields from the YAML and fixes three. Nothing else: no
CommOverlapConfig, no mixed-precision recipe, no ``runtime_config_update``; Bridge's ``validate()`` runs
(megatron_policy_worker.py:538) and Megatron-Core's DDP wrapper sizes the buckets
(Megatron-LM megatron/core/distributed/distributed_data_parallel.py:133-137).

Keys are spelled as Bridge's effective keys where they are the same setting (``ddp.overlap_grad_reduce``,
``model.tensor_model_parallel_size``). Sources: ``user`` (the YAML or the command line, the reason naming
``FILE:LINE``), ``default`` (NeMo-RL's own fixed value, or Megatron-Core's default for a field NeMo-RL never
passes), ``forced-off`` (written on, switched off by Bridge's finalize: sequence parallelism at TP 1),
``unknown`` (an interpolation or a missing required key).
"""

from __future__ import annotations

TYPE_CHECKING = False  # the typing module costs ~2.5 ms of start-up; annotations here are strings (PEP 563)
if TYPE_CHECKING:
    from typing import Any, Optional

from overlap_cli.records import dataclass, field  # not dataclasses: start-up time (records.py)
from overlap_cli.results import DEFAULT, FORCED_OFF, UNKNOWN, USER, Value

SETUP = "nemo_rl/models/megatron/setup.py"
LM_POLICY = "nemo_rl/models/policy/lm_policy.py"
MCORE_DDP = "megatron/core/distributed/distributed_data_parallel.py"
FRAMEWORK = "nemo-rl"

MEG = ("policy", "megatron_cfg")
DDP_CFG = MEG + ("distributed_data_parallel_config",)
OPT_CFG = MEG + ("optimizer",)

# effective key -> (path in the YAML, the NeMo-RL line that reads it into the ConfigContainer)
FROM_YAML = (
    ("model.tensor_model_parallel_size", MEG + ("tensor_model_parallel_size",), f"{SETUP}:860"),
    ("model.pipeline_model_parallel_size", MEG + ("pipeline_model_parallel_size",), f"{SETUP}:863"),
    ("model.context_parallel_size", MEG + ("context_parallel_size",), f"{SETUP}:873"),
    ("model.sequence_parallel", MEG + ("sequence_parallel",), f"{SETUP}:872"),
    ("model.expert_tensor_parallel_size", MEG + ("expert_tensor_parallel_size",), f"{SETUP}:890"),
    ("model.expert_model_parallel_size", MEG + ("expert_model_parallel_size",), f"{SETUP}:893"),
    ("model.moe_shared_expert_overlap", MEG + ("moe_shared_expert_overlap",), f"{SETUP}:968"),
    ("ddp.grad_reduce_in_fp32", DDP_CFG + ("grad_reduce_in_fp32",), f"{SETUP}:1424"),
    ("ddp.overlap_grad_reduce", DDP_CFG + ("overlap_grad_reduce",), f"{SETUP}:1427"),
    ("ddp.overlap_param_gather", DDP_CFG + ("overlap_param_gather",), f"{SETUP}:1380"),
    ("ddp.use_distributed_optimizer", OPT_CFG + ("use_distributed_optimizer",), f"{SETUP}:1434"),
    ("ddp.data_parallel_sharding_strategy", DDP_CFG + ("data_parallel_sharding_strategy",), f"{SETUP}:1437"),
    ("optimizer.use_distributed_optimizer", OPT_CFG + ("use_distributed_optimizer",), f"{SETUP}:1384"),
    ("optimizer.overlap_param_gather", DDP_CFG + ("overlap_param_gather",), f"{SETUP}:1385"),
    ("optimizer.use_precision_aware_optimizer", OPT_CFG + ("use_precision_aware_optimizer",), f"{SETUP}:1384"),
    ("optimizer.bf16", OPT_CFG + ("bf16",), f"{SETUP}:1384"),
    ("optimizer.fp16", OPT_CFG + ("fp16",), f"{SETUP}:1384"),
    ("optimizer.optimizer_cpu_offload", OPT_CFG + ("optimizer_cpu_offload",), f"{SETUP}:373"),
)

# effective key -> (value, reason): what _create_megatron_config fixes whatever the YAML says.
FIXED_BY_NEMO_RL = (
    ("ddp.average_in_collective", False, f"NeMo-RL passes False ({SETUP}:1433: required with calculate_per_token_loss)"),
    ("ddp.check_for_nan_in_grad", True, f"NeMo-RL passes True ({SETUP}:1423)"),
    ("model.calculate_per_token_loss", True, f"NeMo-RL sets it ({SETUP}:1322)"),
)

# Fields NeMo-RL never passes: Megatron-Core's defaults stand (facts of the mirrored release).
NEVER_PASSED = ("align_param_gather", "use_megatron_fsdp", "num_buckets")


@dataclass
class NemoRLView:
    """What the RL rules read. ``values``: effective key -> plain value (None when unknown);
    ``effective``: effective key -> Value; ``cfg``: the loaded config (loader.Loaded)."""

    cfg: Any
    effective: dict
    values: dict
    world_size: Optional[int] = None
    world_reason: str = ""
    dp: Optional[int] = None
    dp_error: Optional[str] = None
    notes: list = field(default_factory=list)
    framework: str = FRAMEWORK
    target: Optional[Any] = None  # where it runs (launch_profile.Target): its release's classes and defaults

    @property
    def file(self) -> str:
        return self.cfg.file

    def place(self, path: tuple) -> tuple:
        """(line, column, origin) of the key at ``path``: its line in the checked file, else the FILE:LINE
        of the base file or the command line that wrote it (as ``origin``)."""
        origin = self.cfg.origin(path)
        here = f"{self.cfg.file}:"
        if origin is not None and origin.startswith(here) and path in self.cfg.lines:
            line, column = self.cfg.lines[path]
            return line, column, None
        return None, None, origin

    def written(self, key: str) -> Optional[tuple]:
        """(value, where) of a value the checked file or the command line writes at the dotted ``key`` (of the
        YAML), None for one a ``defaults:`` file it starts from holds, as a recipe or a base is for Bridge."""
        path = tuple(key.split("."))
        origin = self.cfg.origin(path) if self.cfg.has(path) else None
        if origin is None or not (origin.startswith(f"{self.cfg.file}:") or origin == "command line"):
            return None
        return self.cfg.get(path), ("the command line" if origin == "command line" else origin)

    def setting(self, path: tuple) -> Any:
        """The value at ``path`` of the merged YAML, None when absent or unknown."""
        from overlap_cli.frameworks.nemo_rl.loader import Unresolved

        got = self.cfg.get(path)
        return None if isinstance(got, Unresolved) else got


def _yaml_value(cfg, key: str, path: tuple, reads: str) -> Value:
    from overlap_cli.frameworks.nemo_rl.loader import Unresolved

    dotted = ".".join(path)
    if not cfg.has(path):
        return Value(None, UNKNOWN, f"{dotted} is not set: NeMo-RL reads it at {reads} and stops with KeyError")
    got = cfg.get(path)
    where = cfg.origin(path) or cfg.file
    if isinstance(got, Unresolved):
        return Value(None, UNKNOWN, f"{dotted} ({where}) is {got.why}")
    return Value(got, USER, f"{dotted} at {where}, read at {reads}", layer=where)


def resolve(cfg, target) -> NemoRLView:
    """The view of a loaded NeMo-RL config (loader.Loaded) on ``target`` (launch_profile.Target)."""
    eff: dict = {}
    for key, path, reads in FROM_YAML:
        eff[key] = _yaml_value(cfg, key, path, reads)
    _sequence_parallel(eff)
    _precision(cfg, eff)
    for key, value, reason in FIXED_BY_NEMO_RL:
        eff[key] = Value(value, DEFAULT, reason)
    _never_passed(cfg, eff, target)
    values = {k: v.value for k, v in eff.items()}
    view = NemoRLView(cfg=cfg, effective=eff, values=values, target=target)
    _world(view, target)
    _bucket(view)
    view.values = {k: v.value for k, v in view.effective.items()}
    view.notes.append(
        "NeMo-RL builds the ConfigContainer without a CommOverlapConfig or a mixed-precision recipe "
        f"({SETUP}:1411-1449): TP communication overlap, Bridge's PP overlap settings and align_param_gather "
        "stay at Megatron-Core's defaults (off), whatever the policy.megatron_cfg section says")
    return view


def _sequence_parallel(eff: dict) -> None:
    """NeMo-RL copies sequence_parallel onto the provider as written (setup.py:872) and its own
    ``model_cfg.__post_init__()`` (setup.py:725) is Bridge's deferred no-op; Bridge's
    ``TransformerConfig.finalize`` turns it off at TP <= 1 (megatron/bridge/models/transformer_config.py:175-176),
    run by ``ConfigContainer.validate()`` (megatron/bridge/training/config.py:1401) in the policy worker
    (nemo_rl/models/policy/workers/megatron_policy_worker.py:538): Megatron-Core never sees the pair."""
    sp, tp = eff["model.sequence_parallel"], eff["model.tensor_model_parallel_size"]
    if sp.value is True and isinstance(tp.value, int) and tp.value <= 1:
        eff["model.sequence_parallel"] = Value(
            False, FORCED_OFF, f"{sp.reason.split(', read at')[0]} is true, but Bridge's model finalize turns "
                               "sequence_parallel off at TP <= 1 (megatron/bridge/models/transformer_config.py:175, "
                               "run by ConfigContainer.validate() from megatron_policy_worker.py:538)", layer=sp.layer)


def _precision(cfg, eff: dict) -> None:
    """_apply_precision_config (setup.py:1046-1047): bf16 / fp16 from policy.precision."""
    prec = _yaml_value(cfg, "", ("policy", "precision"), f"{SETUP}:370")
    for key, name in (("model.bf16", "bfloat16"), ("model.fp16", "float16")):
        if prec.source == UNKNOWN:
            eff[key] = Value(None, UNKNOWN, prec.reason)
        else:
            eff[key] = Value(prec.value == name, USER, f"policy.precision: {prec.value} at {prec.layer} "
                                                        f"({SETUP}:1046-1047)", layer=prec.layer)


def _never_passed(cfg, eff: dict, target) -> None:
    from overlap_cli.frameworks.bridge import releases

    release = releases.of(target)  # the Megatron-Bridge / Megatron-Core classes NeMo-RL builds
    DDP_DEFAULTS, MODEL_DEFAULTS, OPTIMIZER_DEFAULTS = (  # noqa: N806 (the release's tables, read-only)
        release.DDP_DEFAULTS, release.MODEL_DEFAULTS, release.OPTIMIZER_DEFAULTS)

    for name in (n for n in NEVER_PASSED if n in DDP_DEFAULTS):  # a field the release's core lacks is no value
        eff[f"ddp.{name}"] = Value(DDP_DEFAULTS[name], DEFAULT,
                                   f"NeMo-RL never passes it ({SETUP}:1421-1441): Megatron-Core's default")
    eff["optimizer.overlap_param_gather_with_optimizer_step"] = Value(
        OPTIMIZER_DEFAULTS["overlap_param_gather_with_optimizer_step"], DEFAULT,
        f"NeMo-RL never passes it ({SETUP}:1382-1386): Megatron-Core's default")
    overrides = cfg.get(MEG + ("model_overrides",)) or {}
    for name in ("tp_comm_overlap", "overlap_p2p_comm", "batch_p2p_comm"):
        key = f"model.{name}"
        if isinstance(overrides, dict) and name in overrides:
            path = MEG + ("model_overrides", name)
            where = cfg.origin(path) or cfg.file
            eff[key] = Value(overrides[name], USER, f"policy.megatron_cfg.model_overrides.{name} at {where} "
                                                     f"(applied to the model provider, {SETUP}:662-668)", layer=where)
        elif name in MODEL_DEFAULTS:
            eff[key] = Value(MODEL_DEFAULTS[name], DEFAULT, "NeMo-RL never sets it (no CommOverlapConfig, "
                                                             f"{SETUP}:1411-1449): the model provider's default")


def _world(view: NemoRLView, target) -> None:
    """The policy's world size: the target's when a flag or directive gives one, else the cluster section as
    the algorithm's setup places the policy (sft.py:187-194; grpo.py:772-834 for colocated generation)."""
    from overlap_cli.launch_profile.profile import launch_sizes_apply

    cfg = view.cfg
    if target is not None and target.world_size is not None and not launch_sizes_apply(target):
        view.world_size = target.world_size
        view.world_reason = f"world size {target.world_size} from {target.source_label('world_size')}"
    else:
        view.world_size, view.world_reason = _cluster_world(cfg)
    tp, pp, cp = (view.values.get(k) for k in ("model.tensor_model_parallel_size",
                                               "model.pipeline_model_parallel_size", "model.context_parallel_size"))
    if view.world_size is None or not all(isinstance(x, int) and x > 0 for x in (tp, pp, cp)):
        view.effective["target.data_parallel_size"] = Value(None, UNKNOWN, view.world_reason or "world size not known")
        return
    mp = tp * pp * cp
    if view.world_size < mp:
        view.dp_error = (f"World size ({view.world_size}) is insufficient for the parallelism configuration "
                         f"(PP {pp} * CP {cp} * TP {tp} = {mp}; {LM_POLICY}:225-231)")
    elif view.world_size % mp:
        view.dp_error = (f"World size ({view.world_size}) must be divisible by PP * CP * TP ({mp}) "
                         f"({LM_POLICY}:233-240)")
    if view.dp_error:
        view.effective["target.data_parallel_size"] = Value(None, UNKNOWN, view.dp_error)
        return
    view.dp = view.world_size // mp
    view.effective["target.data_parallel_size"] = Value(
        view.dp, DEFAULT, f"{view.world_reason} / (PP {pp} * CP {cp} * TP {tp}) ({LM_POLICY}:242-250)")


def _cluster_world(cfg) -> tuple:
    from overlap_cli.frameworks.nemo_rl.loader import Unresolved

    gpn, nodes = cfg.get(("cluster", "gpus_per_node")), cfg.get(("cluster", "num_nodes"))
    if not all(isinstance(x, int) and not isinstance(x, bool) and x > 0 for x in (gpn, nodes)):
        shown = [x.why if isinstance(x, Unresolved) else repr(x) for x in (gpn, nodes)]
        return None, f"cluster.gpus_per_node / num_nodes not known ({', '.join(shown)})"
    where = f"cluster.gpus_per_node {gpn} * num_nodes {nodes} ({cfg.origin(('cluster', 'gpus_per_node'))})"
    if any(k in cfg.data for k in ("sft", "dpo", "rm")) and "generation" not in (cfg.data.get("policy") or {}):
        return gpn * nodes, where + " (the whole cluster: nemo_rl/algorithms/sft.py:187-194)"
    colocated = cfg.get(("policy", "generation", "colocated", "enabled"))
    if "grpo" in cfg.data and colocated is True and not _shares_the_cluster(cfg):
        return gpn * nodes, where + " (colocated generation: the policy takes the whole cluster, nemo_rl/algorithms/grpo.py:811-834)"
    if "grpo" in cfg.data and colocated is False and not _shares_the_cluster(cfg):
        res = ("policy", "generation", "colocated", "resources")
        inf_gpn, inf_nodes = cfg.get(res + ("gpus_per_node",)), cfg.get(res + ("num_nodes",))
        # grpo.py:855-911: on one node inference takes inference_gpus_per_node of it; on several, whole nodes
        if nodes == 1 and isinstance(inf_gpn, int) and 0 < inf_gpn < gpn:
            return gpn - inf_gpn, (where + f" less the {inf_gpn} GPUs of non-colocated generation "
                                           f"({cfg.origin(res + ('gpus_per_node',))}; nemo_rl/algorithms/grpo.py:865-887)")
        if nodes > 1 and isinstance(inf_nodes, int) and 0 < inf_nodes < nodes and inf_gpn == gpn:
            return (nodes - inf_nodes) * gpn, (where + f" less the {inf_nodes} node(s) of non-colocated generation "
                                                       f"({cfg.origin(res + ('num_nodes',))}; nemo_rl/algorithms/grpo.py:895-911)")
    return None, ("the policy's share of the cluster is decided at launch (non-colocated generation, a reward "
                  "model or teachers: nemo_rl/algorithms/grpo.py:759-913); give --world-size")


def _shares_the_cluster(cfg) -> bool:
    """Whether GRPO gives GPUs to something beside the policy: a reward-model environment named by the data
    config (grpo.py:729 with nemo_rl/data/datasets/utils.py:291-311; grpo.py:764-779), or non-colocated
    on-policy-distillation teachers (nemo_rl/algorithms/opd.py:101-112; grpo.py:781-806). Unknown counts as yes."""
    data = cfg.get(("data",))
    if not isinstance(data, dict):
        return True
    for key in ("train", "validation", "default"):
        entries = data.get(key)
        for entry in entries if isinstance(entries, list) else [entries]:
            if isinstance(entry, dict) and "env_name" in entry:
                name = cfg.get(("data", key) + ((entries.index(entry),) if isinstance(entries, list) else ()) + ("env_name",))
                if name == "reward_model" or not isinstance(name, str):
                    return True
    opd = ("on_policy_distillation",)
    if cfg.get(opd + ("enabled",), False) is not False:
        return cfg.get(opd + ("non_colocated_teachers", "enabled"), False) is not False
    return False


def _bucket(view: NemoRLView) -> None:
    """distributed_data_parallel.py:133-137: NeMo-RL passes no bucket_size, so Megatron-Core's DDP takes
    max(40M, 1M * DP) with overlap_grad_reduce, and one bucket (None) without."""
    from overlap_cli.frameworks.megatron_lm.facts import BUCKET_FLOOR, BUCKET_PER_DP_CP_RANK

    ogr = view.effective["ddp.overlap_grad_reduce"]
    if ogr.source == UNKNOWN:
        view.effective["ddp.bucket_size"] = Value(None, UNKNOWN, f"ddp.overlap_grad_reduce is unknown: {ogr.reason}")
    elif not ogr.value:
        view.effective["ddp.bucket_size"] = Value(None, DEFAULT, f"overlap_grad_reduce off: Megatron-Core's DDP uses one "
                                                                 f"bucket ({MCORE_DDP}:136-137)")
    elif view.dp is None:
        view.effective["ddp.bucket_size"] = Value(None, UNKNOWN, "NeMo-RL passes no bucket_size; Megatron-Core sizes it "
                                                                 f"from the DP group ({MCORE_DDP}:133-134), and DP is "
                                                                 "not known")
    else:
        # the DDP's dp_group is the data-parallel group without CP (megatron/core/process_groups_config.py:581)
        size = max(BUCKET_FLOOR, BUCKET_PER_DP_CP_RANK * view.dp)
        view.effective["ddp.bucket_size"] = Value(size, DEFAULT, f"NeMo-RL passes no bucket_size: Megatron-Core's "
                                                                 f"max({BUCKET_FLOOR}, {BUCKET_PER_DP_CP_RANK} * DP "
                                                                 f"{view.dp}) ({MCORE_DDP}:133-134)")
