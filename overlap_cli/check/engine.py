"""The pipeline for one file: load -> resolve -> rules. Returns a CheckedFile (the FileResult every report
serialises, plus the resolved view annotate, fix, env and presets read); never raises on bad input."""

from __future__ import annotations

TYPE_CHECKING = False  # the typing module costs ~2.5 ms of start-up; annotations here are strings (PEP 563)
if TYPE_CHECKING:
    from typing import Optional

    from overlap_cli.frameworks.bridge.view import Resolved

from overlap_cli.check.results import SEVERITY_RANK, FileResult, InputError, InputProblem
from overlap_cli.records import dataclass  # not dataclasses: start-up time (records.py)
from overlap_cli.target.profile import Target


@dataclass
class CheckedFile:
    """One checked file: ``result`` is what every report writes; ``view`` is the resolved config behind it
    (the parsed file, tens of KB of objects), or None when the file could not be checked
    (``result.error`` is set). The view stays in this process: workers return only the result."""

    result: FileResult
    view: Optional[Resolved] = None


def check_file(
    path: str, target: Target, overrides: Optional[list] = None, text: Optional[str] = None, selection=None
) -> FileResult:
    """The FileResult of ``path``, for callers that need no view (see ``check``)."""
    return check(path, target, overrides, text, selection).result


def check(
    path: str, target: Target, overrides: Optional[list] = None, text: Optional[str] = None, selection=None
) -> CheckedFile:
    """``selection``: a selection.RuleSelection (command-line --select/--ignore); [tool.overlap] and inline
    ``# overlap: ignore[...]`` comments apply either way.

    An exception this code did not expect (a rule that raises, say) becomes the result's ``error`` with
    ``internal=True``: one line for that file, exit 2, never a traceback."""
    result = FileResult(file=path, target=target.to_json(None))
    try:
        return CheckedFile(result, _check(result, path, target, overrides, text, selection))
    except KeyboardInterrupt:
        raise
    except Exception as exc:  # a bug in overlap-cli: this file gets one line, the others are still checked
        from overlap_cli.check.results import internal_problem
        from overlap_cli.rules import RuleCrashed

        if isinstance(exc, RuleCrashed):
            result.error = internal_problem(path, exc.error, exc.code)
        else:
            result.error = internal_problem(path, exc)
        result.effective, result.findings = None, []
        return CheckedFile(result)


def _check(result: FileResult, path: str, target: Target, overrides, text, selection) -> Optional[Resolved]:
    """Fill ``result``; return the resolved view, or None when the file is an input error."""
    from overlap_cli.check.engine_lm import framework_of

    if framework_of(path, text, target) == "megatron-lm":  # a launch script or functional-test YAML
        from overlap_cli.check.engine_lm import check_launch

        return check_launch(result, path, target, text, selection)
    from overlap_cli.config.loader import load_config
    from overlap_cli.frameworks.bridge.resolver import resolve
    from overlap_cli.rules import run_rules
    from overlap_cli.check.selection import filter_findings

    try:
        cfg = load_config(path, overrides, text=text)
        # The file's own target: its directive, its per-file-target entry, its pyproject's [tool.overlap].
        target = target.for_file(path, cfg.text)
        result.target = target.to_json(None)
        view = resolve(cfg, target)
    except InputError as exc:
        result.error = exc.problem
        return None
    except RecursionError:
        result.error = InputProblem(path, "config nesting is too deep to check")
        return None
    result.target = target.to_json(view.dp)
    from overlap_cli.frameworks.bridge.launch_env import effective_entries

    result.effective = {**view.effective, **effective_entries(view)}  # + env.<NAME>: the launch environment
    try:
        findings = filter_findings(run_rules(view), path, cfg.text, selection)
    except InputError as exc:  # an invalid [tool.overlap] selection table
        result.error = exc.problem
        return None
    result.findings = sorted(
        findings,
        key=lambda f: (f.line or 0, f.column or 0, -SEVERITY_RANK[f.severity], f.code),
    )
    if cfg.uses_env_resolver:
        result.notes.append(
            "${oc.env:...} was resolved with this machine's environment; the launch machine's value may differ"
        )
    result.notes.extend(cfg.warnings)  # e.g. ${...} left unresolved (unknown resolver, unset variable)
    note = target.provenance_note()  # values from [tool.overlap] / --detect: say where they came from
    if note:
        result.notes.append(note)
    if target.detection is not None and target.detection.get("not_found"):
        result.notes.append("--detect did not find: " + "; ".join(target.detection["not_found"]))
    if target.world_size is None:
        result.notes.append("world size not given: data-parallel-dependent values are reported as unknown")
    if target.source("transformer_engine") == "default":
        result.notes.append("Transformer Engine assumed present on the target (use --no-te to model its absence)")
    return view
