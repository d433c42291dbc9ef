"""A run as Bridge's entry points build it: a base config (a catalog recipe, or a full dump such as a
checkpoint's ``run_config.yaml``), then override files merged onto it in order, then dotlist overrides.

This mirrors ``process_config_with_overrides`` (megatron/bridge/training/utils/omegaconf_utils.py:105-160
of megatron-bridge 0.6.2): the recipe becomes a plain, non-struct OmegaConf dict; ``OmegaConf.merge``
lays the config file over it (mappings merge key by key, anything else -- a scalar, a list, null, a
mapping onto a non-mapping -- replaces what was there); Hydra overrides then apply in struct mode (a key
the merged config lacks needs ``+``); ``to_container(resolve=True)`` resolves ``${...}`` over the merged
tree; ``_apply_overrides`` (:453-515) writes the result back onto the dataclasses. That last step is where a
mapping can go wrong: a mapping is recursed into only where the recipe holds a dataclass; a mapping with
``_target_`` is instantiated; any other value is set as it is. So a ``comm_overlap:`` mapping written onto
a recipe whose ``comm_overlap`` is null becomes a plain ``dict`` and the launch fails
(``self.comm_overlap.data_parallel_size = ...``, training/config.py:1041). ``plain_dict_paths`` records
where that happens (rule CFG006).

The merged ``Config`` remembers, for every key, which layer wrote its value (``Config.layers``), so
provenance says ``recipe NAME``, ``FILE:LINE`` or ``command line``, and findings point at the line of the
override file when the value came from it.
"""

from __future__ import annotations

TYPE_CHECKING = False  # the typing module costs ~2.5 ms of start-up; annotations here are strings (PEP 563)
if TYPE_CHECKING:
    from typing import Optional

from overlap_cli.config.loader import DATACLASS_SECTIONS, refuse_target, refuse_targets_not_named
from overlap_cli.problems import InputError, InputProblem
from overlap_cli.config.document import Config, Layer
from overlap_cli.records import dataclass  # not dataclasses: start-up time (records.py)

RECIPE, BASE, FILE, COMMAND_LINE = "recipe", "base", "file", "command line"

@dataclass(frozen=True)
class Stack:
    """What lies under a checked file: a catalog recipe (``recipe``) or a full dump (``base``), then the
    override files ``lower`` in order; the checked file is the last (top) override file."""

    recipe: Optional[str] = None
    base: Optional[str] = None
    lower: tuple = ()
    recipe_layer: Optional[BaseLayer] = None  # the recipe's values, supplied by the framework

    @property
    def label(self) -> str:
        return f"recipe {self.recipe}" if self.recipe else str(self.base)


@dataclass(frozen=True)
class BaseLayer:
    """A base a framework supplies (config.layers knows no catalog): its label (``recipe NAME``), values,
    the positions of its keys in ``text`` (``overlap recipes show NAME``), and what it leaves unknown
    (path tuple -> reason; a recipe read from source)."""

    name: str
    data: dict
    positions: dict
    text: str
    unknown: tuple = ()


def _mapping(path: str, text: Optional[str]) -> tuple:
    """(data, positions, interpolation count, text) of one YAML file that must be a mapping."""
    from overlap_cli.config.safe_read import read_text
    from overlap_cli.config.yamlnodes import parse_nodes

    if text is None:
        text = read_text(path)
    data, positions, interpolations = parse_nodes(text, path)
    if data is None:
        data = {}  # OmegaConf.load of an empty file is an empty config: nothing to merge
    if not isinstance(data, dict):
        raise InputError(InputProblem(
            path, f"an override file must be a mapping of config sections, got a {type(data).__name__}", line=1, column=1
        ))
    return data, positions, interpolations, text


