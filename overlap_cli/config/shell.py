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

from overlap_cli.problems import InputError, InputProblem
from overlap_cli.config.argv import LaunchText, variable_origin
from overlap_cli.config import shell_parse as tree
from overlap_cli.config.launchers import LaunchFinder
from overlap_cli.config.shell_commands import Commands
from overlap_cli.config.shell_expand import Expander, Field, Var, field_signature
from overlap_cli.config.shell_lex import Word
from overlap_cli.config.shell_loops import Loops

SHELL_SUFFIXES = (".sh", ".bash", ".slurm", ".sbatch")

MAX_PATHS = 64  # ways through the script kept apart; beyond, they are merged (the differing values unknown)
STEP_LIMIT = 200_000  # commands evaluated, over all paths


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


class Reader(Commands, Loops, Expander, LaunchFinder):
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
        try:
            program, _parser = tree.parse_script(self.path, self.text)
            self.exec(program, State())
        except RecursionError:
            raise self.fail("commands nested too deeply to read") from None

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
