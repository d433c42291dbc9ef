"""What differs between two checked runs: the effective settings (values and provenance), the findings, the
target. A pure function over two ``FileResult``s; where each side came from (a file, one file under
another target) is the caller's business, so any input the engine can check can be a side."""

from __future__ import annotations

import re

TYPE_CHECKING = False  # the typing module costs ~2.5 ms of start-up; annotations here are strings (PEP 563)
if TYPE_CHECKING:
    from typing import Any, Optional

    from overlap_cli.results import FileResult, Finding, Value

from overlap_cli.records import dataclass, field  # not dataclasses: start-up time (records.py)
from overlap_cli.results import same_value  # noqa: F401  (report.diff takes it from here)

# Target fields a difference line names, with their labels, in the order they are shown.
TARGET_FIELDS = (
    ("world_size", "world size"),
    ("data_parallel_size", "DP"),
    ("nodes", "nodes"),
    ("gpus_per_node", "GPUs per node"),
    ("gpu", "GPU"),
    ("compute_capability", "compute capability"),
    ("transformer_engine", "Transformer Engine"),
    ("te_version", "TE version"),
    ("torch_version", "torch version"),
    ("env_from_shell", "env from shell"),
)


@dataclass(frozen=True)
class Change:
    """One effective key whose value or provenance differs; a side is None where the key is absent."""

    key: str
    old: Optional[Value]
    new: Optional[Value]

    @property
    def provenance_only(self) -> bool:
        """The same value on both sides, from another place or for another reason."""
        return self.old is not None and self.new is not None and same_value(self.old.value, self.new.value)


@dataclass
class Comparison:
    old: FileResult
    new: FileResult
    effective: list[Change] = field(default_factory=list)  # the value differs, or the key is on one side only
    provenance: list[Change] = field(default_factory=list)  # the same value with another provenance
    appeared: list[Finding] = field(default_factory=list)  # in NEW, not in OLD (by code, key and message)
    disappeared: list[Finding] = field(default_factory=list)  # in OLD, not in NEW
    changed: list[tuple[Finding, Finding]] = field(default_factory=list)  # (old, new): same code and key, other message
    target: list[tuple[str, Any, Any]] = field(default_factory=list)  # (field, old value, new value)

    def differs(self, provenance: bool = False, info: bool = False) -> bool:
        """Whether the run Bridge would launch differs: a value, or a finding that appears, disappears or says
        something else (a target difference alone, e.g. another GPU that changes nothing, does not).
        ``provenance``: a value's provenance counts too; ``info``: info findings count too (as ``check``
        shows them: only when asked)."""
        return bool(self.effective or (provenance and self.provenance) or any(self.findings(info)))

    def findings(self, info: bool = False) -> tuple:
        """(appeared, disappeared, changed), info findings only with ``info``."""
        def keep(f) -> bool:
            return info or f.severity != "info"

        return ([f for f in self.appeared if keep(f)], [f for f in self.disappeared if keep(f)],
                [(a, b) for a, b in self.changed if keep(a) or keep(b)])


def _provenance(v: Value) -> tuple:
    """What a difference in provenance is judged on. In a merged run a value two override files both set
    has the same provenance whatever their names and lines ("set in old.yaml:3" / "set in new.yaml:5")."""
    layer = v.layer
    if layer is not None:
        head, _, line = layer.rpartition(":")
        if head and line.isdigit():
            return ("override file", v.source)
        if layer.startswith("recipe "):  # two recipes both setting the same value
            return ("recipe", v.source)
    return (v.source, _without_lines(v.reason))


# A reason's line numbers (``--tp-comm-overlap on line 12``, ``variable TP (line 7)``, ``train.sh:40``): a value
# whose only change is the line it is written on is the same setting.
_LINE_REF = re.compile(r"\b(lines?) \d+(?:\s*[-,]\s*\d+)*|(?<=\.sh):\d+|(?<=\.yaml):\d+|(?<=\.yml):\d+")


def _without_lines(reason: str) -> str:
    return _LINE_REF.sub(lambda m: (m.group(1) + " N") if m.group(1) else ":N", reason or "")


def _same_setting(a: Value, b: Value) -> bool:
    return same_value(a.value, b.value) and _provenance(a) == _provenance(b)


def _identity(f: Finding) -> tuple:
    return (f.code, f.key, f.message)  # not the line: the same finding moves when lines are added above it


def _only_in(these: list, others: list) -> list:
    """The findings of ``these`` not matched one-for-one in ``others``, in their order."""
    left: dict = {}
    for f in others:
        left[_identity(f)] = left.get(_identity(f), 0) + 1
    out = []
    for f in these:
        ident = _identity(f)
        if left.get(ident):
            left[ident] -= 1
        else:
            out.append(f)
    return out


def _paired(appeared: list, disappeared: list) -> tuple:
    """Findings of the same code on the same key on both sides, whose message changed (``DP=4`` / ``DP=8``):
    (appeared, disappeared, [(old, new)]) with those pairs taken out, one-for-one in order."""
    pairs, left = [], list(disappeared)
    kept = []
    for f in appeared:
        match = next((g for g in left if (g.code, g.key) == (f.code, f.key)), None)
        if match is None:
            kept.append(f)
        else:
            left.remove(match)
            pairs.append((match, f))
    return kept, left, pairs


def compare(old: FileResult, new: FileResult) -> Comparison:
    """The differences between two results that both checked (neither has ``error``). Effective keys in
    OLD's order, then the keys only NEW has in NEW's."""
    if old.error is not None or new.error is not None:
        raise ValueError("compare() takes two checked results; an input error has nothing to compare")
    a, b = old.effective or {}, new.effective or {}
    every = [Change(k, v, b.get(k)) for k, v in a.items() if k not in b or not _same_setting(v, b[k])]
    every += [Change(k, None, v) for k, v in b.items() if k not in a]
    appeared, disappeared, changed = _paired(_only_in(new.findings, old.findings), _only_in(old.findings, new.findings))
    target = [
        (name, old.target.get(name), new.target.get(name))
        for name, _ in TARGET_FIELDS
        if not same_value(old.target.get(name), new.target.get(name))
    ]
    return Comparison(
        old=old,
        new=new,
        effective=[c for c in every if not c.provenance_only],
        provenance=[c for c in every if c.provenance_only],
        appeared=appeared,
        disappeared=disappeared,
        changed=changed,
        target=target,
    )
