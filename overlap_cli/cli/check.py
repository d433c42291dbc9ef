"""``overlap check`` without a command-line framework: the one implementation behind both entry points.

The Typer command (cli.app) and the fast path's own parser (cli.fast) both build an ``Options`` record from
``cli.options.CHECK`` and call ``run_check`` through ``guarded``; neither adds behaviour of its own. Nothing
here imports typer (its import and its per-option validators cost ~100 ms of every start).

Shared by every command: ``guarded`` (how a command ends: a usage error, Ctrl-C, a closed pipe, a bug),
``target_from_options`` (the launch target from the ``cli.options.TARGET`` flags), ``split_args`` and
the exit codes. A usage error is ``UsageError``: one ``overlap: error: ...`` line on stderr, exit code 2.
"""

from __future__ import annotations

import os
import sys

EXIT_CLEAN, EXIT_FINDINGS, EXIT_INPUT = 0, 1, 2
NO_INPUT = "no config file given (give FILE..., or --recipe NAME / --base FILE to check a recipe or dump itself)"


class UsageError(Exception):
    """A bad flag, flag combination or settings file: reported as one line, exit 2."""


def report_usage_error(message: str) -> None:
    sys.stderr.write(f"overlap: error: {message}\n")


def guarded(body, opts, passthrough=()) -> int:
    """``body(opts)``'s exit code, however it ends, the same on both entry points: a usage error is one line
    and 2; Ctrl-C is "overlap: interrupted" and 130 (the shell's code for SIGINT); a reader that went away
    (``overlap check ... | head``) is 1 with nothing more said, as click's main loop does; a bug in
    overlap-cli is one line and 2, never a traceback. ``passthrough``: exceptions that are the framework's
    own way of ending a command (typer.Exit), raised on unchanged."""
    sane_streams()
    try:
        return body(opts)
    except passthrough:
        raise
    except UsageError as exc:
        report_usage_error(str(exc))
        return EXIT_INPUT
    except KeyboardInterrupt:
        sys.stderr.write("overlap: interrupted\n")
        return 130
    except BrokenPipeError:
        # No second error when the interpreter flushes stdout on the way out.
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        return EXIT_FINDINGS
    except Exception as exc:
        report_internal_error(exc)
        return EXIT_INPUT


def sane_streams() -> None:
    """What a command writes never fails on the way out: a closed stdout or stderr (``overlap check x >&-``:
    Python leaves it None) writes to /dev/null, as a reader that went away does; a file name that is not
    UTF-8 (a surrogate escape) is written with a backslash escape rather than raising UnicodeEncodeError; and
    Python's warnings from modules the check uses (``re``'s "possible nested set" on a pattern a script holds,
    OmegaConf's) are not printed with their source paths, unless asked for with ``-W`` / PYTHONWARNINGS."""
    for name in ("stdout", "stderr"):
        stream = getattr(sys, name)
        if stream is None:
            setattr(sys, name, open(os.devnull, "w", encoding="utf-8"))
        elif getattr(stream, "errors", None) == "strict" and hasattr(stream, "reconfigure"):
            try:
                stream.reconfigure(errors="backslashreplace")
            except (OSError, ValueError):
                pass
    if not sys.warnoptions:
        import warnings

        warnings.simplefilter("ignore")


def report_internal_error(exc: BaseException) -> None:
    from overlap_cli.problems import internal_problem

    sys.stderr.write("overlap: " + internal_problem("", exc).one_line().lstrip(": ") + "\n")


