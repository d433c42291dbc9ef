"""Load a training config: bytes -> YAML nodes -> plain values with the position of every key.

Values are interpreted the way Megatron-Bridge sees them. Bridge reads YAML with ``OmegaConf.load``
(``megatron/bridge/training/utils/omegaconf_utils.py``), i.e. PyYAML's safe loader (YAML 1.1: ``yes``
and ``on`` are booleans) plus OmegaConf's extra float resolver (``3e-4`` is a float), duplicate keys
rejected, and ``${...}`` interpolations resolved. We compose the same node graph with libyaml when it
is available, so every key keeps its line and column, and build plain Python values from it. Nothing is
ever constructed from a tag: the safe constructor knows only the standard YAML types, and ``_target_``
is an ordinary string here.

The round-trip parser (ruamel.yaml) is used where the text must be written back: ``fixer`` and
``annotate``. Both parsers report the same line/column for a key; checking needs only one parse.
"""

from __future__ import annotations

import gc
import re
from dataclasses import dataclass, field
from typing import Any, Optional

from .model import InputError, InputProblem
from .safe_read import MAX_FILE_BYTES, read_text  # noqa: F401  (read_text: part of this module's API)

# A full Bridge dump has ~1,900 values. Past this many (composed, or expanded from aliases) a document
# is refused: it bounds both time and memory (~0.3 s and ~70 MB at the limit).
MAX_EXPANDED_NODES = 100_000
MAX_DEPTH = 200
# OmegaConf parses each ${...} with its ANTLR grammar (~0.4 ms apiece on the benchmark machine).
MAX_INTERPOLATIONS = 1000

Path_ = tuple  # a key path: tuple of str (mapping keys) and int (sequence indices)


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


def dotted(path: tuple) -> str:
    return ".".join(str(p) for p in path)


# ----------------------------------------------------------------------------------------------
# YAML -> nodes -> values
# ----------------------------------------------------------------------------------------------

_LOADER_CLASS = None

# OmegaConf's float resolver (omegaconf/_yaml.py): YAML 1.1 floats plus "1e3"-style exponents.
_FLOAT_RE = re.compile(
    r"""^(?:
     [-+]?[0-9]+(?:_[0-9]+)*\.[0-9_]*(?:[eE][-+]?[0-9]+)?
    |[-+]?[0-9]+(?:_[0-9]+)*(?:[eE][-+]?[0-9]+)
    |\.[0-9]+(?:_[0-9]+)*(?:[eE][-+][0-9]+)?
    |[-+]?[0-9]+(?:_[0-9]+)*(?::[0-5]?[0-9])+\.[0-9_]*
    |[-+]?\.(?:inf|Inf|INF)
    |\.(?:nan|NaN|NAN))$""",
    re.X,
)

_YAML = "tag:yaml.org,2002:"
_STR, _NULL, _BOOL, _INT, _FLOAT = (_YAML + t for t in ("str", "null", "bool", "int", "float"))
# Tags with a plain-data meaning. Anything else (``!!python/...``, ``!custom``) is refused, never built.
_SCALAR_TAGS = frozenset(_YAML + t for t in ("str", "null", "bool", "int", "float", "timestamp", "binary"))
_MAPPING_TAGS = frozenset((_YAML + "map", _YAML + "set", _YAML + "omap"))
_SEQUENCE_TAGS = frozenset((_YAML + "seq",))
# Tag resolution of a plain scalar depends only on its text; the cache skips PyYAML's regex loop for
# the values every config repeats (true, null, 1, 8, ...). Short values only, and a bounded table.
_RESOLVE_CACHE: dict = {}
_RESOLVE_CACHE_MAX = 4096


