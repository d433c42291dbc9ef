"""``${...}`` interpolations, resolved the way Bridge's ``OmegaConf.load`` + ``to_container(resolve=True)``
would, with OmegaConf's built-in resolvers only.

Imported only for configs that hold an interpolation (most hold none), so omegaconf and its ANTLR
grammar never load otherwise. Before OmegaConf sees anything, the expansion is bounded: references that
multiply (``b: ${a}${a}``, ``c: ${b}${b}`` ...) are the interpolation twin of YAML's alias bomb.
"""

from __future__ import annotations

import re
from typing import Any, Optional

from overlap_cli.config.document import Config
from overlap_cli.config.yamlnodes import MAX_EXPANDED_NODES, dotted, has_interpolation
from overlap_cli.problems import InputError, InputProblem
from overlap_cli.config.safe_read import MAX_FILE_BYTES

# Interpolations are checked for how far they would expand before OmegaConf sees them: a chain of
# ``b: ${a}${a}``, ``c: ${b}${b}`` ... doubles per line, the interpolation twin of an alias bomb.
MAX_INTERPOLATED_CHARS = MAX_FILE_BYTES
_INTERPOLATION_BODY = re.compile(r"\$\{([^${}]*)\}")
# Resolvers whose first argument names another key of the config.
_KEY_RESOLVERS = ("oc.select", "oc.dict.keys", "oc.dict.values")


