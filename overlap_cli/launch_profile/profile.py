"""The target profile: where the config will run. Not part of the file, so it is given (or looked up) here.

Every field carries a source, in this order of precedence:
``flag`` (command line) > ``directive`` (a ``# overlap: target ...`` comment in the config itself) >
``per-file-target`` (``[tool.overlap.per-file-target]``, glob -> table) > ``recipe`` (the world size and
GPU a catalog recipe the run starts from is tuned for) > ``pyproject`` (``[tool.overlap]``) > ``detected`` (``--detect`` read this machine) > ``default`` > ``unknown``. The closer a statement is to
one config file, the more it says about that file's launch: a repository of configs for 8 to 1,024 GPUs
needs a target per file, and the machine running the check (``--detect``) is usually not the one the
config will launch on. A flag outranks all of them because it is the most deliberate statement.
A target is never guessed from a file name.
"""

from __future__ import annotations

TYPE_CHECKING = False  # the typing module costs ~2.5 ms of start-up; annotations here are strings (PEP 563)
if TYPE_CHECKING:
    from typing import Any, Optional

from overlap_cli import lazyre
from overlap_cli.records import dataclass, field  # not dataclasses: start-up time (records.py)

FLAG, DIRECTIVE, PER_FILE, PYPROJECT, DETECTED = "flag", "directive", "per-file-target", "pyproject", "detected"
DEFAULT, UNKNOWN = "default", "unknown"
RECIPE = "recipe"  # the launch a catalog recipe is tuned for (its world size and GPU), see apply_recipe
LAUNCH = "launch"  # the run's own launch line (torchrun's / srun's sizes, what it exports), see for_run
_RANK = {FLAG: 8, DIRECTIVE: 7, PER_FILE: 6, LAUNCH: 5, RECIPE: 4, PYPROJECT: 3, DETECTED: 2, DEFAULT: 1, UNKNOWN: 0}

# GPU names accepted by --gpu and [tool.overlap] gpu, with their CUDA compute capability.
# B300/GB300 are sm_103, B200/GB200 sm_100; everything at 10.0 or above counts as "SM100 or newer",
# the split Megatron-Core makes (``torch.cuda.get_device_capability()[0] >= 10``, e.g.
# megatron/core/transformer/moe/token_dispatcher.py:1546, megatron/training/arguments.py's
# CUDA_DEVICE_MAX_CONNECTIONS check) and every CUDA_DEVICE_MAX_CONNECTIONS launcher in Bridge and NeMo.
# The Rubin parts Bridge 0.6.2 ships recipes for (megatron/bridge/perf_recipes/*/vr200, .../r100) are
# newer than Blackwell, so they are in that family too; Bridge's own performance launcher treats vr200 as
# Blackwell for CUDA_DEVICE_MAX_CONNECTIONS (scripts/performance/utils/overrides.py:259) and both as
# NVL72 domains (:271). Their compute capability is not stated in either code base: None here, the
# generation alone is known.
GPUS: dict = {
    "a100": "8.0",
    "h100": "9.0",
    "h200": "9.0",
    "b200": "10.0",
    "b300": "10.3",
    "gb200": "10.0",
    "gb300": "10.3",
    "vr200": None,
    "r100": None,
}
HOPPER_OR_OLDER = "hopper-or-older"
SM100_OR_NEWER = "sm100-or-newer"
# The generation of a GPU whose compute capability is not known (see GPUS).
GPU_GENERATIONS: dict = {"vr200": SM100_OR_NEWER, "r100": SM100_OR_NEWER}

# The fields a target reports, each with value and source (the JSON ``target`` object).
FIELDS = (
    "world_size",
    "nodes",
    "gpus_per_node",
    "transformer_engine",
    "te_version",
    "torch_version",
    "gpu",
    "gpu_name",
    "compute_capability",
    "gpu_generation",
    "gpu_count",
    "env_from_shell",
)

# The file of a problem stated in the config itself (Target.stated_at): the engine puts the config's name there.
CONFIG_FILE = "<config>"

_VERSION = lazyre.compile(r"^\d+(\.\d+)*([.+\-]?[0-9A-Za-z]+)*$")


def generation_of(compute_capability: Optional[str]) -> Optional[str]:
    if not compute_capability:
        return None
    try:
        major = int(str(compute_capability).split(".")[0])
    except ValueError:
        return None
    return SM100_OR_NEWER if major >= 10 else HOPPER_OR_OLDER


