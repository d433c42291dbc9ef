"""What the Python reader knows of Python's standard library as training scripts use it, read against how
the script is run (python_abstract.Invocation: its command-line words and its environment):

- ``argparse.ArgumentParser(...)`` (python_argparse);
- ``os.environ[...]``, ``os.environ.get``, ``os.getenv``, ``"X" in os.environ``, ``os.path`` joins;
- ``pathlib.Path`` (``Path(__file__).parent / "conf"``), ``__file__``;
- ``OmegaConf.from_cli()`` (the words as a dotlist), ``hydra.main``'s composed config (its YAML and the
  words as Hydra overrides).

A script checked by itself is run without words (argparse's defaults, Hydra's YAML as written) in the
environment ``--set VAR=VALUE`` / ``--env-from-shell`` give: a variable neither gives is not known, and
``os.getenv(NAME, default)`` takes its default, as the shell reader takes ``${VAR:-default}``.
"""

from __future__ import annotations

import ast
import os

TYPE_CHECKING = False  # the typing module costs ~2.5 ms of start-up; annotations here are strings (PEP 563)
if TYPE_CHECKING:
    from typing import Optional

from overlap_cli.frameworks.bridge.python_abstract import (
    NOT_KNOWN,
    Import,
    Invocation,
    PyObject,
    Refusal,
    Site,
    Unknown,
    invocation_of,
)
from overlap_cli.frameworks.bridge.python_argparse import ArgParser

__all__ = ("Invocation", "PathValue", "call", "from_cli", "hydra_config", "is_hydra_main", "module_attribute",
           "name_value", "path_attribute", "path_method")


# ---------------------------------------------------------------------------------------------------
# os.environ / os.getenv
# ---------------------------------------------------------------------------------------------------


class Environ(PyObject):
    """``os.environ`` as the caller sets it (Invocation), and what the script itself sets in it."""

    def __init__(self, invocation: Invocation):
        self.set_here: dict = {}
        self.sites: dict = {}  # name -> Site of the script's assignment
        self.invocation = invocation

    def lookup(self, interp, name, node, default=NOT_KNOWN):
        """The variable's value; ``default`` when it is not known to be set (NOT_KNOWN: ``os.environ[name]``,
        which raises KeyError when it is unset)."""
        if isinstance(name, Unknown):
            return name
        if not isinstance(name, str):
            return Unknown(f"os.environ[{name!r}] at {interp.at(node)}")
        if name in self.set_here:
            return self.set_here[name]
        inv = self.invocation
        if name in inv.environ:
            return inv.environ[name]
        if default is not NOT_KNOWN:
            return default
        if inv.complete:
            raise Refusal(f"os.environ[{name!r}]: {name} is not set in the environment (--env-from-shell) and "
                          "Python raises KeyError", node.lineno, node.col_offset + 1)
        return Unknown(f"the environment variable {name} read at {interp.at(node)} (give --set {name}=VALUE "
                       "or --env-from-shell)")

    def item(self, interp, key, node):
        return self.lookup(interp, key, node)

    def set_item(self, interp, key, value, node) -> bool:
        if isinstance(key, str):
            self.set_here[key] = value if isinstance(value, (str, Unknown)) else Unknown(f"os.environ[{key!r}] at {interp.at(node)}")
            self.sites[key] = Site(node.lineno, node.col_offset + 1, None, interp.file)
            return True
        return False

    def contains(self, interp, key, node):
        if not isinstance(key, str):
            return Unknown(f"{key!r} in os.environ at {interp.at(node)}")
        if key in self.set_here or key in self.invocation.environ:
            return True
        if self.invocation.complete:
            return False
        return Unknown(f"whether the environment sets {key} ({interp.at(node)}; give --set {key}=VALUE or --env-from-shell)")

    def method(self, interp, name, args, kwargs, node):
        if name in ("get", "setdefault") and args:
            default = args[1] if len(args) > 1 else kwargs.get("default")
            value = self.lookup(interp, args[0], node, default)
            if name == "setdefault" and isinstance(args[0], str) and args[0] not in self.invocation.environ:
                self.set_here.setdefault(args[0], value)
            return value
        return NOT_KNOWN


