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
_RANK = {FLAG: 7, DIRECTIVE: 6, PER_FILE: 5, RECIPE: 4, PYPROJECT: 3, DETECTED: 2, DEFAULT: 1, UNKNOWN: 0}

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


def check_version(value: Any, what: str) -> str:
    if not isinstance(value, str) or not _VERSION.match(value.strip()):
        hint = " (write it as a string: a TOML number loses trailing zeros, 2.10 -> 2.1)" if isinstance(value, float) else ""
        raise ValueError(f"{what} must be a version such as \"2.7\", got {value!r}{hint}")
    return value.strip()


@dataclass
class Target:
    world_size: Optional[int] = None
    transformer_engine: bool = True
    # where each value came from: flag | directive | per-file-target | pyproject | detected | default | unknown
    sources: dict = field(default_factory=lambda: {"world_size": "unknown", "transformer_engine": "default"})
    extra: dict = field(default_factory=dict)  # further fields (gpu, versions, ...) — see FIELDS
    # The exported shell environment, when --env-from-shell asked for it. Never serialised: only the
    # launch variables a config names are ever shown.
    shell_env: Optional[dict] = None
    # --set VAR=VALUE: the environment a launch script is read with (with --env-from-shell, over the shell's).
    launch_vars: Optional[dict] = None
    settings_path: Optional[str] = None  # the pyproject.toml whose [tool.overlap] contributed, if any
    detection: Optional[dict] = None  # what --detect found and did not find (see detect.Detection.to_json)
    # How this target was built (flags, --settings, detection, shell), so that each config file can get
    # the [tool.overlap] of its own nearest pyproject.toml: see for_file. None: a fixed target.
    built_from: Optional[dict] = None
    # Where the per-file layers came from: {"directive": line, "per-file-target": [globs]} (for notes).
    layers: dict = field(default_factory=dict)

    def get(self, name: str, default: Any = None) -> Any:
        if name in ("world_size", "transformer_engine"):
            return getattr(self, name)
        if name == "gpu_generation":
            return self.gpu_generation
        return self.extra.get(name, default)

    def source(self, name: str) -> str:
        if name == "gpu_generation":
            return self.source("compute_capability")
        return self.sources.get(name, "unknown")

    def set(self, name: str, value: Any, source: str) -> None:
        """Set ``name`` unless a source of higher precedence already set it."""
        if _RANK[source] < _RANK.get(self.sources.get(name, UNKNOWN), 0):
            return
        if name in ("world_size", "transformer_engine"):
            setattr(self, name, value)
        else:
            self.extra[name] = value
        self.sources[name] = source

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
            r["flags"], settings, r.get("detection"), r.get("shell_env"), r.get("settings"), per_file, directive
        )

    @property
    def gpu_generation(self) -> Optional[str]:
        return generation_of(self.extra.get("compute_capability")) or GPU_GENERATIONS.get(self.extra.get("gpu"))

    def gpu_label(self) -> str:
        """``h100`` / ``NVIDIA L40S`` / ``compute capability 8.9`` / ``unknown GPU``."""
        if self.gpu_generation is None:
            return "unknown GPU"
        return self.extra.get("gpu") or self.extra.get("gpu_name") or f"compute capability {self.extra.get('compute_capability')}"

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
            return f"recipe {self.extra.get('recipe')}"
        return {FLAG: "command line", DETECTED: "--detect"}.get(src, src)

    def to_json(self, data_parallel_size: Optional[int]) -> dict:
        out = {
            "world_size": self.world_size,
            "data_parallel_size": data_parallel_size,
            "transformer_engine": self.transformer_engine,
        }
        for k in FIELDS:
            if k not in out:
                out[k] = self.get(k)
        for k, v in self.extra.items():
            out.setdefault(k, v)
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
) -> Target:
    """Combine command-line ``flags`` (None = not given), the ``directive`` of the file
    (file_target.Directive), the matching ``per_file`` tables ([(glob, table)]), ``settings``
    ([tool.overlap]) and ``detection``; each field takes the value of the strongest source that gives it.

    ``flags`` keys: world_size, nodes, gpus_per_node, transformer_engine, gpu, te_version, torch_version,
    env_from_shell. Raises ValueError for a value that is not acceptable (SettingError names the key; the
    caller names where it came from). World size from ``nodes * gpus_per_node`` counts as the source that
    gave both.
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
    apply_recipe(t)
    if flags.get("set_vars"):
        t.launch_vars = dict(flags["set_vars"])
    if t.extra.get("env_from_shell"):
        t.shell_env = dict(shell_env or {})
    else:
        t.set("env_from_shell", False, DEFAULT)
    return t


def launch_sizes_apply(t: Target) -> bool:
    """Whether a launch script's own sizes (torchrun's, srun's) give the world size of its run: they rank
    as the recipe's launch does, below a flag, a ``# overlap: target`` directive and a per-file-target
    entry (flag > file), above [tool.overlap] and defaults."""
    return _RANK.get(t.source("world_size"), 0) <= _RANK[RECIPE]


def apply_recipe(t: Target) -> None:
    """The recipe's own launch (world size and GPU from Bridge's recipe name, recipes.info), below every
    statement about this file and above [tool.overlap]. An unknown name is left to the loader to report."""
    name = t.extra.get("recipe")
    if not name or t.extra.get("base"):
        return
    from overlap_cli.frameworks.bridge import recipes

    try:
        row = recipes.info(name)
    except KeyError:
        return
    t.extra["recipe"] = row["name"]  # the catalog's spelling (with _config), same source
    if row.get("world_size") is not None:
        _apply_world(t, row["world_size"], None, None, RECIPE)
    gpu = row.get("gpu")
    if gpu in GPUS:
        _apply_gpu(t, gpu, GPUS[gpu], RECIPE)


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
) -> Target:
    """build_target that remembers how it was built (Target.for_file) and reports a bad value as
    model.InputError naming where it was written: the settings file and key, or the config file's line."""
    from overlap_cli.problems import InputError, InputProblem

    try:
        t = build_target(flags, settings, detection, shell_env, per_file, directive)
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
    }
    return t


