"""Loops of a launch script as ``config.shell`` follows them: ``for`` over known words and ``for (( ))`` /
``while`` / ``until`` with known conditions run iteration by iteration (``break`` / ``continue`` included),
up to ``LOOP_LIMIT`` iterations; a loop whose words or condition are not known runs its body until no new
variable changes (``widen``), and each variable an iteration may change is unknown after the loop."""

from __future__ import annotations

TYPE_CHECKING = False  # the typing module costs ~2.5 ms of start-up; annotations here are strings (PEP 563)
if TYPE_CHECKING:
    from typing import Optional


from overlap_cli.config.argv import variable_origin
from overlap_cli.config.shell_expand import Var

LOOP_LIMIT = 256  # iterations followed exactly


class Loops:
    """Mixed into ``config.shell.Reader``."""

    def exec_for(self, node, st) -> list:
        if node.arith is not None:
            return self.exec_c_for(node, st)
        self.bind(st)
        mark = len(st.notes)
        if node.words is None:
            items = None if st.positional is None else list(st.positional)
        else:
            items = []
            for w in node.words:
                items.extend(self.expand(w, variable_origin(node.name, node.line), split=True))
            if any(f.unknown for f in items):
                items = None
        del st.notes[mark:]
        if items is None or len(items) > LOOP_LIMIT:
            return self.widen(node, st, lambda s: self.loop_body(node, node.body, s, node.name))
        states = [st]
        done: list = []
        for item in items:
            nxt: list = []
            for s in states:
                var = Var(node.name, [item], False, node.line)
                old = s.vars.get(node.name)
                if old is not None and old.exported:
                    var.exported, var.export_line, var.export_col = True, old.export_line, old.export_col
                s.vars[node.name] = var
                for r in self.exec(node.body, s):
                    self.after_iteration(r, nxt, done)
            states = self.settle(nxt, node.line)
        return self.settle(states + done, node.line)

    @staticmethod
    def after_iteration(r, again: list, done: list) -> None:
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

    def loop_body(self, node, body, st, name: Optional[str] = None) -> list:
        """One iteration from ``st`` in a loop that may run any number of times (``name``: its variable,
        not known)."""
        if name is not None:
            self.bind(st)
            self.set_unknown(name, node.start, f"${name} is the variable of the for loop on line {node.line}")
        return self.exec(body, st)

    def exec_c_for(self, node, st) -> list:
        init, cond, step = node.arith
        if init:
            self.exec_arith(init, node.start, st)
        states, done = [st], []
        for _ in range(LOOP_LIMIT):
            nxt: list = []
            for s in states:
                if cond:
                    self.exec_arith(cond, node.start, s)
                    if s.status is None:
                        done.extend(self.widen(node, s, lambda w: self.c_for_iteration(node, w)))
                        continue
                    if not s.status:
                        done.append(s)
                        continue
                for r in self.exec(node.body, s):
                    self.after_iteration(r, nxt, done)
            states = self.settle(nxt, node.line)
            for s in states:
                if step:
                    self.exec_arith(step, node.start, s)
            if not states:
                break
        else:
            for s in states:
                done.extend(self.widen(node, s, lambda w: self.c_for_iteration(node, w)))
        return self.settle(done, node.line)

    def c_for_iteration(self, node, st) -> list:
        _init, cond, step = node.arith
        if cond:
            self.exec_arith(cond, node.start, st)
        out = []
        for r in self.exec(node.body, st):
            if r.flow is not None and r.flow[0] in ("continue", "break"):
                r.flow = None
            if step:
                self.exec_arith(step, node.start, r)
            out.append(r)
        return out

    def exec_loop(self, node, st) -> list:
        states = [st]
        done: list = []
        for _ in range(LOOP_LIMIT):
            nxt: list = []
            for s in states:
                for c in self.exec(node.condition, s):
                    if c.flow is not None:
                        done.append(c)
                        continue
                    status = c.status if c.status is None or not node.until else not c.status
                    if status is None:  # stops some time: after any number of iterations, or none
                        done.extend(self.widen(node, c, lambda w: self.while_iteration(node, w)))
                        continue
                    if not status:
                        c.status = True
                        done.append(c)
                        continue
                    for r in self.exec(node.body, c):
                        self.after_iteration(r, nxt, done)
            states = self.settle(nxt, node.line)
            if not states:
                return self.settle(done, node.line)
        for s in states:
            done.extend(self.widen(node, s, lambda w: self.while_iteration(node, w)))
        return self.settle(done, node.line)

    def while_iteration(self, node, st) -> list:
        out = []
        for c in self.exec(node.condition, st):
            for r in self.exec(node.body, c):
                if r.flow is not None and r.flow[0] in ("continue", "break"):
                    r.flow = None
                out.append(r)
        return out

    def widen(self, node, st, iteration) -> list:
        """The state after a loop that runs an unknown number of times from ``st``: each variable an
        iteration may change (found by running iterations until no new one changes) is unknown."""
        changed: set = set()
        base = st
        for _ in range(8):
            trial = base.copy()
            outs = iteration(trial)
            now = set()
            for r in outs:
                for name in set(r.vars) | set(base.vars):
                    a, b = r.vars.get(name), base.vars.get(name)
                    if (a is None) != (b is None) or (a is not None and a.signature() != b.signature()):
                        now.add(name)
            if now <= changed:
                break
            changed |= now
            base = st.copy()
            self.bind(base)
            for name in sorted(changed):
                self.set_unknown(name, node.start, f"${name} changes in the loop on line {node.line}, which runs an "
                                 "unknown number of times")
        base.status, base.flow = None, None
        base.launched = base.launched or st.launched
        return [base]