def normalize_gpu(value: Any) -> str:
    """``H100`` -> ``h100``; raises ValueError naming the accepted values."""
    name = str(value).strip().lower()
    if name not in GPUS:
        raise ValueError(f"unknown GPU {value!r}: expected one of {'|'.join(GPUS)}")
    return name


_RELEASE = lazyre.compile(r"^v?(\d+(?:\.\d+)*)$|^([a-z][a-z0-9_-]*)$")


def check_release(value: Any, what: str) -> str:
    """A release of Megatron-Bridge or megatron-core as the target names it: a number (``0.6.2``; the git
    tag's ``v0.6.2`` is the same release) or a branch snapshot's name (``main``). Only the spelling is
    checked here; whether overlap-cli holds that release is the frameworks' release table's answer."""
    text = value.strip().lower() if isinstance(value, str) else None
    m = _RELEASE.match(text) if text else None
    if m is None:
        hint = " (write it as a string: a TOML number loses trailing zeros)" if isinstance(value, float) else ""
        raise ValueError(f"{what} must be a release: a number (X.Y.Z) or a branch snapshot's name (main), got {value!r}{hint}")
    return m.group(1) or m.group(2)


def check_version(value: Any, what: str) -> str:
    if not isinstance(value, str) or not _VERSION.match(value.strip()):
        hint = " (write it as a string: a TOML number loses trailing zeros, 2.10 -> 2.1)" if isinstance(value, float) else ""
        raise ValueError(f"{what} must be a version such as \"2.7\", got {value!r}{hint}")
    return value.strip()


# The releases the run is checked against (frameworks' release tables: frameworks/*/releases/).
RELEASE_FIELDS = ("bridge_version", "core_version")
# Fields a target holds beyond FIELDS; the JSON ``target`` object has each only once something states it.
STATED_FIELDS = ("framework", "recipe", "base", "bridge_version", "core_version")


@dataclass(frozen=True)
class RecipeLaunch:
    """What a catalog recipe's name says about its launch: the catalog's spelling of the name, the world size
    and the GPU it is tuned for (None where the name does not say). The framework's catalog fills it in
    (frameworks.bridge.recipe_launch); this package only ranks it."""

    name: str
    world_size: Optional[int] = None
    gpu: Optional[str] = None


