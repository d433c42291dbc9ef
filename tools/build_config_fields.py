"""Write the field names of every config class a catalog recipe holds (``config_fields.json.xz``).

    python tools/build_config_fields.py [--release R]  # with the Python of release R's megatron-bridge

A dotlist override of a key the recipe's values lack is refused by Bridge only when the key is no field of
the dataclass there: ``create_omegaconf_dict_config`` (omegaconf_utils.py:195-290) writes every dataclass
field into the config the overrides meet, also those ``to_yaml()`` leaves out (``to_cfg_dict`` skips
``GPTDatasetConfig.sequence_length``, config.py:287-296, and ``MambaModelProvider.mamba_stack_spec``,
mamba_provider.py:47-55) and those an entry read from Bridge's source does not hold (a ``CheckpointConfig(...)``
written with a few keywords). The classes are every ``_target_`` in the catalog, at any depth, that names a
dataclass; each maps to its ``dataclasses.fields`` names in order.
"""

from __future__ import annotations

import dataclasses
import importlib
import json
import lzma
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
CATALOGS = ROOT / "overlap_cli" / "frameworks" / "bridge" / "recipe_catalog"


def _targets(value, out: set) -> None:
    if isinstance(value, dict):
        target = value.get("_target_")
        if isinstance(target, str) and not value.get("_partial_") and not value.get("_call_"):
            out.add(target)
        for v in value.values():
            _targets(v, out)
    elif isinstance(value, list):
        for v in value:
            _targets(v, out)


def _resolve(target: str):
    parts = target.split(".")
    for i in range(len(parts) - 1, 0, -1):
        try:
            obj = importlib.import_module(".".join(parts[:i]))
        except Exception:
            continue
        try:
            for attr in parts[i:]:
                obj = getattr(obj, attr)
        except AttributeError:
            return None
        return obj
    return None


def main() -> int:
    import argparse
    from importlib import metadata

    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--release", help="the catalog folder (recipe_catalog/RELEASE) whose recipes name the classes; "
                    "default: the installed megatron-bridge version (Bridge main ahead on sys.path: main)")
    release = ap.parse_args().release or metadata.version("megatron-bridge")
    out = CATALOGS / release / "config_fields.json.xz"
    from build_recipe_catalog import stand_in_tensorboard  # tools/ is this script's folder: first on sys.path

    stand_in_tensorboard()  # recipes' imports reach TensorBoard through the training state; its writer is never used here
    sys.path.insert(0, str(ROOT))
    from overlap_cli.frameworks.bridge import recipes

    targets: set = set()
    for name in recipes.index(release)["recipes"]:
        _targets(recipes.data(release, name)[0], targets)
    fields, skipped = {}, []
    for target in sorted(targets):
        cls = _resolve(target)
        if isinstance(cls, type) and dataclasses.is_dataclass(cls):
            fields[target] = [f.name for f in dataclasses.fields(cls)]
        else:
            skipped.append(target)
    versions = {"megatron-bridge": release, "megatron-core": metadata.version("megatron-core")}
    blob = json.dumps({"versions": versions, "fields": fields}, sort_keys=True).encode("utf-8")
    out.write_bytes(lzma.compress(blob, preset=9 | lzma.PRESET_EXTREME))
    print(f"{len(fields)} dataclasses, {sum(map(len, fields.values()))} fields -> {out} ({out.stat().st_size:,} bytes); "
          f"not a dataclass here: {len(skipped)}")
    for target in skipped:
        print(f"  {target}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
