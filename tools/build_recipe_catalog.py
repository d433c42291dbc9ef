"""Build the recipe catalogs overlap-cli ships: every flat recipe of a Megatron-Bridge release as that
release writes it, one folder per release (recipe_catalog/RELEASE/), each built with the release's own code.

    # one release, in its own environment (HF_HUB_OFFLINE=1: the recipes that ask Hugging Face fail fast):
    $ENV/bin/python tools/build_recipe_catalog.py --from-bridge --release 0.5.1
    $ENV/bin/python tools/build_recipe_catalog.py --from-source --release 0.5.1
    $ENV/bin/python tools/build_config_fields.py --release 0.5.1
    # Bridge's main branch: its source ahead of an installed release on sys.path
    $ENV/bin/python tools/build_recipe_catalog.py --from-bridge --release main --source 067f987
    # from a folder of dumps written by Bridge (NAME.yaml + manifest.jsonl with world_size / gpu):
    python tools/build_recipe_catalog.py --from-dumps DIR --bridge-version 0.6.2 --core-version 0.19.2

``--release`` names the folder (default: the installed megatron-bridge version). What the Python reader
needs to know of the release while reading its source (CommOverlapConfig's and MixedPrecisionConfig's
fields, the registered mixed-precision recipes) is read from the Bridge imported here (reader_release), so
a release's entries read from source are that release's.

--from-source keeps every entry already built, adds Bridge's public aliases (a compatibility name a recipe
module imports under another name, resolved to the function it names), and reads every recipe function
the catalog lacks -- those that read a Hugging Face model config when called, so cannot be built offline --
from Bridge's own source with overlap-cli's Python reader (overlap_cli/frameworks/bridge/python_reader.py).
The reader starts each from the base helper it calls (``_pretrain_common()`` and its siblings, called here
for real: they read nothing from the network) or from the catalog recipe it calls, follows Bridge's helpers
through their source, and leaves what it cannot know unknown (the model a Hugging Face config describes).
Each entry records how it was obtained (``how``: built | source) and, read from source, its unknown keys.
Every built recipe is also read from source and the two compared, key by key: the count of those that agree
is printed, and each disagreement.

--from-bridge calls each recipe function of ``megatron.bridge.recipes`` and ``megatron.bridge.perf_recipes``
(the public ``*_config`` functions) with no arguments and writes it with ``ConfigContainer.to_yaml()``, the
serializer behind every checkpoint's run_config.yaml. The launch each recipe is tuned for is read from its
name, as Bridge names them (``..._64gpu_h100_...``); a name without a GPU count gets TP·PP·CP·8.

Output (overlap_cli/frameworks/bridge/recipe_catalog/RELEASE/): ``recipes.xz``, groups of recipes compressed as
independent xz streams one after another, and ``index.json`` with each recipe's stream, offset and length
in that stream's text, its launch and the Bridge / Megatron-Core versions. One recipe loads by reading and
decompressing its group only (~2 ms), not the whole catalog.

``values.xz`` holds the same recipes as values (what reading each text gives), for the Python reader, which
needs the values but not the text's lines: a few base recipes in full, and every recipe as the changes from
its nearest base, in small xz streams of JSON. Loading one recipe's values takes ~1 ms without PyYAML, where
reading its text takes ~20 ms with it. It is derived from the texts alone; regenerate it after editing them:

    python tools/build_recipe_catalog.py --values-only --release R
"""

from __future__ import annotations

import argparse
import copy
import json
import lzma
import re
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
CATALOGS = ROOT / "overlap_cli" / "frameworks" / "bridge" / "recipe_catalog"
OUT = CATALOGS / "0.6.2"  # one folder per release; main() sets it from --release
GROUP = 64  # recipes per xz stream: 83 KB in all for Bridge 0.6.2's 456, ~3 ms to decompress one group
VALUE_BASES = 8  # base recipes of values.xz: 8 bring the changes of all 727 recipes to ~2 MB of JSON (1 base: ~6 MB)
VALUE_GROUP = 32  # recipes per values.xz stream: ~100 KB of JSON, well under 1 ms to decompress and read
GPUS = ("h100", "h200", "a100", "b200", "b300", "gb200", "gb300", "vr200", "r100")


def _installed(package: str) -> str:
    from importlib import metadata

    return metadata.version(package)


