"""A Megatron-LM launch script, read as bash would run it up to its launch line — parsed, never run.

``shell_parse`` builds bash's command tree; this module walks it the way bash would, over *paths*: a path
is one way through the script with its own variables. What is known statically is evaluated exactly: the
assignments and ``export`` / ``declare -x`` / ``unset`` / ``local``, ``if`` / ``elif`` / ``case`` /
``&&`` / ``||`` over ``[ ]``, ``test``, ``[[ ]]``, ``(( ))`` and ``let`` on known values, ``for`` over
known words, ``for (( ))`` / ``while`` / ``until`` with known conditions, ``break`` / ``continue``, functions
(called with their arguments), ``exit``, subshells and pipelines (whose assignments vanish). A condition
that depends on what the script does not say — a variable from the caller's environment, a file on the
launch machine, ``$(...)``, a command's exit status — is followed both ways: the path forks, and each fork
records the decision. Paths that end the same are one path again; more than ``MAX_PATHS`` are merged, the
values that differ between them unknown. A loop whose condition is not known runs its body until nothing
new changes, and what the body changes is unknown after it.

Expansion is ``shell_expand``'s (``$VAR``, ``${ARR[@]}``, ``${VAR:-default}``, ``$((...))``, word splitting):
what is not known is a hole in the word, never a guess. A ``${VAR:-default}`` of a variable the script never
sets takes the default, with a sentence saying the environment may set it.

The launch line is the first command that runs ``torchrun``, ``python -m torch.distributed.run`` (or
``.launch``), or ``python[3] ... pretrain_*.py`` (``launchers.find_program``, on the command's expanded
words); ``shell_launch`` turns each path that reaches it into its words, environment and world size, and
merges them: a value every path agrees on is known, one that differs is unknown with the decision named.
"""

from __future__ import annotations

import re

TYPE_CHECKING = False  # the typing module costs ~2.5 ms of start-up; annotations here are strings (PEP 563)
if TYPE_CHECKING:
    from typing import Optional

from overlap_cli.check.results import InputError, InputProblem
from overlap_cli.config.argv import LaunchText, variable_origin
from overlap_cli.config.launchers import LaunchFinder
from overlap_cli.config.shell_expand import Expander, Field, Var, field_signature
from overlap_cli.config.shell_lex import NAME, Word
from overlap_cli.config import shell_parse as tree

SHELL_SUFFIXES = (".sh", ".bash", ".slurm", ".sbatch")

MAX_PATHS = 64  # ways through the script kept apart; beyond, they are merged (the differing values unknown)
LOOP_LIMIT = 256  # iterations followed exactly
CALL_DEPTH = 16
STEP_LIMIT = 200_000  # commands evaluated, over all paths

_ASSIGN = re.compile(r"([A-Za-z_][A-Za-z0-9_]*)(\[[^\]]*\])?(\+?=)")
# Builtins whose status is 0 whatever they are given (as scripts use them).
_SUCCEED = frozenset(("true", ":", "echo", "printf", "sleep", "set", "shopt", "trap", "ulimit", "umask", "alias",
                      "wait", "hash", "type", "shift", "cd", "pushd", "popd", "mkdir", "export", "declare", "typeset",
                      "local", "readonly", "unset"))
_SUCCEED_MAYBE = frozenset(("cd", "pushd", "popd", "mkdir"))  # they fail when the directory is not there


class State:
    """One path: its variables, functions, positional parameters and the decisions that led here."""

    __slots__ = ("vars", "funcs", "positional", "notes", "choices", "memo", "status", "key", "flow", "launched",
                 "done", "frames", "sourced")

    def __init__(self):
        self.vars: dict = {}
        self.funcs: dict = {}
        self.positional: Optional[list] = None
        self.notes: list = []
        self.choices: tuple = ()
        self.memo: dict = {}  # condition key -> its value on this path (a constant unknown, decided once)
        self.status: Optional[bool] = True  # the last command succeeded (None: not known)
        self.key: Optional[tuple] = None  # the condition the status is the value of, when it can be memoized
        self.flow: Optional[tuple] = None  # ("break", n) | ("continue", n) | ("return",)
        self.launched = False
        self.done = False  # exit ran
        self.frames: list = []  # per function call: {name: the Var before ``local`` (None: unset)}
        self.sourced: Optional[int] = None  # the line of a ``source`` not read (see Expander.sourced)

    def copy(self) -> "State":
        s = State()
        s.vars, s.funcs, s.positional = dict(self.vars), dict(self.funcs), self.positional
        s.notes, s.choices, s.memo = list(self.notes), self.choices, dict(self.memo)
        s.status, s.key, s.flow, s.launched, s.done = self.status, self.key, self.flow, self.launched, self.done
        s.frames = [dict(f) for f in self.frames]
        s.sourced = self.sourced
        return s

    def signature(self) -> tuple:
        return (tuple(sorted((k, v.signature()) for k, v in self.vars.items())),
                tuple(sorted((k, id(v)) for k, v in self.funcs.items())),
                None if self.positional is None else tuple(field_signature(f) for f in self.positional),
                self.flow, self.launched, tuple(tuple(sorted(f)) for f in self.frames), self.sourced)


