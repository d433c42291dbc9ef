"""A Bridge run written in Python as the ``Config`` the resolver reads (python_reader does the reading).

The run is two layers: what it starts from (a catalog recipe -- ``recipe NAME`` --, a YAML file read with
``ConfigContainer.from_yaml``, ``ConfigContainer(...)`` built from its fields -- whose every field is the
file's, at its line --, or an unknown start) and the Python file, whose every assignment is a key
with its ``FILE:LINE``. Dotlist words given on the command line apply on top, as Hydra applies them.
Keys the reader could not know are ``Config.unknown`` (path -> reason); the resolver reports them, and
what depends on them, as unknown (frameworks.bridge.unknowns).

A file is named ``FILE`` (a script, or a module with one run) or ``FILE::FUNCTION``.
"""

from __future__ import annotations

TYPE_CHECKING = False  # the typing module costs ~2.5 ms of start-up; annotations here are strings (PEP 563)
if TYPE_CHECKING:
    from typing import Optional

# Which file and function a spec names is frameworks.detect's (every check imports it; a YAML check does
# not import this module).
from overlap_cli.frameworks.detect import split_spec
from overlap_cli.problems import InputError, InputProblem

PYTHON = "python"


def context(file: str, invocation=None, target=None):
    """The reader's Context for checking ``file``: the catalog's recipes and aliases, from_yaml relative
    to the file's folder or the working directory; ``invocation`` (python_stdlib.Invocation) how the script
    is run (None: by itself, without words, in the environment nobody states); ``target``: where it runs (its
    release decides Bridge's classes' fields and defaults)."""
    import functools

    from overlap_cli.frameworks.bridge import recipes, releases
    from overlap_cli.frameworks.bridge.python_reader import Context

    release = releases.of(target)
    catalog = release.BRIDGE_VERSION  # the recipes, aliases and helper code of that release alone

    def recipe(name: str, module: Optional[str] = None):
        key = recipes.canonical(catalog, name, module)
        if key is None:
            return None
        data, unknown = recipes.shared_data(catalog, key)  # read only: the reader copies what the run writes into
        return key, data, unknown

    def is_recipe(name: str, module: Optional[str] = None) -> bool:
        return recipes.canonical(catalog, name, module) is not None

    def from_yaml(path: str, line: int):
        import os

        from overlap_cli.config.loader import load_config

        from overlap_cli.frameworks.bridge.python_abstract import Refusal
        from overlap_cli.problems import InputError

        here = os.path.join(os.path.dirname(file), path)
        for candidate in (path, here):
            if os.path.isfile(candidate):
                try:
                    return load_config(candidate).data
                except InputError as exc:  # the file the run starts from is one Bridge refuses to load
                    raise Refusal(f"ConfigContainer.from_yaml: {exc.problem.one_line()}", line) from None
        return None

    def sources(module: str, name: str):
        text = recipes.helper_source(catalog, module)
        return (module, text) if text is not None else None

    return Context(recipe=recipe, is_recipe=is_recipe, from_yaml=from_yaml, closest=functools.partial(recipes.closest, catalog),
                   sources=sources, invocation=invocation, release=release, own_modules=own_modules(file))


# Packages never read as the user's own modules, whatever lies beside the script: the ones the reader models
# (their calls have meanings of their own) and the standard library's.
_LIBRARIES = frozenset({"megatron", "torch", "transformer_engine", "hydra", "omegaconf", "nemo", "nemo_rl", "yaml",
                        "numpy", "transformers", "datasets", "wandb", "apex", "triton"})
MAX_OWN_MODULES = 32  # the user's modules one run reads, at most (each a bounded read: config/safe_read.py)


