"""The resolved view of a Megatron-LM launch: what rules, reports, fix and the cost model read.

It has the fields of Bridge's ``Resolved`` that do not depend on Bridge (``effective``, ``final``,
``target``, ``tp``/``pp``/``vpp``/``cp``/``dp``, ``value()``, ``get_final()``), so a rule that reads only
Megatron-Core facts runs on either; ``cfg`` answers the few questions such rules ask of a config
(``position``, ``has``, ``get``) in terms of the launch's flags. What validate_args asserts and what it
switches off silently are recorded in launch order (``assertions``, ``forcings``): the LM rules report them.
"""

from __future__ import annotations

TYPE_CHECKING = False  # the typing module costs ~2.5 ms of start-up; annotations here are strings (PEP 563)
if TYPE_CHECKING:
    from typing import Any, Optional

from overlap_cli.frameworks.megatron_lm import facts as lm
from overlap_cli.records import dataclass, field  # not dataclasses: start-up time (records.py)

FRAMEWORK = "megatron-lm"


@dataclass(frozen=True)
class Assertion:
    """An ``assert`` (or raise) the launch would hit: ``message`` is what it prints, ``at`` where."""

    id: str
    message: str
    at: str
    dests: tuple = ()  # the argparse dests it is about, the first locating the finding
    who: str = ""  # who fails, in words ("TransformerConfig raises"); "" for validate_args' asserts
    bare: bool = False  # an assert without a message: ``message`` is its source text


@dataclass(frozen=True)
class Forcing:
    """A value validate_args replaces without failing: ``printed`` is its log line ("" when silent)."""

    id: str
    dest: str
    old: Any
    new: Any
    at: str
    printed: str = ""


class LaunchConfig:
    """The questions shared rules ask of a config, answered from the launch: a Megatron-Core field
    (``("model", "sequence_parallel")``) is the flag of the same dest (or of its renamed dest, facts.DEST_OF)."""

    override_paths = frozenset()
    interpolated_paths = ()
    raw_interpolations: dict = {}
    uses_env_resolver = False
    data: dict = {}  # no sections: comm_overlap, env_vars and the rest are Bridge's

    def __init__(self, launch):
        self.launch = launch
        self.file = launch.file
        self.text = launch.text
        self.warnings: list = []

    @staticmethod
    def dest_of(path: tuple) -> str:
        dotted = ".".join(str(p) for p in path)
        return lm.DEST_OF.get(dotted, str(path[-1]))

    def arg(self, path: tuple):
        if len(path) < 2 or path[0] not in ("model", "ddp", "optimizer", "train"):
            return None
        return self.launch.args.get(self.dest_of(path))

    def has(self, path: tuple) -> bool:
        return self.arg(path) is not None

    def get(self, path: tuple, default: Any = None) -> Any:
        a = self.arg(path)
        if a is None:
            return default
        from overlap_cli.frameworks.megatron_lm.args import UNKNOWN

        return default if a.value is UNKNOWN else a.value

    def position(self, path: tuple) -> tuple:
        """(line, column) of the flag, else of the launch line."""
        a = self.arg(path) if isinstance(path, tuple) else None
        if a is not None:
            return a.line, a.column
        return self.launch.launch_line, 1

    def section(self, name: str) -> dict:
        return {}

    layered = False  # a launch is one file: no recipe or base layers under it

    def origin(self, path: tuple) -> Optional[str]:
        return None


@dataclass(frozen=True)
class EnvSetting:
    """One launch variable in the shape of launch_env.EnvEntry's readers: ``name`` and ``effective()``."""

    name: str
    value: Any  # results.Value

    def effective(self):
        return self.value


