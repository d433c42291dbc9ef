"""``[tool.overlap]`` settings: found in the nearest pyproject.toml walking up from the config file
(or given with ``--settings PATH``). CLI flags win over these; results say where each value came from.

Target-profile keys (read by target.build_target; ``-`` and ``_`` are interchangeable)::

    [tool.overlap]
    gpu = "h100"              # a100 | h100 | h200 | b200 | b300 | gb200 | gb300
    world_size = 64           # or: nodes = 8 and gpus_per_node = 8
    transformer_engine = true # alias: te
    te_version = "2.7"        # strings: a TOML number 2.10 would read as 2.1
    torch_version = "2.6"
    env_from_shell = false    # exported variables override env_vars, as at launch

Rule selection keys (select, ignore, per-file-ignores, ...) are read by selection.py.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from functools import lru_cache
from typing import Optional

from .model import InputError, InputProblem


@dataclass
class Settings:
    path: Optional[str] = None  # the pyproject.toml the values came from, or None
    data: dict = field(default_factory=dict)  # the [tool.overlap] table

    def get(self, key: str, default=None):
        return self.data.get(key, self.data.get(key.replace("_", "-"), default))


def _load_toml(path: str) -> dict:
    try:
        import tomllib  # Python >= 3.11
    except ModuleNotFoundError:  # pragma: no cover - Python 3.10
        import tomli as tomllib  # type: ignore[no-redef]
    try:
        with open(path, "rb") as fh:
            return tomllib.load(fh)
    except OSError as exc:
        raise InputError(InputProblem(path, f"cannot read settings: {exc.strerror or exc}")) from None
    except tomllib.TOMLDecodeError as exc:
        raise InputError(InputProblem(path, f"invalid TOML: {exc}")) from None


@lru_cache(maxsize=256)
def _settings_in(folder: str) -> Settings:
    candidate = os.path.join(folder, "pyproject.toml")
    if os.path.isfile(candidate):
        doc = _load_toml(candidate)
        table = doc.get("tool", {}).get("overlap")
        if isinstance(table, dict):
            return Settings(candidate, table)
    parent = os.path.dirname(folder)
    if parent == folder:
        return Settings()
    return _settings_in(parent)


def find_settings(config_file: Optional[str], explicit: Optional[str] = None) -> Settings:
    """Settings for one config file: ``explicit`` if given, else the nearest pyproject.toml with [tool.overlap]."""
    if explicit:
        doc = _load_toml(explicit)
        table = doc.get("tool", {}).get("overlap", {})
        if not isinstance(table, dict):
            raise InputError(InputProblem(explicit, "[tool.overlap] must be a table"))
        return Settings(explicit, table)
    start = os.path.dirname(os.path.abspath(config_file)) if config_file else os.getcwd()
    return _settings_in(start)