@dataclass
class Target:
    world_size: Optional[int] = None
    transformer_engine: bool = True
    nodes: Optional[int] = None
    gpus_per_node: Optional[int] = None
    te_version: Optional[str] = None
    torch_version: Optional[str] = None
    gpu: Optional[str] = None  # a key of GPUS
    gpu_name: Optional[str] = None  # what --detect read (``NVIDIA L40S``)
    compute_capability: Optional[str] = None
    gpu_count: Optional[int] = None
    env_from_shell: Optional[bool] = None
    framework: Optional[str] = None  # bridge | megatron-lm (--framework)
    recipe: Optional[str] = None  # the catalog recipe the run starts from
    base: Optional[str] = None  # the full dump the run starts from
    # The Megatron-Bridge / megatron-core release the run is checked against. None: the newest release the
    # tool mirrors (the frameworks' release data says which, and names it in a note).
    bridge_version: Optional[str] = None
    core_version: Optional[str] = None
    # where each value came from: flag | directive | per-file-target | launch | recipe | pyproject | detected
    # | default | unknown
    sources: dict = field(default_factory=lambda: {"world_size": "unknown", "transformer_engine": "default"})
    # The exported shell environment, when --env-from-shell asked for it. Never serialised: only the
    # launch variables a config names are ever shown.
    shell_env: Optional[dict] = None
    # --set VAR=VALUE: the environment a launch script is read with (with --env-from-shell, over the shell's).
    launch_vars: Optional[dict] = None
    # The words after ``--`` on overlap's command line: the named Python script's sys.argv[1:], as a launch
    # passes them (None: the script is checked by itself, argparse's defaults).
    script_argv: Optional[list] = None
    settings_path: Optional[str] = None  # the pyproject.toml whose [tool.overlap] contributed, if any
    detection: Optional[dict] = None  # what --detect found and did not find (see detect.Detection.to_json)
    # How this target was built (flags, --settings, detection, shell), so that each config file can get
    # the [tool.overlap] of its own nearest pyproject.toml: see for_file. None: a fixed target.
    built_from: Optional[dict] = None
    # Where the per-file layers came from: {"directive": line, "per-file-target": [globs]} (for notes).
    layers: dict = field(default_factory=dict)

    def get(self, name: str, default: Any = None) -> Any:
        """Field ``name`` by its name (the JSON key), ``default`` when it holds nothing."""
        if name not in _FIELD_NAMES:
            return default
        value = getattr(self, name)
        return default if value is None else value

    def source(self, name: str) -> str:
        if name == "gpu_generation":
            return self.source("compute_capability")
        return self.sources.get(name, "unknown")

    def set(self, name: str, value: Any, source: str) -> None:
        """Set ``name`` unless a source of higher precedence already set it."""
        if name not in _SETTABLE:
            raise AttributeError(f"a target has no field {name!r}")
        if _RANK[source] < _RANK.get(self.sources.get(name, UNKNOWN), 0):
            return
        setattr(self, name, value)
        self.sources[name] = source

    def drop(self, *names: str) -> None:
        """Forget ``names`` (value and source), as if nothing had stated them."""
        for name in names:
            setattr(self, name, None)
            self.sources.pop(name, None)

    def copy(self) -> "Target":
        """A copy whose fields and sources can change without changing this target."""
        t = type(self).__new__(type(self))
        t.__dict__.update(self.__dict__)
        t.sources, t.layers = dict(self.sources), dict(self.layers)
        return t

    def for_file(self, config_file: str, text: Optional[str] = None) -> "Target":
        """This target as it applies to ``config_file``: the same flags and detection, the [tool.overlap] of
        the file's nearest pyproject.toml, the entries of its ``per-file-target`` table whose glob matches,
        and the ``# overlap: target ...`` directive in ``text`` (the file's contents). Raises
        model.InputError for an unreadable or invalid settings file or directive."""
        if self.built_from is None:
            return self
        from overlap_cli.launch_profile.per_file import matching_tables, parse_directive
        from overlap_cli.launch_profile.settings import find_settings

        r = self.built_from
        settings = find_settings(config_file, r.get("settings"))
        per_file = matching_tables(settings, config_file)
        directive = parse_directive(text, config_file) if text else None
        if not per_file and directive is None and (
            settings.path == self.settings_path or (not settings.data and not self.settings_path)
        ):
            return self
        return profile(
            r["flags"], settings, r.get("detection"), r.get("shell_env"), r.get("settings"), per_file, directive,
            r.get("recipe_launch"),
        )

    @property
    def gpu_generation(self) -> Optional[str]:
        return generation_of(self.compute_capability) or GPU_GENERATIONS.get(self.gpu)

    def gpu_label(self) -> str:
        """``h100`` / ``NVIDIA L40S`` / ``compute capability 8.9`` / ``unknown GPU``."""
        if self.gpu_generation is None:
            return "unknown GPU"
        return self.gpu or self.gpu_name or f"compute capability {self.compute_capability}"

    def source_label(self, name: str) -> str:
        """Where field ``name`` came from, in words: ``--world-size``, ``# overlap: target (line 3)``, ..."""
        src = self.source(name)
        if src == DIRECTIVE:
            return f"# overlap: target (line {self.layers.get(DIRECTIVE)})"
        if src == PER_FILE:
            return f"[tool.overlap.per-file-target] {', '.join(repr(g) for g in self.layers.get(PER_FILE, ()))}"
        if src == PYPROJECT:
            return f"[tool.overlap] in {self.settings_path}"
        if src == RECIPE:
            return f"recipe {self.recipe}"
        return {FLAG: "command line", DETECTED: "--detect", LAUNCH: "the launch line"}.get(src, src)

    def stated_at(self, name: str):
        """Where field ``name`` was written, as the place of an input problem: (file, key, line). A
        directive's file is the config's, which a target does not know: ``<config>``, which the engine
        replaces with the file it checks."""
        src, spelt = self.source(name), name.replace("_", "-")
        if src == FLAG:
            return "<command line>", "--" + spelt, None
        if src == DIRECTIVE:
            return CONFIG_FILE, f"# overlap: target {spelt}", self.layers.get(DIRECTIVE)
        if src == PER_FILE:
            globs = " | ".join(self.layers.get(PER_FILE, ()))
            return self.settings_path or "pyproject.toml", f"tool.overlap.per-file-target.{globs}.{spelt}", None
        if src == PYPROJECT:
            return self.settings_path or "pyproject.toml", f"tool.overlap.{name}", None
        if src == DETECTED:
            return "--detect", name, None
        return "<target>", name, None

    def to_json(self, data_parallel_size: Optional[int]) -> dict:
        out = {
            "world_size": self.world_size,
            "data_parallel_size": data_parallel_size,
            "transformer_engine": self.transformer_engine,
        }
        for k in FIELDS:
            if k not in out:
                out[k] = self.get(k)
        for k in STATED_FIELDS:
            if k in self.sources or getattr(self, k) is not None:
                out[k] = getattr(self, k)
        sources = {k: self.source(k) for k in FIELDS}
        sources.update({k: v for k, v in self.sources.items() if k not in sources})
        out["sources"] = sources
        if self.settings_path:
            out["settings"] = self.settings_path
        if self.detection is not None:
            out["detected"] = self.detection
        return out

    def provenance_note(self) -> Optional[str]:
        """One sentence naming the values that came from a directive, per-file-target, [tool.overlap] or
        --detect, or None."""
        parts = []
        for src in (DIRECTIVE, PER_FILE, RECIPE, PYPROJECT, DETECTED):
            names = [k for k in FIELDS if self.source(k) == src and k != "gpu_generation"]
            if "gpu" in names and "compute_capability" in names:
                names.remove("compute_capability")  # implied by the GPU named
            if names:
                missing = "not found" if src == DETECTED else "none"
                label = self.source_label(names[0])
                parts.append(label + ": " + ", ".join(f"{k}={_show(self.get(k), missing)}" for k in names))
        return "target from " + "; ".join(parts) if parts else None


