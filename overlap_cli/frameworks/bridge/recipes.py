"""The recipe catalogs: every flat recipe of each Megatron-Bridge release this tool mirrors, as that release
writes it (``ConfigContainer.to_yaml()``), shipped as data in ``recipe_catalog/RELEASE/`` (``0.4.2``, ``0.5.1``,
``0.6.0``, ``0.6.2``, ``main``), each built by ``tools/build_recipe_catalog.py`` from that release's own code.

Every function takes the release first, as its version string (``release_of(target)`` gives the one a
target names): the catalog of that release is the only one consulted, so a name the release does not have
is an unknown recipe of that release, never another release's recipe, and a release without a catalog is an
input error.

In each folder, ``recipes.xz`` holds groups of recipe texts as independent xz streams; ``index.json`` says
where each recipe is (stream, offset and length in that stream's text), the launch it is tuned for (world
size and GPU, from Bridge's own recipe name), the Bridge / Megatron-Core versions and the number of recipes
Bridge built offline (``built``). Loading one recipe reads the index and decompresses one group (~2 ms),
never the whole catalog. ``values.xz`` holds the same recipes as values, for the readers that need no line
numbers (the Python reader): a base recipe's values plus the recipe's changes, read without PyYAML.
``helpers.json.xz`` is the helper code of that release's recipe modules the Python reader follows,
``config_fields.json.xz`` the fields of its config classes, ``unknown.json.xz`` what the entries read from
source leave unknown.
"""

from __future__ import annotations

import functools
import os

TYPE_CHECKING = False  # the typing module costs ~2.5 ms of start-up; annotations here are strings (PEP 563)
if TYPE_CHECKING:
    from typing import Optional

_CATALOGS = os.path.join(os.path.dirname(os.path.abspath(__file__)), "recipe_catalog")


def release_of(target) -> str:
    """The release whose catalog serves ``target`` (frameworks.bridge.releases.of: the one it names, else the
    newest), as the version string every function here takes."""
    from overlap_cli.frameworks.bridge import releases

    return releases.of(target).BRIDGE_VERSION


def held() -> list:
    """The releases a catalog is shipped for."""
    return sorted(n for n in os.listdir(_CATALOGS) if os.path.isfile(os.path.join(_CATALOGS, n, "index.json")))


@functools.lru_cache(maxsize=None)
def _folder(release: str) -> str:
    folder = os.path.join(_CATALOGS, release) if isinstance(release, str) and "/" not in release else ""
    if not os.path.isfile(os.path.join(folder, "index.json")):
        from overlap_cli.problems import InputError, InputProblem

        raise InputError(InputProblem(
            "<target>", f"overlap-cli holds no recipe catalog for Megatron-Bridge {release} "
            f"(it holds {', '.join(held())}); another release's recipes would be a guess", key="bridge_version"))
    return folder


def _path(release: str, name: str) -> str:
    return os.path.join(_folder(release), name)


@functools.lru_cache(maxsize=None)
def index(release: str) -> dict:
    import json

    with open(_path(release, "index.json"), encoding="utf-8") as fh:
        return json.load(fh)


def versions(release: str) -> dict:
    """{"megatron-bridge": "0.6.2", "megatron-core": "0.19.2"}: the release the catalog was written from."""
    return dict(index(release)["versions"])


def names(release: str) -> list:
    """The recipes (Bridge's recipe functions); the base helpers the catalog also holds are not listed."""
    return sorted(n for n, row in index(release)["recipes"].items() if row.get("how") != "helper")


def aliases(release: str) -> dict:
    """Bridge's public alias -> the recipe function it names (``llama3_8b_pretrain_config`` ->
    ``llama3_8b_pretrain_2gpu_h100_bf16_config``): the compatibility names its recipe modules import
    under another name (megatron/bridge/recipes/llama/llama3.py and the like)."""
    return dict(index(release).get("aliases", {}))


