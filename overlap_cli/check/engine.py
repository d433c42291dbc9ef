"""The pipeline for one file: load -> resolve -> rules. Returns a CheckedFile (the FileResult every report
serialises, plus the resolved view annotate, fix, env and presets read); never raises on bad input."""

from __future__ import annotations

TYPE_CHECKING = False  # the typing module costs ~2.5 ms of start-up; annotations here are strings (PEP 563)
if TYPE_CHECKING:
    from typing import Optional

    from overlap_cli.frameworks.bridge.view import Resolved

from overlap_cli.results import FileResult, finding_order
from overlap_cli.problems import InputError, InputProblem
from overlap_cli.records import dataclass  # not dataclasses: start-up time (records.py)
from overlap_cli.launch_profile.profile import Target


@dataclass
class CheckedFile:
    """One checked file: ``result`` is what every report writes; ``view`` is the resolved config behind it
    (the parsed file, tens of KB of objects), or None when the file could not be checked
    (``result.error`` is set). The view stays in this process: workers return only the result."""

    result: FileResult
    view: Optional[Resolved] = None


def check_file(
    path: Optional[str], target: Target, overrides: Optional[list] = None, text: Optional[str] = None, selection=None,
    lower: tuple = (),
) -> FileResult:
    """The FileResult of ``path``, for callers that need no view (see ``check``)."""
    return check(path, target, overrides, text, selection, lower).result


def check(
    path: Optional[str], target: Target, overrides: Optional[list] = None, text: Optional[str] = None, selection=None,
    lower: tuple = (),
) -> CheckedFile:
    """``selection``: a selection.RuleSelection (command-line --select/--ignore); [tool.overlap] and inline
    ``# overlap: ignore[...]`` comments apply either way.

    A run that starts from a catalog recipe or a full dump (the target's ``recipe`` / ``base``: --recipe,
    --base, ``# overlap: recipe=NAME``, [tool.overlap] or its per-file-target) is the merged config of that
    base, the override files ``lower``, then ``path`` (config.layers); ``path`` None checks the base alone.

    An exception this code did not expect (a rule that raises, say) becomes the result's ``error`` with
    ``internal=True``: one line for that file, exit 2, never a traceback."""
    result = FileResult(file=path if path is not None else _base_label(target), target=target.to_json(None))
    try:
        return CheckedFile(result, _check(result, path, target, overrides, text, selection, lower))
    except KeyboardInterrupt:
        raise
    except Exception as exc:  # a bug in overlap-cli: this file gets one line, the others are still checked
        from overlap_cli.problems import internal_problem
        from overlap_cli.rules import RuleCrashed

        if isinstance(exc, RuleCrashed):
            result.error = internal_problem(result.file, exc.error, exc.code)
        else:
            result.error = internal_problem(result.file, exc)
        result.effective, result.findings = None, []
        return CheckedFile(result)


def _base_label(target: Target) -> str:
    recipe, base = target.get("recipe"), target.get("base")
    if base:
        return base
    from overlap_cli.frameworks.bridge.runs import recipe_name

    try:
        return f"recipe {recipe_name(recipe)}"
    except InputError:
        return f"recipe {recipe}"


def _bridge_config():
    from overlap_cli.frameworks.bridge.dotlist_shape import BRIDGE_CONFIG

    return BRIDGE_CONFIG


def _layered(target: Target) -> bool:
    return bool(target.get("recipe") or target.get("base"))


