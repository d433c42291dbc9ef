"""Every upstream ``file:line`` of a Megatron-Bridge result read as the checked release has it.

The mirror is written in the newest release's terms: each ``file:line`` in the rules' messages, the fixes and
the effective values' reasons is a line of Megatron-Bridge NEWEST or of the megatron-core it pins. A result of
another release is rewritten here, once, when the run is resolved (forms.bridge_run.resolve), through that
release's line map (releases/lines-X.json, tools/build_bridge_release_lines.py): a cited line the release has
unchanged reads as its own line; a cited line it changed or lacks keeps the newest release's number and says
whose it is (``config.py:1505 in Megatron-Bridge 0.6.2``), so no printed line is another file's.

Some cites are already the release's own: the lines its data module states (``FSDP_MAX_CONNECTIONS_ASSERT_AT``,
the EP checks' ``EP_PRECHECK_LINES``, ...), which the rules print as they are. Those read as written.
"""

from __future__ import annotations

TYPE_CHECKING = False  # the typing module costs ~2.5 ms of start-up; annotations here are strings (PEP 563)
if TYPE_CHECKING:
    from typing import Iterable

# The release data's line tables and the file each one's lines are in (rules/ep.py joins them so).
_CO = "megatron/bridge/training/comm_overlap.py"
_TC = "megatron/core/transformer/transformer_config.py"
LINE_TABLES = {"EP_PRECHECK_LINES": _CO, "EP_CORE_LINES": _TC, "EP_CORE_MTP_NEEDS_PP_LINE": _TC,
               "EP_CORE_CUDA_GRAPH": _TC}
_MAPS: dict = {}


def finish(answer, release, user_files: Iterable = ()) -> None:
    """The findings (message, fix title) and effective values (reason) of ``answer`` with their cites read as
    ``release`` has them; nothing changes for the newest release. ``user_files``: the run's own file names,
    never read as upstream files."""
    from overlap_cli.frameworks.bridge.releases import BRIDGE, lines_file

    if release.BRIDGE_VERSION == BRIDGE.newest() or lines_file(release) is None:
        return
    import copy

    spelled = set(user_files)

    def cite(text):
        return rewrite(text, release, spelled) if isinstance(text, str) else text

    findings = []
    for f in answer.findings:  # copies: a finding or value may be shared with another run's result
        new = copy.copy(f)
        new.message = cite(f.message)
        if f.fix is not None and cite(f.fix.message) != f.fix.message:
            new.fix = copy.copy(f.fix)
            object.__setattr__(new.fix, "message", cite(f.fix.message))  # Fix is frozen
        findings.append(new)
    answer.findings = findings
    for key, v in answer.effective.items():
        reason = cite(v.reason)
        if reason != v.reason:
            answer.effective[key] = new = copy.copy(v)
            new.reason = reason


def rewrite(text: str, release, user_files=frozenset()) -> str:
    """``text`` with each upstream ``file:line`` (or ``:A-B``) of the newest release read as ``release``'s."""
    from overlap_cli.frameworks.cites import CITE

    names, files, own, newest = _line_map(release)

    def one(m) -> str:
        written, first, last = m.group(1), int(m.group(3)), m.group(4)
        path = names.get(written)
        if path is None or written in user_files:
            return m.group(0)  # not an upstream file the mirror cites (the run's own file, another project's)
        if (path, first) in own:
            return m.group(0)
        lines = files.get(path, {})
        if first in lines and (last is None or int(last) in lines):
            return f"{written}:{lines[first]}" + (f"-{lines[int(last)]}" if last is not None else "")
        return f"{m.group(0)} in {newest[0] if path.startswith('megatron/bridge/') else newest[1]}"

    return CITE.sub(one, text)


def _line_map(release) -> tuple:
    """(spelling -> path, {path: {newest line: the release's line}}, {(path, line) the release's data states},
    (the newest Bridge, its megatron-core) as named in a cite's note) of ``release``."""
    version = release.BRIDGE_VERSION
    if version not in _MAPS:
        from overlap_cli.frameworks.bridge.releases import BRIDGE, lines_file
        from overlap_cli.frameworks.cites import read_map

        files, _changed, doc = read_map(lines_file(release))
        newest = BRIDGE.get(BRIDGE.newest())
        _MAPS[version] = (doc["names"], files, own_cites(release, doc["names"]),
                          (f"Megatron-Bridge {newest.BRIDGE_VERSION}", f"megatron-core {newest.CORE_VERSION}"))
    return _MAPS[version]


def own_cites(release, names: dict) -> set:
    """(path, line) of every upstream line ``release``'s data module states itself (the rules print them as
    they are): each ``file:line`` text in its tables, each line of LINE_TABLES in its file."""
    from overlap_cli.frameworks.cites import CITE

    out = set()

    def walk(value):
        if isinstance(value, str):
            for m in CITE.finditer(value):
                path = names.get(m.group(1), m.group(1))
                out.add((path, int(m.group(3))))
        elif isinstance(value, dict):
            for v in value.values():
                walk(v)
        elif isinstance(value, (list, tuple, set, frozenset)):
            for v in value:
                walk(v)

    for name, value in vars(release).items():
        if not name.isupper():
            continue
        if name in LINE_TABLES:
            lines = value.get("line") if name == "EP_CORE_CUDA_GRAPH" else value
            lines = lines.values() if isinstance(lines, dict) else [lines]
            out.update((LINE_TABLES[name], n) for n in lines if isinstance(n, int))
        else:
            walk(value)
    return out
