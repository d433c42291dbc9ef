"""Inline suppression comments in a YAML config.

    key: value   # overlap: ignore[TP102, PP202]   covers this line
    # overlap: ignore[PP202]                       alone on a line: covers the next line holding YAML
    # overlap: ignore-file                         alone on a line: the whole file (or ignore-file[CODES])

A ``#`` counts only where YAML would read a comment: after whitespace (or at the start of a line) and
outside any scalar, so ``name: "x # overlap: ignore[TP102]"`` is a string, not a suppression. What the
comments do to findings is decided in selection.filter_findings.
"""

from __future__ import annotations

import re
from bisect import bisect_right

TYPE_CHECKING = False  # the typing module costs ~2.5 ms of start-up; annotations here are strings (PEP 563)
if TYPE_CHECKING:
    from typing import Optional

from overlap_cli import lazyre
from overlap_cli.config.yamlspans import scalar_spans
from overlap_cli.records import dataclass, field  # not dataclasses: start-up time (records.py)

DIRECTIVE = lazyre.compile(r"#\s*overlap\s*:\s*(ignore-file|ignore)(?![\w-])\s*(?:\[([^\]\n]*)\])?", re.IGNORECASE)


_NONE_IN: list = [None]  # the last text found to hold no directive


@dataclass
class Directive:
    line: int  # where the comment is
    column: int
    applies_to: Optional[int]  # the line it covers; None for ignore-file
    tokens: tuple  # as written; empty = every code
    used: set = field(default_factory=set)  # tokens that suppressed something


def parse_directives(text: str) -> list:
    """Every ``# overlap: ignore...`` comment in ``text`` (none for most files: one substring test, once
    for the runs of one module, which share its text)."""
    if text is _NONE_IN[0]:
        return []
    if "overlap" not in text or not DIRECTIVE.search(text):
        _NONE_IN[0] = text
        return []
    spans = None
    lines = text.split("\n")
    offsets, pos = [], 0
    for ln in lines:
        offsets.append(pos)
        pos += len(ln) + 1
    found = []
    next_yaml = None  # index -> the first line at or after it holding YAML, filled once (a backward scan)
    for i, ln in enumerate(lines):
        m = DIRECTIVE.search(ln)
        if not m:
            continue
        start = m.start()
        if start > 0 and not ln[start - 1].isspace():
            continue  # `key: a#overlap: ...` is part of a plain scalar, not a comment
        if spans is None:
            spans = scalar_spans(text)
        index = offsets[i] + start
        k = bisect_right(spans, (index, float("inf"))) - 1  # spans: sorted, apart
        if k >= 0 and spans[k][0] <= index < spans[k][1]:
            continue
        kind, body = m.group(1).lower(), m.group(2)
        tokens = tuple(t.strip() for t in body.split(",") if t.strip()) if body else ()
        own_line = not ln[:start].strip()
        if kind == "ignore-file":
            if own_line:
                found.append(Directive(i + 1, start + 1, None, tokens))
            continue
        target = i + 1
        if own_line:  # covers the next line that holds YAML (comments and blank lines in between are skipped)
            if next_yaml is None:
                next_yaml = _next_yaml_lines(lines)
            target = next_yaml[i + 1] if i + 1 < len(lines) else None
        found.append(Directive(i + 1, start + 1, target, tokens))
    return found


def _next_yaml_lines(lines: list) -> list:
    """For each line index, the 1-based number of the first line at or after it that holds YAML (not blank,
    not a comment), or None: one pass from the end, so 20,000 directive lines in a row stay linear."""
    out: list = [None] * len(lines)
    nxt = None
    for j in range(len(lines) - 1, -1, -1):
        s = lines[j].strip()
        if s and not s.startswith("#"):
            nxt = j + 1
        out[j] = nxt
    return out
