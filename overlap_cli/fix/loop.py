"""``overlap fix``: apply the fixes that rules attach to findings, then check again until nothing changes —
one loop for every input form.

A round checks the text, takes every finding's fix (safe ones; unsafe ones only when asked, at or above
the severity threshold), and asks the file's form to place the edits (``edit_round``: fix.yaml_edit on the
YAML tree, fix.script on a launch's words, fix.python on a Python run — each proves its own edit by reading
the text again). Rounds repeat (a fix can make another rule fire) up to ``MAX_ROUNDS``; a text seen before is
a cycle and is reported, not looped; a text that no longer checks is never kept. Anything refused leaves
the whole file as it was. The form's ``fix_session`` says how its text is worked on (line ends, a final
newline, notes written beside the changed keys) and put back.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Optional

from overlap_cli.fix.common import Applied, Refused, Skipped
from overlap_cli.problems import InputError, InputProblem
from overlap_cli.results import FileResult

MAX_ROUNDS = 5

__all__ = ("MAX_ROUNDS", "Applied", "Skipped", "Outcome", "fix_file", "fix_text")


@dataclass
class Outcome:
    path: str
    original: str
    fixed: str
    applied: list = field(default_factory=list)
    skipped: list = field(default_factory=list)
    problem: Optional[str] = None  # the file was refused as a whole (and left untouched)
    result: Optional[FileResult] = None  # the check of the fixed text (or of the original on a problem)
    error: Optional[InputProblem] = None  # the file could not be read or parsed
    bom: bool = False  # the file starts with a UTF-8 byte-order mark (kept when written back)
    threshold: str = "warning"  # findings below this severity are reported, never fixed

    @property
    def changed(self) -> bool:
        return self.fixed != self.original

    def unsafe_pending(self) -> list:
        """Findings at or above the threshold left with an unsafe fix that was not applied (needs --unsafe-fixes)."""
        from overlap_cli.results import SEVERITY_RANK

        if self.result is None:
            return []
        bar = SEVERITY_RANK[self.threshold]
        return [
            f for f in self.result.findings
            if f.fix and f.fix.applicability == "unsafe" and SEVERITY_RANK[f.severity] >= bar
        ]


# ----------------------------------------------------------------------------------------------
# Driving the rounds
# ----------------------------------------------------------------------------------------------


def fix_file(
    path: str, target, unsafe: bool = False, comments: bool = True, selection=None, threshold: str = "warning",
    lower: tuple = (),
) -> Outcome:
    """Fix the file ``path`` names (a Python run's ``FILE::FUNCTION`` edits FILE). The file's byte-order
    mark is remembered so that a write keeps it."""
    from overlap_cli.config.safe_read import read_head, read_text
    from overlap_cli.forms import file_of

    file = file_of(path)
    try:
        text = read_text(file)
    except InputError as exc:
        return Outcome(file, "", "", error=exc.problem)
    out = fix_text(path, text, target, unsafe=unsafe, comments=comments, selection=selection, threshold=threshold,
                   lower=lower)
    out.path = file
    out.bom = read_head(file, 3) == b"\xef\xbb\xbf"
    return out


def fix_text(
    path: str, text: str, target, unsafe: bool = False, comments: bool = True, selection=None, threshold: str = "warning",
    lower: tuple = (),
) -> Outcome:
    """Fix ``text`` (the content of ``path``). Only findings at or above ``threshold`` have their fixes
    applied: the same bar that makes ``overlap check`` exit 1, so ``fix`` never edits a file that ``check``
    passes.

    In a merged run (a recipe or base under the file, ``lower`` override files between), ``text`` is the top
    override file and the only one edited: a key the recipe holds is changed by writing it here (Bridge
    merges this file last); a removal of a key another layer wrote cannot be written here and is skipped."""
    from overlap_cli.config.yamlnodes import remembered_parses

    with remembered_parses():  # the rounds read the same texts again (checks, edit bases, proofs)
        return _rounds(path, text, target, unsafe, comments, selection, threshold, lower)


def _rounds(path, text, target, unsafe, comments, selection, threshold, lower) -> Outcome:
    from overlap_cli.check.engine import check as check_text
    from overlap_cli.fix import fixable

    def check(t: str):
        return check_text(path, target, None, text=t, selection=selection, lower=lower)

    out = Outcome(path, text, text, threshold=threshold)
    from overlap_cli import forms

    session = forms.form_of(path, text, target.get("framework")).fix_session(text)
    work = session.work
    checked = check(work)
    if checked.result.error is not None:
        out.error, out.result = checked.result.error, checked.result
        return out
    form = checked.form  # the form that loaded it (a launch script may be a run_recipe.py launch)
    seen = {work}
    current = work
    skipped_keys: set = set()
    for rnd in range(1, MAX_ROUNDS + 2):
        wanted = fixable(checked.result.findings, unsafe, threshold)
        if not wanted:
            break
        try:
            new, applied, skipped = form.edit_round(current, wanted, checked, comments)
        except Refused as exc:
            out.problem = str(exc)
            break
        for s in skipped:
            k = (s.finding.code, s.finding.key, s.why)
            if k not in skipped_keys:
                skipped_keys.add(k)
                out.skipped.append(s)
        if new == current:
            break
        if rnd > MAX_ROUNDS:
            out.problem = f"fixes did not settle after {MAX_ROUNDS} rounds; the file is left untouched"
            break
        if new in seen:
            codes = ", ".join(sorted({a.finding.code for a in applied}))
            out.problem = f"fixes undo each other ({codes}); the file is left untouched"
            break
        after = check(new)
        if after.result.error is not None:  # cannot happen when the edits are proven; never write it
            out.problem = (f"a fix produced a file that does not check ({after.result.error.message}); "
                           "the file is left untouched")
            break
        for a in applied:
            a.round = rnd
            out.applied.append(a)
            session.applied(a)
        seen.add(new)
        current, checked = new, after

    if out.problem is not None:
        out.applied = []
        out.result = check(work).result
        return out
    fixed, result = session.finish(current, comments, lambda t: check(t).result)
    if fixed is not None:
        out.fixed = fixed
    out.result = result if result is not None else checked.result
    return out


def apply_edits(checked, edits: list, why: str) -> tuple:
    """(the file's new text, None) with ``edits`` (results.Edit) placed by the checked file's form and proven as
    ``overlap fix`` places a fix's edits — or (None, why not). ``overlap tune --write`` writes its candidate
    through this: one placement and one proof for every form, never a writer of its own."""
    from overlap_cli.results import Finding, Fix

    text = checked.run.text
    session = checked.form.fix_session(text)
    finding = Finding(code="TUNE", severity="info", message=why, fix=Fix("unsafe", why, tuple(edits)))
    try:
        new, applied, skipped = checked.form.edit_round(session.work, [finding], checked, False)
    except Refused as exc:
        return None, str(exc)
    if skipped:
        return None, skipped[0].why
    for a in applied:
        session.applied(a)
    fixed, _ = session.finish(new, False, lambda t: None)
    return (fixed if fixed is not None else text), None
