"""Command line: ``overlap check``, ``overlap fix``, ... (Typer). Heavy modules load inside commands.

The ``overlap`` entry point is cli.fast.main: it runs ``check`` itself (no typer) whenever it can parse the
arguments exactly as this app would, and hands everything else -- help, other commands, errors -- to main().
Every command is declared as rows in cli.options; ``command`` turns a command's rows into the parameters
Typer reads, so the fast path and Typer parse from one table.
"""

from __future__ import annotations

import sys
from enum import Enum
from typing import List, Optional

import typer
import typer.core

from overlap_cli import __version__
from overlap_cli.cli import check as check_cmd
from overlap_cli.cli import diff, env, estimate, fix, presets, recipes, rules, tune
from overlap_cli.cli import options as table
from overlap_cli.cli.check import EXIT_INPUT


class OverlapGroup(typer.core.TyperGroup):
    """The app's click group: every usage error the parser raises (unknown option, missing value, bad
    choice, missing argument, unknown command), in any command, becomes one line on stderr, exit 2."""

    def make_context(self, info_name, args, parent=None, **extra):
        from overlap_cli.cli.usage import OneLineErrors

        with OneLineErrors():
            return super().make_context(info_name, args, parent, **extra)

    def invoke(self, ctx):
        from overlap_cli.cli.usage import OneLineErrors

        with OneLineErrors():
            return super().invoke(ctx)

    def format_commands(self, ctx, formatter):
        """Each command with its whole first sentence (click cuts summaries at 45 characters with "...")."""
        rows = []
        for name in self.list_commands(ctx):
            cmd = self.get_command(ctx, name)
            if cmd is not None and not cmd.hidden:
                rows.append((name, cmd.get_short_help_str(limit=10_000)))
        if rows:
            with formatter.section("Commands"):
                formatter.write_dl(rows)

    def resolve_command(self, ctx, args):
        cmd_name, cmd, rest = super().resolve_command(ctx, args)
        from overlap_cli.cli.usage import current_command

        current_command[0] = f"{ctx.command_path} {cmd_name}"  # named in the hint of a context-less error
        return cmd_name, cmd, rest


class OverlapCommand(typer.core.TyperCommand):
    """A command whose ``--`` ends its options and stays in its arguments: the words after it are a Python
    script's command line (cli.check.script_words). click drops that ``--``; it is doubled here so click
    passes one on, as cli.fast keeps it."""

    def parse_args(self, ctx, args):
        takes_value = {}
        for p in self.params:
            if getattr(p, "param_type_name", None) == "option":
                for name in (*p.opts, *p.secondary_opts):
                    takes_value[name] = not (p.is_flag or p.count)
        at = check_cmd.options_end(args, takes_value.get)
        if at is not None:
            args = [*args[:at + 1], "--", *args[at + 1:]]
        return super().parse_args(ctx, args)


app = typer.Typer(
    cls=OverlapGroup,
    name="overlap",
    help="Check and fix the communication-overlap settings of Megatron-Bridge and Megatron-LM runs (Bridge configs "
    "and recipes, Megatron-LM and Bridge launch scripts) before you spend GPU hours.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
    rich_markup_mode=None,
)


def _version(value: bool):
    if value:
        from overlap_cli.frameworks.bridge.recipes import release_of, versions

        v = versions(release_of(None))  # the newest release: the default target
        typer.echo(f"overlap-cli {__version__} (Megatron-Bridge {v['megatron-bridge']}, Megatron-Core {v['megatron-core']})")
        raise typer.Exit()


@app.callback()
def main_callback(
    version: bool = typer.Option(False, "--version", callback=_version, is_eager=True, help="Show the version and exit."),
):
    """Check and fix Megatron-Bridge and Megatron-LM communication-overlap settings before launch."""


# ---------------------------------------------------------------------------------------------
# Commands from the rows of cli.options
# ---------------------------------------------------------------------------------------------

_CHOICE_TYPES: dict = {}


def _choice_type(param) -> type:
    """A str Enum of the row's choices: how typer declares a choice (its help lists them, its error names them)."""
    if param.choices not in _CHOICE_TYPES:
        _CHOICE_TYPES[param.choices] = Enum(param.dest.title().replace("_", ""), [(c, c) for c in param.choices], type=str)
    return _CHOICE_TYPES[param.choices]


