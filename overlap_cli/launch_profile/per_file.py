"""Per-file targets: the launch a config is for, written next to it.

Two places, both stronger than ``[tool.overlap]`` and weaker than a command-line flag (target.py has
the whole order):

- a directive on a comment line of its own in the config::

      # overlap: target world-size=256 gpu=b200 te-version=2.12

  keys are the target keys with ``-`` (``world-size``, ``nodes``, ``gpus-per-node``, ``gpu``, ``te`` or
  ``transformer-engine``, ``te-version``, ``torch-version``, ``env-from-shell``, ``recipe``,
  ``bridge-version``, ``core-version``), values as on the command line (``te=false``,
  ``bridge-version=0.5.1``); an unknown key or a bad value is an input error naming the line;
- ``[tool.overlap.per-file-target]`` in pyproject.toml: glob -> table of the same keys, globs relative
  to the pyproject.toml's folder (or a bare file name), as ``per-file-ignores``; where several match, the
  later one wins.
"""

from __future__ import annotations

import re

TYPE_CHECKING = False  # the typing module costs ~2.5 ms of start-up; annotations here are strings (PEP 563)
if TYPE_CHECKING:
    from typing import Optional

from overlap_cli import lazyre
from overlap_cli.problems import InputError, InputProblem
from overlap_cli.records import dataclass, field  # not dataclasses: start-up time (records.py)

# The target keys a table (``[tool.overlap]``, a per-file-target entry, a directive) may set (read by
# target.apply_table); ``-`` and ``_`` are interchangeable. Other [tool.overlap] keys belong to other parts.
TARGET_KEYS = (
    "world_size", "nodes", "gpus_per_node", "gpu", "transformer_engine", "te", "te_version", "torch_version",
    "env_from_shell", "recipe", "bridge_version", "core_version",
)  # fmt: skip
# ``# overlap: target KEY=VALUE ...``, or ``# overlap: recipe=NAME`` (the same table, one key).
_DIRECTIVE_HEAD = lazyre.compile(r"#[ \t]*overlap[ \t]*:", re.IGNORECASE)
_DIRECTIVE = lazyre.compile(
    r"^[ \t]*#[ \t]*overlap[ \t]*:[ \t]*(?:target(?![\w-])|(?=recipe[ \t]*=))(.*)$", re.IGNORECASE | re.MULTILINE
)
_INTEGER_KEYS = ("world_size", "nodes", "gpus_per_node")
_BOOLEAN_KEYS = ("te", "transformer_engine", "env_from_shell")


@dataclass
class Table:
    """Target keys as a table whose ``get`` treats ``-`` and ``_`` alike (like settings.Settings)."""

    data: dict = field(default_factory=dict)

    def get(self, key: str, default=None):
        return self.data.get(key.replace("-", "_"), default)


@dataclass
class Directive:
    file: str
    line: int
    table: Table


def _known(key: str) -> bool:
    return key in TARGET_KEYS


def _closest(key: str) -> str:
    import difflib

    names = [k.replace("_", "-") for k in TARGET_KEYS]
    near = difflib.get_close_matches(key.replace("_", "-"), names, n=1)
    return f" (did you mean {near[0]}?)" if near else f" (expected one of {', '.join(names)})"


_NONE_IN: list = [None]  # the last text found to hold no directive


def parse_directive(text: str, file: str) -> Optional[Directive]:
    """The ``# overlap: target ...`` directive of ``text``, or None. Several directive lines add up; a key
    given twice is an error. Raises model.InputError naming the line for anything it cannot read."""
    if text is _NONE_IN[0]:  # the runs of one module share its text: scanned once
        return None
    if "overlap" not in text or ("target" not in text and "recipe" not in text) or not _DIRECTIVE_HEAD.search(text):
        # most files: substring tests; Bridge dumps say "overlap" and "_target_" everywhere: one cheap scan
        _NONE_IN[0] = text
        return None
    matches = list(_DIRECTIVE.finditer(text))
    if not matches:
        return None
    from overlap_cli.config.yamlspans import scalar_spans

    spans = scalar_spans(text)
    table: dict = {}
    first_line = None
    for m in matches:
        if any(a <= m.start(1) < b for a, b in spans):
            continue  # inside a multi-line string: not a comment
        line = text.count("\n", 0, m.start()) + 1

        def bad(message: str, key: Optional[str] = None):
            return InputError(InputProblem(file, f"# overlap: target: {message}", key=key, line=line))

        body = m.group(1).split(" #", 1)[0].strip()  # a comment after the directive is not part of it
        if not body:
            raise bad("no target keys: write e.g. `# overlap: target world-size=64 gpu=h100`")
        for item in body.split():
            name, eq, raw = item.partition("=")
            key = name.strip().lower().replace("-", "_")
            if not eq or not key or not raw:
                raise bad(f"expected key=value, got {item!r}")
            if not _known(key):
                raise bad(f"unknown key {name!r}{_closest(name)}", name)
            if key in table or (key in ("te", "transformer_engine") and {"te", "transformer_engine"} & set(table)):
                raise bad(f"{name} is given twice", name)
            table[key] = _value(key, raw, bad, name)
        first_line = first_line or line
    if first_line is None:
        return None
    return Directive(file, first_line, Table(table))


def _value(key: str, raw: str, bad, name: str):
    if key in _INTEGER_KEYS:
        if not raw.isdigit():
            raise bad(f"{name} must be a positive integer, got {raw!r}", name)
        return int(raw)
    if key in _BOOLEAN_KEYS:
        low = raw.lower()
        if low not in ("true", "false"):
            raise bad(f"{name} must be true or false, got {raw!r}", name)
        return low == "true"
    return raw


def matching_tables(settings, config_file: str) -> tuple:
    """[(glob, Table)] of the ``per-file-target`` entries of ``settings`` ([tool.overlap]) whose glob
    matches ``config_file``, in the order written. Raises model.InputError for a malformed table."""
    raw = settings.get("per_file_target") if settings is not None and settings.data else None
    if raw is None:
        return ()
    import os

    from overlap_cli.launch_profile.settings import path_matches

    where = settings.path or "pyproject.toml"
    if not isinstance(raw, dict):
        raise InputError(InputProblem(where, "must be a table of glob = {target keys}", key="tool.overlap.per-file-target"))
    base = os.path.dirname(os.path.abspath(settings.path)) if settings.path else None
    out = []
    for pattern, table in raw.items():
        key = f"tool.overlap.per-file-target.{pattern}"
        if not isinstance(table, dict):
            raise InputError(InputProblem(where, "must be a table of target keys, e.g. {world-size = 64, gpu = \"h100\"}", key=key))
        for name in table:
            if not _known(name.replace("-", "_")):
                raise InputError(InputProblem(where, f"unknown target key {name!r}{_closest(name)}", key=f"{key}.{name}"))
        if path_matches(pattern, config_file, base):
            out.append((pattern, Table({k.replace("-", "_"): v for k, v in table.items()})))
    return tuple(out)
