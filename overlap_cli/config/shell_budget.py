"""The reader's step budget (``config.shell``): a script that takes too many steps to follow is still read.

``Reader.exec`` counts every command it runs, over all paths. Past the allowance it raises ``OverBudget``,
which unwinds to the script's top-level command in progress (``shell_eval.exec_seq``): that command is
given up (``abandon``), as bash would run it but unread. The paths that entered it become one, and each
variable it may assign as written (with the functions it may call) is unknown with the reason; after a
``source``, ``eval`` or a command whose name is not written, every variable, and a variable the script never
set may be what it set (``State.sourced``, as after a ``source`` of a file that is not read). The rest of the
script is read with half the allowance before (never under ``SKIM_BELOW``), and the whole reading within
twice ``STEP_LIMIT`` steps (``total_steps``): past that the rest is skimmed. A top-level command whose text
holds a launch (``torchrun``, ``pretrain_*.py``) runs within ``SKIM_BELOW`` steps while the reserve (half of
``STEP_LIMIT``) lasts, a simple command that calls no function of the script runs (one step), any other is
given up unread in the same way.
"""

from __future__ import annotations

import re

TYPE_CHECKING = False  # the typing module costs ~2.5 ms of start-up; annotations here are strings (PEP 563)
if TYPE_CHECKING:
    from overlap_cli.config.shell_values import State

from overlap_cli.config import shell_tree as tree
from overlap_cli.config.shell_expand import set_unknown

STEP_LIMIT = 100_000  # commands evaluated before the first top-level command is given up, over all paths
SKIM_BELOW = 1_000  # the least allowance of a top-level command after one was given up


class OverBudget(Exception):
    """The reading ran past its allowance of steps (not an input error: the caller gives a command up)."""


def reason(line: int) -> str:
    return (f"may be set by the commands on line {line}, which take more than {STEP_LIMIT:,} steps to follow "
            "statically (the reader's step budget)")


def total_steps() -> int:
    """Past this, the rest of the script is skimmed."""
    return 2 * STEP_LIMIT


def skim_reserve() -> int:
    """Steps for the top-level commands that hold a launch, once skimming."""
    return STEP_LIMIT // 2