def launch_from_name(name: str, text: str) -> dict:
    m = re.search(r"_(\d+)gpu_", name)
    gpu = next((g for g in GPUS if f"_{g}_" in name + "_"), None)
    if m:
        return {"world_size": int(m.group(1)), "world_size_from": "name", "gpu": gpu}
    import yaml

    model = (yaml.safe_load(text) or {}).get("model") or {}
    size = 1
    for key in ("tensor_model_parallel_size", "pipeline_model_parallel_size", "context_parallel_size"):
        size *= int(model.get(key) or 1)
    return {"world_size": size * 8, "world_size_from": "TP*PP*CP*8 (no GPU count in the name)", "gpu": gpu}


def stand_in_tensorboard() -> None:
    """Bridge's training state imports TensorBoard's writer at module level (training/state.py), and from 0.6
    every recipe module reaches it: an environment without TensorBoard would import no recipe. Its writer is
    never used while a recipe is built, so an empty stand-in serves (only where TensorBoard is missing)."""
    import importlib.util
    import types

    if importlib.util.find_spec("tensorboard") is not None:
        return
    board = types.ModuleType("torch.utils.tensorboard")
    writer = types.ModuleType("torch.utils.tensorboard.writer")
    board.SummaryWriter = writer.SummaryWriter = object
    sys.modules.setdefault("torch.utils.tensorboard", board)
    sys.modules.setdefault("torch.utils.tensorboard.writer", writer)


def _no_retry_wait() -> None:
    """Offline, a recipe that reads a Hugging Face config fails after its retries: Bridge's loader sleeps
    1 + 2 + 4 s between them (safe_config_loader.py, safe_load_config_with_retry), ~7 s for each of ~280
    recipes. Its sleep is skipped here; the recipe fails the same way, only sooner."""
    import importlib
    import time
    import types

    try:
        loader = importlib.import_module("megatron.bridge.models.hf_pretrained.safe_config_loader")
    except Exception:
        return
    loader.time = types.SimpleNamespace(**{**vars(time), "sleep": lambda seconds: None})


def from_bridge(release: str) -> tuple[dict, dict]:
    import importlib
    import os
    from importlib import metadata

    import pkgutil
    import tempfile

    stand_in_tensorboard()
    _no_retry_wait()
    texts: dict = {}
    not_built: dict = {}  # name -> why: a recipe function enumerated here that could not be built offline
    for package in ("megatron.bridge.recipes", "megatron.bridge.perf_recipes"):
        try:
            root = importlib.import_module(package)
        except ImportError as exc:
            # The package's __init__ imports every family at once; one missing optional dependency there
            # (e.g. modelopt) would hide all recipes. Stand an empty package in for it, so each submodule
            # is imported (and can fail) on its own.
            import importlib.util
            import types

            spec = importlib.util.find_spec(package)
            if spec is None or not spec.submodule_search_locations:
                print(f"note: {package}: {exc}", file=sys.stderr)
                continue
            print(f"note: {package}: {exc}; importing its modules one by one", file=sys.stderr)
            root = types.ModuleType(package)
            root.__path__ = list(spec.submodule_search_locations)
            sys.modules[package] = root
        # Module by module: a model family whose optional dependency is missing here costs only its own
        # recipes (each is reported), not the whole package.
        for mod in pkgutil.walk_packages(root.__path__, package + "."):
            try:
                module = importlib.import_module(mod.name)
            except Exception as exc:
                print(f"note: {mod.name}: not imported ({type(exc).__name__}: {exc})"[:200], file=sys.stderr)
                continue
            for name, func in sorted(vars(module).items()):
                if not (name.endswith("_config") and callable(func) and getattr(func, "__module__", "") == mod.name):
                    continue
                if name in texts or name.startswith("_"):
                    continue
                real_getcwd = os.getcwd
                os.getcwd = lambda: "."  # the output folders Bridge puts under the working directory, as _helper_bases
                try:
                    cfg = func()
                except Exception as exc:  # a recipe that needs arguments or a GPU: say so, keep going
                    print(f"note: {name}: not built ({type(exc).__name__}: {exc})"[:200], file=sys.stderr)
                    not_built[name] = type(exc).__name__
                    continue
                finally:
                    os.getcwd = real_getcwd
                if not hasattr(cfg, "to_yaml"):
                    continue
                with tempfile.NamedTemporaryFile("r", suffix=".yaml") as fh:
                    cfg.to_yaml(fh.name)
                    texts[name] = Path(fh.name).read_text(encoding="utf-8")
    versions = {"megatron-bridge": release, "megatron-core": metadata.version("megatron-core")}
    enumerated = {"built": len(texts), "not_built": dict(sorted(not_built.items()))}
    return texts, versions, enumerated