def _loader_class():
    global _LOADER_CLASS
    if _LOADER_CLASS is None:
        import yaml

        base = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
        scalar_node = yaml.ScalarNode

        class BridgeLoader(base):  # type: ignore[misc, valid-type]
            # No path resolvers are registered, so this per-node hook (called by the composer for every
            # node, before it is built) serves to count: a huge document is stopped while composing,
            # before its node graph fills memory. Aliases are not composed again; _Builder counts those.
            composed = 0

            def descend_resolver(self, current_node, current_index):
                self.composed += 1
                if self.composed > MAX_EXPANDED_NODES:
                    raise _TooManyNodes()

            def ascend_resolver(self):
                pass

            def resolve(self, kind, value, implicit):
                if kind is not scalar_node or len(value) > 32:
                    return base.resolve(self, kind, value, implicit)
                key = (value, implicit)
                tag = _RESOLVE_CACHE.get(key)
                if tag is None:
                    tag = base.resolve(self, kind, value, implicit)
                    if len(_RESOLVE_CACHE) >= _RESOLVE_CACHE_MAX:
                        _RESOLVE_CACHE.clear()
                    _RESOLVE_CACHE[key] = tag
                return tag

        # A private copy of the resolver table, so the float rule is not added to PyYAML's global one.
        BridgeLoader.yaml_implicit_resolvers = {
            k: list(v) for k, v in base.yaml_implicit_resolvers.items()
        }
        BridgeLoader.add_implicit_resolver("tag:yaml.org,2002:float", _FLOAT_RE, list("-+0123456789."))
        _LOADER_CLASS = BridgeLoader
    return _LOADER_CLASS


class _TooManyNodes(Exception):
    pass


def _mark(node) -> tuple[int, int]:
    mark = node.start_mark
    return (mark.line + 1, mark.column + 1)


def _yaml_error(file: str, exc: Exception) -> InputError:
    mark = getattr(exc, "problem_mark", None) or getattr(exc, "context_mark", None)
    problem = getattr(exc, "problem", None) or str(exc).splitlines()[0]
    context = getattr(exc, "context", None)
    msg = f"invalid YAML: {problem}" + (f" ({context})" if context else "")
    if mark is not None:
        return InputError(InputProblem(file, msg, line=mark.line + 1, column=mark.column + 1))
    return InputError(InputProblem(file, msg))


# Runs of block-sequence or complex-key indicators on one line ("- - - - x") nest without indentation.
_COMPACT_NESTING = re.compile(r"(?:[-?][ \t]+){%d,}" % (MAX_DEPTH + 1))
_FLOW_BRACKETS = re.compile(r"[\[\]{}]")


def check_nesting(text: str, file: str) -> None:
    """Refuse text nested deeper than MAX_DEPTH before any parser sees it.

    PyYAML's composer (and OmegaConf after it) recurses once per level. libyaml >= 0.2.5 stops at
    1,000 levels, the pure-Python composer at the interpreter's recursion limit, an older libyaml not
    at all (its C recursion can overflow the stack: a crash, not an error). So depth is bounded here,
    the same way whichever parser is installed. Flow brackets inside quoted strings are counted too;
    a real config never holds 200 of them in a row. Deep block nesting needs quadratic indentation,
    which the size limit bounds, except the compact one-line forms matched above.
    """
    if text.count("[") + text.count("{") > MAX_DEPTH:
        depth = 0
        for m in _FLOW_BRACKETS.finditer(text):
            if m.group() in "[{":
                depth += 1
                if depth > MAX_DEPTH:
                    line = text.count("\n", 0, m.start()) + 1
                    raise InputError(InputProblem(file, f"flow nesting deeper than {MAX_DEPTH} levels; refusing to parse it", line=line))
            elif depth:
                depth -= 1
    if ("- " in text or "? " in text or "-\t" in text) and (m := _COMPACT_NESTING.search(text)):
        line = text.count("\n", 0, m.start()) + 1
        raise InputError(InputProblem(file, f"block nesting deeper than {MAX_DEPTH} levels; refusing to parse it", line=line))


