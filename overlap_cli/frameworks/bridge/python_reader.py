"""Bridge runs written in Python, read statically: parsed with ``ast``, never imported or executed.

A *run* is a function that builds and returns a ``ConfigContainer`` (reported as ``FILE::FUNCTION``; a
module may hold several, as Bridge's recipe modules do), a function that hands its config to
``pretrain(...)`` / ``finetune(...)``, or a script's config where it reaches ``pretrain(...)`` /
``finetune(...)`` or the end of the module -- the module's body run as ``__main__``, the functions it
calls (``main()``) part of its run. Its *start* is a call of a catalog recipe (its function name
or a public alias; literal keyword arguments), ``ConfigContainer.from_yaml("literal path")``, or a Bridge
helper the catalog holds; anything else leaves the start unknown, with the reason.

The reader is a small abstract interpreter over the config: ``cfg.<section>.<field> = value`` (and
``cfg.model.transformer.<field>``), ``cfg.env_vars[...]``, ``CommOverlapConfig(...)``, the userbuffers
presets and mixed-precision recipes by name (python_values), module constants, literal arithmetic,
``if`` on what it knows, ``for`` over a sequence it knows, ``getattr`` / ``setattr`` / ``hasattr`` /
``isinstance`` on the config, the functions, lambdas and classes of the same module, and a script as Python
runs it (``__name__ == "__main__"``, argparse, ``os.environ``: python_stdlib, python_argparse). What it cannot
evaluate makes exactly the keys it may write unknown, with ``FILE:LINE`` -- never a guess, never a silent
drop: a condition it cannot decide makes the keys its branches set differently unknown; a loop over what it
does not know makes the keys it writes unknown; a call that receives the config (or a section of it) and
that the reader does not know makes everything under what it received unknown.

Bridge's own helpers that the recipes call (``_benchmark_common(cfg)``, ``_perf_precision("bf16")``...)
are known when the reader is given their source (``sources``): the catalog build reads them from the
installed package (tools/build_recipe_catalog.py).

Where each part lives (the rooms, in import order):

- python_abstract: the values (``Unknown``, the config state, ``Site``, ``Start``, the control signals);
- python_statements / python_expressions / python_objects: the interpreter's statements, expressions, and
  calls of functions, classes and builtins, joined in python_interp, which also holds the seam
  (``Library``: what the interpreter asks about a library's names) and ModuleReader;
- python_stdlib / python_argparse: Python's library as scripts use it, against how the script is run
  (python_abstract.Invocation: its words, its environment);
- python_bridge: Megatron-Bridge's side of the seam (``Context``: recipes, ``ConfigContainer``,
  ``CommOverlapConfig``, presets, mixed precision, ``from_yaml``, helpers read from source, launches), and
  python_overrides (``process_config_with_overrides`` inside a script);
- this module: what a run is (a function or a script that builds a config) and ``read_runs``, the entry
  point python_load and tools/build_recipe_catalog.py call.
"""


from __future__ import annotations

import ast

TYPE_CHECKING = False  # the typing module costs ~2.5 ms of start-up; annotations here are strings (PEP 563)
if TYPE_CHECKING:
    from typing import Optional

from overlap_cli.frameworks.bridge import python_bridge
from overlap_cli.frameworks.bridge.python_abstract import (
    BadPython,
    CfgRef,
    ClassValue,
    Func,
    Import,
    OwnModule,
    Refusal,
    Returned,
    RunEnds,
    Site,
    Start,
    Unknown,
    call_name,
)
from overlap_cli.frameworks.bridge.python_bridge import Context, is_bridge_module, names_a_recipe_module
from overlap_cli.frameworks.bridge.python_interp import Interpreter, ModuleReader, parse
from overlap_cli.records import dataclass, field  # not dataclasses: start-up time (records.py)

# The names python_load and tools/build_recipe_catalog.py take from here.
__all__ = ("BadPython", "Context", "ModuleReader", "NotARun", "PythonRun", "Refusal", "Site", "Start",
           "has_script_start", "is_run_function", "parse", "read_runs", "script_calls")

# The cache of Bridge modules read from source (tools/build_recipe_catalog.py clears it between recipes).
_READERS = python_bridge.SOURCE_READERS


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


def read_runs(text: str, file: str, ctx: Context, function: Optional[str] = None) -> list:
    """Every run of the module (or the one named ``function``). NotARun when it builds no
    ConfigContainer; BadPython for a syntax error or a run the reader cannot start."""
    tree = parse(text, file)
    reader = ModuleReader(tree, file, ctx, ctx.module)
    runs = []
    script = function is None and has_script_start(tree, reader)
    called = script_calls(tree, reader) if script else set()
    named = reader.functions if function is None else {function: reader.functions[function]} if function in reader.functions else {}
    for name, fn in named.items():
        if name in called:
            continue  # a function the script's body calls is part of the script's run
        if is_run_function(fn.node, reader):
            runs.append(_read_function_run(reader, fn.node))
    if script:
        runs.append(_read_script_run(reader))
    if not runs:
        if function is not None:
            raise BadPython(f"no function {function!r} that builds a ConfigContainer")
        raise NotARun(recipe_names(reader))
    return runs


