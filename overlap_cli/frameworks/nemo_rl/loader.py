"""A NeMo-RL config as NeMo-RL loads it, with the ``FILE:LINE`` of every key.

``load_config_with_inheritance`` (nemo_rl/utils/config.py:52-97): the file is read with ``OmegaConf.load``;
a top-level ``defaults:`` (a path, or a list of paths) is popped, each path resolved against the folder
of the file that names it (an absolute path as is, config.py:23-27), loaded the same way (its own
``defaults`` against *its* folder, config.py:84-86), merged in order, and the file merged over the
result. ``merge_with_override`` (config.py:30-49): a top-level key whose value is ``???`` keeps the base's
value; a top-level mapping holding ``_override_: true`` replaces the base's mapping instead of merging
into it; otherwise ``OmegaConf.merge`` (mappings key by key, anything else replaced).

The launch's dotlist words (``uv run examples/run_grpo_math.py --config X.yaml policy.x=...``) apply after,
through ``parse_hydra_overrides`` (config.py:165-186): struct mode, Hydra's ``key=`` / ``+key=`` /
``++key=`` / ``~key``.

``${...}`` interpolations are resolved only where a value is read (``Loaded.get``), as OmegaConf resolves
them on access: ``${a.b}`` and the ``mul`` / ``add`` resolvers NeMo-RL registers
(config.py:189-194); anything else is unknown.
"""

from __future__ import annotations

import os
import re

TYPE_CHECKING = False  # the typing module costs ~2.5 ms of start-up; annotations here are strings (PEP 563)
if TYPE_CHECKING:
    from typing import Any, Optional

from overlap_cli.problems import InputError, InputProblem
from overlap_cli.records import dataclass, field  # not dataclasses: start-up time (records.py)

UPSTREAM = "nemo_rl/utils/config.py"
COMMAND_LINE = "command line"
MAX_CHAIN = 32  # deeper than any real chain (upstream's deepest is 4); a cycle is reported, not followed
MISSING = "???"


class Unresolved:
    """A value an interpolation leaves unknown here; ``why`` says which."""

    def __init__(self, why: str):
        self.why = why

    def __repr__(self) -> str:
        return f"Unresolved({self.why!r})"


@dataclass
class Loaded:
    """The merged config: ``data`` (plain values), ``where`` (key path -> ``FILE:LINE`` of the layer that
    wrote it, or ``command line``), ``file`` (the checked file), ``chain`` (every file read, in merge order),
    ``lines`` (key path -> (line, column) for the keys written in the checked file itself)."""

    file: str
    data: dict
    where: dict = field(default_factory=dict)
    lines: dict = field(default_factory=dict)
    chain: list = field(default_factory=list)

    def has(self, path: tuple) -> bool:
        return self.raw(path, _ABSENT) is not _ABSENT

    def raw(self, path: tuple, default: Any = None) -> Any:
        """The value at ``path`` as written (a list item by its index), ``default`` when absent."""
        node: Any = self.data
        for part in path:
            if isinstance(node, dict) and part in node:
                node = node[part]
            elif isinstance(node, list) and isinstance(part, int) and 0 <= part < len(node):
                node = node[part]
            else:
                return default
        return node

    def get(self, path: tuple, default: Any = None) -> Any:
        """The value at ``path`` with its interpolations resolved (an ``Unresolved`` when they cannot be)."""
        if not self.has(path):
            return default
        return self._resolve(self.raw(path), 0, path)

    def origin(self, path: tuple) -> Optional[str]:
        """``FILE:LINE`` (or ``command line``) of the layer that wrote ``path`` or its nearest parent."""
        for n in range(len(path), 0, -1):
            got = self.where.get(path[:n])
            if got is not None:
                return got
        return None

    # -- interpolation ----------------------------------------------------------------------------------
    def _resolve(self, value: Any, depth: int, at: tuple) -> Any:
        """``value`` written at key path ``at`` (relative interpolations count from its mapping)."""
        if value == MISSING:
            return Unresolved("??? (a mandatory value no layer gives)")
        if not isinstance(value, str) or "${" not in value:
            return value
        if depth > 20:
            return Unresolved(f"{value} (interpolation nesting too deep)")
        m = _WHOLE.fullmatch(value.strip())
        if m is None:
            return Unresolved(f"{value} (text with an interpolation inside)")
        return self._expr(m.group(1).strip(), depth, at)

    def _expr(self, body: str, depth: int, at: tuple) -> Any:
        name, colon, args = body.partition(":")
        if colon and re.fullmatch(r"[A-Za-z_][\w.]*", name.strip()):
            values = [self._arg(a, depth, at) for a in _split_args(args)]
            bad = next((v for v in values if isinstance(v, Unresolved)), None)
            if bad is not None:
                return bad
            name = name.strip()
            if name in ("mul", "add") and len(values) == 2 and all(_is_number(v) for v in values):
                return values[0] * values[1] if name == "mul" else values[0] + values[1]
            return Unresolved("${" + body + "} (a resolver this reader does not evaluate)")
        if body.startswith("."):  # OmegaConf: one dot is the value's own mapping, each further dot one up
            dots = len(body) - len(body.lstrip("."))
            base = at[: len(at) - dots] if dots <= len(at) else None
            if base is None or not body[dots:]:
                return Unresolved("${" + body + "} (a relative interpolation above the top)")
            path = base + tuple(body[dots:].split("."))
        else:
            path = tuple(body.split("."))
        if not self.has(path):
            return Unresolved("${" + body + "} (no such key)")
        return self._resolve(self.raw(path), depth + 1, path)

    def _arg(self, text: str, depth: int, at: tuple) -> Any:
        text = text.strip()
        if text.startswith("${"):
            return self._resolve(text, depth + 1, at)
        from overlap_cli.config.overrides import parse_override_value

        return parse_override_value(text)