def own_modules(file: str):
    """``find(importer, module)`` -> the reader of a module of the user's own, or None. As Python finds it when
    ``file`` is run as a script: an absolute name in the script's folder (``sys.path[0]``), a relative one
    from the importing module's folder; ``NAME.py`` or ``NAME/__init__.py``, a regular file read within the
    size cap, parsed, never run. Each module is read once per run; a module being read when it is imported
    again (a circular import) is not followed, nor any module past MAX_OWN_MODULES."""
    import os
    import sys

    readers: dict = {}  # path -> its reader (None while it is being read, or unreadable)
    home = os.path.dirname(file)

    def find(importer, module: str):
        from overlap_cli.config.safe_read import read_text
        from overlap_cli.frameworks.bridge import python_reader as pr

        level = len(module) - len(module.lstrip("."))
        name = module[level:]
        if not name or (not level and (name.split(".")[0] in _LIBRARIES or name.split(".")[0] in sys.stdlib_module_names)):
            return None
        base = home
        if level:
            base = os.path.dirname(importer.file)
            for _ in range(level - 1):
                base = os.path.dirname(base)
        stem = os.path.join(base, *name.split("."))
        path = next((p for p in (stem + ".py", os.path.join(stem, "__init__.py")) if os.path.isfile(p)), None)
        if path is None:
            return None
        if path in readers:
            return readers[path]
        if len(readers) >= MAX_OWN_MODULES:
            return None
        readers[path] = None
        try:
            text = read_text(path)
            reader = pr.ModuleReader(pr.parse(text, path), path, importer.ctx)
        except (InputError, pr.BadPython, pr.Refusal, RecursionError):
            return None  # Python fails at that import; what the names bind stays unknown
        readers[path] = reader
        return reader

    return find


def list_runs(path: str, text: str) -> list:
    """The specs of the runs ``path`` holds (``FILE::FUNCTION`` or ``FILE``), [] when it builds none.
    Read without interpreting (folder walks and discovery); raises nothing on bad Python (the check says)."""
    from overlap_cli.frameworks.bridge import python_reader as pr

    try:
        tree = pr.parse(text, path)
    except pr.BadPython:
        return [path]
    reader = pr.ModuleReader(tree, path, context(path))
    script = pr.has_script_start(tree, reader)
    called = pr.script_calls(tree, reader) if script else set()
    out = [f"{path}::{name}" for name, fn in reader.functions.items() if name not in called and pr.is_run_function(fn.node, reader)]
    if script:
        out.append(path)
    if len(out) == 1 and out[0] != path:
        return out
    return out


def not_a_run_problem(path: str, text: str) -> Optional[InputProblem]:
    """Why ``path`` (named explicitly) is not checked, or None when it holds a run."""
    from overlap_cli.frameworks.bridge import python_reader as pr

    try:
        pr.read_runs(text, path, context(path))
    except pr.NotARun as exc:
        hint = ""
        if exc.recipe_names:
            hint = f"; to check the recipe it names: overlap check --recipe {exc.recipe_names[0]}"
        return InputProblem(path, f"builds no ConfigContainer (no recipe call, ConfigContainer.from_yaml(...) or function returning a ConfigContainer){hint}")
    except (pr.BadPython, pr.Refusal):
        return None
    return None


def read_run(spec: str, text: Optional[str] = None, invocation=None, target=None):
    """The PythonRun named by ``spec``; InputError (one line) for bad Python or a run that cannot start."""
    from overlap_cli.config.safe_read import read_text
    from overlap_cli.frameworks.bridge import python_reader as pr

    path, function = split_spec(spec)
    if text is None:
        text = read_text(path)
    try:
        runs = pr.read_runs(text, path, context(path, invocation, target), function)
    except (pr.BadPython, pr.Refusal) as exc:  # placed in the module of the user's it is in
        raise InputError(InputProblem(exc.file or path, _as_release(exc.message, target, path), line=exc.line,
                                      column=exc.column)) from None
    except pr.NotARun as exc:
        hint = f"; to check the recipe it names: overlap check --recipe {exc.recipe_names[0]}" if exc.recipe_names else ""
        raise InputError(InputProblem(path, f"builds no ConfigContainer{hint}")) from None
    except RecursionError:
        raise InputError(InputProblem(path, "Python nesting too deep to read")) from None
    if function is None and len(runs) > 1:
        names = ", ".join(f"{path}::{r.function}" for r in runs if r.function)
        raise InputError(InputProblem(path, f"holds {len(runs)} runs: name one ({names})"))
    run = runs[0]
    if run.start.kind == "unknown" and run.start.reason.startswith("ConfigContainer.from_yaml") and "no such file" in run.start.reason:
        pass
    return run, text


