"""The JSON contract of ``overlap check --format json`` (version 1). Extend it, never break it:
consumers rely on ``results[].findings[]`` and ``summary``. Later additions: ``summary.by_code`` and,
when folders were walked, ``skipped``."""

from __future__ import annotations

import json

from overlap_cli.results import json_document
from overlap_cli.report.common import by_code, summary


def render(results, skipped=()) -> str:
    s = summary(results)
    s["by_code"] = {}
    for code, _severity, n in by_code(results):
        s["by_code"][code] = s["by_code"].get(code, 0) + n
    doc = json_document(results=[r.to_json() for r in results], summary=s)
    if skipped:
        doc["skipped"] = [{"file": path, "reason": reason} for path, reason in skipped]
    return json.dumps(doc, indent=2, default=str)
