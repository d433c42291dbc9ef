"""Writers of check results. The result objects (model.FileResult) know nothing about them."""

from __future__ import annotations

FORMATS = ("text", "json")


def summary(results) -> dict:
    out = {"files": len(results), "error": 0, "warning": 0, "info": 0}
    for r in results:
        for k, v in r.counts().items():
            out[k] += v
    out["unreadable"] = sum(1 for r in results if r.error is not None)
    return out
