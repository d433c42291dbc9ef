"""What several report writers share: the summary counts and the findings counted per code."""

from __future__ import annotations

from overlap_cli.rules.registry import code_sort_key


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
