"""Bridge runs written in Python, read statically: parsed with ``ast``, never imported or executed.

A *run* is a function that builds and returns a ``ConfigContainer`` (reported as ``FILE::FUNCTION``; a
module may hold several, as Bridge's recipe modules do), a function that hands its config to
``pretrain(...)`` / ``finetune(...)``, or a script's config where it reaches ``pretrain(...)`` /
``finetune(...)`` or the end of the module. Its *start* is a call of a catalog recipe (its function name
or a public alias; literal keyword arguments), ``ConfigContainer.from_yaml("literal path")``, or a Bridge
helper the catalog holds; anything else leaves the start unknown, with the reason.

The reader is a small abstract interpreter over the config: ``cfg.<section>.<field> = value`` (and
``cfg.model.transformer.<field>``), ``cfg.env_vars[...]``, ``CommOverlapConfig(...)``, the userbuffers
presets and mixed-precision recipes by name (python_values), module constants, literal arithmetic,
``if`` on what it knows, ``getattr`` / ``hasattr`` / ``isinstance`` on the config, and the functions of
the same module it calls. What it cannot evaluate makes exactly the keys it may write unknown, with
``FILE:LINE`` -- never a guess, never a silent drop: a condition it cannot decide makes the keys its
branches set differently unknown; a loop makes the keys it writes unknown; a call that receives the
config (or a section of it) and that the reader does not know makes everything under what it received
unknown.

Bridge's own helpers that the recipes call (``_benchmark_common(cfg)``, ``_perf_precision("bf16")``...)
are known when the reader is given their source (``sources``): the catalog build reads them from the
installed package (tools/build_recipe_catalog.py).
"""

from __future__ import annotations

import ast
import copy

TYPE_CHECKING = False  # the typing module costs ~2.5 ms of start-up; annotations here are strings (PEP 563)
if TYPE_CHECKING:
    from typing import Callable, Optional

from overlap_cli.frameworks.bridge.python_values import Refusal, Unknown
from overlap_cli.records import dataclass, field  # not dataclasses: start-up time (records.py)

RUN_CALLS = ("pretrain", "finetune")
# Methods of a ConfigContainer (or its sections) that change nothing the tool reads.
_INERT_METHODS = ("to_yaml", "print_yaml", "to_dict", "__repr__", "get", "keys", "items", "values", "copy")
_INERT_CALLS = ("print", "len", "str", "repr", "isinstance", "getattr", "hasattr", "id", "type", "vars")
_MAX_DEPTH = 12


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


@dataclass
class Site:
    """Where an assignment writes a key: its line and column, and the value's span when the value is a
    literal a fix can replace in place (``value_span`` = (line, col, end_line, end_col), 1-based line,
    0-based columns as ``ast`` gives them)."""

    line: int
    column: int
    value_span: Optional[tuple] = None
    file: Optional[str] = None


@dataclass
class PythonRun:
    file: str
    function: Optional[str]
    start: Start
    data: dict  # the whole config as the run leaves it (the start's values plus every write)
    written: dict  # path tuple -> Site of the last write the run makes there (not in a Bridge helper)
    unknown: dict  # path tuple -> reason: everything at or under the path is unknown
    base_data: Optional[dict] = None  # the start's own values (the recipe), for provenance
    base_unknown: dict = field(default_factory=dict)

    @property
    def label(self) -> str:
        return f"{self.file}::{self.function}" if self.function else self.file


class NotARun(Exception):
    """The module builds no ConfigContainer (``recipe_names``: recipes it names, for the hint)."""

    def __init__(self, recipe_names: tuple = ()):
        super().__init__("no ConfigContainer")
        self.recipe_names = recipe_names


class BadPython(Exception):
    def __init__(self, message: str, line: Optional[int] = None, column: Optional[int] = None):
        super().__init__(message)
        self.message, self.line, self.column = message, line, column


# ---------------------------------------------------------------------------------------------------
# What the caller supplies: how a start is built.
# ---------------------------------------------------------------------------------------------------


@dataclass
class Context:
    """``recipe(name)`` -> (catalog name, data, unknown) or None when ``name`` is no catalog recipe (``data``
    a fresh copy: the run writes into it);
    ``from_yaml(path, line)`` -> data (InputError when unreadable); ``sources``: module name -> source
    text of Bridge modules (helpers read from Bridge itself); ``module``: this file's module name."""

    recipe: Callable
    is_recipe: Callable
    from_yaml: Optional[Callable] = None
    sources: Optional[Callable] = None
    module: Optional[str] = None
    closest: Optional[Callable] = None


def _bridge_module(name: Optional[str]) -> bool:
    return bool(name) and (name == "megatron.bridge" or name.startswith("megatron.bridge."))


class _Import:
    """A name imported from a module: ``module`` its module, ``name`` its name there."""

    __slots__ = ("module", "name")

    def __init__(self, module: str, name: str):
        self.module, self.name = module, name


class _Func:
    """A function defined in the module being read (or in a Bridge module read from its source)."""

    __slots__ = ("node", "reader")

    def __init__(self, node, reader):
        self.node, self.reader = node, reader


class _CfgRef:
    """The config (``path`` ()) or a section of it (``("model",)``) as a Python value."""

    __slots__ = ("state", "path")

    def __init__(self, state, path: tuple):
        self.state, self.path = state, path


class _Obj(dict):
    """A config object the run builds field by field (``TrainingConfig(...)``, a model provider) before it
    goes into a ConfigContainer: the fields it knows, ``sites`` (field -> Site of the keyword or assignment
    that wrote it) and ``rest``: None when every field it leaves out is its class default (a class
    python_values.CONFIG_CLASSES knows: the defaults overlap-cli holds apply), else why they are unknown."""

    __slots__ = ("sites", "rest")

    def __init__(self, fields=(), sites=None, rest=None):
        super().__init__(fields)
        self.sites = dict(sites or {})
        self.rest = rest


class _Return(Exception):
    def __init__(self, value):
        self.value = value


class _RunEnds(Exception):
    def __init__(self, raised: Optional[str] = None):
        super().__init__(raised)
        self.raised = raised  # "NotImplementedError(...) at FILE:LINE" when a ``raise`` ends the run


# ---------------------------------------------------------------------------------------------------
# The config state.
# ---------------------------------------------------------------------------------------------------


class _State:
    def __init__(self, data: dict, unknown: dict, start: Optional[Start] = None):
        self.data, self.unknown, self.written = data, dict(unknown), {}
        self.start = start
        self.base_data, self.base_unknown = copy.deepcopy(data), dict(unknown)

    def copy(self) -> "_State":
        s = _State(copy.deepcopy(self.data), self.unknown, self.start)
        s.written = dict(self.written)
        s.base_data, s.base_unknown = self.base_data, self.base_unknown
        return s

    def unknown_reason(self, path: tuple) -> Optional[str]:
        """The reason the value at ``path`` is unknown, or None when it is known (or absent)."""
        node = self.data
        for i in range(len(path) + 1):
            reason = self.unknown.get(path[:i])
            if i == len(path):
                return reason if not _present(self.data, path) else None
            if reason is not None and not _present(self.data, path):
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

    def write(self, path: tuple, value, site: Optional[Site]) -> None:
        for p in [p for p in self.unknown if p[: len(path)] == path]:
            del self.unknown[p]
        for p in [p for p in self.written if p[: len(path)] == path]:
            del self.written[p]
        if isinstance(value, Unknown):
            self.unknown[path] = value.reason
            _remove(self.data, path)
        else:
            node = self.data
            for part in path[:-1]:
                if not isinstance(node.get(part), dict):
                    node[part] = {}
                node = node[part]
            node[path[-1]] = copy.deepcopy(value)
            # MixedPrecisionConfig.__setattr__ keeps fp8_param == fp8_param_gather, fp4 likewise
            # (training/mixed_precision.py:81-95).
            if len(path) == 2 and path[0] == "mixed_precision" and isinstance(node, dict):
                for a, b in (("fp8_param_gather", "fp8_param"), ("fp4_param_gather", "fp4_param")):
                    if path[1] in (a, b):
                        node[b if path[1] == a else a] = copy.deepcopy(value)
        if site is not None:
            self.written[path] = site

    def forget(self, path: tuple, reason: str) -> None:
        self.write(path, Unknown(reason), None)

    def put(self, path: tuple, value, site: Optional[Site]) -> None:
        """``value`` written at ``path``; a config object (``_Obj``) field by field, each with the site that
        wrote it (or ``site``), what it leaves out unknown when its class is not known."""
        if not isinstance(value, _Obj):
            self.write(path, value, site)
            return
        self.write(path, {}, site)
        if value.rest is not None:
            self.unknown[path] = value.rest
        for key, v in value.items():
            self.put(path + (key,), v, value.sites.get(key, site))


