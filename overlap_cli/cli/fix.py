"""``overlap fix``: make the requested overlaps take effect. Without ``--write`` nothing is written.

The options are ``cli.options.FIX``; cli.app registers ``fix`` as the command. The fixer loads inside it.
"""

from __future__ import annotations

import os
import sys

from overlap_cli.cli.check import (
    EXIT_CLEAN,
    EXIT_FINDINGS,
    EXIT_INPUT,
    UsageError,
    layered_inputs,
    exit_code,
    gather_inputs,
    split_args,
    target_from_options,
)


def fix(opts) -> int:
    """Edit configs so that Bridge keeps the overlaps they ask for: safe fixes by default, comments and
    layout kept, checked again after every round.

    Only findings at or above --severity-threshold (default: warning) are fixed. `info` reaches the info
    findings too, whose fixes are all unsafe (--unsafe-fixes).

    Exit codes: without --write, 1 when something would change (or a file had to be refused), else 0;
    with --write, 0 when no finding at or above the threshold is left, 1 when some remain that no fix
    removes; 2 on input errors (a file that does not parse is never edited) and on files that cannot be
    written."""
    files, overrides = split_args(opts.args, script=True)
    if overrides:
        raise UsageError(
            f"fix edits the file as written; dotlist overrides are not part of it ({' '.join(overrides)}). "
            "Put the values in the file, or use `overlap check` with overrides"
        )
    stack = layered_inputs(opts, files)
    if not files:
        raise UsageError("no config file given" if stack is None else
                         "no override file given: fix writes into the override file, never into the recipe")
    if opts.write and opts.diff:
        raise UsageError("--write and --diff exclude each other")
    target = target_from_options(opts, files[-1])

    from overlap_cli.fix.loop import Outcome, fix_file

    lower: tuple = ()
    if stack is None:
        files, _skipped, selection, problems = gather_inputs(files, opts)
    else:  # one merged run: only its top override file is edited
        _files, _skipped, selection, problems = gather_inputs(files, opts, discover=False)
        files, lower = [stack[0]], stack[1]
    threshold = opts.severity_threshold
    unsafe_fixes = opts.unsafe_fixes
    out = sys.stdout
    from overlap_cli.check.runner import progress_bar

    outcomes = [Outcome(p.file, "", "", error=p.error) for p in problems]
    seen = set()
    # On a terminal a folder run shows a transient bar on stderr; per-file notes follow it, in file order.
    with progress_bar(len(files), sys.stderr.isatty(), "fixing") as bar:
        for path in files:
            real = os.path.realpath(path)
            if real not in seen:  # the same file twice (or two links to it): fix it once
                seen.add(real)
                outcomes.append(fix_file(
                    path, target, unsafe=unsafe_fixes, comments=not opts.no_comments, selection=selection,
                    threshold=threshold, lower=lower,
                ))
            bar.advance()
    for o in outcomes:
        _report_problems(o)

    if opts.write:
        return _write_all(outcomes, out, threshold)
    if opts.diff:
        for o in outcomes:
            if o.changed:
                out.write(_unified_diff(o))
            pending = o.unsafe_pending() if not unsafe_fixes and o.error is None else []
            if pending:  # on stderr: the diff on stdout stays a patch
                err_stream().write(f"{o.path}: {len(pending)} more with --unsafe-fixes: {', '.join(f.code for f in pending)}\n")
    else:
        for o in outcomes:
            _list_fixes(o, out, unsafe_fixes)
    if any(o.error is not None for o in outcomes):
        return EXIT_INPUT
    return EXIT_FINDINGS if any(o.changed or o.problem for o in outcomes) else EXIT_CLEAN


def _report_problems(o) -> None:
    err = sys.stderr
    if o.error is not None:
        err.write(o.error.one_line() + " (not edited)\n")
        return
    for s in o.skipped:
        where = f"{o.path}:{s.finding.line}" if s.finding.line else o.path
        err.write(f"{where}: {s.finding.code} fix skipped: {s.why}\n")
    if o.problem:
        err.write(f"{o.path}: {o.problem}\n")


