"""What the rule modules share: building findings and fixes, and reading the resolved view for the
launch-time checks (the EP7xx, CP8xx and the newer PP/DP/MP/TP rules), which predict assertions that
Megatron-Bridge 0.6.2 and Megatron-Core 0.19.2 raise after the config is built: model fields the core
resolver does not carry (with Megatron-Core's defaults), CUDA-graph module names, target versions."""

from __future__ import annotations

TYPE_CHECKING = False  # the typing module costs ~2.5 ms of start-up; annotations here are strings (PEP 563)
if TYPE_CHECKING:
    from typing import Any, Optional

from overlap_cli.results import Edit, Finding, Fix
from overlap_cli.frameworks.bridge import facts as bridge


def finding(view, code: str, severity: str, message: str, key: Optional[str] = None, fix: Optional[Fix] = None) -> Finding:
    """A finding located at ``key`` (dotted) in the file, or at its nearest ancestor that is there."""
    line = col = origin = None
    if key:
        path = tuple(int(p) if p.isdigit() else p for p in key.split("."))
        line, col = view.cfg.position(path)
        origin = view.cfg.origin(path)  # a merged run: the recipe or another file wrote it
    return Finding(code, severity, message, key, line, col, fix, origin)


def written_by_user(view, key: str) -> bool:
    """Whether the value at ``key`` is one the user wrote: in a single file, the file holds it; in a merged
    run, a layer above the catalog recipe wrote it (an override file, the command line, a Python run's own
    assignments, a base dump the user saved). A value only the recipe holds is Bridge's, not the user's."""
    path = tuple(int(p) if p.isdigit() else p for p in key.split("."))
    cfg = view.cfg
    if not cfg.layered:
        return cfg.has(path)
    layer = cfg.layer_of(path)
    return layer is not None and layer.kind != "recipe"


def safe(message: str, *edits: Edit) -> Fix:
    return Fix("safe", message, tuple(edits))


def unsafe(message: str, *edits: Edit) -> Fix:
    return Fix("unsafe", message, tuple(edits))


def set_(key: str, value: Any) -> Edit:
    return Edit("set", key, value)


def remove(key: str) -> Edit:
    return Edit("remove", key)


def fmt(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return str(value).lower()
    if isinstance(value, int):
        return f"{value:,}" if abs(value) >= 10000 else str(value)
    return repr(value) if isinstance(value, str) else str(value)


# ----------------------------------------------------------------------------------------------
# Launch-time readers
# ----------------------------------------------------------------------------------------------


def model_value(view, key: str, at_setup: bool = False) -> Any:
    """A model field after every launch step (or as comm_overlap.setup reads it, with ``at_setup``)."""
    source = view.model_at_setup if at_setup and view.model_at_setup else view.final.get("model", {})
    if key in source:
        return source[key]
    return bridge.LAUNCH_MODEL_DEFAULTS.get(key)


def model_key(view, key: str, fallback: str) -> str:
    """``model.<key>`` when the file writes it, else ``fallback`` (where the finding is located)."""
    return f"model.{key}" if view.cfg.has(("model", key)) else fallback


def as_int(value: Any) -> Optional[int]:
    return value if isinstance(value, int) and not isinstance(value, bool) else None


# ----------------------------------------------------------------------------------------------
# CUDA-graph module names
# ----------------------------------------------------------------------------------------------


def graph_module_names(value: Any) -> set[str]:
    """Module names in a cuda_graph_modules / cuda_graph_scope value, as Bridge's ``has_cuda_graph_module``
    reads them (megatron/bridge/utils/cuda_graph.py:108-118): a string is split on ","; "full" and "" mean the
    whole layer (no named module); "CudaGraphModule.attn" counts as "attn"."""
    if value is None:
        return set()
    items = value if isinstance(value, (list, tuple, set)) else str(value).split(",")  # no strip(), like Bridge
    out = set()
    for item in items:
        name = str(item).rsplit(".", 1)[-1]
        if name and name != "full":
            out.add(name)
    return out


def has_graph_module(view, name: str, at_setup: bool = False) -> bool:
    return name in graph_module_names(model_value(view, "cuda_graph_modules", at_setup)) or name in graph_module_names(
        model_value(view, "cuda_graph_scope", at_setup)
    )


# ----------------------------------------------------------------------------------------------
# Target versions
# ----------------------------------------------------------------------------------------------


def te_version(view) -> Optional[str]:
    """The target's Transformer Engine version. Without Transformer Engine, Megatron-Core's
    ``get_te_version`` reports 0.0.0 (megatron/core/utils.py:322), so every minimum fails."""
    if not view.target.transformer_engine:
        return "0.0.0"
    return view.target.get("te_version")


def torch_version(view) -> Optional[str]:
    return view.target.get("torch_version")


def unknown_version_text(have: Optional[str], what: str, flag: str) -> str:
    if have is None:
        return f"{what} version not given: pass {flag}"
    return f"cannot read the {what} version {have!r} given with {flag}"