def from_dumps(folder: Path) -> tuple[dict, dict]:
    manifest = {}
    if (folder / "manifest.jsonl").is_file():
        for line in (folder / "manifest.jsonl").read_text().splitlines():
            if line.strip():
                row = json.loads(line)
                manifest[row["recipe"]] = row
    texts = {p.stem: p.read_text(encoding="utf-8") for p in sorted(folder.glob("*.yaml"))}
    return texts, manifest


BRIDGE_HELPERS = ("_pretrain_common", "_sft_common", "_peft_common", "_sft_common_vlm", "_peft_common_vlm")


def _bridge_root() -> Path:
    import importlib.util

    spec = importlib.util.find_spec("megatron.bridge")
    return Path(spec.submodule_search_locations[0])


def _recipe_modules(root: Path) -> dict:
    """module name -> (path, source) of every module under recipes/ and perf_recipes/."""
    out = {}
    for pkg in ("recipes", "perf_recipes"):
        for path in sorted((root / pkg).rglob("*.py")):
            rel = path.relative_to(root).with_suffix("")
            parts = ["megatron", "bridge", *rel.parts]
            if parts[-1] == "__init__":
                parts = parts[:-1]
            out[".".join(parts)] = (path, path.read_text(encoding="utf-8"))
    return out


def _absolute_module(node, module: str, is_package: bool) -> str | None:
    if not node.level:
        return node.module
    parts = module.split(".")
    base = parts if is_package else parts[:-1]
    if node.level > 1:
        base = base[: len(base) - (node.level - 1)]
    return ".".join(base + ([node.module] if node.module else []))


def recipe_functions_and_aliases(modules: dict) -> tuple:
    """What each recipe name means, read from the source with ``ast`` (no import). Returns (functions,
    aliases, bindings, function_names):

    - ``functions``: catalog key -> module of every public ``*_config`` function returning a ConfigContainer.
      A name defined in two modules is two recipes (Bridge 0.6.2 has ten: a library recipe and a performance
      recipe of the same name with other settings); the one of ``megatron.bridge.recipes`` keeps the name,
      the other is ``perf__NAME``;
    - ``aliases``: a public name no function has, which a module binds to a recipe (``from X import F as
      NAME``, ``NAME = F``, re-exports followed), resolved as ``megatron.bridge.recipes`` (else
      ``perf_recipes``) exports it;
    - ``bindings``: module -> {name: key} where a module binds a name to another recipe than the name means
      on its own (``perf_recipes.nemotronh.common`` imports the 16-GPU recipe as
      ``nemotron_3_super_pretrain_config``, which ``recipes.nemotronh`` defines as the 64-GPU one);
    - ``function_names``: key -> the function's name in its module."""
    import ast

    trees = {mod: ast.parse(text) for mod, (_path, text) in modules.items()}
    defs: dict = {}
    for mod, tree in trees.items():
        for node in tree.body:
            if isinstance(node, ast.FunctionDef) and node.name.endswith("_config") and not node.name.startswith("_"):
                returns = ast.unparse(node.returns) if node.returns is not None else "ConfigContainer"
                if "ConfigContainer" in returns:  # not the dataset / PEFT config helpers named *_config
                    defs.setdefault(node.name, []).append(mod)
    functions, function_names, key_of = {}, {}, {}
    for name, mods in defs.items():
        mods = sorted(mods, key=lambda m: (not m.startswith("megatron.bridge.recipes."), m))
        for i, mod in enumerate(mods):
            key = name if i == 0 else (f"perf__{name}" if ".perf_recipes." in mod + "." else f"{mod}:{name}")
            functions[key], function_names[key], key_of[(mod, name)] = mod, name, key

    def binding(mod: str, name: str, seen: frozenset = frozenset()):
        if (mod, name) in key_of:
            return key_of[(mod, name)]
        tree = trees.get(mod)
        if tree is None or (mod, name) in seen:
            return None
        seen = seen | {(mod, name)}
        is_package = str(modules[mod][0]).endswith("__init__.py")
        found = None
        for node in tree.body:  # the last binding of the name wins, as at import
            if isinstance(node, ast.ImportFrom):
                src = _absolute_module(node, mod, is_package)
                for a in node.names:
                    if a.name == "*" and src in trees:
                        hit = binding(src, name, seen)
                        found = hit if hit is not None else found
                    elif (a.asname or a.name) == name and src is not None:
                        found = binding(src, a.name, seen)
            elif isinstance(node, ast.Assign) and isinstance(node.value, ast.Name):
                if any(isinstance(t, ast.Name) and t.id == name for t in node.targets):
                    found = binding(mod, node.value.id, seen)
        return found

    bound: dict = {}
    for mod, tree in trees.items():
        names = set()
        for node in tree.body:
            if isinstance(node, ast.ImportFrom):
                names |= {a.asname or a.name for a in node.names if a.name != "*"}
            elif isinstance(node, ast.Assign):
                names |= {t.id for t in node.targets if isinstance(t, ast.Name)}
            elif isinstance(node, ast.FunctionDef):
                names.add(node.name)
        for name in names:
            if name.startswith("_"):
                continue
            key = binding(mod, name)
            if key is not None:
                bound[(mod, name)] = key
    aliases: dict = {}
    for (mod, name), key in sorted(bound.items()):
        if name in defs or name == key:
            continue
        public = binding("megatron.bridge.recipes", name) or binding("megatron.bridge.perf_recipes", name)
        aliases.setdefault(name, public or key)
    bindings: dict = {}
    for (mod, name), key in sorted(bound.items()):
        meaning = name if name in functions else aliases.get(name)
        if key != meaning:
            bindings.setdefault(mod, {})[name] = key
    return functions, aliases, bindings, function_names