def _present(data: dict, path: tuple) -> bool:
    node = data
    for part in path:
        if not isinstance(node, dict) or part not in node:
            return False
        node = node[part]
    return True


def _remove(data: dict, path: tuple) -> None:
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
# Reading a module.
# ---------------------------------------------------------------------------------------------------


def parse(text: str, file: str):
    try:
        return ast.parse(text, filename=file)
    except SyntaxError as exc:
        raise BadPython(f"not valid Python: {exc.msg}", exc.lineno, exc.offset) from None
    except ValueError as exc:  # source with NUL bytes
        raise BadPython(f"not valid Python: {exc}") from None


class ModuleReader:
    """The names of one module (imports, constants, functions), evaluated once."""

    def __init__(self, tree, file: str, ctx: Context, module: Optional[str] = None):
        self.tree, self.file, self.ctx, self.module = tree, file, ctx, module
        self.names: dict = {}
        self.functions: dict = {}
        self._read_names()

    def _read_names(self) -> None:
        for node in self.tree.body:
            if isinstance(node, ast.ImportFrom):
                module = _absolute(node, self.module)
                for a in node.names:
                    if a.name == "*":
                        continue
                    self.names[a.asname or a.name] = _Import(module or "", a.name)
            elif isinstance(node, ast.Import):
                for a in node.names:
                    self.names[a.asname or a.name.split(".")[0]] = _Import(a.name if a.asname else a.name.split(".")[0], "")
            elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                self.functions[node.name] = _Func(node, self)
                self.names[node.name] = self.functions[node.name]
            elif isinstance(node, (ast.Assign, ast.AnnAssign)) and not _mentions_call(node.value):
                targets = node.targets if isinstance(node, ast.Assign) else [node.target]
                if node.value is None or not any(isinstance(t, ast.Name) for t in targets):
                    continue  # only module constants are names of the module
                value = _Interp(self, None, {}).eval(node.value)
                for t in targets:
                    if isinstance(t, ast.Name):
                        self.names[t.id] = value

    # The recipe names this module mentions (for the hint a module without a run gets).
    def recipe_names(self) -> tuple:
        out = []
        for name, v in self.names.items():
            if isinstance(v, _Import) and _bridge_module(v.module) and v.name and self.ctx.is_recipe(v.name, v.module):
                out.append(v.name)
        return tuple(out)


def _absolute(node: ast.ImportFrom, module: Optional[str]) -> Optional[str]:
    if not node.level:
        return node.module
    if not module:
        return node.module
    parts = module.split(".")[: -node.level]
    return ".".join(parts + ([node.module] if node.module else []))


def _mentions_call(node) -> bool:
    return node is not None and any(isinstance(n, ast.Call) for n in ast.walk(node))


def read_runs(text: str, file: str, ctx: Context, function: Optional[str] = None) -> list:
    """Every run of the module (or the one named ``function``). NotARun when it builds no
    ConfigContainer; BadPython for a syntax error or a run the reader cannot start."""
    tree = parse(text, file)
    reader = ModuleReader(tree, file, ctx, ctx.module)
    runs = []
    for name, fn in reader.functions.items():
        if function is not None and name != function:
            continue
        if is_run_function(fn.node, reader):
            runs.append(_read_function_run(reader, fn.node))
    if function is None and has_script_start(tree, reader):
        runs.append(_read_script_run(reader))
    if not runs:
        if function is not None:
            raise BadPython(f"no function {function!r} that builds a ConfigContainer")
        raise NotARun(reader.recipe_names())
    return runs


def _call_name(node) -> Optional[str]:
    f = node.func if isinstance(node, ast.Call) else None
    if isinstance(f, ast.Name):
        return f.id
    if isinstance(f, ast.Attribute):
        return f.attr
    return None


def _is_start_call(node, reader: ModuleReader) -> bool:
    if not isinstance(node, ast.Call):
        return False
    name = _call_name(node)
    if name in ("from_yaml", "ConfigContainer"):
        return True
    if name is None:
        return False
    bound = reader.names.get(name) if isinstance(node.func, ast.Name) else None
    if isinstance(bound, _Import) and _bridge_module(bound.module):
        return reader.ctx.is_recipe(bound.name, bound.module) or _names_a_recipe_module(bound)
    if isinstance(node.func, ast.Attribute):  # recipes.llama3_8b_pretrain_config()
        root = node.func.value
        while isinstance(root, ast.Attribute):
            root = root.value
        bound = reader.names.get(root.id) if isinstance(root, ast.Name) else None
        if isinstance(bound, _Import) and _bridge_module(bound.module or bound.name):
            return reader.ctx.is_recipe(name)
    return False


def _names_a_recipe_module(bound: _Import) -> bool:
    """A public ``*_config`` imported from Bridge's recipe packages: a recipe call even when the catalog
    has no such name (the reader then says so, with the closest names)."""
    top = bound.module.split(".")[2:3]
    return top in (["recipes"], ["perf_recipes"]) and bound.name.endswith("_config") and not bound.name.startswith("_")


def is_run_function(node, reader: ModuleReader) -> bool:
    args = node.args.posonlyargs + node.args.args + node.args.kwonlyargs
    if any(a.annotation is not None and ast.unparse(a.annotation).split(".")[-1].strip("'\"") == "ConfigContainer" for a in args):
        return False  # it is handed a config: a helper of the runs, not a run
    ann = node.returns
    if ann is not None:
        text = ast.unparse(ann)
        if text.split(".")[-1].strip("'\"") == "ConfigContainer":
            return True
    for sub in ast.walk(node):
        if isinstance(sub, ast.Call) and _is_start_call(sub, reader):
            return True
    return False


def has_script_start(tree, reader: ModuleReader) -> bool:
    for stmt in tree.body:
        if isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.Import, ast.ImportFrom)):
            continue
        for sub in ast.walk(stmt):
            if isinstance(sub, ast.Call) and _is_start_call(sub, reader):
                return True
    return False


def _read_function_run(reader: ModuleReader, node) -> PythonRun:
    interp = _Interp(reader, None, {})
    params = {}
    for a in node.args.args + node.args.kwonlyargs:
        params[a.arg] = Unknown(f"{reader.file}:{node.lineno}: parameter {a.arg} of {node.name}() (its caller decides)")
    defaults = node.args.defaults
    for a, d in zip(node.args.args[len(node.args.args) - len(defaults):], defaults):
        params[a.arg] = interp.eval(d)
    for a, d in zip(node.args.kwonlyargs, node.args.kw_defaults):
        if d is not None:
            params[a.arg] = interp.eval(d)
    interp.env.update(params)
    try:
        interp.exec_block(node.body)
    except _Return as ret:
        value = ret.value
        if isinstance(value, _CfgRef) and value.path == ():
            interp.cfg = value.state
    except _RunEnds as ends:
        interp.raised = ends.raised
    return interp.finish(node.name)