_SETTABLE = frozenset(FIELDS + STATED_FIELDS) - {"gpu_generation"}
_FIELD_NAMES = _SETTABLE | {"gpu_generation"}


def _show(value: Any, missing: str = "none") -> str:
    if isinstance(value, bool):
        return str(value).lower()
    return missing if value is None else str(value)


def build_target(
    flags: dict,
    settings=None,
    detection=None,
    shell_env: Optional[dict] = None,
    per_file: tuple = (),
    directive=None,
    recipe_launch=None,
) -> Target:
    """Combine command-line ``flags`` (None = not given), the ``directive`` of the file
    (file_target.Directive), the matching ``per_file`` tables ([(glob, table)]), ``settings``
    ([tool.overlap]) and ``detection``; each field takes the value of the strongest source that gives it.

    ``flags`` keys: world_size, nodes, gpus_per_node, transformer_engine, gpu, te_version, torch_version,
    env_from_shell. Raises ValueError for a value that is not acceptable (SettingError names the key; the
    caller names where it came from). World size from ``nodes * gpus_per_node`` counts as the source that
    gave both. ``recipe_launch``: (name, target) -> RecipeLaunch or None, the framework's catalog lookup
    (frameworks.bridge.recipe_launch) that gives a named recipe's own launch; without it the recipe's launch
    is left to the run (for_run).
    """
    t = Target()
    _apply_world(t, flags.get("world_size"), flags.get("nodes"), flags.get("gpus_per_node"), FLAG)
    if directive is not None:
        t.layers[DIRECTIVE] = directive.line
        apply_table(t, directive.table, DIRECTIVE)
    for pattern, table in per_file:
        t.layers.setdefault(PER_FILE, []).append(pattern)
    for pattern, table in reversed(per_file):  # the last matching glob wins, as in a later TOML line
        try:
            apply_table(t, table, PER_FILE)
        except SettingError as exc:
            raise SettingError(f"per-file-target.{_toml_key(pattern)}.{exc.key}", str(exc)) from None
    if settings is not None and settings.data:
        t.settings_path = settings.path
        apply_table(t, settings, PYPROJECT)
    if detection is not None:
        t.detection = detection.to_json()
        t.set("transformer_engine", detection.transformer_engine, DETECTED)
        t.set("te_version", detection.te_version, DETECTED)
        t.set("torch_version", detection.torch_version, DETECTED)
        if detection.gpu_count is not None:
            t.set("gpu_count", detection.gpu_count, DETECTED)
        if detection.compute_capability is not None:
            _apply_gpu(t, detection.gpu, detection.compute_capability, DETECTED, detection.gpu_name)
    if flags.get("transformer_engine") is not None:
        t.set("transformer_engine", bool(flags["transformer_engine"]), FLAG)
    for name in ("te_version", "torch_version"):
        if flags.get(name) is not None:
            t.set(name, check_version(flags[name], "--" + name.replace("_", "-")), FLAG)
    for name in RELEASE_FIELDS:
        if flags.get(name) is not None:
            t.set(name, check_release(flags[name], "--" + name.replace("_", "-")), FLAG)
    if detection is not None:
        _apply_detected_release(t, detection)
    if flags.get("gpu") is not None:
        gpu = normalize_gpu(flags["gpu"])
        _apply_gpu(t, gpu, GPUS[gpu], FLAG)
    if flags.get("env_from_shell"):
        t.set("env_from_shell", True, FLAG)
    if flags.get("framework") is not None:  # --framework bridge|megatron-lm (frameworks.detect)
        t.set("framework", flags["framework"], FLAG)
    for name in ("recipe", "base"):
        if flags.get(name) is not None:
            t.set(name, flags[name], FLAG)
    launch = recipe_launch(t.recipe, t) if recipe_launch is not None and t.recipe and not t.base else None
    if launch is not None:
        apply_recipe(t, launch)
    if flags.get("set_vars"):
        t.launch_vars = dict(flags["set_vars"])
    if flags.get("script_argv") is not None:
        t.script_argv = list(flags["script_argv"])
    if t.env_from_shell:
        t.shell_env = dict(shell_env or {})
    else:
        t.set("env_from_shell", False, DEFAULT)
    return t


