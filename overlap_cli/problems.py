"""Why an input could not be checked: the one-line problem (exit 2) every reader raises.

Readers of every framework and the target's settings raise ``InputError``; the pipeline turns it into the
file's ``FileResult.error``. This module imports nothing of the package but ``records`` so that any reader
can use it without depending on the check stage.
"""

from __future__ import annotations

TYPE_CHECKING = False  # the typing module costs ~2.5 ms of start-up; annotations here are strings (PEP 563)
if TYPE_CHECKING:
    from typing import Optional

from overlap_cli.records import dataclass  # not dataclasses: start-up time (records.py)


@dataclass
class InputProblem:
    """Why a file could not be checked (exit code 2)."""

    file: str
    message: str
    key: Optional[str] = None
    line: Optional[int] = None
    column: Optional[int] = None
    # A bug in overlap-cli, not in the file: ``rule`` names the rule that raised (None: another stage).
    internal: bool = False
    rule: Optional[str] = None

    def describe(self) -> str:
        """The problem without its place: ``key: message``, or the internal-error sentence."""
        if self.internal:
            stage = f" in rule {self.rule}" if self.rule else ""
            return f"internal error{stage}: {self.message} (please report)"
        return (f"{self.key}: " if self.key else "") + self.message

    def one_line(self) -> str:
        if self.internal:
            stage = f" in rule {self.rule}" if self.rule else ""
            return f"{printable(self.file)}: internal error{stage}: {self.message} (please report)"
        where = printable(self.file)
        if self.line is not None:
            where += f":{self.line}"
            if self.column is not None:
                where += f":{self.column}"
        key = f" {self.key}:" if self.key else ""
        return f"{where}:{key} {self.message}"


def printable(name: str) -> str:
    """A file name as a line of text shows it: a character a terminal would act on (an escape sequence, a
    carriage return, a newline) or could not encode (a byte that is not UTF-8, held as a surrogate escape)
    is written as its backslash escape, as ``ls -b`` does, so a name can neither forge nor hide output."""
    if name.isprintable():
        return name
    out = []
    for c in name:
        if c.isprintable() or c == " ":
            out.append(c)
        elif "\udc80" <= c <= "\udcff":  # os.fsdecode's escape of a byte that is not UTF-8
            out.append(f"\\x{ord(c) - 0xDC00:02x}")
        else:
            out.append(c.encode("unicode_escape", "backslashreplace").decode("ascii"))
    return "".join(out)


class InputError(Exception):
    def __init__(self, problem: InputProblem):
        super().__init__(problem.one_line())
        self.problem = problem


def internal_problem(file: str, exc: BaseException, rule: Optional[str] = None) -> InputProblem:
    """An exception overlap-cli did not expect, as the one-line problem of this file (exit 2)."""
    text = str(exc).strip().splitlines()[0] if str(exc).strip() else ""
    message = f"{type(exc).__name__}: {text}" if text else type(exc).__name__
    return InputProblem(file, message, internal=True, rule=rule)
