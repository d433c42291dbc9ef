"""Small helpers for building findings from the resolved view."""

from __future__ import annotations

TYPE_CHECKING = False  # the typing module costs ~2.5 ms of start-up; annotations here are strings (PEP 563)
if TYPE_CHECKING:
    from typing import Any, Optional

from overlap_cli.check.results import Edit, Finding, Fix


def finding(view, code: str, severity: str, message: str, key: Optional[str] = None, fix: Optional[Fix] = None) -> Finding:
    """A finding located at ``key`` (dotted) in the file, or at its nearest ancestor that is there."""
    line = col = None
    if key:
        path = tuple(int(p) if p.isdigit() else p for p in key.split("."))
        line, col = view.cfg.position(path)
    return Finding(code, severity, message, key, line, col, fix)


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