def recipe_names(reader: ModuleReader) -> tuple:
    """The recipe names the module imports (for the hint a module without a run gets)."""
    out = []
    for name, v in reader.names.items():
        if isinstance(v, Import) and is_bridge_module(v.module) and v.name and reader.ctx.is_recipe(v.name, v.module):
            out.append(v.name)
    return tuple(out)


def _is_start_call(node, reader: ModuleReader) -> bool:
    if not isinstance(node, ast.Call):
        return False
    name = call_name(node)
    if name in ("from_yaml", "ConfigContainer"):
        return True
    f = node.func
    if isinstance(f, ast.Call) and call_name(f) == "getattr" and f.args and isinstance(f.args[0], ast.Name):
        bound = reader.names.get(f.args[0].id)  # getattr(recipes_module, NAME)()
        return isinstance(bound, Import) and is_bridge_module(bound.module or bound.name) and "recipes" in \
            f"{bound.module}.{bound.name}"
    if name is None:
        return False
    bound = reader.names.get(name) if isinstance(node.func, ast.Name) else None
    if isinstance(bound, Import) and is_bridge_module(bound.module):
        return reader.ctx.is_recipe(bound.name, bound.module) or names_a_recipe_module(bound)
    if isinstance(bound, Func) and bound.reader is not reader and bound.reader.own:
        return _builds_a_config(bound)  # a function of another module of the user's
    if isinstance(node.func, ast.Attribute):  # recipes.llama3_8b_pretrain_config()
        chain = []
        root = node.func
        while isinstance(root, ast.Attribute):
            chain.append(root.attr)
            root = root.value
        bound = reader.names.get(root.id) if isinstance(root, ast.Name) else None
        if isinstance(bound, Import) and is_bridge_module(bound.module or bound.name):
            return reader.ctx.is_recipe(name)
        for attr in reversed(chain):  # configs.build_config(): the user's module's function
            if not isinstance(bound, OwnModule):
                return False
            bound = bound.attribute(attr)
        return isinstance(bound, Func) and bound.reader.own and _builds_a_config(bound)
    return False


_FOLLOWING: set = set()  # the functions of the user's other modules being asked about (a cycle is no start)


def _builds_a_config(func: Func) -> bool:
    """A function of a module of the user's own builds a config: it is a run function of its module, or
    reaches a start through the functions of its module."""
    key = id(func.node)
    if key in _FOLLOWING:
        return False
    _FOLLOWING.add(key)
    try:
        return is_run_function(func.node, func.reader) or _reaches_start(func.node.name, func.reader, set())
    finally:
        _FOLLOWING.discard(key)


_RUN_FUNCTIONS: dict = {}  # (id(node), module, release) -> (node, whether it is a run), the last many


def is_run_function(node, reader: ModuleReader) -> bool:
    """The function builds a config of its own: it returns a ConfigContainer (by its annotation) or makes a
    start, and is not handed one. Decided once per function of a module (its runs are read one by one)."""
    key = (id(node), reader.module, id(getattr(reader.ctx, "release", None)))
    hit = _RUN_FUNCTIONS.get(key)
    if hit is not None and hit[0] is node:
        return hit[1]
    found = _is_run_function(node, reader)
    _RUN_FUNCTIONS[key] = (node, found)
    while len(_RUN_FUNCTIONS) > 4096:
        del _RUN_FUNCTIONS[next(iter(_RUN_FUNCTIONS))]
    return found


def _is_run_function(node, reader: ModuleReader) -> bool:
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
    """The module's body (``if __name__ == "__main__":`` included) starts a config: it calls a start, or a
    function of the module that (through the functions it calls) does."""
    for stmt in _body(tree):
        for sub in ast.walk(stmt):
            if isinstance(sub, ast.Call) and (_is_start_call(sub, reader) or _is_launch(sub, reader)):
                return True
    return any(_reaches_start(name, reader, set(), launches=True) for name in script_calls(tree, reader))


def _is_launch(node, reader: ModuleReader) -> bool:
    """``pretrain(...)`` / ``finetune(...)`` imported from Megatron-Bridge: the script launches a run, whatever
    builds its config (a function the reader cannot follow leaves it unknown)."""
    if not isinstance(node, ast.Call) or not isinstance(node.func, ast.Name) or not (
            node.args or any(k.arg == "config" for k in node.keywords)):
        return False
    bound = reader.names.get(node.func.id)
    return isinstance(bound, Import) and is_bridge_module(bound.module) and bound.name in python_bridge.RUN_CALLS


