"""Loops as ``config.shell`` follows them, on a path's ``State``: ``for`` over known words (``exec_for``) and
``for (( ))`` (``exec_c_for``) / ``while`` / ``until`` (``exec_loop``) with known conditions run iteration by
iteration (``break`` / ``continue`` included), up to ``LOOP_LIMIT`` iterations; a loop whose words or
condition are not known runs its body until no new variable changes (``widen``), and each variable an
iteration may change is unknown after the loop."""

from __future__ import annotations

TYPE_CHECKING = False  # the typing module costs ~2.5 ms of start-up; annotations here are strings (PEP 563)
if TYPE_CHECKING:
    from overlap_cli.config.shell_values import State

from overlap_cli.config.argv import variable_origin
from overlap_cli.config.shell_commands import exec_arith
from overlap_cli.config.shell_expand import expand, set_unknown
from overlap_cli.config.shell_paths import settle
from overlap_cli.config.shell_values import Var

LOOP_LIMIT = 256  # iterations followed exactly


def exec_for(rd, node, st: State) -> list:
    """``for NAME in WORDS`` (``for NAME`` alone: over ``$@``), or ``for (( ; ; ))``."""
    if node.arith is not None:
        return exec_c_for(rd, node, st)
    mark = len(st.notes)
    if node.words is None:
        items = None if st.positional is None else list(st.positional)
    else:
        items = []
        for w in node.words:
            items.extend(expand(rd, st, w, variable_origin(node.name, node.line), split=True))
        if any(f.unknown for f in items):
            items = None
    del st.notes[mark:]
    if items is None or len(items) > LOOP_LIMIT:
        return widen(rd, node, st, lambda s: _for_any_item(rd, node, s))
    states = [st]
    done: list = []
    for item in items:
        nxt: list = []
        for s in states:
            s.vars[node.name] = Var(node.name, [item], False, node.line).keep_export(s.vars.get(node.name))
            for r in rd.exec(node.body, s):
                after_iteration(r, nxt, done)
        states = settle(rd, nxt, node.line)
    return settle(rd, states + done, node.line)


def after_iteration(r: State, again: list, done: list) -> None:
    """Sort a path after one iteration: into ``again`` (runs the next one) or ``done`` (left the loop)."""
    flow = r.flow
    if flow is None:
        again.append(r)
    elif flow[0] == "continue":
        r.flow = None if flow[1] <= 1 else ("continue", flow[1] - 1)
        (again if r.flow is None else done).append(r)
    elif flow[0] == "break":
        r.flow = None if flow[1] <= 1 else ("break", flow[1] - 1)
        done.append(r)
    else:
        done.append(r)


def _for_any_item(rd, node, st: State) -> list:
    """One iteration of a ``for`` whose words are not known: its variable is not known."""
    set_unknown(rd, st, node.name, node.start, f"${node.name} is the variable of the for loop on line {node.line}")
    return rd.exec(node.body, st)


def exec_c_for(rd, node, st: State) -> list:
    init, cond, step = node.arith
    if init:
        exec_arith(rd, init, node.start, st)
    states, done = [st], []
    for _ in range(LOOP_LIMIT):
        nxt: list = []
        rd.steps += 2 * len(states)  # the condition and the step: as costly as a command each
        for s in states:
            if cond:
                exec_arith(rd, cond, node.start, s)
                if s.status is None:
                    done.extend(widen(rd, node, s, lambda w: _c_for_iteration(rd, node, w)))
                    continue
                if not s.status:
                    done.append(s)
                    continue
            for r in rd.exec(node.body, s):
                after_iteration(r, nxt, done)
        states = settle(rd, nxt, node.line)
        for s in states:
            if step:
                exec_arith(rd, step, node.start, s)
        if not states:
            break
    else:
        for s in states:
            done.extend(widen(rd, node, s, lambda w: _c_for_iteration(rd, node, w)))
    return settle(rd, done, node.line)


def _c_for_iteration(rd, node, st: State) -> list:
    _init, cond, step = node.arith
    if cond:
        exec_arith(rd, cond, node.start, st)
    out = []
    for r in rd.exec(node.body, st):
        if r.flow is not None and r.flow[0] in ("continue", "break"):
            r.flow = None
        if step:
            exec_arith(rd, step, node.start, r)
        out.append(r)
    return out


def exec_loop(rd, node, st: State) -> list:
    """``while COND; do ...; done`` and ``until``."""
    states = [st]
    done: list = []
    for _ in range(LOOP_LIMIT):
        nxt: list = []
        for s in states:
            for c in rd.exec(node.condition, s):
                if c.flow is not None:
                    done.append(c)
                    continue
                status = c.status if c.status is None or not node.until else not c.status
                if status is None:  # stops some time: after any number of iterations, or none
                    done.extend(widen(rd, node, c, lambda w: _while_iteration(rd, node, w)))
                    continue
                if not status:
                    c.status = True
                    done.append(c)
                    continue
                for r in rd.exec(node.body, c):
                    after_iteration(r, nxt, done)
        states = settle(rd, nxt, node.line)
        if not states:
            return settle(rd, done, node.line)
    for s in states:
        done.extend(widen(rd, node, s, lambda w: _while_iteration(rd, node, w)))
    return settle(rd, done, node.line)


def _while_iteration(rd, node, st: State) -> list:
    out = []
    for c in rd.exec(node.condition, st):
        for r in rd.exec(node.body, c):
            if r.flow is not None and r.flow[0] in ("continue", "break"):
                r.flow = None
            out.append(r)
    return out


def _differs(a, b) -> bool:
    return (a is None) != (b is None) or (a is not None and a.signature() != b.signature())


def widen(rd, node, st: State, iteration) -> list:
    """The state after a loop that runs an unknown number of times from ``st``: each variable an
    iteration may change (found by running iterations until no new one changes) is unknown."""
    changed: set = set()
    base = st
    for _ in range(8):
        trial = base.copy()
        outs = iteration(trial)
        now = set()
        for r in outs:
            rv, bv = r.vars, base.vars
            # a copied path shares the Var of every name the iteration did not set: only the others are compared
            moved = [name for name, a in rv.items() if a is not bv.get(name)]
            now.update(name for name in moved if _differs(rv[name], bv.get(name)))
            now.update(name for name in bv.keys() - rv.keys() if bv[name] is not None)
        if now <= changed:
            break
        changed |= now
        base = st.copy()
        for name in sorted(changed):
            set_unknown(rd, base, name, node.start, f"${name} changes in the loop on line {node.line}, which runs an "
                        "unknown number of times")
    base.status, base.flow = None, None
    base.launched = base.launched or st.launched
    return [base]
