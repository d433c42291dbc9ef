"""``overlap check`` without a command-line framework: the one implementation behind both entry points.

cli.py's Typer command and fastcli.py's own argument parser both call ``run_check``; neither adds
behaviour of its own. Nothing here imports typer (its import and its per-option validators cost ~100 ms
of every start). A usage error is ``UsageError``: one ``overlap: error: ...`` line on stderr,
exit code 2. ``build_target`` also serves ``fix``, ``env`` and ``presets`` (through cli.build_target).
"""

from __future__ import annotations

import os
import sys

EXIT_CLEAN, EXIT_FINDINGS, EXIT_INPUT = 0, 1, 2


class UsageError(Exception):
    """A bad flag, flag combination or settings file: reported as one line, exit 2."""


def report_usage_error(message: str) -> None:
    sys.stderr.write(f"overlap: error: {message}\n")


def build_target(
    world_size,
    nodes,
    gpus_per_node,
    te,
    config_file=None,
    gpu=None,
    te_version=None,
    torch_version=None,
    *,
    settings=None,
    detect: bool = False,
    env_from_shell: bool = False,
):
    """The target profile: flags > --detect > [tool.overlap] (``settings`` or the pyproject.toml nearest to
    ``config_file``, else to the working directory) > defaults. The returned target re-reads [tool.overlap]
    per config file (``Target.for_file``, applied by engine.check_file). Bad flags or settings: UsageError."""
    from overlap_cli.check.results import InputError
    from overlap_cli.target.settings import find_settings
    from overlap_cli.target.profile import check_version, normalize_gpu, profile

    if world_size is not None and (nodes is not None or gpus_per_node is not None):
        raise UsageError("give either --world-size or --nodes/--gpus-per-node, not both")
    if (nodes is None) != (gpus_per_node is None):
        raise UsageError("--nodes and --gpus-per-node go together")
    try:
        gpu = normalize_gpu(gpu) if gpu is not None else None
        te_version = check_version(te_version, "--te-version") if te_version is not None else None
        torch_version = check_version(torch_version, "--torch-version") if torch_version is not None else None
    except ValueError as exc:
        raise UsageError(str(exc)) from None
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
        from overlap_cli.target.detect import detect as read_machine

        detection = read_machine()
    try:
        found = find_settings(config_file, settings)
        return profile(flags, found, detection, dict(os.environ), settings)
    except InputError as exc:
        raise UsageError(exc.problem.one_line()) from None


def split_args(args):
    """FILE... and OVERRIDES... come in one list; an override is key=value, +key=value, ++key=value or ~key."""
    from overlap_cli.config.overrides import is_override

    files, overrides = [], []
    for a in args:
        if is_override(a) and not os.path.exists(a):
            overrides.append(a)
        else:
            files.append(a)
    return files, overrides


def exit_code(results, threshold: str = "warning") -> int:
    from overlap_cli.check.results import SEVERITY_RANK

    if any(r.error is not None for r in results):
        return EXIT_INPUT
    limit = SEVERITY_RANK[threshold]
    if any(SEVERITY_RANK[f.severity] >= limit for r in results for f in r.findings):
        return EXIT_FINDINGS
    return EXIT_CLEAN


def run_check(
    args,
    *,
    world_size=None,
    nodes=None,
    gpus_per_node=None,
    te=None,
    gpu=None,
    te_version=None,
    torch_version=None,
    settings=None,
    detect: bool = False,
    env_from_shell: bool = False,
    format: str = "text",
    select=None,
    ignore=None,
    extend_select=None,
    severity_threshold: str = "warning",
    exit_zero: bool = False,
    jobs: int = 1,
    configs_only: bool = False,
    annotate: bool = False,
    output_file=None,
    annotate_output=None,
    show_info: bool = False,
    show_effective: bool = False,
    quiet: bool = False,
    statistics: bool = False,
) -> int:
    """``overlap check ARGS`` with already-parsed options (the defaults are the command's); returns the exit
    code. Writes the report to stdout (or ``output_file``), errors of unreadable files to stderr."""
    view = {"show_info": show_info, "show_effective": show_effective, "quiet": quiet, "statistics": statistics}
    try:
        return _check(
            list(args), world_size, nodes, gpus_per_node, te, gpu, te_version, torch_version, settings, detect,
            env_from_shell, format, select, ignore, extend_select, severity_threshold, exit_zero, jobs,
            configs_only, annotate, output_file, annotate_output, view,
        )
    except UsageError as exc:
        report_usage_error(str(exc))
        return EXIT_INPUT


