"""What the Python reader knows of Python's standard library as training scripts use it, and of how the
script is run (``Invocation``: its command-line words and its environment):

- ``argparse``: ``ArgumentParser(...)``, ``add_argument`` (flags, ``dest``, ``type``, ``default``,
  ``action`` store / store_true / store_false / store_const / append / count / BooleanOptionalAction,
  ``choices``, ``required``, ``nargs``), argument groups, ``set_defaults``, ``parse_args`` /
  ``parse_known_args`` read as argparse reads the words (CPython Lib/argparse.py: a string default goes
  through ``type``, ``_get_values``; an unknown word is "unrecognized arguments", a missing required one
  "the following arguments are required", each ending the process with status 2);
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

from overlap_cli.frameworks.bridge.python_abstract import NOT_KNOWN, Func, Import, PyObject, Refusal, Unknown
from overlap_cli.records import dataclass, field  # not dataclasses: start-up time (records.py)


@dataclass
class Invocation:
    """How the script is run: ``argv`` its words after the script (None: checked by itself, run without
    any; an item None: a word not known statically), ``environ`` the variables the caller is known to set,
    ``complete``: every other variable is unset (--env-from-shell: the shell's whole environment)."""

    argv: Optional[list] = None
    environ: dict = field(default_factory=dict)
    complete: bool = False


def invocation_of(interp) -> Invocation:
    return getattr(interp.reader.ctx, "invocation", None) or Invocation()


# ---------------------------------------------------------------------------------------------------
# os.environ / os.getenv
# ---------------------------------------------------------------------------------------------------


class Environ(PyObject):
    """``os.environ`` as the caller sets it (Invocation), and what the script itself sets in it."""

    def __init__(self, invocation: Invocation):
        self.set_here: dict = {}
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
    holder = interp.reader.ctx
    env = getattr(holder, "_environ", None)
    if env is None or env.invocation is not invocation_of(interp):
        env = Environ(invocation_of(interp))
        holder._environ = env
    return env


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
# argparse
# ---------------------------------------------------------------------------------------------------


class Option:
    __slots__ = ("flags", "dest", "action", "type", "default", "const", "choices", "required", "nargs", "line")

    def __init__(self, **kw):
        for k in self.__slots__:
            setattr(self, k, kw.get(k))

    @property
    def positional(self) -> bool:
        return not self.flags[0].startswith("-")

    @property
    def shown(self) -> str:
        return "/".join(self.flags) if not self.positional else self.dest


class Namespace(dict):
    """argparse's Namespace: its attributes by dest (``args.tp`` reads it as a mapping)."""


class ArgParser(PyObject):
    """An ``argparse.ArgumentParser`` the script builds (its groups add to it)."""

    def __init__(self, line: int, allow_abbrev: bool = True):
        self.line, self.allow_abbrev = line, allow_abbrev
        self.options: list = []
        self.defaults: dict = {}
        self.opaque: Optional[str] = None  # why its reading is not known (subparsers, an option it cannot read)

    def method(self, interp, name, args, kwargs, node):
        if name == "add_argument":
            self._add(interp, args, kwargs, node)
            return None
        if name in ("add_argument_group", "add_mutually_exclusive_group"):
            return self
        if name == "set_defaults":
            self.defaults.update(kwargs)
            return None
        if name in ("parse_args", "parse_known_args", "parse_intermixed_args"):
            return self._parse(interp, name, args, kwargs, node)
        if name in ("print_help", "print_usage", "format_help", "error", "exit"):
            return NOT_KNOWN
        if name == "add_subparsers":
            self.opaque = f"add_subparsers at {interp.at(node)} (subcommands are not read)"
            return Unknown(self.opaque)
        return NOT_KNOWN

    def _add(self, interp, args, kwargs, node) -> None:
        where = interp.at(node)
        if not args or not all(isinstance(a, str) for a in args) or "**" in kwargs:
            self.opaque = f"add_argument(...) at {where} that overlap-cli cannot read"
            return
        action = kwargs.get("action")
        if isinstance(action, Import) and action.name == "BooleanOptionalAction":
            action = "boolean_optional"
        if action is not None and action not in ("store", "store_true", "store_false", "store_const", "append",
                                                 "count", "boolean_optional", "help", "version"):
            self.opaque = f"add_argument(..., action=...) at {where} that overlap-cli does not model"
            return
        flags = list(args)
        dest = kwargs.get("dest")
        if dest is None:
            if flags[0].startswith("-"):
                longs = [f for f in flags if f.startswith("--")]
                dest = (longs[0] if longs else flags[0]).lstrip("-").replace("-", "_")
            else:
                dest = flags[0]
        default = kwargs.get("default", NOT_KNOWN)
        if default is NOT_KNOWN:
            default = {"store_true": False, "store_false": True, "boolean_optional": None}.get(action)
            if action == "append" or action == "count":
                default = None
        opt = Option(flags=flags, dest=dest, action=action or "store", type=kwargs.get("type"), default=default,
                     const=kwargs.get("const"), choices=kwargs.get("choices"), required=kwargs.get("required", False),
                     nargs=kwargs.get("nargs"), line=node.lineno)
        if action == "boolean_optional":
            opt.flags = flags + ["--no-" + f[2:] for f in flags if f.startswith("--")]
        self.options.append(opt)

    # -- reading the words ----------------------------------------------------------------------
    def _parse(self, interp, name, args, kwargs, node):
        known = name == "parse_known_args"
        where = interp.at(node)
        if self.opaque:
            return Unknown(f"the arguments parsed at {where}: {self.opaque}")
        words = args[0] if args else kwargs.get("args")
        given = True
        if words is None:
            words = invocation_of(interp).argv
            given = words is not None
            words = [] if words is None else words
        if isinstance(words, Unknown):
            return Unknown(f"the arguments parsed at {where}: {words.reason}")
        if not isinstance(words, list):
            return Unknown(f"the arguments parsed at {where} are not known")
        words = list(words)
        ns = Namespace()
        for opt in self.options:
            if opt.action in ("help", "version"):
                continue
            ns[opt.dest] = self._default(interp, opt, node)
        ns.update(self.defaults)
        extras: list = []
        seen: set = set()
        error = self._read(interp, words, ns, extras, seen, known, node)
        if error is None:
            missing = [o for o in self.options if (o.required or (o.positional and o.nargs not in ("?", "*")))
                       and o.dest not in seen and o.action not in ("help", "version")]
            if missing:
                if given:
                    error = "the following arguments are required: " + ", ".join(o.shown for o in missing)
                else:
                    for o in missing:
                        ns[o.dest] = Unknown(f"{o.shown} (required, {interp.file}:{o.line}): the launch's arguments give it")
        if error is not None:
            raise Refusal(f"argparse at {where}: error: {error} (the script exits with status 2)", node.lineno, node.col_offset + 1)
        if known:
            return [ns, extras]
        return ns

    def _default(self, interp, opt: Option, node):
        value = opt.default
        if isinstance(value, str) and opt.action == "store" and opt.type is not None:
            return self._convert(interp, opt, value, node)  # argparse converts a string default (_get_values)
        return value

    def _convert(self, interp, opt: Option, text, node):
        if text is None:
            return Unknown(f"the value of {opt.shown} ({interp.at(node)}) is not known statically")
        kind = opt.type
        if kind is None:
            return text
        if isinstance(kind, Func):
            return interp.call_function(kind, [text], {}, node)
        name = kind.name if isinstance(kind, Import) and kind.module in ("", "builtins") else None
        if isinstance(kind, Import) and not kind.module:
            name = kind.name
        if name is None and isinstance(kind, str):
            name = kind
        if name not in ("int", "float", "str"):
            return Unknown(f"{opt.shown}'s type at {interp.file}:{opt.line} is not one overlap-cli evaluates")
        try:
            return {"int": int, "float": float, "str": str}[name](text)
        except ValueError:
            raise _ArgError(f"argument {opt.shown}: invalid {name} value: {text!r}") from None

    def _find(self, word: str) -> Optional[Option]:
        for opt in self.options:
            if word in opt.flags:
                return opt
        if self.allow_abbrev and word.startswith("--"):
            hits = [o for o in self.options for f in o.flags if f.startswith(word)]
            if len({id(o) for o in hits}) == 1:
                return hits[0]
        return None

    def _read(self, interp, words, ns, extras, seen, known, node) -> Optional[str]:
        """Reads ``words`` into ``ns``; the error argparse stops with, or None."""
        positionals = [o for o in self.options if o.positional]
        try:
            i = 0
            rest_positional = False
            while i < len(words):
                word = words[i]
                if word is None:
                    for o in self.options:
                        ns[o.dest] = Unknown(f"a word of the launch that is not known statically may set {o.shown}")
                    extras.append(Unknown("a word of the launch that is not known statically"))
                    i += 1
                    continue
                if word == "--" and not rest_positional:
                    rest_positional = True
                    i += 1
                    continue
                if word.startswith("-") and len(word) > 1 and not rest_positional and not _negative_number(word):
                    flag, eq, attached = word.partition("=") if word.startswith("--") else (word, "", "")
                    opt = self._find(flag)
                    if opt is None:
                        if not known:
                            return f"unrecognized arguments: {' '.join(w for w in words[i:] if w)}"
                        extras.append(word)
                        i += 1
                        continue
                    i = self._take(interp, opt, words, i, attached if eq else None, ns, node)
                    seen.add(opt.dest)
                    continue
                if positionals:
                    opt = positionals.pop(0)
                    ns[opt.dest] = self._check(opt, self._convert(interp, opt, word, node))
                    seen.add(opt.dest)
                elif known:
                    extras.append(word)
                else:
                    return f"unrecognized arguments: {' '.join(w for w in words[i:] if w)}"
                i += 1
        except _ArgError as exc:
            return str(exc)
        return None

    def _take(self, interp, opt: Option, words, i, attached, ns, node) -> int:
        act = opt.action
        if act in ("store_true", "store_false", "store_const", "count", "boolean_optional", "help", "version"):
            if attached is not None:
                raise _ArgError(f"argument {opt.shown}: ignored explicit argument {attached!r}")
            if act == "store_true":
                ns[opt.dest] = True
            elif act == "store_false":
                ns[opt.dest] = False
            elif act == "store_const":
                ns[opt.dest] = opt.const
            elif act == "count":
                ns[opt.dest] = (ns.get(opt.dest) or 0) + 1
            elif act == "boolean_optional":
                ns[opt.dest] = not words[i].startswith("--no-")
            else:
                raise _ArgError(f"{words[i]} prints and exits")
            return i + 1
        if opt.nargs in ("*", "+", "?") or isinstance(opt.nargs, int):
            values = []
            j = i + 1
            if attached is not None:
                values.append(attached)
            else:
                while j < len(words) and (words[j] is None or not words[j].startswith("-") or _negative_number(words[j])):
                    values.append(words[j])
                    j += 1
                    if opt.nargs == "?" or (isinstance(opt.nargs, int) and len(values) == opt.nargs):
                        break
            if opt.nargs == "+" and not values or isinstance(opt.nargs, int) and len(values) != opt.nargs:
                raise _ArgError(f"argument {opt.shown}: expected {'at least one argument' if opt.nargs == '+' else f'{opt.nargs} arguments'}")
            if opt.nargs == "?":
                ns[opt.dest] = self._check(opt, self._convert(interp, opt, values[0], node)) if values else opt.const
            else:
                ns[opt.dest] = [self._check(opt, self._convert(interp, opt, v, node)) for v in values]
            return j
        if attached is not None:
            value, nxt = attached, i + 1
        else:
            if i + 1 >= len(words) or (words[i + 1] is not None and words[i + 1].startswith("-") and not _negative_number(words[i + 1])):
                raise _ArgError(f"argument {opt.shown}: expected one argument")
            value, nxt = words[i + 1], i + 2
        converted = self._check(opt, self._convert(interp, opt, value, node))
        if act == "append":
            old = ns.get(opt.dest)
            ns[opt.dest] = (list(old) if isinstance(old, list) else []) + [converted]
        else:
            ns[opt.dest] = converted
        return nxt

    @staticmethod
    def _check(opt: Option, value):
        if opt.choices is not None and not isinstance(value, Unknown) and isinstance(opt.choices, list) and value not in opt.choices:
            raise _ArgError(f"argument {opt.shown}: invalid choice: {value!r} (choose from {', '.join(map(repr, opt.choices))})")
        return value


class _ArgError(Exception):
    pass


def _negative_number(word: str) -> bool:
    try:
        float(word)
        return True
    except ValueError:
        return False


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
