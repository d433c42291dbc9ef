"""Load a training config: bytes -> YAML nodes -> plain values with the position of every key.

Values are interpreted the way Megatron-Bridge sees them. Bridge reads YAML with ``OmegaConf.load``
(``megatron/bridge/training/utils/omegaconf_utils.py``), i.e. PyYAML's safe loader (YAML 1.1: ``yes``
and ``on`` are booleans) plus OmegaConf's extra float resolver (``3e-4`` is a float), duplicate keys
rejected, and ``${...}`` interpolations resolved. We compose the same node graph with libyaml when it
is available, so every key keeps its line and column, and build plain Python values from it. Nothing is
ever constructed from a tag: the safe constructor knows only the standard YAML types, and ``_target_``
is an ordinary string here.

The round-trip parser (ruamel.yaml) is used where the text must be written back: ``fixer`` and
``annotate``. Both parsers report the same line/column for a key; checking needs only one parse.
"""

from __future__ import annotations

import os
import re
import stat
from dataclasses import dataclass, field
from typing import Any, Optional

from .model import InputError, InputProblem

# A training config is tens of kilobytes; Bridge's full dumps are ~30 KB. Anything this big is not one.
MAX_FILE_BYTES = 8 * 1024 * 1024
# Same spirit as OmegaConf's alias-expansion guard: a document may not expand past this many nodes.
MAX_EXPANDED_NODES = 200_000
MAX_DEPTH = 200

Path_ = tuple  # a key path: tuple of str (mapping keys) and int (sequence indices)


@dataclass
class Config:
    """One loaded config file (after overrides and interpolation)."""

    file: str
    data: dict
    positions: dict  # path tuple -> (line, column), 1-based, of the key (or list item)
    text: str = ""
    override_paths: set = field(default_factory=set)  # paths set/added by dotlist overrides
    interpolated_paths: set = field(default_factory=set)  # paths whose value came from ${...}
    raw_interpolations: dict = field(default_factory=dict)  # path -> the ${...} text as written
    uses_env_resolver: bool = False
    warnings: list = field(default_factory=list)

    # -- access helpers used by the resolver --------------------------------------------------
    def section(self, name: str) -> Optional[dict]:
        value = self.data.get(name)
        return value if isinstance(value, dict) else None

    def has(self, path: tuple) -> bool:
        node: Any = self.data
        for part in path:
            if isinstance(node, dict) and part in node:
                node = node[part]
            else:
                return False
        return True

    def get(self, path: tuple, default: Any = None) -> Any:
        node: Any = self.data
        for part in path:
            if isinstance(node, dict) and part in node:
                node = node[part]
            else:
                return default
        return node

    def position(self, path: tuple) -> tuple[Optional[int], Optional[int]]:
        """Line/column of the key at ``path``, or of its nearest ancestor that is in the file."""
        p = tuple(path)
        while p:
            if p in self.positions:
                return self.positions[p]
            p = p[:-1]
        return (None, None)


def dotted(path: tuple) -> str:
    return ".".join(str(p) for p in path)


# ----------------------------------------------------------------------------------------------
# Reading bytes
# ----------------------------------------------------------------------------------------------


def read_text(path: str) -> str:
    def fail(msg: str, line: Optional[int] = None) -> InputError:
        return InputError(InputProblem(path, msg, line=line))

    try:
        st = os.stat(path)
    except FileNotFoundError:
        raise fail("file not found") from None
    except PermissionError:
        raise fail("permission denied") from None
    except OSError as exc:
        raise fail(f"cannot read: {exc.strerror or exc}") from None
    if stat.S_ISDIR(st.st_mode):
        raise fail("is a directory, expected a YAML file")
    if not stat.S_ISREG(st.st_mode):
        raise fail("not a regular file (FIFO, socket or device); refusing to read it")
    if st.st_size > MAX_FILE_BYTES:
        raise fail(
            f"file is {st.st_size / 1048576:.1f} MiB; a training config is far smaller "
            f"(limit {MAX_FILE_BYTES // 1048576} MiB)"
        )
    try:
        with open(path, "rb") as fh:
            raw = fh.read(MAX_FILE_BYTES + 1)
    except PermissionError:
        raise fail("permission denied") from None
    except OSError as exc:
        raise fail(f"cannot read: {exc.strerror or exc}") from None
    if len(raw) > MAX_FILE_BYTES:
        raise fail("file grew past the size limit while being read")
    if b"\x00" in raw[:8192]:
        raise fail("binary file (contains NUL bytes), expected YAML text")
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = raw[: exc.start].count(b"\n") + 1
        raise fail(f"not UTF-8 text (invalid byte 0x{raw[exc.start]:02x})", line=line) from None
    if text.startswith("\ufeff"):
        text = text[1:]
    return text


