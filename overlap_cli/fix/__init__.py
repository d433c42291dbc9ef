"""``overlap fix``: loop.py drives the rounds on Bridge configs, script.py on Megatron-LM launches."""

from __future__ import annotations


def fixable(findings: list, unsafe: bool, threshold: str) -> list:
    """The findings whose fix a round applies: edits to make, safe (or any with ``unsafe``), at or above
    ``threshold`` (the bar `overlap check` fails on, so fix never edits a file check passes)."""
    from overlap_cli.results import SEVERITY_RANK

    bar = SEVERITY_RANK[threshold]
    return [
        f for f in findings
        if f.fix and f.fix.edits and (f.fix.applicability == "safe" or unsafe) and SEVERITY_RANK[f.severity] >= bar
    ]
