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

from overlap_cli.problems import InputError, InputProblem
from overlap_cli.config.document import Config
from overlap_cli.config.yamlnodes import MAX_DEPTH, Builder, dotted, loader_class
from overlap_cli.records import dataclass  # not dataclasses: start-up time (records.py)

_FLOW_COLON = re.compile(r":(?=[^\s/])")


def parse_override_value(text: str) -> Any:
    """Values parse as YAML scalars or flow collections, Hydra style (``{A:1}`` is a mapping)."""
    import yaml

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


def apply_overrides(cfg: Config, overrides: list[Override], base_label: Optional[str] = None) -> None:
    """Apply dotlists in Hydra's struct mode. ``base_label``: a merged run (config.layers) -- what the
    dotlists apply to, named in errors ("recipe NAME"); a bad one is then a command-line problem."""
    where = "command line" if base_label else cfg.file
    for ov in overrides:
        def bad(msg: str) -> InputError:
            if base_label:
                msg = msg.replace("is not in the config", f"is not in {base_label}")
            return InputError(InputProblem(where, f"override {ov.raw!r}: {msg}"))

        # Bridge merges the file onto a full ConfigContainer, where every field of model/ddp/optimizer
        # exists (and every field of comm_overlap/mixed_precision once the section is a mapping), so a
        # plain key=value reaches a field this tool knows even when the file leaves it out.
        field_of_container = _container_field(cfg, ov.path)
        parent: Any = cfg.data
        for i, part in enumerate(ov.path[:-1]):
            if not isinstance(parent, dict):
                raise bad(f"{dotted(ov.path[:i])} is not a mapping")
            if part not in parent or parent[part] is None:
                if ov.op in ("add", "force") or (field_of_container and ov.op == "set"):
                    parent[part] = {}
                else:
                    raise bad(_not_in_config(ov.path[: i + 1], ov.path))
            parent = parent[part]
        if not isinstance(parent, dict):
            raise bad(f"{dotted(ov.path[:-1])} is not a mapping")
        leaf = ov.path[-1]
        exists = leaf in parent
        if ov.op == "set" and not exists and not field_of_container:
            raise bad(_not_in_config(ov.path, ov.path))
        # Hydra's +key=value appends unless a non-null value is already there (hydra/_internal/
        # config_loader_impl.py _apply_overrides_to_config): a null field may be given with +.
        if ov.op == "add" and exists and parent[leaf] is not None and not isinstance(ov.value, (dict, list)):
            raise bad(f"key {dotted(ov.path)} already exists (use ++{dotted(ov.path)}=... to force it)")
        if ov.op == "delete":
            if not exists:
                raise bad(f"key {dotted(ov.path)} is not in the config")
            if ov.has_value and parent[leaf] != ov.value:
                raise bad(f"value of {dotted(ov.path)} is {parent[leaf]!r}, not {ov.value!r}")
            del parent[leaf]
            for p in list(cfg.positions):
                if p[: len(ov.path)] == ov.path:
                    del cfg.positions[p]
            cfg.override_paths.add(ov.path)
            continue
        parent[leaf] = ov.value
        cfg.override_paths.add(ov.path)


def _container_field(cfg: Config, path: tuple) -> bool:
    """``section.field`` of Bridge's ConfigContainer that exists before the file is merged onto it."""
    from overlap_cli.frameworks.bridge.schema import ALWAYS_PRESENT_SECTIONS, known_field

    if len(path) != 2 or not known_field(*path):
        return False
    return path[0] in ALWAYS_PRESENT_SECTIONS or isinstance(cfg.data.get(path[0]), dict)


def _not_in_config(missing: tuple, path: tuple) -> str:
    from overlap_cli.frameworks.bridge.schema import OPTIONAL_SECTIONS, known_field

    head = f"key {dotted(missing)} is not in the config"
    if len(path) == 2 and path[0] in OPTIONAL_SECTIONS and known_field(*path):
        head = f"{path[0]} is not a mapping in the config (Bridge leaves it null unless the recipe sets it)"
    elif len(path) == 2 and not known_field(*path):
        head += " and is not a field overlap-cli knows"
    return f"{head} (use +{dotted(path)}=... to add it)"
