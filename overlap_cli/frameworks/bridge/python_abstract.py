"""The values of the Python reader's abstract interpreter (python_interp), with no knowledge of Bridge.

- ``Unknown``: a value the reader cannot know, with the reason naming ``FILE:LINE``; it has no truth value,
  so a condition on it cannot be taken by mistake.
- ``Import`` (a name imported from a module), ``Func`` (a function whose source the reader holds),
  ``CfgRef`` (the config, or a section of it, held by a Python name), ``ConfigObject`` (a config object a
  run builds field by field before it goes into a config).
- ``ConfigState``: the config a run builds (its data, the keys it cannot know, where each key was written),
  ``Site`` (where a write happens), ``Start`` (what a run's config starts from).
- The signals that end a statement block: ``Returned`` (a ``return``), ``RunEnds`` (a ``raise``, or the
  config handed to a launch), ``Refusal`` (Python or Bridge raises when the run is built), ``BadPython``.
- ``Invocation``: how the script is run (its words after the script, its environment); ``PyObject`` (an
  object of Python's library the reader models), ``ClassValue`` / ``Instance`` (the module's classes and
  their objects), ``LoopSignal`` (``break`` / ``continue``).
- Small helpers over these values (``storable``, ``same``, ``fork_value``, ``short``...).
"""

from __future__ import annotations

import ast
import copy

TYPE_CHECKING = False  # the typing module costs ~2.5 ms of start-up; annotations here are strings (PEP 563)
if TYPE_CHECKING:
    from typing import Optional

from overlap_cli.records import dataclass, field  # not dataclasses: start-up time (records.py)

MISSING = object()  # a key the config does not hold (unlike None, which it may hold)
NOT_KNOWN = object()  # a call the library side (python_interp.Library) does not know: the interpreter decides


@dataclass
class Invocation:
    """How the script is run: ``argv`` its words after the script (None: checked by itself, run without
    any; an item None: a word not known statically), ``environ`` the variables the caller is known to set,
    ``complete``: every other variable is unset (--env-from-shell: the shell's whole environment)."""

    argv: Optional[list] = None
    environ: dict = field(default_factory=dict)
    complete: bool = False


def invocation_of(interp) -> Invocation:
    """How the script the interpreter reads is run (the library seam's ``invocation``; none: by itself)."""
    return getattr(interp.reader.ctx, "invocation", None) or Invocation()


class Unknown:
    """A value the reader cannot know, with the reason (naming ``FILE:LINE``)."""

    __slots__ = ("reason",)

    def __init__(self, reason: str):
        self.reason = reason

    def __repr__(self) -> str:
        return f"Unknown({self.reason!r})"

    def __bool__(self):
        raise TypeError("Unknown has no truth value")


class Refusal(Exception):
    """Bridge (or Python) raises on this line when the run is built: the reader says so and stops."""

    file: Optional[str] = None  # the module of the user's the line is in, when not the file read (python_objects)

    def __init__(self, message: str, line: int, column: int = 1):
        super().__init__(message)
        self.message, self.line, self.column = message, line, column


class BadPython(Exception):
    file: Optional[str] = None  # as Refusal.file

    def __init__(self, message: str, line: Optional[int] = None, column: Optional[int] = None):
        super().__init__(message)
        self.message, self.line, self.column = message, line, column


class Returned(Exception):
    """A ``return`` statement: the value it returns, carried out of the blocks it ends."""

    def __init__(self, value):
        self.value = value


class RunEnds(Exception):
    def __init__(self, raised: Optional[str] = None):
        super().__init__(raised)
        self.raised = raised  # "NotImplementedError(...) at FILE:LINE" when a ``raise`` ends the run