def _load(path, target: Target, overrides, text, lower):
    """(config, the file's own target): the BridgeRun (frameworks.bridge.runs) this file and its target
    describe -- one file, the merged run its target's recipe / base starts, or a Python run -- loaded."""
    from overlap_cli.config.loader import load_config
    from overlap_cli.frameworks.bridge.python_load import is_python
    from overlap_cli.frameworks.bridge.runs import BridgeRun

    if is_python(path):
        return _load_python(path, target, overrides, text)
    if path is not None:
        if text is None and not lower and target.built_from is None and not _layered(target):
            return load_config(path, overrides, shape=_bridge_config()), target  # a fixed target: nothing in the file can change it
        if text is None:
            from overlap_cli.config.safe_read import read_text

            text = read_text(path)
        # The file's own target: its directive, its per-file-target entry, its pyproject's [tool.overlap].
        target = target.for_file(path, text)
    if target.get("recipe") and not target.get("base"):  # the recipe's own launch, ranked (launch_profile)
        from overlap_cli.frameworks.bridge.recipe_launch import recipe_launch
        from overlap_cli.launch_profile.profile import for_run

        launch = recipe_launch(target.get("recipe"))
        target = for_run(target, recipe=launch) if launch is not None else target
    if not _layered(target):
        if path is None:
            raise InputError(InputProblem("<command line>", "no config file given"))
        return load_config(path, overrides, text=text, shape=_bridge_config()), target
    run = BridgeRun(recipe=None if target.get("base") else target.get("recipe"), base=target.get("base"),
                    files=tuple(lower) + ((path,) if path is not None else ()), dotlist=tuple(overrides or ()))
    try:
        return run.load(text if path is not None else None), target
    except InputError as exc:
        if exc.problem.file == "--recipe":  # an unknown recipe: say where its name was written
            raise InputError(_recipe_problem(exc.problem, target, path, text)) from None
        raise


def _load_python(spec: str, target: Target, overrides, text):
    """A run written in Python (``FILE`` or ``FILE::FUNCTION``): its own recipe call is its start, and the
    recipe's launch is its target below every statement about the file (as for ``--recipe``)."""
    from overlap_cli.config.safe_read import read_text
    from overlap_cli.frameworks.bridge.python_load import split_spec
    from overlap_cli.frameworks.bridge.runs import BridgeRun

    path, _function = split_spec(spec)
    if text is None:
        text = read_text(path)
    target = target.for_file(path, text)
    if _layered(target) and target.source("recipe") == "flag" or target.get("base"):
        raise InputError(InputProblem(spec, "a Python run starts where its own code says (its recipe call or "
                                            "ConfigContainer.from_yaml): --recipe / --base apply to YAML override files"))
    cfg = BridgeRun(python=spec, dotlist=tuple(overrides or ())).load(text)
    start = cfg.python_run.start
    from overlap_cli.frameworks.bridge import recipes

    own = recipes.canonical(cfg.python_run.function) if cfg.python_run.function else None
    if own is not None and recipes.how(own) != "helper":  # Bridge's own recipe function: its name is its launch
        start = type(start)("recipe", own)
    if start.kind == "recipe":
        from overlap_cli.frameworks.bridge.recipe_launch import recipe_launch
        from overlap_cli.launch_profile.profile import for_run

        launch = recipe_launch(target.get("recipe") or start.name)
        if launch is not None:
            target = for_run(target, recipe=launch)
    return cfg, target


def _recipe_problem(problem: InputProblem, target: Target, path, text=None) -> InputProblem:
    source = target.source("recipe")
    if source == "directive" and path is not None:
        line, column = _directive_place(text or "", target.layers.get("directive"))
        return InputProblem(path, "# overlap: " + problem.message, key="recipe", line=line, column=column)
    if source in ("per-file-target", "pyproject"):
        where = target.settings_path or "pyproject.toml"
        key = "tool.overlap.recipe" if source == "pyproject" else "tool.overlap.per-file-target.recipe"
        return InputProblem(where, problem.message, key=key)
    return problem


def _directive_place(text: str, fallback) -> tuple:
    """(line, column) of ``recipe`` in the last ``# overlap: recipe=NAME`` comment line (the one that counts)."""
    import re

    place = (fallback, None)
    for n, line in enumerate(text.splitlines(), 1):
        m = re.match(r"[ \t]*#[ \t]*overlap[ \t]*:.*?\b(recipe)[ \t]*=", line, re.IGNORECASE)
        if m:
            place = (n, m.start(1) + 1)
    return place