def _read_script_run(reader: ModuleReader) -> PythonRun:
    interp = _Interp(reader, None, dict(reader.names))
    body = [s for s in reader.tree.body if not isinstance(s, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.Import, ast.ImportFrom))]
    try:
        interp.exec_block(body)
    except (_Return, _RunEnds):
        pass
    return interp.finish(None)


class _Interp:
    def __init__(self, reader: ModuleReader, state: Optional[_State], env: dict, depth: int = 0, in_helper: bool = False):
        self.reader, self.env, self.depth, self.in_helper = reader, env, depth, in_helper
        self.file = reader.file
        self.cfg: Optional[_State] = state

    # -- the end of a run ------------------------------------------------------------------------
    def finish(self, function: Optional[str]) -> PythonRun:
        where = f"{self.file}::{function}" if function else self.file
        if (self.cfg is None or self.cfg.start is None) and self.raised:
            raise BadPython(f"{where}: raises {self.raised} before it builds a config")
        if self.cfg is None or self.cfg.start is None:
            raise BadPython(f"{where}: no config is built here (no recipe call, ConfigContainer(...) or ConfigContainer.from_yaml(...))")
        c = self.cfg
        return PythonRun(self.file, function, c.start, c.data, c.written, c.unknown, c.base_data, c.base_unknown)

    def _at(self, node) -> str:
        return f"{self.file}:{getattr(node, 'lineno', '?')}"

    # -- statements ------------------------------------------------------------------------------
    def exec_block(self, stmts) -> None:
        for stmt in stmts:
            self.exec(stmt)

    def exec(self, stmt) -> None:
        if isinstance(stmt, ast.Assign):
            value = self.eval(stmt.value)
            for target in stmt.targets:
                self.assign(target, value, stmt.value, stmt)
        elif isinstance(stmt, ast.AnnAssign):
            if stmt.value is not None:
                value = self.eval(stmt.value)
                self.assign(stmt.target, value, stmt.value, stmt)
        elif isinstance(stmt, ast.AugAssign):
            old = self.eval(stmt.target)
            new = self.eval(stmt.value)
            self.assign(stmt.target, _binop(stmt.op, old, new, self._at(stmt)), None, stmt)
        elif isinstance(stmt, ast.Expr):
            self.eval(stmt.value, statement=True)
        elif isinstance(stmt, ast.If):
            self._if(stmt)
        elif isinstance(stmt, ast.Return):
            raise _Return(self.eval(stmt.value) if stmt.value is not None else None)
        elif isinstance(stmt, (ast.Pass, ast.Import, ast.ImportFrom, ast.Global, ast.Nonlocal, ast.Assert)):
            if isinstance(stmt, (ast.Import, ast.ImportFrom)):
                sub = ModuleReader(ast.Module(body=[stmt], type_ignores=[]), self.file, self.reader.ctx, self.reader.module)
                self.env.update(sub.names)
        elif isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef)):
            self.env[stmt.name] = _Func(stmt, self.reader)
        elif isinstance(stmt, ast.Raise):
            raise _RunEnds(f"{_short(stmt.exc) if stmt.exc is not None else 'raise'} at {self._at(stmt)}")
        elif isinstance(stmt, ast.With):
            self.exec_block(stmt.body)
        elif isinstance(stmt, ast.Try):
            self._opaque(stmt, "a try statement")
        elif isinstance(stmt, (ast.For, ast.While, ast.AsyncFor)):
            self._opaque(stmt, "a loop")
        else:
            self._opaque(stmt, f"a {type(stmt).__name__} statement")

    def _opaque(self, stmt, what: str) -> None:
        """A statement the reader does not follow: what it may write becomes unknown."""
        reason = f"set in {what} at {self._at(stmt)} that overlap-cli does not follow"
        for sub in ast.walk(stmt):
            if isinstance(sub, (ast.Assign, ast.AugAssign, ast.AnnAssign)):
                targets = sub.targets if isinstance(sub, ast.Assign) else [sub.target]
                for t in targets:
                    for name in ast.walk(t):
                        if isinstance(name, ast.Name) and isinstance(t, ast.Name):
                            self.env[name.id] = Unknown(reason)
                    hit = self._cfg_path(t, lenient=True)
                    if hit is not None:
                        hit[0].forget(hit[1], reason)
            elif isinstance(sub, ast.Call):
                self._call_effects(sub, reason=f"passed to a call in {what} at {self._at(stmt)} that overlap-cli does not follow")
            if isinstance(sub, (ast.For, ast.AsyncFor)):
                for name in ast.walk(sub.target):
                    if isinstance(name, ast.Name):
                        self.env[name.id] = Unknown(reason)

    def _if(self, stmt) -> None:
        test = self.eval(stmt.test)
        if not isinstance(test, Unknown):
            try:
                truth = bool(test)
            except Exception:
                truth = None
            if truth is not None:
                self.exec_block(stmt.body if truth else stmt.orelse)
                return
            test = Unknown(f"the condition at {self._at(stmt)}")
        reason = f"depends on the condition at {self._at(stmt)} ({test.reason})"
        originals = {id(v.state): v.state for v in self.env.values() if isinstance(v, _CfgRef)}
        if self.cfg is not None:
            originals[id(self.cfg)] = self.cfg
        branches = []
        for block in (stmt.body, stmt.orelse):
            copies = {k: st.copy() for k, st in originals.items()}
            env = {n: (_CfgRef(copies[id(v.state)], v.path) if isinstance(v, _CfgRef) else _fork_value(v)) for n, v in self.env.items()}
            fork = _Interp(self.reader, copies.get(id(self.cfg)) if self.cfg is not None else None, env, self.depth, self.in_helper)
            fork.tainted = self.tainted
            returned = None
            try:
                fork.exec_block(block)
            except _Return as ret:
                returned = ret
            except _RunEnds as ends:
                returned = ends
            branches.append((fork, returned, copies))
        (a, ra, ca), (b, rb, cb) = branches
        sa, sb = (a.cfg.start if a.cfg else None), (b.cfg.start if b.cfg else None)
        if self.cfg is None and (a.cfg is not None or b.cfg is not None):
            # The run's config is built inside the ``if``: by one branch, or differently by each.
            fork = a if a.cfg is not None else b
            self.env, self.cfg = dict(fork.env), fork.cfg
            if a.cfg is None or b.cfg is None or (sa.kind, sa.name) != (sb.kind, sb.name):
                self.cfg.forget((), f"the config is built differently {reason}")
            return
        # Each config both branches saw: what they leave alike stays, the rest is unknown -- written back
        # into the object the caller holds.
        for k, original in originals.items():
            merged = _merge_states(ca[k], cb[k], reason)
            original.data, original.unknown, original.written = merged.data, merged.unknown, merged.written
        back = {id(st): originals[k] for k, st in list(ca.items()) + list(cb.items())}
        for name in set(a.env) | set(b.env):
            va, vb = a.env.get(name), b.env.get(name)
            if isinstance(va, _CfgRef) and isinstance(vb, _CfgRef) and back.get(id(va.state)) is back.get(id(vb.state)) and va.path == vb.path:
                self.env[name] = _CfgRef(back[id(va.state)], va.path) if id(va.state) in back else va
            else:
                self.env[name] = va if _same(va, vb) else Unknown(reason)
        if (ra is None) != (rb is None):
            # One way returns, the other goes on: what the rest of this function writes may not happen.
            self.tainted = f"after a return {reason}"
            if isinstance(ra or rb, _Return):
                other = (ra or rb).value
                self._maybe_returned = other
        elif ra is not None and rb is not None:
            if isinstance(ra, _Return) and isinstance(rb, _Return):
                va, vb = ra.value, rb.value
                if isinstance(va, _CfgRef) and isinstance(vb, _CfgRef) and va.path == vb.path:
                    raise _Return(_CfgRef(back.get(id(va.state), va.state), va.path))
                raise _Return(va if _same(va, vb) else Unknown(reason))
            raise _RunEnds()

    tainted = None
    raised = None
    _maybe_returned = None

    # -- assignment ------------------------------------------------------------------------------
    def assign(self, target, value, value_node, stmt) -> None:
        if isinstance(target, ast.Name):
            if isinstance(value, _CfgRef) and value.path == () and value.state is not self.cfg:
                self._bind(value.state, stmt)
            self.env[target.id] = value
            return
        if isinstance(target, (ast.Tuple, ast.List)):
            starred = any(isinstance(e, ast.Starred) for e in target.elts)
            if isinstance(value, list) and len(value) == len(target.elts) and not starred:
                nodes = value_node.elts if isinstance(value_node, (ast.Tuple, ast.List)) else [None] * len(value)
                for elt, v, n in zip(target.elts, value, nodes):
                    self.assign(elt, v, n, stmt)
                return
            for elt in target.elts:
                self.assign(elt.value if isinstance(elt, ast.Starred) else elt, Unknown(f"unpacked at {self._at(stmt)}"), None, stmt)
            return
        hit = self._cfg_path(target)
        state, path = hit if hit is not None else (None, None)
        if path is None and isinstance(target, (ast.Attribute, ast.Subscript)) and not self._refers_to_cfg(target):
            # A field of a value the run holds (``mp = bf16_mixed(); mp.grad_reduce_in_fp32 = False``).
            owner = self.eval(target.value)
            key = target.attr if isinstance(target, ast.Attribute) else self.eval(target.slice)
            if isinstance(owner, dict) and isinstance(key, (str, int)) and not isinstance(owner, Unknown):
                owner[key] = value if _storable(value) or isinstance(value, _Obj) else Unknown(f"{_short(value_node)} at {self._at(stmt)}")
                if isinstance(owner, _Obj):
                    owner.sites[key] = None if self.in_helper else Site(stmt.lineno, stmt.col_offset + 1, _span(value_node), self.file)
                if owner.get("_target_", "").endswith("MixedPrecisionConfig"):
                    for a, b in (("fp8_param_gather", "fp8_param"), ("fp4_param_gather", "fp4_param")):
                        if key in (a, b):
                            owner[b if key == a else a] = owner[key]
                return
            if isinstance(owner, Unknown):
                if isinstance(target, ast.Attribute) and isinstance(target.value, ast.Name) and target.value.id in self.env:
                    # ``model_cfg = bridge.to_megatron_provider(...); model_cfg.tensor_model_parallel_size = 2``:
                    # the object is unknown, the field the run sets on it is not.
                    site = None if self.in_helper else Site(stmt.lineno, stmt.col_offset + 1, _span(value_node), self.file)
                    known = value if _storable(value) or isinstance(value, _Obj) else Unknown(f"{_short(value_node)} at {self._at(stmt)}")
                    self.env[target.value.id] = _Obj({target.attr: known}, {target.attr: site}, owner.reason)
                return  # a value the reader already does not know: nothing else it knows changes
        if path is None:
            if isinstance(target, (ast.Attribute, ast.Subscript)) and self._refers_to_cfg(target):
                lenient = self._cfg_path(target, lenient=True)
                if lenient is not None:
                    lenient[0].forget(lenient[1], f"written through an expression at {self._at(stmt)} that overlap-cli cannot evaluate")
            return
        if isinstance(value, _CfgRef):
            if value.state is state:
                value = copy.deepcopy(state.read(value.path))
            else:
                value = Unknown(f"another config assigned at {self._at(stmt)}")
        elif not _storable(value) and not isinstance(value, _Obj):
            value = Unknown(f"{ast.unparse(value_node) if value_node is not None else 'the value'} at {self._at(stmt)} "
                            "is not a value overlap-cli can read")
        span = None
        if value_node is not None and _is_literal(value_node) and not self.in_helper:
            span = (value_node.lineno, value_node.col_offset, value_node.end_lineno, value_node.end_col_offset)
        site = None if self.in_helper else Site(stmt.lineno, stmt.col_offset + 1, span, self.file)
        self._check_write(path, value, stmt)
        if self.tainted is not None and not isinstance(value, Unknown):
            value = Unknown(f"{'.'.join(map(str, path))} set at {self._at(stmt)}, {self.tainted}")
        if isinstance(value, _Obj):
            state.put(path, _for_field(path[0], value) if len(path) == 1 else value, site)
            return
        state.write(path, value, site)

    def _bind(self, state: _State, stmt) -> None:
        """The run's config is (now) ``state``, built by the statement ``stmt``."""
        self.cfg = state
        if state.start is not None and self.depth == 0 and not self.in_helper:
            start = state.start
            start.line, start.column, start.end_line = stmt.lineno, stmt.col_offset + 1, stmt.end_lineno
            start.indent = " " * stmt.col_offset
            targets = getattr(stmt, "targets", None) or [getattr(stmt, "target", None)]
            start.var = targets[0].id if isinstance(targets[0], ast.Name) else None

    def _check_write(self, path: tuple, value, stmt) -> None:
        """What Python raises when the run is built (before Bridge sees it)."""
        if path[:2] == ("comm_overlap", "tp_comm_overlap_cfg") and len(path) == 2 and isinstance(value, str):
            # Bridge keeps the string; CommOverlapConfig.setup then reads its attributes (comm_overlap.py:
            # 620-632 asdict()s a dataclass): a preset's *name* where the preset object belongs fails there.
            from overlap_cli.frameworks.bridge.python_values import is_preset_name

            hint = f" (import {value} from megatron.bridge.training.comm_overlap and assign it)" if is_preset_name(value) else ""
            raise Refusal(f"comm_overlap.tp_comm_overlap_cfg is the string {value!r}: Bridge needs the preset "
                          f"object, not its name{hint}", stmt.lineno, stmt.col_offset + 1)

    def _refers_to_cfg(self, node) -> bool:
        while isinstance(node, (ast.Attribute, ast.Subscript)):
            node = node.value
        return isinstance(node, ast.Name) and isinstance(self.env.get(node.id), _CfgRef)

    def _cfg_path(self, node, lenient: bool = False) -> Optional[tuple]:
        """(config state, path) that ``node`` names (``cfg.model.x`` -> ("model", "x")), or None.
        ``lenient``: a subscript whose key is not known names its container."""
        parts = []
        while True:
            if isinstance(node, ast.Attribute):
                parts.append(node.attr)
                node = node.value
            elif isinstance(node, ast.Subscript):
                key = self.eval(node.slice)
                if isinstance(key, Unknown) or not isinstance(key, (str, int)):
                    if not lenient:
                        return None
                    parts.clear()
                else:
                    parts.append(key)
                node = node.value
            else:
                break
        if not isinstance(node, ast.Name):
            return None
        ref = self.env.get(node.id)
        if not isinstance(ref, _CfgRef):
            return None
        path = ref.path + tuple(reversed(parts))
        if path[:2] == ("model", "transformer"):  # cfg.model.transformer.X is the provider's field X
            path = ("model",) + path[2:]
        return (ref.state, path) if path else None

    # -- expressions -----------------------------------------------------------------------------
    def eval(self, node, statement: bool = False):
        try:
            return self._eval(node, statement)
        except (Refusal, _Return, _RunEnds, BadPython):
            raise
        except RecursionError:
            raise
        except Exception:
            return Unknown(f"{_short(node)} at {self._at(node)}")

    def _eval(self, node, statement: bool = False):
        if isinstance(node, ast.Constant):
            return node.value
        if isinstance(node, ast.Name):
            if node.id in self.env:
                return _value_of(self.env[node.id])
            if node.id in self.reader.names:
                return _value_of(self.reader.names[node.id])
            if node.id in ("True", "False", "None"):
                return {"True": True, "False": False, "None": None}[node.id]
            return Unknown(f"{node.id} at {self._at(node)} is not known to overlap-cli")
        if isinstance(node, (ast.List, ast.Tuple, ast.Set)):
            items = [self.eval(e) for e in node.elts]
            return items if not isinstance(node, ast.Set) else Unknown(f"a set at {self._at(node)}")
        if isinstance(node, ast.Dict):
            out = {}
            for k, v in zip(node.keys, node.values):
                if k is None:  # {**X, ...}
                    spread = self.eval(v)
                    if isinstance(spread, _CfgRef):
                        spread = spread.state.read(spread.path)
                    if not isinstance(spread, dict):
                        return Unknown(f"{{**{_short(v)}, ...}} at {self._at(node)}: {_short(v)} is not known")
                    out.update(spread)
                    continue
                key = self.eval(k)
                if isinstance(key, Unknown) or not isinstance(key, (str, int, float, bool)):
                    return Unknown(f"a key of the mapping at {self._at(node)} is not known")
                out[key] = self.eval(v)
            return out
        if isinstance(node, ast.BinOp):
            return _binop(node.op, self.eval(node.left), self.eval(node.right), self._at(node))
        if isinstance(node, ast.UnaryOp):
            v = self.eval(node.operand)
            if isinstance(v, Unknown):
                return v
            if isinstance(node.op, ast.Not):
                return not v
            if isinstance(node.op, ast.USub):
                return -v
            if isinstance(node.op, ast.UAdd):
                return +v
            return ~v
        if isinstance(node, ast.BoolOp):
            result = None
            for value_node in node.values:
                v = self.eval(value_node)
                if isinstance(v, Unknown):
                    return v
                result = v
                if isinstance(node.op, ast.And) and not v:
                    return v
                if isinstance(node.op, ast.Or) and v:
                    return v
            return result
        if isinstance(node, ast.Compare):
            left = self.eval(node.left)
            for op, right_node in zip(node.ops, node.comparators):
                right = self.eval(right_node)
                if isinstance(left, Unknown):
                    return left
                if isinstance(right, Unknown):
                    return right
                if not _compare(op, left, right):
                    return False
                left = right
            return True
        if isinstance(node, ast.IfExp):
            test = self.eval(node.test)
            if isinstance(test, Unknown):
                a, b = self.eval(node.body), self.eval(node.orelse)
                return a if _same(a, b) else Unknown(f"the conditional expression at {self._at(node)} ({test.reason})")
            return self.eval(node.body if test else node.orelse)
        if isinstance(node, ast.Attribute):
            return self._attribute(node)
        if isinstance(node, ast.Subscript):
            base = self.eval(node.value)
            key = self.eval(node.slice)
            if isinstance(base, _CfgRef):
                if isinstance(key, Unknown):
                    return key
                return self._read_cfg(base.path + (key,), node, base.state)
            if isinstance(base, Unknown):
                return base
            if isinstance(key, Unknown):
                return key
            return base[key]
        if isinstance(node, ast.Call):
            return self._call(node, statement)
        if isinstance(node, ast.JoinedStr):
            parts = []
            for v in node.values:
                if isinstance(v, ast.Constant):
                    parts.append(str(v.value))
                else:
                    x = self.eval(v.value)
                    if isinstance(x, Unknown) or not isinstance(x, (str, int, float, bool)):
                        return Unknown(f"the f-string at {self._at(node)}")
                    parts.append(format(x, self.eval(v.format_spec) if v.format_spec else ""))
            return "".join(parts)
        return Unknown(f"{_short(node)} at {self._at(node)}")

    def _read_cfg(self, path: tuple, node, state: _State):
        if path[:2] == ("model", "transformer"):
            path = ("model",) + path[2:]
        value = state.read(path, missing=_MISSING)
        if value is _MISSING:
            return Unknown(f"{'.'.join(map(str, path))} read at {self._at(node)} is not in the config overlap-cli knows")
        if isinstance(value, dict) and not isinstance(value, Unknown) and ("_target_" in value or len(path) == 1):
            return _CfgRef(state, path)
        return value

    def _attribute(self, node):
        base = self.eval(node.value)
        if isinstance(base, _CfgRef):
            return self._read_cfg(base.path + (node.attr,), node, base.state)
        if isinstance(base, _Import):
            module = f"{base.module}.{base.name}" if base.name else base.module
            if module == "torch":
                from overlap_cli.frameworks.bridge.python_values import torch_dtype

                dtype = torch_dtype(node.attr)
                if dtype is not None:
                    return dtype
            return _value_of(_Import(module, node.attr))
        if isinstance(base, Unknown):
            return base
        if isinstance(base, dict) and node.attr in base:
            return base[node.attr]
        return Unknown(f"{_short(node)} at {self._at(node)}")

    # -- calls -----------------------------------------------------------------------------------
    def _call(self, node, statement: bool):
        func = self.eval(node.func) if not isinstance(node.func, ast.Attribute) else None
        name = _call_name(node)
        if isinstance(node.func, ast.Attribute):
            owner = self.eval(node.func.value)
            if isinstance(owner, _CfgRef):
                return self._method(owner, node)
            if isinstance(owner, _Import):
                func = _Import(f"{owner.module}.{owner.name}" if owner.name else owner.module, node.func.attr)
            elif isinstance(owner, dict) and name in ("get", "copy", "update", "items", "keys", "values"):
                return self._dict_method(owner, node)
            elif isinstance(owner, str) and name in ("upper", "lower", "strip", "format", "replace", "join", "split", "startswith", "endswith"):
                args = [self.eval(a) for a in node.args]
                if any(isinstance(a, Unknown) for a in args):
                    return Unknown(f"{_short(node)} at {self._at(node)}")
                return getattr(owner, name)(*args)
            else:
                func = Unknown(f"{_short(node.func)} at {self._at(node)}")
        args = [self.eval(a) if not isinstance(a, ast.Starred) else Unknown(f"*{_short(a.value)} at {self._at(node)}") for a in node.args]
        kwargs = {}
        for kw in node.keywords:
            if kw.arg is None:
                spread = self.eval(kw.value)
                if isinstance(spread, dict):
                    kwargs.update(spread)
                else:
                    kwargs["**"] = Unknown(f"**{_short(kw.value)} at {self._at(node)}")
            else:
                kwargs[kw.arg] = self.eval(kw.value)

        if name in RUN_CALLS and any(isinstance(a, _CfgRef) and a.path == () for a in args + list(kwargs.values())):
            if not self.in_helper:
                raise _RunEnds()
        if isinstance(func, _Func):
            return self._call_function(func, args, kwargs, node)
        if isinstance(func, _Import):
            known = self._bridge_call(func, args, kwargs, node)
            if known is not _NOT_KNOWN:
                return known
        if isinstance(func, _Import) and func.module == "" and func.name == "" and name in _INERT_CALLS:
            pass
        if name in _INERT_CALLS and isinstance(node.func, ast.Name) and node.func.id not in self.env and node.func.id not in self.reader.names:
            return self._builtin(name, args, node)
        self._call_effects(node, args=args, kwargs=kwargs, reason=None)
        return Unknown(f"{_short(node.func)}(...) at {self._at(node)} is not known to overlap-cli")

    def _builtin(self, name: str, args: list, node):
        if name == "getattr" and len(args) >= 2 and isinstance(args[0], _CfgRef) and isinstance(args[1], str):
            value = self._read_cfg(args[0].path + (args[1],), node, args[0].state)
            if isinstance(value, Unknown) and len(args) >= 3 and args[0].state.unknown_reason(args[0].path + (args[1],)) is None:
                return args[2]
            return value
        if name == "hasattr" and len(args) == 2 and isinstance(args[0], _CfgRef) and isinstance(args[1], str):
            path = args[0].path + (args[1],)
            reason = args[0].state.unknown_reason(path)
            if reason is not None:
                return Unknown(reason)
            return _present(args[0].state.data, path)
        if name == "isinstance" and len(args) == 2:
            value = args[0]
            if isinstance(value, Unknown):
                return value
            if isinstance(value, _CfgRef):
                value = value.state.read(value.path)
                if isinstance(value, Unknown):
                    return value
            kinds = args[1] if isinstance(args[1], list) else [args[1]]
            if all(isinstance(k, _Import) and k.module == "" for k in kinds):
                pass
            names = [k.name if isinstance(k, _Import) else None for k in kinds]
            builtins = {"str": str, "int": int, "float": float, "bool": bool, "dict": dict, "list": list}
            if any(isinstance(a, ast.Name) and a.id in builtins for a in ast.walk(node.args[1])):
                types = tuple(builtins[a.id] for a in ast.walk(node.args[1]) if isinstance(a, ast.Name) and a.id in builtins)
                return isinstance(value, types)
            del names
            return Unknown(f"isinstance(...) at {self._at(node)}")
        if name == "print":
            return None
        if any(isinstance(a, (Unknown, _CfgRef)) for a in args):
            return Unknown(f"{name}(...) at {self._at(node)}")
        try:
            return {"len": len, "str": str, "repr": repr}.get(name, lambda *a: Unknown(f"{name}(...)"))(*args)
        except Exception:
            return Unknown(f"{name}(...) at {self._at(node)}")

    def _dict_method(self, owner: dict, node):
        name = node.func.attr
        args = [self.eval(a) for a in node.args]
        if any(isinstance(a, Unknown) for a in args):
            return Unknown(f"{_short(node)} at {self._at(node)}")
        if name == "get":
            return owner.get(*args)
        if name == "copy":
            return dict(owner)
        if name == "update":
            if len(args) == 1 and isinstance(args[0], dict):
                owner.update(args[0])
                return None
            return Unknown(f"{_short(node)} at {self._at(node)}")
        return Unknown(f"{_short(node)} at {self._at(node)}")

    def _method(self, owner: _CfgRef, node):
        """``cfg.X.method(...)``: the dict methods of env_vars, and the inert ones of a ConfigContainer."""
        name = node.func.attr
        value = owner.state.read(owner.path)
        args = [self.eval(a) for a in node.args]
        if owner.path == ("env_vars",) and name in ("update", "setdefault", "pop", "get"):
            if isinstance(value, Unknown):
                return value
            if any(isinstance(a, Unknown) for a in args) or node.keywords:
                owner.state.forget(owner.path, f"env_vars.{name}(...) at {self._at(node)} with values overlap-cli cannot read")
                return None
            env = dict(value or {})
            site = None if self.in_helper else Site(node.lineno, node.col_offset + 1, None, self.file)
            if name == "update" and len(args) == 1 and isinstance(args[0], dict):
                for k, v in args[0].items():
                    owner.state.write(("env_vars", k), v, site)
                return None
            if name == "setdefault" and args:
                if args[0] not in env:
                    owner.state.write(("env_vars", args[0]), args[1] if len(args) > 1 else None, site)
                return env.get(args[0], args[1] if len(args) > 1 else None)
            if name == "pop" and args:
                out = env.get(args[0], args[1] if len(args) > 1 else None)
                node_env = owner.state.data.get("env_vars")
                if isinstance(node_env, dict):
                    node_env.pop(args[0], None)
                owner.state.written.pop(("env_vars", args[0]), None)
                return out
            if name == "get" and args:
                return env.get(*args)
        if name in _INERT_METHODS:
            return Unknown(f"{_short(node)} at {self._at(node)}")
        if name == "validate" and owner.path == ():
            return None  # runtime_config_update runs validate() again at launch (config.py:1888): modelled there
        owner.state.forget(owner.path, f"{_short(node.func)}(...) at {self._at(node)} may change it")
        return Unknown(f"{_short(node)} at {self._at(node)}")

    def _call_effects(self, node, args=None, kwargs=None, reason=None) -> None:
        """A call overlap-cli does not know: what it receives of the config may change."""
        values = list(args or []) + list((kwargs or {}).values())
        if args is None:
            values = [self.eval(a) for a in node.args] + [self.eval(k.value) for k in node.keywords]
        for v in values:
            if isinstance(v, _CfgRef):
                why = reason or f"passed to {_short(node.func)}(...) at {self._at(node)}, which overlap-cli does not know"
                v.state.forget(v.path, why)

    def _call_function(self, func: _Func, args: list, kwargs: dict, node):
        """A function of the module (or of a Bridge module read from its source), followed inline."""
        if self.depth >= _MAX_DEPTH:
            self._call_effects(node, args, kwargs, reason=f"passed to {func.node.name}() at {self._at(node)} (calls nested too deep to follow)")
            return Unknown(f"{func.node.name}() at {self._at(node)}: calls nested too deep")
        fn = func.node
        env: dict = {}
        interp = _Interp(func.reader, self.cfg, env, self.depth + 1, in_helper=self.in_helper or func.reader is not self.reader)
        a = fn.args
        positional = a.posonlyargs + a.args
        defaults = dict(zip([p.arg for p in positional[len(positional) - len(a.defaults):]], a.defaults))
        defaults.update({p.arg: d for p, d in zip(a.kwonlyargs, a.kw_defaults) if d is not None})
        for p, v in zip(positional, args):
            env[p.arg] = v
        for k, v in kwargs.items():
            if k == "**":
                for p in positional + a.kwonlyargs:
                    env.setdefault(p.arg, v)
            else:
                env[k] = v
        for p in positional + a.kwonlyargs:
            if p.arg not in env:
                env[p.arg] = interp.eval(defaults[p.arg]) if p.arg in defaults else Unknown(f"argument {p.arg} of {fn.name}() at {self._at(node)}")
        try:
            interp.exec_block(fn.body)
            result = None
        except _Return as ret:
            result = ret.value
        except _RunEnds:
            result = None
        if self.cfg is not None and interp.cfg is not self.cfg and interp.cfg is not None:
            # The function replaced the config it was given (an ``if`` it could not decide, say): follow it.
            for name, v in list(self.env.items()):
                if isinstance(v, _CfgRef) and v.state is self.cfg:
                    self.env[name] = _CfgRef(interp.cfg, v.path)
            self.cfg = interp.cfg
        return result

    def _bridge_call(self, func: _Import, args: list, kwargs: dict, node):
        """A function imported from Megatron-Bridge: a recipe (a start), ConfigContainer.from_yaml, the
        classes and functions python_values knows, or a helper whose source the catalog build reads."""
        from overlap_cli.frameworks.bridge import python_values as pv

        name = func.name
        ctx = self.reader.ctx
        if not _bridge_module(func.module) and func.module not in ("", "torch"):
            target = pv.config_class_target(func.module, name)
            if target is not None or pv.looks_like_config_class(func.module, name):  # Megatron-Core's configs
                return self._config_object(func, target, args, kwargs, node)
            return _NOT_KNOWN
        if name == "from_yaml" and func.module.endswith("ConfigContainer"):
            return self._from_yaml(args, node)
        if name == "ConfigContainer" and _bridge_module(func.module):
            return self._container(args, kwargs, node)
        if name == "MixedPrecisionConfig" and _bridge_module(func.module):
            if args or "**" in kwargs or any(isinstance(v, Unknown) for v in kwargs.values()):
                return Unknown(f"MixedPrecisionConfig(...) at {self._at(node)} with arguments overlap-cli cannot read")
            return pv.mixed_precision_object(kwargs)
        if name == "CommOverlapConfig":
            if "tp_comm_overlap" not in kwargs and not args and "**" not in kwargs:
                raise Refusal("CommOverlapConfig(...) without tp_comm_overlap: the dataclass has no default for it "
                              "(megatron/bridge/training/comm_overlap.py:384) and Python raises TypeError", node.lineno, node.col_offset + 1)
            if args or "**" in kwargs or any(isinstance(v, Unknown) for v in kwargs.values()):
                return Unknown(f"CommOverlapConfig(...) at {self._at(node)} with arguments overlap-cli cannot read")
            for k, v in kwargs.items():
                if k == "tp_comm_overlap_cfg" and isinstance(v, str):
                    self._check_write(("comm_overlap", "tp_comm_overlap_cfg"), v, node)
            return pv.comm_overlap_config(kwargs)
        if pv.is_preset_name(name) if name.startswith("userbuffers_") else False:
            return Unknown("a preset called as a function")
        if name in pv.mixed_precision_names() and not args:
            return pv.mixed_precision_value(name)
        if name == "get_mixed_precision_config" and len(args) == 1:
            if isinstance(args[0], Unknown):
                return args[0]
            value = pv.mixed_precision_value(args[0]) if isinstance(args[0], str) else None
            return value if value is not None else Unknown(f"get_mixed_precision_config({args[0]!r}) at {self._at(node)}: not a recipe overlap-cli knows")
        target = pv.config_class_target(func.module, name)
        if target is not None or (pv.looks_like_config_class(func.module, name) and not ctx.is_recipe(name, func.module)):
            return self._config_object(func, target, args, kwargs, node)
        hit = ctx.recipe(name, func.module) if ctx.is_recipe(name, func.module) else None
        if hit is not None and args:
            return self._start_unknown(node, f"{name}(...) at {self._at(node)} is called with positional arguments")
        if hit is not None and not args:
            if any(isinstance(v, Unknown) for v in kwargs.values()):
                return self._start_unknown(node, f"{name}(...) at {self._at(node)} takes arguments overlap-cli cannot read")
            return self._recipe_start(hit, kwargs, node)
        source = self._bridge_source(func)
        if source is not None:
            return self._call_function(source, args, kwargs, node)
        if _names_a_recipe_module(func) and not ctx.is_recipe(name, func.module):
            near = ctx.closest(name) if ctx.closest is not None else []
            hint = f"; did you mean {', '.join(near)}?" if near else " (overlap recipes list shows them all)"
            raise BadPython(f"unknown recipe {name!r} imported from {func.module}: not a recipe of the catalog{hint}",
                            node.lineno, node.col_offset + 1)
        return _NOT_KNOWN

    def _bridge_source(self, func: _Import) -> Optional[_Func]:
        ctx = self.reader.ctx
        if ctx.sources is None:
            return None
        found = ctx.sources(func.module, func.name)
        if found is None:
            return None
        module, text = found
        reader = _READERS.get((module, id(ctx)))
        if reader is None:
            reader = ModuleReader(parse(text, module), module, ctx, module)
            _READERS[(module, id(ctx))] = reader
        target = reader.names.get(func.name)
        if isinstance(target, _Import) and (target.module, target.name) != (func.module, func.name):
            return self._bridge_source(target)
        return target if isinstance(target, _Func) else None

    def _recipe_start(self, hit: tuple, kwargs: dict, node):
        name, data, unknown = hit
        state = _State(data, dict(unknown))  # Context.recipe hands a fresh copy
        if kwargs:
            # A recipe's keyword arguments change what it builds; the catalog holds the recipe as called
            # without them.
            reason = f"{name}({', '.join(kwargs)}=...) at {self._at(node)}: the catalog holds the recipe as called without arguments"
            state.unknown[()] = reason
        state.start = Start("recipe", name, kwargs=dict(kwargs))
        return _CfgRef(state, ())

    def _site_of(self, node) -> Optional[Site]:
        """Where a keyword argument (or an assignment's value) writes its field; None inside a Bridge helper."""
        if self.in_helper:
            return None
        value = node.value if isinstance(node, ast.keyword) else node
        span = (value.lineno, value.col_offset, value.end_lineno, value.end_col_offset) if _is_literal(value) else None
        return Site(node.lineno, node.col_offset + 1, span, self.file)

    def _config_object(self, func: _Import, target: Optional[str], args: list, kwargs: dict, node):
        """``SomeConfig(field=..., ...)``: the fields given (each at its keyword's line); with ``target`` (a
        class python_values.CONFIG_CLASSES knows) the rest are the class defaults overlap-cli holds,
        otherwise unknown -- never a guessed default."""
        where = f"{func.name}(...) at {self._at(node)}"
        if args or "**" in kwargs:
            return Unknown(f"{where} takes arguments overlap-cli cannot read (positional or **)")
        rest = None if target is not None else (
            f"{func.name} (imported from {func.module}) is a class overlap-cli holds no defaults for: the fields "
            f"{where} leaves out are unknown")
        sites = {kw.arg: self._site_of(kw) for kw in node.keywords if kw.arg is not None}
        fields = {"_target_": target} if target is not None else {}
        for key, value in kwargs.items():
            fields[key] = value if _storable(value) or isinstance(value, _Obj) else Unknown(
                f"{func.name}({key}=...) at {self._at(node)} is not a value overlap-cli can read")
        return _Obj(fields, sites, rest)

    def _container(self, args: list, kwargs: dict, node):
        """``ConfigContainer(model=..., train=TrainingConfig(...), ...)`` as a run's start: each section the
        value its keyword gives (a config object field by field, None, a recipe name...), each field at the
        line that wrote it; a section it leaves out keeps its class default (config.py:965-1003), which is
        what overlap-cli reads for a key a config does not hold."""
        from overlap_cli.frameworks.bridge import python_values as pv

        where = f"ConfigContainer(...) at {self._at(node)}"
        if args:
            raise Refusal("ConfigContainer takes keyword arguments only (@dataclass(kw_only=True), "
                          "megatron/bridge/training/config.py:961): Python raises TypeError", node.lineno, node.col_offset + 1)
        if "**" in kwargs:
            return self._start_unknown(node, f"{where} takes **arguments overlap-cli cannot read")
        for key in kwargs:
            if key not in pv.CONTAINER_FIELDS:
                raise Refusal(f"ConfigContainer() got an unexpected keyword argument {key!r}: not a field of "
                              "ConfigContainer (megatron/bridge/training/config.py:965-1003)", node.lineno, node.col_offset + 1)
        missing = [f for f in pv.CONTAINER_REQUIRED if f not in kwargs]
        if missing:
            raise Refusal(f"ConfigContainer(...) without {', '.join(missing)}: the dataclass has no default for "
                          f"{'it' if len(missing) == 1 else 'them'} (megatron/bridge/training/config.py:965-1003) "
                          "and Python raises TypeError", node.lineno, node.col_offset + 1)
        state = _State({}, {}, Start("container", "ConfigContainer(...)"))
        sites = {kw.arg: self._site_of(kw) for kw in node.keywords if kw.arg is not None}
        for key, value in kwargs.items():
            if isinstance(value, _CfgRef):
                value = copy.deepcopy(value.state.read(value.path))
            if isinstance(value, Unknown):
                state.unknown[(key,)] = value.reason
                continue
            if not (_storable(value) or isinstance(value, _Obj)):
                state.unknown[(key,)] = f"ConfigContainer({key}=...) at {self._at(node)} is not a value overlap-cli can read"
                continue
            state.put((key,), _for_field(key, value), sites.get(key))
        # What the start itself holds: nothing but what the run wrote (every field is the run's, at its line).
        state.base_data, state.base_unknown = {}, {}
        return _CfgRef(state, ())

    def _start_unknown(self, node, reason: str):
        state = _State({}, {(): reason}, Start("unknown", None, reason=reason))
        return _CfgRef(state, ())

    def _from_yaml(self, args: list, node):
        if len(args) != 1 or not isinstance(args[0], str):
            return self._start_unknown(node, f"ConfigContainer.from_yaml(...) at {self._at(node)}: the path is not a literal")
        loader = self.reader.ctx.from_yaml
        if loader is None:
            return self._start_unknown(node, f"ConfigContainer.from_yaml({args[0]!r}) at {self._at(node)}")
        data = loader(args[0], node.lineno)
        if data is None:
            return self._start_unknown(node, f"ConfigContainer.from_yaml({args[0]!r}) at {self._at(node)}: no such file")
        state = _State(copy.deepcopy(data), {}, Start("yaml", args[0]))
        return _CfgRef(state, ())


