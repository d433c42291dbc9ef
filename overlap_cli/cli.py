"""Command line: ``overlap check``, ``overlap fix``, ... (Typer). Heavy modules load inside commands."""

from __future__ import annotations

import sys
from enum import Enum
from typing import List, Optional

import typer

from . import __version__

app = typer.Typer(
    name="overlap",
    help="Check and fix Megatron-Bridge communication-overlap settings before you spend GPU hours.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
    rich_markup_mode=None,
)

EXIT_CLEAN, EXIT_FINDINGS, EXIT_INPUT = 0, 1, 2


class Format(str, Enum):
    text = "text"
    json = "json"


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
GPU = typer.Option(None, "--gpu", help="Target GPU: a100|h100|h200|b200|b300|gb200|gb300.")
TEVersion = typer.Option(None, "--te-version", help="Transformer Engine version on the target, e.g. 2.7.")
TorchVersion = typer.Option(None, "--torch-version", help="PyTorch version on the target, e.g. 2.6.")


def build_target(world_size, nodes, gpus_per_node, te, config_file: Optional[str] = None, gpu=None, te_version=None, torch_version=None):
    from .target import Target

    if world_size is not None and (nodes is not None or gpus_per_node is not None):
        raise usage_error("give either --world-size or --nodes/--gpus-per-node, not both")
    if (nodes is None) != (gpus_per_node is None):
        raise usage_error("--nodes and --gpus-per-node go together")
    t = Target()
    if world_size is not None:
        t.world_size, t.sources["world_size"] = world_size, "flag"
    elif nodes is not None:
        t.world_size, t.sources["world_size"] = nodes * gpus_per_node, "flag"
    if te is not None:
        t.transformer_engine, t.sources["transformer_engine"] = te, "flag"
    for name, value in (("gpu", gpu), ("te_version", te_version), ("torch_version", torch_version)):
        if value is not None:
            t.extra[name], t.sources[name] = value, "flag"
    return t


def split_args(args: List[str]):
    """FILE... and OVERRIDES... come in one list; an override is key=value, +key=value, ++key=value or ~key."""
    import os

    from .loader import is_override

    files, overrides = [], []
    for a in args:
        if is_override(a) and not os.path.exists(a):
            overrides.append(a)
        else:
            files.append(a)
    return files, overrides


def exit_code(results, threshold: str = "warning") -> int:
    from .model import SEVERITY_RANK

    if any(r.error is not None for r in results):
        return EXIT_INPUT
    limit = SEVERITY_RANK[threshold]
    if any(SEVERITY_RANK[f.severity] >= limit for r in results for f in r.findings):
        return EXIT_FINDINGS
    return EXIT_CLEAN


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
    format: Format = typer.Option(Format.text, "--format", "-f", help="Output format."),
    annotate: bool = typer.Option(False, "--annotate", help="Print the config back with effective values and provenance comments."),
    output: Optional[str] = typer.Option(None, "-o", "--output", help="With --annotate: write the annotated config to this file."),
):
    """Resolve the effective TP/DP/PP overlap settings and report findings with stable codes."""
    import os

    from .loader import parse_override
    from .model import InputError

    files, raw_overrides = split_args(args)
    if not files:
        raise usage_error("no config file given")
    if output is not None and not annotate:
        raise usage_error("-o/--output is used with --annotate")
    try:
        overrides = [parse_override(o) for o in raw_overrides]
    except InputError as exc:
        raise usage_error(exc.problem.message) from None
    target = build_target(world_size, nodes, gpus_per_node, te, gpu=gpu, te_version=te_version, torch_version=torch_version)

    from .engine import check_file

    results = [check_file(f, target, overrides) for f in files]

    if annotate:
        from .annotate import annotate_text

        if output is not None:
            if len(files) != 1:
                raise usage_error("-o/--output takes one input file")
            try:
                if os.path.exists(output) and os.path.samefile(output, files[0]):
                    raise usage_error("-o/--output must not be the input file")
            except OSError:
                pass
        chunks = []
        for r in results:
            if r.error is not None:
                sys.stderr.write(r.error.one_line() + "\n")
                continue
            chunks.append(annotate_text(r))
        text = "".join(chunks)
        if output is not None:
            from .writer import atomic_write

            try:
                atomic_write(output, text)
            except OSError as exc:
                raise usage_error(f"{output}: cannot write: {exc.strerror or exc}") from None
            sys.stderr.write(f"annotated config written to {output}\n")
        else:
            sys.stdout.write(text)
        raise typer.Exit(exit_code(results))

    if format == Format.json:
        from .report.json_report import render

        sys.stdout.write(render(results) + "\n")
    else:
        if sys.stdout.isatty():
            from .report.text_report import render_rich

            render_rich(results)
        else:
            from .report.text_report import render_plain

            render_plain(results, sys.stdout)
    raise typer.Exit(exit_code(results))


# Further commands live in their own modules (cmd_*.py); importing one registers it on ``app``.
# Those modules import only typer at top level, so this costs little at start-up.
for _name in ("cmd_fix", "cmd_presets", "cmd_env", "cmd_rules"):
    try:
        __import__(f"{__package__}.{_name}")
    except ModuleNotFoundError as _exc:  # a command not built yet
        if _exc.name != f"{__package__}.{_name}":
            raise


def main() -> None:
    try:
        app()
    except KeyboardInterrupt:
        sys.stderr.write("overlap: interrupted\n")
        sys.exit(130)
