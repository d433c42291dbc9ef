"""What a megatron-core release changes in the launch checks, read from its release module (releases/): which
checks it does not have, the message and ``file:line`` it prints where they differ, and where each line the
mirror cites is in its source.

The mirror is written in the newest release's terms: every ``file:line`` in frameworks/megatron_lm and the
LM rules is that release's, and the launch checks run in its order. An older release's module says what
differs, as data:

- ``CHECKS_ABSENT``: the ids of the checks (assertions.TABLE, and the asserts / forcings the resolver's steps
  record) its code does not have: none of them fires there;
- ``CHECKS_CHANGED``: id -> {"message": ..., "at": ...}: what it prints instead, and where;
- ``LINES``: its line map (tools/build_mlm_release_lines.py: each cited line of the newest release where
  its source has it unchanged), read on first use;
- ``CITES``: newest ``file:line`` -> its own, for a step the release does elsewhere (the DDP bucket in get_model);
every other cite reads as written.
"""

from __future__ import annotations

import os

TYPE_CHECKING = False  # the typing module costs ~2.5 ms of start-up; annotations here are strings (PEP 563)
if TYPE_CHECKING:
    from typing import Optional

_MAPS: dict = {}


def release(core: Optional[str]):
    from overlap_cli.frameworks.megatron_lm.releases import CORE

    return CORE.get(core)


def absent(core: Optional[str]) -> frozenset:
    """The ids of the checks megatron-core ``core`` does not have."""
    return release(core).CHECKS_ABSENT


def changed(core: Optional[str], check_id: str) -> dict:
    """What megatron-core ``core`` prints instead for ``check_id`` ({"message", "at"}; empty when the same)."""
    return release(core).CHECKS_CHANGED.get(check_id, {})


def _line_map(core: Optional[str]) -> tuple:
    """({file path: {newest line: this release's line}}, {file name: file path}, {file path: the cited lines this
    release has changed}) of the release."""
    rel = release(core)
    if rel.CORE_VERSION not in _MAPS:
        files: dict = {}
        changed_lines: dict = {}
        if rel.LINES is not None:
            from overlap_cli.frameworks.cites import read_map

            files, changed_lines, _doc = read_map(os.path.join(os.path.dirname(__file__), "releases", rel.LINES))
        names: dict = {}
        for path in files:
            names.setdefault(path.rsplit("/", 1)[-1], []).append(path)
        _MAPS[rel.CORE_VERSION] = (files, {n: p[0] for n, p in names.items() if len(p) == 1}, changed_lines)
    return _MAPS[rel.CORE_VERSION]


def cite(text: str, core: Optional[str]) -> str:
    """``text`` with each ``file.py:LINE`` (or ``:A-B``) of the newest release read as megatron-core ``core``'s
    line, where its line map holds it."""
    files, names, _changed = _line_map(core)
    own = release(core).CITES
    if not files:
        return text

    def one(m) -> str:
        written, name, first, last = m.group(1), m.group(2), int(m.group(3)), m.group(4)
        path = written if written.startswith("megatron/") else names.get(name, "")
        if f"{path}:{first}" in own:
            return own[f"{path}:{first}"]
        lines = files.get(path)
        if lines is None or first not in lines:
            return m.group(0)
        out = f"{written}:{lines[first]}"
        if last is not None:
            out += f"-{lines.get(int(last), lines[first] + int(last) - first)}"
        return out

    from overlap_cli.frameworks.cites import CITE

    return CITE.sub(one, text)


def check_at(check_id: str, at: str, core: Optional[str]) -> str:
    """Where megatron-core ``core`` has the check ``check_id`` that the newest release has at ``at``; a line that
    release has changed (its map has no place for it) is said to be the newest release's."""
    own = changed(core, check_id).get("at")
    if own:
        return own
    path, _, line = at.rpartition(":")
    if line.isdigit() and int(line) in _line_map(core)[2].get(path, ()):
        from overlap_cli.frameworks.megatron_lm.releases import CORE

        return f"{at} in megatron-core {CORE.newest()}"
    return cite(at, core)


def check_message(check_id: str, message: str, core: Optional[str]) -> str:
    return changed(core, check_id).get("message", message)
