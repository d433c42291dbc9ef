"""Build the line maps of the Megatron-Bridge releases older than (or beside) the newest one: where each
upstream line the Bridge mirror cites (written as Megatron-Bridge NEWEST's ``file:line`` or the ``file:line``
of the megatron-core it pins) is in that release's source and in the source of the core that release pins.

    python tools/build_bridge_release_lines.py [SOURCES]

SOURCES holds the unpacked wheels (``megatron_bridge-X.Y.Z`` / ``megatron_core-X.Y.Z``, each the folder
holding ``megatron/``; default /tmp/src, or ``OVERLAP_RELEASE_SOURCES``); ``main`` is the snapshot in
../shared/upstream/Megatron-Bridge/src. The cites are every ``file.py:LINE`` (and ``file.py:A-B``) in the
string literals that can reach a Bridge result (every module under overlap_cli/ but the Megatron-LM and NeMo-RL
mirrors and the release data, which states each release's own lines; docstrings aside; a file named by a module
constant, ``{_TC}:1440``, spelled out) and every ``at`` of the Raise tables (some built in loops). A cite is written as the full path, a partial one or a bare file name; each spelling
stands for the one file of the newest trees whose path ends with it, or for the file PREFERRED names where
several do. Lines are mapped as tools/release_lines.py does; a cited line the release changed or lacks is listed
under ``changed``.

Output: ``overlap_cli/frameworks/bridge/releases/lines-X.json`` per release (``lines-main.json``), with
``names``: each spelling -> its path.
"""

from __future__ import annotations

import ast
import os
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PACKAGE = ROOT / "overlap_cli"
sys.path.insert(0, str(ROOT))  # this checkout's package, whatever else is installed

from release_lines import CITE, mapped, write  # noqa: E402 (after the path)

MAIN_BRIDGE = ROOT.parent / "shared" / "upstream" / "Megatron-Bridge" / "src"
# The mirrors this map is not for (their own maps and releases), by path under overlap_cli/.
NOT_BRIDGE = ("frameworks/megatron_lm/", "frameworks/nemo_rl/", "rules/lm", "rules/rl.py", "frameworks/bridge/releases/")
# A spelling several files of the newest trees end with: the one the Bridge mirror means by it.
# (Another spelling several files end with, ``base.py``, is no file of these trees: Transformer Engine's.)
PREFERRED = {
    "config.py": "megatron/bridge/training/config.py",
    "training/config.py": "megatron/bridge/training/config.py",
    "transformer_config.py": "megatron/core/transformer/transformer_config.py",
    "initialize.py": "megatron/bridge/training/initialize.py",
    "mixed_precision.py": "megatron/bridge/training/mixed_precision.py",
    "arguments.py": "megatron/training/arguments.py",
    "distributed_data_parallel_config.py": "megatron/core/distributed/distributed_data_parallel_config.py",
    "param_and_grad_buffer.py": "megatron/core/distributed/param_and_grad_buffer.py",
}


def newest_trees(sources: Path) -> tuple:
    from overlap_cli.frameworks.bridge.releases import BRIDGE

    newest = BRIDGE.get(BRIDGE.newest())
    return (newest.BRIDGE_VERSION, newest.CORE_VERSION, sources / f"megatron_bridge-{newest.BRIDGE_VERSION}",
            sources / f"megatron_core-{newest.CORE_VERSION}")


def texts() -> list:
    """Every text a Bridge result's words can come from: the string literals (docstrings aside) of each module
    but the release data's own (releases/: each release states its own lines) and the other frameworks' mirrors,
    a file named by a module constant spelled out, and the ``at`` of every Raise record."""
    out = []
    for f in sorted(PACKAGE.rglob("*.py")):
        rel = f.relative_to(PACKAGE).as_posix()
        if not rel.startswith(NOT_BRIDGE):
            out.extend(literals(f.read_text(encoding="utf-8")))
    import importlib

    from overlap_cli.frameworks.raises import Raise

    for f in sorted((PACKAGE / "rules").glob("*.py")):  # the tables (frameworks/raises.py), some built in loops
        if f"rules/{f.name}".startswith(NOT_BRIDGE):
            continue
        for value in vars(importlib.import_module(f"overlap_cli.rules.{f.stem}")).values():
            if isinstance(value, (tuple, list)):
                out.extend(r.at for r in value if isinstance(r, Raise))
    return out


