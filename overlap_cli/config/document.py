"""One loaded config file: its plain values, where each key is in the text, and what overrides and
interpolation changed."""

from __future__ import annotations

TYPE_CHECKING = False  # the typing module costs ~2.5 ms of start-up; annotations here are strings (PEP 563)
if TYPE_CHECKING:
    from typing import Any, Optional

from overlap_cli.records import dataclass, field  # not dataclasses: start-up time (records.py)


@dataclass
class Layer:
    """One layer of a merged run (config.layers): a catalog recipe, a base dump, an override file or the
    command line. ``positions`` are its own keys' places (empty for the recipe and the command line)."""

    kind: str  # "recipe" | "base" | "file" | "command line"
    label: str  # "recipe NAME", the file's path, "command line"
    file: Optional[str]
    positions: dict
    data: Optional[dict] = None  # a base dump's own values, as ``ConfigContainer.from_yaml`` instantiates them


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
    # A merged run (config.layers.load_layered): the layers bottom to top, the index of the layer that
    # wrote each key's value, the index of the top file (``file``/``text``/``positions`` are its), the
    # merged data below the top file, the sections that became plain dicts and those Bridge instantiates
    # again from the merged dict (see layers.py).
    layer_list: list = field(default_factory=list)
    layers: dict = field(default_factory=dict)
    top: Optional[int] = None
    lower_data: Optional[dict] = None
    plain_dict_paths: set = field(default_factory=set)
    reinstantiated_paths: set = field(default_factory=set)
    # model: {_target_: GPTModelConfig, transformer: {...}}: the keys read under ``model`` that the file
    # holds under ``model.transformer`` (config.model_form); empty for the provider form
    wrapped_model_keys: frozenset = frozenset()
    # What the run leaves unknown (a Python run's expression the reader cannot evaluate, a catalog recipe
    # read from Bridge's source): path tuple -> reason; everything at or under the path is unknown.
    unknown: dict = field(default_factory=dict)
    # The unknown inputs a sample of the run set to stand-in values (frameworks/bridge/unknowns._sample).
    sampled: frozenset = frozenset()
    python_run: Any = None  # frameworks.bridge.python_reader.PythonRun, for a run written in Python
    # path -> where the value written at its line came from (a Python script's own command-line words)
    via: dict = field(default_factory=dict)

    @property
    def layered(self) -> bool:
        return bool(self.layer_list)

    def constructed(self, section: str) -> Optional[dict]:
        """``section`` of the file Bridge builds the ConfigContainer from with ``ConfigContainer.from_yaml``
        (each section's dataclass is instantiated from it, so its ``__post_init__`` sees these values): the
        checked file itself, or a ``--base`` dump. None for a ``--recipe`` run (Bridge builds the recipe in
        Python, and the files are merged onto it by ``setattr``) and for a section without ``_target_``."""
        if self.layered:
            data = self.layer_list[0].data
        else:
            data = self.data
        value = (data or {}).get(section)
        return value if isinstance(value, dict) and "_target_" in value else None

    def layer_of(self, path: tuple) -> Optional[Layer]:
        """The layer that wrote the value at ``path`` (or at its nearest ancestor that has one)."""
        p = tuple(path)
        while p:
            i = self.layers.get(p)
            if i is not None:
                return self.layer_list[i]
            p = p[:-1]
        return None

    def where(self, path: tuple) -> str:
        """Where the value at ``path`` was written, in words: ``the file`` / ``command-line override`` for a
        single file; ``recipe NAME``, ``FILE:LINE`` or ``the command line`` for a merged run."""
        if not self.layered:
            return "command-line override" if tuple(path) in self.override_paths else "the file"
        label = self.label(path)
        return "the command line" if label == "command line" else label

    def locate(self, path: tuple) -> tuple:
        """(file, line, column) of the value at ``path``: in a merged run, in the layer that wrote it
        (``recipe NAME`` / ``command line`` with no line); else in this file."""
        if self.layered:
            layer = self.layer_of(path)
            if layer is not None and layer is not self.layer_list[self.top]:
                return (layer.file or layer.label, *_position_in(layer.positions, path))
        return (self.file, *self.position(path))

    def label(self, path: tuple) -> str:
        """The layer of a merged run that wrote the value at ``path``, as a provenance label (Value.layer):
        ``recipe NAME``, ``FILE:LINE``, ``command line``."""
        layer = self.layer_of(path)
        if layer is None:
            return "the merged config"
        if layer.file is None:
            return layer.label  # the recipe, the command line: no line to point at
        line = _position_in(layer.positions, path)[0]
        where = f"{layer.file}:{line}" if line is not None else layer.file
        return f"{where} from {self.via[tuple(path)]}" if tuple(path) in self.via else where

    def origin(self, path: tuple) -> Optional[str]:
        """For a merged run, where a value not written in the top file came from (``recipe NAME``, another
        file's ``FILE:LINE``, ``command line``); None when the top file holds it or for a single file."""
        if not self.layered:
            return None
        layer = self.layer_of(path)
        if layer is None or layer is self.layer_list[self.top]:
            return None
        return self.label(path)

    def file_key(self, key: str) -> str:
        """A dotted key as the file spells it: ``model.X`` is ``model.transformer.X`` where the file is of
        the GPTModelConfig form and X is a TransformerConfig field (what a fix writes, what a diff names)."""
        if self.wrapped_model_keys and key.startswith("model."):
            from overlap_cli.config.model_form import WRAPPER_OWN

            head = key.split(".", 2)[1]
            if head in self.wrapped_model_keys or head not in WRAPPER_OWN:
                return "model.transformer." + key[len("model."):]
        return key

    # -- access helpers used by the resolver --------------------------------------------------
    def section(self, name: str) -> Optional[dict]:
        value = self.data.get(name)
        return value if isinstance(value, dict) else None

    def has(self, path: tuple) -> bool:
        return self.get(path, _ABSENT) is not _ABSENT

    def get(self, path: tuple, default: Any = None) -> Any:
        node: Any = self.data
        for part in path:
            if isinstance(node, dict) and part in node:
                node = node[part]
            else:
                return default
        return node

    def position(self, path: tuple) -> tuple[Optional[int], Optional[int]]:
        """Line/column of the key at ``path``, or of its nearest ancestor that is in the file. In a merged run
        only a value the top file wrote has a place in it (``origin`` names the others)."""
        if self.layered and self.origin(path) is not None:
            return (None, None)
        return _position_in(self.positions, path)


_ABSENT = object()


def _position_in(positions: dict, path: tuple) -> tuple:
    p = tuple(path)
    while p:
        if p in positions:
            return positions[p]
        p = p[:-1]
    return (None, None)