def _describe(a) -> str:
    f = a.finding
    where = f"line {f.line}: " if a.round == 1 and f.line else ""
    after = f" (after round {a.round - 1})" if a.round > 1 else ""
    head = f"  {f.code} [{f.fix.applicability}] {where}{f.fix.message}{after}\n"
    if len(a.edits) == 1 and _edit_words(a.edits[0]) in f.fix.message:
        return head  # the message already is the edit
    return head + "".join(f"      {_edit_words(e)}\n" for e in a.edits)


def _edit_words(e) -> str:
    """One edit as the listing names it: ``remove KEY``, ``set KEY: VALUE`` (a long value abbreviated)."""
    if e.op == "remove":
        return f"remove {e.key}"
    from overlap_cli.rules.common import fmt

    value = f"mapping of {len(e.value)} key(s)" if isinstance(e.value, dict) else fmt(e.value)
    if len(value) > 60:
        value = value[:59] + "…"
    return f"{'add' if e.op == 'add' else 'set'} {e.key}: {value}"


def _list_fixes(o, out, unsafe: bool) -> None:
    if o.error is not None:
        return
    if o.applied:
        n = len(o.applied)
        out.write(f"{o.path}: {n} fix{'es' if n != 1 else ''} would be applied (run with --write, or --diff to see them)\n")
        for a in o.applied:
            out.write(_describe(a))
    pending = o.unsafe_pending() if not unsafe else []
    if pending:
        out.write(f"{o.path}: {len(pending)} more with --unsafe-fixes: {', '.join(f.code for f in pending)}\n")
    if o.skipped and not o.applied:
        out.write(f"{o.path}: {len(o.skipped)} fix(es) skipped, nothing changed (see above)\n")
    elif not o.applied and not pending and not o.problem:
        out.write(f"{o.path}: nothing to fix\n")


def err_stream():
    import sys

    return sys.stderr


def _unified_diff(o) -> str:
    import difflib

    lines = []
    for line in difflib.unified_diff(o.original.splitlines(True), o.fixed.splitlines(True), o.path, o.path):
        lines.append(line if line.endswith("\n") else line + "\n\\ No newline at end of file\n")
    return "".join(lines)


def _write_all(outcomes, out, threshold: str = "warning") -> int:
    from overlap_cli.config.safe_read import read_text
    from overlap_cli.results import SEVERITY_RANK
    from overlap_cli.problems import InputError
    from overlap_cli.fix.write import atomic_write
    from overlap_cli.report.common import finding_line

    bar = SEVERITY_RANK[max(threshold, "warning", key=SEVERITY_RANK.get)]  # info never fails a run
    code = exit_code([o.result for o in outcomes if o.result is not None], "error" if bar == 2 else "warning")
    fixed_files = fixed_count = 0
    for o in outcomes:
        if o.error is not None:
            code = EXIT_INPUT
            continue
        if o.changed:
            try:
                if read_text(o.path) != o.original:
                    raise OSError(0, "the file changed while it was being fixed; run fix again")
                atomic_write(o.path, ("\ufeff" if o.bom else "") + o.fixed)
            except InputError as exc:
                sys.stderr.write(f"{exc.problem.one_line()}; not written\n")
                code = EXIT_INPUT
                continue
            except OSError as exc:
                sys.stderr.write(f"{o.path}: cannot write: {exc.strerror or exc}; the file is unchanged\n")
                code = EXIT_INPUT
                continue
            fixed_files += 1
            fixed_count += len(o.applied)
            codes = ", ".join(a.finding.code for a in o.applied)
            out.write(f"fixed {o.path}: {codes}\n")
        elif o.problem and code == EXIT_CLEAN:
            code = EXIT_FINDINGS
        for f in o.result.findings:
            if SEVERITY_RANK[f.severity] >= bar:
                mark = " (fix with --unsafe-fixes)" if f.fix and f.fix.applicability == "unsafe" else ""
                out.write(finding_line(o.result.file, f) + f"{mark}\n")
    remaining = sum(
        1 for o in outcomes if o.result is not None for f in o.result.findings
        if SEVERITY_RANK[f.severity] >= bar
    )
    what = "error" if bar == 2 else "warning/error"
    out.write(f"Fixed {fixed_count} finding(s) in {fixed_files} file(s); {remaining} {what} finding(s) remain.\n")
    return code
