"""The one engine: for any input form, load -> resolve -> rules -> notes. Returns a CheckedFile (the
FileResult every report serialises, plus the resolved view annotate, fix, env and presets read); never
raises on bad input.

The form (forms/) that reads the file is asked for what differs — how the run is loaded, resolved and
where a finding is placed; everything else is here once: the rules and the selection, the result, and the
notes every form shares (world size, target provenance, keys the run leaves unknown)."""

from __future__ import annotations

TYPE_CHECKING = False  # the typing module costs ~2.5 ms of start-up; annotations here are strings (PEP 563)
if TYPE_CHECKING:
    from typing import Any, Optional

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
    run: Any = None  # the forms.base.Run the form loaded (fix and annotate ask its form)

    @property
    def form(self):
        """The form module that loaded the file (forms.module)."""
        from overlap_cli import forms

        return forms.module(self.run.form) if self.run is not None else None


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
    if path is None:
        from overlap_cli.forms import bridge_yaml

        label = bridge_yaml.label(target)
    else:
        label = path
    result = FileResult(file=label, target=target.to_json(None))
    try:
        return _check(result, path, target, overrides, text, selection, lower)
    except KeyboardInterrupt:
        raise
    except Exception as exc:  # a bug in overlap-cli: this file gets one line, the others are still checked
        from overlap_cli.problems import internal_problem
        from overlap_cli.rules import RuleCrashed

        if isinstance(exc, RuleCrashed):
            result.error = internal_problem(result.file, exc.error, exc.code)
        else:
            result.error = internal_problem(result.file, exc)
        result.effective, result.findings, result.release = None, [], None
        return CheckedFile(result)


def _check(result: FileResult, path, target: Target, overrides, text, selection, lower=()) -> CheckedFile:
    """Fill ``result`` through the form that reads ``path``."""
    from overlap_cli import forms
    from overlap_cli.check.selection import filter_findings
    from overlap_cli.rules import run_rules

    from overlap_cli.frameworks.target_release import checked_against

    form = forms.form_of(path, text, target.get("framework"))
    try:
        run = form.load(path, text, target, overrides, lower)
        file_text = run.text
        result.target = run.target.to_json(None)
        form = forms.module(run.form)  # a form may hand the file to another (a run_recipe.py launch)
        # the release first: a release the tool holds no data for is this file's one error, not a rule's
        result.release = checked_against(run.target, form.FRAMEWORK)
        answer = form.resolve(run, lambda view: filter_findings(run_rules(view), run.comments_file or run.file, file_text, selection))
    except InputError as exc:
        result.error = placed(exc.problem, result.file)
        result.release = None
        return CheckedFile(result)
    except RecursionError:
        result.error = InputProblem(path, "config nesting is too deep to check")
        return CheckedFile(result)
    result.target = answer.target.to_json(answer.dp)
    result.effective = answer.effective
    result.findings = sorted(answer.findings, key=finding_order)
    result.notes.extend(notes(run, answer, form.FRAMEWORK))
    from overlap_cli.frameworks.target_release import notes as release_notes

    result.notes.extend(release_notes(answer.target, form.FRAMEWORK, result.release))
    return CheckedFile(result, answer.view, run)


def placed(problem: InputProblem, file: str) -> InputProblem:
    """``problem`` with the config's own name where it was placed in the config without one (a release named
    by its ``# overlap: target`` line: launch_profile.profile.Target.stated_at)."""
    from overlap_cli.launch_profile.profile import CONFIG_FILE

    if problem.file != CONFIG_FILE:
        return problem
    return InputProblem(file, problem.message, key=problem.key, line=problem.line, column=problem.column)


def notes(run, answer, framework: str) -> list:
    """Every note of a checked run, in the order they print: the world size when the resolution changed it,
    what the form's reading says, findings and keys the unknowns leave open, the world size, where the
    target came from, and what was assumed about the machine."""
    from overlap_cli.results import Note

    out = []
    if answer.world_note is not None:
        out.append(answer.world_note)
    out.extend(run.notes)
    if answer.depends:
        out.append(Note("findings that depend on keys the run leaves unknown (not reported): " + ", ".join(answer.depends),
                        "depends-on-unknown"))
    if answer.unknown:
        shown = answer.unknown
        out.append(Note(f"{len(shown)} key(s) the run leaves unknown: " + ", ".join(shown[:6])
                        + (" ..." if len(shown) > 6 else ""), "unknown-keys"))
    if answer.world_note is None:
        out.extend(world_size_notes(run, answer))
    out.extend(answer.notes)
    target = answer.target
    note = target.provenance_note()  # values from [tool.overlap] / --detect / a recipe: say where they came from
    if note:
        out.append(Note(note, "target"))
    if target.detection is not None and target.detection.get("not_found"):
        out.append(Note("--detect did not find: " + "; ".join(target.detection["not_found"]), "target"))
    if framework == "bridge" and target.source("transformer_engine") == "default":
        out.append(Note("Transformer Engine assumed present on the target (use --no-te to model its absence)",
                        "transformer-engine"))
    return out


def world_size_notes(run, answer) -> list:
    """What the run's world size is and where it came from, when that needs saying: the launch's own sizes,
    a flag that overrides them, or no world size at all."""
    from overlap_cli.results import Note

    target, launch = answer.target, run.launch
    where = f" (line {launch.line})" if launch.line else ""
    if target.source("world_size") == "launch":
        given = run.target.world_size if run.target.source("world_size") != "launch" else None
        also = (f"; the target's {given} ({run.target.source_label('world_size')}) is not used"
                if given not in (None, target.world_size) else "")
        return [Note(f"world size {target.world_size} from the launch's sizes{where}{also}", "launch-world-size")]
    if target.world_size is None:
        return [Note("world size not given: data-parallel-dependent values are reported as unknown", "world-size")]
    if launch.world_size is not None and launch.world_size != target.world_size:
        return [Note(f"world size {target.world_size} from {target.source_label('world_size')} (flag > file): "
                     f"the launch's own sizes{where} give {launch.world_size}", "world-size")]
    return []
