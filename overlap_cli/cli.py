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
GPU = typer.Option(None, "--gpu", help="Target GPU: a100|h100|h200|b200|b300|gb200|gb300.")
TEVersion = typer.Option(None, "--te-version", help="Transformer Engine version on the target, e.g. 2.7.")
TorchVersion = typer.Option(None, "--torch-version", help="PyTorch version on the target, e.g. 2.6.")


SettingsPath = typer.Option(None, "--settings", metavar="PATH", help="Read [tool.overlap] from this TOML file instead of the nearest pyproject.toml.")
Detect = typer.Option(False, "--detect", help="Read this machine: Transformer Engine and torch versions (package metadata), GPU model and count (through torch, if installed).")
EnvFromShell = typer.Option(False, "--env-from-shell", help="Launch variables exported in this shell override env_vars (Bridge applies env_vars with setdefault).")


def build_target(
    world_size,
    nodes,
    gpus_per_node,
    te,
    config_file: Optional[str] = None,
    gpu=None,
    te_version=None,
    torch_version=None,
    *,
    settings: Optional[str] = None,
    detect: bool = False,
    env_from_shell: bool = False,
):
    """The target profile: flags > --detect > [tool.overlap] (``settings`` or the pyproject.toml nearest to
    ``config_file``, else to the working directory) > defaults. The returned target re-reads [tool.overlap]
    per config file (``Target.for_file``, applied by engine.check_file). Bad flags or settings: exit 2."""
    import os

    from .model import InputError
    from .settings import find_settings
    from .target import check_version, normalize_gpu, profile

    if world_size is not None and (nodes is not None or gpus_per_node is not None):
        raise usage_error("give either --world-size or --nodes/--gpus-per-node, not both")
    if (nodes is None) != (gpus_per_node is None):
        raise usage_error("--nodes and --gpus-per-node go together")
    try:
        gpu = normalize_gpu(gpu) if gpu is not None else None
        te_version = check_version(te_version, "--te-version") if te_version is not None else None
        torch_version = check_version(torch_version, "--torch-version") if torch_version is not None else None
    except ValueError as exc:
        raise usage_error(str(exc)) from None
    flags = {
        "world_size": world_size,
        "nodes": nodes,
        "gpus_per_node": gpus_per_node,
        "transformer_engine": te,
        "gpu": gpu,
        "te_version": te_version,
        "torch_version": torch_version,
        "env_from_shell": env_from_shell or None,
    }
    detection = None
    if detect:
        from .detect import detect as read_machine

        detection = read_machine()
    try:
        found = find_settings(config_file, settings)
        return profile(flags, found, detection, dict(os.environ), settings)
    except InputError as exc:
        raise usage_error(exc.problem.one_line()) from None


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
    settings: Optional[str] = SettingsPath,
    detect: bool = Detect,
    env_from_shell: bool = EnvFromShell,
    format: Format = typer.Option(Format.text, "--format", "-f", help="Output format (auto: github under GitHub Actions, else text)."),
    select: Optional[List[str]] = typer.Option(None, "--select", help="Only these rules: codes, prefixes (TP, DP3), rule names or ALL; comma-separated or repeated."),
    ignore: Optional[List[str]] = typer.Option(None, "--ignore", help="Rules not to report (codes, prefixes, names)."),
    extend_select: Optional[List[str]] = typer.Option(None, "--extend-select", help="Rules to add to the selection."),
    severity_threshold: Threshold = typer.Option(Threshold.warning, "--severity-threshold", help="Lowest severity that makes the exit code 1."),
    exit_zero: bool = typer.Option(False, "--exit-zero", help="Exit 0 even when findings are reported (input errors still exit 2)."),
    jobs: int = typer.Option(1, "--jobs", "-j", min=0, help="Check files in N worker processes (0: one per CPU). Output order does not change."),
    configs_only: bool = typer.Option(False, "--configs-only", help="Skip files without a model/ddp/comm_overlap/mixed_precision/optimizer section even when named (pre-commit)."),
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
    target = build_target(
        world_size, nodes, gpus_per_node, te, files[0], gpu=gpu, te_version=te_version, torch_version=torch_version,
        settings=settings, detect=detect, env_from_shell=env_from_shell,
    )

    from .runner import check_files, gather, progress_bar
    from .selection import SelectionError, cli_selection

    try:
        selection = cli_selection(select, ignore, extend_select, settings)
    except SelectionError as exc:
        raise usage_error(str(exc)) from None
    files, skipped, problems = gather(files, configs_only)
    for path, reason in skipped:
        sys.stderr.write(f"note: {path}: skipped: {reason}\n")
    with progress_bar(len(files), sys.stderr.isatty() and not annotate) as bar:
        results = problems + check_files(files, target, overrides, selection, 1 if annotate else jobs, bar.advance, keep_views=annotate)

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

    from .report import resolve_format, write

    write(results, resolve_format(format.value), sys.stdout, skipped, tty=sys.stdout.isatty())
    code = exit_code(results, severity_threshold.value)
    raise typer.Exit(EXIT_CLEAN if exit_zero and code == EXIT_FINDINGS else code)


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
