"""Command line: ``overlap check``, ``overlap fix``, ... (Typer). Heavy modules load inside commands.

The ``overlap`` entry point is fastcli.main: it runs ``check`` itself (no typer) whenever it can parse the
arguments exactly as this app would, and hands everything else -- help, other commands, errors -- to main().
"""

from __future__ import annotations

import sys
from enum import Enum
from typing import List, Optional

import typer
import typer.core

from overlap_cli import __version__
from overlap_cli.cli import check as check_cmd
from overlap_cli.cli.check import EXIT_CLEAN, EXIT_FINDINGS, EXIT_INPUT, UsageError, exit_code, split_args  # noqa: F401  (used by cmd_*.py)

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

    def resolve_command(self, ctx, args):
        cmd_name, cmd, rest = super().resolve_command(ctx, args)
        from overlap_cli.cli.usage import current_command

        current_command[0] = f"{ctx.command_path} {cmd_name}"  # named in the hint of a context-less error
        return cmd_name, cmd, rest


app = typer.Typer(
    cls=OverlapGroup,
    name="overlap",
    help="Check and fix Megatron-Bridge communication-overlap settings before you spend GPU hours.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
    rich_markup_mode=None,
)


class Format(str, Enum):
    text = "text"
    concise = "concise"
    json = "json"
    sarif = "sarif"
    github = "github"
    auto = "auto"  # github under GitHub Actions, text elsewhere


class Threshold(str, Enum):
    warning = "warning"
    error = "error"


def usage_error(message: str) -> "typer.Exit":
    sys.stderr.write(f"overlap: error: {message}\n")
    return typer.Exit(EXIT_INPUT)


def _version(value: bool):
    if value:
        typer.echo(f"overlap-cli {__version__}")
        raise typer.Exit()


@app.callback()
def main_callback(
    version: bool = typer.Option(False, "--version", callback=_version, is_eager=True, help="Show the version and exit."),
):
    """Check and fix Megatron-Bridge communication-overlap settings before launch."""


# ---------------------------------------------------------------------------------------------
# Shared target options
# ---------------------------------------------------------------------------------------------

WorldSize = typer.Option(None, "--world-size", min=1, help="Total GPUs of the launch (data-parallel size = world / (TP*PP*CP)).")
Nodes = typer.Option(None, "--nodes", min=1, help="Number of nodes (with --gpus-per-node).")
GpusPerNode = typer.Option(None, "--gpus-per-node", min=1, help="GPUs per node (with --nodes).")
TE = typer.Option(None, "--te/--no-te", help="Whether Transformer Engine is present on the target (default: present).")
GPU = typer.Option(None, "--gpu", help="Target GPU: a100|h100|h200|b200|b300|gb200|gb300|vr200|r100.")
TEVersion = typer.Option(None, "--te-version", help="Transformer Engine version on the target, e.g. 2.7.")
TorchVersion = typer.Option(None, "--torch-version", help="PyTorch version on the target, e.g. 2.6.")


SettingsPath = typer.Option(None, "--settings", metavar="PATH", help="Read [tool.overlap] from this TOML file instead of the nearest pyproject.toml.")
Detect = typer.Option(False, "--detect", help="Read this machine: Transformer Engine and torch versions (package metadata), GPU model and count (through torch, if installed).")
EnvFromShell = typer.Option(False, "--env-from-shell", help="Launch variables exported in this shell override env_vars (Bridge applies env_vars with setdefault).")


def build_target(*args, **kwargs):
    """check_cmd.build_target for the Typer commands (fix, env, presets): a usage error exits 2."""
    try:
        return check_cmd.build_target(*args, **kwargs)
    except UsageError as exc:
        raise usage_error(str(exc)) from None


# ---------------------------------------------------------------------------------------------
# overlap check
# ---------------------------------------------------------------------------------------------


