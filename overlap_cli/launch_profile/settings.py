"""``[tool.overlap]`` settings: found in the nearest pyproject.toml walking up from the config file
(or given with ``--settings PATH``). CLI flags win over these; results say where each value came from.

Target-profile keys (read by target.build_target; ``-`` and ``_`` are interchangeable)::

    [tool.overlap]
    gpu = "h100"              # a100 | h100 | h200 | b200 | b300 | gb200 | gb300 | vr200 | r100
    world_size = 64           # or: nodes = 8 and gpus_per_node = 8
    transformer_engine = true # alias: te
    te_version = "2.7"        # strings: a TOML number 2.10 would read as 2.1
    torch_version = "2.6"
    env_from_shell = false    # exported variables override env_vars, as at launch
    bridge_version = "0.5.1"  # the Megatron-Bridge release checked against: 0.4.2 | 0.5.1 | 0.6.0 | 0.6.2 | main
                              # (default: the newest numbered release mirrored, said in a note)
    core_version = "0.18.2"   # the megatron-core release (default: the one that Bridge release pins; alone,
                              # Bridge runs take the newest Bridge release that pins it)

    [tool.overlap.per-file-target]   # glob -> the same keys, for the files it matches (file_target.py)
    "configs/b200/*.yaml" = { gpu = "b200", world-size = 256 }

Rule selection keys (select, ignore, per-file-ignores, ...) are read by selection.py.
"""

from __future__ import annotations

import os
from functools import lru_cache

TYPE_CHECKING = False  # the typing module costs ~2.5 ms of start-up; annotations here are strings (PEP 563)
if TYPE_CHECKING:
    from typing import Optional

from overlap_cli.problems import InputError, InputProblem
from overlap_cli.records import dataclass, field  # not dataclasses: start-up time (records.py)


@dataclass
class Settings:
    path: Optional[str] = None  # the pyproject.toml the values came from, or None
    data: dict = field(default_factory=dict)  # the [tool.overlap] table

    def get(self, key: str, default=None):
        return self.data.get(key, self.data.get(key.replace("_", "-"), default))


def _load_toml(path: str, data: Optional[bytes] = None) -> dict:
    try:
        import tomllib  # Python >= 3.11
    except ModuleNotFoundError:  # pragma: no cover - Python 3.10
        import tomli as tomllib  # type: ignore[no-redef]
    if data is None:
        data = _read_settings(path)
    try:
        return tomllib.loads(data.decode("utf-8"))
    except UnicodeDecodeError as exc:
        raise InputError(InputProblem(path, f"invalid TOML: not UTF-8 ({exc.reason} at byte {exc.start})")) from None
    except tomllib.TOMLDecodeError as exc:
        raise InputError(InputProblem(path, f"invalid TOML: {exc}")) from None


def _read_settings(path: str) -> bytes:
    """The TOML file's bytes through the bounded reader: a FIFO, device or /proc file is refused, never opened."""
    from overlap_cli.config.safe_read import read_bytes

    try:
        return read_bytes(path)
    except InputError as exc:
        raise InputError(InputProblem(path, f"cannot read settings: {exc.problem.message}")) from None


def might_hold_tool_overlap(data: bytes) -> bool:
    """False only when this TOML text cannot define [tool.overlap]: then it is not parsed at all (importing
    the TOML parser costs ~2 ms of a ~40 ms start, and most pyproject.toml files on the walk up belong to
    other tools). A malformed file that cannot hold the table is therefore not reported either.

    A [tool.overlap] table needs ``tool`` and ``overlap`` joined by a dot (``[tool.overlap]``,
    ``tool.overlap.gpu = ...``), or a ``tool`` table (``[tool]``, ``tool = {...}``) with an ``overlap`` key
    in it; escapes in quoted keys could spell either word, so a file with one is always parsed."""
    import re

    if b"\\u" in data or b"\\U" in data:
        return True
    if b"overlap" not in data:
        return False
    if re.search(rb"""tool["']?[ \t]*\.[ \t]*["']?overlap""", data):
        return True
    return re.search(rb"""^[ \t]*(\[[ \t]*["']?tool["']?[ \t]*\]|["']?tool["']?[ \t]*=)""", data, re.M) is not None


@lru_cache(maxsize=256)
def _settings_in(folder: str) -> Settings:
    candidate = os.path.join(folder, "pyproject.toml")
    if os.path.isfile(candidate):
        data = _read_settings(candidate)
        if might_hold_tool_overlap(data):
            table = _load_toml(candidate, data).get("tool", {}).get("overlap")
            if isinstance(table, dict):
                return Settings(candidate, table)
    parent = os.path.dirname(folder)
    if parent == folder:
        return Settings()
    return _settings_in(parent)


def find_settings(config_file: Optional[str], explicit: Optional[str] = None) -> Settings:
    """Settings for one config file: ``explicit`` if given, else the nearest pyproject.toml with [tool.overlap]."""
    if explicit:
        try:
            st = os.stat(explicit)
            stamp = (st.st_mtime_ns, st.st_size)
        except OSError:
            stamp = None  # _load_toml says why it cannot be read
        return _explicit_settings(explicit, stamp)
    start = os.path.dirname(os.path.abspath(config_file)) if config_file else os.getcwd()
    return _settings_in(start)


@lru_cache(maxsize=16)
def _explicit_settings(path: str, stamp) -> Settings:
    """``--settings PATH``, parsed once while the file is unchanged (``stamp``: its mtime and size): it is
    consulted for every config file of a run, and a per-file-target table can be hundreds of entries."""
    table = _load_toml(path).get("tool", {}).get("overlap", {})
    if not isinstance(table, dict):
        raise InputError(InputProblem(path, "[tool.overlap] must be a table"))
    return Settings(path, table)


def path_matches(pattern: str, path: str, base: str) -> bool:
    """Whether glob ``pattern`` (relative to folder ``base``, or a bare file name) matches ``path``: the
    keys of ``per-file-ignores`` and ``per-file-target``."""
    from fnmatch import fnmatchcase

    absolute = os.path.abspath(path)
    rel = _relative(absolute, base) if base else path
    pat = pattern.replace("\\", "/")
    if pat.startswith("./"):
        pat = pat[2:]
    if fnmatchcase(rel, pat):
        return True
    return "/" not in pat and fnmatchcase(os.path.basename(absolute), pat)


@lru_cache(maxsize=1024)
def _relative(absolute: str, base: str) -> str:
    """``absolute`` relative to ``base`` with ``/``: asked once per pattern of a table for the same file."""
    return os.path.relpath(absolute, base).replace(os.sep, "/")