@dataclass
class Start:
    kind: str  # "recipe" | "yaml" | "container" | "helper" | "unknown"
    name: Optional[str] = None  # the recipe (catalog name), the YAML path, the helper
    line: Optional[int] = None
    column: Optional[int] = None
    end_line: Optional[int] = None  # last line of the start statement (a fix adds a line after it)
    indent: str = ""
    reason: str = ""
    kwargs: dict = field(default_factory=dict)
    var: Optional[str] = None  # the name the run binds its config to (a fix adds ``var.key = value``)
    file: Optional[str] = None  # the file of that statement (a module of the user's own may build the config)


@dataclass
class Site:
    """Where an assignment writes a key: its line and column, and the value's span when the value is a
    literal a fix can replace in place (``value_span`` = (line, col, end_line, end_col), 1-based line,
    0-based columns as ``ast`` gives them)."""

    line: int
    column: int
    value_span: Optional[tuple] = None
    file: Optional[str] = None
    via: Optional[str] = None  # the script's own command-line words the value came from (``--tp 4``)


def words_behind(interp, value_node) -> Optional[str]:
    """The command-line words that set the value of ``args.NAME`` (``value_node``), when ``args`` is the
    Namespace argparse read from the script's words (python_argparse.Namespace.given); else None."""
    if not (isinstance(value_node, ast.Attribute) and isinstance(value_node.value, ast.Name)):
        return None
    ns = interp.env.get(value_node.value.id)
    given = getattr(ns, "given", None)
    return given.get(value_node.attr) if given else None


class Import:
    """A name imported from a module: ``module`` its module, ``name`` its name there."""

    __slots__ = ("module", "name")

    def __init__(self, module: str, name: str):
        self.module, self.name = module, name


class OwnModule:
    """A module of the user's own, beside the script (``import configs``): ``reader`` its
    python_interp.ModuleReader, ``name`` the dotted name it was imported by, ``importer`` the module that
    imported it; its attributes are that module's names (or its submodules)."""

    __slots__ = ("reader", "name", "importer")

    def __init__(self, reader, name: str, importer):
        self.reader, self.name, self.importer = reader, name, importer

    def attribute(self, attr: str):
        """The module's ``attr``: its top-level name, a submodule of the user's, else MISSING."""
        if attr in self.reader.names:
            return self.reader.names[attr]
        sub = self.importer.ctx.own_module(self.importer, f"{self.name}.{attr}")
        return OwnModule(sub, f"{self.name}.{attr}", self.importer) if sub is not None else MISSING


class Func:
    """A function defined in the module being read (or in a Bridge module read from its source): a ``def``
    or a ``lambda``; ``closure`` the names of the function it was defined in (None at module level)."""

    __slots__ = ("node", "reader", "closure")

    def __init__(self, node, reader, closure: Optional[dict] = None):
        self.node, self.reader, self.closure = node, reader, closure


class PyObject:
    """An object of Python's standard library the reader models (python_stdlib: an argparse parser,
    ``os.environ``, a ``pathlib.Path``...). Each hook answers NOT_KNOWN when the object does not model it."""

    def attribute(self, interp, name: str, node):
        return NOT_KNOWN

    def method(self, interp, name: str, args: list, kwargs: dict, node):
        return NOT_KNOWN

    def item(self, interp, key, node):
        return NOT_KNOWN

    def set_item(self, interp, key, value, node) -> bool:
        return False

    def contains(self, interp, key, node):
        return NOT_KNOWN


class ClassValue:
    """A class defined in the module being read: its ``class`` statement; instances are ``Instance``."""

    __slots__ = ("node", "reader", "closure")

    def __init__(self, node, reader, closure: Optional[dict] = None):
        self.node, self.reader, self.closure = node, reader, closure


class Instance(dict):
    """An object of a class of the module (``ClassValue``): its attributes by name, any value."""

    __slots__ = ("cls",)

    def __init__(self, cls: ClassValue, attrs=()):
        super().__init__(attrs)
        self.cls = cls


class LoopSignal(Exception):
    """``break`` / ``continue`` (``kind``) inside a loop the reader unrolls."""

    def __init__(self, kind: str):
        super().__init__(kind)
        self.kind = kind