def _as_release(message: str, target, path: str) -> str:
    """A refusal's upstream ``file:line`` read as the checked release has it (the reader's words cite the
    newest release's lines, as the rules do: frameworks/bridge/cites.py)."""
    from overlap_cli.frameworks.bridge import releases

    release = releases.of(target)
    if release.BRIDGE_VERSION == releases.BRIDGE.newest() or releases.lines_file(release) is None:
        return message
    from overlap_cli.frameworks.bridge.cites import rewrite

    return rewrite(message, release, {path})


def load_python(spec: str, text: Optional[str] = None, overrides: Optional[list] = None, invocation=None,
                target=None):
    """(Config, PythonRun) of the run ``spec`` (``invocation``: how the script is run, python_stdlib)."""
    from overlap_cli.config.document import Config, Layer

    run, text = read_run(spec, text, invocation, target)
    path = run.file
    # The run's own data (no copy: nothing reads run.data after this; its base, run.base_data, stays apart).
    data = run.data
    if run.start.kind == "recipe":
        base = Layer("recipe", f"recipe {run.start.name}", None, {})
    elif run.start.kind == "yaml":
        base = Layer("base", run.start.name, run.start.name, {})
    elif run.start.kind == "container":
        # What no line of the file wrote (a Bridge helper's fields) came with the ConfigContainer(...) call.
        base = Layer("base", f"ConfigContainer(...) at {path}:{run.start.line}" if run.start.line else
                     f"ConfigContainer(...) in {path}", None, {})
    else:
        base = Layer("base", "an unknown start", None, {})
    # A layer per file that wrote values: the user's other modules the run calls into (beside the script),
    # then the file itself, on top.
    others: list = []
    for site in run.written.values():
        if site.file and site.file != path and site.file not in others:
            others.append(site.file)
    layer_of = {f: 1 + i for i, f in enumerate(others)}
    top_index = 1 + len(others)
    written = {p: layer_of.get(site.file, top_index) for p, site in run.written.items()}
    positions = {p: (site.line, site.column) for p, site in run.written.items() if written[p] == top_index}
    top = Layer(PYTHON, path, path, positions)
    cfg = Config(file=path, data=data, positions=positions, text=text)
    cfg.via = {p: f"the command line's {site.via}" for p, site in run.written.items() if site is not None and site.via}
    cfg.layer_list = [base] + [Layer(PYTHON, f, f, {p: (site.line, site.column) for p, site in run.written.items()
                                                      if written[p] == layer_of[f]}) for f in others] + [top]
    # a key at or under a path a file wrote is that file's (and no _target_ is a list: finish need not walk again)
    owner = owners(data, run.base_data, written, cfg)
    cfg.layers, cfg.top = owner, top_index
    cfg.lower_data = run.base_data  # read only (rules.cfg_layers, fix.loop), as the reader's states share it
    cfg.unknown = dict(run.unknown)
    cfg.python_run = run
    if overrides:
        from overlap_cli.config.overrides import apply_overrides

        from overlap_cli.config.layers import own_keys

        cfg.layer_list.append(Layer("command line", "command line", None, {}))
        line_index = len(cfg.layer_list) - 1
        from overlap_cli.frameworks.bridge.dotlist_shape import bridge_config

        apply_overrides(cfg, overrides, base_label=run.label, shape=bridge_config(target))
        for ov in overrides:
            for q in [q for q in owner if q[: len(ov.path)] == ov.path]:
                del owner[q]
            for q in [q for q in cfg.unknown if q[: len(ov.path)] == ov.path]:
                del cfg.unknown[q]
            if ov.op != "delete":
                own_keys(ov.value, ov.path, line_index, owner)
                owner[ov.path] = line_index
    from overlap_cli.config.loader import finish

    return finish(cfg, 0, overrides, targets_refused=not overrides), run