def environ_of(interp) -> Environ:
    """The one ``os.environ`` of the run being read."""
    ctx = interp.reader.ctx
    if ctx.environ is None or ctx.environ.invocation is not invocation_of(interp):
        ctx.environ = Environ(invocation_of(interp))
    return ctx.environ


# ---------------------------------------------------------------------------------------------------
# pathlib
# ---------------------------------------------------------------------------------------------------


class PathValue(str):
    """A ``pathlib.Path``: its text, with ``/``, ``parent``, ``name``, ``stem``, ``suffix``, ``resolve()``."""

    def __truediv__(self, other):
        if not isinstance(other, str):
            return NotImplemented
        return PathValue(os.path.join(self, other))

    def __rtruediv__(self, other):
        return PathValue(os.path.join(other, self)) if isinstance(other, str) else NotImplemented


def path_attribute(p: PathValue, name: str):
    if name == "parent":
        return PathValue(os.path.dirname(p.rstrip("/")) or ".")
    if name == "name":
        return os.path.basename(p)
    if name == "stem":
        return os.path.splitext(os.path.basename(p))[0]
    if name == "suffix":
        return os.path.splitext(p)[1]
    return NOT_KNOWN


def path_method(p: PathValue, name: str, args: list):
    if name in ("resolve", "absolute", "expanduser") and not args:
        return PathValue(os.path.abspath(p))
    if name == "joinpath" and all(isinstance(a, str) for a in args):
        return PathValue(os.path.join(p, *args))
    if name in ("exists", "is_file", "is_dir") and not args:
        return {"exists": os.path.exists, "is_file": os.path.isfile, "is_dir": os.path.isdir}[name](p)
    if name == "with_suffix" and len(args) == 1 and isinstance(args[0], str):
        return PathValue(os.path.splitext(p)[0] + args[0])
    return NOT_KNOWN


# ---------------------------------------------------------------------------------------------------
# The calls of the standard library the reader evaluates
# ---------------------------------------------------------------------------------------------------


def call(interp, func: Import, args: list, kwargs: dict, node):
    """The value of calling ``func`` of the standard library (or OmegaConf / Hydra), or NOT_KNOWN."""
    module, name = func.module, func.name
    if module == "argparse" and name == "ArgumentParser":
        abbrev = kwargs.get("allow_abbrev", True)
        return ArgParser(node.lineno, abbrev if isinstance(abbrev, bool) else True)
    if module == "os" and name == "getenv" and args:
        return environ_of(interp).lookup(interp, args[0], node, args[1] if len(args) > 1 else kwargs.get("default"))
    if module == "os.path" and name in ("join", "dirname", "basename", "splitext") and args and all(isinstance(a, str) for a in args):
        return getattr(os.path, name)(*args)
    if module == "os.path" and name in ("exists", "isfile", "isdir") and len(args) == 1 and isinstance(args[0], str):
        return getattr(os.path, name)(args[0])
    if module == "pathlib" and name in ("Path", "PosixPath", "PurePath") and args and all(isinstance(a, str) for a in args):
        return PathValue(os.path.join(*args))
    if module == "omegaconf.OmegaConf" and name == "from_cli" and len(args) <= 1:
        return from_cli(interp, node, args[0] if args else kwargs.get("args_list"))
    return NOT_KNOWN


def name_value(value, interp=None):
    """``from os import environ``: the environment object."""
    if isinstance(value, Import) and value.module == "os" and value.name == "environ" and interp is not None:
        return environ_of(interp)
    return value


def module_attribute(interp, module: str, attr: str):
    if module == "os" and attr == "environ":
        return environ_of(interp)
    if module == "sys" and attr == "argv":
        argv = invocation_of(interp).argv
        return [interp.file] + list(argv or []) if argv is None or all(isinstance(w, str) for w in argv) else \
            Unknown(f"sys.argv at {interp.file}: a word of the launch is not known statically")
    return None


def words_as_dotlist(interp, words, node, what: str):
    """The launch's words as Hydra / OmegaConf dotlist words (``key=value``), or Unknown."""
    if words is None:
        return []
    if any(w is None for w in words):
        return Unknown(f"{what} at {interp.at(node)}: a word of the launch is not known statically")
    bad = [w for w in words if ("=" not in w and not w.startswith("~")) or w.startswith("-")]
    if bad:
        return Unknown(f"{what} at {interp.at(node)}: {bad[0]!r} is not a key=value word")
    return list(words)