def literals(text: str) -> list:
    """The string literals of a module (an f-string as written, ``{_TC}:1440``, with each constant of the
    module naming a file spelled out), without its docstrings: what it can print."""
    tree = ast.parse(text)
    constants, docstrings = {}, set()
    for node in ast.walk(tree):
        if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)) and node.body:
            first = node.body[0]
            if isinstance(first, ast.Expr) and isinstance(first.value, ast.Constant):
                docstrings.add(id(first.value))
    for node in tree.body:
        if (isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name)
                and isinstance(node.value, ast.Constant) and isinstance(node.value.value, str)
                and node.value.value.endswith(".py")):
            constants["{" + node.targets[0].id + "}"] = node.value.value
    out = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Constant) and isinstance(node.value, str) and id(node) not in docstrings:
            out.append(node.value)
        elif isinstance(node, ast.JoinedStr):
            written = ast.unparse(node)
            for name, value in constants.items():
                written = written.replace(name, value)
            out.append(written)
    return out


def spellings(trees: tuple) -> dict:
    """path of each file of the trees (``megatron/...``) -> the tree holding it."""
    out = {}
    for tree in trees:
        for p in (tree / "megatron").rglob("*.py"):
            out.setdefault(p.relative_to(tree).as_posix(), tree)
    return out


def resolved(written: str, paths: dict):
    if written in paths:
        return written
    if written in PREFERRED:
        return PREFERRED[written]
    found = [p for p in paths if p.endswith("/" + written)]
    return found[0] if len(found) == 1 else None


def cited(paths: dict) -> tuple:
    """({spelling: path}, {path: the cited line numbers}) over every cite of the Bridge mirror."""
    names, lines = {}, {}
    for text in texts():
        for m in CITE.finditer(text):
            written, first, last = m.group(1), int(m.group(3)), m.group(4)
            path = resolved(written, paths)
            if path is None:
                continue
            names[written] = path
            lines.setdefault(path, set()).update({first} | ({int(last)} if last else set()))
    return names, lines


def release_trees(version: str, sources: Path) -> tuple:
    from overlap_cli.frameworks.bridge.releases import BRIDGE

    release = BRIDGE.get(version)
    bridge = MAIN_BRIDGE if version == "main" else sources / f"megatron_bridge-{version}"
    return release.CORE_VERSION, bridge, sources / f"megatron_core-{release.CORE_VERSION}"


def build(version: str, sources: Path) -> dict:
    """The line map of Bridge ``version`` (the JSON document)."""
    newest_bridge, newest_core, new_bridge, new_core = newest_trees(sources)
    paths = spellings((new_bridge, new_core))
    names, lines = cited(paths)
    core, bridge, core_tree = release_trees(version, sources)

    def old_file(path):
        return (bridge if path.startswith("megatron/bridge/") else core_tree) / path

    files, changed = mapped(lines, old_file, lambda path: paths[path] / path)
    return {"release": version, "core": core, "cites": f"Megatron-Bridge {newest_bridge} / megatron-core {newest_core}",
            "names": dict(sorted(names.items())), "files": files, "changed": changed}


def main() -> int:
    from overlap_cli.frameworks.bridge.releases import BRIDGE

    sources = Path(sys.argv[1] if len(sys.argv) > 1 else os.environ.get("OVERLAP_RELEASE_SOURCES") or "/tmp/src")
    for version in BRIDGE.versions():
        if version == BRIDGE.newest():
            continue
        doc = build(version, sources)
        out = PACKAGE / "frameworks" / "bridge" / "releases" / f"lines-{version}.json"
        write(out, doc)
        print(f"{out}: {sum(len(v) for v in doc['files'].values())} lines mapped, "
              f"{sum(len(v) for v in doc['changed'].values())} changed", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
