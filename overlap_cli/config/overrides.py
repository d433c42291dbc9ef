"""Hydra-style dotlist overrides (``key=value``, ``+key=value``, ``++key=value``, ``~key``): what Bridge's
training scripts accept on the command line, applied to a loaded config before interpolation.

Values parse as YAML scalars or flow collections with the same loader as the file (Hydra's ``{A:1}``
without a space is a mapping too).
"""

from __future__ import annotations

import re

TYPE_CHECKING = False  # the typing module costs ~2.5 ms of start-up; annotations here are strings (PEP 563)
if TYPE_CHECKING:
    from typing import Any, Optional

from overlap_cli import lazyre
from overlap_cli.problems import InputError, InputProblem
from overlap_cli.config.document import Config
from overlap_cli.config.yamlnodes import MAX_DEPTH, Builder, dotted, loader_class, pyyaml
from overlap_cli.records import dataclass  # not dataclasses: start-up time (records.py)

_FLOW_COLON = lazyre.compile(r":(?=[^\s/])")


def _no_field(section: str, name: str) -> bool:
    return False


def _no_fields(target: Any) -> frozenset:
    return frozenset()


def _never(path: tuple) -> bool:
    return False


@dataclass(frozen=True)
class StructShape:
    """The config a framework builds before it hands it to Hydra: what is there that the file may not say.
    Hydra's struct mode refuses a key the config lacks, so applying a dotlist needs it; the framework fills
    it in (frameworks.bridge.dotlist_shape for Bridge's ConfigContainer). The default: the file alone.

    ``always_present``: top-level sections built whatever the file says; ``optional``: sections that are null
    unless set; ``known_field(section, name)``: a field of a section's class; ``field_default(section, name)``:
    that field's class default (called only for a known field); ``dataclass_fields(target)``: the fields of
    the class a mapping's ``_target_`` names; ``dropped(path)``: a key the framework drops when it loads a file
    (a field of another release), absent from the struct config whatever the file says."""

    always_present: frozenset = frozenset()
    optional: frozenset = frozenset()
    known_field: Any = _no_field
    field_default: Any = None
    dataclass_fields: Any = _no_fields
    dropped: Any = _never


FILE_ONLY = StructShape()


def parse_override_value(text: str) -> Any:
    """Values parse as YAML scalars or flow collections, Hydra style (``{A:1}`` is a mapping)."""
    yaml = pyyaml()

    src = text
    if src.startswith(("{", "[")):
        src = _FLOW_COLON.sub(": ", src)
    if src == "":
        return ""
    loader = loader_class()(src)
    try:
        node = loader.get_single_node()
        if node is None:
            return None
        return Builder(loader, "<override>", {}).build(node, ())
    except (yaml.YAMLError, InputError):
        return text
    finally:
        loader.dispose()


@dataclass
class Override:
    raw: str
    op: str  # "set" | "add" | "force" | "delete"
    path: tuple
    value: Any = None
    has_value: bool = True


def is_override(arg: str) -> bool:
    """Whether a command-line word is meant as a dotlist (``~key``, or ``KEY=...`` with a key of dotlist
    characters). A malformed one (``model.=1``, ``a..b=2``) counts too: ``parse_override`` says what is wrong
    with it, rather than the word being taken for a missing file."""
    if arg.startswith("~"):
        return True
    head, eq, _ = arg.partition("=")
    return bool(eq) and re.fullmatch(r"[\w.+~-]*", head) is not None