class CfgRef:
    """The config (``path`` ()) or a section of it (``("model",)``) as a Python value."""

    __slots__ = ("state", "path")

    def __init__(self, state, path: tuple):
        self.state, self.path = state, path


class ConfigObject(dict):
    """A config object the run builds field by field (``TrainingConfig(...)``, a model provider) before it
    goes into a ConfigContainer: the fields it knows, ``sites`` (field -> Site of the keyword or assignment
    that wrote it) and ``rest``: None when every field it leaves out is its class default (a class
    python_values.CONFIG_CLASSES knows: the defaults overlap-cli holds apply), else why they are unknown."""

    __slots__ = ("sites", "rest")

    def __init__(self, fields=(), sites=None, rest=None):
        super().__init__(fields)
        self.sites = dict(sites or {})
        self.rest = rest


# ---------------------------------------------------------------------------------------------------
# The config state.
# ---------------------------------------------------------------------------------------------------


class ConfigState:
    """The config a run builds: ``data`` (what it holds), ``unknown`` (path -> reason: everything at or
    under the path is unknown), ``written`` (path -> Site of the run's last write there), ``start``, and
    ``base_data`` / ``base_unknown``: the start's own values. A library's config (python_bridge) subclasses
    it for fields its objects keep equal (``twin``) and values it reads per field (``put``)."""

    def __init__(self, data: dict, unknown: dict, start: Optional[Start] = None, base_data: Optional[dict] = None):
        self.data, self.unknown, self.written = data, dict(unknown), {}
        self.start = start
        # ``base_data`` is read only (shared by the copies and merges of this state, and by a recipe's runs):
        # given when the caller holds the start's values apart from ``data``, else a snapshot of ``data``.
        self.base_data = base_data if base_data is not None else copy.deepcopy(data)
        self.base_unknown = dict(unknown)

    def copy(self) -> "ConfigState":
        s = type(self)(copy.deepcopy(self.data), self.unknown, self.start, base_data=self.base_data)
        s.written = dict(self.written)
        s.base_unknown = self.base_unknown
        return s

    def unknown_reason(self, path: tuple) -> Optional[str]:
        """The reason the value at ``path`` is unknown, or None when it is known (or absent)."""
        node = self.data
        for i in range(len(path) + 1):
            reason = self.unknown.get(path[:i])
            if i == len(path):
                return reason if not present(self.data, path) else None
            if reason is not None and not present(self.data, path):
                return reason
            if not isinstance(node, dict) or path[i] not in node:
                return None
            node = node[path[i]]
        return None

    def read(self, path: tuple, missing=None):
        reason = self.unknown_reason(path)
        if reason is not None:
            return Unknown(reason)
        node = self.data
        for part in path:
            if not isinstance(node, dict) or part not in node:
                return missing
            node = node[part]
        return node

    def twin(self, path: tuple) -> Optional[tuple]:
        """The key the config object keeps equal to the one at ``path`` (None here: plain fields)."""
        return None

    def write(self, path: tuple, value, site: Optional[Site]) -> None:
        for p in [p for p in self.unknown if p[: len(path)] == path]:
            del self.unknown[p]
        for p in [p for p in self.written if p[: len(path)] == path]:
            del self.written[p]
        if isinstance(value, Unknown):
            self.unknown[path] = value.reason
            remove(self.data, path)
        else:
            node = self.data
            for part in path[:-1]:
                if not isinstance(node.get(part), dict):
                    node[part] = {}
                node = node[part]
            node[path[-1]] = copy.deepcopy(value)
            twin = self.twin(path)
            if twin is not None and isinstance(node, dict):
                node[twin[-1]] = copy.deepcopy(value)
        if site is not None:
            self.written[path] = site

    def forget(self, path: tuple, reason: str) -> None:
        self.write(path, Unknown(reason), None)

    def put(self, path: tuple, value, site: Optional[Site]) -> None:
        """``value`` written at ``path``; a config object (``ConfigObject``) field by field, each with the
        site that wrote it (or ``site``), what it leaves out unknown when its class is not known."""
        if not isinstance(value, ConfigObject):
            self.write(path, value, site)
            return
        self.write(path, {}, site)
        if value.rest is not None:
            self.unknown[path] = value.rest
        for key, v in value.items():
            self.put(path + (key,), v, value.sites.get(key, site))


