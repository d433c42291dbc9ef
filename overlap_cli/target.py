"""The target profile: where the config will run. Not part of the file, so it is given (or guessed) here.

Every field carries a source, in this order of precedence:
``flag`` (command line) > ``detected`` (``--detect`` read this machine) > ``pyproject`` (``[tool.overlap]``)
> ``default`` > ``unknown``. Detection outranks the settings file because it reports the real stack;
a flag outranks both because it is the most deliberate statement.
"""

from __future__ import annotations

import re

TYPE_CHECKING = False  # the typing module costs ~2.5 ms of start-up; annotations here are strings (PEP 563)
if TYPE_CHECKING:
    from typing import Any, Optional

from .records import dataclass, field  # not dataclasses: start-up time (records.py)

FLAG, DETECTED, PYPROJECT, DEFAULT, UNKNOWN = "flag", "detected", "pyproject", "default", "unknown"
_RANK = {FLAG: 4, DETECTED: 3, PYPROJECT: 2, DEFAULT: 1, UNKNOWN: 0}

# GPU names accepted by --gpu and [tool.overlap] gpu, with their CUDA compute capability.
# B300/GB300 are sm_103, B200/GB200 sm_100; everything at 10.0 or above counts as "SM100 or newer",
# the split every CUDA_DEVICE_MAX_CONNECTIONS launcher in Bridge and NeMo makes.
GPUS: dict = {
    "a100": "8.0",
    "h100": "9.0",
    "h200": "9.0",
    "b200": "10.0",
    "b300": "10.3",
    "gb200": "10.0",
    "gb300": "10.3",
}
HOPPER_OR_OLDER = "hopper-or-older"
SM100_OR_NEWER = "sm100-or-newer"

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

_VERSION = re.compile(r"^\d+(\.\d+)*([.+\-]?[0-9A-Za-z]+)*$")


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
    # where each value came from: flag | pyproject | detected | default | unknown
    sources: dict = field(default_factory=lambda: {"world_size": "unknown", "transformer_engine": "default"})
    extra: dict = field(default_factory=dict)  # further fields (gpu, versions, ...) — see FIELDS
    # The exported shell environment, when --env-from-shell asked for it. Never serialised: only the
    # launch variables a config names are ever shown.
    shell_env: Optional[dict] = None
    settings_path: Optional[str] = None  # the pyproject.toml whose [tool.overlap] contributed, if any
    detection: Optional[dict] = None  # what --detect found and did not find (see detect.Detection.to_json)
    # How this target was built (flags, --settings, detection, shell), so that each config file can get
    # the [tool.overlap] of its own nearest pyproject.toml: see for_file. None: a fixed target.
    recipe: Optional[dict] = None

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

    def for_file(self, config_file: str) -> "Target":
        """This target as it applies to ``config_file``: same flags and detection, the [tool.overlap] of the
        file's nearest pyproject.toml. Raises model.InputError for an unreadable or invalid settings file."""
        if self.recipe is None:
            return self
        from .settings import find_settings

        r = self.recipe
        settings = find_settings(config_file, r.get("settings"))
        if settings.path == self.settings_path or (not settings.data and not self.settings_path):
            return self
        return profile(r["flags"], settings, r.get("detection"), r.get("shell_env"), r.get("settings"))

    @property
    def gpu_generation(self) -> Optional[str]:
        return generation_of(self.extra.get("compute_capability"))

    def gpu_label(self) -> str:
        """``h100`` / ``NVIDIA L40S`` / ``compute capability 8.9`` / ``unknown GPU``."""
        if self.gpu_generation is None:
            return "unknown GPU"
        return self.extra.get("gpu") or self.extra.get("gpu_name") or f"compute capability {self.extra.get('compute_capability')}"

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
        """One sentence naming the values that came from [tool.overlap] or --detect, or None."""
        parts = []
        for src, label in ((PYPROJECT, f"[tool.overlap] in {self.settings_path}"), (DETECTED, "--detect")):
            names = [k for k in FIELDS if self.source(k) == src and k != "gpu_generation"]
            if names:
                missing = "not found" if src == DETECTED else "none"
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
) -> Target:
    """Combine command-line ``flags`` (None = not given), ``settings`` ([tool.overlap]) and ``detection``.

    ``flags`` keys: world_size, nodes, gpus_per_node, transformer_engine, gpu, te_version, torch_version,
    env_from_shell. Raises ValueError for a value that is not acceptable (the caller names where it came
    from). World size from ``nodes * gpus_per_node`` counts as the source that gave both.
    """
    t = Target()
    _apply_world(t, flags.get("world_size"), flags.get("nodes"), flags.get("gpus_per_node"), FLAG)
    if settings is not None and settings.data:
        t.settings_path = settings.path
        _apply_settings(t, settings)
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
    if t.extra.get("env_from_shell"):
        t.shell_env = dict(shell_env or {})
    else:
        t.set("env_from_shell", False, DEFAULT)
    return t


def profile(flags: dict, settings, detection=None, shell_env: Optional[dict] = None, explicit_settings: Optional[str] = None) -> Target:
    """build_target that remembers how it was built (Target.for_file) and reports a bad [tool.overlap]
    value as model.InputError naming the settings file."""
    from .model import InputError, InputProblem

    try:
        t = build_target(flags, settings, detection, shell_env)
    except ValueError as exc:
        where = settings.path if settings is not None and settings.path else "pyproject.toml"
        key = f"tool.overlap.{exc.key}" if isinstance(exc, SettingError) else "tool.overlap"
        raise InputError(InputProblem(where, str(exc), key=key)) from None
    t.recipe = {
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
    """A [tool.overlap] value that cannot be used; ``key`` names it."""

    def __init__(self, key: str, message: str):
        super().__init__(message)
        self.key = key


def _apply_settings(t: Target, s) -> None:
    """[tool.overlap] keys: world_size | nodes + gpus_per_node, gpu, transformer_engine (or te),
    te_version, torch_version, env_from_shell. Other keys belong to other commands and are ignored here."""

    def positive(key):
        v = s.get(key)
        if v is None:
            return None
        if not isinstance(v, int) or isinstance(v, bool) or v < 1:
            raise SettingError(key, f"must be a positive integer, got {v!r}")
        return v

    def boolean(key):
        v = s.get(key)
        if v is not None and not isinstance(v, bool):
            raise SettingError(key, f"must be true or false, got {v!r}")
        return v

    world, nodes, per_node = positive("world_size"), positive("nodes"), positive("gpus_per_node")
    if world is not None and (nodes is not None or per_node is not None):
        raise SettingError("world_size", "give either world_size or nodes/gpus_per_node, not both")
    if (nodes is None) != (per_node is None):
        raise SettingError("nodes" if nodes is None else "gpus_per_node", "nodes and gpus_per_node go together")
    _apply_world(t, world, nodes, per_node, PYPROJECT)
    te = boolean("transformer_engine")
    if te is None:
        te = boolean("te")
    if te is not None:
        t.set("transformer_engine", te, PYPROJECT)
    for key in ("te_version", "torch_version"):
        v = s.get(key)
        if v is not None:
            try:
                t.set(key, check_version(v, key), PYPROJECT)
            except ValueError as exc:
                raise SettingError(key, str(exc)) from None
    gpu = s.get("gpu")
    if gpu is not None:
        try:
            gpu = normalize_gpu(gpu)
        except ValueError as exc:
            raise SettingError("gpu", str(exc)) from None
        _apply_gpu(t, gpu, GPUS[gpu], PYPROJECT)
    if boolean("env_from_shell"):
        t.set("env_from_shell", True, PYPROJECT)