def parse_override(arg: str) -> Override:
    def bad(msg: str) -> InputError:
        return InputError(InputProblem("<command line>", f"override {arg!r}: {msg}"))

    if arg.startswith("~"):
        body = arg[1:]
        key, eq, val = body.partition("=")
        path = tuple(key.split("."))
        if not key or any(not p for p in path) or len(path) > MAX_DEPTH:
            raise bad("expected ~key or ~key=value")
        return Override(arg, "delete", path, parse_override_value(val) if eq else None, has_value=bool(eq))
    op = "set"
    body = arg
    if body.startswith("++"):
        op, body = "force", body[2:]
    elif body.startswith("+"):
        op, body = "add", body[1:]
    key, eq, val = body.partition("=")
    if not eq:
        raise bad("expected key=value, +key=value, ++key=value or ~key")
    path = tuple(key.split("."))
    if not key or any(not p for p in path):
        raise bad("empty key")
    if len(path) > MAX_DEPTH:
        raise bad(f"key nests deeper than {MAX_DEPTH} levels")
    return Override(arg, op, path, parse_override_value(val))


def apply_overrides(
    cfg: Config, overrides: list[Override], base_label: Optional[str] = None, shape: Optional[StructShape] = None
) -> list:
    """Apply dotlists as Bridge does: ``parse_hydra_overrides`` (megatron/bridge/training/utils/
    omegaconf_utils.py:163-186) sets the merged config to struct mode and hands each override to Hydra's
    ``ConfigLoaderImpl._apply_overrides_to_config`` (hydra-core 1.3, config_loader_impl.py:336-399), which
    calls ``OmegaConf.select`` / ``OmegaConf.update``:

    - ``~key[=value]``: refused when ``select(key)`` is None -- a key the config lacks *and a key that holds
      null* ("Could not delete from config. 'KEY' does not exist.") -- or holds another value;
    - ``+key=value``: refused when ``select(key)`` is not None and the value is no mapping or list
      ("Could not append to config. An item is already at 'KEY'."); otherwise set with struct mode off;
    - ``++key=value``: always set, struct mode off;
    - ``key=value``: set in struct mode: a key the config lacks, and any key under a null or scalar
      (``update`` replaces it by an empty mapping first), is refused ("Could not override 'KEY'.");
    - a mapping or list given where one is already there is merged into it (``merge_with``: a mapping key
      by key, in struct mode only into existing keys; a list replaced; a mapping onto a list, or the
      reverse, refused).

    The config is the one Bridge builds before the overrides: every field of the ConfigContainer's
    dataclasses, a file leaving it out or not (``create_omegaconf_dict_config`` serializes all of them,
    null ones included), except the callables it leaves out (a function or ``partial`` -- a dump writes them
    as ``_call_: false`` / ``_partial_: true`` mappings; ``activation_func`` and dtypes become strings).

    ``base_label``: a merged run (config.layers) -- what the dotlists apply to, named in errors ("recipe
    NAME"); a bad one is then a command-line problem. ``shape``: the config the framework builds around the
    file (StructShape). Returns, per override, whether it merged a mapping
    into one already there (so the keys it did not name keep their layer)."""
    where = "command line" if base_label else cfg.file
    shape = FILE_ONLY if shape is None else shape
    merged: list = []
    for ov in overrides:
        def bad(msg: str, bridge_says: Optional[str] = None) -> InputError:
            if base_label:
                msg = msg.replace(" in the config", f" in {base_label}")
            if bridge_says:
                msg += f"; Bridge stops with \"{bridge_says}\""
            return InputError(InputProblem(where, f"override {ov.raw!r}: {msg}"))

        key = dotted(ov.path)
        found = _select(cfg, ov.path, shape)
        if ov.op == "delete":
            if found is _NONE:
                what = _why_none(cfg, ov.path, shape)
                raise bad(f"{what}: Hydra deletes only a key that holds a value",
                          f"Could not delete from config. '{key}' does not exist.")
            if ov.has_value and found != ov.value:
                raise bad(f"value of {key} is {found!r}, not {ov.value!r}",
                          f"Could not delete from config. The value of '{key}' is {fmt_hydra(found)} and not {fmt_hydra(ov.value)}.")
            parent = _parent(cfg.data, ov.path)
            if isinstance(parent, list):
                raise bad("Hydra cannot delete a list item (its delete indexes the list with a string)")
            if isinstance(parent, dict) and ov.path[-1] in parent:
                del parent[ov.path[-1]]
            for p in list(cfg.positions):
                if p[: len(ov.path)] == ov.path:
                    del cfg.positions[p]
            cfg.override_paths.add(ov.path)
            merged.append(False)
            continue
        if ov.op == "add" and found is not _NONE and not isinstance(ov.value, (dict, list)):
            raise bad(f"key {key} already exists (use ++{key}=... to force it)",
                      f"Could not append to config. An item is already at '{key}'.")
        merged.append(_update(cfg, ov, force=ov.op in ("add", "force"), bad=bad, shape=shape))
        cfg.override_paths.add(ov.path)
    return merged