def load_layered(
    path: Optional[str], stack: Stack, overrides: Optional[list] = None, text: Optional[str] = None, shape=None
) -> Config:
    """The merged config of ``stack`` + the override file ``path`` (its ``text`` when given) + ``overrides``
    (parsed dotlists). ``path`` None: the base alone (plus dotlists). The Config's ``file``, ``text`` and
    ``positions`` are those of the top file -- the one a fix edits -- or the base's when there is none.
    ``shape``: the config the framework builds around the files, for the dotlists (config.overrides)."""
    import copy

    layers: list = []
    owner: dict = {}  # path tuple -> index in layers of the layer that wrote the value there
    interpolations = 0
    if stack.recipe is not None:
        rl = stack.recipe_layer
        name, recipe_data, positions, recipe_text = rl.name, rl.data, rl.positions, rl.text
        data = copy.deepcopy(recipe_data)
        base_data = recipe_data
        layers.append(Layer(RECIPE, f"recipe {name}", None, positions))
        # Checked alone, the recipe is the top layer: findings get its lines (``overlap recipes show``).
        # A copy: a ``~key`` dotlist drops positions from the top file's, and these are the cached ones.
        top_file, top_text, top_positions = f"recipe {name}", recipe_text, dict(positions)
    else:
        data, positions, interpolations, base_text = _mapping(stack.base, text if path is None else None)
        base_data = copy.deepcopy(data) if any(ov.op == "delete" for ov in overrides or ()) else None
        layers.append(Layer(BASE, stack.base, stack.base, positions, copy.deepcopy(data)))
        top_file, top_text, top_positions = stack.base, base_text, positions
    own_keys(data, (), 0, owner)
    base_dataclasses = {k for k in DATACLASS_SECTIONS if isinstance(data.get(k), dict)}
    lower_data = None
    merged_into: set = set()  # mappings merged into the one below, not replaced (the recipe's unknowns stay)
    files = list(stack.lower) + ([path] if path is not None else [])
    for i, f in enumerate(files):
        is_top = i == len(files) - 1
        if is_top:
            lower_data = copy.deepcopy(data)
        fdata, fpositions, n, ftext = _mapping(f, text if is_top else None)
        interpolations += n
        layers.append(Layer(FILE, f, f, fpositions))
        _merge(data, fdata, (), len(layers) - 1, owner, merged_into)
        top_file, top_text, top_positions = f, ftext, fpositions
    cfg = Config(file=top_file, data=data, positions=top_positions, text=top_text)
    cfg.layer_list, cfg.layers, cfg.top = layers, owner, len(layers) - 1
    if lower_data is None and overrides and stack.recipe_layer is not None:
        lower_data = copy.deepcopy(data)  # a dotlist over a recipe alone: the words are the user's own layer
    cfg.lower_data = lower_data
    started: set = set()
    if overrides:
        from overlap_cli.config.overrides import apply_overrides

        if stack.recipe_layer is not None and stack.recipe_layer.unknown:
            cfg.unknown = dict(stack.recipe_layer.unknown)  # the dotlist may write under it (overrides._under_unknown)

        layers.append(Layer(COMMAND_LINE, COMMAND_LINE, None, {}))
        started = {p for ov in overrides if ov.op != "delete" for p in _started(cfg.data, ov.path)}
        merged = apply_overrides(cfg, overrides, stack.label if not files else "the merged config", shape)
        for p in started:  # a mapping the dotlist started (+comm_overlap.KEY=... onto null) is the command line's
            owner[p] = len(layers) - 1
        for i, ov in enumerate(overrides):
            if merged[i]:  # a mapping merged into one already there: only the keys it names are the command line's
                own_keys(ov.value, ov.path, len(layers) - 1, owner)
                merged_into.add(ov.path)
                continue
            _drop(owner, ov.path)
            _drop_paths(merged_into, ov.path)
            if ov.op != "delete":
                own_keys(ov.value, ov.path, len(layers) - 1, owner)
                owner[ov.path] = len(layers) - 1
            elif not any(_related(ov.path, later.path) for later in overrides[i + 1:]):
                _keep_base_value(cfg, base_data, ov.path, owner)
    # Decided against the base, after the files and dotlists (a dotlist can start such a mapping too:
    # +comm_overlap.KEY=... onto a null section; a file's null then mapping still meets the recipe's dataclass).
    cfg.plain_dict_paths = _plain_dict_sections(cfg.data, base_dataclasses)
    cfg.reinstantiated_paths = _reinstantiated_sections(cfg, base_dataclasses)
    if stack.recipe_layer is not None and stack.recipe_layer.unknown:
        # What the recipe leaves unknown stays so unless a file or the command line wrote that very key
        # (a value written under it is known by being there: Config.unknown).
        # A mapping a dotlist only started, to write one key under it, stays unknown around that key; so does
        # one an override file merged keys into: OmegaConf.merge (omegaconf_utils.py:148) and _apply_overrides
        # (omegaconf_utils.py:454) set those keys on the recipe's own object and keep its other fields,
        # as the same keys given as dotlist words do.
        cfg.unknown = {p: why for p, why in stack.recipe_layer.unknown
                       if owner.get(p, 0) == 0 or p in started or p in merged_into}
    from overlap_cli.config.loader import finish

    return finish(cfg, interpolations, overrides)


def _plain_dict_sections(data: dict, base_dataclasses: set) -> set:
    """The sections ``_apply_overrides`` sets as plain dicts: a mapping without ``_target_`` in the final
    config where the base's ConfigContainer holds no dataclass to recurse into (omegaconf_utils.py:476-491
    looks at the recipe's own attribute, not at the merged layers)."""
    return {(k,) for k in DATACLASS_SECTIONS
            if isinstance(data.get(k), dict) and "_target_" not in data[k] and k not in base_dataclasses}