def target_from_options(opts, config_file=None):
    """The target profile from the ``cli.options.TARGET`` flags of ``opts``: flags > --detect >
    [tool.overlap] (``--settings`` or the pyproject.toml nearest to ``config_file``, else to the working
    directory) > defaults. The returned target re-reads [tool.overlap] per config file (``Target.for_file``,
    applied by engine.check_file). Bad flags or settings: UsageError."""
    from overlap_cli.problems import InputError
    from overlap_cli.launch_profile.settings import find_settings
    from overlap_cli.launch_profile.profile import check_release, check_version, normalize_gpu, profile

    if opts.world_size is not None and (opts.nodes is not None or opts.gpus_per_node is not None):
        raise UsageError("give either --world-size or --nodes/--gpus-per-node, not both")
    if (opts.nodes is None) != (opts.gpus_per_node is None):
        raise UsageError("--nodes and --gpus-per-node go together")
    try:
        gpu = normalize_gpu(opts.gpu) if opts.gpu is not None else None
        te_version = check_version(opts.te_version, "--te-version") if opts.te_version is not None else None
        torch_version = check_version(opts.torch_version, "--torch-version") if opts.torch_version is not None else None
        releases = {name: check_release(getattr(opts, name), "--" + name.replace("_", "-"))
                    for name in ("bridge_version", "core_version") if getattr(opts, name) is not None}
    except ValueError as exc:
        raise UsageError(str(exc)) from None
    flags = {
        "world_size": opts.world_size,
        "nodes": opts.nodes,
        "gpus_per_node": opts.gpus_per_node,
        "transformer_engine": opts.te,
        "gpu": gpu,
        "te_version": te_version,
        "torch_version": torch_version,
        "env_from_shell": opts.env_from_shell or None,
        # --framework (check, fix, env, diff); auto: frameworks.detect looks at each file
        "framework": None if getattr(opts, "framework", "auto") in (None, "auto") else opts.framework,
        "recipe": opts.recipe,
        "base": opts.base,
        "set_vars": _set_vars(getattr(opts, "set_vars", None)),
        "script_argv": script_words(getattr(opts, "args", None))[1],
    }
    if opts.recipe is not None and opts.base is not None:
        raise UsageError("give either --recipe NAME or --base FILE, not both")
    if opts.base is not None:
        from overlap_cli.config.safe_read import refusal

        why = refusal(opts.base)  # a FIFO or device is refused from stat, never opened
        if why is not None or not os.path.isfile(opts.base):
            raise UsageError(f"--base {opts.base}: {why or 'no such file'}")
    flags.update(releases)  # --bridge-version / --core-version, spelt as profile.check_release reads them
    settings = opts.settings
    detection = None
    if opts.detect:
        from overlap_cli.launch_profile.detect import detect as read_machine

        detection = read_machine()
    try:
        found = find_settings(config_file, settings)
        from overlap_cli.frameworks.bridge.recipe_launch import recipe_launch

        target = profile(flags, found, detection, dict(os.environ), settings, recipe_launch=recipe_launch)
        _release_held(target, flags["framework"])
        return target
    except InputError as exc:
        problem = exc.problem
        raise UsageError(problem.describe() if problem.file == "<command line>" else problem.one_line()) from None


def _release_held(target, framework) -> None:
    """A release the run's target names that no file could be checked against (frameworks.target_release):
    one usage error for the run, not one per file. A config's own ``# overlap: target`` line is that
    file's error (engine)."""
    if target.bridge_version is None and target.core_version is None:
        return
    from overlap_cli.frameworks.target_release import validate

    validate(target, framework)


def _set_vars(raw) -> dict:
    """--set VAR=VALUE (repeated): {VAR: VALUE}; a word without a variable name before ``=`` is a usage error."""
    import re

    out: dict = {}
    for item in raw or ():
        name, eq, value = item.partition("=")
        if not eq or not re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", name):
            raise UsageError(f"--set {item}: expected VAR=VALUE (a shell variable name, then =)")
        out[name] = value
    return out


SCRIPT_WORDS = "--"  # in an Options record's args (both parsers keep it): the words after it are a script's argv
NOT_ONE_SCRIPT = ("the words after -- are one Python script's command line (its sys.argv[1:], as a launch passes "
                  "them): name exactly one FILE.py before --")