class _NoneType:
    """``OmegaConf.select`` answered None: the key is absent, null, or under a null / scalar / callable."""


_NONE = _NoneType()


def fmt_hydra(value: Any) -> str:
    return str(value)


def _container_default(cfg: Config, path: tuple, shape: StructShape) -> Any:
    """The value a field of the framework's config that the file leaves out holds (its class default), or
    _NONE when ``path`` is no such field: in the sections always built, and in an optional one once the
    config holds it as a mapping."""
    if len(path) != 2 or not shape.known_field(*path):
        return _NONE
    section, name = path
    if section not in shape.always_present and not isinstance(cfg.data.get(section), dict):
        return _NONE
    return shape.field_default(section, name)


def _left_out(value: Any, name: Any) -> bool:
    """A value ``create_omegaconf_dict_config`` leaves out of the dict config (omegaconf_utils.py:195-227,
    269-279): a function or ``functools.partial``. A dump writes them as mappings."""
    if not isinstance(value, dict):
        return False
    if value.get("_partial_") is True:
        return True
    if value.get("_call_") is False:
        target = str(value.get("_target_", ""))
        return not (target.startswith("torch.") and target.rsplit(".", 1)[-1] in _DTYPES) and name != "activation_func"
    return False


_DTYPES = {"float32", "float16", "bfloat16", "float64", "int64", "int32", "uint8", "float8_e4m3fn", "float8_e5m2"}


_MARKERS = ("_target_", "_call_", "_partial_", "_args_")


def _is_dtype(value: Any) -> bool:
    return (isinstance(value, dict) and value.get("_call_") is False and str(value.get("_target_", "")).startswith("torch.")
            and str(value.get("_target_")).rsplit(".", 1)[-1] in _DTYPES)


def _child(node: Any, part: str, marker_absent: bool = True) -> Any:
    """``node[part]`` as the dict config has it. Bridge's config comes from dataclass fields
    (``_dataclass_to_omegaconf_dict``, omegaconf_utils.py:281-303), which carry no ``_target_`` (the dump's
    ``_target_`` / ``_call_`` keys are its serializer's), and a dtype is a string there."""
    if isinstance(node, dict):
        if _is_dtype(node) or (marker_absent and part in _MARKERS):
            return _NONE
        if part in node and not _left_out(node[part], part):
            return node[part]
        return _NONE
    if isinstance(node, list) and part.isdigit() and int(part) < len(node):
        return node[int(part)]
    return _NONE


def _select(cfg: Config, path: tuple, shape: StructShape) -> Any:
    """``OmegaConf.select(cfg, key)`` over the config Bridge hands Hydra; _NONE where it answers None."""
    node: Any = cfg.data
    for i, part in enumerate(path):
        if i == 0 and part not in node:
            nxt = {} if part in shape.always_present else _NONE  # built by Bridge, whatever the file says
        elif i == 1 and isinstance(node, dict) and part not in node:
            nxt = _container_default(cfg, path[:2], shape)
        else:
            nxt = _child(node, part, _marker_absent(cfg, path[: i + 1]))
        if nxt is _NONE or nxt is None:
            return _NONE
        node = nxt
    return node


