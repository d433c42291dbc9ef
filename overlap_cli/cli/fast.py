"""The ``overlap`` entry point: ``overlap check`` without typer, everything else through the Typer app.

A pre-commit hook starts ``overlap check`` on every commit. Typer costs ~100 ms of each start (its import,
and the validators it builds for every option of ``check`` on each run), more than the check itself; so
``check`` with options this module knows is parsed here, the way the Typer command parses it (the same
names and short forms, ``--opt=value`` and ``--opt value``, options anywhere among the arguments, ``--``,
the last value winning, repeatable --select/--ignore/--extend-select), and handed to the same
implementation, ``check_cmd.run_check``. Anything else -- another command, ``--help``, an option or a
value this parser is not sure of -- goes to ``cli.main()`` untouched, so typer's help and error messages
stay exactly what they are. tests/cli/test_fastcli.py runs both paths side by side and compares them.

Keep ``CHECK_OPTIONS`` in step with ``cli.check``: a test compares the two option tables.
"""

from __future__ import annotations

import sys

# The only integers taken here: plain decimal digits, no sign, spaces, underscores or leading zeros.
# Typer (pydantic) also accepts "+3", " 3", "3.0" and "1_0"; those, and every out-of-range value, go to
# typer, which either accepts them or prints its own error.
_MAX_DIGITS = 18


class _Unsure(Exception):
    """This command line is not one the fast path can take exactly as typer would: let typer have it."""


def _positive(text: str) -> int:
    return _integer(text, 1)


def _count(text: str) -> int:
    return _integer(text, 0)


def _integer(text: str, minimum: int) -> int:
    if not (text.isascii() and text.isdigit()) or len(text) > _MAX_DIGITS or (len(text) > 1 and text[0] == "0"):
        raise _Unsure
    value = int(text)
    if value < minimum:
        raise _Unsure  # typer's "not in the range" message
    return value


def _choice(*allowed: str):
    def convert(text: str) -> str:
        if text not in allowed:  # typer's enum choices are case-sensitive
            raise _Unsure
        return text

    return convert


def _text(text: str) -> str:
    return text


_FLAG, _MULTIPLE = "flag", "multiple"

#: Option name -> (parameter of run_check, converter | _FLAG with its value | _MULTIPLE). Mirrors cli.check.
CHECK_OPTIONS: dict = {
    "--world-size": ("world_size", _positive),
    "--nodes": ("nodes", _positive),
    "--gpus-per-node": ("gpus_per_node", _positive),
    "--te": ("te", (_FLAG, True)),
    "--no-te": ("te", (_FLAG, False)),
    "--gpu": ("gpu", _text),
    "--te-version": ("te_version", _text),
    "--torch-version": ("torch_version", _text),
    "--settings": ("settings", _text),
    "--detect": ("detect", (_FLAG, True)),
    "--env-from-shell": ("env_from_shell", (_FLAG, True)),
    "--format": ("format", _choice("text", "concise", "json", "sarif", "github", "auto")),
    "--output-format": ("format", _choice("text", "concise", "json", "sarif", "github", "auto")),
    "--select": ("select", _MULTIPLE),
    "--ignore": ("ignore", _MULTIPLE),
    "--extend-select": ("extend_select", _MULTIPLE),
    "--severity-threshold": ("severity_threshold", _choice("warning", "error")),
    "--exit-zero": ("exit_zero", (_FLAG, True)),
    "--jobs": ("jobs", _count),
    "--configs-only": ("configs_only", (_FLAG, True)),
    "--annotate": ("annotate", (_FLAG, True)),
    "--output-file": ("output_file", _text),
    "--output": ("output_file", _text),
    "--annotate-output": ("annotate_output", _text),
    "--show-info": ("show_info", (_FLAG, True)),
    "--show-effective": ("show_effective", (_FLAG, True)),
    "--quiet": ("quiet", (_FLAG, True)),
    "--statistics": ("statistics", (_FLAG, True)),
}
SHORT_OPTIONS = {"-f": "--format", "-j": "--jobs", "-o": "--output-file", "-q": "--quiet"}


def parse_check(argv: list) -> tuple:
    """(FILE... [OVERRIDES...], run_check keyword arguments) for ``check`` followed by ``argv``.

    Raises _Unsure for anything typer should see: an unknown option (``--help`` included), a flag given a
    value, a missing or doubtful value, no positional argument (typer's "Missing argument")."""
    positional: list = []
    options: dict = {}
    rest = list(argv)
    while rest:
        arg = rest.pop(0)
        if arg == "--":  # everything after it is a file or an override, even when it starts with "-"
            positional += rest
            break
        if len(arg) < 2 or arg[0] != "-":  # "-" alone is a file name for typer too
            positional.append(arg)
            continue
        if arg.startswith("--"):
            name, eq, attached = arg.partition("=")
            explicit = attached if eq else None
        else:  # -f json, -fjson, -j2: everything after the letter is the value (typer: "-f=json" gives "=json")
            name = SHORT_OPTIONS.get(arg[:2])
            explicit = arg[2:] or None
        if name not in CHECK_OPTIONS:
            raise _Unsure
        dest, kind = CHECK_OPTIONS[name]
        if isinstance(kind, tuple):  # a flag: "--te=yes" is a typer usage error
            if explicit is not None:
                raise _Unsure
            options[dest] = kind[1]
            continue
        if explicit is None:
            if not rest:
                raise _Unsure  # typer: "Option '--gpu' requires an argument."
            explicit = rest.pop(0)
        # A value that looks like an option ("--gpu --format") is taken by typer as the value: rare enough to
        # leave to it, rather than risk a different reading here.
        if explicit.startswith("-"):
            raise _Unsure
        if kind == _MULTIPLE:
            options.setdefault(dest, []).append(explicit)
        else:
            options[dest] = kind(explicit)  # repeated: the last one wins, as in typer
    if not positional:
        raise _Unsure
    return positional, options


def _typer_must_see(argv: list) -> bool:
    if not argv or argv[0] != "check":
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
    argv = sys.argv[1:]
    parsed = None
    if not _typer_must_see(argv):
        try:
            parsed = parse_check(argv[1:])
        except _Unsure:
            parsed = None
    if parsed is None:
        from overlap_cli.cli.app import main as typer_main

        typer_main()
        return
    from overlap_cli.cli.check import run_check

    try:
        code = run_check(parsed[0], **parsed[1])
    except KeyboardInterrupt:
        sys.stderr.write("overlap: interrupted\n")
        code = 130  # what typer does for an interrupted command
    except BrokenPipeError:
        # The reader went away (`overlap check ... | head`): exit 1 like typer, without a second error when
        # the interpreter flushes stdout on the way out.
        import os

        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        code = 1
    except Exception as exc:  # a bug in overlap-cli: one line and exit 2, never a traceback
        from overlap_cli.check.results import internal_problem

        sys.stderr.write("overlap: " + internal_problem("", exc).one_line().lstrip(": ") + "\n")
        code = 2
    sys.exit(code)


if __name__ == "__main__":
    main()
