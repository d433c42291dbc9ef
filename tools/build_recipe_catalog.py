"""Build the recipe catalog overlap-cli ships: every flat recipe of Megatron-Bridge as Bridge writes it.

    # from Bridge's own code (a Python environment where megatron-bridge is importable):
    python tools/build_recipe_catalog.py --from-bridge
    # from a folder of dumps written by Bridge (NAME.yaml + manifest.jsonl with world_size / gpu):
    python tools/build_recipe_catalog.py --from-dumps DIR --bridge-version 0.6.2 --core-version 0.19.2

--from-bridge calls each recipe function of ``megatron.bridge.recipes`` and ``megatron.bridge.perf_recipes``
(the public ``*_config`` functions) with no arguments and writes it with ``ConfigContainer.to_yaml()``, the
serializer behind every checkpoint's run_config.yaml. The launch each recipe is tuned for is read from its
name, as Bridge names them (``..._64gpu_h100_...``); a name without a GPU count gets TP·PP·CP·8.

Output (overlap_cli/frameworks/bridge/recipe_catalog/): ``recipes.xz``, groups of recipes compressed as
independent xz streams one after another, and ``index.json`` with each recipe's stream, offset and length
in that stream's text, its launch and the Bridge / Megatron-Core versions. One recipe loads by reading and
decompressing its group only (~2 ms), not the whole catalog.
"""

from __future__ import annotations

import argparse
import json
import lzma
import re
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
OUT = ROOT / "overlap_cli" / "frameworks" / "bridge" / "recipe_catalog"
GROUP = 64  # recipes per xz stream: 83 KB in all for Bridge 0.6.2's 456, ~3 ms to decompress one group
GPUS = ("h100", "h200", "a100", "b200", "b300", "gb200", "gb300", "vr200", "r100")


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


def from_bridge() -> tuple[dict, dict]:
    import importlib
    from importlib import metadata

    import pkgutil
    import tempfile

    texts: dict = {}
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
                try:
                    cfg = func()
                except Exception as exc:  # a recipe that needs arguments or a GPU: say so, keep going
                    print(f"note: {name}: not built ({type(exc).__name__}: {exc})"[:200], file=sys.stderr)
                    continue
                if not hasattr(cfg, "to_yaml"):
                    continue
                with tempfile.NamedTemporaryFile("r", suffix=".yaml") as fh:
                    cfg.to_yaml(fh.name)
                    texts[name] = Path(fh.name).read_text(encoding="utf-8")
    versions = {"megatron-bridge": metadata.version("megatron-bridge"), "megatron-core": metadata.version("megatron-core")}
    return texts, versions


def from_dumps(folder: Path) -> tuple[dict, dict]:
    manifest = {}
    if (folder / "manifest.jsonl").is_file():
        for line in (folder / "manifest.jsonl").read_text().splitlines():
            if line.strip():
                row = json.loads(line)
                manifest[row["recipe"]] = row
    texts = {p.stem: p.read_text(encoding="utf-8") for p in sorted(folder.glob("*.yaml"))}
    return texts, manifest


def write_catalog(texts: dict, versions: dict, launches: dict) -> None:
    OUT.mkdir(parents=True, exist_ok=True)
    names = sorted(texts)
    blob = bytearray()
    streams, recipes = [], {}
    for g in range(0, len(names), GROUP):
        group = names[g : g + GROUP]
        raw = bytearray()
        for name in group:
            data = texts[name].encode("utf-8")
            recipes[name] = {"stream": len(streams), "offset": len(raw), "length": len(data), **launches[name]}
            raw += data
        packed = lzma.compress(bytes(raw), format=lzma.FORMAT_XZ, preset=9 | lzma.PRESET_EXTREME)
        streams.append([len(blob), len(packed)])
        blob += packed
    (OUT / "recipes.xz").write_bytes(bytes(blob))
    # One recipe a line: a new Bridge release shows up in review as the recipes it added or changed.
    lines = [
        "{",
        '"format": 1,',
        f'"versions": {json.dumps(versions, sort_keys=True)},',
        f'"streams": {json.dumps(streams)},',
        '"recipes": {',
        ",\n".join(f"{json.dumps(n)}: {json.dumps(recipes[n], sort_keys=True)}" for n in names),
        "}}",
    ]
    (OUT / "index.json").write_text("\n".join(lines) + "\n", encoding="utf-8")
    print(f"{len(names)} recipes, {len(streams)} streams, {len(blob):,} bytes -> {OUT}")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    src = ap.add_mutually_exclusive_group(required=True)
    src.add_argument("--from-bridge", action="store_true")
    src.add_argument("--from-dumps", type=Path)
    ap.add_argument("--bridge-version")
    ap.add_argument("--core-version")
    a = ap.parse_args()
    if a.from_bridge:
        texts, versions = from_bridge()
        launches = {n: launch_from_name(n, t) for n, t in texts.items()}
    else:
        if not (a.bridge_version and a.core_version):
            ap.error("--from-dumps needs --bridge-version and --core-version (the versions that wrote them)")
        texts, manifest = from_dumps(a.from_dumps)
        versions = {"megatron-bridge": a.bridge_version, "megatron-core": a.core_version}
        launches = {}
        for name, text in texts.items():
            row = manifest.get(name)
            launches[name] = (
                {k: row[k] for k in ("world_size", "world_size_from", "gpu")} if row else launch_from_name(name, text)
            )
    if not texts:
        print("no recipes found", file=sys.stderr)
        return 1
    write_catalog(texts, versions, launches)
    return 0


if __name__ == "__main__":
    sys.exit(main())
