"""The resolved view rules read: effective values with provenance plus the facts Bridge's launch
steps decide (TP gate, DP size, what mixed precision and comm_overlap overwrite, ...)."""

from __future__ import annotations

TYPE_CHECKING = False  # the typing module costs ~2.5 ms of start-up; annotations here are strings (PEP 563)
if TYPE_CHECKING:
    from typing import Any, Optional

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
    energon_cleared: tuple = ()  # model fields a release's Energon-packing switch cleared before comm_overlap
    # launch_env.plan's EnvEntry list, computed on first use: a pure function of the fields above.
    launch_env_plan: Optional[list] = field(default=None, repr=False, compare=False)
    # launch_env.misplaced's list, computed on first use (three rules read it): a pure function of cfg.
    launch_env_misplaced: Optional[tuple] = field(default=None, repr=False, compare=False)
    # releases.of(target), looked up on first use (the rules ask for it thousands of times per run).
    release_data: Optional[Any] = field(default=None, repr=False, compare=False)

    @property
    def vp(self) -> int:
        return self.vpp or 1

    @property
    def release(self):
        """The data of the Megatron-Bridge release this run is checked against (frameworks.bridge.releases)."""
        data = self.release_data
        if data is None:
            from overlap_cli.frameworks.bridge import releases

            data = self.release_data = releases.of(self.target)
        return data

    @property
    def env_variable_names(self) -> tuple:
        """comm_overlap keys that are launch variables: the ENV family reports them (CFG003 skips them)."""
        from overlap_cli.frameworks.bridge.launch_env import misplaced_names

        return misplaced_names(self.cfg)

    def requested(self, key: str) -> Any:
        """``comm_overlap.<key>`` as comm_overlap's setup reads it: the file's value, unless the release
        cleared it before setup (``energon_cleared``: main's Energon-packing switch); None without the section."""
        if not self.comm_overlap_present:
            return None
        return False if key in self.energon_cleared else self.cfg.get(("comm_overlap", key))

    def value(self, key: str) -> Any:
        v = self.effective.get(key)
        return v.value if v is not None else None

    def get_final(self, section: str, key: str, default: Any = None) -> Any:
        return self.final.get(section, {}).get(key, default)

    def user_wrote(self, section: str, key: str) -> bool:
        return user_wrote(self.cfg, section, key)

    def written(self, key: str) -> Optional[tuple]:
        """(value, where) of the value the user wrote at the dotted ``key`` (``written_at``), None when the
        value there is not theirs (rules.common.keep_user_values asks every framework's view this)."""
        path = tuple(int(p) if p.isdigit() else p for p in key.split("."))
        where = written_at(self.cfg, path)
        return None if where is None else (self.cfg.get(path), where)


# The layers of a merged run whose values are the user's words (config.layers, python_load): an override
# file, the command line (a dotlist, a run_recipe.py launch's override words), a Python run's assignments.
# A catalog recipe and a base (a dump given with --base, a Python run's start) hold what Bridge built.
WRITTEN_LAYERS = ("file", "command line", "python")


def user_wrote(cfg: Config, section: str, key: str) -> bool:
    return written_at(cfg, (section, key)) is not None


def written_at(cfg: Config, path: tuple) -> Optional[str]:
    """Where the user wrote the value at ``path`` — ``FILE:LINE`` of their own file, ``the command line`` —
    or None when the value is not their words: a catalog recipe's, a dump's, a class default, a preset's.

    The one notion of "the user wrote this" (the resolver's overwrites, MP401, the safe-fix policy of
    rules.common.keep_user_values). In a merged run the layer that wrote the value decides. In a single file
    a section Bridge serialised (``ConfigContainer.to_yaml`` writes every field of every dataclass and
    marks the section with ``_target_``) holds what Bridge built, not what anybody asked for, exactly as
    the same file given with ``--base`` does; a hand-written section (no ``_target_``) is the user's.
    """
    path = tuple(path)
    if cfg.layered:
        layer = _writer(cfg, path) if cfg.has(path) else None
        if layer is None or layer.kind not in WRITTEN_LAYERS:
            return None
        label = cfg.label(path)  # a run_recipe.py launch's words name the script's line
        return "the command line" if label == "command line" else label
    if path in cfg.override_paths:
        return "the command line"
    if not cfg.has(path) or cfg.constructed(str(path[0])) is not None:
        return None
    line = cfg.position(path)[0]
    return f"{cfg.file}:{line}" if line is not None else cfg.file


def _writer(cfg: Config, path: tuple):
    """The layer that wrote the value at ``path`` itself — not the one that wrote the mapping around it: a key
    under the user's ``model:`` that only a sample of an unknown recipe value fills is nobody's. A value inside
    a list is the list's writer's."""
    p = path
    while p:
        i = cfg.layers.get(p)
        if i is not None:
            return cfg.layer_list[i]
        p = p[:-1]
        if isinstance(cfg.get(p), dict):
            return None
    return None
