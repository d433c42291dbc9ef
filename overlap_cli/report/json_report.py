from __future__ import annotations

import json

from . import summary


def render(results) -> str:
    doc = {"version": 1, "results": [r.to_json() for r in results], "summary": summary(results)}
    return json.dumps(doc, indent=2, default=str)