def _marker_absent(cfg: Config, path: tuple) -> bool:
    """Whether a ``_target_``-like key at ``path`` is missing from the dict config Hydra sees: it is when the
    base wrote it (Bridge rebuilt that part from its dataclasses), not when an override file merged it in."""
    if path[-1] not in _MARKERS:
        return False
    if not cfg.layered:
        return True
    layer = cfg.layer_of(path)
    return layer is None or layer.kind in ("recipe", "base")


def _why_none(cfg: Config, path: tuple, shape: StructShape) -> str:
    node: Any = cfg.data
    for i, part in enumerate(path):
        if isinstance(node, dict) and (_is_dtype(node) or (part in node and _marker_absent(cfg, path[: i + 1]))):
            return (f"{dotted(path)} is not among the keys Bridge hands to Hydra (its dataclasses carry no "
                    "_target_, and a dtype is a string there)")
        if isinstance(node, dict) and part in node:
            if _left_out(node[part], part):
                return (f"{dotted(path[: i + 1])} is a callable, which Bridge leaves out of the config it hands "
                        "to Hydra (omegaconf_utils.py:269-279)")
            node = node[part]
            if node is None:
                return f"{dotted(path[: i + 1])} is null in the config"
            continue
        if isinstance(node, list) and part.isdigit() and int(part) < len(node):
            node = node[int(part)]
            continue
        if i and not isinstance(node, (dict, list)):
            return f"{dotted(path[:i])} is not a mapping"
        if i == 1 and _container_default(cfg, path[:2], shape) is None:
            return f"{dotted(path)} is null (its class default)"
        return f"key {dotted(path)} is not in the config"
    return f"key {dotted(path)} is null"


def _parent(data: dict, path: tuple) -> Any:
    node: Any = data
    for part in path[:-1]:
        if isinstance(node, dict):
            node = node.get(part)
        elif isinstance(node, list) and part.isdigit() and int(part) < len(node):
            node = node[int(part)]
        else:
            return None
    return node


def _exists_in_struct(cfg: Config, node: Any, path: tuple, shape: StructShape) -> bool:
    """Whether the struct-mode config has the key ``path[-1]`` under ``node`` (a container field the file
    leaves out counts: the framework's config has every one)."""
    part = path[-1]
    if shape.dropped(path):
        return False
    if isinstance(node, dict) and part in node and not _left_out(node[part], part):
        return True
    if _under_unknown(cfg, path):
        return True
    if isinstance(node, dict) and isinstance(part, str) and not part.startswith("_"):
        if part in shape.dataclass_fields(node.get("_target_")):
            return True  # a field of the dataclass there: in the dict config, even where the values lack it
    if len(path) == 1:
        return part in shape.always_present or part in shape.optional
    return _container_default(cfg, path, shape) is not _NONE


def _under_unknown(cfg: Config, path: tuple) -> bool:
    """Whether ``path`` lies under what the base recipe leaves unknown (an entry the catalog read from Bridge's
    source, whose model a Hugging Face config describes): whether Bridge's config has such a key cannot be
    known here, so an override of it is taken as written, never refused."""
    unknown = cfg.unknown
    return bool(unknown) and any(path[:i] in unknown for i in range(1, len(path) + 1))