def canonical(release: str, name: str, module: Optional[str] = None) -> Optional[str]:
    """The catalog's name for ``name`` (Bridge's function name or a public alias, with or without
    ``_config``), or None. ``module``: the Bridge module ``name`` is imported from, where that module binds
    it to another recipe than the name means on its own (index.json ``bindings``: Bridge 0.6.2 has ten
    performance recipes named like a library recipe, and perf_recipes/nemotronh/common.py imports the
    16-GPU Nemotron 3 Super recipe as the name recipes/nemotronh/nemotron_3_super.py gives the 64-GPU one)."""
    idx = index(release)
    recipes = idx["recipes"]
    alias = idx.get("aliases", {})
    if module is not None:
        bound = idx.get("bindings", {}).get(module, {}).get(name)
        if bound is not None:
            return bound
    for candidate in (name, name + "_config"):
        if candidate in recipes:
            return candidate
        if candidate in alias:
            return alias[candidate]
    return None


def _key(release: str, name: str) -> str:
    key = canonical(release, name)
    if key is None:
        raise KeyError(name)
    return key


def closest(release: str, name: str, n: int = 3) -> list:
    """The nearest names of the release, aliases shown with the function they name (``alias (-> function)``)."""
    import difflib

    alias = aliases(release)
    full = names(release) + sorted(alias)
    short = {r[: -len("_config")] if r.endswith("_config") else r: r for r in full}
    hits = [short[h] for h in difflib.get_close_matches(name, list(short), n=n, cutoff=0.6)]
    hits = hits or difflib.get_close_matches(name, names(release), n=n, cutoff=0.4)
    return [f"{h} (-> {alias[h]})" if h in alias else h for h in hits]


def how(release: str, name: str) -> str:
    """How the catalog entry was obtained: ``built`` (Bridge's recipe function called, its
    ``ConfigContainer.to_yaml()``), ``source`` (read from Bridge's recipe source by the Python reader) or
    ``helper`` (a base helper such as ``_pretrain_common()``, called at build time: a start, not a recipe)."""
    return index(release)["recipes"][_key(release, name)].get("how", "built")


@functools.lru_cache(maxsize=8)
def _value_text(release: str, number: int) -> bytes:
    import lzma

    offset, length = index(release)["values"]["streams"][number]
    with open(_path(release, "values.xz"), "rb") as fh:
        fh.seek(offset)
        return lzma.decompress(fh.read(length))


@functools.lru_cache(maxsize=8)
def _value_group(release: str, number: int) -> dict:
    import json

    return json.loads(_value_text(release, number))


def _values(release: str, key: str):
    """The recipe's values from ``values.xz`` -- its base recipe's values with its changes applied --, equal
    to what reading its text gives (tests/frameworks/bridge hold every entry to that); None when the
    catalog has no values for it."""
    import json

    from overlap_cli.config.yamlnodes import copy_values

    stream = index(release)["recipes"][key].get("values")
    if stream is None:
        return None
    base, changes = _value_group(release, stream)[key]
    value = json.loads(_value_text(release, base))  # a fresh copy: reading the text again is faster than copying
    for path, new in changes:
        if not path:
            return copy_values(new)
        where = value
        for step in path[:-1]:
            where = where[step]
        where[path[-1]] = copy_values(new)
    return value


@functools.lru_cache(maxsize=8)
def _data(release: str, key: str) -> tuple:
    data = _values(release, key)
    if data is None:
        from overlap_cli.config.yamlnodes import parse_nodes

        data, _positions, _n = parse_nodes(text(release, key), f"recipe {key}")
    unknown = {tuple(p.split(".")): reason for p, reason in _compressed_json(release, "unknown.json.xz").get(key, [])}
    return data, unknown


@functools.lru_cache(maxsize=None)
def _compressed_json(release: str, name: str) -> dict:
    """One of the catalog's xz-compressed JSON files ({} when the release's catalog has none)."""
    import json
    import lzma

    path = _path(release, name)
    if not os.path.exists(path):
        return {}
    with open(path, "rb") as fh:
        return json.loads(lzma.decompress(fh.read()))