# ----------------------------------------------------------------------------------------------
# YAML -> nodes -> values
# ----------------------------------------------------------------------------------------------

_LOADER_CLASS = None

# OmegaConf's float resolver (omegaconf/_yaml.py): YAML 1.1 floats plus "1e3"-style exponents.
_FLOAT_RE = re.compile(
    r"""^(?:
     [-+]?[0-9]+(?:_[0-9]+)*\.[0-9_]*(?:[eE][-+]?[0-9]+)?
    |[-+]?[0-9]+(?:_[0-9]+)*(?:[eE][-+]?[0-9]+)
    |\.[0-9]+(?:_[0-9]+)*(?:[eE][-+][0-9]+)?
    |[-+]?[0-9]+(?:_[0-9]+)*(?::[0-5]?[0-9])+\.[0-9_]*
    |[-+]?\.(?:inf|Inf|INF)
    |\.(?:nan|NaN|NAN))$""",
    re.X,
)


def _loader_class():
    global _LOADER_CLASS
    if _LOADER_CLASS is None:
        import yaml

        base = getattr(yaml, "CSafeLoader", yaml.SafeLoader)

        class BridgeLoader(base):  # type: ignore[misc, valid-type]
            pass

        # A private copy of the resolver table, so the float rule is not added to PyYAML's global one.
        BridgeLoader.yaml_implicit_resolvers = {
            k: list(v) for k, v in base.yaml_implicit_resolvers.items()
        }
        BridgeLoader.add_implicit_resolver("tag:yaml.org,2002:float", _FLOAT_RE, list("-+0123456789."))
        _LOADER_CLASS = BridgeLoader
    return _LOADER_CLASS


def _mark(node) -> tuple[int, int]:
    return (node.start_mark.line + 1, node.start_mark.column + 1)


def _yaml_error(file: str, exc: Exception) -> InputError:
    mark = getattr(exc, "problem_mark", None) or getattr(exc, "context_mark", None)
    problem = getattr(exc, "problem", None) or str(exc).splitlines()[0]
    context = getattr(exc, "context", None)
    msg = f"invalid YAML: {problem}" + (f" ({context})" if context else "")
    if mark is not None:
        return InputError(InputProblem(file, msg, line=mark.line + 1, column=mark.column + 1))
    return InputError(InputProblem(file, msg))


def parse_yaml(text: str, file: str) -> tuple[Any, dict]:
    """Parse YAML text into plain values and a map of key positions."""
    import yaml

    loader = _loader_class()(text)
    try:
        try:
            root = loader.get_single_node()
        except yaml.YAMLError as exc:
            raise _yaml_error(file, exc) from None
        except RecursionError:
            raise InputError(InputProblem(file, "YAML nesting is too deep")) from None
        if root is None:
            return None, {}
        positions: dict = {}
        builder = _Builder(loader, file, positions)
        value = builder.build(root, ())
        return value, positions
    finally:
        loader.dispose()