def script_words(args):
    """(the arguments before ``--``, the words after it: a Python script's ``sys.argv[1:]``, or None when there
    is no ``--``). A file whose name starts with ``-`` is written ``./-NAME``."""
    args = list(args or ())
    if SCRIPT_WORDS not in args:
        return args, None
    at = args.index(SCRIPT_WORDS)
    return args[:at], args[at + 1:]


def options_end(argv, takes_value):
    """The index of the ``--`` that ends a command's options in ``argv`` (None: none does), read as click reads
    it: an option that takes a value (``takes_value(name)``) consumes the next word, ``--opt=value`` and a short
    ``-fjson`` carry theirs. cli.app keeps that ``--`` in the arguments, as cli.fast does."""
    skip = False
    for i, arg in enumerate(argv):
        if skip:
            skip = False
        elif arg == SCRIPT_WORDS:
            return i
        elif arg.startswith("--"):
            skip = "=" not in arg and bool(takes_value(arg))
        elif arg.startswith("-") and len(arg) > 1:  # a cluster of short options: the first that takes a value ends it
            for j in range(1, len(arg)):
                if takes_value("-" + arg[j]):
                    skip = j == len(arg) - 1
                    break
    return None


def split_args(args, script=False):
    """FILE... and OVERRIDES... come in one list; an override is key=value, +key=value, ++key=value or ~key.
    With ``script`` (check, fix, env, estimate) the words after ``--`` are the command line of the one Python
    script named (``target_from_options`` hands them on); a command without script words refuses ``--``."""
    from overlap_cli.config.overrides import is_override

    args, words = script_words(args)
    if words is not None and not script:
        raise UsageError("this command takes no script words after --; a file whose name starts with - is written ./-NAME")
    files, overrides = [], []
    for a in args:
        # A word with = before any path separator that names no file is a dotlist, if a malformed one
        # (model.=1, a..b=2, =3): parse_override then says what is wrong with it, not "file not found".
        if is_override(a) and not os.path.exists(a):
            overrides.append(a)
        else:
            files.append(a)
    if words is not None:
        _one_script(files)
    return files, overrides


def _one_script(files) -> None:
    """Script words apply to one Python script run as a whole, as a launch runs one: several files, a folder,
    a function (``FILE.py::FUNCTION``) or a file of another kind is a usage error."""
    if len(files) != 1 or os.path.isdir(files[0]):
        raise UsageError(NOT_ONE_SCRIPT + (f" (got {len(files)} files)" if len(files) != 1 else f" ({files[0]} is a folder)"))
    if not files[0].endswith(".py"):
        raise UsageError(f"{files[0]}: {NOT_ONE_SCRIPT}; {files[0]} is not one "
                         "(a file whose name starts with - is written ./-NAME)")


def parse_overrides(raw) -> list:
    """The dotlist overrides of the command line, parsed; a malformed one is a usage error."""
    from overlap_cli.problems import InputError
    from overlap_cli.config.overrides import parse_override

    try:
        return [parse_override(o) for o in raw]
    except InputError as exc:
        raise UsageError(exc.problem.message) from None


def layered_inputs(opts, files):
    """With --recipe / --base the files are one run, override files merged in order: (top file or None,
    the files below it). Without: None."""
    if opts.recipe is None and opts.base is None:
        return None
    for f in files:
        if os.path.isdir(f):
            raise UsageError(f"{f}: --recipe/--base merge the override files given, in order; for a folder of "
                             "override files set recipe in [tool.overlap] or [tool.overlap.per-file-target]")
    return (files[-1] if files else None), tuple(files[:-1])