def _fork_value(v):
    """A mapping (a config object the run holds) copied for one branch of an ``if``, so that what one branch
    sets on it is not seen by the other; anything else is shared."""
    if isinstance(v, _Obj):
        return _Obj({k: _fork_value(x) for k, x in v.items()}, v.sites, v.rest)
    if isinstance(v, dict):
        return {k: _fork_value(x) for k, x in v.items()}
    if isinstance(v, list):
        return [_fork_value(x) for x in v]
    return v


def _span(node) -> Optional[tuple]:
    if node is None or not _is_literal(node):
        return None
    return (node.lineno, node.col_offset, node.end_lineno, node.end_col_offset)


def _for_field(field_name: str, value):
    """A known config class given for another ConfigContainer field than its own is an object overlap-cli
    holds no defaults for there."""
    if not isinstance(value, _Obj) or value.rest is not None or not isinstance(value.get("_target_"), str):
        return value
    from overlap_cli.frameworks.bridge.python_values import CLASS_FIELD

    cls = value["_target_"].rsplit(".", 1)[-1]
    if CLASS_FIELD.get(cls, field_name) == field_name:
        return value
    return _Obj(value, value.sites, f"a {cls} given as ConfigContainer.{field_name}: its other fields are not known")


def _value_of(v):
    """A userbuffers preset imported by name is its value (comm_overlap.py's module constants)."""
    if isinstance(v, _Import) and v.name.startswith("userbuffers_") and _bridge_module(v.module):
        from overlap_cli.frameworks.bridge import python_values as pv

        if pv.is_preset_name(v.name):
            return pv.preset_value(v.name)
        from overlap_cli.frameworks.bridge.releases import BRIDGE

        return Unknown(f"{v.name}: not a userbuffers preset of Megatron-Bridge {BRIDGE.get().BRIDGE_VERSION}")
    return v


