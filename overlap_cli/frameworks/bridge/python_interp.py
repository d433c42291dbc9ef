"""The Python reader's interpreter and its seam to the library whose runs it reads.

- ``Library``: what the interpreter asks about the library a module imports (Megatron-Bridge's side is
  python_bridge.Context). The base class knows no library: every imported call is unknown, a name is
  itself, no path has an alias, no write is refused.
- ``Interpreter``: python_statements.Statements, python_expressions.Expressions and python_objects.Objects
  (the module's classes, the builtins) over one environment
  (``env``: name -> value), the config it follows (``cfg``, a python_abstract.ConfigState or None), the
  depth of the calls it follows, and ``in_helper`` (inside a library's helper: its writes have no site).
- ``ModuleReader``: the names of one module (imports, module constants, functions), read once.
- ``parse``: ``ast.parse`` with a syntax error as python_abstract.BadPython.
"""

from __future__ import annotations

import ast
from collections.abc import Mapping

TYPE_CHECKING = False  # the typing module costs ~2.5 ms of start-up; annotations here are strings (PEP 563)
if TYPE_CHECKING:
    from typing import Optional

    from overlap_cli.frameworks.bridge.python_abstract import CfgRef, ConfigState

from overlap_cli.frameworks.bridge.python_abstract import NOT_KNOWN, BadPython, ClassValue, Func, Import, OwnModule, Unknown, short
from overlap_cli.frameworks.bridge.python_expressions import Expressions
from overlap_cli.frameworks.bridge.python_objects import Objects
from overlap_cli.frameworks.bridge.python_statements import Statements


class Library:
    """The seam: each method is one question the interpreter asks about the library's names and objects."""

    module: Optional[str] = None  # the dotted name of the module being read (relative imports), if known
    invocation = None  # python_abstract.Invocation: the script's words and environment (None: run by itself)
    environ = None  # python_stdlib.Environ: os.environ of the reading (what the script sets in it too)
    loop_steps = 0  # the items the loops of the reading were run over (python_statements bounds them)

    def call(self, interp: "Interpreter", func: Import, args: list, kwargs: dict, node):
        """The value of calling the imported ``func``, or NOT_KNOWN (the interpreter then treats it as a
        call it does not know)."""
        return NOT_KNOWN

    def name_value(self, value):
        """The value a name bound to ``value`` has (an imported constant may be known by name)."""
        return value

    def module_attribute(self, module: str, attr: str):
        """The value of ``module.attr`` when the library knows it, else None."""
        return None

    def config_method(self, interp: "Interpreter", owner: "CfgRef", node):
        """``cfg.X.method(...)``: a method of the config the library does not know may change ``X``."""
        owner.state.forget(owner.path, f"{short(node.func)}(...) at {interp.at(node)} may change it")
        return Unknown(f"{short(node)} at {interp.at(node)}")

    def chosen_call(self, interp: "Interpreter", reason: str):
        """``TABLE[key]()`` from a mapping of functions, with a key not known: what it returns, or
        NOT_KNOWN (an unknown value)."""
        return NOT_KNOWN

    def ends_run(self, name: Optional[str]) -> bool:
        """A call named ``name`` that is handed the whole config launches the run: the run ends there."""
        return False

    def config_path(self, path: tuple) -> tuple:
        """The config path an attribute chain names (a library may have aliases)."""
        return path

    def check_write(self, path: tuple, value, line: int, column: int) -> None:
        """Raise python_abstract.Refusal for a write that fails when the run is built."""

    def field_twin(self, target: str, key) -> Optional[str]:
        """The field an object of class ``target`` keeps equal to ``key`` when ``key`` is set, or None."""
        return None

    def launched_unknown(self, interp: "Interpreter", func, args: list, kwargs: dict, node):
        """The config state of a run the library launches (``func(*args, **kwargs)``) with a config the reader does not
        know (every key unknown, for the reason), or None when the call is no such launch."""
        return None

    def own_module(self, importer: "ModuleReader", module: str) -> Optional["ModuleReader"]:
        """The reader of ``module`` (dotted, a leading ``.`` per relative level) when it is a file of the user's
        own that ``importer`` imports (beside the script), else None: the library's and the standard
        library's modules are never read."""
        return None


