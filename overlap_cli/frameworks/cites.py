"""The upstream ``file:line`` cite as the mirrors write it (``megatron/bridge/training/config.py:1505``,
``comm_overlap.py:522``, ``transformer_config.py:1922-2110``), and the line map of an older release read from
its JSON (tools/build_mlm_release_lines.py, tools/build_bridge_release_lines.py): where each cited line of the
newest release is in that release's source. Megatron-LM's launch output (megatron_lm/cites.py) and a
Megatron-Bridge result (bridge/cites.py) are rewritten through it, each at one place."""

from __future__ import annotations

import json
import re

# path as written (a bare name, a partial path or the full one), the file name, the first line, the last line
CITE = re.compile(r"(?<![\w/.])((?:megatron/)?[\w/]*?(\w+\.py)):(\d+)(?:-(\d+))?")


def read_map(path: str) -> tuple:
    """({file path: {newest line: this release's line}}, {file path: the cited lines this release has changed or
    lacks}, the JSON document) of a line-map file."""
    with open(path, encoding="utf-8") as fh:
        doc = json.load(fh)
    files = {p: {int(k): v for k, v in lines.items()} for p, lines in doc["files"].items()}
    changed = {p: set(lines) for p, lines in doc["changed"].items()}
    return files, changed, doc