def owners(data, base, written: dict, cfg) -> dict:
    """``cfg.layers`` of a Python run: 0 (its start) for every key at and under ``data``; at and under each
    path ``written`` names, the layer that wrote it (path -> its index; a path written inside another
    written one is the later write); a ``_target_`` that is no class path refused on the way
    (config.loader). A run's values are mostly its start's (``base``), copied: the keys a section holds as
    ``base`` does come from the base's skeleton (made once per base, which a recipe's runs share), and only
    the keys that differ are walked."""
    from overlap_cli.config.layers import own_keys
    from overlap_cli.config.loader import refuse_bad_target, refuse_target

    owner: dict = {}
    if () in written or not isinstance(base, dict) or not isinstance(data, dict):
        own_keys(data, (), 0, owner, cfg=cfg)
    else:
        refuse_target(cfg, data, ())
        skeleton = _skeleton(base)
        for sec, value in data.items():
            hit = skeleton.get(sec)
            if hit is None or not isinstance(value, dict):
                own_keys(value, (sec,), 0, owner, cfg=cfg)
                continue
            held, entries, per_key, bad = hit
            owner.update(entries)
            refuse_target(cfg, value, (sec,))
            if value == held:  # the base's keys (one comparison in C): nothing of this section is walked
                changed, gone = (), ()
            else:
                changed = [k for k, v in value.items() if v is not held.get(k, _NONE) and (k not in held or v != held[k])]
                gone = held.keys() - value.keys()
            for k in set(gone).union(changed):
                for p in per_key.get(k, ()):
                    del owner[p]
            for k in changed:
                own_keys(value[k], (sec, k), 0, owner, cfg=cfg)
            for k, key in bad.items():
                if k not in gone and k not in changed:
                    refuse_bad_target(cfg, key, _get(data, key))
    for w in sorted(written, key=len):  # at and under a written path: its writer's
        node = _get(data, w, _NONE, lists=False)  # _own's walk enters no list
        if node is not _NONE:
            own_keys(node, w, written[w], owner)
        owner[w] = written[w]
    return owner


_NONE = object()
_SKELETONS: list = []  # [(base, its skeleton)], the last few: the runs of one recipe share its values as base


def _skeleton(base: dict) -> dict:
    """section -> (its mapping in ``base``, ``_own``'s entries at and under it, key -> the paths at and under
    ``(section, key)``, key -> the first ``_target_`` path under it that is no class path)."""
    from overlap_cli.config.layers import own_keys
    from overlap_cli.config.loader import bad_target

    for held, skeleton in _SKELETONS:
        if held is base:
            return skeleton
    skeleton: dict = {}
    for sec, value in base.items():
        if not isinstance(value, dict):
            continue
        entries: dict = {(sec,): 0}
        per_key: dict = {}
        bad: dict = {}
        for k, v in value.items():
            mine: dict = {}
            own_keys(v, (sec, k), 0, mine)
            per_key[k] = tuple(mine)
            entries.update(mine)
            found = bad_target(v, (sec, k)) if isinstance(v, (dict, list)) else None
            if found is not None:
                bad[k] = found
        skeleton[sec] = (value, entries, per_key, bad)
    _SKELETONS.append((base, skeleton))
    while len(_SKELETONS) > 4:
        del _SKELETONS[0]
    return skeleton


def _get(data, path: tuple, missing=None, lists: bool = True):
    """The value at ``path`` (mapping keys, and list indices with ``lists``), or ``missing``."""
    node = data
    for part in path:
        if isinstance(node, dict) and part in node:
            node = node[part]
        elif lists and isinstance(node, list) and type(part) is int and 0 <= part < len(node):
            node = node[part]
        else:
            return missing
    return node