def _helper_bases() -> dict:
    """name -> dump text of Bridge's base helpers, called here for real (no arguments, no network)."""
    import importlib
    import importlib.util
    import tempfile
    import types

    # The package's __init__ imports every family (one missing optional dependency hides all): an empty
    # stand-in package, so that only recipes/common.py is imported.
    if "megatron.bridge.recipes" not in sys.modules:
        spec = importlib.util.find_spec("megatron.bridge.recipes")
        stand_in = types.ModuleType("megatron.bridge.recipes")
        stand_in.__path__ = list(spec.submodule_search_locations)
        sys.modules["megatron.bridge.recipes"] = stand_in
    common = importlib.import_module("megatron.bridge.recipes.common")

    import os

    out = {}
    for name in BRIDGE_HELPERS:
        func = getattr(common, name, None)
        if func is None:
            continue
        # The helpers put their output folders under os.getcwd() (recipes/common.py:47); the shipped dumps
        # were written with "." there, so that no machine's path ends up in the catalog.
        real_getcwd = os.getcwd
        os.getcwd = lambda: "."
        try:
            cfg = func()
        except Exception as exc:
            print(f"note: {name}: not built ({type(exc).__name__}: {exc})"[:200], file=sys.stderr)
            continue
        finally:
            os.getcwd = real_getcwd
        with tempfile.NamedTemporaryFile("r", suffix=".yaml") as fh:
            cfg.to_yaml(fh.name)
            out[name] = Path(fh.name).read_text(encoding="utf-8")
    return out


def _dumped(value):
    """A field value as Bridge's serializer writes it: a torch dtype is ``{_call_: false, _target_: torch.X}``."""
    if type(value).__name__ == "dtype" and str(value).startswith("torch."):
        return {"_call_": False, "_target_": str(value)}
    return value


def _field_defaults(cls) -> dict:
    import dataclasses

    out = {}
    for f in dataclasses.fields(cls):
        if not f.init or f.name.startswith("_"):
            continue
        if f.default is not dataclasses.MISSING:
            out[f.name] = _dumped(f.default)
        elif f.default_factory is not dataclasses.MISSING:
            out[f.name] = _dumped(f.default_factory())
        else:
            out[f.name] = "<required>"
    return out


def reader_release(release: str):
    """The facts of this release the Python reader consults (python_values: CommOverlapConfig's and
    MixedPrecisionConfig's fields and defaults, the registered mixed-precision recipes), read from the Bridge
    installed here: the entries read from source are this release's, whether or not overlap-cli holds a
    data module for it."""
    import dataclasses
    import types

    from megatron.bridge.training import mixed_precision as mp
    from megatron.bridge.training.comm_overlap import CommOverlapConfig

    recipes = {}
    for name, factory in mp.MIXED_PRECISION_RECIPES.items():
        if "-" in name:
            continue  # the hyphen spelling registered beside each name (mixed_precision.py, register)
        made = factory()
        recipes[name] = {f.name: _dumped(getattr(made, f.name)) for f in dataclasses.fields(made)
                         if f.init and not f.name.startswith("_")}
    return types.SimpleNamespace(BRIDGE_VERSION=release, COMM_OVERLAP_FIELDS=_field_defaults(CommOverlapConfig),
                                 MP_DEFAULTS=_field_defaults(mp.MixedPrecisionConfig), MP_RECIPES=recipes)


