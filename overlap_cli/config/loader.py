"""Load a training config: bytes -> YAML nodes -> plain values with the position of every key, then
dotlist overrides and ``${...}`` interpolations, in the order Bridge applies them.

Reading bytes safely is ``safe_read``; YAML with Bridge's (OmegaConf's) value semantics is ``yamlnodes``;
``${...}`` interpolations are ``interpolation`` (imported only when a config has one); dotlist
overrides are ``overrides``. The result is a ``document.Config``.

The round-trip parser (ruamel.yaml) is used where the text must be written back: ``fix`` and
``report.annotate``. Both parsers report the same line/column for a key; checking needs only one parse.
"""

from __future__ import annotations

TYPE_CHECKING = False  # the typing module costs ~2.5 ms of start-up; annotations here are strings (PEP 563)
if TYPE_CHECKING:
    from typing import Optional

from overlap_cli.problems import InputError, InputProblem
from overlap_cli.config.document import Config
from overlap_cli.config.safe_read import read_text
from overlap_cli.config.yamlnodes import has_interpolation, parse_nodes

# OmegaConf parses each ${...} with its ANTLR grammar (~0.4 ms apiece on the benchmark machine).
MAX_INTERPOLATIONS = 1000


# Top-level ConfigContainer fields typed as a dataclass that a recipe may leave null or give as a
# recipe name (megatron/bridge/training/config.py: ``comm_overlap: Optional[CommOverlapConfig]``,
# ``mixed_precision: Optional[Union[MixedPrecisionConfig, str]]``), with the class ``_target_`` that makes
# ``_apply_overrides`` instantiate a mapping written there, and the line of config.py that fails on a
# plain dict.
DATACLASS_SECTIONS = {
    "comm_overlap": ("megatron.bridge.training.comm_overlap.CommOverlapConfig", "training/config.py:1041"),
    "mixed_precision": ("megatron.bridge.training.mixed_precision.MixedPrecisionConfig", "training/config.py:1876"),
}


def load_config(path: str, overrides: Optional[list] = None, text: Optional[str] = None, shape=None) -> Config:
    """``shape``: the config the framework builds around the file, for the dotlist ``overrides``
    (config.overrides.StructShape; None: the file alone)."""
    if text is None:
        text = read_text(path)
    data, positions, interpolations = parse_nodes(text, path)
    if data is None:
        raise InputError(InputProblem(path, "empty document, expected a mapping of config sections"))
    if not isinstance(data, dict):
        raise InputError(
            InputProblem(path, f"top level is a {type(data).__name__}, expected a mapping of config sections", line=1, column=1)
        )
    cfg = Config(file=path, data=data, positions=positions, text=text)
    # A file with a top-level ``_target_`` is what ``ConfigContainer.from_yaml`` loads
    # (megatron/training/config/container.py:92-121 asserts the key, container.py:67): ``instantiate`` builds
    # only mappings that name their class, so a dataclass section written without ``_target_`` stays a dict.
    whole = "_target_" in data
    if whole:
        built = {k for k in DATACLASS_SECTIONS if isinstance(data.get(k), dict) and "_target_" in data[k]}
    if overrides:
        import copy

        from overlap_cli.config.overrides import apply_overrides

        loaded = (copy.deepcopy(data), dict(positions)) if any(ov.op == "delete" for ov in overrides) else None
        apply_overrides(cfg, overrides, shape=shape)
        if loaded is not None:
            _keep_loaded_values(cfg, overrides, *loaded)
    if whole:
        cfg.plain_dict_paths = {(k,) for k in DATACLASS_SECTIONS
                                if isinstance(cfg.data.get(k), dict) and "_target_" not in cfg.data[k] and k not in built}
    return finish(cfg, interpolations, overrides)


def refuse_target(cfg: Config, node: dict, path: tuple) -> None:
    """A ``_target_`` that is not a class path (a list, a mapping, a number): ``instantiate`` raises
    "Expected a callable target" (megatron/training/config/instantiate_utils.py:525), so the run never
    starts — one input error naming the key, as for any other value Bridge refuses."""
    target = node.get("_target_")
    if target is not None and not isinstance(target, str):
        refuse_bad_target(cfg, path + ("_target_",), target)


