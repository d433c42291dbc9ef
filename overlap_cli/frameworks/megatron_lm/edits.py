"""Edits of rules shared with Bridge, in a launch's terms: ``set model.X: true/false`` becomes giving or
dropping the switch of dest X (``--x``, or ``--no-x`` for a store_false dest), so the JSON fix and
``overlap fix`` speak of flags. A fix with an edit no switch expresses (a value, a derived field such as
``batch_p2p_comm``) is not offered on a launch: the finding stays, without a fix."""

from __future__ import annotations

TYPE_CHECKING = False  # the typing module costs ~2.5 ms of start-up; annotations here are strings (PEP 563)
if TYPE_CHECKING:
    from typing import Optional

from overlap_cli.results import Edit, Fix


def flag_edit(edit: Edit, launch) -> Optional[Edit]:
    """The launch edit for ``edit``; None when no switch expresses it."""
    from overlap_cli.frameworks.megatron_lm.args import option
    from overlap_cli.frameworks.megatron_lm.view import LaunchConfig

    if edit.key.startswith(("-", "env.")):
        return edit
    parts = tuple(edit.key.split("."))
    row = option(LaunchConfig.dest_of(parts), launch.core_version) if len(parts) == 2 else None
    if row is None or row["action"] not in ("store_true", "store_false") or not isinstance(edit.value, bool):
        return None
    give = edit.value if row["action"] == "store_true" else not edit.value
    given = launch.args.get(row["dest"])
    flag = given.flag if given is not None and not give else row["flags"][0]
    return Edit("add", flag, True, edit.comment) if give else Edit("remove", flag, comment=edit.comment)


def launch_fix(fix: Optional[Fix], launch) -> Optional[Fix]:
    if fix is None:
        return None
    edits = [flag_edit(e, launch) for e in fix.edits]
    if any(e is None for e in edits):
        return None
    return Fix(fix.applicability, fix.message, tuple(edits))