def _update(cfg: Config, ov: Override, force: bool, bad, shape: StructShape) -> bool:
    """``OmegaConf.update(cfg, key, value, merge=True, force_add=force)`` in struct mode (omegaconf.py:685-746)."""
    import copy

    key = dotted(ov.path)
    refuse = f"Could not override '{key}'."
    root: Any = cfg.data
    for i, part in enumerate(ov.path[:-1]):
        here = ov.path[: i + 1]
        nxt = root.get(part) if isinstance(root, dict) else _child(root, part)
        if not isinstance(nxt, (dict, list)) or (isinstance(root, dict) and _left_out(nxt, part)):
            if not force and not (nxt is None and isinstance(root, dict) and part not in root and _under_unknown(cfg, here)):
                present = isinstance(root, dict) and part in root and not _left_out(nxt, part)
                if len(here) == 1 and part in shape.optional and nxt is None:
                    what = f"{part} is not a mapping in the config (Bridge leaves it null unless the recipe sets it)"
                elif present and nxt is None:
                    what = f"{dotted(here)} is null"
                elif present:
                    what = f"{dotted(here)} is not a mapping"
                elif len(here) == 1 and part in shape.always_present:
                    what = None  # a section Bridge always builds: it is there, holding what the file left out
                else:
                    what = _not_in_config(here, ov.path, shape).split(" (use +")[0]
                if what is not None:
                    raise bad(f"{what} (use +{key}=... to add it)", refuse)
            if isinstance(root, list):
                if not (part.isdigit() and int(part) < len(root)):
                    raise bad(f"{dotted(here)} is past the end of the list", "list index out of range")
                root[int(part)] = {}
            else:
                root[part] = {}
            nxt = root[int(part)] if isinstance(root, list) else root[part]
        root = nxt
    leaf = ov.path[-1]
    value = copy.deepcopy(ov.value)
    if isinstance(root, list):
        if not (leaf.isdigit() and int(leaf) < len(root)):
            raise bad(f"{key} is past the end of the list", "list index out of range")
        node = root[int(leaf)]
    else:
        node = root.get(leaf, _NONE)
        if _left_out(node, leaf) or _is_dtype(root) or (node is not _NONE and _marker_absent(cfg, ov.path)):
            node = _NONE
            if not force:
                raise bad(f"key {key} is not among the keys Bridge hands to Hydra (its dataclasses carry no {leaf}, "
                          "and a callable or dtype is left out or a string there)", refuse)
    if isinstance(value, (dict, list)) and isinstance(node, (dict, list)):
        if isinstance(value, dict) != isinstance(node, dict):
            raise bad(f"{key} holds a {'mapping' if isinstance(node, dict) else 'list'} and the value is a "
                      f"{'mapping' if isinstance(value, dict) else 'list'}", "Cannot merge DictConfig with ListConfig")
        if isinstance(node, list):
            node[:] = value
            return False
        _merge_struct(cfg, node, value, ov.path, struct=not force, bad=bad, refuse=refuse, shape=shape)
        return True
    if isinstance(root, dict) and not force and (node is _NONE or shape.dropped(ov.path)) and \
            not _exists_in_struct(cfg, root, ov.path, shape):
        raise bad(_not_in_config(ov.path, ov.path, shape), refuse)
    if isinstance(root, list):
        root[int(leaf)] = value
    else:
        root[leaf] = value
    return False


def _merge_struct(cfg: Config, dst: dict, src: dict, path: tuple, struct: bool, bad, refuse: str, shape: StructShape) -> None:
    """``merge_with`` of a mapping into one already there: key by key, nested mappings merged, anything else
    replacing; in struct mode a key the destination lacks is refused."""
    for k, v in src.items():
        p = path + (k,)
        old = dst.get(k, _NONE)
        if old is _NONE and struct and not _exists_in_struct(cfg, dst, p, shape):
            raise bad(f"key {dotted(p)} is not in the config (use +{dotted(path)}=... to add it)", refuse)
        if isinstance(v, dict) and isinstance(old, dict):
            _merge_struct(cfg, old, v, p, struct, bad, refuse, shape)
        elif isinstance(v, (dict, list)) and isinstance(old, (dict, list)) and isinstance(v, dict) != isinstance(old, dict):
            raise bad(f"{dotted(p)} and the value are a mapping and a list", "Cannot merge DictConfig with ListConfig")
        else:
            dst[k] = v


def _not_in_config(missing: tuple, path: tuple, shape: StructShape) -> str:
    head = f"key {dotted(missing)} is not in the config"
    if len(path) == 2 and path[0] in shape.optional and shape.known_field(*path):
        head = f"{path[0]} is not a mapping in the config (Bridge leaves it null unless the recipe sets it)"
    elif len(path) == 2 and not shape.known_field(*path):
        head += " and is not a field overlap-cli knows"
    return f"{head} (use +{dotted(path)}=... to add it)"