def _apply_detected_release(t: Target, detection) -> None:
    """The installed megatron-bridge / megatron-core releases (--detect), as one pair: only when no layer
    above names either. A pair is what runs together; the installed core next to a Bridge release the user
    named would check that release against a core it was never released with."""
    if any(getattr(t, name) is not None for name in RELEASE_FIELDS):
        return
    for name in RELEASE_FIELDS:
        value = getattr(detection, name, None)
        if value is not None:
            t.set(name, value, DETECTED)


def launch_sizes_apply(t: Target) -> bool:
    """Whether a launch script's own sizes (torchrun's, srun's) give the world size of its run: they rank
    below a flag, a ``# overlap: target`` directive and a per-file-target entry (flag > file), above the
    recipe's name, [tool.overlap] and defaults."""
    return _RANK.get(t.source("world_size"), 0) < _RANK[LAUNCH]


def apply_recipe(t: Target, launch: RecipeLaunch) -> None:
    """The recipe's own launch (world size and GPU from Bridge's recipe name), below every statement about
    this file and above [tool.overlap]."""
    if t.recipe is None or t.source("recipe") == UNKNOWN:
        t.sources["recipe"] = RECIPE
    t.recipe = launch.name  # the catalog's spelling (with _config), same source
    if launch.world_size is not None:
        _apply_world(t, launch.world_size, None, None, RECIPE)
    if launch.gpu in GPUS:
        _apply_gpu(t, launch.gpu, GPUS[launch.gpu], RECIPE)


def for_run(
    target: Target,
    recipe: Optional[RecipeLaunch] = None,
    launch_world_size: Optional[int] = None,
    launch_env: Optional[dict] = None,
    recipe_world_holds: bool = True,
) -> Target:
    """The target of one run, a new Target (``target`` is left as it is). The one place the world size's
    precedence is decided: flag > ``# overlap: target`` directive > per-file-target > the launch line
    (``launch_world_size``: torchrun's / srun's sizes) > the recipe's name (``recipe``: the run's recipe and
    the launch it is tuned for) > [tool.overlap] > --detect >
    default. ``launch_env``: what the launch exports, the process's environment over the shell's.
    ``recipe_world_holds`` False: a world size that is only the recipe's is forgotten (the run's sharding
    does not fit it, so it says nothing about where the run launches)."""
    t = target.copy()
    if recipe is not None and not t.base:
        apply_recipe(t, recipe)
    if launch_env:
        t.shell_env = {**(target.shell_env or {}), **launch_env}
    if launch_world_size is not None:
        _apply_world(t, launch_world_size, None, None, LAUNCH)
    if not recipe_world_holds and t.source("world_size") == RECIPE:
        t.drop("world_size")
        t.sources["world_size"] = UNKNOWN
    return t


def _toml_key(pattern: str) -> str:
    return f'"{pattern}"'