def _recipe_world_does_not_hold(target: Target, views: list):
    """(the target without a world size, a note) when the world size is only the one the run's recipe is
    written for (its name: ``..._64gpu_...``) and the run's own TP·PP·CP does not divide it — the user changed
    the model's sharding, so the recipe's GPU count says nothing about where this run launches (an error
    there would be the tool's assumption, not Bridge's). None otherwise: a world size the user gave stands,
    and so does the recipe's when it holds the run."""
    if target.source("world_size") != "recipe" or not any(v.dp_error for v in views):
        return None
    if len({(v.tp, v.pp, v.cp) for v in views}) > 1:
        return None  # the run's TP·PP·CP is unknown (sampled): what depends on it is unknown already
    from overlap_cli.launch_profile.profile import for_run

    bad = next(v for v in views if v.dp_error)
    t = for_run(target, recipe_world_holds=False)
    note = (f"world size unknown: recipe {target.get('recipe')} is written for {target.world_size} GPUs, which do not "
            f"hold this run's TP*PP*CP = {bad.tp}*{bad.pp}*{bad.cp} = {bad.tp * bad.pp * bad.cp}; the "
            "data-parallel-dependent values are unknown (give --world-size)")
    return t, note


def _check(result: FileResult, path, target: Target, overrides, text, selection, lower=()) -> Optional[Resolved]:
    """Fill ``result``; return the resolved view, or None when the file is an input error."""
    from overlap_cli.check.engine_lm import framework_of

    if framework_of(path, text, target) == "megatron-lm":  # a launch script or functional-test YAML
        from overlap_cli.check.engine_lm import check_launch

        return check_launch(result, path, target, text, selection, overrides)
    from overlap_cli.frameworks.bridge.unknowns import resolve_all
    from overlap_cli.rules import run_rules
    from overlap_cli.check.selection import filter_findings

    try:
        cfg, target = _load(path, target, overrides, text, lower)
        result.target = target.to_json(None)
        views, unknown_inputs = resolve_all(cfg, target)  # one view unless the run leaves inputs unknown
        view = views[0]
        recipe_world = _recipe_world_does_not_hold(target, views)  # (target, note) or None
        if recipe_world is not None:
            target, note = recipe_world
            views, unknown_inputs = resolve_all(cfg, target)
            view = views[0]
            result.notes.append(note)
    except InputError as exc:
        result.error = exc.problem
        return None
    except RecursionError:
        result.error = InputProblem(path, "config nesting is too deep to check")
        return None
    # DP as the samples agree on it (a run whose TP/PP/CP is unknown has no known DP)
    result.target = target.to_json(view.dp if len({v.dp for v in views}) == 1 else None)
    from overlap_cli.frameworks.bridge.launch_env import effective_entries
    from overlap_cli.frameworks.bridge.unknowns import effective_and_findings

    try:
        # + env.<NAME>: the launch environment
        result.effective, findings, some = effective_and_findings(
            cfg, views, unknown_inputs, effective_entries,
            lambda v: filter_findings(run_rules(v), cfg.file, cfg.text, selection))
    except InputError as exc:  # an invalid [tool.overlap] selection table
        result.error = exc.problem
        return None
    if cfg.layered:  # every value names its layer: the resolver set the user's; the others name their source
        for key, v in result.effective.items():
            if v.layer is None:
                v.layer = cfg.label(("env_vars", key[len("env."):])) if v.source == "env_vars" else v.source
    if some:
        result.notes.append("findings that depend on keys the run leaves unknown (not reported): " + ", ".join(some))
    result.findings = sorted(findings, key=finding_order)
    if cfg.unknown:
        shown = sorted(".".join(map(str, p)) or "the whole config" for p in cfg.unknown)
        result.notes.append(f"{len(shown)} key(s) the run leaves unknown: " + ", ".join(shown[:6]) + (" ..." if len(shown) > 6 else ""))
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
    if target.world_size is None and recipe_world is None:  # else its own note says why
        result.notes.append("world size not given: data-parallel-dependent values are reported as unknown")
    if target.source("transformer_engine") == "default":
        result.notes.append("Transformer Engine assumed present on the target (use --no-te to model its absence)")
    return view