def _apply_world(t: Target, world_size, nodes, gpus_per_node, source: str) -> None:
    if _RANK[source] < _RANK.get(t.sources.get("world_size", UNKNOWN), 0):
        return  # the world size is already given by a stronger source; keep its node split with it
    if world_size is not None:
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
    for key in ("gpu", "gpu_name", "compute_capability"):
        t.extra.pop(key, None)
        t.sources.pop(key, None)
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
    for key in ("te_version", "torch_version"):
        v = s.get(key)
        if v is not None:
            try:
                t.set(key, check_version(v, key), source)
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


# -- deriving a run's target: one place for the world size's precedence ------------------------------
# flag > directive > per-file-target > the launch line's sizes = the recipe's launch > [tool.overlap] >
# detected > default (_RANK). Every form derives the target of its run through these, never by copying a
# Target and writing fields.


def _copy(t: Target) -> Target:
    import copy

    out = copy.copy(t)
    out.extra, out.sources = dict(t.extra), dict(t.sources)
    return out


def for_recipe(t: Target, recipe: str, replace: bool = False) -> Target:
    """``t`` for a run that starts from catalog recipe ``recipe``: the recipe's own launch (its world size
    and GPU) below every statement about the file. A recipe already named by a setting stays, unless
    ``replace`` (a launch line names the recipe it runs: that one runs)."""
    out = _copy(t)
    if replace or out.extra.get("recipe") is None:
        out.extra["recipe"] = recipe
        out.sources["recipe"] = RECIPE
    apply_recipe(out)
    return out


def for_launch(t: Target, world_size: Optional[int], exported: Optional[dict] = None, source: str = "launch") -> Target:
    """``t`` for a run a launch line starts: the launch's sizes give the world size where they rank
    (launch_sizes_apply: above the recipe's launch and [tool.overlap], below a flag / directive /
    per-file-target), and what the launch exports is the process's environment (over the shell's).
    ``source``: what stated the size (``launch``; ``cluster`` for NeMo-RL's cluster section)."""
    out = _copy(t)
    if exported:
        out.shell_env = {**(t.shell_env or {}), **exported}
    if world_size is not None and launch_sizes_apply(t):
        out.world_size = world_size
        out.sources["world_size"] = source
        for k in ("nodes", "gpus_per_node"):
            out.extra.pop(k, None)
            out.sources.pop(k, None)
    return out


def without_world_size(t: Target) -> Target:
    """``t`` with its world size unknown (a size that cannot hold the run and that nobody stated for it)."""
    out = _copy(t)
    out.world_size = None
    out.sources["world_size"] = UNKNOWN
    return out
