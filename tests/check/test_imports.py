"""The import graph of overlap_cli: no cycle and no private name taken from another module.

Every ``import`` and ``from ... import`` counts, wherever it is written (module level, inside a
function, under ``if TYPE_CHECKING``), relative imports resolved. ``from pkg import name`` depends on
the module ``pkg.name`` when there is one, else on ``pkg``. Importing ``a.b`` also runs ``a``'s
``__init__``; that implicit step is not an edge, since it needs no name from ``a``.
"""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
PACKAGE = "overlap_cli"


def _is_private(name: str) -> bool:
    return name.startswith("_") and not name.startswith("__")


def module_files(root: Path, package: str) -> dict:
    """{dotted module name: path} of every .py file of ``package`` under ``root``."""
    out = {}
    for path in sorted((root / package).rglob("*.py")):
        parts = list(path.relative_to(root).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts.pop()
        out[".".join(parts)] = path
    return out


def _resolve(module: str, is_package: bool, level: int, name) -> str:
    """The absolute module a ``from`` import names (PEP 328 rules for ``level`` leading dots)."""
    if level == 0:
        return name or ""
    base = module.split(".") if is_package else module.split(".")[:-1]
    base = base[: len(base) - (level - 1)]
    return ".".join(base + ([name] if name else []))


def import_graph(root: Path, package: str):
    """(edges {module: set of modules}, private [(module, from module, name)], unseen [(module, line)]).

    ``unseen`` lists ``__import__`` / ``importlib.import_module`` calls whose argument is not a string
    literal: imports this walk cannot follow, so the graph would be incomplete."""
    modules = module_files(root, package)
    edges: dict = {m: set() for m in modules}
    private: list = []
    unseen: list = []

    def known(name: str):
        while name and name not in modules and "." in name:
            name = name.rsplit(".", 1)[0]
        return name if name in modules else None

    for module, path in modules.items():
        tree = ast.parse(path.read_text(encoding="utf-8"), str(path))
        is_package = path.name == "__init__.py"
        module_aliases: dict = {}  # local name -> module, for ``alias._private`` attribute reads

        def depend(target, module=module):
            if target and target != module:
                edges[module].add(target)

        for node in ast.walk(tree):
            if isinstance(node, ast.Import):
                for alias in node.names:
                    if alias.name == package or alias.name.startswith(package + "."):
                        target = known(alias.name)
                        depend(target)
                        if alias.asname and target == alias.name:
                            module_aliases[alias.asname] = target
            elif isinstance(node, ast.ImportFrom):
                base = _resolve(module, is_package, node.level, node.module)
                if base != package and not base.startswith(package + "."):
                    continue
                for alias in node.names:
                    sub = f"{base}.{alias.name}"
                    if sub in modules:
                        depend(sub)
                        module_aliases[alias.asname or alias.name] = sub
                        continue
                    target = known(base)
                    depend(target)
                    if _is_private(alias.name) and target != module:
                        private.append((module, target, alias.name))
            elif isinstance(node, ast.Call):
                func = node.func
                called = func.id if isinstance(func, ast.Name) else func.attr if isinstance(func, ast.Attribute) else None
                if called in ("__import__", "import_module") and node.args:
                    arg = node.args[0]
                    if isinstance(arg, ast.Constant) and isinstance(arg.value, str):
                        depend(known(arg.value))
                    else:
                        unseen.append((module, node.lineno))
        for node in ast.walk(tree):
            if (
                isinstance(node, ast.Attribute)
                and isinstance(node.value, ast.Name)
                and node.value.id in module_aliases
                and _is_private(node.attr)
                and module_aliases[node.value.id] != module
            ):
                private.append((module, module_aliases[node.value.id], node.attr))
    return edges, private, unseen


def cycles(edges: dict) -> list:
    """Strongly connected components of more than one module (Tarjan's algorithm, iteratively)."""
    index: dict = {}
    low: dict = {}
    stack: list = []
    on_stack: set = set()
    out: list = []
    counter = 0
    for start in sorted(edges):
        if start in index:
            continue
        work = [(start, iter(sorted(edges[start])))]
        index[start] = low[start] = counter
        counter += 1
        stack.append(start)
        on_stack.add(start)
        while work:
            node, children = work[-1]
            for child in children:
                if child not in index:
                    index[child] = low[child] = counter
                    counter += 1
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(sorted(edges.get(child, ())))))
                    break
                if child in on_stack:
                    low[node] = min(low[node], index[child])
            else:
                work.pop()
                if work:
                    parent = work[-1][0]
                    low[parent] = min(low[parent], low[node])
                if low[node] == index[node]:
                    component = []
                    while True:
                        member = stack.pop()
                        on_stack.discard(member)
                        component.append(member)
                        if member == node:
                            break
                    if len(component) > 1:
                        out.append(sorted(component))
    return sorted(out)