def next_allowance(rd) -> None:
    """After a command given up: the rest of the script is read with half the allowance before."""
    rd.allowance = max(rd.allowance // 2, SKIM_BELOW)
    rd.limit = min(rd.steps + rd.allowance, total_steps())


def skimming(rd) -> bool:
    return rd.steps >= total_steps()


def abandon(rd, item, entering: list) -> State:
    """The one path after a top-level command given up: ``entering`` is [(state, its positional parameters,
    its number of function frames)] as the command began (the states themselves changed by what ran)."""
    states = []
    for s, positional, frames in entering:
        s.positional, s.frames = positional, s.frames[:frames]
        s.flow, s.done, s.key = None, False, None
        states.append(s)
    st = states[0]
    for other in states[1:]:
        for name, var in other.vars.items():
            if name not in st.vars:
                st.vars[name] = var
        st.notes.extend(n for n in other.notes if n not in st.notes)
        st.launched = st.launched or other.launched
        st.choices = tuple(c for c in st.choices if c in other.choices)
    return give_up(rd, item, st)


def give_up(rd, item, st: State) -> State:
    """``st`` after ``item`` runs unread: each variable it may assign (as written, with the functions it may
    call) is unknown; after a ``source``, ``eval`` or a command whose name is not written, every variable."""
    why = reason(item.line)
    names: set = set()
    if assigned_names(item, names, st):
        for name, var in list(st.vars.items()):
            _unknown(rd, st, name, var, item.start, why)
        st.sourced = why
    else:
        for name in sorted(names):
            _unknown(rd, st, name, st.vars.get(name), item.start, why)
    st.memo, st.status, st.key = {}, None, None
    rd.given_up.append(item.line)
    return st


def given_up_note(lines: list) -> str:
    """The sentence naming the top-level commands given up (``Reader.given_up``), or ""."""
    if not lines:
        return ""
    shown = ", ".join(map(str, lines[:8])) + (f" and {len(lines) - 8} more" if len(lines) > 8 else "")
    return (f"line{'s' if len(lines) > 1 else ''} {shown}: the commands there take more than {STEP_LIMIT:,} steps to "
            "follow statically (the reader's step budget); every variable they may set is unknown after them")


def skim(rd, item, end: int, st: State) -> list:
    """A top-level command (its text up to ``end``) once the reading is past ``total_steps``: a simple
    command that calls no function of the script runs; one whose text holds a launch runs within
    ``SKIM_BELOW`` steps while the reserve lasts; any other is given up unread, what it assigns unknown."""
    from overlap_cli.config.shell_inner import LAUNCH_WORDS

    last = total_steps() + skim_reserve()
    if rd.steps < last and LAUNCH_WORDS.search(rd.text, item.start, end):
        rd.limit = min(rd.steps + SKIM_BELOW, last)
    elif item.__class__ is tree.Simple and not _calls(item, st):
        rd.limit = rd.steps + 1  # the command itself: a bash -c string it runs is given up with it
    else:
        return [give_up(rd, item, st)]
    entering = [(st, st.positional, len(st.frames))]
    try:
        return rd.exec(item, st)
    except OverBudget:
        return [abandon(rd, item, entering)]


def _unknown(rd, st: State, name: str, var, offset: int, why: str) -> None:
    set_unknown(rd, st, name, offset, f"${name} {why}")
    if var is not None and var.exported:
        new = st.vars[name]
        new.exported, new.export_line, new.export_col = True, var.export_line, var.export_col


_ASSIGNING = frozenset(("export", "declare", "typeset", "local", "readonly", "read", "unset", "mapfile", "readarray",
                        "let", "getopts", "printf"))
_OPAQUE = frozenset(("source", ".", "eval"))
_ARITH_TARGET = re.compile(r"([A-Za-z_]\w*)\s*(?:\[[^\]]*\]\s*)?(?:[-+*/%&|^]|<<|>>)?=(?!=)"
                           r"|([A-Za-z_]\w*)\s*(?:\+\+|--)|(?:\+\+|--)\s*([A-Za-z_]\w*)")
_NAME_ARG = re.compile(r"[A-Za-z_]\w*")


def _calls(node, st: State) -> bool:
    """Whether a simple command may run more than itself: a function of the script, source, eval, or a
    command whose name is not written."""
    if not node.words:
        return False
    name = node.words[0].literal_text()
    return name is None or name in st.funcs or name in _OPAQUE


def assigned_names(node, names: set, st: State) -> bool:
    """Add to ``names`` every variable ``node`` may assign as written (with the functions it may call, once
    each); True when it may assign any variable at all (source, eval, a command not written)."""
    seen_funcs: set = set()
    todo = [node]
    while todo:
        n = todo.pop()
        cls = n.__class__
        if cls is tree.Simple:
            if _simple_names(n, names, st, seen_funcs, todo):
                return True
        elif cls is tree.Arith:
            _arith_names(n.expr, names)
        elif cls is tree.For:
            if n.name:
                names.add(n.name)
            if n.arith is not None:
                for part in n.arith:
                    _arith_names(part or "", names)
            todo.append(n.body)
        else:
            todo.extend(_children(n))
    return False


def _simple_names(n, names: set, st: State, seen_funcs: set, todo: list) -> bool:
    for item in n.prefix:
        word = item[1] if isinstance(item, tuple) else item
        text = word.parts[0][1] if word.parts and word.parts[0][0] == "lit" else ""
        m = _NAME_ARG.match(text)
        if m:
            names.add(m.group(0))
    if not n.words:
        return False
    name = n.words[0].literal_text()
    if name is None or name in _OPAQUE:
        return True
    if name in st.funcs:
        if name not in seen_funcs:
            seen_funcs.add(name)
            todo.append(st.funcs[name].body)
        return False
    if name in _ASSIGNING:
        for w in n.words[1:]:
            text = w.literal_text()
            if text is None:
                return name in ("export", "declare", "typeset", "local", "readonly", "read", "unset")
            m = _NAME_ARG.match(text)
            if m and not text.startswith("-"):
                names.add(m.group(0))
            if name == "let":
                _arith_names(text, names)
    return False


def _arith_names(expr: str, names: set) -> None:
    for m in _ARITH_TARGET.finditer(expr):
        names.add(m.group(1) or m.group(2) or m.group(3))


def _children(n) -> list:
    cls = n.__class__
    if cls is tree.Seq:
        return [item for item, _bg in n.items]
    if cls is tree.AndOr:
        return [n.first] + [p for _op, p in n.rest]
    if cls is tree.Pipeline:
        return list(n.commands)
    if cls is tree.If:
        out = [part for c in n.clauses for part in c[:2]]
        return out + ([n.otherwise] if n.otherwise is not None else [])
    if cls is tree.Case:
        return [item[1] for item in n.items]
    if cls is tree.Loop:
        return [n.condition, n.body]
    if cls is tree.Group or cls is tree.Function:  # a function defined there may be called there
        return [n.body]
    return []  # Test