def present(data: dict, path: tuple) -> bool:
    node = data
    for part in path:
        if not isinstance(node, dict) or part not in node:
            return False
        node = node[part]
    return True


def remove(data: dict, path: tuple) -> None:
    if not path:  # the whole config
        data.clear()
        return
    node = data
    for part in path[:-1]:
        node = node.get(part) if isinstance(node, dict) else None
        if node is None:
            return
    if isinstance(node, dict):
        node.pop(path[-1], None)


# ---------------------------------------------------------------------------------------------------
# Helpers over values and nodes.
# ---------------------------------------------------------------------------------------------------


def storable(value) -> bool:
    """A value a config can hold (what a dump of it could write)."""
    if value is None or isinstance(value, (bool, int, float, str, Unknown)):
        return True
    if isinstance(value, list):
        return all(storable(v) for v in value)
    if isinstance(value, dict):
        return all(isinstance(k, (str, int)) and storable(v) for k, v in value.items())
    return False


def same(a, b) -> bool:
    """Both values known and equal (of one type): what two branches of an ``if`` may both leave."""
    if isinstance(a, Unknown) or isinstance(b, Unknown):
        return False
    if isinstance(a, CfgRef) or isinstance(b, CfgRef):
        return a is b
    try:
        return type(a) is type(b) and a == b
    except Exception:
        return False


def fork_value(v, copies: Optional[dict] = None):
    """A mapping (a config object the run holds) copied for one branch of an ``if``, so that what one branch
    sets on it is not seen by the other; a config reference goes to the branch's copy of its config
    (``copies``: by the id of the original); anything else is shared."""
    if isinstance(v, CfgRef):
        return CfgRef(copies[id(v.state)], v.path) if copies and id(v.state) in copies else v
    if isinstance(v, ConfigObject):
        return ConfigObject({k: fork_value(x, copies) for k, x in v.items()}, v.sites, v.rest)
    if isinstance(v, Instance):
        return Instance(v.cls, {k: fork_value(x, copies) for k, x in v.items()})
    if isinstance(v, dict) and type(v) in (dict,) or type(v).__name__ == "Namespace":
        out = type(v)({k: fork_value(x, copies) for k, x in v.items()})
        if type(v) is not dict:  # a Namespace: its ``given`` words too
            out.__dict__.update(v.__dict__)
        return out
    if isinstance(v, list):
        return [fork_value(x, copies) for x in v]
    return v


def is_literal(node) -> bool:
    return isinstance(node, ast.Constant) or (isinstance(node, ast.UnaryOp) and isinstance(node.operand, ast.Constant))


def span(node) -> Optional[tuple]:
    """The span of a literal value a fix can replace in place, or None."""
    if node is None or not is_literal(node):
        return None
    return (node.lineno, node.col_offset, node.end_lineno, node.end_col_offset)


def call_name(node) -> Optional[str]:
    """``f`` of ``f(...)`` or of ``x.f(...)``."""
    f = node.func if isinstance(node, ast.Call) else None
    if isinstance(f, ast.Name):
        return f.id
    if isinstance(f, ast.Attribute):
        return f.attr
    return None


def short(node) -> str:
    """The source of ``node`` for a reason, cut at 60 characters."""
    try:
        text = ast.unparse(node)
    except Exception:
        return type(node).__name__
    return text if len(text) <= 60 else text[:57] + "..."
