"""The recipe catalog: every flat recipe of the Megatron-Bridge release this tool mirrors, as Bridge writes
it (``ConfigContainer.to_yaml()``), shipped as data in ``recipe_catalog/``.

``recipes.xz`` holds groups of recipe texts as independent xz streams; ``index.json`` says where each
recipe is (stream, offset and length in that stream's text), the launch it is tuned for (world size and
GPU, from Bridge's own recipe name) and the Bridge / Megatron-Core versions. Loading one recipe reads the
index and decompresses one group (~2 ms), never the whole catalog. ``tools/build_recipe_catalog.py``
regenerates both files from Bridge's code.
"""

from __future__ import annotations

import functools
import os

TYPE_CHECKING = False  # the typing module costs ~2.5 ms of start-up; annotations here are strings (PEP 563)
if TYPE_CHECKING:
    from typing import Optional

_FOLDER = os.path.join(os.path.dirname(os.path.abspath(__file__)), "recipe_catalog")


@functools.lru_cache(maxsize=1)
def index() -> dict:
    import json

    with open(os.path.join(_FOLDER, "index.json"), encoding="utf-8") as fh:
        return json.load(fh)


def versions() -> dict:
    """{"megatron-bridge": "0.6.2", "megatron-core": "0.19.2"}: the release the catalog was written from."""
    return dict(index()["versions"])


def names() -> list:
    return sorted(index()["recipes"])


def canonical(name: str) -> Optional[str]:
    """The catalog's name for ``name`` (Bridge's function name, with or without ``_config``), or None."""
    recipes = index()["recipes"]
    for candidate in (name, name + "_config"):
        if candidate in recipes:
            return candidate
    return None


def closest(name: str, n: int = 3) -> list:
    import difflib

    full = names()
    short = {r[: -len("_config")] if r.endswith("_config") else r: r for r in full}
    hits = difflib.get_close_matches(name, list(short), n=n, cutoff=0.6)
    return [short[h] for h in hits] or difflib.get_close_matches(name, full, n=n, cutoff=0.4)


def info(name: str) -> dict:
    """{"name", "world_size", "world_size_from", "gpu"} of a catalog recipe (KeyError if unknown)."""
    key = canonical(name)
    if key is None:
        raise KeyError(name)
    row = index()["recipes"][key]
    return {"name": key, "world_size": row["world_size"], "world_size_from": row["world_size_from"], "gpu": row["gpu"]}


@functools.lru_cache(maxsize=8)
def _stream(number: int) -> bytes:
    import lzma

    offset, length = index()["streams"][number]
    with open(os.path.join(_FOLDER, "recipes.xz"), "rb") as fh:
        fh.seek(offset)
        return lzma.decompress(fh.read(length))


def text(name: str) -> str:
    """The recipe's YAML exactly as Bridge wrote it (KeyError if unknown)."""
    key = canonical(name)
    if key is None:
        raise KeyError(name)
    row = index()["recipes"][key]
    raw = _stream(row["stream"])
    return raw[row["offset"] : row["offset"] + row["length"]].decode("utf-8")