def from_cli(interp, node, given=None):
    """``OmegaConf.from_cli(args_list=None)``: the words (``sys.argv[1:]`` unless given) as a dotlist
    (omegaconf.py ``from_cli`` -> ``from_dotlist``), a nested mapping."""
    if isinstance(given, Unknown):
        return given
    words = words_as_dotlist(interp, invocation_of(interp).argv if given is None else given, node, "OmegaConf.from_cli()")
    if isinstance(words, Unknown):
        return words
    out: dict = {}
    from overlap_cli.config.overrides import parse_override_value

    for w in words:
        key, _, text = w.partition("=")
        node_ = out
        parts = key.split(".")
        for part in parts[:-1]:
            node_ = node_.setdefault(part, {})
            if not isinstance(node_, dict):
                return Unknown(f"OmegaConf.from_cli() at {interp.at(node)}: {w!r}")
        node_[parts[-1]] = parse_override_value(text)
    return out


def is_hydra_main(fn) -> Optional[ast.Call]:
    """The ``@hydra.main(...)`` decorator of a function, or None."""
    for dec in getattr(fn, "decorator_list", ()):
        if isinstance(dec, ast.Call):
            f = dec.func
            name = f.attr if isinstance(f, ast.Attribute) else f.id if isinstance(f, ast.Name) else None
            if name == "main" and (not isinstance(f, ast.Attribute) or isinstance(f.value, ast.Name) and f.value.id == "hydra"):
                return dec
    return None


def hydra_config(interp, dec: ast.Call, fn):
    """The config ``@hydra.main(config_path=, config_name=)`` hands the function: the YAML file (relative to
    the script's folder, hydra/_internal/utils.py ``detect_calling_file_or_module_from_task_function``) with
    the launch's words applied as overrides; a ``defaults`` list other than ``_self_`` is not composed here."""
    kw = {k.arg: interp.eval(k.value) for k in dec.keywords if k.arg}
    where = f"@hydra.main at {interp.file}:{dec.lineno}"
    path, name = kw.get("config_path"), kw.get("config_name")
    if not isinstance(name, str) or not (path is None or isinstance(path, str)):
        return Unknown(f"{where}: config_path / config_name are not literals")
    folder = os.path.join(os.path.dirname(interp.file), path or "")
    file = os.path.join(folder, name if name.endswith(".yaml") else name + ".yaml")
    if not os.path.isfile(file):
        return Unknown(f"{where}: {file} is not there to read")
    from overlap_cli.config.loader import load_config
    from overlap_cli.problems import InputError

    try:
        data = load_config(file).data
    except InputError as exc:
        return Unknown(f"{where}: {exc.problem.one_line()}")
    defaults = data.get("defaults") if isinstance(data, dict) else None
    if defaults not in (None, ["_self_"]):
        return Unknown(f"{where}: {file}'s defaults list composes other files (not read)")
    data = {k: v for k, v in data.items() if k != "defaults"}
    words = words_as_dotlist(interp, invocation_of(interp).argv, dec, "@hydra.main's overrides")
    if isinstance(words, Unknown):
        return words
    from overlap_cli.config.overrides import parse_override

    for w in words:
        try:
            ov = parse_override(w)
        except InputError as exc:
            raise Refusal(f"{where}: {exc.problem.message}", dec.lineno) from None
        node_ = data
        for part in ov.path[:-1]:
            nxt = node_.get(part) if isinstance(node_, dict) else None
            if not isinstance(nxt, dict):
                if ov.op not in ("add", "force"):
                    raise Refusal(f"{where}: Could not override '{'.'.join(map(str, ov.path))}'. Key not in struct", dec.lineno)
                nxt = node_.setdefault(part, {})
            node_ = nxt
        last = ov.path[-1]
        if ov.op == "delete":
            node_.pop(last, None)
        elif ov.op == "set" and last not in node_:
            raise Refusal(f"{where}: Could not override '{'.'.join(map(str, ov.path))}'. To append to your config use "
                          f"+{'.'.join(map(str, ov.path))}={w.partition('=')[2]}", dec.lineno)
        else:
            node_[last] = ov.value
    return data
