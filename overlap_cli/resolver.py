"""Resolve a config into the settings Megatron-Bridge hands to Megatron-Core — a pure function.

Mirrors ``runtime_config_update`` (megatron/bridge/training/config.py:1853 in megatron-bridge 0.6.2):

1. ``apply_environment_variables``: ``env_vars`` installed with ``os.environ.setdefault``;
2. mixed precision: a recipe name becomes its ``MixedPrecisionConfig``; ``finalize()``; ``setup()``
   overwrites every same-named field of model / optimizer / ddp;
3. ``set_data_parallel_size``: ``world_size // (TP * PP * CP)``, asserted divisible;
4. ``comm_overlap.finalize()`` + ``comm_overlap.setup(model, optimizer, ddp)`` (comm_overlap.py:376-643);
5. ``validate()``: among much else, distributed-optimizer and overlap_param_gather flags are synced
   between ddp and optimizer (config.py:1945-1981).

Every effective value carries a provenance and a reason. Rules read this view; they never re-derive it.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Optional

from . import bridge, pipeline_layout
from .loader import Config, dotted
from .model import (
    BRIDGE_AUTO,
    DEFAULT,
    FORCED_OFF,
    MIXED_PRECISION,
    UNKNOWN,
    USER,
    InputError,
    InputProblem,
    Value,
)
from .target import Target

# The keys every result reports (issue: "effective holds at least these keys").
EFFECTIVE_KEYS = (
    "model.tensor_model_parallel_size",
    "model.pipeline_model_parallel_size",
    "model.virtual_pipeline_model_parallel_size",
    "model.context_parallel_size",
    "model.sequence_parallel",
    "model.tp_comm_overlap",
    "model.tp_comm_overlap_cfg",
    "model.tp_comm_bootstrap_backend",
    "model.overlap_p2p_comm",
    "model.batch_p2p_comm",
    "model.defer_embedding_wgrad_compute",
    "model.wgrad_deferral_limit",
    "model.overlap_moe_expert_parallel_comm",
    "model.delay_wgrad_compute",
    "ddp.use_distributed_optimizer",
    "ddp.overlap_grad_reduce",
    "ddp.overlap_param_gather",
    "ddp.align_param_gather",
    "ddp.bucket_size",
    "ddp.grad_reduce_in_fp32",
    "ddp.fp8_param_gather",
    "optimizer.overlap_param_gather",
    "optimizer.overlap_param_gather_with_optimizer_step",
)

MAPPING_SECTIONS = ("model", "ddp", "optimizer", "comm_overlap", "env_vars", "dataset", "train", "dist", "checkpoint")

# Types of the keys this tool reads. A value of the wrong type is an input error (exit 2), as Bridge
# would fail on it in some less readable way. bucket_size is checked by a rule instead (DP304).
_POSITIVE_INT = "positive int"
_OPT_POSITIVE_INT = "positive int or null"
_BOOL = "bool"
_OPT_BOOL = "bool or null"
_INT = "int"
_OPT_INT = "int or null"
_OPT_STR = "string or null"

KEY_TYPES: dict = {
    ("model", "tensor_model_parallel_size"): _POSITIVE_INT,
    ("model", "pipeline_model_parallel_size"): _POSITIVE_INT,
    ("model", "virtual_pipeline_model_parallel_size"): _OPT_POSITIVE_INT,
    ("model", "context_parallel_size"): _POSITIVE_INT,
    ("model", "expert_model_parallel_size"): _POSITIVE_INT,
    ("model", "num_layers"): _OPT_POSITIVE_INT,
    ("model", "sequence_parallel"): _BOOL,
    ("model", "tp_comm_overlap"): _BOOL,
    ("model", "overlap_p2p_comm"): _BOOL,
    ("model", "batch_p2p_comm"): _BOOL,
    ("model", "defer_embedding_wgrad_compute"): _BOOL,
    ("model", "wgrad_deferral_limit"): _INT,
    ("model", "overlap_moe_expert_parallel_comm"): _BOOL,
    ("model", "delay_wgrad_compute"): _BOOL,
    ("model", "gradient_accumulation_fusion"): _BOOL,
    ("model", "tp_comm_bootstrap_backend"): _OPT_STR,
    ("ddp", "use_distributed_optimizer"): _BOOL,
    ("ddp", "overlap_grad_reduce"): _BOOL,
    ("ddp", "overlap_param_gather"): _BOOL,
    ("ddp", "align_param_gather"): _BOOL,
    ("ddp", "grad_reduce_in_fp32"): _BOOL,
    ("ddp", "fp8_param_gather"): _BOOL,
    ("ddp", "num_buckets"): _OPT_INT,
    ("optimizer", "use_distributed_optimizer"): _BOOL,
    ("optimizer", "overlap_param_gather"): _BOOL,
    ("optimizer", "overlap_param_gather_with_optimizer_step"): _BOOL,
    ("comm_overlap", "tp_comm_overlap"): _BOOL,
    ("comm_overlap", "overlap_p2p_comm"): _OPT_BOOL,
    ("comm_overlap", "batch_p2p_comm"): _OPT_BOOL,
    ("comm_overlap", "overlap_grad_reduce"): _OPT_BOOL,
    ("comm_overlap", "overlap_param_gather"): _OPT_BOOL,
    ("comm_overlap", "overlap_param_gather_with_optimizer_step"): _OPT_BOOL,
    ("comm_overlap", "align_param_gather"): _OPT_BOOL,
    ("comm_overlap", "defer_embedding_wgrad_compute"): _OPT_BOOL,
    ("comm_overlap", "wgrad_deferral_limit"): _OPT_INT,
    ("comm_overlap", "overlap_moe_expert_parallel_comm"): _OPT_BOOL,
    ("comm_overlap", "delay_wgrad_compute"): _OPT_BOOL,
    ("comm_overlap", "data_parallel_size"): _OPT_POSITIVE_INT,
    ("comm_overlap", "tp_comm_bootstrap_backend"): _OPT_STR,
    # Read by the launch-time rules (EP / CP / layout / FSDP families).
    ("model", "bf16"): _BOOL,
    ("model", "fp16"): _BOOL,
    ("model", "num_moe_experts"): _OPT_INT,
    ("model", "mtp_num_layers"): _OPT_INT,
    ("model", "moe_token_dispatcher_type"): _OPT_STR,
    ("model", "moe_flex_dispatcher_backend"): _OPT_STR,
    ("model", "moe_ncclep_static_shape"): _BOOL,
    ("model", "moe_shared_expert_overlap"): _BOOL,
    ("model", "recompute_granularity"): _OPT_STR,
    ("model", "recompute_method"): _OPT_STR,
    ("model", "recompute_num_layers"): _OPT_INT,
    ("model", "overlap_dispatch_backward_with_experts_wgrad"): _BOOL,
    ("model", "ep_overlap_early_attn_memory_release"): _BOOL,
    ("model", "overlap_p2p_comm_warmup_flush"): _BOOL,
    ("model", "fine_grained_activation_offloading"): _BOOL,
    ("model", "multi_latent_attention"): _BOOL,
    ("model", "add_bias_linear"): _BOOL,
    ("model", "add_qkv_bias"): _BOOL,
    ("model", "cuda_graph_impl"): _OPT_STR,
    ("model", "seq_length"): _POSITIVE_INT,
    ("ddp", "use_megatron_fsdp"): _BOOL,
    ("ddp", "delay_wgrad_compute"): _OPT_BOOL,
    ("ddp", "reuse_grad_buf_for_mxfp8_param_ag"): _BOOL,
    ("optimizer", "optimizer"): _OPT_STR,
    ("optimizer", "use_layer_wise_distributed_optimizer"): _BOOL,
    ("optimizer", "use_precision_aware_optimizer"): _BOOL,
    ("optimizer", "reuse_grad_buf_for_mxfp8_param_ag"): _BOOL,
    ("dist", "use_megatron_fsdp"): _BOOL,
    ("dist", "use_torch_fsdp2"): _BOOL,
}


def _type_ok(kind: str, value: Any) -> bool:
    if value is None:
        return kind.endswith("or null")
    is_int = isinstance(value, int) and not isinstance(value, bool)
    if kind in (_POSITIVE_INT, _OPT_POSITIVE_INT):
        return is_int and value > 0
    if kind in (_INT, _OPT_INT):
        return is_int
    if kind in (_BOOL, _OPT_BOOL):
        return isinstance(value, bool)
    if kind == _OPT_STR:
        return isinstance(value, str)
    return True


def validate_types(cfg: Config) -> None:
    """Exit-2 problems: a section that is not a mapping, a read key of the wrong type."""
    for name in MAPPING_SECTIONS:
        if name in cfg.data and cfg.data[name] is not None and not isinstance(cfg.data[name], dict):
            line, col = cfg.position((name,))
            raise InputError(
                InputProblem(cfg.file, f"section must be a mapping, got {_describe(cfg.data[name])}", name, line, col)
            )
    mp = cfg.data.get("mixed_precision")
    if mp is not None and not isinstance(mp, (str, dict)):
        line, col = cfg.position(("mixed_precision",))
        raise InputError(
            InputProblem(
                cfg.file, f"must be a recipe name or a mapping, got {_describe(mp)}", "mixed_precision", line, col
            )
        )
    for path, kind in KEY_TYPES.items():
        if not cfg.has(path):
            continue
        value = cfg.get(path)
        if not _type_ok(kind, value):
            line, col = cfg.position(path)
            what = "a positive integer" if "positive" in kind else f"a {kind}"
            if kind.endswith("or null") and "positive" in kind:
                what = "a positive integer or null"
            problem = "non-positive parallel size" if (
                "positive" in kind and isinstance(value, int) and not isinstance(value, bool)
            ) else "wrong type"
            raise InputError(
                InputProblem(cfg.file, f"{problem}: expected {what}, got {_describe(value)}", dotted(path), line, col)
            )


def _describe(value: Any) -> str:
    if isinstance(value, bool):
        return f"boolean {str(value).lower()}"
    if isinstance(value, (int, float)):
        return f"{type(value).__name__} {value!r}"
    if isinstance(value, str):
        return f"string {value!r}"
    if value is None:
        return "null"
    return type(value).__name__


@dataclass
class Overwrite:
    """A value written in the file that Bridge replaces at launch."""

    section: str
    key: str
    file_value: Any
    new_value: Any
    by: str  # "comm_overlap" | "mixed_precision"


@dataclass
class Resolved:
    cfg: Config
    target: Target
    effective: dict = field(default_factory=dict)  # dotted key -> Value
    final: dict = field(default_factory=dict)  # section -> {key: value} after every step
    tp: int = 1
    pp: int = 1
    vpp: Optional[int] = None
    cp: int = 1
    dp: Optional[int] = None
    dp_error: Optional[str] = None
    comm_overlap_present: bool = False
    comm_overlap_user: dict = field(default_factory=dict)  # non-null comm_overlap fields in the file
    comm_overlap_missing_required: bool = False
    tp_requested: bool = False
    tp_gate: Optional[str] = None  # "tp" | "sp" | "te" — first failing reason, like Bridge
    mp_name: Optional[str] = None
    mp: Optional[dict] = None  # finalized MixedPrecisionConfig fields, or None
    mp_unknown_name: Optional[str] = None
    mp_overwrites: list = field(default_factory=list)
    co_overwrites: list = field(default_factory=list)
    distopt_at_setup: bool = False
    dp_path_ran: bool = False
    dp_defaults: dict = field(default_factory=dict)  # what Bridge's DP default computed (before user values)
    # Launch-time facts (EP / delayed wgrad / layout / FSDP rules).
    model_at_setup: dict = field(default_factory=dict)  # model as comm_overlap.setup reads it (after mixed precision)
    ddp_at_setup: dict = field(default_factory=dict)  # ddp as comm_overlap.setup reads it
    gaf_from_provider: bool = False  # gradient_accumulation_fusion not in the file: the provider's default
    layout: Optional[Any] = None  # pipeline_layout.Layout of model.pipeline_model_parallel_layout, or None
    layout_vpp: Optional[int] = None  # the virtual pipeline size the layout implies (stages / PP)
    vpp_final: Optional[int] = None  # VPP after Megatron-Core's model finalize (layout-derived when null)
    ub: Optional[Any] = None  # preset_fit.UbConfig: the userbuffers config, recognised against the presets
    megatron_fsdp: bool = False  # dist.use_megatron_fsdp or ddp.use_megatron_fsdp

    @property
    def vp(self) -> int:
        return self.vpp or 1

    @property
    def env_variable_names(self) -> tuple:
        """comm_overlap keys that are launch variables: the ENV family reports them (CFG003 skips them)."""
        from .launch_env import misplaced_names

        return misplaced_names(self.cfg)

    def value(self, key: str) -> Any:
        v = self.effective.get(key)
        return v.value if v is not None else None

    def get_final(self, section: str, key: str, default: Any = None) -> Any:
        return self.final.get(section, {}).get(key, default)

    def user_wrote(self, section: str, key: str) -> bool:
        return user_wrote(self.cfg, section, key)


def user_wrote(cfg: Config, section: str, key: str) -> bool:
    """Whether a value in the file is a choice of the user's.

    Bridge's serializer (``ConfigContainer.to_yaml``) writes every field of every dataclass section and
    marks the section with ``_target_``. In such a dump a field holding its class default is not a
    choice anybody made, so only values that differ from the default count. In a hand-written section
    (no ``_target_``) and in command-line overrides, every key present was written on purpose.
    """
    path = (section, key)
    if path in cfg.override_paths:
        return True
    sec = cfg.data.get(section)
    if not isinstance(sec, dict) or key not in sec:
        return False
    if "_target_" not in sec:
        return True
    defaults = bridge.SECTION_DEFAULTS.get(section, {})
    return key not in defaults or sec[key] != defaults[key]


def resolve(cfg: Config, target: Target) -> Resolved:
    validate_types(cfg)
    r = Resolved(cfg=cfg, target=target)

    # Start from what the file says, falling back to the dataclass defaults.
    final: dict = {}
    for section, defaults in bridge.SECTION_DEFAULTS.items():
        sec = cfg.section(section) or {}
        merged = dict(defaults)
        merged.update({k: v for k, v in sec.items() if k != "_target_"})
        final[section] = merged
    r.final = final
    prov: dict = {}  # dotted key -> Value

    def from_file(section: str, key: str) -> Value:
        if cfg.has((section, key)):
            where = "command-line override" if (section, key) in cfg.override_paths else "the file"
            if (section, key) in cfg.interpolated_paths:
                where += f" through the interpolation {cfg.raw_interpolations.get((section, key), '${...}')}"
            return Value(final[section][key], USER, f"set in {where}")
        default = bridge.SECTION_DEFAULTS[section].get(key)
        return Value(default, DEFAULT, "not in the file: Megatron-Core/Bridge class default")

    for key in EFFECTIVE_KEYS:
        section, name = key.split(".", 1)
        prov[key] = from_file(section, name)

    model, ddp, opt = final["model"], final["ddp"], final["optimizer"]
    # GPTModelProvider's default is "Transformer Engine (or apex's fused kernel) imports"
    # (megatron/bridge/models/gpt_provider.py:205, utils/fusions.py), not Megatron-Core's False.
    if not cfg.has(("model", "gradient_accumulation_fusion")):
        model["gradient_accumulation_fusion"] = bool(target.transformer_engine)
        r.gaf_from_provider = True
    r.tp = model["tensor_model_parallel_size"]
    r.pp = model["pipeline_model_parallel_size"]
    r.vpp = model["virtual_pipeline_model_parallel_size"]
    r.cp = model["context_parallel_size"]

    # -- 2. mixed precision ---------------------------------------------------------------------
    mp_raw = cfg.data.get("mixed_precision")
    if isinstance(mp_raw, str):
        recipe = bridge.lookup_mp_recipe(mp_raw)
        r.mp_name = mp_raw
        if recipe is None:
            r.mp_unknown_name = mp_raw  # Bridge raises ValueError; nothing is applied
        else:
            r.mp = bridge.finalize_mp(recipe)
    elif isinstance(mp_raw, dict):
        mp = dict(bridge.MP_DEFAULTS)
        mp.update({k: v for k, v in mp_raw.items() if k in bridge.MP_DEFAULTS})
        # __setattr__ keeps fp8_param == fp8_param_gather (and fp4) once both exist: the later field wins.
        if "fp8_param_gather" in mp_raw or mp.get("fp8_param") is None:
            mp["fp8_param"] = mp["fp8_param_gather"]
        if "fp4_param_gather" in mp_raw or mp.get("fp4_param") is None:
            mp["fp4_param"] = mp["fp4_param_gather"]
        r.mp_name = "the mixed_precision mapping"
        r.mp = bridge.finalize_mp(mp)
    if r.mp is not None:
        for section, keys in bridge.MP_LANDS_ON.items():
            for key in keys:
                new = r.mp.get(key)
                old = final[section].get(key)
                if key in final[section] and old == new:
                    continue
                if cfg.has((section, key)) and user_wrote(cfg, section, key) and old != new:
                    r.mp_overwrites.append(Overwrite(section, key, old, new, "mixed_precision"))
                final[section][key] = new
        for key in ("ddp.grad_reduce_in_fp32", "ddp.fp8_param_gather"):
            section, name = key.split(".")
            prov[key] = Value(
                final[section][name],
                MIXED_PRECISION,
                f"written by mixed precision ({r.mp_name}) before comm_overlap runs",
            )

    # -- 3. data-parallel size ------------------------------------------------------------------
    ws = target.world_size
    if ws is not None:
        model_size = r.tp * r.pp * r.cp
        if ws % model_size:
            r.dp_error = (
                f"world size {ws} is not divisible by TP*PP*CP = {r.tp}*{r.pp}*{r.cp} = {model_size}"
            )
        else:
            r.dp = ws // model_size

    # -- 4. comm_overlap finalize + setup --------------------------------------------------------
    # Bridge's EP-overlap and delayed-wgrad pre-checks read these values, before setup overwrites them.
    r.model_at_setup, r.ddp_at_setup = dict(model), dict(ddp)
    co = cfg.data.get("comm_overlap")
    r.comm_overlap_present = isinstance(co, dict)
    if r.comm_overlap_present:
        _setup_comm_overlap(r, co, prov)

    # -- 5. validate(): Megatron-FSDP forcing (config.py:1345 -> 1065-1116), then the distributed-
    # optimizer and overlap_param_gather sync. FSDP runs after comm_overlap, so its distopt comes too late
    # for Bridge's DP defaults.
    r.megatron_fsdp = cfg.get(("dist", "use_megatron_fsdp")) is True or ddp.get("use_megatron_fsdp") is True
    if r.megatron_fsdp:
        for section in ("ddp", "optimizer"):
            if final[section]["use_distributed_optimizer"] is not True:
                final[section]["use_distributed_optimizer"] = True
                if f"{section}.use_distributed_optimizer" in prov:
                    prov[f"{section}.use_distributed_optimizer"] = Value(
                        True,
                        BRIDGE_AUTO,
                        "Megatron-FSDP forces the distributed optimizer on in validate(), after comm_overlap ran",
                    )
    if ddp["use_distributed_optimizer"] or opt["use_distributed_optimizer"]:
        if ddp["use_distributed_optimizer"] != opt["use_distributed_optimizer"]:
            ddp_was_off = not ddp["use_distributed_optimizer"]
            ddp["use_distributed_optimizer"] = opt["use_distributed_optimizer"] = True
            if ddp_was_off:
                # Only the ddp flag is reported; when it was already on, the ddp value stands as written
                # and validate() merely turns the optimizer's flag on to match (config.py:1955-1967).
                prov["ddp.use_distributed_optimizer"] = Value(
                    True,
                    BRIDGE_AUTO,
                    "validate() turns the distributed optimizer on in ddp because optimizer.use_distributed_optimizer "
                    "is true — after comm_overlap ran, so Bridge's DP defaults were skipped",
                )
    if ddp["overlap_param_gather"] is True or opt["overlap_param_gather"] is True:
        for section, other in (("ddp", "optimizer"), ("optimizer", "ddp")):
            if final[section]["overlap_param_gather"] is not True:
                final[section]["overlap_param_gather"] = True
                prov[f"{section}.overlap_param_gather"] = Value(
                    True, BRIDGE_AUTO, f"validate() syncs it with {other}.overlap_param_gather=true"
                )

    # Bridge's TransformerConfig.finalize drops sequence_parallel silently when TP <= 1
    # (megatron/bridge/models/transformer_config.py), before Megatron-Core would reject it.
    if model["sequence_parallel"] and r.tp <= 1:
        model["sequence_parallel"] = False
        prov["model.sequence_parallel"] = Value(
            False, FORCED_OFF, "Bridge's model finalize turns sequence_parallel off when TP <= 1"
        )

    # Megatron-Core derives VPP from pipeline_model_parallel_layout at model finalize (transformer_config.py
    # :1936-1985), after comm_overlap chose its p2p / align_param_gather defaults from the null value.
    r.layout = pipeline_layout.read_layout(model.get("pipeline_model_parallel_layout"))
    r.layout_vpp = pipeline_layout.derived_vpp(r.layout, r.pp)
    r.vpp_final = r.vpp
    if r.vpp is None and r.layout_vpp is not None and r.layout_vpp > 1:
        r.vpp_final = model["virtual_pipeline_model_parallel_size"] = r.layout_vpp
        prov["model.virtual_pipeline_model_parallel_size"] = Value(
            r.layout_vpp,
            BRIDGE_AUTO,
            f"derived by Megatron-Core from pipeline_model_parallel_layout ({r.layout.stages} stages / PP {r.pp}) "
            "at model finalize, after comm_overlap ran",
        )

    for key in EFFECTIVE_KEYS:
        section, name = key.split(".", 1)
        v = prov[key]
        if v.source not in (UNKNOWN,):
            v.value = final[section].get(name, v.value)
    _describe_ub_cfg(r, prov)
    r.effective = prov
    return r


def _describe_ub_cfg(r: Resolved, prov: dict) -> None:
    """Recognise the userbuffers config against the shipped presets (UB6xx rules, issue 4).

    The effective ``model.tp_comm_overlap_cfg`` becomes ``{"preset": NAME | "custom" | null, "matches":
    [...], "te_config": {...}}`` -- ``te_config`` is what Transformer Engine receives, None unless TP
    overlap is effective -- or stays null when nothing is given (Transformer Engine defaults).
    """
    from .preset_fit import describe_cfg, training_shape

    if r.comm_overlap_present:
        key = "comm_overlap.tp_comm_overlap_cfg"
        given = r.cfg.data["comm_overlap"].get("tp_comm_overlap_cfg")
    else:
        key = "model.tp_comm_overlap_cfg"
        given = r.cfg.get(("model", "tp_comm_overlap_cfg"))
    r.ub = describe_cfg(given, key, training_shape(r), tp_effective=bool(r.final["model"].get("tp_comm_overlap")))
    if r.ub.kind != "null":
        prov["model.tp_comm_overlap_cfg"].value = r.ub.effective_value()


def _setup_comm_overlap(r: Resolved, co: dict, prov: dict) -> None:
    cfg, target = r.cfg, r.target
    model, ddp, opt = r.final["model"], r.final["ddp"], r.final["optimizer"]
    known = bridge.COMM_OVERLAP_FIELDS
    if "tp_comm_overlap" not in co:
        r.comm_overlap_missing_required = True
    # finalize(): snapshot of the user's fields. ``None`` means "let Bridge decide" for every field.
    user = {k: v for k, v in co.items() if k in known and k != "data_parallel_size" and v is not None}
    if "tp_comm_bootstrap_backend" not in co:
        user["tp_comm_bootstrap_backend"] = "nccl"  # the dataclass default is not None
    r.comm_overlap_user = {k: v for k, v in co.items() if k in known and v is not None and k != "_target_"}

    def in_file(key: str) -> str:
        return "command-line override" if ("comm_overlap", key) in cfg.override_paths else "the file"

    # _get_model_comm_overlap_cfgs: defaults, the TP gate, the PP choice, then user values win.
    auto: dict = {
        "tp_comm_overlap": False,
        "tp_comm_overlap_cfg": None,
        "defer_embedding_wgrad_compute": False,
        "wgrad_deferral_limit": -1,
        "overlap_moe_expert_parallel_comm": False,
        "delay_wgrad_compute": False,
        "tp_comm_bootstrap_backend": None,
    }
    reasons: dict = {
        "tp_comm_overlap": (BRIDGE_AUTO, "comm_overlap present without tp_comm_overlap: true; Bridge writes false"),
        "tp_comm_overlap_cfg": (BRIDGE_AUTO, "comm_overlap writes its tp_comm_overlap_cfg (none given)"),
        "defer_embedding_wgrad_compute": (BRIDGE_AUTO, "comm_overlap writes false unless set in comm_overlap"),
        "wgrad_deferral_limit": (BRIDGE_AUTO, "comm_overlap writes -1 unless set in comm_overlap"),
        "overlap_moe_expert_parallel_comm": (BRIDGE_AUTO, "comm_overlap writes false unless set in comm_overlap"),
        "delay_wgrad_compute": (BRIDGE_AUTO, "comm_overlap writes false unless set in comm_overlap"),
    }
    r.tp_requested = co.get("tp_comm_overlap") is True
    if r.tp_requested:
        if r.tp < 2:
            r.tp_gate = "tp"
        elif not model.get("sequence_parallel"):
            r.tp_gate = "sp"
        elif not target.transformer_engine:
            r.tp_gate = "te"
        if r.tp_gate:
            user["tp_comm_overlap"] = False
    if r.pp > 1:
        if r.vp > 1:
            auto["overlap_p2p_comm"], auto["batch_p2p_comm"] = True, False
            why = f"PP={r.pp} > 1 and VPP={r.vp} > 1: Bridge picks overlapped p2p (interleaved schedule)"
        else:
            auto["overlap_p2p_comm"], auto["batch_p2p_comm"] = False, True
            why = f"PP={r.pp} > 1 without VPP: Bridge picks batched p2p; p2p overlap needs VPP > 1"
    else:
        auto["overlap_p2p_comm"], auto["batch_p2p_comm"] = False, False
        why = "PP=1: no pipeline p2p communication"
    reasons["overlap_p2p_comm"] = reasons["batch_p2p_comm"] = (BRIDGE_AUTO, why)

    model_cfg = dict(auto)
    for k, v in user.items():
        model_cfg[k] = v
    for k in bridge.LANDS_ON_MODEL:
        new = model_cfg.get(k)
        key = f"model.{k}"
        if k in user:
            if k == "tp_comm_overlap" and r.tp_gate:
                src = (FORCED_OFF, _gate_reason(r))
            elif k == "tp_comm_bootstrap_backend" and "tp_comm_bootstrap_backend" not in co:
                src = (DEFAULT, "CommOverlapConfig default 'nccl'")
            else:
                src = (USER, f"comm_overlap.{k} in {in_file(k)} wins over Bridge's default")
        else:
            src = reasons.get(k, (BRIDGE_AUTO, "written by comm_overlap"))
        if user_wrote(cfg, "model", k) and model.get(k) != new and k != "tp_comm_overlap_cfg":
            r.co_overwrites.append(Overwrite("model", k, model.get(k), new, "comm_overlap"))
        model[k] = new
        if key in prov:
            prov[key] = Value(new, *src)

    # setup(): what reaches the model for the userbuffer config and bootstrap backend.
    if model["tp_comm_overlap"]:
        ub = model_cfg.get("tp_comm_overlap_cfg")
        if ub is None:
            prov["model.tp_comm_overlap_cfg"] = Value(
                None, BRIDGE_AUTO, "no userbuffers config given: Transformer Engine's built-in defaults"
            )
        elif isinstance(ub, dict):
            te = {k: _strip_target(v) for k, v in ub.items() if k != "_target_" and v is not None}
            model["tp_comm_overlap_cfg"] = te
            prov["model.tp_comm_overlap_cfg"] = Value(
                te, USER, "comm_overlap.tp_comm_overlap_cfg converted with asdict(), None entries dropped"
            )
        else:
            prov["model.tp_comm_overlap_cfg"] = Value(
                ub, USER, "a plain value here makes Bridge's asdict() fail at launch (UB603)"
            )
    else:
        ub = model_cfg.get("tp_comm_overlap_cfg")
        if ub is not None:
            prov["model.tp_comm_overlap_cfg"] = Value(
                ub, USER, "copied onto the model, but unused: TP overlap is off"
            )

    # DP path: only with Megatron DDP + the distributed optimizer, as the flag stands at setup time.
    r.distopt_at_setup = bool(ddp.get("use_distributed_optimizer"))
    if not r.distopt_at_setup:
        return
    r.dp_path_ran = True
    dp_defaults: dict = {
        "bucket_size": None,
        "overlap_grad_reduce": False,
        "overlap_param_gather": False,
        "overlap_param_gather_with_optimizer_step": False,
        "align_param_gather": False,
    }
    if r.dp is not None and r.dp > 1:
        dp_defaults.update(bucket_size=bridge.BRIDGE_BUCKET_SIZE, overlap_grad_reduce=True, overlap_param_gather=True)
        if r.pp > 1 and r.vp > 1:
            dp_defaults["align_param_gather"] = True
    r.dp_defaults = dict(dp_defaults)
    dp_cfg = {k: None for k in bridge.COMM_OVERLAP_FIELDS if k not in ("tp_comm_overlap", "data_parallel_size")}
    dp_cfg.update(dp_defaults)
    for k, v in user.items():
        dp_cfg[k] = v
    for section, fields_ in (("optimizer", bridge.LANDS_ON_OPTIMIZER), ("ddp", bridge.LANDS_ON_DDP)):
        target_sec = r.final[section]
        for k in fields_:
            new = dp_cfg.get(k)
            key = f"{section}.{k}"
            if k in user:
                src = (USER, f"comm_overlap.{k} in {in_file(k)} wins over Bridge's DP default")
                unknown = False
            elif k in dp_defaults:
                src, unknown = _dp_reason(r, k, dp_defaults[k])
            else:
                src, unknown = (BRIDGE_AUTO, "written by comm_overlap's DP path (not set in comm_overlap: None)"), False
            if not unknown and user_wrote(cfg, section, k) and target_sec.get(k) != new:
                r.co_overwrites.append(Overwrite(section, k, target_sec.get(k), new, "comm_overlap"))
                if target_sec.get(k) is True and new is False and src[0] == BRIDGE_AUTO:
                    src = (FORCED_OFF, f"{section}.{k}: true in the file is overwritten: {src[1]}")
            target_sec[k] = None if unknown else new
            if key in prov:
                prov[key] = Value(None if unknown else new, *src)


def _strip_target(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: _strip_target(v) for k, v in value.items() if k != "_target_"}
    return value


def _gate_reason(r: Resolved) -> str:
    if r.tp_gate == "tp":
        return f"TP overlap requested, but TP={r.tp} < 2: Bridge disables it (one log line)"
    if r.tp_gate == "sp":
        return "TP overlap requested, but sequence_parallel is false: Bridge disables it (one log line)"
    return "TP overlap requested, but Transformer Engine is absent on the target: Bridge disables it"


def _dp_reason(r: Resolved, key: str, value: Any) -> tuple[tuple[str, str], bool]:
    """Provenance of a DP default; ``unknown`` when the world size was not given."""
    if r.dp is None:
        if key == "overlap_param_gather_with_optimizer_step":
            return (BRIDGE_AUTO, "Bridge leaves it off (disabled upstream: checkpointing issue)"), False
        when = {
            "bucket_size": f"{bridge.BRIDGE_BUCKET_SIZE} parameters",
            "overlap_grad_reduce": "true",
            "overlap_param_gather": "true",
            "align_param_gather": "true" if (r.pp > 1 and r.vp > 1) else "false (needs PP > 1 and VPP > 1)",
        }[key]
        off = "null" if key == "bucket_size" else "false"
        why = r.dp_error or "world size not given (--world-size or --nodes/--gpus-per-node)"
        return (UNKNOWN, f"depends on data-parallel size ({why}): {when} when DP > 1, {off} when DP = 1"), True
    if r.dp > 1:
        if value in (None, False):
            if key == "align_param_gather":
                return (BRIDGE_AUTO, f"DP={r.dp} > 1 but align_param_gather needs PP > 1 and VPP > 1"), False
            return (BRIDGE_AUTO, "Bridge leaves it off (disabled upstream: checkpointing issue)"), False
        return (BRIDGE_AUTO, f"DP={r.dp} > 1 with the distributed optimizer: Bridge's DP default"), False
    return (BRIDGE_AUTO, "DP=1: Bridge's DP path forces DP overlap off"), False
