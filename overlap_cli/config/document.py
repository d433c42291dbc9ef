"""One loaded config file: its plain values, where each key is in the text, and what overrides and
interpolation changed."""

from __future__ import annotations

TYPE_CHECKING = False  # the typing module costs ~2.5 ms of start-up; annotations here are strings (PEP 563)
if TYPE_CHECKING:
    from typing import Any, Optional

from overlap_cli.records import dataclass, field  # not dataclasses: start-up time (records.py)


@dataclass
class Config:
    """One loaded config file (after overrides and interpolation)."""

    file: str
    data: dict
    positions: dict  # path tuple -> (line, column), 1-based, of the key (or list item)
    text: str = ""
    override_paths: set = field(default_factory=set)  # paths set/added by dotlist overrides
    interpolated_paths: set = field(default_factory=set)  # paths whose value came from ${...}
    unresolved_paths: set = field(default_factory=set)  # ${...} left as written (unknown resolver, unset env)
    raw_interpolations: dict = field(default_factory=dict)  # path -> the ${...} text as written
    uses_env_resolver: bool = False
    warnings: list = field(default_factory=list)

    # -- access helpers used by the resolver --------------------------------------------------
    def section(self, name: str) -> Optional[dict]:
        value = self.data.get(name)
        return value if isinstance(value, dict) else None

    def has(self, path: tuple) -> bool:
        node: Any = self.data
        for part in path:
            if isinstance(node, dict) and part in node:
                node = node[part]
            else:
                return False
        return True

    def get(self, path: tuple, default: Any = None) -> Any:
        node: Any = self.data
        for part in path:
            if isinstance(node, dict) and part in node:
                node = node[part]
            else:
                return default
        return node

    def position(self, path: tuple) -> tuple[Optional[int], Optional[int]]:
        """Line/column of the key at ``path``, or of its nearest ancestor that is in the file."""
        p = tuple(path)
        while p:
            if p in self.positions:
                return self.positions[p]
            p = p[:-1]
        return (None, None)
