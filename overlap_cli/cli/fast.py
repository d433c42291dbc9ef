"""The ``overlap`` entry point: ``overlap check`` without typer, everything else through the Typer app.

A pre-commit hook starts ``overlap check`` on every commit. Typer costs ~100 ms of each start (its import,
and the validators it builds for every option of ``check`` on each run), more than the check itself; so
``check`` is parsed here from the same table the Typer command is built from (``cli.options.CHECK``): the
same names and short forms, ``--opt=value`` and ``--opt value``, options anywhere among the arguments,
``--`` (kept in the arguments: the words after it are a script's command line), the last value winning, repeatable --select/--ignore/--extend-select. The record it builds goes to
the same body, ``cli.check.run_check``, through the same guard (``cli.check.guarded``) as the Typer
command. Anything else -- another command, ``--help``, an option or a value this parser is not sure of --
goes to ``cli.app.main()`` untouched, so typer's help and error messages stay exactly what they are.
``overlap diff`` (two checks, held to the same budget) is parsed the same way from ``cli.options.DIFF`` and
runs ``cli.diff.diff``.
tests/cli/test_fastcli.py runs both paths side by side and compares them byte for byte.
"""

from __future__ import annotations

import sys

from overlap_cli.cli import options

# The only integers taken here: plain decimal digits, no sign, spaces, underscores or leading zeros.
# Typer (pydantic) also accepts "+3", " 3", "3.0" and "1_0"; those, and every out-of-range value, go to
# typer, which either accepts them or prints its own error.
_MAX_DIGITS = 18


class Unsure(Exception):
    """This command line is not one the fast path can take exactly as typer would: let typer have it."""


def _integer(text: str, minimum: int) -> int:
    if not (text.isascii() and text.isdigit()) or len(text) > _MAX_DIGITS or (len(text) > 1 and text[0] == "0"):
        raise Unsure
    value = int(text)
    if value < minimum:
        raise Unsure  # typer's "not in the range" message
    return value


def _choice(*allowed: str):
    def convert(text: str) -> str:
        if text not in allowed:  # typer's enum choices are case-sensitive
            raise Unsure
        return text

    return convert


def _text(text: str) -> str:
    return text


def _converter(param):
    if param.kind == options.INT:
        return lambda text: _integer(text, param.minimum)
    if param.kind == options.CHOICE:
        return _choice(*param.choices)
    return _text


def _spellings(table) -> dict:
    """Option name (long and short) -> (row, value a flag sets | None, converter)."""
    found = {}
    for param in table:
        for name, flag_value in param.spellings().items():
            found[name] = (param, flag_value, _converter(param))
    return found


CHECK_SPELLINGS = _spellings(options.CHECK)
DIFF_SPELLINGS = _spellings(options.DIFF)


def parse_check(argv: list):
    """The ``Options`` record of ``overlap check`` followed by ``argv`` (see ``parse``)."""
    return parse(options.CHECK, CHECK_SPELLINGS, argv)


def parse_diff(argv: list):
    """The ``Options`` record of ``overlap diff`` followed by ``argv`` (two checks: the same budget)."""
    return parse(options.DIFF, DIFF_SPELLINGS, argv)


def parse(table, spellings: dict, argv: list):
    """The ``Options`` record of the command of ``table`` followed by ``argv``.

    Raises Unsure for anything typer should see: an unknown option (``--help`` included), a flag given a
    value, a missing or doubtful value, no positional argument (typer's "Missing argument")."""
    positional: list = []
    given: dict = {}
    rest = list(argv)
    while rest:
        arg = rest.pop(0)
        if arg == "--":  # the words after it are a Python script's command line: kept behind the "--" (cli.check)
            positional += [arg, *rest]
            break
        if len(arg) < 2 or arg[0] != "-":  # "-" alone is a file name for typer too
            positional.append(arg)
            continue
        if arg.startswith("--"):
            name, eq, attached = arg.partition("=")
            explicit = attached if eq else None
        else:  # -f json, -fjson, -j2: everything after the letter is the value (typer: "-f=json" gives "=json")
            name, explicit = arg[:2], arg[2:] or None
        if name not in spellings:
            raise Unsure
        param, flag_value, convert = spellings[name]
        if flag_value is not None:  # a flag: "--te=yes" is a typer usage error
            if explicit is not None:
                raise Unsure
            given[param.dest] = flag_value
            continue
        if explicit is None:
            if not rest:
                raise Unsure  # typer: "Option '--gpu' requires an argument."
            explicit = rest.pop(0)
        # A value that looks like an option ("--gpu --format") is taken by typer as the value: rare enough to
        # leave to it, rather than risk a different reading here.
        if explicit.startswith("-"):
            raise Unsure
        if param.kind == options.MULTIPLE:
            given.setdefault(param.dest, []).append(explicit)
        else:
            given[param.dest] = convert(explicit)  # repeated: the last one wins, as in typer
    if not positional and next(p for p in table if p.kind == options.ARGUMENTS).required:
        raise Unsure
    given["args"] = positional
    return options.Options(table, given)


def _typer_must_see(argv: list) -> bool:
    if not argv or argv[0] not in ("check", "diff"):
        return True
    import os

    if os.name == "nt":  # typer expands wildcards in arguments there
        return True
    # Shell completion requests (click reads _<PROG>_COMPLETE) are typer's business.
    if any(k.startswith("_") and k.endswith("_COMPLETE") for k in os.environ):
        return True
    for arg in argv:
        try:
            arg.encode("utf-8")
        except UnicodeEncodeError:  # undecodable bytes in a file name: leave them to typer's own handling
            return True
    return False


def main() -> None:
    try:
        _run(sys.argv[1:])
    except KeyboardInterrupt:  # while modules load, before a command's own guard (cli.check.guarded) is in place
        sys.stderr.write("overlap: interrupted\n")
        sys.exit(130)


def _run(argv: list) -> None:
    parsed = None
    if not _typer_must_see(argv):
        try:
            parsed = (parse_check if argv[0] == "check" else parse_diff)(argv[1:])
        except Unsure:
            parsed = None
    if parsed is None:
        from overlap_cli.cli.app import main as typer_main

        typer_main()
        return
    from overlap_cli.cli.check import guarded, run_check

    if argv[0] == "diff":
        from overlap_cli.cli.diff import diff as run_diff

        _exit(guarded(run_diff, parsed))
    _exit(guarded(run_check, parsed))


def _exit(code: int) -> None:
    """Exit with ``code``. What the run made is moved out of the cyclic collector's reach first: the
    collection at interpreter exit would otherwise walk every object still alive (a 40,000-line script's
    reading: ~0.2 s) only to find nothing to free that exit does not free anyway."""
    import gc

    gc.freeze()
    sys.exit(code)


if __name__ == "__main__":
    main()
