"""What the rule modules share: building findings and fixes, and reading the resolved view for the
launch-time checks (the EP7xx, CP8xx and the newer PP/DP/MP/TP rules), which predict assertions that
Megatron-Bridge 0.6.2 and Megatron-Core 0.19.2 raise after the config is built: model fields the core
resolver does not carry (with Megatron-Core's defaults), CUDA-graph module names, target versions."""

from __future__ import annotations

TYPE_CHECKING = False  # the typing module costs ~2.5 ms of start-up; annotations here are strings (PEP 563)
if TYPE_CHECKING:
    from typing import Any, Optional

from overlap_cli.results import USERS_VALUE, Edit, Finding, Fix, same_value


def finding(view, code: str, severity: str, message: str, key: Optional[str] = None, fix: Optional[Fix] = None) -> Finding:
    """A finding located at ``key`` (dotted) in the file, or at its nearest ancestor that is there."""
    line = col = origin = None
    if key:
        path = tuple(int(p) if p.isdigit() else p for p in key.split("."))
        line, col = view.cfg.position(path)
        origin = view.cfg.origin(path)  # a merged run: the recipe or another file wrote it
    return Finding(code, severity, message, key, line, col, fix, origin)


def keep_user_values(view, findings: list) -> list:
    """A safe fix never changes a value the user wrote in their own file: one whose edits would set such a
    value to another one or remove it is offered as unsafe, naming the value and where it is written
    (``you wrote model.sequence_parallel: false at over.yaml:3``). The user's value is their intent, even
    where it keeps an overlap from taking effect; a rule that can make the overlap request honest instead
    (TP102 turns off a request the user did not write) offers that fix itself, and it touches nothing of theirs.

    "Written" is the view's one notion (``view.written(key)``: an override file, a dotlist, a Python run's
    assignment, a launch's word; never a recipe, a dump, a class default or a preset). A value a fix moves
    (removed at one key and set to the same value at a key of the same name, e.g. into ``comm_overlap``
    where Bridge reads it) is kept, not changed."""
    written = getattr(view, "written", None)
    if written is None:
        return findings
    for f in findings:
        fix = f.fix
        if fix is None or fix.applicability != "safe":
            continue
        changed = users_values_changed(written, [e for e in fix.edits if e.key not in fix.respelled])
        if changed:
            f.fix = Fix("unsafe", f"{fix.message} ({USERS_VALUE} {'; '.join(changed)})", fix.edits, fix.respelled)
    return findings


def users_values_changed(written, edits) -> list:
    """``KEY: VALUE at WHERE`` of each value the user wrote (``written(key) -> (value, where) | None``) that
    ``edits`` would change."""
    moved = [(_name(e.key), e.value) for e in edits if e.op != "remove"]
    out: list = []
    for e in edits:
        if e.op == "remove":
            got = written(e.key)
            if got is not None and not any(name == _name(e.key) and same_value(v, got[0]) for name, v in moved):
                out.append(_named(e.key, got))
            continue
        out.extend(_set_changes(written, e.key, e.value))
        out.extend(_named(k, got) for k, got in _written_above(written, e.key))
    return out


def _name(key: str) -> str:
    """The field a key names, as a move keeps it (``model.nvte_fwd_layernorm_sm_margin`` moves to
    ``env_vars.NVTE_FWD_LAYERNORM_SM_MARGIN``)."""
    return key.rsplit(".", 1)[-1].lower()


def _set_changes(written, key: str, value: Any) -> list:
    """A ``set``/``add`` of ``value`` at ``key``: the user's values there that it changes. Into a mapping the user
    wrote only their own keys count (the rest is the recipe's, under the same mapping)."""
    got = written(key)
    if got is None:
        return []
    old = got[0]
    if isinstance(old, dict) and isinstance(value, dict):
        out = []
        for k in old:
            sub = f"{key}.{k}"
            if k in value:
                out.extend(_set_changes(written, sub, value[k]))
            elif written(sub) is not None:
                out.append(_named(sub, written(sub)))
        return out
    return [] if same_value(old, value) else [_named(key, got)]


def _written_above(written, key: str) -> list:
    """(key, written) of a value the user wrote at an ancestor of ``key`` that is not a mapping (a recipe name
    under ``mixed_precision``): an edit below it replaces it."""
    parts = key.split(".")
    out = []
    for n in range(1, len(parts)):
        head = ".".join(parts[:n])
        got = written(head)
        if got is not None and not isinstance(got[0], dict):
            out.append((head, got))
    return out


def _named(key: str, got: tuple) -> str:
    value = got[0]
    shown = "" if isinstance(value, (dict, list)) else f": {fmt(value)}"
    return f"{key}{shown} at {got[1]}"


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
    return view.release.LAUNCH_MODEL_DEFAULTS.get(key)


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