class Interpreter(Statements, Expressions, Objects):
    outer = None  # the names of the function a followed function is defined in (a closure)
    globals = None  # the module's names as a script's body sets them (None: the module's constants)
    is_script = False  # the body of a script: its names are the module's

    def __init__(self, reader: ModuleReader, state: Optional[ConfigState], env: dict, depth: int = 0, in_helper: bool = False):
        self.reader, self.env, self.depth, self.in_helper = reader, env, depth, in_helper
        self.file = reader.file
        self.cfg: Optional[ConfigState] = state


_TREES: dict = {}  # (file, text) -> its tree, the last few: each run of a module is read on its own


def parse(text: str, file: str):
    """The module's tree (never changed by a reading: shared by the readings of its runs)."""
    key = (file, text)
    tree = _TREES.get(key)
    if tree is None:
        tree = _TREES[key] = _parse(text, file)
        while len(_TREES) > 4:
            del _TREES[next(iter(_TREES))]
    return tree


def _parse(text: str, file: str):
    try:
        return ast.parse(text, filename=file)
    except SyntaxError as exc:
        raise BadPython(f"not valid Python: {exc.msg}", exc.lineno, exc.offset) from None
    except ValueError as exc:  # source with NUL bytes
        raise BadPython(f"not valid Python: {exc}") from None


class ModuleReader:
    """The names of one module (imports, constants, functions), evaluated once. ``own``: a module of the
    user's (the script, a module beside it), whose writes are the user's; a library's module read from its
    source (python_bridge) is not."""

    def __init__(self, tree, file: str, ctx: Library, module: Optional[str] = None, own: bool = True):
        self.tree, self.file, self.ctx, self.module, self.own = tree, file, ctx, module, own
        names_index, functions_index, constants = _top_level(tree, module)
        made: dict = {}
        self.names = _Names(self, names_index, made)
        self.functions = _Names(self, functions_index, made)
        # A module constant is evaluated in order, seeing the names bound above it (as Python runs the
        # module's body); a function, class or import is made when first asked for.
        for pos, node in constants:
            self.names.limit = pos
            made[pos] = Interpreter(self, None, {}).eval(node.value)
        self.names.limit = None


_MISSING = object()


class _Names(Mapping):
    """name -> value of a module's top level, each function, class and import made when it is first asked
    for: a module of N run functions is read once per run, and making all N values each time made the N
    readings quadratic. ``limit``: while the constants are evaluated, only the bindings above that
    statement are names."""

    __slots__ = ("reader", "index", "made", "limit")

    def __init__(self, reader: "ModuleReader", index: dict, made: dict):
        self.reader, self.index, self.made, self.limit = reader, index, made, None

    def _entry(self, name):
        entries = self.index.get(name)
        if not entries:
            return None
        if self.limit is None:
            return entries[-1]
        for entry in reversed(entries):
            if entry[0] < self.limit:
                return entry
        return None

    def __getitem__(self, name):
        entry = self._entry(name)
        if entry is None:
            raise KeyError(name)
        pos, kind, payload = entry
        key = pos if kind == "constant" else (pos, name)
        value = self.made.get(key, _MISSING)
        if value is _MISSING:
            if kind == "import":
                value = own_import(self.reader, *payload)
            elif kind == "function":
                value = Func(payload, self.reader)
            else:
                value = ClassValue(payload, self.reader)
            self.made[key] = value
        return value

    def get(self, name, default=None):
        try:
            return self[name]
        except KeyError:
            return default

    def __contains__(self, name) -> bool:
        return self._entry(name) is not None

    def __iter__(self):
        return (name for name in self.index if self._entry(name) is not None)

    def __len__(self) -> int:
        return sum(1 for _ in self)


