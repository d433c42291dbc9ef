"""YAML text -> nodes -> plain values, with the line and column of every key.

Values are interpreted the way Megatron-Bridge sees them. Bridge reads YAML with ``OmegaConf.load``
(``megatron/bridge/training/utils/omegaconf_utils.py``), i.e. PyYAML's safe loader (YAML 1.1: ``yes``
and ``on`` are booleans) plus OmegaConf's extra float resolver (``3e-4`` is a float), duplicate keys
rejected. We compose the same node graph with libyaml when it is available, so every key keeps its line
and column, and build plain Python values from it. Nothing is ever constructed from a tag: standard YAML
types only (the pathlib tags OmegaConf itself writes are kept as the path's text, and, as in OmegaConf,
``2024-01-01`` stays a string), and ``_target_`` is an ordinary string here.

The same loader class and builder read a file (``loader``), a dotlist override's value (``overrides``)
and the comment tokens of a file (``check.suppression``).
"""

from __future__ import annotations

import gc
import re

TYPE_CHECKING = False  # the typing module costs ~2.5 ms of start-up; annotations here are strings (PEP 563)
if TYPE_CHECKING:
    from typing import Any, Optional

from overlap_cli import lazyre
from overlap_cli.problems import InputError, InputProblem

# A full Bridge dump has ~1,900 values. Past this many (composed, or expanded from aliases) a document
# is refused: it bounds both time and memory (~0.3 s and ~70 MB at the limit).
MAX_EXPANDED_NODES = 100_000
MAX_DEPTH = 200


def dotted(path: tuple) -> str:
    return ".".join(str(p) for p in path)


_LOADER_CLASS = None

# PyYAML's pure-Python reader (yaml/reader.py:137, PyYAML 6.0.x) compiles this class of printable
# characters when ``yaml`` is imported: about a third of the import's time (``-X importtime``, best of 12:
# 21.0 ms with it, 13.4 ms without, on a busy 2-core machine), as the set spans most of Unicode. libyaml's
# parser, which reads every file here when it is installed, never uses it.
_PYYAML_NON_PRINTABLE = "[^\x09\x0A\x0D\x20-\x7E\x85\xA0-\uD7FF\uE000-\uFFFD\U00010000-\U0010ffff]"


def pyyaml():
    """The ``yaml`` module, imported without compiling the pure-Python reader's character class up front
    (it is compiled on its first use, if PyYAML's pure-Python reader ever runs). Every reader of the check
    path imports PyYAML through here; an import anywhere else is the ordinary one, only slower."""
    import sys

    module = sys.modules.get("yaml")
    if module is not None:
        return module
    compile_now = re.compile

    def compile_deferring_one(pattern, flags=0):
        if pattern == _PYYAML_NON_PRINTABLE and not flags:
            return lazyre.Pattern(pattern, flags)
        return compile_now(pattern, flags)

    re.compile = compile_deferring_one
    try:
        import yaml
    finally:
        re.compile = compile_now
    return yaml

