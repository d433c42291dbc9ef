"""Plain data types shared by every stage of the pipeline (load -> resolve -> rules -> report/fix).

Kept free of heavy imports: this module is loaded on every start-up.
"""

from __future__ import annotations

TYPE_CHECKING = False  # the typing module costs ~2.5 ms of start-up; annotations here are strings (PEP 563)
if TYPE_CHECKING:
    from typing import Any, Optional

from overlap_cli.problems import InputProblem
from overlap_cli.records import dataclass, field  # not dataclasses: start-up time (records.py)

# The version every JSON document overlap prints opens with ({"version": 1, ...}); bump it only when a
# field changes meaning or goes away (adding fields is not a new version).
JSON_VERSION = 1


def json_document(**fields) -> dict:
    """A JSON document of any command: the version first, then ``fields`` in order."""
    return {"version": JSON_VERSION, **fields}


SEVERITIES = ("info", "warning", "error")
SEVERITY_RANK = {"info": 0, "warning": 1, "error": 2}


def finding_order(f) -> tuple:
    """How a file's findings are listed: by place in the file, the worse first at one place, then code."""
    return (f.line or 0, f.column or 0, -SEVERITY_RANK[f.severity], f.code)

# Where an effective value came from.
USER = "user"  # written in the file or given as a dotlist override
DEFAULT = "default"  # Megatron-Core / Megatron-Bridge dataclass default
BRIDGE_AUTO = "bridge-auto"  # computed by CommOverlapConfig (or validate()) at launch
FORCED_OFF = "forced-off"  # the user asked for it, Bridge switched it off
MIXED_PRECISION = "mixed-precision"  # overwritten by the mixed-precision recipe
UNKNOWN = "unknown"  # depends on something the file does not say (e.g. world size)


@dataclass(frozen=True)
class Edit:
    """One minimal change on the YAML tree. ``key`` is a dotted path."""

    op: str  # "set" | "add" | "remove"
    key: str
    value: Any = None
    comment: Optional[str] = None  # why, written as an end-of-line comment next to the new value

    def to_json(self) -> dict:
        out = {"op": self.op, "key": self.key}
        if self.op != "remove":
            out["value"] = self.value
        if self.comment:
            out["comment"] = self.comment
        return out


@dataclass(frozen=True)
class Fix:
    applicability: str  # "safe" | "unsafe"
    message: str
    edits: tuple[Edit, ...]
    # Keys whose value the edits write in another spelling with the same meaning (a userbuffers preset's name
    # as its serialized fields): a value the user wrote there is kept, not changed (rules.common.keep_user_values).
    respelled: tuple = ()

    def to_json(self) -> dict:
        return {
            "applicability": self.applicability,
            "message": self.message,
            "edits": [e.to_json() for e in self.edits],
        }


# The words that open the reason a safe fix is offered as unsafe because it would change a value the user
# wrote (rules.common.keep_user_values appends it to the fix's message in parentheses; fix.common.reason
# leaves it out of the note a fix writes, tests and docs find the policy by it).
USERS_VALUE = "unsafe here: you wrote"


@dataclass
class Finding:
    code: str
    severity: str
    message: str
    key: Optional[str] = None
    line: Optional[int] = None
    column: Optional[int] = None
    fix: Optional[Fix] = None
    # In a merged run: where the value the finding is about was written when that is not the checked file
    # (``recipe NAME``, another override file's ``FILE:LINE``, ``command line``); line/column are then None.
    origin: Optional[str] = None
    # Structured detail a rule gives beside its message (JSON ``details``), e.g. LM002's every unknown.
    details: Optional[dict] = None
    # In a run with unknown keys: the unknown keys the rule read to produce it (their class defaults stood
    # in), so the finding is no fact (frameworks/bridge/unknowns.effective_and_findings).
    depends_on: Optional[tuple] = None

    def to_json(self) -> dict:
        out = {
            "code": self.code,
            "severity": self.severity,
            "message": self.message,
            "key": self.key,
            "line": self.line,
            "column": self.column,
            "fix": self.fix.to_json() if self.fix else None,
        }
        if self.origin is not None:
            out["origin"] = self.origin
        if self.details is not None:
            out["details"] = self.details
        return out