def parse_yaml(text: str, file: str) -> tuple[Any, dict]:
    """Parse YAML text into plain values and a map of key positions."""
    value, positions, _ = _parse(text, file)
    return value, positions


def _parse(text: str, file: str) -> tuple[Any, dict, int]:
    """(value, positions, how many strings hold ``${``)."""
    import yaml

    check_nesting(text, file)
    loader = _loader_class()(text)
    # The node graph holds no reference cycles, and the cyclic collector would rescan it again and again
    # while it grows (composing takes three times as long with it on). It is switched back on after.
    collecting = gc.isenabled()
    gc.disable()
    try:
        try:
            root = loader.get_single_node()
        except yaml.YAMLError as exc:
            raise _yaml_error(file, exc) from None
        except _TooManyNodes:
            raise InputError(
                InputProblem(file, f"document has more than {MAX_EXPANDED_NODES} values; a training config has a few thousand")
            ) from None
        except RecursionError:
            raise InputError(InputProblem(file, f"YAML nesting is too deep (limit {MAX_DEPTH} levels)")) from None
        if root is None:
            return None, {}, 0
        positions: dict = {}
        builder = _Builder(loader, file, positions)
        value = builder.build(root, ())
        return value, positions, builder.interpolations
    finally:
        loader.dispose()
        if collecting:
            gc.enable()


class _Builder:
    """Plain values from the node graph, recording where every key is.

    Scalars of the common tags are built directly from the node text (what SafeConstructor would
    return, without its per-node bookkeeping); other standard tags go through the safe constructor.
    Aliases are expanded as copies and counted, so an alias bomb stops at MAX_EXPANDED_NODES.
    """

    def __init__(self, loader, file: str, positions: dict):
        import yaml

        self.loader = loader
        self.file = file
        self.positions = positions
        self.count = 0
        self.active: set = set()
        self.interpolations = 0  # strings holding "${", alias copies included
        self.scalar_node, self.sequence_node, self.mapping_node = yaml.ScalarNode, yaml.SequenceNode, yaml.MappingNode
        self.yaml_error = yaml.YAMLError

    def fail(self, msg: str, node=None, path: tuple = ()) -> InputError:
        line, col = _mark(node) if node is not None else (None, None)
        return InputError(InputProblem(self.file, msg, key=dotted(path) or None, line=line, column=col))

    def scalar(self, node, path: tuple) -> Any:
        tag = node.tag
        if tag == _STR:
            value = node.value
            if "${" in value:
                self.interpolations += 1
            return value
        if tag == _NULL:
            return None
        if tag == _BOOL:
            value = self.loader.bool_values.get(node.value.lower())
            if value is None:
                raise self.fail(f"invalid boolean {node.value!r}", node, path)
            return value
        if tag not in _SCALAR_TAGS:
            raise self.fail(_tag_message(node), node, path)
        try:
            if tag == _INT:
                return self.loader.construct_yaml_int(node)
            if tag == _FLOAT:
                return self.loader.construct_yaml_float(node)
            return self.loader.construct_object(node, deep=True)
        except Exception as exc:  # a malformed !!int/!!timestamp/!!binary raises anything from ValueError to AttributeError
            problem = getattr(exc, "problem", None) or exc
            raise self.fail(f"invalid {tag[len(_YAML):]} value {_short(node.value)}: {problem}", node, path) from None

    def build(self, node, path: tuple) -> Any:
        self.count += 1
        if self.count > MAX_EXPANDED_NODES:
            raise self.fail(
                f"document expands to more than {MAX_EXPANDED_NODES} values (an alias bomb?); refusing it",
                node,
                path,
            )
        if len(path) > MAX_DEPTH:
            raise self.fail(f"nesting deeper than {MAX_DEPTH} levels", node, path)
        cls = node.__class__
        if cls is self.scalar_node:
            return self.scalar(node, path)
        if id(node) in self.active:
            raise self.fail("recursive YAML alias", node, path)
        self.active.add(id(node))
        try:
            if cls is self.sequence_node:
                if node.tag not in _SEQUENCE_TAGS:
                    raise self.fail(_tag_message(node), node, path)
                out = []
                for i, child in enumerate(node.value):
                    child_path = path + (i,)
                    self.positions[child_path] = _mark(child)
                    out.append(self.build(child, child_path))
                return out
            if cls is self.mapping_node:
                return self.mapping(node, path)
            raise self.fail("unsupported YAML node", node, path)
        finally:
            self.active.discard(id(node))

    def mapping(self, node, path: tuple) -> dict:
        if node.tag not in _MAPPING_TAGS:
            raise self.fail(_tag_message(node), node, path)
        is_set = node.tag == _YAML + "set"
        try:
            self.loader.flatten_mapping(node)
        except self.yaml_error as exc:
            raise self.fail(f"invalid merge key: {getattr(exc, 'problem', exc)}", node, path) from None
        out: dict = {}
        for key_node, value_node in node.value:
            if key_node.__class__ is not self.scalar_node:
                raise self.fail("mapping keys must be plain scalars", key_node, path)
            key = self.build(key_node, path)
            try:
                hash(key)
            except TypeError:
                raise self.fail("unhashable mapping key", key_node, path) from None
            if key in out:
                raise self.fail(f"duplicate key {key!r}", key_node, path + (key,))
            key_path = path + (key,)
            self.positions[key_path] = _mark(key_node)
            # ``!!set {a, b}`` (PEFT configs) holds keys only; keep it as a mapping to None.
            out[key] = None if is_set else self.build(value_node, key_path)
        return out


