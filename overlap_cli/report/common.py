"""What several report writers share: the summary counts and the findings counted per code."""

from __future__ import annotations

from overlap_cli.problems import printable
from overlap_cli.results import show_value
from overlap_cli.rules.registry import code_sort_key


def effective_value(v, spell: str = "yaml") -> str:
    """An effective setting's value as reports write it: ``unknown`` where the run leaves it unknown (the
    value it holds is no one's: ``null`` would read as a null someone wrote), else results.show_value."""
    if v.source == "unknown" and v.value is None:
        return "unknown"
    return show_value(v.value, spell)


def location(file: str, f) -> str:
    """Where a finding is, as report lines start: ``FILE:LINE:COL``; for a finding about a value another
    layer of a merged run wrote (Finding.origin), that layer and the key: ``FILE (recipe NAME: key)``, or
    the other file's ``FILE:LINE`` itself."""
    origin = getattr(f, "origin", None)
    file = printable(file)  # a name holding escape sequences is shown escaped, never acted on
    if origin:
        origin = printable(origin)
        head, _, line = origin.rpartition(":")
        if head and line.isdigit():  # another override file: its own line
            return origin
        return f"{file} ({origin}: {f.key})"
    return f"{file}:{f.line or 1}:{f.column or 1}"


def finding_line(file: str, f, mark_fix: bool = False) -> str:
    """A finding as one line, the same in every line-oriented output (text, concise, ``overlap fix``):
    ``LOCATION: CODE SEVERITY: MESSAGE``; ``mark_fix`` adds ruff's ``[*]`` to a finding with a safe fix."""
    mark = " [*]" if mark_fix and f.fix is not None and f.fix.applicability == "safe" else ""
    return f"{location(file, f)}: {f.code}{mark} {f.severity}: {f.message}"


def with_origin(f) -> str:
    """The finding's message, with where its value came from when that is another layer (for formats whose
    location is always the checked file: SARIF, GitHub annotations)."""
    origin = getattr(f, "origin", None)
    return f"{f.message} (value from {origin}: {f.key})" if origin else f.message


def summary(results) -> dict:
    out = {"files": len(results), "error": 0, "warning": 0, "info": 0}
    for r in results:
        for k, v in r.counts().items():
            out[k] += v
    out["unreadable"] = sum(1 for r in results if r.error is not None)
    return out


def by_code(results) -> list:
    """[(code, severity, count)] over all results, sorted by code then severity."""
    counts: dict = {}
    for r in results:
        for f in r.findings:
            counts[(f.code, f.severity)] = counts.get((f.code, f.severity), 0) + 1
    return [(c, s, n) for (c, s), n in sorted(counts.items(), key=lambda kv: (code_sort_key(kv[0][0]), kv[0][1]))]