@dataclass
class LMResolved:
    launch: Any  # args.Launch
    cfg: Any  # LaunchConfig
    target: Any  # target.profile.Target (world size from the launch when it says)
    effective: dict = field(default_factory=dict)  # Megatron-Core dotted key -> Value
    final: dict = field(default_factory=dict)  # model / ddp / optimizer / train -> {field: value}
    args: dict = field(default_factory=dict)  # every dest after validate_args (UNKNOWN where not known)
    tp: Optional[int] = 1
    pp: Optional[int] = 1
    vpp: Optional[int] = None
    cp: Optional[int] = 1
    ep: Optional[int] = 1
    dp: Optional[int] = None
    dp_error: Optional[str] = None
    world_size: Optional[int] = None
    world_source: str = "unknown"  # "launch" (torchrun's literal sizes) | the target's source
    vpp_known: bool = True
    vpp_unknown_why: str = ""  # why the virtual pipeline is not known (when vpp_known is False)
    dp_unknown_why: str = ""  # why the data-parallel size is not known (when dp is None)
    etp: Optional[int] = None  # expert tensor parallelism after validate_args (TP when not given)
    gtp: Optional[int] = 1  # the GTP weight-remat degrees (--tensor-parallel-num-weight-shards / TP)
    egtp: Optional[int] = 1
    grid: Any = None  # process_grid.Grid: the sizes initialize_model_parallel gets
    max_connections: Any = None  # CUDA_DEVICE_MAX_CONNECTIONS at launch: str, None (unset) or UNKNOWN
    max_connections_from: str = ""  # how it is set, in words
    max_connections_unexported: bool = False  # assigned in the script without export
    # Whether validate_args asserts CUDA_DEVICE_MAX_CONNECTIONS == "1" (arguments.py:1413-1439): True /
    # False, or None while the GPU generation (or TP / CP) is not known.
    max_conn_needs_one: Optional[bool] = None
    launch_warnings: list = field(default_factory=list)  # warnings validate_args prints (no change made)
    inference: bool = False  # an inference run: no gradients, no DP gradient reduction
    delay_wgrad_ogr_te: bool = False  # --delay-wgrad-compute with --overlap-grad-reduce: needs TE >= 2.8.0
    layer_wise_distopt: bool = False  # an emerging optimizer (muon, ...) shards its state layer by layer
    open_words: list = field(default_factory=list)  # unknown expansions that may hold any flags ("$EXTRA_ARGS")
    assertions: list = field(default_factory=list)  # Assertion, in validate_args order
    # (Assertion, the decisions it depends on) of what asserts on some of the launch's paths (each resolved
    # alone) where the paths merged leave it unknown
    path_assertions: list = field(default_factory=list)
    forcings: list = field(default_factory=list)  # Forcing, in validate_args order
    # Fields of Bridge's view that shared rules read; a Megatron-LM launch has no comm_overlap section.
    comm_overlap_present: bool = False
    model_at_setup: dict = field(default_factory=dict)
    gaf_from_provider: bool = False
    gaf_dumped: bool = False  # a dumped false (Bridge only: a launch has no dump)
    megatron_fsdp: bool = False
    layout: Any = None  # (Bridge's pipeline_layout.Layout; Megatron-LM's VPP from a layout is in vpp)
    layout_vpp: Optional[int] = None  # validate_args already derives VPP from a layout (vpp holds it)
    ub: Any = None  # no userbuffers preset object: --tp-comm-overlap-cfg names a YAML file the launch reads
    # The launch environment as Bridge's launch_env.plan caches it (EnvSetting per env.* entry), so readers
    # of that plan (effective_entries) see the launch's variables.
    launch_env_plan: Optional[list] = None
    framework: str = FRAMEWORK

    @property
    def vp(self) -> int:
        return self.vpp or 1

    @property
    def vpp_final(self) -> Optional[int]:
        return self.vpp

    def value(self, key: str) -> Any:
        v = self.effective.get(key)
        return v.value if v is not None else None

    def get_final(self, section: str, key: str, default: Any = None) -> Any:
        return self.final.get(section, {}).get(key, default)

    def user_wrote(self, section: str, key: str) -> bool:
        return self.cfg.has((section, key))

    def written(self, key: str) -> Optional[tuple]:
        """(value, where) of what the launch's words give for ``key`` — every flag and exported variable of a
        launch is the user's word (rules.common.keep_user_values) — None when the launch does not give it.
        ``key`` is a flag (``--x``: its value is whether that very spelling is given), ``env.NAME`` or a
        config key (``model.sequence_parallel``) of a rule shared with Bridge."""
        launch = self.launch
        if key.startswith("env."):
            var = launch.env.get(key[len("env."):])
            if var is None:
                return None
            return var.value, f"{launch.file}:{var.line}" if var.line else launch.file
        if key.startswith("-"):
            from overlap_cli.frameworks.megatron_lm.args import option

            arg = next((a for a in launch.args.values()
                        if a.flag == key or key in ((option(a.dest, launch.core_version) or {}).get("flags") or ())), None)
            value = None if arg is None else arg.flag == key
        else:
            arg = self.cfg.arg(tuple(key.split(".")))
            value = None if arg is None else arg.value
        if arg is None:
            return None
        if arg.line:
            return value, f"{launch.file}:{arg.line}"
        return value, "the command line" if arg.origin == "command line" else launch.file

    # -- for the LM rules ------------------------------------------------------------------------

    def given(self, dest: str):
        """The launch's Arg for ``dest``, or None when the flag is not given."""
        return self.launch.args.get(dest)

    def asserted(self, *ids: str) -> list:
        return [a for a in self.assertions if a.id in ids]

    def forced(self, *ids: str) -> list:
        return [f for f in self.forcings if f.id in ids]
