"""``overlap diff`` output: a ``check.compare.Comparison`` as text or as the version-1 JSON document.

Values are written as the config writes them (``results.show_value``: ``true`` / ``null`` in a YAML config or a
launch, ``True`` / ``None`` in a Python run); a mapping (a userbuffers config) is its name, and the entries
that differ below it, one per line. Provenance-only changes (the same value, written elsewhere or derived for
another reason) and info findings are left out of the text and the exit code unless asked for
(``--show-provenance``, ``--show-info``: check's selection); the JSON document carries every change."""

from __future__ import annotations

from overlap_cli.results import show_value

from overlap_cli.check.compare import TARGET_FIELDS, same_value
from overlap_cli.report.common import effective_value

_LABELS = dict(TARGET_FIELDS)
MAX_ENTRIES = 12  # entries of a mapping shown under its change; the JSON document has them all


def to_json(c) -> dict:
    """{"version": 1, "old": {file, target}, "new": {...}, "effective": [{key, old, new}] (values that differ),
    "provenance": [{key, old, new}] (the same value, another provenance), "findings": {"appeared": [...],
    "disappeared": [...], "changed": [{old, new}]}}; a side of a change is null where the key is absent."""
    from overlap_cli.results import json_document

    def change(ch) -> dict:
        return {"key": ch.key, "old": ch.old.to_json() if ch.old else None, "new": ch.new.to_json() if ch.new else None}

    return json_document(
        old={"file": c.old.file, "target": c.old.target},
        new={"file": c.new.file, "target": c.new.target},
        effective=[change(ch) for ch in c.effective],
        provenance=[change(ch) for ch in c.provenance],
        findings={
            "appeared": [f.to_json() for f in c.appeared],
            "disappeared": [f.to_json() for f in c.disappeared],
            "changed": [{"old": a.to_json(), "new": b.to_json()} for a, b in c.changed],
        },
    )


def _show(value) -> str:
    """A target field (None: not known)."""
    return show_value(value, missing="unknown")


def _side(result) -> str:
    t = result.target
    return f"{result.file} (world size {_show(t.get('world_size'))}, DP {_show(t.get('data_parallel_size'))})"


def _value(v, spell: str) -> str:
    if v is None:
        return "(absent)"
    return f"{effective_value(v, spell)}  [{v.source}: {v.reason}]"


def _flow(value, spell: str) -> str:
    """A value as a flow mapping where it is a mapping (YAML's ``{method: bulk, num_sm: 4}``, a Python dict
    display in a Python run), else show_value."""
    if isinstance(value, dict):
        key = repr if spell == "python" else str
        return "{" + ", ".join(f"{key(k)}: {_flow(v, spell)}" for k, v in value.items()) + "}"
    return show_value(value, spell)


def _differing(a: dict, b: dict, prefix: str = "") -> list:
    """[(dotted path, old, new)] of two mappings: a mapping on both sides is compared entry by entry, anything
    else (a scalar, a list, a mapping on one side only) is one entry; _ABSENT where a side lacks the key."""
    out = []
    for k in list(a) + [k for k in b if k not in a]:
        x, y = a.get(k, _ABSENT), b.get(k, _ABSENT)
        if isinstance(x, dict) and isinstance(y, dict):
            out += _differing(x, y, f"{prefix}{k}.")
        elif x is _ABSENT or y is _ABSENT or not same_value(x, y):
            out.append((f"{prefix}{k}", x, y))
    return out


_ABSENT = object()


def _gemm_table(value):
    """What a mapping's entries are compared on: for the effective userbuffers config ({"preset", "matches",
    "te_config"}, frameworks/bridge/resolver.py) its ``te_config``, the per-GEMM table Transformer Engine
    receives (the preset's name is on the change's own lines); any other mapping itself."""
    if isinstance(value, dict) and "te_config" in value and "preset" in value:
        return value.get("te_config") or {}
    return value


def _entry_lines(old, new, spell: str) -> list:
    """The entries of two mappings that differ, ``path: old -> new`` (at most MAX_ENTRIES lines)."""
    old, new = _gemm_table(old), _gemm_table(new)
    if not isinstance(old, dict) and not isinstance(new, dict):
        return []
    differ = _differing(old if isinstance(old, dict) else {}, new if isinstance(new, dict) else {})

    def one(v) -> str:
        return "(absent)" if v is _ABSENT else _flow(v, spell)

    lines = [f"      {k}: {one(x)} -> {one(y)}\n" for k, x, y in differ[:MAX_ENTRIES]]
    if len(differ) > MAX_ENTRIES:
        lines.append(f"      ... {len(differ) - MAX_ENTRIES} more entries differ (--format json has them all)\n")
    return lines


def _finding(f) -> str:
    key = f" {f.key}" if f.key else ""
    return f"{f.code} {f.severity}{key}: {f.message}"


def render_text(c, *, provenance: bool = False, info: bool = False, spell: tuple = ("yaml", "yaml")) -> str:
    """The comparison as text; ``spell``: how each side's input writes values (results.show_value)."""
    out = [f"--- {_side(c.old)}\n", f"+++ {_side(c.new)}\n"]
    if c.target:
        parts = [f"{_LABELS[name]} {_show(a)} -> {_show(b)}" for name, a, b in c.target]
        out.append("target: " + ", ".join(parts) + "\n")
    appeared, disappeared, changed = c.findings(info)
    if not c.differs(provenance, info):
        out.append("no difference in the effective settings or findings\n")
    shown = c.effective + (c.provenance if provenance else [])
    if shown:
        out.append(f"\neffective settings ({len(shown)} differ):\n")
        for ch in shown:
            note = "  (same value, other provenance)" if ch.provenance_only else ""
            out.append(f"  {ch.key}{note}\n    - {_value(ch.old, spell[0])}\n    + {_value(ch.new, spell[1])}\n")
            out += _entry_lines(ch.old.value if ch.old else None, ch.new.value if ch.new else None, spell[1])
    if appeared or disappeared or changed:
        out.append(f"\nfindings ({len(appeared)} appeared, {len(disappeared)} disappeared, {len(changed)} changed):\n")
        out += [f"  + {_finding(f)}\n" for f in appeared]
        out += [f"  - {_finding(f)}\n" for f in disappeared]
        out += [f"  ~ {_finding(b)}\n    (was: {a.message})\n" for a, b in changed]
    hidden = _hidden(c, provenance, info, (appeared, disappeared, changed))
    if hidden:
        out.append(hidden)
    return "".join(out)


def _hidden(c, provenance: bool, info: bool, shown: tuple) -> str:
    """What the text leaves out, and the flag that shows it ('' when nothing is left out)."""
    parts = []
    if c.provenance and not provenance:
        parts.append(f"{len(c.provenance)} setting(s) with the same value and another provenance (--show-provenance)")
    every = len(c.appeared) + len(c.disappeared) + len(c.changed)
    left = every - sum(len(s) for s in shown)
    if left and not info:
        parts.append(f"{left} info finding change(s) (--show-info)")
    return ("\nNot shown: " + ", ".join(parts) + ".\n") if parts else ""