# -- the checker finds what it must ----------------------------------------------------------------


def _package(tmp_path: Path, files: dict) -> Path:
    for name, text in files.items():
        path = tmp_path / "pkg" / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
    return tmp_path


def test_a_cycle_through_a_function_level_relative_import_is_found(tmp_path):
    root = _package(
        tmp_path,
        {
            "__init__.py": "",
            "a.py": "from pkg.b import helper\n",
            "b.py": "def helper():\n    from .c import x\n    return x\n",
            "c.py": "def x():\n    from . import a\n",
            "d.py": "import pkg.a\n",
        },
    )
    edges, private, unseen = import_graph(root, "pkg")
    assert cycles(edges) == [["pkg.a", "pkg.b", "pkg.c"]]
    assert edges["pkg.d"] == {"pkg.a"} and not private and not unseen


def test_private_names_across_modules_are_found(tmp_path):
    root = _package(
        tmp_path,
        {
            "__init__.py": "",
            "a.py": "_hidden = 1\n__version__ = '1'\n",
            "b.py": "from pkg.a import _hidden, __version__\n",
            "c.py": "from pkg import a\nprint(a._hidden)\n",
            "sub/__init__.py": "from ._impl import thing\n",
            "sub/_impl.py": "thing = 1\n",
        },
    )
    edges, private, unseen = import_graph(root, "pkg")
    assert sorted(private) == [("pkg.b", "pkg.a", "_hidden"), ("pkg.c", "pkg.a", "_hidden")]
    assert edges["pkg.sub"] == {"pkg.sub._impl"} and not cycles(edges)


def test_an_import_the_walk_cannot_follow_is_reported(tmp_path):
    root = _package(
        tmp_path,
        {"__init__.py": "", "a.py": "def load(name):\n    return __import__(f'pkg.{name}')\n", "b.py": "__import__('pkg.a')\n"},
    )
    edges, _, unseen = import_graph(root, "pkg")
    assert unseen == [("pkg.a", 2)] and edges["pkg.b"] == {"pkg.a"}


# -- overlap_cli itself ----------------------------------------------------------------------------


def test_the_package_is_walked():
    edges, _, _ = import_graph(ROOT, PACKAGE)
    assert len(edges) > 50
    assert "overlap_cli.rules.tp" in edges["overlap_cli.rules"]  # the registry imports its rule modules
    assert "overlap_cli.config.overrides" in edges["overlap_cli.config.loader"]  # a function-level import


def test_no_import_cycle():
    edges, _, _ = import_graph(ROOT, PACKAGE)
    assert cycles(edges) == []


def test_no_private_name_is_imported_from_another_module():
    _, private, _ = import_graph(ROOT, PACKAGE)
    assert private == []


def test_every_import_is_visible_to_the_walk():
    _, _, unseen = import_graph(ROOT, PACKAGE)
    assert unseen == []


# -- the layers run one way (overlap_cli/layers.py) -----------------------------------------------


def upward_imports(edges: dict, layer_of) -> list:
    """[(module, imported module)] for every import of a module on a higher layer than the importer's, and
    [(module, None)] for a module the table places on no layer."""
    out = []
    for module in sorted(edges):
        own = layer_of(module)
        if own is None:
            out.append((module, None))
            continue
        out.extend((module, dep) for dep in sorted(edges[module]) if (layer_of(dep) or 0) > own)
    return out


def test_an_upward_import_is_found_on_a_toy_package(tmp_path):
    from overlap_cli.layers import layer_of

    layers = (("pkg", "pkg.words"), ("pkg.text",), ("pkg.app",))
    root = _package(
        tmp_path,
        {
            "__init__.py": "",
            "words.py": "",
            "text/__init__.py": "from pkg import words\n",
            "text/read.py": "def read():\n    from pkg.app.main import run  # up: text < app\n",
            "app/__init__.py": "",
            "app/main.py": "from pkg.text import read\nfrom pkg.words import *\n",
            "stray.py": "",
        },
    )
    edges, _, _ = import_graph(root, "pkg")
    found = upward_imports(edges, lambda m: layer_of(m, layers))
    assert found == [("pkg.text.read", "pkg.app.main")]
    root = _package(tmp_path, {"words.py": "import pkg.text.read\n"})  # the ground floor reaching up
    edges, _, _ = import_graph(root, "pkg")
    assert ("pkg.words", "pkg.text.read") in upward_imports(edges, lambda m: layer_of(m, layers))


def test_every_module_has_a_layer_and_no_import_runs_up():
    from overlap_cli.layers import layer_of

    edges, _, _ = import_graph(ROOT, PACKAGE)
    assert upward_imports(edges, layer_of) == []
