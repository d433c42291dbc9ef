"""The resolved view rules read: effective values with provenance plus the facts Bridge's launch
steps decide (TP gate, DP size, what mixed precision and comm_overlap overwrite, ...)."""

from __future__ import annotations

TYPE_CHECKING = False  # the typing module costs ~2.5 ms of start-up; annotations here are strings (PEP 563)
if TYPE_CHECKING:
    from typing import Any, Optional

from overlap_cli.frameworks.bridge import facts as bridge
from overlap_cli.config.document import Config
from overlap_cli.records import dataclass, field  # not dataclasses: start-up time (records.py)
from overlap_cli.launch_profile.profile import Target

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
    gaf_from_provider: bool = False  # gradient_accumulation_fusion built on the target: the provider's default
    gaf_dumped: bool = False  # a dump's gradient_accumulation_fusion: false where the provider computes it (no TE there)
    layout: Optional[Any] = None  # pipeline_layout.Layout of model.pipeline_model_parallel_layout, or None
    layout_vpp: Optional[int] = None  # the virtual pipeline size the layout implies (stages / PP)
    vpp_final: Optional[int] = None  # VPP after Megatron-Core's model finalize (layout-derived when null)
    ub: Optional[Any] = None  # preset_fit.UbConfig: the userbuffers config, recognised against the presets
    megatron_fsdp: bool = False  # dist.use_megatron_fsdp or ddp.use_megatron_fsdp
    # launch_env.plan's EnvEntry list, computed on first use: a pure function of the fields above.
    launch_env_plan: Optional[list] = field(default=None, repr=False, compare=False)
    # launch_env.misplaced's list, computed on first use (three rules read it): a pure function of cfg.
    launch_env_misplaced: Optional[tuple] = field(default=None, repr=False, compare=False)

    @property
    def vp(self) -> int:
        return self.vpp or 1

    @property
    def env_variable_names(self) -> tuple:
        """comm_overlap keys that are launch variables: the ENV family reports them (CFG003 skips them)."""
        from overlap_cli.frameworks.bridge.launch_env import misplaced_names

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
    if cfg.layered:  # a merged run: a key an override file, a dotlist or a Python run's assignment wrote is a
        # choice (a Python run's top layer holds only what the script assigns: python_load.py); the recipe's
        # values are read as a dump
        layer = cfg.layer_of(path)
        if layer is not None and layer.kind in ("file", "command line", "python") and cfg.has(path):
            return True
    sec = cfg.data.get(section)
    if not isinstance(sec, dict) or key not in sec:
        return False
    if "_target_" not in sec:
        return True
    defaults = bridge.SECTION_DEFAULTS.get(section, {})
    return key not in defaults or sec[key] != defaults[key]
