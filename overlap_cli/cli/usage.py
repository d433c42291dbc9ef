"""Usage errors raised by the command-line parser (typer's vendored click) as one line with a suggestion.

click prints a usage block, a "Try --help" line and an ``Error:`` line; overlap prints one line on stderr
in the form of its own usage errors, and exits 2 as click does::

    overlap: error: no such option --wrld-size (did you mean --world-size?)

``OneLineErrors`` is a context manager the Typer group wraps around parsing and invocation
(cli.app.OverlapGroup): a click UsageError passing through it is re-raised as ``OneLineUsageError``, whose
``show`` typer's main loop calls in place of click's. Only the command-line path imports this module.
"""

from __future__ import annotations

import re
from difflib import get_close_matches

from typer._click.exceptions import BadOptionUsage, BadParameter, MissingParameter, NoArgsIsHelpError, NoSuchOption, UsageError


class OneLineUsageError(UsageError):
    def __init__(self, line: str, ctx=None):
        super().__init__(line, ctx)

    def show(self, file=None) -> None:
        import sys

        (file or sys.stderr).write("overlap: error: " + " ".join(self.message.split()) + "\n")


# The command being parsed, for the hint of an error that carries no context (the option parser raises some
# without one); cli.app.OverlapGroup.resolve_command sets it as each sub-command is resolved.
current_command = ["overlap"]


def _help_hint(ctx) -> str:
    path = ctx.command_path if ctx is not None else current_command[0]
    return f"see `{path} --help`"


def _option_names(ctx) -> list:
    if ctx is None:
        return []
    names = []
    for p in ctx.command.params:
        if p.param_type_name == "option":
            names += [o for o in (*p.opts, *p.secondary_opts) if o.startswith("--")]
    return names + ["--help"]


def _closest(word: str, candidates, key=lambda s: s) -> list:
    by_key = {key(c): c for c in candidates}
    return [by_key[m] for m in get_close_matches(key(word), list(by_key), n=1, cutoff=0.6)]


def _suggest(matches, ctx) -> str:
    return f"did you mean {matches[0]}?" if matches else _help_hint(ctx)


def _first_opt(param) -> str:
    opts = [o for o in getattr(param, "opts", ()) if o.startswith("--")] or list(getattr(param, "opts", ()))
    return opts[0] if opts else param.name


def _clean(message: str) -> str:
    message = message.strip()
    if message.startswith("Value error, "):  # the value validator's prefix
        message = message[len("Value error, "):]
    message = message.rstrip(".")
    return message[:1].lower() + message[1:]


def one_line(exc: UsageError) -> str:
    """The message of one usage error, with a suggestion (a close match, else where to read the help)."""
    ctx = exc.ctx
    if isinstance(exc, NoSuchOption):
        name = exc.option_name
        matches = _closest(name, _option_names(ctx), key=lambda s: s.lstrip("-"))
        return f"no such option {name} ({_suggest(matches, ctx)})"
    if isinstance(exc, MissingParameter):
        param = exc.param
        if param is None:
            what = exc.param_type or "parameter"
        elif param.param_type_name == "argument":
            what = f"argument {getattr(param, 'metavar', None) or param.name.upper()}"
        else:
            what = f"option {_first_opt(param)}"
        return f"missing {what} ({_help_hint(ctx)})"
    if isinstance(exc, BadParameter):
        param = exc.param
        name = _first_opt(param) if param is not None and param.param_type_name == "option" else (
            getattr(param, "metavar", None) or (param.name if param is not None else "a parameter"))
        message = _clean(exc.message)
        descriptor = getattr(param, "type_descriptor", None)
        choices = [getattr(c, "value", c) for c in (getattr(descriptor, "choices", None) or ())]
        if choices and getattr(descriptor, "is_choice", False):
            given = re.match(r"'(.*)' is not one of", message)
            value = given.group(1) if given else ""
            matches = _closest(value, [str(c) for c in choices], key=str.lower) if value else []
            allowed = ", ".join(str(c) for c in choices)
            hint = f"did you mean {matches[0]}?" if matches else f"choose from {allowed}"
            return f"invalid value for {name}: {value!r} ({hint})" if value else f"invalid value for {name}: {message} ({hint})"
        return f"invalid value for {name}: {message} ({_help_hint(ctx)})"
    if isinstance(exc, BadOptionUsage):
        m = re.match(r"Option '(.+)' requires an argument", exc.message)
        if m:
            return f"option {m.group(1)} requires a value ({_help_hint(ctx)})"
        m = re.match(r"Option '(.+)' does not take a value", exc.message)
        if m:
            return f"option {m.group(1)} takes no value (give {m.group(1)} alone)"
        return f"{_clean(exc.message)} ({_help_hint(ctx)})"
    m = re.match(r"No such command '(.+?)'", exc.message)
    if m and ctx is not None:
        commands = list(getattr(ctx.command, "commands", {}) or {})
        return f"no such command {m.group(1)!r} ({_suggest(_closest(m.group(1), commands), ctx)})"
    m = re.match(r"Got unexpected extra argument(?:s|\(s\))? \((.*)\)", exc.message)
    if m:
        return f"unexpected extra argument {m.group(1)} ({_help_hint(ctx)})"
    return f"{_clean(exc.message)} ({_help_hint(ctx)})"


class OneLineErrors:
    """``with OneLineErrors(): ...`` turns a click UsageError into a OneLineUsageError (help stays help)."""

    def __enter__(self):
        return self

    def __exit__(self, kind, exc, tb):
        if exc is None or not isinstance(exc, UsageError) or isinstance(exc, (OneLineUsageError, NoArgsIsHelpError)):
            return False
        try:
            line = one_line(exc)
        except Exception:  # a message shape not foreseen here: click's own text, still on one line
            line = " ".join(_clean(exc.format_message()).split())
        raise OneLineUsageError(line, exc.ctx) from None