def _check(
    args, world_size, nodes, gpus_per_node, te, gpu, te_version, torch_version, settings, detect, env_from_shell,
    format, select, ignore, extend_select, severity_threshold, exit_zero, jobs, configs_only, annotate, output_file,
    annotate_output, view,
) -> int:
    from overlap_cli.config.overrides import parse_override
    from overlap_cli.check.results import InputError

    files, raw_overrides = split_args(args)
    if not files:
        raise UsageError("no config file given")
    check_output_options(format, annotate, annotate_output, view["statistics"])
    try:
        overrides = [parse_override(o) for o in raw_overrides]
    except InputError as exc:
        raise UsageError(exc.problem.message) from None
    target = build_target(
        world_size, nodes, gpus_per_node, te, files[0], gpu=gpu, te_version=te_version, torch_version=torch_version,
        settings=settings, detect=detect, env_from_shell=env_from_shell,
    )

    from overlap_cli.check.runner import check_files, progress_bar

    files, skipped, selection, problems = gather_inputs(files, configs_only, select, ignore, extend_select, settings)
    for path in (output_file, annotate_output):
        refuse_input_as_output(path, files)  # every config found, so a folder's files are covered too
    annotating = annotate or annotate_output is not None
    if annotate_output is not None and len(files) != 1:
        raise UsageError("--annotate-output takes one input file")
    with progress_bar(len(files), sys.stderr.isatty() and not annotating) as bar:
        results = problems + check_files(files, target, overrides, selection, 1 if annotating else jobs, bar.advance, keep_views=annotating)

    if annotate:
        return _write_annotated(results, files, output_file, view["quiet"])
    if annotate_output is not None:
        _write_annotated(results, files, annotate_output, view["quiet"], errors_to_stderr=False)

    from overlap_cli.report import resolve_format, write

    fmt = resolve_format(format)
    if output_file is None:
        write(results, fmt, sys.stdout, skipped, tty=sys.stdout.isatty(), **view)
    else:
        import io

        buffer = io.StringIO()
        write(results, fmt, buffer, skipped, tty=False, **view)
        _atomic_write(output_file, buffer.getvalue())
    code = exit_code(results, severity_threshold)
    return EXIT_CLEAN if exit_zero and code == EXIT_FINDINGS else code


def check_output_options(format, annotate, annotate_output, statistics) -> None:
    """Option combinations that have no meaning: a usage error before anything is read."""
    if annotate and annotate_output is not None:
        raise UsageError("give --annotate (the annotated config instead of the report) or --annotate-output FILE "
                         "(the annotated config to FILE, beside the report), not both")
    if annotate and format not in ("text", "auto"):
        raise UsageError(f"--annotate prints the config back, not a report: it takes no --format {format} "
                         "(use --annotate-output FILE to write the annotated config beside the report)")
    if annotate and statistics:
        raise UsageError("--annotate and --statistics exclude each other")
    if statistics and format in ("sarif", "github"):
        raise UsageError(f"--statistics prints text or json, not {format}")


def refuse_input_as_output(path, files) -> None:
    """An output file (-o, --annotate-output) never overwrites a config being checked."""
    if path is None:
        return
    for f in files:
        try:
            if os.path.exists(path) and os.path.exists(f) and os.path.samefile(path, f):
                raise UsageError(f"{path}: an output file must not be an input file")
        except OSError:
            pass


def _atomic_write(path, text) -> None:
    from overlap_cli.fix.write import atomic_write

    try:
        atomic_write(path, text)
    except OSError as exc:
        raise UsageError(f"{path}: cannot write: {exc.strerror or exc}") from None


def gather_inputs(files, configs_only, select, ignore, extend_select, settings):
    """What check and fix share: the rule selection, and FILE/DIR arguments expanded into config files
    (skipped ones noted on stderr). Returns (files, skipped, selection, unreadable-file results)."""
    from overlap_cli.check.runner import gather
    from overlap_cli.check.selection import SelectionError, cli_selection

    try:
        selection = cli_selection(select, ignore, extend_select, settings)
    except SelectionError as exc:
        raise UsageError(str(exc)) from None
    files, skipped, problems = gather(files, configs_only)
    for path, reason in skipped:
        sys.stderr.write(f"note: {path}: skipped: {reason}\n")
    return files, skipped, selection, problems


def _write_annotated(results, files, output, quiet=False, errors_to_stderr=True) -> int:
    """The config back with effective values and provenance comments: --annotate prints it (or writes it to
    -o FILE), --annotate-output FILE writes it beside the report. One input file when written to a file."""
    from overlap_cli.report.annotate import annotate_text

    if output is not None and len(files) != 1:
        raise UsageError("-o/--output-file with --annotate takes one input file")
    chunks = []
    for r in results:
        if r.error is not None:
            if errors_to_stderr:  # with --annotate-output the report says it
                sys.stderr.write(r.error.one_line() + "\n")
            continue
        chunks.append(annotate_text(r))
    text = "".join(chunks)
    if output is not None:
        if not chunks:
            return exit_code(results)  # nothing could be annotated: leave no empty file behind
        _atomic_write(output, text)
        if not quiet:
            sys.stderr.write(f"annotated config written to {output}\n")
    else:
        sys.stdout.write(text)
    return exit_code(results)