def _plain_for_omegaconf(value: Any) -> Any:
    """OmegaConf accepts only primitive containers; anything else is kept as its string form."""
    if isinstance(value, dict):
        return {str(k): _plain_for_omegaconf(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_plain_for_omegaconf(v) for v in value]
    if value is None or isinstance(value, (bool, int, float, str)):
        return value
    return str(value)


class _Expansion:
    """Estimates (characters, values) a document reaches once every ``${key}`` is substituted.

    A reference counts the full estimated size of what it names, once per occurrence, so repeated
    references multiply exactly as they would on resolution. Cycles count as nothing here; OmegaConf
    reports them. References this cannot follow (unknown resolvers, odd syntax) count as their text.
    """

    def __init__(self, data: dict):
        self.data = data
        self.memo: dict = {}
        self.active: set = set()

    def size(self, value: Any, path: tuple) -> tuple[int, int]:
        if isinstance(value, dict):
            chars, nodes = 0, 1
            for k, v in value.items():
                c, n = self.size(v, path + (k,))
                chars, nodes = chars + c + len(k), nodes + n
                if chars > MAX_INTERPOLATED_CHARS or nodes > MAX_EXPANDED_NODES:
                    break
            return chars, nodes
        if isinstance(value, list):
            chars, nodes = 0, 1
            for i, v in enumerate(value):
                c, n = self.size(v, path + (i,))
                chars, nodes = chars + c, nodes + n
                if chars > MAX_INTERPOLATED_CHARS or nodes > MAX_EXPANDED_NODES:
                    break
            return chars, nodes
        if isinstance(value, str):
            return self.string(value, path) if "${" in value else (len(value), 1)
        return 8, 1

    def string(self, text: str, path: tuple) -> tuple[int, int]:
        whole = _INTERPOLATION_BODY.fullmatch(text.strip())
        if whole is not None:  # "${a.b}" alone is replaced by what it names (a copy of a mapping, say)
            target = self.target(whole.group(1).strip(), path)
            return self.at(target) if target is not None else (len(text), 1)
        chars, nodes = len(text), 1  # inside a longer string: substituted as text
        for body in _INTERPOLATION_BODY.findall(text):
            target = self.target(body.strip(), path)
            if target is None:
                continue
            chars += self.at(target)[0]
            if chars > MAX_INTERPOLATED_CHARS or nodes > MAX_EXPANDED_NODES:
                break
        return chars, nodes

    def at(self, target: tuple) -> tuple[int, int]:
        if target in self.memo:
            return self.memo[target]
        if target in self.active:
            return (0, 0)
        node: Any = self.data
        for part in target:
            if isinstance(node, dict) and part in node:
                node = node[part]
            elif isinstance(node, list) and isinstance(part, int) and 0 <= part < len(node):
                node = node[part]
            else:
                return (0, 0)
        self.active.add(target)
        try:
            result = self.size(node, target)
        finally:
            self.active.discard(target)
        self.memo[target] = result
        return result

    @staticmethod
    def target(body: str, path: tuple) -> Optional[tuple]:
        if ":" in body:
            name, _, args = body.partition(":")
            if name.strip() not in _KEY_RESOLVERS:
                return None
            body = args.split(",", 1)[0].strip()
        if not body:
            return None
        dots = len(body) - len(body.lstrip("."))
        base: tuple = path[: len(path) - dots] if dots else ()
        parts = [p for p in re.split(r"[.\[\]]+", body[dots:]) if p]
        return base + tuple(int(p) if p.isdigit() else p for p in parts)


def _check_expansion(data: dict, file: str) -> None:
    try:
        chars, nodes = _Expansion(data).size(data, ())
    except RecursionError:
        raise InputError(InputProblem(file, "interpolations refer to each other too deeply; refusing to resolve them")) from None
    if chars > MAX_INTERPOLATED_CHARS or nodes > MAX_EXPANDED_NODES:
        raise InputError(
            InputProblem(
                file,
                f"interpolations would expand past {MAX_INTERPOLATED_CHARS // 1048576} MiB or "
                f"{MAX_EXPANDED_NODES} values (an interpolation bomb?); refusing to resolve them",
            )
        )


def resolve_interpolations(cfg: Config) -> None:
    """Replace every ``${...}`` by its value, as OmegaConf would at launch, with the built-in resolvers only.

    Nothing is ever registered. A value that uses a resolver OmegaConf does not ship (``${foo:bar}``),
    or an ``${oc.env:X}`` whose variable is not set here, is left as written and listed in
    ``cfg.warnings``; any other failure (a missing key, a cycle) is an input error, as it is for Bridge.
    """
    if not has_interpolation(cfg.data):
        return
    plain = _plain_for_omegaconf(cfg.data)
    _check_expansion(plain, cfg.file)
    from omegaconf import OmegaConf
    from omegaconf.errors import OmegaConfBaseException, UnsupportedInterpolationType

    def input_error(exc: Exception, path: Optional[tuple] = None) -> InputError:
        if path is None:
            key = getattr(exc, "full_key", None) or ""
            path = tuple(int(p) if p.isdigit() else p for p in re.split(r"[.\[\]]+", key) if p)
        line, col = cfg.position(path)
        msg = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
        return InputError(InputProblem(cfg.file, f"unresolvable interpolation: {msg}", dotted(path) or None, line, col))

    try:
        conf = OmegaConf.create(plain)
        resolved = OmegaConf.to_container(conf, resolve=True)
    except UnsupportedInterpolationType:
        resolved = None  # resolve key by key below, leaving the unknown ones as written
    except OmegaConfBaseException as exc:
        if not _env_unset(exc):
            raise input_error(exc) from None
        resolved = None
    except RecursionError:
        raise InputError(InputProblem(cfg.file, "unresolvable interpolation: references nest too deep")) from None
    except Exception as exc:  # a built-in resolver may raise anything; it must not escape as a traceback
        raise InputError(InputProblem(cfg.file, f"unresolvable interpolation: {exc}")) from None

    def fetch(path: tuple) -> Any:
        if resolved is not None:
            node: Any = resolved
            for part in path:
                node = node[str(part)] if isinstance(node, dict) else node[part]
            return node
        node = conf
        for part in path:
            node = node[str(part)] if isinstance(node, dict) or OmegaConf.is_dict(node) else node[part]
        return OmegaConf.to_container(node, resolve=True) if OmegaConf.is_config(node) else node

    def walk(value: Any, path: tuple) -> Any:
        if isinstance(value, dict):
            return {k: walk(v, path + (k,)) for k, v in value.items()}
        if isinstance(value, list):
            return [walk(v, path + (i,)) for i, v in enumerate(value)]
        if isinstance(value, str) and "${" in value:
            if "oc.env" in value:
                cfg.uses_env_resolver = True
            try:
                out = fetch(path)
            except UnsupportedInterpolationType as exc:
                name = (str(exc).splitlines() or [""])[0].rsplit(" ", 1)[-1]
                cfg.warnings.append(
                    f"{dotted(path)}: {value} left unresolved: '{name}' is not one of OmegaConf's built-in "
                    "resolvers (overlap never registers or runs one)"
                )
                cfg.unresolved_paths.add(path)
                return value
            except OmegaConfBaseException as exc:
                if not _env_unset(exc):
                    raise input_error(exc, path) from None
                cfg.warnings.append(
                    f"{dotted(path)}: {value} left unresolved: the environment variable is not set on this "
                    "machine (the launch machine may set it)"
                )
                cfg.unresolved_paths.add(path)
                return value
            except RecursionError:
                raise input_error(RecursionError("references nest too deep"), path) from None
            except Exception as exc:
                raise input_error(exc, path) from None
            cfg.interpolated_paths.add(path)
            cfg.raw_interpolations[path] = value
            return out
        return value

    cfg.data = walk(cfg.data, ())


def _env_unset(exc: Exception) -> bool:
    """OmegaConf's ``oc.env`` failing because the variable is not set here (omegaconf/resolvers/oc)."""
    return "Environment variable" in str(exc) and "not found" in str(exc)
