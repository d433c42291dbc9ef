"""Paths through a launch script (``config.shell``): where they split and where they become one again.

``fork`` splits a path at a condition the script does not decide (each side records the decision; a
condition on a constant unknown is decided once per path, ``State.memo``). ``settle`` drops the paths that
exited and keeps one path for those that end the same; beyond ``MAX_PATHS`` they are merged
(``merge_states``): a variable they do not all agree on is unknown, an array keeps the elements they
share at its start and end.
"""

from __future__ import annotations

TYPE_CHECKING = False  # the typing module costs ~2.5 ms of start-up; annotations here are strings (PEP 563)
if TYPE_CHECKING:
    from overlap_cli.config.shell_values import State

from overlap_cli.config.argv import variable_origin
from overlap_cli.config.shell_values import Field, Var, field_signature

MAX_PATHS = 64  # ways through the script kept apart; beyond, they are merged (the differing values unknown)


def fork(rd, st: State, fork_id: tuple, label: str, yes: str, no: str) -> tuple:
    """(the path where the decision is yes, the one where it is no) — or one of them None when the
    condition was decided before on this path (a constant unknown)."""
    rd.forks.setdefault(fork_id, label)
    key = st.key
    if key is not None and key in st.memo:
        st.status, st.key = st.memo[key], None
        return (st, None) if st.status else (None, st)
    other = st.copy()
    st.choices += ((fork_id, yes),)
    other.choices += ((fork_id, no),)
    if key is not None:
        st.memo[key], other.memo[key] = True, False
    st.status, other.status = True, False
    st.key = other.key = None
    return st, other


def settle(rd, states: list, line: int) -> list:
    """Drop the paths that exited; one path for those that end the same; merge beyond MAX_PATHS."""
    live = [s for s in states if not s.done]
    if len(live) <= 1:
        return live
    by_key: dict = {}
    out: list = []
    for s in live:
        group = by_key.setdefault(s.quick_key(), [])
        have = next((h for h in group if h.same(s)), None) if group else None
        if have is None:
            group.append(s)
            out.append(s)
            continue
        # the decisions that made no difference are forgotten; what both paths know stays known
        have.choices = tuple(c for c in have.choices if c in s.choices)
        have.memo = {k: v for k, v in have.memo.items() if s.memo.get(k, not v) == v}
        have.notes.extend(n for n in s.notes if n not in have.notes)
        if have.status != s.status:
            have.status = None
    if len(out) > MAX_PATHS:
        out = [merge_states(rd, out, line)]
    return out


def merge_states(rd, states: list, line: int) -> State:
    """One state for many: a variable they do not all agree on is unknown (an array keeps the elements
    they share at its start and end, the middle a stretch of any words)."""
    first = states[0]
    merged = first.copy()
    names: dict = {}  # in the order first met
    for s in states:
        names.update(dict.fromkeys(s.vars))
    why = f"its value differs between more than {MAX_PATHS} ways through the script (line {line})"
    for name in names:
        vs = [s.vars.get(name) for s in states]
        if all(v is not None for v in vs) and len({v.signature() for v in vs}) == 1:
            continue
        present = [v for v in vs if v is not None]
        base = present[0]
        var = Var(name, [], base.array, base.line)
        var.exported = any(v.exported for v in present)
        var.export_line, var.export_col = base.export_line, base.export_col
        if base.array and len(present) == len(vs) and all(v.array for v in present):
            var.fields = common_ends(present, variable_origin(name, base.line))
        else:
            f = Field(variable_origin(name, base.line))
            f.hole("$" + name)
            var.fields = [f]
            var.note = f"${name}: {why}"
        merged.vars[name] = var
    seen = set(merged.notes)
    for s in states[1:]:
        for n in s.notes:
            if n not in seen:
                seen.add(n)
                merged.notes.append(n)
    merged.choices = tuple(c for c in first.choices if all(c in s.choices for s in states))
    merged.memo = {}
    merged.status = None
    merged.launched = any(s.launched for s in states)
    rd.merged_note = (f"line {line}: more than {MAX_PATHS} ways through the script; the values that differ "
                      "between them are unknown")
    return merged


def common_ends(vars_: list, origin: str) -> list:
    """The elements every array has at its start and at its end, with a stretch of any words between."""
    sigs = [[field_signature(f) for f in v.fields] for v in vars_]
    head = 0
    while all(head < len(s) for s in sigs) and len({s[head] for s in sigs}) == 1:
        head += 1
    tail = 0
    while all(tail < len(s) - head for s in sigs) and len({s[len(s) - 1 - tail] for s in sigs}) == 1:
        tail += 1
    first = vars_[0].fields
    if head == len(first) and all(len(s) == head for s in sigs):
        return list(first)
    middle = Field(origin)
    middle.hole("$" + vars_[0].name + " (differs between paths)")
    middle.multi = True
    return list(first[:head]) + [middle] + list(first[len(first) - tail:] if tail else [])