def _short(text: str, limit: int = 40) -> str:
    return repr(text if len(text) <= limit else text[:limit] + "...")


def _tag_message(node) -> str:
    tag = node.tag or ""
    shown = "!!" + tag[len(_YAML):] if tag.startswith(_YAML) else tag
    if tag.startswith(_YAML + "python/") or not tag.startswith(_YAML):
        return f"tag {shown!r} is not allowed (YAML tags that construct objects are never honoured)"
    return f"tag {shown!r} is not allowed here"


def _has_interpolation(value: Any) -> bool:
    if isinstance(value, str):
        return "${" in value
    if isinstance(value, dict):
        return any(_has_interpolation(v) for v in value.values())
    if isinstance(value, list):
        return any(_has_interpolation(v) for v in value)
    return False


# ----------------------------------------------------------------------------------------------
# Hydra-style dotlist overrides (what Bridge's scripts accept on the command line)
# ----------------------------------------------------------------------------------------------

_FLOW_COLON = re.compile(r":(?=[^\s/])")


def parse_override_value(text: str) -> Any:
    """Values parse as YAML scalars or flow collections, Hydra style (``{A:1}`` is a mapping)."""
    import yaml

    src = text
    if src.startswith(("{", "[")):
        src = _FLOW_COLON.sub(": ", src)
    if src == "":
        return ""
    loader = _loader_class()(src)
    try:
        node = loader.get_single_node()
        if node is None:
            return None
        return _Builder(loader, "<override>", {}).build(node, ())
    except (yaml.YAMLError, InputError):
        return text
    finally:
        loader.dispose()


@dataclass
class Override:
    raw: str
    op: str  # "set" | "add" | "force" | "delete"
    path: tuple
    value: Any = None
    has_value: bool = True


def is_override(arg: str) -> bool:
    if arg.startswith("~"):
        return True
    head = arg.split("=", 1)[0]
    return "=" in arg and bool(re.fullmatch(r"\+{0,2}[A-Za-z_][\w\-]*(\.[\w\-]+)*", head))