# OmegaConf's float resolver (omegaconf/_yaml.py): YAML 1.1 floats plus "1e3"-style exponents.
_FLOAT_RE = lazyre.compile(
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
_MERGE = _YAML + "merge"
_PLAIN_TAGS = frozenset((_STR, _NULL))  # scalars Builder.mapping builds inline
# The one kind of object tag OmegaConf's loader accepts (it writes them itself for pathlib values): kept
# here as the path's text, never constructed.
_PATH_TAGS = {
    _YAML + f"python/object/apply:pathlib.{mod}{cls}": "\\" if cls == "WindowsPath" else "/"
    for mod in ("", "_local.")
    for cls in ("Path", "PosixPath", "WindowsPath")
}
# Tag resolution of a plain scalar depends only on its text; the cache skips PyYAML's regex loop for
# the values every config repeats (true, null, 1, 8, ...). Short values only, and a bounded table.
_RESOLVE_CACHE: dict = {}
_RESOLVE_CACHE_MAX = 4096


def loader_class():
    global _LOADER_CLASS
    if _LOADER_CLASS is None:
        yaml = pyyaml()

        base = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
        scalar_node = yaml.ScalarNode

        class BridgeLoader(base):  # type: ignore[misc, valid-type]
            # No path resolvers are registered, so this per-node hook (called by the composer for every
            # node, before it is built) serves to count: a huge document is stopped while composing,
            # before its node graph fills memory. Aliases are not composed again; Builder counts those.
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
        # OmegaConf's loader also drops the timestamp resolver (omegaconf/_yaml.py): ``2024-01-01`` is a string.
        BridgeLoader.yaml_implicit_resolvers = {
            k: [(tag, rx) for tag, rx in v if tag != _YAML + "timestamp"] for k, v in base.yaml_implicit_resolvers.items()
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


yaml_error = _yaml_error  # the one-line InputError of a PyYAML error, for readers composing nodes themselves


# Runs of block-sequence or complex-key indicators at the start of a line ("- - - - x", also after a
# "---" document marker) nest without indentation. Anchored on a literal newline, which re finds fast.
_COMPACT_NESTING = lazyre.compile(r"\n(?:---)?[ \t]*(?:[-?][ \t]+){%d,}" % (MAX_DEPTH + 1))
_FLOW_BRACKETS = lazyre.compile(r"[\[\]{}]")


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
    if ("- " in text or "? " in text or "-\t" in text) and (m := _COMPACT_NESTING.search("\n" + text)):
        line = text.count("\n", 0, m.start()) + 1
        raise InputError(InputProblem(file, f"block nesting deeper than {MAX_DEPTH} levels; refusing to parse it", line=line))


def parse_yaml(text: str, file: str) -> tuple[Any, dict]:
    """Parse YAML text into plain values and a map of key positions."""
    value, positions, _ = parse_nodes(text, file)
    return value, positions


# Texts parsed while a ``remembered_parses()`` block runs: text -> (value, positions, interpolations).
_REMEMBERED: Optional[dict] = None


class remembered_parses:
    """Within this block a text parsed once is handed out again as a fresh copy instead of parsed again.

    ``overlap fix`` reads the same text several times per file (the check of each round, the round's edit
    base, the proof of the edited text): copying the values costs a few percent of parsing a Bridge dump.
    Only texts that parse are kept, and only until the outermost block ends."""

    def __enter__(self):
        global _REMEMBERED
        self.outer = _REMEMBERED
        if _REMEMBERED is None:
            _REMEMBERED = {}
        return self

    def __exit__(self, *exc_info):
        global _REMEMBERED
        _REMEMBERED = self.outer


def parse_nodes(text: str, file: str) -> tuple[Any, dict, int]:
    """(value, positions, how many strings hold ``${``)."""
    remembered = _REMEMBERED
    if remembered is None:
        return _parse_nodes(text, file)
    if text in remembered:
        value, positions, interpolations = remembered[text]
        return copy_values(value), dict(positions), interpolations
    value, positions, interpolations = _parse_nodes(text, file)
    remembered[text] = (copy_values(value), dict(positions), interpolations)
    return value, positions, interpolations


def copy_values(value):
    """A copy of built values: mappings and lists are new, scalars shared (they are immutable). Nothing in
    the values is shared between two places (aliases are built as copies), so this is ``copy.deepcopy``'s
    result, without its per-object bookkeeping."""
    kind = type(value)
    if kind is dict:  # a call only for a nested mapping or list (most values are scalars)
        return {k: copy_values(v) if type(v) in _NESTED else v for k, v in value.items()}
    if kind is list:
        return [copy_values(v) if type(v) in _NESTED else v for v in value]
    return value


_NESTED = frozenset((dict, list))


def _parse_nodes(text: str, file: str) -> tuple[Any, dict, int]:
    yaml = pyyaml()

    check_nesting(text, file)
    loader = loader_class()(text)
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
        builder = Builder(loader, file, positions)
        # Merge keys are rare; without "<<" (or an explicit merge tag) in the text, skip looking for them. A
        # tag that resolves to tag:yaml.org,2002:merge is written !!merge, !<...:merge>, or through a %TAG
        # directive or a %-escape; a key such as ``merge_file`` is none of these.
        builder.merges = "<<" in text or "!merge" in text or ":merge" in text or "%" in text
        value = builder.build(root, ())
        return value, positions, builder.interpolations
    finally:
        loader.dispose()
        if collecting:
            gc.enable()


class Builder:
    """Plain values from the node graph, recording where every key is.

    Scalars of the common tags are built directly from the node text (what SafeConstructor would
    return, without its per-node bookkeeping); other standard tags go through the safe constructor.
    Aliases are expanded as copies and counted, so an alias bomb stops at MAX_EXPANDED_NODES.
    """

    def __init__(self, loader, file: str, positions: dict):
        yaml = pyyaml()

        self.loader = loader
        self.file = file
        self.positions = positions
        self.count = 0
        self.active: set = set()
        self.interpolations = 0  # strings holding "${", alias copies included
        self.merges = True
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
            self.loader.construct_object(node, deep=True)  # validates; raises on a malformed value
            # Explicit !!timestamp / !!binary stay as their text: every value handed on is plain JSON data.
            return node.value
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
                if node.tag in _PATH_TAGS:
                    return self.path_value(node, path)
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

    def path_value(self, node, path: tuple) -> str:
        parts = [self.build(child, path) for child in node.value]
        if not all(isinstance(p, str) for p in parts):
            raise self.fail(f"{node.tag[len(_YAML):]} takes path parts (strings)", node, path)
        sep = _PATH_TAGS[node.tag]
        out = ""
        for p in parts:  # pathlib's joining: an absolute part starts over
            out = p if (p.startswith(sep) or not out) else out.rstrip(sep) + sep + p
        return out

    def mapping(self, node, path: tuple) -> dict:
        if node.tag not in _MAPPING_TAGS:
            raise self.fail(_tag_message(node), node, path)
        is_set = node.tag == _YAML + "set"
        merged = getattr(node, "merged_pairs", None) if self.merges else 0  # set on the first visit; an alias visits again
        if merged is None:
            explicit = sum(1 for k, _ in node.value if k.tag != _MERGE)
            try:
                self.loader.flatten_mapping(node)
            except self.yaml_error as exc:
                raise self.fail(f"invalid merge key: {getattr(exc, 'problem', exc)}", node, path) from None
            merged = node.merged_pairs = len(node.value) - explicit
        # OmegaConf's loader (omegaconf/_yaml.py, flatten_mapping): a key written in the mapping wins over
        # the same key brought in by ``<<:``, merged keys override each other, and only two keys written
        # in the mapping itself are a duplicate-key error.
        explicit_keys = {k.value for k, _ in node.value[merged:] if k.tag == _STR} if merged else ()
        written: set = set()
        out: dict = {}
        positions, scalar_node = self.positions, self.scalar_node
        deep = len(path) + 1 > MAX_DEPTH  # a value at this depth is refused (build's check)
        for index, (key_node, value_node) in enumerate(node.value):
            if key_node.__class__ is not scalar_node:
                raise self.fail("mapping keys must be plain scalars", key_node, path)
            from_merge = index < merged
            if key_node.tag == _STR:  # what build(key_node) does for a string key, without its calls
                key = key_node.value
                if from_merge and key in explicit_keys:
                    continue
                self.count += 1
                if self.count > MAX_EXPANDED_NODES:
                    self.build(key_node, path)  # raises the same error
                if "${" in key:
                    self.interpolations += 1
            else:
                key = self.build(key_node, path)
                try:
                    hash(key)
                except TypeError:
                    raise self.fail("unhashable mapping key", key_node, path) from None
            if key in written:
                raise self.fail(f"duplicate key {key!r}", key_node, path + (key,))
            if not from_merge:
                written.add(key)
            key_path = path + (key,)
            mark = key_node.start_mark
            positions[key_path] = (mark.line + 1, mark.column + 1)
            # ``!!set {a, b}`` (PEFT configs) holds keys only; keep it as a mapping to None.
            if is_set:
                out[key] = None
            elif value_node.__class__ is scalar_node and not deep and value_node.tag in _PLAIN_TAGS:
                self.count += 1  # build(value_node)'s count and its str / null scalar, inline
                if self.count > MAX_EXPANDED_NODES:
                    self.build(value_node, key_path)  # raises the same error
                if value_node.tag == _NULL:
                    out[key] = None
                else:
                    value = out[key] = value_node.value
                    if "${" in value:
                        self.interpolations += 1
            else:
                out[key] = self.build(value_node, key_path)
        return out


def _short(text: str, limit: int = 40) -> str:
    return repr(text if len(text) <= limit else text[:limit] + "...")


def _tag_message(node) -> str:
    tag = node.tag or ""
    shown = "!!" + tag[len(_YAML):] if tag.startswith(_YAML) else tag
    if tag.startswith(_YAML + "python/") or not tag.startswith(_YAML):
        return f"tag {shown!r} is not allowed (YAML tags that construct objects are never honoured)"
    return f"tag {shown!r} is not allowed here"


def has_interpolation(value: Any) -> bool:
    if isinstance(value, str):
        return "${" in value
    if isinstance(value, dict):
        return any(has_interpolation(v) for v in value.values())
    if isinstance(value, list):
        return any(has_interpolation(v) for v in value)
    return False