class _Builder:
    def __init__(self, loader, file: str, positions: dict):
        self.loader = loader
        self.file = file
        self.positions = positions
        self.count = 0
        self.active: set = set()

    def fail(self, msg: str, node=None, path: tuple = ()) -> InputError:
        line, col = _mark(node) if node is not None else (None, None)
        return InputError(InputProblem(self.file, msg, key=dotted(path) or None, line=line, column=col))

    def build(self, node, path: tuple) -> Any:
        import yaml

        self.count += 1
        if self.count > MAX_EXPANDED_NODES:
            raise self.fail(
                f"document expands to more than {MAX_EXPANDED_NODES} nodes (alias bomb?); refusing it",
                node,
                path,
            )
        if len(path) > MAX_DEPTH:
            raise self.fail(f"nesting deeper than {MAX_DEPTH} levels", node, path)
        if isinstance(node, yaml.ScalarNode):
            try:
                return self.loader.construct_object(node, deep=True)
            except yaml.YAMLError as exc:
                raise self.fail(_tag_message(node, exc), node, path) from None
            except (ValueError, OverflowError) as exc:
                raise self.fail(f"invalid scalar {node.value!r}: {exc}", node, path) from None
        if id(node) in self.active:
            raise self.fail("recursive YAML alias", node, path)
        self.active.add(id(node))
        try:
            if isinstance(node, yaml.SequenceNode):
                if node.tag not in ("tag:yaml.org,2002:seq",):
                    raise self.fail(f"tag {node.tag!r} is not allowed", node, path)
                out = []
                for i, child in enumerate(node.value):
                    self.positions[path + (i,)] = _mark(child)
                    out.append(self.build(child, path + (i,)))
                return out
            if isinstance(node, yaml.MappingNode):
                is_set = node.tag == "tag:yaml.org,2002:set"
                if node.tag not in ("tag:yaml.org,2002:map", "tag:yaml.org,2002:set", "tag:yaml.org,2002:omap"):
                    raise self.fail(f"tag {node.tag!r} is not allowed", node, path)
                try:
                    self.loader.flatten_mapping(node)
                except yaml.YAMLError as exc:
                    raise self.fail(f"invalid merge key: {getattr(exc, 'problem', exc)}", node, path) from None
                out: dict = {}
                for key_node, value_node in node.value:
                    if not isinstance(key_node, yaml.ScalarNode):
                        raise self.fail("mapping keys must be plain scalars", key_node, path)
                    key = self.build(key_node, path)
                    try:
                        hash(key)
                    except TypeError:
                        raise self.fail("unhashable mapping key", key_node, path) from None
                    if key in out:
                        raise self.fail(f"duplicate key {key!r}", key_node, path + (key,))
                    self.positions[path + (key,)] = _mark(key_node)
                    # ``!!set {a, b}`` (PEFT configs) holds keys only; keep it as a mapping to None.
                    out[key] = None if is_set else self.build(value_node, path + (key,))
                return out
            raise self.fail("unsupported YAML node", node, path)
        finally:
            self.active.discard(id(node))


def _tag_message(node, exc) -> str:
    if node.tag and not node.tag.startswith("tag:yaml.org,2002:"):
        return f"tag {node.tag!r} is not allowed (YAML tags that construct objects are never honoured)"
    return f"invalid value {node.value!r}: {getattr(exc, 'problem', None) or exc}"


# ----------------------------------------------------------------------------------------------
# Interpolations (${...}) — resolved by OmegaConf with its built-in resolvers only
# ----------------------------------------------------------------------------------------------


def _has_interpolation(value: Any) -> bool:
    if isinstance(value, str):
        return "${" in value
    if isinstance(value, dict):
        return any(_has_interpolation(v) for v in value.values())
    if isinstance(value, list):
        return any(_has_interpolation(v) for v in value)
    return False