def _body(tree) -> list:
    return [s for s in tree.body if not isinstance(s, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.Import, ast.ImportFrom))]


def _defined(reader: ModuleReader, name: str):
    """The ``def`` or ``class`` statement of a module-level name, or None."""
    value = reader.names.get(name)
    return value.node if isinstance(value, (Func, ClassValue)) and value.reader is reader else None


def _called_functions(node, reader: ModuleReader) -> set:
    """The module's functions and classes a node's code names (calls, or hands on: a mapping of functions,
    a callback)."""
    return {sub.id for sub in ast.walk(node) if isinstance(sub, ast.Name) and isinstance(sub.ctx, ast.Load)
            and _defined(reader, sub.id) is not None}


def _root_name(node):
    while isinstance(node, (ast.Attribute, ast.Subscript, ast.Call)):
        node = node.func if isinstance(node, ast.Call) else node.value
    return node.id if isinstance(node, ast.Name) else None


def script_calls(tree, reader: ModuleReader) -> set:
    """The functions (and classes) of the module the script's body calls -- by name, or through a name its
    body binds to them (``BUILDERS[name]()``) --, and those they name in turn. A name the body only binds
    (``alias = recipe_config``) is no call."""
    body = _body(tree)
    called = {_root_name(sub.func) for stmt in body for sub in ast.walk(stmt) if isinstance(sub, ast.Call)}
    todo = {n for n in called if n and _defined(reader, n) is not None}
    for stmt in body:  # a name the body binds and calls: the functions its value names
        targets = stmt.targets if isinstance(stmt, ast.Assign) else [getattr(stmt, "target", None)]
        if any(isinstance(t, ast.Name) and t.id in called for t in targets):
            todo |= _called_functions(stmt.value, reader) if stmt.value is not None else set()
    seen: set = set()
    while todo:
        name = todo.pop()
        if name in seen:
            continue
        seen.add(name)
        todo |= _called_functions(_defined(reader, name), reader) - seen
    return seen


def _reaches_start(name: str, reader: ModuleReader, seen: set, launches: bool = False) -> bool:
    """The module's function ``name`` (or one it names) makes a start -- or, with ``launches``, a launch."""
    if name in seen:
        return False
    seen.add(name)
    node = _defined(reader, name)
    if any(isinstance(sub, ast.Call) and (_is_start_call(sub, reader) or launches and _is_launch(sub, reader))
           for sub in ast.walk(node)):
        return True
    return any(_reaches_start(n, reader, seen, launches) for n in _called_functions(node, reader))


def _read_function_run(reader: ModuleReader, node) -> PythonRun:
    interp = Interpreter(reader, None, {})
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
    except Returned as ret:
        value = ret.value
        if isinstance(value, CfgRef) and value.path == ():
            interp.cfg = value.state
    except RunEnds as ends:
        interp.raised = ends.raised
    return _finish(interp, node.name)


def _read_script_run(reader: ModuleReader) -> PythonRun:
    """The module run as a script: ``__name__`` is ``"__main__"``, ``__file__`` its path, and its body sets
    the names the functions it calls see."""
    interp = Interpreter(reader, None, dict(reader.names, __name__="__main__", __file__=reader.file))
    interp.is_script = True
    body = _body(reader.tree)
    try:
        interp.exec_block(body)
    except (Returned, RunEnds):
        pass
    return _finish(interp, None)


def _finish(interp: Interpreter, function: Optional[str]) -> PythonRun:
    """The run as the interpreter leaves it; BadPython when it built no config."""
    where = f"{function}(): " if function else ""  # the message is placed in the file already
    if (interp.cfg is None or interp.cfg.start is None) and interp.raised:
        raise BadPython(f"{where}raises {interp.raised} before it builds a config")
    if interp.cfg is None or interp.cfg.start is None:
        raise BadPython(f"{where}no config is built here (no recipe call, ConfigContainer(...) or ConfigContainer.from_yaml(...))")
    c = interp.cfg
    environ = interp.reader.ctx.environ
    for name, value in (environ.set_here.items() if environ is not None else ()):
        # The script's own ``os.environ[NAME] = ...`` is in the process before Bridge installs env_vars with
        # os.environ.setdefault (training/config.py apply_environment_variables): it is what the run gets.
        c.write(("env_vars", name), value, environ.sites.get(name))
    return PythonRun(interp.file, function, c.start, c.data, c.written, c.unknown, c.base_data, c.base_unknown)