_READERS: dict = {}
_MISSING = object()
_NOT_KNOWN = object()


def _storable(value) -> bool:
    if value is None or isinstance(value, (bool, int, float, str, Unknown)):
        return True
    if isinstance(value, list):
        return all(_storable(v) for v in value)
    if isinstance(value, dict):
        return all(isinstance(k, (str, int)) and _storable(v) for k, v in value.items())
    return False


def _is_literal(node) -> bool:
    return isinstance(node, ast.Constant) or (isinstance(node, ast.UnaryOp) and isinstance(node.operand, ast.Constant))


def _same(a, b) -> bool:
    if isinstance(a, Unknown) or isinstance(b, Unknown):
        return False
    if isinstance(a, _CfgRef) or isinstance(b, _CfgRef):
        return a is b
    try:
        return type(a) is type(b) and a == b
    except Exception:
        return False


def _merge_states(a: _State, b: _State, reason: str) -> _State:
    """The state after an ``if`` the reader cannot decide: what both branches leave alike stays, the rest
    is unknown (``reason`` names the condition)."""
    out = _State({}, {}, a.start)
    out.base_data, out.base_unknown = a.base_data, a.base_unknown
    out.data = _merge_data(a.data, b.data, (), out, reason)
    for src in (a, b):
        for p, why in src.unknown.items():
            if p not in out.unknown:
                out.unknown[p] = why
            # Under an unknown path a branch keeps only what it wrote afterwards (``cfg.model = f();
            # cfg.model.x = 2``); the merge keeps no more than that.
            _keep_only(out.data, p, src.data)
    for p in set(a.written) | set(b.written):
        site = a.written.get(p) or b.written.get(p)
        if out.unknown_reason(p) is None:
            out.written[p] = site
    return out