def config_fields(release: str, target) -> frozenset:
    """The field names of the dataclass a ``_target_`` names in ``release`` (empty if it names none the
    catalog holds): what ``create_omegaconf_dict_config`` writes into the config a dotlist meets
    (omegaconf_utils.py:195-290), also the fields a dump leaves out (``to_cfg_dict``) or a recipe read from
    source does not hold. Written by tools/build_config_fields.py from that release's classes."""
    if not isinstance(target, str):
        return frozenset()
    return frozenset(_compressed_json(release, "config_fields.json.xz").get("fields", {}).get(target, ()))


def data(release: str, name: str) -> tuple:
    """(values, unknown) of a catalog recipe: the values as Bridge's dump (or the source reading) holds
    them -- a fresh copy -- and, for an entry read from source, path tuple -> why it is unknown."""
    from overlap_cli.config.yamlnodes import copy_values

    values, unknown = _data(release, _key(release, name))
    return copy_values(values), dict(unknown)


def shared_data(release: str, name: str) -> tuple:
    """``data`` without the copy: the catalog's own (values, unknown), shared by every caller -- read only.
    A reader that writes copies first (the Python reader keeps these as the run's base, unchanged)."""
    return _data(release, _key(release, name))


def unknown(release: str, name: str) -> dict:
    return dict(_data(release, _key(release, name))[1])


def info(release: str, name: str) -> dict:
    """{"name", "world_size", "world_size_from", "gpu"} of a catalog recipe (KeyError if unknown)."""
    key = _key(release, name)
    row = index(release)["recipes"][key]
    return {"name": key, "world_size": row["world_size"], "world_size_from": row["world_size_from"], "gpu": row["gpu"]}


@functools.lru_cache(maxsize=8)
def _stream(release: str, number: int) -> bytes:
    import lzma

    offset, length = index(release)["streams"][number]
    with open(_path(release, "recipes.xz"), "rb") as fh:
        fh.seek(offset)
        return lzma.decompress(fh.read(length))


def text(release: str, name: str) -> str:
    """The recipe's YAML exactly as Bridge wrote it (KeyError if unknown)."""
    key = _key(release, name)
    row = index(release)["recipes"][key]
    raw = _stream(release, row["stream"])
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


def built_fields(release: str, data: dict, transformer_engine: bool) -> dict:
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
        from overlap_cli.frameworks.bridge import releases

        mp = facts.lookup_mp_recipe(mp, releases.BRIDGE.get(release))
    if (ddp.get("reuse_grad_buf_for_mxfp8_param_ag") is True and ddp.get("fp8_param_gather") is False
            and isinstance(mp, dict) and mp.get("fp8_param_gather") is True):
        out[("ddp", "fp8_param_gather")] = (True, _DDP_NOTE)
    return out


def built_text(release: str, name: str, transformer_engine: bool = True) -> str:
    """The recipe as Bridge builds it on a target with (or without) Transformer Engine: the dump's text with
    each field of ``built_fields`` rewritten on its own line and marked with a comment (KeyError if unknown)."""
    from overlap_cli.config.yamlnodes import parse_nodes

    raw = text(release, name)
    data, positions, _ = parse_nodes(raw, f"recipe {name}")
    changes = built_fields(release, data if isinstance(data, dict) else {}, transformer_engine)
    if not changes:
        return raw
    lines = raw.splitlines(keepends=True)
    for path, (value, note) in changes.items():
        line = positions[path][0] - 1
        head = lines[line].split(":", 1)[0]
        lines[line] = f"{head}: {str(value).lower()}  # {note}\n"
    return "".join(lines)


def helper_source(release: str, module: str) -> Optional[str]:
    """The part of a Bridge module the Python reader follows (the helpers the release's recipes call, read
    from its source when the catalog was built: tools/build_recipe_catalog.py), or None."""
    return _compressed_json(release, "helpers.json.xz").get("modules", {}).get(module)
