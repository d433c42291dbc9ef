"""``overlap estimate CONFIG...``: the estimated time of one training step and the exposed communication of
each kind, from the effective settings ``overlap check`` resolves. Options: ``cli.options.ESTIMATE``.
Exit 0, or 2 when a file could not be checked or estimated (one line each on stderr)."""

from __future__ import annotations

import sys

from overlap_cli.cli.check import (
    EXIT_CLEAN, EXIT_INPUT, UsageError, layered_inputs, parse_overrides, split_args, target_from_options,
)


def estimate_one(path, opts, overrides: list, lower: tuple = ()):
    """(estimate, checked file, None) or (None, checked file, one-line error) for one config (``path`` with
    the files ``lower`` under it, as --recipe/--base merge them; path None: the base alone)."""
    from overlap_cli.check.engine import check
    from overlap_cli.estimate.inputs import NoStepTimeFigures, Unsupported, shape_from_view
    from overlap_cli.estimate.model import MemoryOnly, estimate

    checked = check(path, target_from_options(opts, path), overrides, lower=lower)
    if checked.result.error is not None:
        return None, checked, checked.result.error.one_line()
    try:
        try:
            est = estimate(shape_from_view(checked.view))
        except NoStepTimeFigures as exc:  # the memory needs no peak: counted on every GPU
            est = MemoryOnly(shape_from_view(checked.view, step_time=False), str(exc))
    except Unsupported as exc:
        return None, checked, f"{checked.result.file}: cannot estimate: {exc}"
    crashes = sorted({f.code for f in checked.result.findings if f.severity == "error"})
    if crashes:  # the estimate is of the settings as written; the rules say this launch would not run them
        est.assumptions.insert(0, f"overlap check predicts this launch fails ({', '.join(crashes)}): the estimate "
                                  "is of the settings as written, not of a run that happens")
    return est, checked, None


def estimate_command(opts) -> int:
    """Estimate the step time of each config on its target: compute, the exposed TP / CP / EP / DP
    communication, the pipeline bubble and the exposed p2p transfers, each with the setting behind it."""
    files, raw = split_args(opts.args or [], script=True)
    stack = layered_inputs(opts, files)  # --recipe/--base: the files are one merged run
    if stack is None and not files:
        raise UsageError("no config file given")
    overrides = parse_overrides(raw)
    results, failed = [], False
    if stack is not None:
        runs = [stack]
    else:  # FILE or DIR, found as overlap check finds them
        from overlap_cli.check.runner import gather

        found, skipped, problems = gather(files)
        for path, reason in skipped:
            sys.stderr.write(f"note: {path}: skipped: {reason}\n")
        for problem in problems:
            failed = True
            sys.stderr.write(problem.error.one_line() + "\n")
            results.append((problem.file, None, problem.error.one_line()))
        runs = [(f, ()) for f in found]
    for path, lower in runs:
        est, checked, error = estimate_one(path, opts, overrides, lower)
        if error is not None:
            failed = True
            sys.stderr.write(error + "\n")
        results.append((checked.result.file, est, error))
    if opts.format == "json":
        import json

        from overlap_cli.results import json_document

        doc = json_document(results=[{"file": p, "estimate": e.to_json() if e else None, "error": err} for p, e, err in results])
        sys.stdout.write(json.dumps(doc, indent=2) + "\n")
    else:
        from overlap_cli.estimate.render import render_memory_only, render_text

        first = True
        for path, est, _ in results:
            if est is None:
                continue
            if not first:
                sys.stdout.write("\n")
            if getattr(est, "why", None) is not None:  # model.MemoryOnly: no step-time figures for the GPU
                render_memory_only(path, est.memory, est.why, est.assumptions, sys.stdout)
            else:
                render_text(path, est, sys.stdout)
            first = False
    return EXIT_INPUT if failed else EXIT_CLEAN


def step_change(old, new) -> dict:
    """The estimated step time of two checked runs (``overlap diff``'s sides) and its change:
    {"old_step_time_s", "new_step_time_s", "change_s", "unavailable": [why, ...]} (None where a side cannot
    be estimated)."""
    from overlap_cli.estimate.inputs import Unsupported, shape_from_view
    from overlap_cli.estimate.model import estimate

    times, unavailable = [], []
    for checked in (old, new):
        try:
            times.append(estimate(shape_from_view(checked.view)).step_time)
        except Unsupported as exc:
            times.append(None)
            unavailable.append(f"{checked.result.file}: {exc}")
    change = times[1] - times[0] if None not in times else None
    return {"old_step_time_s": times[0], "new_step_time_s": times[1], "change_s": change, "unavailable": unavailable}


def step_change_line(doc: dict) -> str:
    if doc["change_s"] is None:
        return "estimated step time: not available (" + "; ".join(doc["unavailable"]) + ")\n"
    old, new, change = doc["old_step_time_s"], doc["new_step_time_s"], doc["change_s"]
    return f"estimated step time: {old:.3f} s -> {new:.3f} s ({change:+.3f} s, {100 * change / old:+.1f} %)\n"