_ABSENT = object()
_WHOLE = re.compile(r"\$\{(.*)\}", re.S)


def _is_number(v: Any) -> bool:
    return isinstance(v, (int, float)) and not isinstance(v, bool)


def _split_args(text: str) -> list:
    out, depth, cur = [], 0, ""
    for ch in text:
        if ch == "{":
            depth += 1
        elif ch == "}":
            depth -= 1
        if ch == "," and depth == 0:
            out.append(cur)
            cur = ""
        else:
            cur += ch
    out.append(cur)
    return out


# -- loading -------------------------------------------------------------------------------------------
def load(path: str, text: Optional[str] = None, overrides: tuple = ()) -> Loaded:
    """The merged config of ``path`` (``text``: its content, when already read) and the dotlist words."""
    data, where, lines, chain = _load_file(path, text, (), os.path.dirname(path))
    cfg = Loaded(file=path, data=data, where=where, lines=lines, chain=chain)
    if overrides:
        apply_dotlist(cfg, overrides)
    return cfg


# (path, text) -> (value, positions): a folder's recipes share their bases, each parsed once per process.
_PARSED: dict = {}


def _read(path: str, text: Optional[str]):
    from overlap_cli.config.safe_read import read_text
    from overlap_cli.config.yamlnodes import copy_values, parse_yaml

    if text is None:
        text = read_text(path)
    got = _PARSED.get((path, text))
    if got is None:
        got = parse_yaml(text, path)
        if len(_PARSED) > 512:
            _PARSED.clear()
        _PARSED[(path, text)] = got
    value, positions = copy_values(got[0]), dict(got[1])
    if not isinstance(value, dict):
        # config.py:71-73: "Config must be a Dictionary Config (List Config not supported)"
        raise InputError(InputProblem(path, "a NeMo-RL config must be a mapping (NeMo-RL asserts "
                                            "'Config must be a Dictionary Config', nemo_rl/utils/config.py:71)"))
    return value, positions


def _load_file(path: str, text: Optional[str], stack: tuple, base_dir: str):
    """(data, where, lines of this file's own keys, chain) for one file and its defaults."""
    real = os.path.realpath(path)
    if real in stack:
        raise InputError(InputProblem(path, "defaults: the inheritance chain comes back to this file "
                                            "(NeMo-RL would recurse until Python's recursion limit)", key="defaults"))
    if len(stack) >= MAX_CHAIN:
        raise InputError(InputProblem(path, f"defaults: more than {MAX_CHAIN} files deep", key="defaults"))
    data, positions = _read(path, text)
    where = {p: f"{path}:{line}" for p, (line, _col) in positions.items()}
    chain: list = []
    if "defaults" in data:
        defaults = data.pop("defaults")
        line = positions.get(("defaults",), (None, None))[0]
        where = {p: w for p, w in where.items() if p[:1] != ("defaults",)}
        if isinstance(defaults, (str, int, float)) and not isinstance(defaults, bool):
            defaults = [defaults]
        if not isinstance(defaults, list):
            raise InputError(InputProblem(path, "defaults must be a path or a list of paths of NeMo-RL configs",
                                          key="defaults", line=line))
        base: dict = {}
        base_where: dict = {}
        for n, default in enumerate(defaults):
            if isinstance(default, (dict, list)) or default is None:
                raise InputError(InputProblem(path, f"defaults entry {default!r}: NeMo-RL expects a file path "
                                                    "(it reads str(entry) as one)", key="defaults", line=line))
            name = str(default)
            parent = os.path.normpath(name if name.startswith("/") else os.path.join(base_dir, name))
            item_line = positions.get(("defaults", n), (line, None))[0] if len(defaults) > 1 else line
            if not os.path.isfile(parent):
                raise InputError(InputProblem(path, f"defaults: base config {name!r} not found "
                                                    f"(looked for {os.path.normpath(parent)})", key="defaults",
                                              line=item_line or line))
            pdata, pwhere, _plines, pchain = _load_file(parent, None, stack + (real,), os.path.dirname(parent))
            chain.extend(pchain)
            _merge_with_override(base, base_where, pdata, pwhere)
        _merge_with_override(base, base_where, data, where)
        data, where = base, base_where
    chain.append(path)
    lines = {p: v for p, v in positions.items() if p[:1] != ("defaults",)}
    return data, where, lines, chain


