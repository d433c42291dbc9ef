"""What every form's fix round speaks: a fix applied (its edits that changed the file) or skipped (why),
and the words of a fix message a note repeats."""

from __future__ import annotations

import re
from dataclasses import dataclass

TYPE_CHECKING = False  # the typing module costs ~2.5 ms of start-up; annotations here are strings (PEP 563)
if TYPE_CHECKING:
    from typing import Optional

from overlap_cli.results import USERS_VALUE, Finding


class Refused(Exception):
    """A form's round cannot make its edits on this text at all: the whole file is left as it was (the
    message is the line ``overlap fix`` prints for it)."""


class Unplaceable(Exception):
    """An edit cannot be made exactly on this text; the message says why (the fix is skipped)."""


class Session:
    """How fix.loop works on a file's text: with ``\n`` line ends while the rounds run (every edit writes
    ``\n``), the file's own line ends — CRLF, or CR alone — put back when it is written, so an edited
    line never mixes styles. fix.yaml_edit.Session adds the YAML form's notes and final newline."""

    def __init__(self, text: str):
        self.ending = _ending(text)
        self.work = text.replace(self.ending, "\n") if self.ending != "\n" else text

    def applied(self, a) -> None:
        pass

    def finish(self, current: str, comments: bool, recheck) -> tuple:
        """(the text to write, None) — None as the text when nothing changed."""
        return (None if current == self.work else self.restore(current)), None

    def restore(self, current: str) -> str:
        return current.replace("\n", self.ending) if self.ending != "\n" else current


def _ending(text: str) -> str:
    """The file's line end: CRLF when every line ends so, CR when it has CRs and no LF, else LF."""
    if "\r\n" in text and text.count("\r\n") == text.count("\n"):
        return "\r\n"
    if "\r" in text and "\n" not in text:
        return "\r"
    return "\n"


def each_fix(current: str, findings: list, place) -> tuple:
    """(new text, [Applied], [Skipped]) of one round in which ``place(text, finding)`` makes each finding's
    edits on the text so far and returns the new text; a fix it cannot place (Unplaceable, or a
    text that no longer reads) is skipped with the reason, the others go on."""
    new, applied, skipped = current, [], []
    for f in findings:
        try:
            candidate = place(new, f)
        except Unplaceable as exc:
            skipped.append(Skipped(f, str(exc)))
            continue
        except Exception as exc:  # the edited text does not read back: refuse this fix
            skipped.append(Skipped(f, f"the edited file does not read back ({exc})"))
            continue
        if candidate != new:
            applied.append(Applied(f, list(f.fix.edits), 0))
            new = candidate
    return new, applied, skipped


@dataclass
class Applied:
    finding: Finding
    edits: list  # the Edits that changed the file (an edit already satisfied is left out)
    round: int


@dataclass
class Skipped:
    finding: Finding
    why: str


def reason(message: str) -> str:
    """The few words of a fix message that say why: its last parenthesised part, else the message. Why a safe
    fix is offered as unsafe here (results.USERS_VALUE) is for the listing, not a note in the file."""
    message = message.split(f" ({USERS_VALUE} ", 1)[0]
    m = re.search(r"\(([^()]*)\)\s*$", message)
    return (m.group(1) if m else message).strip()


def own_words(comment) -> str:
    """An edit's own comment without a tool prefix (our note starts with "overlap: CODE" already)."""
    return re.sub(r"^\s*#?\s*overlap(-cli)?\s*:\s*", "", comment or "").strip()


def removal_refused(lower, path: tuple, key: str, where: str, release) -> Optional[str]:
    """Why a removal of ``key`` is not made, or None: the layers under the user's own (``lower``: a recipe's or
    base file's data, labelled ``where``) hold a value there other than the class default, so taking the
    user's line away leaves that value, not the default the removal means."""
    node = lower or {}
    for part in path:
        if not isinstance(node, dict) or part not in node:
            return None
        node = node[part]
    if is_class_default(path, node, release):
        return None
    return f"{key} is also set in {where}; a file merged on top cannot remove it: set it by hand"


def is_class_default(path: tuple, value, release) -> bool:
    """Whether ``value`` at ``path`` (section, field) is the class default of ``release`` (a
    frameworks.bridge.releases module) a config falls back to when no layer sets it (a dump writes every
    field; removing the user's value then leaves the same as removing it from a single config)."""
    from overlap_cli.fix.text import same

    if len(path) != 2:
        return False
    defaults = release.SECTION_DEFAULTS.get(path[0], {})
    return path[1] in defaults and same(defaults[path[1]], value)