def _keep_only(data: dict, path: tuple, src: dict) -> None:
    """Drop from ``data`` at ``path`` what ``src`` does not hold there."""
    node, other = data, src
    for part in path[:-1] if path else ():
        if not isinstance(node, dict) or part not in node:
            return
        node = node[part]
        other = other.get(part) if isinstance(other, dict) else None
    if not path:
        mine, theirs, holder, key = data, src, None, None
    else:
        if not isinstance(node, dict) or path[-1] not in node:
            return
        theirs = other.get(path[-1], _MISSING) if isinstance(other, dict) else _MISSING
        mine, holder, key = node[path[-1]], node, path[-1]
    if theirs is _MISSING:
        del holder[key]
        return
    if isinstance(mine, dict) and isinstance(theirs, dict):
        for k in list(mine):
            if k not in theirs:
                del mine[k]
            else:
                _keep_only(mine, (k,), theirs)


def _merge_data(x: dict, y: dict, path: tuple, out: _State, reason: str) -> dict:
    merged = {}
    for k in set(x) | set(y):
        p = path + (k,)
        if k in x and k in y and isinstance(x[k], dict) and isinstance(y[k], dict) and ("_target_" not in x[k] or x[k].get("_target_") == y[k].get("_target_")):
            merged[k] = _merge_data(x[k], y[k], p, out, reason)
        elif k in x and k in y and _same(x[k], y[k]):
            merged[k] = x[k]
        else:
            out.unknown[p] = reason
    return merged


