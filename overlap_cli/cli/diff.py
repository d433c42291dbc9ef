"""``overlap diff OLD NEW``: what differs in the settings Bridge will run with between two configs, or one
config under two targets. The options are ``cli.options.DIFF``; the comparison is ``check.compare``, the
output ``report.diff``. Exit 0: nothing differs; 1: something does; 2: bad input (as ``diff``)."""

from __future__ import annotations

import sys

from overlap_cli.cli.check import EXIT_CLEAN, EXIT_FINDINGS, EXIT_INPUT, UsageError, target_from_options
from overlap_cli.cli.options import PER_SIDE

# Flags that state the launch size together: the NEW side takes all of them from its --vs- flags as soon
# as one is given, so --world-size 64 --vs-nodes 8 --vs-gpus-per-node 8 is not "both ways at once".
_WORLD = ("world_size", "nodes", "gpus_per_node")


class _NewSide:
    """The NEW side's view of the options: each target flag from its ``--vs-`` twin where given, else the
    OLD side's value; everything else (--settings, --detect, ...) shared."""

    def __init__(self, opts):
        self._opts = opts
        world_from_vs = any(getattr(opts, "vs_" + name) is not None for name in _WORLD)
        for name in PER_SIDE:
            twin = getattr(opts, "vs_" + name)
            if name in _WORLD:
                value = twin if world_from_vs else getattr(opts, name)
            else:
                value = twin if twin is not None else getattr(opts, name)
            setattr(self, name, value)
        # A side starts from one base: --vs-recipe replaces the OLD side's --base, and --vs-base its --recipe.
        if opts.vs_recipe is not None and opts.vs_base is None:
            self.base = None
        if opts.vs_base is not None and opts.vs_recipe is None:
            self.recipe = None

    def __getattr__(self, name):
        return getattr(self._opts, name)


def _vs_given(opts) -> bool:
    return any(getattr(opts, "vs_" + name) is not None for name in PER_SIDE)


def _check_side(path, opts):
    """One side, checked with the usual per-file target resolution (flags > directive > per-file-target >
    [tool.overlap] > --detect): its CheckedFile (the result and, for the step-time estimate, the view). With
    --recipe/--base the side is the merged run of that base and the override file ``path`` (None: the base alone)."""
    from overlap_cli.check.engine import check

    return check(path, target_from_options(opts, path))


def diff(opts) -> int:
    """Print what differs between two configs (or one config under two targets) in the effective overlap
    settings and launch environment, with both values and provenances, and the findings that appear or
    disappear. Exit 0 when nothing differs, 1 when something does, 2 on bad input."""
    from overlap_cli.cli.check import split_args

    files, overrides = split_args(opts.args)
    if overrides:
        raise UsageError(f"overlap diff takes config files, not overrides: {overrides[0]}")
    based = opts.recipe is not None or opts.base is not None
    if len(files) not in ((0, 1, 2) if based else (1, 2)):
        raise UsageError("overlap diff takes OLD and NEW, or one file with --vs-* target flags")
    if len(files) < 2 and not _vs_given(opts):
        what = "one file compares" if files else "the recipe compares"
        raise UsageError(f"{what} against itself: give NEW, or a --vs-* flag (e.g. --vs-world-size, --vs-recipe)")
    old_path, new_path = (files[0], files[-1]) if files else (None, None)
    old_checked = _check_side(old_path, opts)
    new_checked = _check_side(new_path, _NewSide(opts))
    old, new = old_checked.result, new_checked.result
    errors = []
    for result in (old, new):
        if result.error is not None and result.error.one_line() not in errors:
            errors.append(result.error.one_line())
    if errors:
        sys.stderr.write("".join(e + "\n" for e in errors))
        return EXIT_INPUT

    from overlap_cli.check.compare import compare
    from overlap_cli.report import diff as render

    from overlap_cli.cli.estimate import step_change, step_change_line

    comparison = compare(old, new)
    steps = step_change(old_checked, new_checked)  # shown, not a difference: the exit code is the settings'
    shown = {"provenance": bool(opts.show_provenance), "info": bool(opts.show_info)}
    if opts.format == "json":
        import json

        sys.stdout.write(json.dumps({**render.to_json(comparison), "estimate": steps}, indent=2, default=str) + "\n")
    else:
        spell = (_spelling(old_checked), _spelling(new_checked))
        sys.stdout.write(render.render_text(comparison, spell=spell, **shown) + step_change_line(steps))
    return EXIT_FINDINGS if comparison.differs(**shown) else EXIT_CLEAN


def _spelling(checked) -> str:
    """How the side's input writes values (results.show_value): a Python run ``True`` / ``None``, else YAML's."""
    return "python" if checked.run is not None and checked.run.form == "python_run" else "yaml"