class Reader(Expander, LaunchFinder):
    def __init__(self, path: str, text: str):
        super().__init__(path, text)
        self.records: list = []  # (Simple node, State, fields, word_of, kind, index) at each launch
        self.forks: dict = {}  # fork id -> its description
        self.extra_launches: list = []  # lines of further launches
        self.merged_note: Optional[str] = None
        self.depth = 0
        self.steps = 0

    # --- running the tree ---------------------------------------------------------------------------

    def run_script(self) -> None:
        program, _parser = tree.parse_script(self.path, self.text)
        self.exec(program, State())

    def bind(self, st: State) -> None:
        self.vars, self.unknowns, self.positional, self.sourced = st.vars, st.notes, st.positional, st.sourced

    def exec(self, node, st: State) -> list:
        """The states after ``node`` runs in ``st`` (``st`` itself may be one of them, changed)."""
        self.steps += 1
        if self.steps > STEP_LIMIT:
            raise self.fail("the script takes too many steps to follow statically", node.start)
        kind = node.__class__
        st.key = None
        if kind is tree.Seq:
            return self.exec_seq(node, st)
        if kind is tree.Simple:
            return self.exec_simple(node, st)
        if kind is tree.AndOr:
            return self.exec_and_or(node, st)
        if kind is tree.Pipeline:
            return self.exec_pipeline(node, st)
        if kind is tree.If:
            return self.exec_if(node, st)
        if kind is tree.Case:
            return self.exec_case(node, st)
        if kind is tree.For:
            return self.exec_for(node, st)
        if kind is tree.Loop:
            return self.exec_loop(node, st)
        if kind is tree.Group:
            if node.subshell:
                return [self.subshell(node.body, st)]
            return self.exec(node.body, st)
        if kind is tree.Function:
            st.funcs[node.name] = node
            st.status = True
            return [st]
        if kind is tree.Arith:
            return [self.exec_arith(node.expr, node.start, st)]
        if kind is tree.Test:
            return [self.exec_double_test(node, st)]
        raise AssertionError(kind)

    def exec_seq(self, node, st: State) -> list:
        states = [st]
        for item, background in node.items:
            out: list = []
            for s in states:
                if s.flow is not None:
                    out.append(s)
                elif background:  # a subshell of its own: its launches count, its assignments vanish
                    keep = self.subshell(item, s)
                    keep.status = True
                    out.append(keep)
                else:
                    out.extend(self.exec(item, s))
            states = self.settle(out, item.line)
        return states

    def subshell(self, node, st: State) -> State:
        """Run ``node`` in a copy of ``st``: ``st`` comes back unchanged, with the subshell's status."""
        outs = [s for s in self.exec(node, st.copy())]
        statuses = {s.status for s in outs if not s.done}
        st.status = statuses.pop() if len(statuses) == 1 and not any(s.done for s in outs) else None
        st.key = None
        return st

    def settle(self, states: list, line: int) -> list:
        """Drop the paths that exited; one path for those that end the same; merge beyond MAX_PATHS."""
        live = [s for s in states if not s.done]
        if len(live) <= 1:
            return live
        by_sig: dict = {}
        for s in live:
            sig = s.signature()
            have = by_sig.get(sig)
            if have is None:
                by_sig[sig] = s
                continue
            # the decisions that made no difference are forgotten; what both paths know stays known
            have.choices = tuple(c for c in have.choices if c in s.choices)
            have.memo = {k: v for k, v in have.memo.items() if s.memo.get(k, not v) == v}
            have.notes.extend(n for n in s.notes if n not in have.notes)
            if have.status != s.status:
                have.status = None
        out = list(by_sig.values())
        if len(out) > MAX_PATHS:
            out = [self.merge_states(out, line)]
        return out

    def merge_states(self, states: list, line: int) -> State:
        """One state for many: a variable they do not all agree on is unknown (an array keeps the elements
        they share at its start and end, the middle a stretch of any words)."""
        first = states[0]
        merged = first.copy()
        names = []
        for s in states:
            names.extend(n for n in s.vars if n not in names)
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
                var.fields = _common_ends(present, variable_origin(name, base.line))
            else:
                f = Field(variable_origin(name, base.line))
                f.hole("$" + name)
                var.fields = [f]
                var.note = f"${name}: {why}"
            merged.vars[name] = var
        for s in states[1:]:
            merged.notes.extend(n for n in s.notes if n not in merged.notes)
        merged.choices = tuple(c for c in first.choices if all(c in s.choices for s in states))
        merged.memo = {}
        merged.status = None
        merged.launched = any(s.launched for s in states)
        self.merged_note = (f"line {line}: more than {MAX_PATHS} ways through the script; the values that differ "
                            "between them are unknown")
        return merged

    # --- decisions ------------------------------------------------------------------------------------

    def fork(self, st: State, fork_id: tuple, label: str, yes: str, no: str) -> tuple:
        """(the path where the decision is yes, the one where it is no) — or one of them None when the
        condition was decided before on this path (a constant unknown)."""
        self.forks.setdefault(fork_id, label)
        key = st.key
        if key is not None and key in st.memo:
            return (st, None) if st.memo[key] else (None, st)
        other = st.copy()
        st.choices += ((fork_id, yes),)
        other.choices += ((fork_id, no),)
        if key is not None:
            st.memo[key], other.memo[key] = True, False
        st.status, other.status = True, False
        st.key = other.key = None
        return st, other

    def source_text(self, start: int, stop: str = "") -> str:
        """The text of the line from ``start``, up to ``stop`` (``; then``), shortened for a sentence."""
        end = self.end_of_line(start)
        text = self.text[start:end]
        if stop:
            cut = re.search(r";?\s*" + stop + r"\b.*$", text)
            if cut:
                text = text[:cut.start()]
        text = text.strip()
        return text if len(text) <= 60 else text[:57] + "..."

    def exec_if(self, node, st: State) -> list:
        out: list = []
        pending = [st]
        for idx, (condition, body, line) in enumerate(node.clauses):
            waiting: list = []
            for s in pending:
                for c in self.exec(condition, s):
                    if c.flow is not None:
                        out.append(c)
                        continue
                    if c.status is None:
                        where = "if" if idx == 0 else "elif"
                        label = f"the {where} on line {line} ({self.source_text(condition.start, 'then')})"
                        c, other = self.fork(c, ("if", node.start, idx), label, "holds", "does not hold")
                    else:
                        c, other = (c, None) if c.status else (None, c)
                    if c is not None:
                        out.extend(self.exec(body, c))
                    if other is not None:
                        waiting.append(other)
            pending = self.settle(waiting, line)
        for s in pending:
            if node.otherwise is not None:
                out.extend(self.exec(node.otherwise, s))
            else:
                s.status = True
                out.append(s)
        return self.settle(out, node.line)

    def exec_and_or(self, node, st: State) -> list:
        states = self.exec(node.first, st)
        prev = node.first
        for op, pipeline in node.rest:
            out: list = []
            for s in states:
                if s.flow is not None:
                    out.append(s)
                    continue
                if s.status is None:
                    label = f"whether `{self.source_text(prev.start, re.escape(op))}` on line {prev.line} succeeds"
                    s, other = self.fork(s, ("andor", pipeline.start), label, "succeeds", "fails")
                    run, skip = (s, other) if op == "&&" else (other, s)
                else:
                    run, skip = (s, None) if s.status == (op == "&&") else (None, s)
                if skip is not None:
                    out.append(skip)
                if run is not None:
                    out.extend(self.exec(pipeline, run))
            states = self.settle(out, pipeline.line)
            prev = pipeline
        return states

    def exec_pipeline(self, node, st: State) -> list:
        # bash runs each command of a pipeline in a subshell: launches count, assignments vanish
        if len(node.commands) == 1:
            outs = self.exec(node.commands[0], st)
        else:
            for cmd in node.commands[:-1]:
                self.subshell(cmd, st.copy())
            outs = [self.subshell(node.commands[-1], st)]
        if node.negate:
            for s in outs:
                s.status = None if s.status is None else not s.status
        return outs

    def exec_case(self, node, st: State) -> list:
        self.bind(st)
        mark = len(st.notes)
        subject = self.join(self.expand(node.subject, "", split=False, keep_empty=True), "")
        del st.notes[mark:]
        key = ("case", field_signature(subject)) if self.constant(subject) else None
        out: list = []
        pending = [st]
        falling: list = []  # paths that run the next body without testing (;&)
        label = f"the case on line {node.line} ({self.source_text(node.start, 'in')})"
        for idx, (patterns, body, terminator, line) in enumerate(node.items):
            waiting: list = []
            run: list = list(falling)
            for s in pending:
                self.bind(s)
                hit = self.match_any(subject, patterns)
                if hit is None:
                    s.key = None if key is None else key + (idx,)
                    pattern = self.source_text(patterns[0].start).split(")")[0] + ")"
                    s, other = self.fork(s, ("case", node.start, idx), label, f"matches {pattern}", f"does not match {pattern}")
                else:
                    s, other = (s, None) if hit else (None, s)
                if s is not None:
                    run.append(s)
                if other is not None:
                    waiting.append(other)
            falling = []
            for s in run:
                for r in self.exec(body, s):
                    if r.flow is not None:
                        out.append(r)
                    elif terminator == ";&":
                        falling.append(r)
                    elif terminator == ";;&":
                        waiting.append(r)
                    else:
                        out.append(r)
            pending = self.settle(waiting, line)
        for s in pending + falling:
            s.status = True
            out.append(s)
        return self.settle(out, node.line)

    def match_any(self, subject: Field, patterns: list) -> Optional[bool]:
        unknown = False
        for p in patterns:
            hit = self.match(subject, p)
            if hit:
                return True
            unknown = unknown or hit is None
        return None if unknown else False

    def match(self, subject: Field, pattern: Word) -> Optional[bool]:
        """Whether a word matches a bash pattern word (``case``, ``[[ x == pat ]]``)."""
        regex = self.pattern_regex(pattern)
        if regex is None:
            return None
        text = subject.text
        if text is None:
            return True if regex == ".*" else None
        return re.fullmatch(regex, text, re.S) is not None

    def pattern_regex(self, pattern: Word) -> Optional[str]:
        from overlap_cli.config.shell_cond import glob_regex

        pieces: list = []
        for part in pattern.parts:
            if part[0] == "lit":
                quoted = len(part) > 3
                for ch, off in zip(part[1], part[2]):
                    escaped = quoted or (off > 0 and self.text[off - 1] == "\\")
                    pieces.append((ch, not escaped))
                continue
            mark = len(self.unknowns)
            fields = self.expand(Word([part], part[2], part[3]), "", split=False, keep_empty=True)
            del self.unknowns[mark:]
            value = self.join(fields, "")
            if value.text is None:
                return None
            quoted = part[4] if len(part) > 4 else False
            pieces.extend((ch, not quoted) for ch in value.text)
        return glob_regex(pieces)

    @staticmethod
    def constant(f: Field) -> bool:
        """Every unknown stretch of the word is a constant (its value is decided once for a path)."""
        return all(c.__class__ is str or c.constant for c in f.chars)

    # --- loops ---------------------------------------------------------------------------------------

    def exec_for(self, node, st: State) -> list:
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
    def after_iteration(r: State, again: list, done: list) -> None:
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

    def loop_body(self, node, body, st: State, name: Optional[str] = None) -> list:
        """One iteration from ``st`` in a loop that may run any number of times (``name``: its variable,
        not known)."""
        if name is not None:
            self.bind(st)
            self.set_unknown(name, node.start, f"${name} is the variable of the for loop on line {node.line}")
        return self.exec(body, st)

    def exec_c_for(self, node, st: State) -> list:
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

    def c_for_iteration(self, node, st: State) -> list:
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

    def exec_loop(self, node, st: State) -> list:
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

    def while_iteration(self, node, st: State) -> list:
        out = []
        for c in self.exec(node.condition, st):
            for r in self.exec(node.body, c):
                if r.flow is not None and r.flow[0] in ("continue", "break"):
                    r.flow = None
                out.append(r)
        return out

    def widen(self, node, st: State, iteration) -> list:
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

    # --- simple commands -----------------------------------------------------------------------------

    def exec_arith(self, expr: str, start: int, st: State) -> State:
        from overlap_cli.config.shell_arith import evaluate

        self.bind(st)
        value, assigned, ok = evaluate(expr, self.arith_lookup)
        line = self.pos(start)[0]
        for name, v in assigned.items():
            if v is None:
                self.set_unknown(name, start, f"${name} is computed from values not known statically (line {line})")
            else:
                self.set_integer(name, v, line)
        st.status = None if value is None and ok else (value != 0 if ok else False)
        return st

    def set_integer(self, name: str, value: int, line: int) -> None:
        f = Field(variable_origin(name, line))
        f.chars, f.offsets = list(str(value)), [None] * len(str(value))
        f.whole = False
        old = self.vars.get(name)
        var = Var(name, [f], False, line)
        if old is not None and old.exported:
            var.exported, var.export_line, var.export_col = True, old.export_line, old.export_col
        self.vars[name] = var

    def expand_command(self, words: list) -> tuple:
        """(fields, the written word of each field, the sentences each written word added) of a simple
        command's words."""
        fields: list = []
        word_of: list = []
        added: dict = {}
        for w in words:
            if isinstance(w, tuple):  # declare X=( ... ): not a word of the command line
                continue
            mark = len(self.unknowns)
            for f in self.expand(w, "launch line", split=True):
                fields.append(f)
                word_of.append(w)
            added[id(w)] = self.unknowns[mark:]
        return fields, word_of, added

    def exec_simple(self, node, st: State) -> list:
        self.bind(st)
        words = node.words
        if not words:
            for p in node.prefix:
                self.assign(p)
            st.status = True
            return [st]
        mark = len(st.notes)
        fields, word_of, added = self.expand_command(words)
        found = self.find_program(fields) if fields else None
        if found is not None:
            if st.launched:
                self.extra_launches.append(node.line)
            else:
                st.launched = True
                self.records.append((node, st.copy(), fields, word_of, found, added))
            st.status = None
            if (fields[0].text or "").rsplit("/", 1)[-1] == "exec":
                st.done = True
            return [st]
        if not (fields and fields[0].text == ":"):  # `: ${X:=default}` is there for what its words assign
            del st.notes[mark:]
        if not fields:
            for p in node.prefix:  # nothing to run: the assignments stay (bash)
                self.assign(p)
            st.status = True
            return [st]
        name = fields[0].text
        if name is None:
            st.status = None
            return [st]
        return self.builtin(name, node, words, fields, st)

    def builtin(self, name: str, node, words: list, fields: list, st: State) -> list:
        st.status = None
        if name in ("export", "declare", "typeset", "local", "readonly"):
            self.declare(name, words[1:], st)
            st.status = True
        elif name == "unset":
            for f in fields[1:]:
                t = f.text
                if t and NAME.fullmatch(t):
                    var = Var(t, [], False, node.line)
                    var.unset = True
                    self.remember_local(t, st)
                    st.vars[t] = var
            st.status = True
        elif name in ("source", "."):
            # the file is not read: every variable may be what it sets, from here on
            st.notes.append(f"line {node.line}: {name} runs another file; what it sets is not known statically")
            why = f"may be set by the file sourced on line {node.line}"
            for var_name, var in list(st.vars.items()):
                self.set_unknown(var_name, node.start, f"${var_name} {why}")
                if var.exported:
                    new = st.vars[var_name]
                    new.exported, new.export_line, new.export_col = True, var.export_line, var.export_col
            st.sourced = node.line
            st.memo = {}
        elif name == "read":
            for f in fields[1:]:
                t = f.text
                if t and NAME.fullmatch(t):
                    self.set_unknown(t, node.start, f"${t} is read at run time")
        elif name == "exit" or (name == "exec" and len(fields) > 1):
            st.done = True
        elif name == "return":
            if self.depth:
                st.flow = ("return",)
            else:
                st.done = True
        elif name in ("break", "continue"):
            n = fields[1].text if len(fields) > 1 else "1"
            st.flow = (name, int(n) if n and n.isdigit() and int(n) > 0 else 1)
        elif name in ("[", "test"):
            self.exec_test(name, fields[1:], st)
        elif name == "let":
            for f in fields[1:]:
                if f.text is None:
                    st.status = None
                    break
                self.exec_arith(f.text, node.start, st)
        elif name == "false":
            st.status = False
        elif name == "shift":
            n = fields[1].text if len(fields) > 1 else "1"
            if st.positional is not None and n and n.isdigit():
                st.positional = st.positional[int(n):]
            st.status = True
        elif name in st.funcs:
            return self.call(st.funcs[name], fields, st)
        elif name in _SUCCEED:
            st.status = None if name in _SUCCEED_MAYBE else True
        return [st]

    def call(self, func, fields: list, st: State) -> list:
        if self.depth >= CALL_DEPTH:
            st.status = None
            return [st]
        saved = st.positional
        st.positional = list(fields[1:])
        st.frames.append({})
        self.depth += 1
        try:
            outs = self.exec(func.body, st)
        finally:
            self.depth -= 1
        for s in outs:
            s.positional = saved
            frame = s.frames.pop() if s.frames else {}
            for name, old in frame.items():
                if old is None:
                    s.vars.pop(name, None)
                else:
                    s.vars[name] = old
            if s.flow is not None and s.flow[0] == "return":
                s.flow = None
        return outs

    def remember_local(self, name: str, st: State) -> None:
        """Inside a function, ``local NAME``: the value before it comes back when the function returns."""
        if st.frames and name not in st.frames[-1]:
            st.frames[-1][name] = st.vars.get(name)

    def exec_test(self, name: str, args: list, st: State) -> None:
        from overlap_cli.config.shell_cond import Operand, evaluate_test

        if name == "[":
            if not args or args[-1].text != "]":
                st.status = False  # bash: [: missing `]' (status 2)
                return
            args = args[:-1]
        if any(f.multi for f in args):
            st.status = None  # an unquoted unknown: any number of words
            return
        operands = [Operand(f.text, any(c.__class__ is str for c in f.chars)) for f in args]
        st.status = evaluate_test(operands, self.is_set)
        if st.status is None and all(self.constant(f) for f in args):
            st.key = ("test", tuple(field_signature(f) for f in args))

    def exec_double_test(self, node, st: State) -> State:
        from overlap_cli.config.shell_cond import Operand, evaluate_double

        self.bind(st)
        mark = len(st.notes)
        operands = []
        fields = []
        words = node.words
        for k, w in enumerate(words):
            f = self.join(self.expand(w, "", split=False, keep_empty=True), "")
            fields.append(f)
            pattern = None
            prev = words[k - 1].literal_text() if k else None
            if prev in ("==", "=", "!=") and k >= 2:
                pattern = self.pattern_regex(w)
                if pattern is None:
                    f = Field("")
                    f.hole("pattern")
            operands.append(Operand(f.text, any(c.__class__ is str for c in f.chars), pattern))
        del st.notes[mark:]
        st.status = evaluate_double(operands, self.is_set, self.arith_value)
        if st.status is None and all(self.constant(f) for f in fields):
            st.key = ("[[", tuple(field_signature(f) for f in fields))
        return st

    def arith_value(self, text: Optional[str]) -> Optional[int]:
        from overlap_cli.config.shell_arith import evaluate

        if text is None:
            return None
        value, _, _ = evaluate(text, self.arith_lookup)
        return value

    def is_set(self, name: str) -> Optional[bool]:
        var = self.lookup(name)
        if var is None:
            return None
        return not var.unset

    # --- assignments ---------------------------------------------------------------------------------

    def assignment(self, w) -> Optional[tuple]:
        if not isinstance(w, Word) or not w.parts or w.parts[0][0] != "lit" or len(w.parts[0]) > 3:
            return None
        m = _ASSIGN.match(w.parts[0][1])
        if not m or m.group(2):
            return None
        return m.group(1), m.group(3), m.end()

    def array_start(self, word: Word) -> Optional[tuple]:
        text = word.literal_text()
        if text is None:
            return None
        m = _ASSIGN.fullmatch(text)
        return (m.group(1), m.group(3)) if m and not m.group(2) else None

    def assign(self, item, exported: bool = False, export_word=None) -> Optional[Var]:
        line = self.pos(item[1].start if isinstance(item, tuple) else item.start)[0]
        if isinstance(item, tuple):  # ("array", word, elements)
            _, word, elements = item
            name, op = self.array_start(word)
            origin = variable_origin(name, line)
            fields: list = []
            for el in elements:
                fields.extend(self.expand(el, origin, split=True))
            old = self.vars.get(name)
            if op == "+=" and old is not None and not old.unset:
                fields = list(old.fields) + fields
            var = Var(name, fields, True, line)
            var.span = self.span(word.start, self.matching(word.end, "(", ")"))
            if op == "+=" and old is not None and old.note and not old.array:
                var.note = old.note
        else:
            name, op, cut = self.assignment(item)
            origin = variable_origin(name, line)
            first = item.parts[0]
            value_parts = ([("lit", first[1][cut:], first[2][cut:])] if len(first[1]) > cut else []) + item.parts[1:]
            value_word = Word(value_parts, item.start + cut, item.end)
            value = self.join(self.expand(value_word, origin, split=False, keep_empty=True), origin)
            old = self.vars.get(name)
            array = False
            fields = [value]
            if op == "+=" and old is not None and old.fields and not old.unset:
                if old.array:  # ARR+=x appends to element 0
                    fields = [self.join([old.fields[0], value], origin)] + list(old.fields[1:])
                    array = True
                else:
                    fields = [self.join([old.fields[0], value], origin)]
            var = Var(name, fields, array, line)
            var.span = self.span(item.start, item.end)
            if op == "+=" and old is not None and old.note:
                var.note = old.note
        if old is not None and old.exported:
            var.exported, var.export_line, var.export_col = True, old.export_line, old.export_col
        if exported:
            var.exported = True
            var.export_line, var.export_col = self.pos(export_word.start)
        self.vars[name] = var
        return var

    def declare(self, builtin: str, words: list, st: State) -> None:
        exporting = builtin == "export"
        local = builtin == "local" or (builtin in ("declare", "typeset") and bool(st.frames))
        for w in words:
            if isinstance(w, tuple):
                if local:
                    self.remember_local(self.array_start(w[1])[0], st)
                self.assign(w, exported=exporting, export_word=w[1])
                continue
            t = w.literal_text()
            if t is not None and t.startswith("-"):
                if "x" in t and builtin != "export":
                    exporting = True
                if builtin == "export" and "n" in t:
                    exporting = False
                if "g" in t:
                    local = False
                continue
            m = self.assignment(w)
            if m:
                if local:
                    self.remember_local(m[0], st)
                self.assign(w, exported=exporting, export_word=w)
            elif t and NAME.fullmatch(t):
                if local and st.frames:  # declared in the function, empty
                    self.remember_local(t, st)
                    line = self.pos(w.start)[0]
                    self.vars[t] = Var(t, [Field(variable_origin(t, line))], False, line)
                if exporting:
                    var = self.vars.get(t)
                    if var is None:
                        continue  # export NAME of a variable from the caller's environment: it stays what it was
                    var = var.copy()
                    var.exported = True
                    var.export_line, var.export_col = self.pos(w.start)
                    self.vars[t] = var


def _common_ends(vars_: list, origin: str) -> list:
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


def read_launch_script(path: str, text: str, take_defaults: bool = True) -> LaunchText:
    """The launch of a script. ``take_defaults`` False: a ``${VAR:-default}`` of a variable the script
    never sets is not known (instead of its default)."""
    from overlap_cli.config.shell_launch import launch_text

    reader = Reader(path, text)
    reader.take_defaults = take_defaults
    reader.run_script()
    if not reader.records:
        raise InputError(InputProblem(
            path, "no Megatron-LM launch line found (torchrun, python -m torch.distributed.run, or python pretrain_*.py)"))
    return launch_text(reader)


def has_launch_line(text: str) -> bool:
    """Whether a script has a launch line (folder discovery: other shell scripts are skipped quietly)."""
    if not re.search(r"torchrun|torch\.distributed\.(?:run|launch)|pretrain_\w*\.py", text):
        return False
    try:
        reader = Reader("<sniff>", text)
        reader.run_script()
    except InputError:
        return True  # the check reports what is wrong with it
    return bool(reader.records)
