"""``--detect``: read the stack of the machine overlap runs on.

Transformer Engine, torch, Megatron-Bridge and megatron-core versions come from installed package metadata
(``importlib.metadata`` reads the dist-info, never the package): nothing is imported for them. The Bridge
and core releases are the release the run is checked against, unless a flag, the config or [tool.overlap]
names one (profile.build_target takes the installed pair only then). GPU count and compute capability need the CUDA runtime, so they are read
through torch — imported here, lazily, only when torch is installed and only when ``--detect`` is given.
Run ``overlap check --detect`` inside the training environment on a GPU node (e.g. in the job prologue)
to check a config against the real stack.
"""

from __future__ import annotations

from functools import lru_cache
from typing import Optional

from overlap_cli.records import dataclass, field  # not dataclasses: start-up time (records.py)

# Distributions that provide the ``transformer_engine`` package. NVIDIA's wheels split it into a
# meta-package plus framework and CUDA-specific parts; source builds in NGC containers install
# ``transformer_engine`` alone.
_TE_DISTRIBUTIONS = ("transformer_engine", "transformer_engine_torch", "transformer_engine_cu12", "transformer_engine_cu13")

# Substrings of ``torch.cuda.get_device_name`` -> --gpu names. Longer names first (GB200 contains B200).
# The distributions of Megatron-Bridge and megatron-core (pip's names; metadata lookups normalise ``-``/``_``
# from Python 3.10, the second spelling covers older metadata).
_BRIDGE_DISTRIBUTIONS = ("megatron-bridge", "megatron_bridge")
_CORE_DISTRIBUTIONS = ("megatron-core", "megatron_core")

_GPU_NAMES = (("GB300", "gb300"), ("GB200", "gb200"), ("B300", "b300"), ("B200", "b200"), ("H200", "h200"), ("H100", "h100"), ("A100", "a100"))


@dataclass(frozen=True)
class Detection:
    transformer_engine: bool
    te_version: Optional[str]
    torch_version: Optional[str]
    gpu_count: Optional[int] = None  # None: could not be determined (no torch, or torch failed)
    gpu: Optional[str] = None  # a --gpu name when the device name maps to one
    gpu_name: Optional[str] = None
    compute_capability: Optional[str] = None
    bridge_version: Optional[str] = None  # the installed megatron-bridge (package metadata)
    core_version: Optional[str] = None  # the installed megatron-core
    found: tuple = field(default_factory=tuple)
    not_found: tuple = field(default_factory=tuple)

    def to_json(self) -> dict:
        return {"found": list(self.found), "not_found": list(self.not_found)}

    def summary(self) -> str:
        out = []
        if self.found:
            out.append("found " + "; ".join(self.found))
        if self.not_found:
            out.append("not found: " + "; ".join(self.not_found))
        return ". ".join(out)


def _distribution_version(names) -> Optional[str]:
    from importlib import metadata

    for name in names:
        try:
            return metadata.version(name)
        except metadata.PackageNotFoundError:
            continue
    return None


def _module_present(name: str) -> bool:
    """Whether a top-level package can be found, without importing it (find_spec on a top-level name
    only searches sys.path)."""
    import importlib.util

    try:
        return importlib.util.find_spec(name) is not None
    except (ImportError, ValueError):
        return False


def gpu_from_device_name(device_name: str) -> Optional[str]:
    upper = device_name.upper()
    for needle, gpu in _GPU_NAMES:
        if needle in upper:
            return gpu
    return None


def _probe_gpus() -> tuple:
    """(count, name, capability, problem) via torch. Imported here only; any failure is reported, not raised."""
    import warnings

    try:
        with warnings.catch_warnings():  # e.g. "Failed to initialize NumPy": not ours to report
            warnings.simplefilter("ignore")
            import torch  # noqa: PLC0415 — lazily, by design: --detect is the only user
    except Exception as exc:  # a broken CUDA install can raise anything from torch's import
        return None, None, None, f"torch is installed but failed to import ({type(exc).__name__}: {exc})"
    try:
        if not torch.cuda.is_available():
            return 0, None, None, None
        count = torch.cuda.device_count()
        major, minor = torch.cuda.get_device_capability(0)
        return count, torch.cuda.get_device_name(0), f"{major}.{minor}", None
    except Exception as exc:
        return None, None, None, f"torch could not query CUDA ({type(exc).__name__}: {exc})"


@lru_cache(maxsize=1)
def detect() -> Detection:
    found: list = []
    not_found: list = []
    te_version = _distribution_version(_TE_DISTRIBUTIONS)
    te_present = te_version is not None or _module_present("transformer_engine")
    if te_version:
        found.append(f"Transformer Engine {te_version}")
    elif te_present:
        found.append("Transformer Engine (version unknown: no package metadata)")
    else:
        not_found.append("Transformer Engine (not installed in this Python environment)")
    torch_version = _distribution_version(("torch",))
    if torch_version:
        found.append(f"torch {torch_version}")
    else:
        not_found.append("torch (not installed: GPU count and compute capability cannot be read)")

    bridge_version = _distribution_version(_BRIDGE_DISTRIBUTIONS)
    core_version = _distribution_version(_CORE_DISTRIBUTIONS)
    for label, version in (("Megatron-Bridge", bridge_version), ("megatron-core", core_version)):
        if version:
            found.append(f"{label} {version}")
    if not bridge_version and not core_version:
        not_found.append("Megatron-Bridge and megatron-core (not installed in this Python environment: the "
                         "release checked against is not read from this machine)")

    count = name = cc = gpu = None
    if torch_version:
        count, name, cc, problem = _probe_gpus()
        if problem:
            not_found.append(f"GPU ({problem})")
        elif count == 0:
            not_found.append("GPU (torch sees no CUDA device)")
        else:
            gpu = gpu_from_device_name(name or "")
            label = f"{count} x {name} (compute capability {cc})"
            if gpu is None:
                label += "; not one of the --gpu names, its compute capability decides"
            found.append(label)
    return Detection(
        transformer_engine=te_present,
        te_version=te_version,
        torch_version=torch_version,
        gpu_count=count,
        gpu=gpu,
        gpu_name=name,
        compute_capability=cc,
        bridge_version=bridge_version,
        core_version=core_version,
        found=tuple(found),
        not_found=tuple(not_found),
    )