def check_one_config(opts, too_many: str):
    """The single config (plus dotlist overrides) of ``env`` and ``presets suggest``, checked with its
    target: the CheckedFile, or None after printing its input error (the command then exits 2). With
    --recipe/--base: the merged run of the files given."""
    from overlap_cli.check.engine import check

    files, raw_overrides = split_args(opts.args or [], script=True)
    stack = layered_inputs(opts, files)
    if stack is not None:
        top, lower = stack
        checked = check(top, target_from_options(opts, top), parse_overrides(raw_overrides), lower=lower)
    else:
        if len(files) != 1:
            raise UsageError(too_many if files else NO_INPUT)
        checked = check(files[0], target_from_options(opts, files[0]), parse_overrides(raw_overrides))
    if checked.result.error is not None:
        sys.stderr.write(checked.result.error.one_line() + "\n")
        return None
    return checked


def exit_code(results, threshold: str = "warning") -> int:
    from overlap_cli.results import SEVERITY_RANK

    if any(r.error is not None for r in results):
        return EXIT_INPUT
    limit = SEVERITY_RANK[threshold]
    if any(SEVERITY_RANK[f.severity] >= limit for r in results for f in r.findings):
        return EXIT_FINDINGS
    return EXIT_CLEAN


def run_check(opts) -> int:
    """``overlap check`` with the ``Options`` record of ``cli.options.CHECK``; returns the exit code. Writes
    the report to stdout (or ``--output-file``), errors of unreadable files to stderr. A usage error is
    raised as UsageError (``guarded`` reports it)."""
    view = {"show_info": opts.show_info, "show_effective": opts.show_effective, "quiet": opts.quiet,
            "statistics": opts.statistics}  # fmt: skip
    format, annotate, output_file, annotate_output = opts.format, opts.annotate, opts.output_file, opts.annotate_output
    files, raw_overrides = split_args(opts.args or [], script=True)
    stack = layered_inputs(opts, files)
    if not files and stack is None:
        raise UsageError(NO_INPUT)
    check_output_options(format, annotate, annotate_output, opts.statistics)
    overrides = parse_overrides(raw_overrides)
    target = target_from_options(opts, files[-1] if files else None)
    jobs = opts.jobs

    from overlap_cli.check.runner import check_files, progress_bar

    lower: tuple = ()
    if stack is None:
        files, skipped, selection, problems = gather_inputs(files, opts, target=target)
    else:  # one merged run: the top file is checked, the others lie under it
        _files, skipped, selection, problems = gather_inputs(files, opts, discover=False)
        files, lower = [stack[0]], stack[1]
    for path in (output_file, annotate_output):
        refuse_input_as_output(path, [f for f in (*files, *lower, opts.base) if f is not None])  # every config found, so a folder's files are covered too
    annotating = annotate or annotate_output is not None
    if annotate_output is not None and len(files) != 1:
        raise UsageError("--annotate-output takes one input file")
    with progress_bar(len(files), sys.stderr.isatty() and not annotating) as bar:
        if annotating:  # annotate reads each file's resolved view: checked in this process, views kept
            from overlap_cli.check.engine import CheckedFile
            from overlap_cli.check.runner import check_files_with_views

            checked = [CheckedFile(p) for p in problems] + check_files_with_views(files, target, overrides, selection, bar.advance, lower)
            results = [c.result for c in checked]
        else:
            results = problems + check_files(files, target, overrides, selection, jobs, bar.advance, lower)

    # Judged now, before anything is written: the run has read all it reads (a sourced env.sh, a base).
    outputs = judge_outputs(output_file, annotate_output)
    if annotate:
        return _write_annotated(checked, files, outputs.get(output_file), view["quiet"])
    if annotate_output is not None:
        _write_annotated(checked, files, outputs[annotate_output], view["quiet"], errors_to_stderr=False)

    from overlap_cli.report import resolve_format, write

    fmt = resolve_format(format)
    if output_file is None:
        write(results, fmt, sys.stdout, skipped, tty=sys.stdout.isatty(), **view)
    else:
        import io

        buffer = io.StringIO()
        write(results, fmt, buffer, skipped, tty=False, **view)
        _write_output(outputs[output_file], buffer.getvalue())
    code = exit_code(results, opts.severity_threshold)
    return EXIT_CLEAN if opts.exit_zero and code == EXIT_FINDINGS else code


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
                raise UsageError(f"{path}: an output file must not be an input file (the check reads it); nothing was written")
        except OSError:
            pass