def refuse_bad_target(cfg: Config, key: tuple, target) -> None:
    """The input error of ``refuse_target`` for the ``_target_`` at ``key`` (its value ``target``)."""
    line, col = cfg.positions.get(key, (None, None))
    raise InputError(InputProblem(cfg.file, f"_target_ is a {type(target).__name__}, expected the class path "
                                  "instantiate imports (megatron/training/config/instantiate_utils.py:525)",
                                  key=".".join(map(str, key)), line=line, column=col))


def bad_target(node, path: tuple) -> Optional[tuple]:
    """The path of the first ``_target_`` at or under ``node`` (lists included) that is no class path, depth
    first in the file's order, or None."""
    todo = [(node, path)]
    while todo:
        node, path = todo.pop()
        if isinstance(node, dict):
            target = node.get("_target_")
            if target is not None and not isinstance(target, str):
                return path + ("_target_",)
            inner = [(v, path + (k,)) for k, v in node.items() if isinstance(v, (dict, list))]
        elif isinstance(node, list):
            inner = [(v, path + (i,)) for i, v in enumerate(node) if isinstance(v, (dict, list))]
        else:
            continue
        todo.extend(reversed(inner))
    return None


def refuse_targets_not_named(cfg: Config, node, path: tuple) -> None:
    """``refuse_target`` for every mapping at and under ``node``: the first such key is the one named."""
    key = bad_target(node, path)
    if key is not None:
        value = node
        for part in key[len(path):]:
            value = value[part]
        refuse_bad_target(cfg, key, value)


def _keep_loaded_values(cfg: Config, overrides: list, data: dict, positions: dict) -> None:
    """``~key`` on a file Bridge loads whole: ``ConfigContainer.from_yaml`` built the dataclasses from the
    file, Hydra then deletes the key from the dict config, and ``_apply_overrides`` sets only the keys it is
    given (megatron/bridge/training/utils/omegaconf_utils.py:468-515): the field keeps the file's value."""
    import copy

    for i, ov in enumerate(overrides):
        if ov.op != "delete" or any(_related(ov.path, later.path) for later in overrides[i + 1:]):
            continue
        node, parent = data, cfg.data
        for part in ov.path[:-1]:
            node = node.get(part) if isinstance(node, dict) else None
            parent = parent.get(part) if isinstance(parent, dict) else None
        if not (isinstance(node, dict) and ov.path[-1] in node and isinstance(parent, dict)):
            continue
        parent[ov.path[-1]] = copy.deepcopy(node[ov.path[-1]])
        cfg.positions.update({p: v for p, v in positions.items() if p[: len(ov.path)] == ov.path})
        cfg.override_paths.discard(ov.path)


def _related(a: tuple, b: tuple) -> bool:
    n = min(len(a), len(b))
    return a[:n] == b[:n]


def finish(cfg: Config, interpolations: int, overrides: Optional[list] = None, targets_refused: bool = False) -> Config:
    """The steps after the data is complete (one file, or a merged run): ``${...}`` resolved over it,
    as OmegaConf's ``to_container(resolve=True)`` does. ``targets_refused``: the caller's own walk over the
    data already refused a ``_target_`` that is no class path (python_load's ownership walk)."""
    if overrides:
        interpolations += sum(1 for ov in overrides if has_interpolation(ov.value))
    if interpolations > MAX_INTERPOLATIONS:
        raise InputError(InputProblem(cfg.file, f"more than {MAX_INTERPOLATIONS} ${{...}} interpolations; refusing to resolve them"))
    if interpolations:  # most configs have none: no second walk over the data, no omegaconf import
        from overlap_cli.config.interpolation import resolve_interpolations

        resolve_interpolations(cfg)
    if not targets_refused:
        refuse_targets_not_named(cfg, cfg.data, ())
    model = cfg.data.get("model")
    if isinstance(model, dict) and "transformer" in model and not cfg.layered:
        from overlap_cli.config.model_form import lift

        lift(cfg)
    return cfg