def parse_override(arg: str) -> Override:
    def bad(msg: str) -> InputError:
        return InputError(InputProblem("<command line>", f"override {arg!r}: {msg}"))

    if arg.startswith("~"):
        body = arg[1:]
        key, eq, val = body.partition("=")
        path = tuple(key.split("."))
        if not key or any(not p for p in path) or len(path) > MAX_DEPTH:
            raise bad("expected ~key or ~key=value")
        return Override(arg, "delete", path, parse_override_value(val) if eq else None, has_value=bool(eq))
    op = "set"
    body = arg
    if body.startswith("++"):
        op, body = "force", body[2:]
    elif body.startswith("+"):
        op, body = "add", body[1:]
    key, eq, val = body.partition("=")
    if not eq:
        raise bad("expected key=value, +key=value, ++key=value or ~key")
    path = tuple(key.split("."))
    if not key or any(not p for p in path):
        raise bad("empty key")
    if len(path) > MAX_DEPTH:
        raise bad(f"key nests deeper than {MAX_DEPTH} levels")
    return Override(arg, op, path, parse_override_value(val))


def apply_overrides(cfg: Config, overrides: list[Override]) -> None:
    for ov in overrides:
        def bad(msg: str) -> InputError:
            return InputError(InputProblem(cfg.file, f"override {ov.raw!r}: {msg}"))

        parent: Any = cfg.data
        for i, part in enumerate(ov.path[:-1]):
            if not isinstance(parent, dict):
                raise bad(f"{dotted(ov.path[:i])} is not a mapping")
            if part not in parent or parent[part] is None:
                if ov.op in ("add", "force"):
                    parent[part] = {}
                else:
                    raise bad(f"key {dotted(ov.path[: i + 1])} is not in the config (use +{dotted(ov.path)}=... to add it)")
            parent = parent[part]
        if not isinstance(parent, dict):
            raise bad(f"{dotted(ov.path[:-1])} is not a mapping")
        leaf = ov.path[-1]
        exists = leaf in parent
        if ov.op == "set" and not exists:
            raise bad(f"key {dotted(ov.path)} is not in the config (use +{dotted(ov.path)}=... to add it)")
        if ov.op == "add" and exists:
            raise bad(f"key {dotted(ov.path)} already exists (use ++{dotted(ov.path)}=... to force it)")
        if ov.op == "delete":
            if not exists:
                raise bad(f"key {dotted(ov.path)} is not in the config")
            if ov.has_value and parent[leaf] != ov.value:
                raise bad(f"value of {dotted(ov.path)} is {parent[leaf]!r}, not {ov.value!r}")
            del parent[leaf]
            for p in list(cfg.positions):
                if p[: len(ov.path)] == ov.path:
                    del cfg.positions[p]
            cfg.override_paths.add(ov.path)
            continue
        parent[leaf] = ov.value
        cfg.override_paths.add(ov.path)


# ----------------------------------------------------------------------------------------------
# Entry point
# ----------------------------------------------------------------------------------------------


def load_config(path: str, overrides: Optional[list[Override]] = None, text: Optional[str] = None) -> Config:
    if text is None:
        text = read_text(path)
    data, positions, interpolations = _parse(text, path)
    if data is None:
        raise InputError(InputProblem(path, "empty document, expected a mapping of config sections"))
    if not isinstance(data, dict):
        raise InputError(
            InputProblem(path, f"top level is a {type(data).__name__}, expected a mapping of config sections", line=1, column=1)
        )
    cfg = Config(file=path, data=data, positions=positions, text=text)
    if overrides:
        apply_overrides(cfg, overrides)
        interpolations += sum(1 for ov in overrides if _has_interpolation(ov.value))
    if interpolations > MAX_INTERPOLATIONS:
        raise InputError(InputProblem(path, f"more than {MAX_INTERPOLATIONS} ${{...}} interpolations; refusing to resolve them"))
    if interpolations:  # most configs have none: no second walk over the data, no omegaconf import
        from .interpolation import resolve_interpolations

        resolve_interpolations(cfg)
    return cfg