def _binop(op, a, b, where: str):
    if isinstance(a, Unknown):
        return a
    if isinstance(b, Unknown):
        return b
    if isinstance(a, (_CfgRef, _Import, _Func)) or isinstance(b, (_CfgRef, _Import, _Func)):
        return Unknown(f"an expression at {where}")
    ops = {ast.Add: lambda: a + b, ast.Sub: lambda: a - b, ast.Mult: lambda: a * b, ast.Div: lambda: a / b,
           ast.FloorDiv: lambda: a // b, ast.Mod: lambda: a % b, ast.Pow: lambda: a ** b if abs(b) < 64 else None,
           ast.BitOr: lambda: a | b, ast.BitAnd: lambda: a & b, ast.LShift: lambda: a << b if b < 64 else None}
    f = ops.get(type(op))
    if f is None:
        return Unknown(f"an expression at {where}")
    try:
        out = f()
    except Exception:
        return Unknown(f"an expression at {where} that Python would reject")
    return out if out is not None else Unknown(f"an expression at {where}")


def _compare(op, a, b) -> bool:
    if isinstance(op, ast.Eq):
        return a == b
    if isinstance(op, ast.NotEq):
        return a != b
    if isinstance(op, ast.Is):
        return a is b if a is None or b is None or isinstance(a, bool) else a == b
    if isinstance(op, ast.IsNot):
        return a is not b if a is None or b is None or isinstance(a, bool) else a != b
    if isinstance(op, ast.In):
        return a in b
    if isinstance(op, ast.NotIn):
        return a not in b
    if isinstance(op, ast.Lt):
        return a < b
    if isinstance(op, ast.LtE):
        return a <= b
    if isinstance(op, ast.Gt):
        return a > b
    if isinstance(op, ast.GtE):
        return a >= b
    raise TypeError(op)


def _short(node) -> str:
    try:
        text = ast.unparse(node)
    except Exception:
        return type(node).__name__
    return text if len(text) <= 60 else text[:57] + "..."