def _drop(where: dict, path: tuple) -> None:
    for p in [p for p in where if p[: len(path)] == path]:
        del where[p]


def _merge_with_override(base: dict, base_where: dict, over: dict, over_where: dict) -> None:
    """config.py:30-49 then OmegaConf.merge, in place on ``base``."""
    for key, value in over.items():
        if value == MISSING and key in base:
            continue  # config.py:38-39 and OmegaConf.merge: a mandatory value keeps the base's
        if isinstance(value, dict) and value.get("_override_", False):
            value = {k: v for k, v in value.items() if k != "_override_"}
            base.pop(key, None)
            _drop(base_where, (key,))
            over_where = {p: w for p, w in over_where.items() if p[:2] != (key, "_override_")}
        _merge_into(base, base_where, key, value, over_where, (key,))


def _merge_into(dst: dict, dst_where: dict, key: Any, value: Any, src_where: dict, path: tuple) -> None:
    old = dst.get(key)
    if isinstance(value, dict) and isinstance(old, dict):
        if path in src_where:
            dst_where[path] = src_where[path]
        for k, v in value.items():
            if v == MISSING and k in old:
                continue  # OmegaConf.merge keeps a value where the override holds ???
            _merge_into(old, dst_where, k, v, src_where, path + (k,))
        return
    dst[key] = _copy(value)
    if isinstance(old, (dict, list)):
        _drop(dst_where, path)
    else:
        dst_where.pop(path, None)
    if isinstance(value, (dict, list)):
        for p, w in src_where.items():
            if p[: len(path)] == path:
                dst_where[p] = w
    elif path in src_where:
        dst_where[path] = src_where[path]


def _copy(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: _copy(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_copy(v) for v in value]
    return value


# -- dotlist words ----------------------------------------------------------------------------------------
def apply_dotlist(cfg: Loaded, words) -> None:
    """parse_hydra_overrides (config.py:165-186): struct mode, so ``key=value`` sets only a key the config
    has; ``+key=value`` adds one it lacks; ``++key=value`` sets either way; ``~key`` deletes one it has."""
    from overlap_cli.config.overrides import parse_override

    for word in words:
        ov = parse_override(word) if isinstance(word, str) else word  # the CLI hands parsed Overrides
        word = ov.raw
        path = tuple(ov.path)

        def bad(msg: str) -> InputError:
            return InputError(InputProblem(COMMAND_LINE, f"override {word!r}: {msg}; NeMo-RL stops with "
                                                         "OverridesError (nemo_rl/utils/config.py:185)"))

        parent = cfg.data
        for part in path[:-1]:
            if not isinstance(parent, dict):
                break
            if part not in parent and ov.op in ("add", "force"):
                parent[part] = {}
            parent = parent.get(part)
        if not isinstance(parent, dict):
            raise bad(f"{'.'.join(path[:-1])} is not a mapping in the config")
        last = path[-1]
        if ov.op == "delete":
            if last not in parent:
                raise bad(f"the config has no key {'.'.join(path)} to delete")
            del parent[last]
            _drop(cfg.where, path)
            continue
        if ov.op == "set" and last not in parent:
            raise bad(f"the config has no key {'.'.join(path)} (add one with +{'.'.join(path)}=...)")
        if ov.op == "add" and last in parent and parent[last] is not None:
            raise bad(f"key {'.'.join(path)} already exists (use ++{'.'.join(path)}=... to force it)")
        words_where = {path: COMMAND_LINE}
        if isinstance(ov.value, dict):
            words_where.update({path + (k,): COMMAND_LINE for k in ov.value})
        _merge_into(parent, cfg.where, last, ov.value, words_where, path)