def judge_outputs(*paths) -> dict:
    """cli.output's judgement of the output files (a file the run read, a FIFO nobody reads: a usage error)."""
    if all(p is None for p in paths):
        return {}  # the report goes to stdout: nothing to judge, nothing to import
    from overlap_cli.cli.output import OutputError, judge_outputs as judge

    try:
        return judge(*paths)
    except OutputError as exc:
        raise UsageError(str(exc)) from None


def _write_output(output, text) -> None:
    from overlap_cli.cli.output import OutputError

    try:
        output.write(text)
    except OutputError as exc:
        raise UsageError(str(exc)) from None


def gather_inputs(files, opts, discover: bool = True, target=None):
    """What check and fix share: the rule selection (``opts.select``, ``ignore``, ``extend_select``, the
    ``settings`` file), and FILE/DIR arguments expanded into config files (skipped ones noted on stderr; with
    ``opts.configs_only`` also named files without a training section). Returns (files, skipped,
    selection, unreadable-file results)."""
    from overlap_cli.check.runner import gather
    from overlap_cli.check.selection import SelectionError, cli_selection

    try:
        selection = cli_selection(opts.select, opts.ignore, opts.extend_select, opts.settings)
    except SelectionError as exc:
        raise UsageError(str(exc)) from None
    if not discover:  # the files of a merged run: read as they are, in order
        return list(files), [], selection, []
    files, skipped, problems = gather(files, opts.configs_only, target)
    if skipped and getattr(opts, "quiet", False):  # -q: one line for them all
        from overlap_cli.report.text import skipped_counts

        sys.stderr.write(f"note: {skipped_counts(skipped)}\n")
    else:
        for line in skip_notes(skipped):
            sys.stderr.write(line + "\n")
    return files, skipped, selection, problems


def skip_notes(skipped) -> list:
    """One ``note:`` line per skipped file, except the Python files a walk passes (a repository holds hundreds:
    library modules, tests, helpers): those are one line per kind of skip when there are several, with the
    first as the example (``--format json`` lists each with its reason)."""
    from overlap_cli.check.discovery import skip_kind
    from overlap_cli.problems import printable

    lines, python = [], {}
    for path, reason in skipped:
        if path.endswith(".py"):
            python.setdefault(skip_kind(reason), []).append((path, reason))
        else:
            lines.append(f"note: {printable(path)}: skipped: {reason}")
    for kind, items in python.items():
        if len(items) == 1:
            lines.append(f"note: {printable(items[0][0])}: skipped: {items[0][1]}")
        else:
            lines.append(f"note: {len(items)} Python files skipped: {kind} (e.g. {printable(items[0][0])}: {items[0][1]}); "
                         "--format json lists each")
    return lines


def _write_annotated(checked, files, output, quiet=False, errors_to_stderr=True) -> int:
    """The config back with effective values and provenance comments: --annotate prints it (or writes it to
    -o FILE), --annotate-output FILE writes it beside the report (``output``: cli.output's Output, or None).
    One input file when written to a file."""
    from overlap_cli.report.annotate import annotate

    if output is not None and len(files) != 1:
        output.close()
        raise UsageError("-o/--output-file with --annotate takes one input file")
    results = [c.result for c in checked]
    chunks = []
    for c in checked:
        if c.result.error is not None:
            if errors_to_stderr:  # with --annotate-output the report says it
                sys.stderr.write(c.result.error.one_line() + "\n")
            continue
        chunks.append(annotate(c))
    text = "".join(chunks)
    if output is not None:
        if not chunks:
            output.close()
            return exit_code(results)  # nothing could be annotated: leave no empty file behind
        _write_output(output, text)
        if not quiet:
            sys.stderr.write(f"annotated config written to {output.path}\n")
    else:
        sys.stdout.write(text)
    return exit_code(results)
