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


# The fields of a catalog recipe whose dumped value is the dumping machine's (the catalog was written on a
# CPU machine without Transformer Engine), not what Bridge builds on the target. ``built_text`` rewrites
# them in place, one line each, so the line numbers of the text stay those of the dump.
_GAF_NOTE = (
    "overlap-cli: as Bridge builds the recipe on the target, with Transformer Engine "
    "(GPTModelProvider's default_factory, gpt_provider.py:205); the CPU dump wrote false"
)
_SPEC_NOTE = (
    "overlap-cli: as Bridge builds the recipe on the target, with Transformer Engine "
    "(partial(get_gpt_decoder_block_spec, use_transformer_engine=HAVE_TE), deepseek_v3_bridge.py:57); the CPU dump wrote false"
)
_DDP_NOTE = (
    "overlap-cli: mixed precision writes true here at the runtime update; the dump's false (written before it) "
    "fails DistributedDataParallelConfig.__post_init__ when the file loads (distributed_data_parallel_config.py:254)"
)
_DECODER_BLOCK_SPEC = "megatron.core.models.gpt.gpt_layer_specs.get_gpt_decoder_block_spec"


def built_fields(data: dict, transformer_engine: bool) -> dict:
    """{path: (value as built on the target, note)} for the machine-dependent fields of a recipe dump."""
    from overlap_cli.frameworks.bridge import facts

    out: dict = {}
    model = data.get("model") if isinstance(data.get("model"), dict) else {}
    if transformer_engine:
        if model.get("gradient_accumulation_fusion") is False and facts.gaf_default_is_machine_dependent(model.get("_target_")):
            out[("model", "gradient_accumulation_fusion")] = (True, _GAF_NOTE)
        spec = model.get("transformer_layer_spec")
        if (isinstance(spec, dict) and spec.get("_target_") == _DECODER_BLOCK_SPEC and spec.get("_partial_") is True
                and spec.get("use_transformer_engine") is False):
            out[("model", "transformer_layer_spec", "use_transformer_engine")] = (True, _SPEC_NOTE)
    ddp = data.get("ddp") if isinstance(data.get("ddp"), dict) else {}
    mp = data.get("mixed_precision")
    if isinstance(mp, str):
        mp = facts.lookup_mp_recipe(mp)
    if (ddp.get("reuse_grad_buf_for_mxfp8_param_ag") is True and ddp.get("fp8_param_gather") is False
            and isinstance(mp, dict) and mp.get("fp8_param_gather") is True):
        out[("ddp", "fp8_param_gather")] = (True, _DDP_NOTE)
    return out


def built_text(name: str, transformer_engine: bool = True) -> str:
    """The recipe as Bridge builds it on a target with (or without) Transformer Engine: the dump's text with
    each field of ``built_fields`` rewritten on its own line and marked with a comment (KeyError if unknown)."""
    from overlap_cli.config.yamlnodes import parse_nodes

    raw = text(name)
    data, positions, _ = parse_nodes(raw, f"recipe {name}")
    changes = built_fields(data if isinstance(data, dict) else {}, transformer_engine)
    if not changes:
        return raw
    lines = raw.splitlines(keepends=True)
    for path, (value, note) in changes.items():
        line = positions[path][0] - 1
        head = lines[line].split(":", 1)[0]
        lines[line] = f"{head}: {str(value).lower()}  # {note}\n"
    return "".join(lines)