@app.command()
def check(
    args: List[str] = typer.Argument(..., metavar="FILE... [OVERRIDES...]", help="Config files, then Hydra-style overrides (key=value, +key=value, ++key=value, ~key)."),
    world_size: Optional[int] = WorldSize,
    nodes: Optional[int] = Nodes,
    gpus_per_node: Optional[int] = GpusPerNode,
    te: Optional[bool] = TE,
    gpu: Optional[str] = GPU,
    te_version: Optional[str] = TEVersion,
    torch_version: Optional[str] = TorchVersion,
    settings: Optional[str] = SettingsPath,
    detect: bool = Detect,
    env_from_shell: bool = EnvFromShell,
    format: Format = typer.Option(Format.text, "--format", "--output-format", "-f", help="Output format (auto: github under GitHub Actions, else text)."),
    select: Optional[List[str]] = typer.Option(None, "--select", help="Only these rules: codes, prefixes (TP, DP3), rule names or ALL; comma-separated or repeated."),
    ignore: Optional[List[str]] = typer.Option(None, "--ignore", help="Rules not to report (codes, prefixes, names)."),
    extend_select: Optional[List[str]] = typer.Option(None, "--extend-select", help="Rules to add to the selection."),
    severity_threshold: Threshold = typer.Option(Threshold.warning, "--severity-threshold", help="Lowest severity that makes the exit code 1."),
    exit_zero: bool = typer.Option(False, "--exit-zero", help="Exit 0 even when findings are reported (input errors still exit 2)."),
    jobs: int = typer.Option(1, "--jobs", "-j", min=0, help="Check files in N worker processes (0: one per CPU). Output order does not change."),
    configs_only: bool = typer.Option(False, "--configs-only", help="Skip files without a model/ddp/comm_overlap/mixed_precision/optimizer section even when named (pre-commit)."),
    annotate: bool = typer.Option(False, "--annotate", help="Print the config back with effective values and provenance comments (instead of the report)."),
    output_file: Optional[str] = typer.Option(None, "-o", "--output-file", "--output", metavar="FILE", help="Write the report (with --annotate: the annotated config) to FILE instead of stdout; atomic, never over an input."),
    annotate_output: Optional[str] = typer.Option(None, "--annotate-output", metavar="FILE", help="Also write the annotated config of the one input file to FILE; the report is printed as usual."),
    show_info: bool = typer.Option(False, "--show-info", help="Text: also list info findings (they restate what Bridge does by default)."),
    show_effective: bool = typer.Option(False, "--show-effective", help="Text: also print each file's effective overlap settings with provenance (always in JSON and --annotate)."),
    quiet: bool = typer.Option(False, "-q", "--quiet", help="Print only warnings and errors: no summary, notes or hints."),
    statistics: bool = typer.Option(False, "--statistics", help="Count findings per code instead of listing them (text or json)."),
):
    """Resolve the effective TP/DP/PP overlap settings and report findings with stable codes."""
    # The body is check_cmd.run_check, shared with the typer-free fast path (fastcli.py).
    raise typer.Exit(check_cmd.run_check(
        args, world_size=world_size, nodes=nodes, gpus_per_node=gpus_per_node, te=te, gpu=gpu, te_version=te_version,
        torch_version=torch_version, settings=settings, detect=detect, env_from_shell=env_from_shell,
        format=format.value, select=select, ignore=ignore, extend_select=extend_select,
        severity_threshold=severity_threshold.value, exit_zero=exit_zero, jobs=jobs, configs_only=configs_only,
        annotate=annotate, output_file=output_file, annotate_output=annotate_output, show_info=show_info,
        show_effective=show_effective, quiet=quiet, statistics=statistics,
    ))


# Further commands live in their own modules of this package; importing one registers it on ``app``.
# Those modules import only typer at top level, so this costs little at start-up.
from overlap_cli.cli import env, fix, presets, rules  # noqa: E402,F401


def main() -> None:
    try:
        app()
    except KeyboardInterrupt:
        sys.stderr.write("overlap: interrupted\n")
        sys.exit(130)
    except Exception as exc:  # a bug in overlap-cli: one line and exit 2, never a traceback
        from overlap_cli.check.results import internal_problem

        sys.stderr.write("overlap: " + internal_problem("", exc).one_line().lstrip(": ") + "\n")
        sys.exit(EXIT_INPUT)
