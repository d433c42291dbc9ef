"""What the line-map tools share (build_mlm_release_lines.py, build_bridge_release_lines.py): the ``file:line``
cite as the mirror writes it, and where a cited line of the newest release is in an older one.

A line is mapped where difflib's alignment of the two files (``SequenceMatcher`` over the lines, whitespace
stripped) keeps it unchanged; a cited line that was changed or does not exist in the older release is listed
under ``changed`` (what it asserts may differ there).
"""

from __future__ import annotations

import difflib
import json
from pathlib import Path

from overlap_cli.frameworks.cites import CITE  # noqa: F401 (the one spelling of a cite, re-exported)


def line_map(old: list, new: list) -> dict:
    """new line number (1-based) -> old line number, for the lines difflib keeps unchanged."""
    matcher = difflib.SequenceMatcher(None, [s.strip() for s in old], [s.strip() for s in new], autojunk=False)
    out = {}
    for tag, i1, i2, j1, j2 in matcher.get_opcodes():
        if tag == "equal":
            for k in range(j2 - j1):
                out[j1 + k + 1] = i1 + k + 1
    return out


def mapped(cited: dict, old_file, new_file) -> tuple:
    """({path: {newest line: old line}}, {path: [the cited lines the old release changed or lacks]}) of
    ``cited`` ({path: the newest release's cited lines}); ``old_file(path)`` / ``new_file(path)`` are the
    two releases' files."""
    files, changed = {}, {}
    for path, lines in sorted(cited.items()):
        old = old_file(path)
        if not old.is_file():
            changed[path] = sorted(lines)
            continue
        mapping = line_map(old.read_text().splitlines(), new_file(path).read_text().splitlines())
        files[path] = {str(n): mapping[n] for n in sorted(lines) if n in mapping}
        missing = sorted(n for n in lines if n not in mapping)
        if missing:
            changed[path] = missing
    return files, changed


def write(out: Path, doc: dict) -> None:
    out.write_text(json.dumps(doc, indent=0, sort_keys=True) + "\n")