def _typer_parameter(param):
    """(annotation, typer.Option/Argument) for one row, as a hand-written Typer signature would declare it."""
    k = param.kind
    if k == table.ARGUMENTS:
        if not param.required:
            return Optional[List[str]], typer.Argument(None, metavar=param.metavar, help=param.help)
        return List[str], typer.Argument(..., metavar=param.metavar, help=param.help)
    if k == table.ARGUMENT:
        return str, typer.Argument(..., metavar=param.metavar, help=param.help)
    if k == table.CHOICE:
        kind = _choice_type(param)
        return kind, typer.Option(kind(param.default), *param.names, help=param.help)
    annotation = {
        table.INT: Optional[int] if param.default is None else int,
        table.TEXT: Optional[str],
        table.FLAG: bool,
        table.SWITCH: Optional[bool],
        table.MULTIPLE: Optional[List[str]],
    }[k]
    extra = {"min": param.minimum} if k == table.INT else {}
    if param.metavar is not None:
        extra["metavar"] = param.metavar
    return annotation, typer.Option(param.default, *param.names, help=param.help, **extra)


def plain_value(param, value):
    """The value as the fast path gives it: a choice as its string, an absent repeatable option as None."""
    if param.kind == table.CHOICE:
        return value.value
    if param.kind == table.MULTIPLE:
        return list(value) if value else None
    if param.kind == table.ARGUMENTS:
        return list(value) if value is not None else []
    return value


def command(group, rows, name=None):
    """Register ``body(opts) -> exit code`` on ``group`` with the parameters of ``rows`` (cli.options).

    Typer reads a command's parameters with ``inspect.signature``, which honours ``__signature__``: the
    registered function takes ``**values`` and carries a signature built from the rows. Its values become
    the same ``Options`` record cli.fast builds, and the body runs under the same guard (cli.check.guarded)."""
    import inspect

    def register(body):
        def run(**values):
            given = {p.dest: plain_value(p, values[p.dest]) for p in rows}
            code = check_cmd.guarded(body, table.Options(rows, given), passthrough=(typer.Exit,))
            raise typer.Exit(code or 0)

        parameters = []
        for p in rows:
            annotation, default = _typer_parameter(p)
            parameters.append(inspect.Parameter(p.dest, inspect.Parameter.KEYWORD_ONLY, default=default, annotation=annotation))
        run.__signature__ = inspect.Signature(parameters)
        run.__name__ = run.__qualname__ = body.__name__
        run.__doc__, run.__module__ = body.__doc__, body.__module__
        group.command(name, cls=OverlapCommand)(run)
        return body

    return register


@command(app, table.CHECK)
def check(opts):
    """Resolve the effective TP/DP/PP overlap settings and report findings with stable codes."""
    return check_cmd.run_check(opts)


# The other commands' bodies live in their own modules of this package, which import neither typer nor
# this module (and nothing heavy at top level); they are registered here in the order ``--help`` lists them.
command(app, table.ENV)(env.env)
command(app, table.FIX)(fix.fix)
command(app, table.DIFF, name="diff")(diff.diff)
command(app, table.ESTIMATE, name="estimate")(estimate.estimate_command)
command(app, table.TUNE, name="tune")(tune.tune_command)


def sub_app(name: str, help: str) -> typer.Typer:
    """A command group (``overlap presets ...``) with the app's one-line usage errors."""
    group = typer.Typer(cls=OverlapGroup, name=name, help=help, no_args_is_help=True, rich_markup_mode=None)
    app.add_typer(group, name=name)
    return group


presets_app = sub_app("presets", "Megatron-Bridge's TP-overlap (userbuffers) presets: list them, print one, pick one for a config.")
command(presets_app, table.PRESETS_LIST, name="list")(presets.list_presets)
command(presets_app, table.PRESETS_SHOW, name="show")(presets.show)
command(presets_app, table.PRESETS_SUGGEST, name="suggest")(presets.suggest)
recipes_app = sub_app("recipes", "Megatron-Bridge's own recipes, shipped with overlap-cli as Bridge writes them: list them, print one.")
command(recipes_app, table.RECIPES_LIST, name="list")(recipes.list_recipes)
command(recipes_app, table.RECIPES_SHOW, name="show")(recipes.show)
command(app, table.RULES, name="rules")(rules.rules_command)
command(app, table.EXPLAIN, name="explain")(rules.explain_command)


def main() -> None:
    try:
        app()
    except KeyboardInterrupt:  # before or after a command (a command's own: cli.check.guarded)
        sys.stderr.write("overlap: interrupted\n")
        sys.exit(130)
    except Exception as exc:  # a bug in overlap-cli outside a command: one line and exit 2, never a traceback
        check_cmd.report_internal_error(exc)
        sys.exit(EXIT_INPUT)