def from_source(texts: dict, launches: dict, how: dict, base_texts: dict) -> tuple:
    """Complete ``texts`` from Bridge's source; returns (texts, launches, how, unknown, aliases, report)."""
    import yaml

    sys.path.insert(0, str(ROOT))
    from overlap_cli.frameworks.bridge import python_reader as pr

    for name in [n for n, h in how.items() if h != "built"]:  # read again, from this source
        texts.pop(name), launches.pop(name), how.pop(name)
    root = _bridge_root()
    release = reader_release(OUT.name)
    modules = _recipe_modules(root)
    functions, aliases, bindings, function_names = recipe_functions_and_aliases(modules)
    bases = {n: yaml.safe_load(t) for n, t in base_texts.items()}
    data = {n: yaml.safe_load(t) for n, t in texts.items()}
    unknown: dict = {n: {} for n in texts}

    def resolve_name(name: str, module: str | None = None) -> str:
        bound = bindings.get(module, {}).get(name) if module else None
        return bound or aliases.get(name, name)

    def recipe(name: str):
        if name in bases:
            return name, bases[name], {}
        key = resolve_name(name)
        if key not in data:
            return None
        return key, data[key], unknown[key]

    consulted: dict = {}

    def sources(module: str, name: str):
        hit = modules.get(module)
        if hit is None:
            return None
        consulted.setdefault(module, set()).add(name)
        return module, hit[1]

    def read(key: str, known: dict, known_unknown: dict):
        mod = functions[key]
        path, text = modules[mod]

        def recipe(n, module=None):
            k = resolve_name(n, module)
            if k in known:
                return k, copy.deepcopy(known[k]), known_unknown.get(k, {})
            return (n, copy.deepcopy(bases[n]), {}) if n in bases else None

        ctx = pr.Context(recipe=recipe, is_recipe=lambda n, module=None: resolve_name(n, module) in known or n in bases,
                         sources=sources, module=mod, release=release)
        pr._READERS.clear()
        run = pr.read_runs(text, f"megatron/bridge/{path.relative_to(root)}", ctx, function_names[key])[0]
        return run

    # Fixpoint: a recipe that calls another (perf recipes call the model recipes) waits for it.
    missing = [n for n in functions if n not in data]
    report = {"source_read": [], "not_read": {}, "agree": [], "disagree": {}, "built_only": {}}
    progress = True
    while missing and progress:
        progress = False
        for name in list(missing):
            try:
                run = read(name, data, unknown)
            except Exception as exc:  # a recipe the reader cannot start: say why
                report["not_read"][name] = f"{type(exc).__name__}: {getattr(exc, 'message', exc)}"
                continue
            if run.start.kind == "unknown":
                report["not_read"][name] = run.start.reason
                continue
            data[name] = run.data
            unknown[name] = run.unknown
            texts[name] = yaml.safe_dump(_plain(run.data), sort_keys=True, default_flow_style=False)
            launches[name] = launch_from_name(name, texts[name])
            how[name] = "source"
            report["source_read"].append(name)
            report["not_read"].pop(name, None)
            missing.remove(name)
            progress = True
    # Both ways: every built recipe read from source too, key by key on what the reading knows.
    built = {n: d for n, d in data.items() if how.get(n) == "built"}
    for name in sorted(built):
        if name not in functions:
            continue
        try:
            run = read(name, data, unknown)
        except Exception as exc:  # built, but its source is beyond the reader: nothing to compare
            report["built_only"][name] = f"{type(exc).__name__}: {getattr(exc, 'message', exc)}"
            continue
        if run.start.kind == "unknown":
            report["built_only"][name] = run.start.reason
            continue
        diffs = _compare(run.data, built[name], run.unknown)
        if diffs:
            report["disagree"][name] = diffs[:5]
        else:
            report["agree"].append(name)
    # The base helpers themselves, so that a run starting from one (``cfg = _sft_common()``) has its start:
    # catalog entries of kind "helper", not listed as recipes, with no launch of their own.
    for name, text in base_texts.items():
        texts[name] = text
        launches[name] = {"world_size": None, "world_size_from": "a base helper: no launch of its own", "gpu": None}
        how[name] = "helper"
    alias_ok = {a: t for a, t in aliases.items() if t in texts}
    report["helpers"] = _helper_sources(modules, consulted)
    report["bindings"] = {m: {n: k for n, k in b.items() if k in texts} for m, b in bindings.items()}
    return texts, launches, how, unknown, alias_ok, report, functions, aliases


