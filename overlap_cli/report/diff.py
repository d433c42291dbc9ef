"""``overlap diff`` output: a ``check.compare.Comparison`` as text or as the version-1 JSON document."""

from __future__ import annotations

from overlap_cli.results import show_value

from overlap_cli.check.compare import TARGET_FIELDS, same_value

_LABELS = dict(TARGET_FIELDS)


def to_json(c) -> dict:
    """{"version": 1, "old": {file, target}, "new": {...}, "effective": [{key, old, new}],
    "findings": {"appeared": [...], "disappeared": [...]}}; a side of a change is null where the key is absent."""
    from overlap_cli.results import json_document

    return json_document(
        old={"file": c.old.file, "target": c.old.target},
        new={"file": c.new.file, "target": c.new.target},
        effective=[
            {"key": ch.key, "old": ch.old.to_json() if ch.old else None, "new": ch.new.to_json() if ch.new else None}
            for ch in c.effective
        ],
        findings={
            "appeared": [f.to_json() for f in c.appeared],
            "disappeared": [f.to_json() for f in c.disappeared],
        },
    )


def _show(value) -> str:
    """A target field (None: not known)."""
    return show_value(value, missing="unknown")


def _side(result) -> str:
    t = result.target
    return f"{result.file} (world size {_show(t.get('world_size'))}, DP {_show(t.get('data_parallel_size'))})"


def _value(v) -> str:
    if v is None:
        return "(absent)"
    shown = show_value(v.value)
    return f"{shown}  [{v.source}: {v.reason}]"


def _finding(f) -> str:
    key = f" {f.key}" if f.key else ""
    return f"{f.code} {f.severity}{key}: {f.message}"


def render_text(c) -> str:
    out = [f"--- {_side(c.old)}\n", f"+++ {_side(c.new)}\n"]
    if c.target:
        parts = [f"{_LABELS[name]} {_show(a)} -> {_show(b)}" for name, a, b in c.target]
        out.append("target: " + ", ".join(parts) + "\n")
    if not c.differs:
        out.append("no difference in the effective settings or findings\n")
        return "".join(out)
    if c.effective:
        out.append(f"\neffective settings ({len(c.effective)} differ):\n")
        for ch in c.effective:
            same = ch.old is not None and ch.new is not None and same_value(ch.old.value, ch.new.value)
            out.append(f"  {ch.key}{'  (same value, other provenance)' if same else ''}\n"
                       f"    - {_value(ch.old)}\n    + {_value(ch.new)}\n")
    if c.appeared or c.disappeared:
        out.append(f"\nfindings ({len(c.appeared)} appeared, {len(c.disappeared)} disappeared):\n")
        out += [f"  + {_finding(f)}\n" for f in c.appeared]
        out += [f"  - {_finding(f)}\n" for f in c.disappeared]
    return "".join(out)
