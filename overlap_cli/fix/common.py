"""What every form's fix round speaks: a fix applied (its edits that changed the file) or skipped (why),
and the words of a fix message a note repeats."""

from __future__ import annotations

import re
from dataclasses import dataclass

from overlap_cli.results import Finding


class Refused(Exception):
    """A form's round cannot make its edits on this text at all: the whole file is left as it was (the
    message is the line ``overlap fix`` prints for it)."""


class Session:
    """How fix.loop works on a text that needs no preparing (a launch script, a Python file): as it is,
    written back as it is. fix.yaml_edit.Session is the YAML form's."""

    def __init__(self, text: str):
        self.work = text

    def applied(self, a) -> None:
        pass

    def finish(self, current: str, comments: bool, recheck) -> tuple:
        return (None if current == self.work else current), None


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
    """The few words of a fix message that say why: its last parenthesised part, else the message."""
    m = re.search(r"\(([^()]*)\)\s*$", message)
    return (m.group(1) if m else message).strip()


def own_words(comment) -> str:
    """An edit's own comment without a tool prefix (our note starts with "overlap: CODE" already)."""
    return re.sub(r"^\s*#?\s*overlap(-cli)?\s*:\s*", "", comment or "").strip()