def _reinstantiated_sections(cfg: Config, base_dataclasses: set) -> set:
    """The sections ``_apply_overrides`` instantiates again from the merged dict (omegaconf_utils.py:478-486:
    a mapping with ``_target_`` is instantiated, even where the recipe holds the dataclass), because an
    override file or a dotlist wrote that ``_target_``. The dict came from the recipe's dataclasses
    (``_dataclass_to_omegaconf_dict`` writes no ``_target_``), so every mapping below it that the recipe
    wrote is a plain dict in the new instance: its ``_target_`` is dropped here, as Bridge has it (a
    ``tp_comm_overlap_cfg`` then fails ``asdict()``, UB603)."""
    out = set()
    for name in DATACLASS_SECTIONS:
        section = cfg.data.get(name)
        if not (isinstance(section, dict) and "_target_" in section and name in base_dataclasses):
            continue
        layer = cfg.layer_of((name, "_target_"))
        if layer is None or layer.kind in (RECIPE, BASE):
            continue
        out.add((name,))
        _drop_base_targets(cfg, section, (name,))
    return out


def _drop_base_targets(cfg: Config, node: dict, path: tuple) -> None:
    for key, value in node.items():
        if isinstance(value, dict):
            p = path + (key,)
            layer = cfg.layer_of(p + ("_target_",)) if "_target_" in value else None
            if layer is not None and layer.kind in (RECIPE, BASE):
                del value["_target_"]
            _drop_base_targets(cfg, value, p)


def _started(data: dict, path: tuple) -> list:
    """The ancestors of ``path`` that are no mapping in ``data`` yet (a dotlist there creates them)."""
    out, node = [], data
    for i, part in enumerate(path[:-1]):
        node = node.get(part) if isinstance(node, dict) else None
        if not isinstance(node, dict):
            out.append(path[: i + 1])
    return out


def _related(a: tuple, b: tuple) -> bool:
    n = min(len(a), len(b))
    return a[:n] == b[:n]


def _keep_base_value(cfg: Config, base_data: Optional[dict], path: tuple, owner: dict) -> None:
    """``~key``: Hydra deletes the key from the merged config, so the dict ``_apply_overrides`` walks has no
    entry there and the dataclass keeps the value the base (the recipe's ConfigContainer) was built with
    (omegaconf_utils.py:468-515 sets only the keys it is given): the base's value, not the lower files'.
    Only a dataclass keeps it: a key under a plain dict field (``env_vars``; a dump writes no ``_target_``
    there) goes with the whole dict, which ``_apply_overrides`` sets as it is (omegaconf_utils.py:491-512)."""
    import copy

    node = base_data
    for i, part in enumerate(path):
        if not isinstance(node, dict) or part not in node:
            return  # the base has nothing there (a key the files added): it is gone
        if i and "_target_" not in node:
            return  # a plain dict in the base: set whole, without the deleted key
        node = node[part]
    parent = cfg.data
    for part in path[:-1]:
        parent = parent.get(part) if isinstance(parent, dict) else None
    if not isinstance(parent, dict):
        return
    parent[path[-1]] = copy.deepcopy(node)
    own_keys(parent[path[-1]], path, 0, owner)


def own_keys(value, path: tuple, index: int, owner: dict, cfg: Optional[Config] = None) -> None:
    """``owner[path]`` = ``index`` for every key of ``value`` at and under ``path`` (``Config.layers``: the
    layer that wrote each key). With ``cfg``, the same walk refuses a ``_target_`` that is no class path
    (loader.refuse_target), as the loader's own walk does."""
    if path:
        owner[path] = index
    if not isinstance(value, dict):
        if cfg is not None:
            refuse_targets_not_named(cfg, value, path)
        return
    todo = [(value, path)]
    while todo:  # depth first, in the mapping's order
        node, at = todo.pop()
        if cfg is not None:
            refuse_target(cfg, node, at)
        inner = []
        for k, v in node.items():
            p = at + (k,)
            owner[p] = index
            if isinstance(v, dict):
                inner.append((v, p))
            elif cfg is not None and isinstance(v, list):
                refuse_targets_not_named(cfg, v, p)
        todo.extend(reversed(inner))


def _drop(owner: dict, path: tuple) -> None:
    n = len(path)
    for p in [p for p in owner if p[:n] == path]:
        del owner[p]


def _drop_paths(paths: set, path: tuple) -> None:
    n = len(path)
    paths.difference_update([p for p in paths if p[:n] == path])


def _merge(dst: dict, src: dict, path: tuple, index: int, owner: dict, merged: set) -> None:
    """OmegaConf.merge of ``src`` onto ``dst`` (both plain dicts; ``dst`` changes). ``merged`` gets the
    paths where a mapping of ``src`` was merged into one of ``dst`` (or written where ``dst`` holds none)
    and loses those ``src`` replaced; it decides only what stays of the recipe's unknowns."""
    for key, value in src.items():
        p = path + (key,)
        old = dst.get(key)
        if isinstance(value, dict) and isinstance(old, dict):
            owner[p] = index
            merged.add(p)
            _merge(old, value, p, index, owner, merged)
            continue
        _drop(owner, p)
        _drop_paths(merged, p)
        if isinstance(value, dict) and old is None:
            # Onto nothing the catalog holds: where the recipe leaves that key unknown, its real value is an
            # object the mapping merges into, as a dotlist word starting the mapping (``started``) is.
            merged.add(p)
        dst[key] = value
        own_keys(value, p, index, owner)