def _plain_for_omegaconf(value: Any) -> Any:
    """OmegaConf accepts only primitive containers; anything else is kept as its string form."""
    if isinstance(value, dict):
        return {str(k): _plain_for_omegaconf(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_plain_for_omegaconf(v) for v in value]
    if value is None or isinstance(value, (bool, int, float, str)):
        return value
    return str(value)


def resolve_interpolations(cfg: Config) -> None:
    if not _has_interpolation(cfg.data):
        return
    from omegaconf import OmegaConf
    from omegaconf.errors import OmegaConfBaseException

    try:
        resolved = OmegaConf.to_container(OmegaConf.create(_plain_for_omegaconf(cfg.data)), resolve=True)
    except OmegaConfBaseException as exc:
        key = getattr(exc, "full_key", None) or ""
        path = tuple(int(p) if p.isdigit() else p for p in re.split(r"[.\[\]]+", key) if p)
        line, col = cfg.position(path)
        msg = str(exc).splitlines()[0]
        raise InputError(InputProblem(cfg.file, f"unresolvable interpolation: {msg}", key or None, line, col)) from None
    except Exception as exc:  # a resolver may raise anything; it must not escape as a traceback
        raise InputError(InputProblem(cfg.file, f"unresolvable interpolation: {exc}")) from None

    def fetch(path: tuple) -> Any:
        node: Any = resolved
        for part in path:
            node = node[str(part)] if isinstance(node, dict) else node[part]
        return node

    def walk(value: Any, path: tuple) -> Any:
        if isinstance(value, dict):
            return {k: walk(v, path + (k,)) for k, v in value.items()}
        if isinstance(value, list):
            return [walk(v, path + (i,)) for i, v in enumerate(value)]
        if isinstance(value, str) and "${" in value:
            if "oc.env" in value:
                cfg.uses_env_resolver = True
            cfg.interpolated_paths.add(path)
            cfg.raw_interpolations[path] = value
            return fetch(path)
        return value

    cfg.data = walk(cfg.data, ())


# ----------------------------------------------------------------------------------------------
# Hydra-style dotlist overrides (what Bridge's scripts accept on the command line)
# ----------------------------------------------------------------------------------------------

_FLOW_COLON = re.compile(r":(?=[^\s/])")


def parse_override_value(text: str) -> Any:
    """Values parse as YAML scalars or flow collections, Hydra style (``{A:1}`` is a mapping)."""
    import yaml

    src = text
    if src.startswith(("{", "[")):
        src = _FLOW_COLON.sub(": ", src)
    if src == "":
        return ""
    loader = _loader_class()(src)
    try:
        node = loader.get_single_node()
        if node is None:
            return None
        return _Builder(loader, "<override>", {}).build(node, ())
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
    if arg.startswith("~"):
        return True
    head = arg.split("=", 1)[0]
    return "=" in arg and bool(re.fullmatch(r"\+{0,2}[A-Za-z_][\w\-]*(\.[\w\-]+)*", head))


def parse_override(arg: str) -> Override:
    def bad(msg: str) -> InputError:
        return InputError(InputProblem("<command line>", f"override {arg!r}: {msg}"))

    if arg.startswith("~"):
        body = arg[1:]
        key, eq, val = body.partition("=")
        path = tuple(key.split("."))
        if not key or any(not p for p in path):
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
    return Override(arg, op, path, parse_override_value(val))


def apply_overrides(cfg: Config, overrides: list[Override]) -> None:
    for ov in overrides:
        def bad(msg: str) -> InputError:
            return InputError(InputProblem(cfg.file, f"override {ov.raw!r}: {msg}"))

        parent: Any = cfg.data
        for i, part in enumerate(ov.path[:-1]):
            if not isinstance(parent, dict):
                raise bad(f"{dotted(ov.path[:i])} is not a mapping")
            if part not in parent or parent[part] is None:
                if ov.op in ("add", "force"):
                    parent[part] = {}
                else:
                    raise bad(f"key {dotted(ov.path[: i + 1])} is not in the config (use +{dotted(ov.path)}=... to add it)")
            parent = parent[part]
        if not isinstance(parent, dict):
            raise bad(f"{dotted(ov.path[:-1])} is not a mapping")
        leaf = ov.path[-1]
        exists = leaf in parent
        if ov.op == "set" and not exists:
            raise bad(f"key {dotted(ov.path)} is not in the config (use +{dotted(ov.path)}=... to add it)")
        if ov.op == "add" and exists:
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


# ----------------------------------------------------------------------------------------------
# Entry point
# ----------------------------------------------------------------------------------------------


def load_config(path: str, overrides: Optional[list[Override]] = None, text: Optional[str] = None) -> Config:
    if text is None:
        text = read_text(path)
    data, positions = parse_yaml(text, path)
    if data is None:
        raise InputError(InputProblem(path, "empty document, expected a mapping of config sections"))
    if not isinstance(data, dict):
        raise InputError(
            InputProblem(path, f"top level is a {type(data).__name__}, expected a mapping of config sections", line=1, column=1)
        )
    cfg = Config(file=path, data=data, positions=positions, text=text)
    if overrides:
        apply_overrides(cfg, overrides)
    resolve_interpolations(cfg)
    return cfg