def profile(
    flags: dict,
    settings,
    detection=None,
    shell_env: Optional[dict] = None,
    explicit_settings: Optional[str] = None,
    per_file: tuple = (),
    directive=None,
    recipe_launch=None,
) -> Target:
    """build_target that remembers how it was built (Target.for_file) and reports a bad value as
    model.InputError naming where it was written: the settings file and key, or the config file's line."""
    from overlap_cli.problems import InputError, InputProblem

    try:
        t = build_target(flags, settings, detection, shell_env, per_file, directive, recipe_launch)
    except ValueError as exc:
        if isinstance(exc, SettingError) and exc.source == DIRECTIVE and directive is not None:
            raise InputError(
                InputProblem(directive.file, f"# overlap: target: {exc}", key=exc.key, line=directive.line)
            ) from None
        where = settings.path if settings is not None and settings.path else "pyproject.toml"
        key = f"tool.overlap.{exc.key}" if isinstance(exc, SettingError) else "tool.overlap"
        raise InputError(InputProblem(where, str(exc), key=key)) from None
    t.built_from = {
        "flags": dict(flags),
        "settings": explicit_settings,
        "detection": detection,
        "shell_env": shell_env,
        "recipe_launch": recipe_launch,
    }
    return t


def _apply_world(t: Target, world_size, nodes, gpus_per_node, source: str) -> None:
    if _RANK[source] < _RANK.get(t.sources.get("world_size", UNKNOWN), 0):
        return  # the world size is already given by a stronger source; keep its node split with it
    if world_size is not None:
        if _RANK[source] > _RANK.get(t.sources.get("nodes", UNKNOWN), 0):
            t.drop("nodes", "gpus_per_node")  # a weaker source's node split does not describe this world
        t.set("world_size", world_size, source)
    elif nodes is not None and gpus_per_node is not None:
        t.set("world_size", nodes * gpus_per_node, source)
        t.set("nodes", nodes, source)
        t.set("gpus_per_node", gpus_per_node, source)


def _apply_gpu(t: Target, gpu: Optional[str], cc: str, source: str, name: Optional[str] = None) -> None:
    # The GPU fields move together: a lower-precedence source never mixes its capability into a
    # higher-precedence GPU name.
    if _RANK[source] < _RANK.get(t.sources.get("compute_capability", UNKNOWN), 0):
        return
    t.drop("gpu", "gpu_name", "compute_capability")
    t.set("gpu", gpu, source if gpu else UNKNOWN)
    if name:
        t.set("gpu_name", name, source)
    t.set("compute_capability", cc, source)


class SettingError(ValueError):
    """A target value that cannot be used; ``key`` names it, ``source`` says which layer wrote it."""

    def __init__(self, key: str, message: str, source: str = PYPROJECT):
        super().__init__(message)
        self.key, self.source = key, source


def apply_table(t: Target, s, source: str) -> None:
    """Apply the target keys of table ``s`` (anything with ``get(key)`` that treats ``-`` and ``_`` alike)
    as ``source``. Raises SettingError naming the key of a value that cannot be used."""

    def positive(key):
        v = s.get(key)
        if v is None:
            return None
        if not isinstance(v, int) or isinstance(v, bool) or v < 1:
            raise SettingError(key, f"must be a positive integer, got {v!r}", source)
        return v

    def boolean(key):
        v = s.get(key)
        if v is not None and not isinstance(v, bool):
            raise SettingError(key, f"must be true or false, got {v!r}", source)
        return v

    world, nodes, per_node = positive("world_size"), positive("nodes"), positive("gpus_per_node")
    if world is not None and (nodes is not None or per_node is not None):
        raise SettingError("world_size", "give either world_size or nodes/gpus_per_node, not both", source)
    if (nodes is None) != (per_node is None):
        raise SettingError(
            "nodes" if nodes is None else "gpus_per_node", "nodes and gpus_per_node go together", source
        )
    _apply_world(t, world, nodes, per_node, source)
    te = boolean("transformer_engine")
    if te is None:
        te = boolean("te")
    if te is not None:
        t.set("transformer_engine", te, source)
    for key in ("te_version", "torch_version", *RELEASE_FIELDS):
        v = s.get(key)
        if v is not None:
            check = check_release if key in RELEASE_FIELDS else check_version
            try:
                t.set(key, check(v, key), source)
            except ValueError as exc:
                raise SettingError(key, str(exc), source) from None
    gpu = s.get("gpu")
    if gpu is not None:
        try:
            gpu = normalize_gpu(gpu)
        except ValueError as exc:
            raise SettingError("gpu", str(exc), source) from None
        _apply_gpu(t, gpu, GPUS[gpu], source)
    if boolean("env_from_shell"):
        t.set("env_from_shell", True, source)
    recipe = s.get("recipe")
    if recipe is not None:
        if not isinstance(recipe, str) or not recipe.strip():
            raise SettingError("recipe", f"must be a recipe name, got {recipe!r}", source)
        t.set("recipe", recipe.strip(), source)