@dataclass
class Value:
    """An effective setting with its provenance. ``layer``: in a run merged from layers (a recipe, override
    files, the command line), the layer the value came from -- ``recipe NAME``, ``FILE:LINE``, ``command
    line`` -- or, for a value no layer wrote, its source (``default``, ``bridge-auto``, ...)."""

    value: Any
    source: str
    reason: str
    layer: Optional[str] = None

    def to_json(self) -> dict:
        out = {"value": self.value, "source": self.source, "reason": self.reason}
        if self.layer is not None:
            out["layer"] = self.layer
        return out


def same_value(a: Any, b: Any) -> bool:
    """Whether two settings are the same value: YAML's ``true`` and ``1`` compare equal in Python but are
    different settings; ``1`` and ``1.0`` are the same number. Mappings and lists compare item by item."""
    if isinstance(a, bool) or isinstance(b, bool):
        return type(a) is type(b) and a == b
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(same_value(a[k], b[k]) for k in a)
    if isinstance(a, (list, tuple)) and isinstance(b, (list, tuple)):
        return len(a) == len(b) and all(map(same_value, a, b))
    return a == b


def show_value(value: Any, spell: str = "yaml", missing: str = "null") -> str:
    """An effective value as every report writes it, spelled the way the input writes values: ``yaml``
    (a Bridge config, a launch: ``null`` / ``true`` / ``false``) or ``python`` (``None`` / ``True`` /
    ``'text'``). A userbuffers preset (a mapping naming it) is ``preset NAME``, another mapping ``{...}``;
    ``missing`` is what None reads as (``unknown`` where None means "not known")."""
    if value is None:
        return "None" if spell == "python" and missing == "null" else missing
    if isinstance(value, dict):
        preset = value.get("preset")
        return f"preset {preset}" if preset else "{...}"
    if spell == "python":
        return repr(value)
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (int, str)):
        return str(value)
    import json  # floats and lists only: most reports never need it

    try:
        return json.dumps(value)
    except (TypeError, ValueError):
        return str(value)


class Note(str):
    """A note of a file's result: its text (what every report prints, so a Note compares and serialises as
    that string) and its ``kind`` (one of NOTE_KINDS), which a writer that treats some notes differently
    reads instead of matching the prose."""

    def __new__(cls, text: str, kind: str = "general"):
        self = super().__new__(cls, text)
        self.kind = kind
        return self

    def __reduce__(self):  # --jobs workers send results back pickled: keep the kind
        return (Note, (str(self), self.kind))


# The kinds of note (Note.kind). ``launch-world-size``: the world size is the launch's own torchrun / srun
# sizes (the text report says it once for a folder of launches).
NOTE_KINDS = (
    "general", "read-as", "launch-world-size", "world-size", "target", "unknown-keys", "depends-on-unknown",
    "environment", "warning", "transformer-engine", "gpu", "sourced", "left-off", "release-default", "release",
)
# The kinds that say how this file's form was read (the runner it names, the launch's own sizes): the same
# run written in another form is read otherwise, so these notes differ between forms by design.
READING_KINDS = frozenset(("read-as", "launch-world-size"))


def note(text: str, kind: str = "general") -> Note:
    return Note(text, kind)


@dataclass
class FileResult:
    file: str
    target: dict = field(default_factory=dict)
    effective: Optional[dict[str, Value]] = None
    findings: list[Finding] = field(default_factory=list)
    error: Optional[InputProblem] = None
    notes: list[Note] = field(default_factory=list)  # plain strings are read as kind "general"
    # The release checked against (frameworks.target_release.checked_against); None when not checked.
    release: Optional[dict] = None

    def counts(self) -> dict[str, int]:
        out = {s: 0 for s in ("error", "warning", "info")}
        for f in self.findings:
            out[f.severity] += 1
        return out

    def to_json(self) -> dict:
        out: dict[str, Any] = {"file": self.file, "target": self.target}
        if self.release is not None:
            out["release"] = self.release
        if self.error is None:
            out["effective"] = {k: v.to_json() for k, v in (self.effective or {}).items()}
            out["findings"] = [f.to_json() for f in self.findings]
            out["error"] = None
        else:
            out["findings"] = []
            out["error"] = {
                "message": self.error.message,
                "key": self.error.key,
                "line": self.error.line,
                "column": self.error.column,
            }
            if self.error.internal:
                out["error"]["internal"] = True
                out["error"]["rule"] = self.error.rule
        if self.notes:
            out["notes"] = list(self.notes)
            out["note_kinds"] = [getattr(n, "kind", "general") for n in self.notes]
        return out
