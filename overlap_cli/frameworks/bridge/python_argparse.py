"""``argparse`` as training scripts use it, read as CPython's Lib/argparse.py reads the words:
``ArgumentParser(...)``, ``add_argument`` (flags, ``dest``, ``type``, ``default``, ``action`` store /
store_true / store_false / store_const / append / count / BooleanOptionalAction, ``choices``, ``required``,
``nargs``), argument groups, ``set_defaults``, ``parse_args`` / ``parse_known_args`` (``allow_abbrev``
prefixes). A string default goes through ``type`` (``_get_values``); an unknown word is "unrecognized
arguments", a bad value "invalid int value" / "invalid choice", a missing required argument "the following
arguments are required": each ends the process with status 2 (``ArgumentParser.error``), which the reader
reports as that line's refusal. The words are the script's (python_abstract.Invocation: None when the
script is checked by itself: the defaults, a required argument unknown).
"""

from __future__ import annotations

TYPE_CHECKING = False  # the typing module costs ~2.5 ms of start-up; annotations here are strings (PEP 563)
if TYPE_CHECKING:
    from typing import Optional

from overlap_cli.frameworks.bridge.python_abstract import NOT_KNOWN, Func, Import, PyObject, Refusal, Unknown, invocation_of

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
    """argparse's Namespace: its attributes by dest (``args.tp`` reads it as a mapping); ``given``: dest -> the
    script's own command-line words that set it (``--tp 4``), the provenance of a value assigned from it."""

    def __init__(self, *args):
        super().__init__(*args)
        self.given = {}


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
        given, words_given = True, False
        if words is None:
            words = invocation_of(interp).argv
            given = words_given = words is not None
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
        if words_given:
            ns.given = {dest: " ".join(w for w in spelled if w is not None) for dest, spelled in ns.given.items()}
        else:  # parse_args([...]) in the file: its words are the file's, not the command line's
            ns.given = {}
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
                    start, i = i, self._take(interp, opt, words, i, attached if eq else None, ns, node)
                    ns.given[opt.dest] = words[start:i]
                    seen.add(opt.dest)
                    continue
                if positionals:
                    opt = positionals.pop(0)
                    ns[opt.dest] = self._check(opt, self._convert(interp, opt, word, node))
                    ns.given[opt.dest] = [word]
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
    """A word argparse takes for a negative number, not an option (argparse.py ``_negative_number_matcher``:
    ``^-\\d+$|^-\\d*\\.\\d+$``), given a parser without options that look like one."""
    import re

    return re.fullmatch(r"-\d+|-\d*\.\d+", word) is not None