def _plain(value):
    """The reader's values as plain mappings and lists (an object of a class the recipe module defines is a
    dict subclass there, python_abstract.Instance), so that PyYAML writes them."""
    if isinstance(value, dict):
        return {k: _plain(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_plain(v) for v in value]
    return value


def _helper_sources(modules: dict, consulted: dict) -> dict:
    """module -> the part of its source the reader needs at check time: its imports and constants, and the
    functions the recipes call in it that are no recipes (``_benchmark_common``, ``_perf_precision``...),
    so that a user's run calling them reads them as the catalog build did."""
    import ast

    out = {}
    for module, names in sorted(consulted.items()):
        text = modules[module][1]
        tree = ast.parse(text)
        keep = []
        for node in tree.body:
            if isinstance(node, (ast.Import, ast.ImportFrom)):
                keep.append(node)
            elif isinstance(node, (ast.Assign, ast.AnnAssign)):
                keep.append(node)
            elif isinstance(node, ast.FunctionDef) and (node.name in names or node.name.startswith("_")):
                keep.append(node)
        out[module] = "\n".join(ast.get_source_segment(text, n) for n in keep) + "\n"
    return out


def _compare(read: dict, built: dict, unknown: dict, path: tuple = ()) -> list:
    """Keys where the source reading knows a value and the built dump holds another."""
    out = []
    for key, value in read.items():
        p = path + (key,)
        if key not in built:
            # An attribute Bridge's dataclass does not declare: set on the object, never dumped.
            if "_target_" not in built:
                out.append(f"{'.'.join(map(str, p))}: read {value!r}, not in the dump")
            continue
        if isinstance(value, dict) and isinstance(built[key], dict):
            out.extend(_compare(value, built[key], unknown, p))
        elif value != built[key]:
            out.append(f"{'.'.join(map(str, p))}: read {value!r}, built {built[key]!r}")
    return out


def read_catalog() -> tuple:
    """(texts, launches, how, versions, extra) of the catalog shipped now (``extra``: what the builds
    recorded, EXTRA_KEYS)."""
    index = json.loads((OUT / "index.json").read_text(encoding="utf-8"))
    blob = (OUT / "recipes.xz").read_bytes()
    texts, launches, how = {}, {}, {}
    for name, row in index["recipes"].items():
        offset, length = index["streams"][row["stream"]]
        raw = lzma.decompress(blob[offset : offset + length])
        texts[name] = raw[row["offset"] : row["offset"] + row["length"]].decode("utf-8")
        launches[name] = {k: row[k] for k in ("world_size", "world_size_from", "gpu")}
        how[name] = row.get("how", "built")
    return texts, launches, how, index["versions"], {k: index[k] for k in EXTRA_KEYS if k in index}


def write_helpers(helpers: dict, versions: dict) -> None:
    """``helpers.json.xz``: the Bridge helper code the Python reader follows (see _helper_sources)."""
    blob = json.dumps({"versions": versions, "modules": helpers}, sort_keys=True).encode("utf-8")
    (OUT / "helpers.json.xz").write_bytes(lzma.compress(blob, preset=9 | lzma.PRESET_EXTREME))


# What each build records in the index beside the recipes: ``from_bridge`` the recipe functions --from-bridge
# enumerated here (the count built, and those it could not build offline, with the exception's type; from
# dumps Bridge wrote elsewhere: their count and folder, ``dumps``);
# ``from_source`` the recipe functions of the release's source and those the reader could not read.
EXTRA_KEYS = ("from_bridge", "from_source")


def write_catalog(texts: dict, versions: dict, launches: dict, how: dict | None = None, unknown: dict | None = None,
                  aliases: dict | None = None, bindings: dict | None = None, extra: dict | None = None) -> None:
    OUT.mkdir(parents=True, exist_ok=True)
    names = sorted(texts)
    blob = bytearray()
    streams, recipes = [], {}
    for g in range(0, len(names), GROUP):
        group = names[g : g + GROUP]
        raw = bytearray()
        for name in group:
            data = texts[name].encode("utf-8")
            recipes[name] = {"stream": len(streams), "offset": len(raw), "length": len(data), **launches[name],
                             "how": (how or {}).get(name, "built")}

            raw += data
        packed = lzma.compress(bytes(raw), format=lzma.FORMAT_XZ, preset=9 | lzma.PRESET_EXTREME)
        streams.append([len(blob), len(packed)])
        blob += packed
    (OUT / "recipes.xz").write_bytes(bytes(blob))
    # What the entries read from source leave unknown (path -> reason), read only when such a recipe loads.
    unknown_rows = {n: sorted([".".join(map(str, p)), r] for p, r in u.items()) for n, u in (unknown or {}).items() if u}
    (OUT / "unknown.json.xz").write_bytes(lzma.compress(json.dumps(unknown_rows, sort_keys=True).encode("utf-8"),
                                                       preset=9 | lzma.PRESET_EXTREME))
    index = {"format": 1, "versions": versions, "streams": streams, "recipes": recipes, "aliases": aliases or {},
             "bindings": {m: b for m, b in (bindings or {}).items() if b}, **(extra or {})}
    index["values"] = write_values(texts)
    for name, stream in index["values"]["of"].items():
        recipes[name]["values"] = stream
    del index["values"]["of"]
    write_index(index)
    print(f"{len(names)} recipes, {len(streams)} streams, {len(blob):,} bytes -> {OUT}")


def write_index(index: dict) -> None:
    # One recipe a line: a new Bridge release shows up in review as the recipes it added or changed.
    recipes = index["recipes"]
    lines = [
        "{",
        f'"format": {index["format"]},',
        f'"versions": {json.dumps(index["versions"], sort_keys=True)},',
        f'"streams": {json.dumps(index["streams"])},',
        f'"values": {json.dumps(index["values"], sort_keys=True)},',
        '"recipes": {',
        ",\n".join(f"{json.dumps(n)}: {json.dumps(recipes[n], sort_keys=True)}" for n in sorted(recipes)),
        "},",
        '"aliases": {',
        ",\n".join(f"{json.dumps(a)}: {json.dumps(t)}" for a, t in sorted(index["aliases"].items())),
        "},",
        '"bindings": {',
        ",\n".join(f"{json.dumps(m)}: {json.dumps(b, sort_keys=True)}" for m, b in sorted(index.get("bindings", {}).items())),
        "}" + "".join(f',\n"{k}": {json.dumps(index[k], sort_keys=True)}' for k in EXTRA_KEYS if k in index) + "}",
    ]
    (OUT / "index.json").write_text("\n".join(lines) + "\n", encoding="utf-8")


def _same(a, b) -> bool:
    """Equal with the same types and the same key order (what the text reads as, exactly)."""
    if type(a) is not type(b):
        return False
    if type(a) is dict:
        return list(a) == list(b) and all(_same(a[k], b[k]) for k in a)
    if type(a) is list:
        return len(a) == len(b) and all(_same(x, y) for x, y in zip(a, b))
    return a == b or (a != a and b != b)  # NaN


def value_changes(base, value, path: list, out: list) -> list:
    """[[path, new value], ...] turning ``base`` into ``value``; a mapping whose keys differ from the base's,
    or are in another order, is replaced whole, so applying the changes keeps the text's key order."""
    if type(base) is dict and type(value) is dict and list(base) == list(value):
        for key in value:
            value_changes(base[key], value[key], path + [key], out)
    elif not _same(base, value):
        out.append([path, value])
    return out


def write_values(texts: dict) -> dict:
    """Write ``values.xz`` (streams 0..k-1: the base recipes' values, one each; then groups of
    ``{name: [base, changes]}``)
    and return its index: {"streams": [[offset, length], ...], "bases": [names], "of": {name: stream}}."""
    sys.path.insert(0, str(ROOT))
    from overlap_cli.config.yamlnodes import parse_nodes

    names = sorted(texts)
    values = {n: parse_nodes(texts[n], f"recipe {n}")[0] for n in names}
    size = lambda base, name: len(json.dumps(value_changes(values[base], values[name], [], [])))  # noqa: E731
    # Bases chosen greedily on a deterministic sample: each round adds the candidate that most shrinks the
    # sample's changes from its nearest base.
    sample, candidates = names[::5], names[::17]
    nearest = {n: len(json.dumps(values[n])) for n in sample}
    bases: list = []
    for _ in range(min(VALUE_BASES, len(names))):
        best = min(candidates, key=lambda c: (sum(min(nearest[n], size(c, n)) for n in sample), c))
        bases.append(best)
        nearest = {n: min(nearest[n], size(best, n)) for n in sample}
    blob, streams, of = bytearray(), [], {}

    def add(obj) -> None:
        packed = lzma.compress(json.dumps(obj, separators=(",", ":")).encode("utf-8"), format=lzma.FORMAT_XZ,
                               preset=9 | lzma.PRESET_EXTREME)
        streams.append([len(blob), len(packed)])
        blob.extend(packed)

    for base in bases:  # stream i holds base i alone: a recipe needs only its own
        add(values[base])
    for g in range(0, len(names), VALUE_GROUP):
        group = {}
        for name in names[g : g + VALUE_GROUP]:
            changes = [value_changes(values[b], values[name], [], []) for b in bases]
            pick = min(range(len(bases)), key=lambda i: (len(json.dumps(changes[i])), i))
            group[name] = [pick, changes[pick]]
            of[name] = len(streams)
        add(group)
    (OUT / "values.xz").write_bytes(bytes(blob))
    return {"streams": streams, "bases": bases, "of": of}


def refresh_values() -> None:
    """Rewrite values.xz (and the index's pointers into it) from the texts the catalog ships."""
    texts = read_catalog()[0]
    index = json.loads((OUT / "index.json").read_text(encoding="utf-8"))
    index["values"] = write_values(texts)
    for name, stream in index["values"].pop("of").items():
        index["recipes"][name]["values"] = stream
    write_index(index)
    print(f"{len(texts)} recipes, {len(index['values']['streams'])} value streams, "
          f"{(OUT / 'values.xz').stat().st_size:,} bytes -> {OUT / 'values.xz'}")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    src = ap.add_mutually_exclusive_group(required=True)
    src.add_argument("--from-bridge", action="store_true")
    src.add_argument("--from-dumps", type=Path)
    src.add_argument("--from-source", action="store_true")
    src.add_argument("--values-only", action="store_true", help="rewrite values.xz from the shipped texts")
    ap.add_argument("--bridge-version")
    ap.add_argument("--core-version")
    ap.add_argument("--release", help="the catalog folder to write (recipe_catalog/RELEASE); default: the installed "
                    "megatron-bridge version. A branch snapshot (Bridge main ahead on sys.path) names itself: main")
    ap.add_argument("--source", help="with --from-bridge: the snapshot of Bridge's source imported (a branch's "
                    "commit, e.g. 067f987 for main), recorded in the index's versions")
    a = ap.parse_args()
    global OUT
    OUT = CATALOGS / (a.release or a.bridge_version or _installed("megatron-bridge"))
    if a.values_only:
        refresh_values()
        return 0
    if a.from_source:
        texts, launches, how, versions, extra = read_catalog()
        stand_in_tensorboard()
        try:
            bases = _helper_bases()
        except ImportError as exc:
            # recipes/common.py imports the training state, which imports TensorBoard: an environment
            # without it cannot call the helpers. Their dumps the catalog already ships were written by
            # the same release (index.json's versions), so they serve as the bases.
            bases = {n: t for n, t in texts.items() if how.get(n) == "helper"}
            print(f"note: the base helpers cannot be called here ({type(exc).__name__}: {exc}); using the "
                  f"{len(bases)} the catalog ships", file=sys.stderr)
        texts, launches, how, unknown, aliases, report, functions, all_aliases = from_source(texts, launches, how, bases)
        extra["from_source"] = {"functions": len(functions), "not_read": {n: why.split(":")[0] for n, why in sorted(report["not_read"].items())}}
        if "from_bridge" in extra:  # of the *_config callables --from-bridge met, the recipe functions (returning a ConfigContainer)
            extra["from_bridge"]["not_built"] = {n: why for n, why in extra["from_bridge"]["not_built"].items() if n in functions}
        write_catalog(texts, versions, launches, how, unknown, aliases, report["bindings"], extra)
        write_helpers(report["helpers"], versions)
        print(f"functions: {len(functions)} in Bridge's source, {sum(1 for f in functions if f in texts)} in the catalog "
              f"({sum(1 for f in functions if how.get(f) == 'built')} built, {len(report['source_read'])} read from source); "
              f"aliases: {len(aliases)} of {len(all_aliases)}")
        print(f"built and read from source: {len(report['agree'])} agree, {len(report['disagree'])} disagree, "
              f"{len(report['built_only'])} built but not readable from source")
        for name, why in sorted(report["disagree"].items()):
            print(f"  disagree {name}: {why}")
        for name, why in sorted(report["not_read"].items()):
            print(f"  not read {name}: {why}"[:300])
        return 0
    if a.from_bridge:
        texts, versions, enumerated = from_bridge(OUT.name)
        launches = {n: launch_from_name(n, t) for n, t in texts.items()}
        extra = {"from_bridge": enumerated}
        if a.source:
            versions["megatron-bridge-source"] = a.source
    else:
        if not (a.bridge_version and a.core_version):
            ap.error("--from-dumps needs --bridge-version and --core-version (the versions that wrote them)")
        texts, manifest = from_dumps(a.from_dumps)
        versions = {"megatron-bridge": a.bridge_version, "megatron-core": a.core_version}
        launches = {}
        extra = {"from_bridge": {"built": len(texts), "not_built": {}, "dumps": str(a.from_dumps.name)}}
        for name, text in texts.items():
            row = manifest.get(name)
            launches[name] = (
                {k: row[k] for k in ("world_size", "world_size_from", "gpu")} if row else launch_from_name(name, text)
            )
    if not texts:
        print("no recipes found", file=sys.stderr)
        return 1
    write_catalog(texts, versions, launches, extra=extra)
    return 0


if __name__ == "__main__":
    sys.exit(main())