def own_import(importer: ModuleReader, module: str, name: str):
    """What ``from module import name`` (``import module`` when ``name`` is empty) binds in ``importer``: the
    value a module of the user's own binds to ``name`` (its function, class, constant, or a submodule), else
    the Import (a library's name). A name the user's module does not bind at its top level stays an Import:
    what calling it does is not known."""
    if not importer.own:
        return Import(module, name)
    ctx = importer.ctx
    found = ctx.own_module(importer, module)
    if found is not None:
        if not name:
            return OwnModule(found, module, importer)
        if name in found.names:
            return found.names[name]
    if name:
        sub = ctx.own_module(importer, f"{module}.{name}" if module.strip(".") else module + name)
        if sub is not None:
            return OwnModule(sub, f"{module}.{name}", importer)
    return Import(module, name)


_TOP_LEVEL: dict = {}  # (id(tree), module) -> (tree, its tables), the last few, as _TREES


def _top_level(tree, module: Optional[str]) -> tuple:
    """The bindings of the module's body, read once per tree: (names, functions, constants). ``names``:
    name -> [(statement number, kind, payload)] in order, ``kind`` ``import`` (payload: the Import's
    module and name), ``function`` / ``class`` (the node) or ``constant`` (the assignment: only module
    constants -- a value that makes no call -- are names of the module); ``functions`` the same for the
    ``def``s alone; ``constants`` [(statement number, assignment)] in order."""
    key = (id(tree), module)
    hit = _TOP_LEVEL.get(key)
    if hit is not None and hit[0] is tree:
        return hit[1]
    names: dict = {}
    functions: dict = {}
    constants: list = []
    for pos, node in enumerate(tree.body):
        if isinstance(node, ast.ImportFrom):
            source = _absolute(node, module) or ""
            for a in node.names:
                if a.name != "*":
                    names.setdefault(a.asname or a.name, []).append((pos, "import", (source, a.name)))
        elif isinstance(node, ast.Import):
            for a in node.names:
                payload = (a.name if a.asname else a.name.split(".")[0], "")
                names.setdefault(a.asname or a.name.split(".")[0], []).append((pos, "import", payload))
        elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            names.setdefault(node.name, []).append((pos, "function", node))
            functions.setdefault(node.name, []).append((pos, "function", node))
        elif isinstance(node, ast.ClassDef):
            names.setdefault(node.name, []).append((pos, "class", node))
        elif isinstance(node, (ast.Assign, ast.AnnAssign)) and not _mentions_call(node.value):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            if node.value is not None and any(isinstance(t, ast.Name) for t in targets):
                constants.append((pos, node))
                for t in targets:
                    if isinstance(t, ast.Name):
                        names.setdefault(t.id, []).append((pos, "constant", node))
    tables = (names, functions, constants)
    _TOP_LEVEL[key] = (tree, tables)
    while len(_TOP_LEVEL) > 8:
        del _TOP_LEVEL[next(iter(_TOP_LEVEL))]
    return tables


def _absolute(node: ast.ImportFrom, module: Optional[str]) -> Optional[str]:
    if not node.level:
        return node.module
    if not module:  # a script's relative import: kept relative (a dot per level), to the file's own folder
        return "." * node.level + (node.module or "")
    parts = module.split(".")[: -node.level]
    return ".".join(parts + ([node.module] if node.module else []))


def _mentions_call(node) -> bool:
    """A call the value makes when it is evaluated (one inside a ``lambda`` is made only when it is called)."""
    if node is None:
        return False
    todo = [node]
    while todo:
        n = todo.pop()
        if isinstance(n, ast.Call):
            return True
        if not isinstance(n, ast.Lambda):
            todo.extend(ast.iter_child_nodes(n))
    return False
