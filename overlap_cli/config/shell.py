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

import os
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
        # ``bash -c STRING`` commands whose string holds a launch: (command, path state, words, index of the
        # string, the reader of the string) — the launch when the script runs none itself (read_shell_c)
        self.inner: list = []
        self.file = path  # the file whose commands run now (a sourced file's, inside it): ${BASH_SOURCE[0]}
        self.sourcing: tuple = ()  # the real paths of the files being sourced, outermost first
        self.sourced_files: list = []  # sentences: the files read where the script sources them

    # --- running the tree ---------------------------------------------------------------------------

    def run_script(self, start: Optional[State] = None) -> None:
        try:
            program, _parser = tree.parse_script(self.path, self.text)
            self.exec(program, start if start is not None else State())
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

    # --- bash -c STRING -------------------------------------------------------------------------------

    def read_shell_c(self, node, st: State, fields: list, at: int) -> bool:
        """``srun ... bash -c "$CMD"``: bash parses the string as a script of its own, in a new shell that
        sees the exported variables. The string's text (what the script built in ``$CMD``) is read the same
        way; what it does not know stays unknown (each hole is a variable nobody sets). True when the
        string runs a launch (kept in ``self.inner``)."""
        return self.read_string(node, st, fields[at], fields, at)

    def read_heredoc(self, node, st: State, fields: list) -> bool:
        """``sbatch <<EOF`` / ``bash <<EOF``: the here-document is the script the new shell runs (sbatch's
        job script: it takes the submitting shell's exported variables, ``--export=ALL``). Its expansions
        are the script's, made when the command runs (none for a quoted delimiter); the text is then read as
        a ``bash -c`` string is. True when it runs a launch."""
        base = (self.static_text(fields[0]) or "").rsplit("/", 1)[-1]
        if base not in ("sbatch", "bash", "sh") or not node.heredocs or not node.heredocs[0]:
            return False
        if any((self.static_text(f) or "").endswith((".sh", ".sbatch", ".slurm", ".bash")) for f in fields[1:]):
            return False  # a script file given: the here-document is only its input
        body = self.join(self.expand(node.heredocs[0][0], "here-document", split=False, keep_empty=True), "here-document")
        return self.read_string(node, st, body, fields, len(fields))

    def read_string(self, node, st: State, f: Field, fields: list, at: int) -> bool:
        if not f.chars or self.depth > 4:
            return False
        pieces: list = []
        offsets: list = []
        holes: dict = {}
        for ch, off in zip(f.chars, f.offsets):
            if ch.__class__ is str:
                pieces.append(ch)
                offsets.append(off)
                continue
            name = f"__overlap_unknown_{len(holes)}"
            holes[name] = ch
            ref = "${" + name + "}"
            pieces.append(ref)
            offsets.extend([off] * len(ref))
        text = "".join(pieces)
        if not _LAUNCH_WORDS.search(text):
            return False
        inner = InnerReader(self, text, offsets, node.line)
        inner.take_defaults, inner.empty_placeholders = self.take_defaults, self.empty_placeholders
        inner.depth = self.depth + 1
        start = State()
        for name, var in st.vars.items():  # the new shell's environment: what is exported
            if var.exported:
                start.vars[name] = var
        for name, hole in holes.items():
            h = Field(f"the string of bash -c (line {node.line})")
            h.hole(hole.what, hole.constant)
            start.vars[name] = Var(name, [h], False, node.line)
        try:
            program, _parser = tree.parse_script(self.path, text)
            inner.exec(program, start)
        except InputError:
            return False
        except RecursionError:
            return False
        if not inner.records and not inner.inner:
            return False
        st.launched = True
        self.inner.append((node, st.copy(), fields, at, inner))
        return True

    # --- source FILE ----------------------------------------------------------------------------------

    def read_sourced(self, node, name: str, fields: list, st: State) -> "Optional[list]":
        """``source FILE`` / ``. FILE`` whose path is known: the file's commands run in this shell, on this
        path's variables, as bash runs them. Its words are placed on the ``source`` line (a fix cannot
        edit them there). None — the file is not read, and what it may set is unknown — when the path is
        not known, the file cannot be read or parsed, it defines functions or runs the launch itself."""
        if len(fields) < 2 or len(self.sourcing) >= SOURCE_DEPTH:
            return None
        found = sourced_path(fields[1], self.path, self.file)
        if found is None:
            return None
        path, assumed = found
        real = os.path.realpath(path)
        if real in self.sourcing or real == os.path.realpath(self.path):
            return None
        try:
            if os.path.getsize(path) > SOURCE_BYTES:
                return None
            with open(path, "rb") as fh:
                data = fh.read()
        except OSError:
            return None
        if b"\0" in data:
            return None
        text = data.decode("utf-8", "replace")
        frag = SourcedReader(self, text, node.start, path)
        frag.sourcing = self.sourcing + (real,)
        start = st.copy()
        if len(fields) > 2:  # source FILE ARGS: the file's $1 ... (bash restores the caller's after it)
            start.positional = list(fields[2:])
        try:
            parser = tree.Parser(self.path, text)
            at = self.pos(node.start)
            parser.pos = lambda offset: at  # the nodes' lines too are the source line's
            outs = frag.exec(parser.parse(), start)
        except (InputError, RecursionError):
            return None
        finally:
            self.steps = frag.steps
        if frag.records or frag.inner or frag.extra_launches:
            return None  # a launch in the sourced file: its words are not placed in this one
        if any(s.funcs.get(k) is not v for s in outs for k, v in s.funcs.items() if k in st.funcs) \
                or any(k not in st.funcs for s in outs for k in s.funcs):
            return None  # a function of the sourced file would run its commands against this file's text
        self.forks.update(frag.forks)
        self.placeholders.extend(p for p in frag.placeholders if p not in self.placeholders)
        self.defaults_taken += frag.defaults_taken
        if frag.merged_note and not self.merged_note:
            self.merged_note = frag.merged_note
        shown = os.path.relpath(path, os.path.dirname(os.path.abspath(self.path)))
        sentence = (f"line {node.line}: read {shown}, which the script sources; what it sets is placed on that line"
                    + (f" ({assumed})" if assumed else ""))
        if sentence not in self.sourced_files:
            self.sourced_files.append(sentence)
        placed: dict = {}
        for s in outs:
            for var_name, var in list(s.vars.items()):
                if st.vars.get(var_name) is not var:  # set by the file: its characters are written on the source line
                    if id(var) not in placed:
                        placed[id(var)] = _written_at(var, node.start)
                    s.vars[var_name] = placed[id(var)]
            if s.flow == ("return",):  # return ends the sourced file, not the script
                s.flow = None
            s.positional = st.positional
        return outs

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

class InnerReader(Reader):
    """The reader of a ``bash -c`` string: its offsets are the string's, each mapped to where the script
    wrote that character (the string was built from the script's words), so lines are the file's."""

    def __init__(self, outer: Reader, text: str, offsets: list, line: int):
        super().__init__(outer.path, text)
        self.outer, self.offset_map, self.at_line = outer, offsets, line

    def pos(self, offset: int) -> tuple:
        if offset is not None and 0 <= offset < len(self.offset_map) and self.offset_map[offset] is not None:
            return self.outer.pos(self.offset_map[offset])
        return (self.at_line, 1)

    def span(self, start: int, end: int):
        return None  # a word of the string is not text of the file a fix could edit in place


class SourcedReader(Reader):
    """The reader of a file the script sources: it runs on the script's paths (their states), and every
    position in it is the ``source`` command's, so a value it sets names that line of the script."""

    def __init__(self, outer: Reader, text: str, at: int, path: str):
        super().__init__(outer.path, text)
        self.outer, self.at, self.file = outer, at, path
        self.take_defaults, self.empty_placeholders = outer.take_defaults, outer.empty_placeholders
        self.depth, self.steps = outer.depth + 1, outer.steps
        self.sourced_files = outer.sourced_files

    def pos(self, offset: int) -> tuple:
        return self.outer.pos(self.at)

    def span(self, start: int, end: int):
        return None  # not text of the file a fix could edit


def _written_at(var: Var, offset: int) -> Var:
    """A copy of a variable a sourced file set, each character it wrote placed at ``offset`` of the script
    (the ``source`` command): the sourced file's own offsets mean nothing in the script's text."""
    new = var.copy()
    new.span = None
    fields = []
    for f in var.fields:
        g = Field(f.origin)
        g.chars = list(f.chars)
        g.offsets = [None if o is None else offset for o in f.offsets]
        g.multi, g.whole, g.word = f.multi, False, None
        fields.append(g)
    new.fields = fields
    return new


SOURCE_DEPTH = 4  # files sourced within sourced files
SOURCE_BYTES = 1024 * 1024
# A command substitution naming the folder of a file: ``$(dirname "$0")``, ``$(dirname "$(readlink -f
# "$0")")`` or ``realpath``, ``$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)``; quotes and braces removed.
DIR_OF = re.compile(r"^(?:\$\(|`)\s*(?:cd\s+)?(?:\$\(|`)?\s*dirname\s+(?:--\s+)?(?:\$\((?:readlink\s+-f|realpath)\s+)?"
                     r"\$(0|BASH_SOURCE(?:\[0\])?)\)?\s*(?:\)|`)?(?:\s*(?:&&|;)\s*pwd(?:\s+-P)?)?"
                     r"(?:\s*>\s*/dev/null(?:\s*2>&1)?)?\s*(?:\)|`)?$")
CWD_WORDS = ("`pwd`", "$(pwd)", "$PWD", "${PWD}")


def sourced_path(f: Field, script: str, current: str) -> "Optional[tuple]":
    """(the file ``source`` reads, the assumption made or "") for a path known statically: literal, or
    a literal tail after the folder of the script (``$0``) or of the file being read (``${BASH_SOURCE[0]}``),
    or after the working directory. None for any other path."""
    from overlap_cli.config.shell_expand import Hole

    chars = f.chars
    if not chars or script.startswith("<"):
        return None
    here = os.path.dirname(os.path.abspath(script))
    cwd_note = "bash looks for it in the folder the script is run from; read from the script's own folder"
    if chars[0].__class__ is Hole:
        tail = chars[1:]
        if not tail or any(c.__class__ is Hole for c in tail) or tail[0] != "/":
            return None
        rest = "".join(tail).lstrip("/")
        what = chars[0].what
        norm = re.sub(r"\s+", " ", what.replace('"', "").replace("'", "").replace("${", "$").replace("}", "")).strip()
        m = DIR_OF.match(norm)
        if m is not None:
            folder = here if m.group(1) == "0" else os.path.dirname(os.path.abspath(current))
            return os.path.normpath(os.path.join(folder, rest)), ""
        if what in CWD_WORDS:
            return os.path.normpath(os.path.join(here, rest)), cwd_note
        return None
    text = f.text
    if text is None or not text or text.startswith("~"):
        return None
    if os.path.isabs(text):
        return os.path.normpath(text), ""
    if "/" not in text:  # bash searches $PATH first for a name without a slash
        return os.path.normpath(os.path.join(here, text)), cwd_note.replace("bash looks", "bash looks in $PATH, then")
    return os.path.normpath(os.path.join(here, text)), cwd_note


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


def read_launch_script(path: str, text: str, take_defaults: bool = True, env: Optional[dict] = None) -> LaunchText:
    """The launch of a script. ``take_defaults`` False: a ``${VAR:-default}`` of a variable the script
    never sets is not known (instead of its default). ``env``: the caller's exported variables (--set,
    --env-from-shell), which the script starts with."""
    from overlap_cli.config.shell_launch import launch_text

    reader = _read(path, text, take_defaults, env)
    if not reader.records and not reader.inner:
        raise InputError(InputProblem(
            path, "no Megatron-LM launch line found (torchrun, python -m torch.distributed.run, or python pretrain_*.py)"))
    found = _inner_launch(reader) if not reader.records else launch_text(reader)
    found.unknowns[:0] = [p for p in reader.placeholders if p not in found.unknowns]
    found.sourced = list(reader.sourced_files) + [s for r in reader.inner[:1] for s in r[4].sourced_files]
    return found


def _start(env: Optional[dict]) -> State:
    """The state a script starts in: the caller's environment, each variable exported and known."""
    st = State()
    for name, value in (env or {}).items():
        f = Field(f"the caller's environment (${name})")
        f.chars, f.offsets = list(value), [None] * len(value)
        f.whole = False
        var = Var(name, [f], False, 0)
        var.exported = True
        st.vars[name] = var
    return st


def _read(path: str, text: str, take_defaults: bool = True, env: Optional[dict] = None) -> Reader:
    """The script run as bash would; a template whose every path stops before its launch (``[ -z
    "$CONTAINER_IMAGE" ] && exit 1`` after ``CONTAINER_IMAGE=""``) is read again with its empty values as
    placeholders, so the launch it is written for is read, the values that use them unknown."""
    reader = Reader(path, text)
    reader.take_defaults = take_defaults
    reader.run_script(_start(env))
    if reader.records or reader.inner or not _LAUNCH_WORDS.search(text):
        return reader
    again = Reader(path, text)
    again.take_defaults, again.empty_placeholders = take_defaults, True
    try:
        again.run_script(_start(env))
    except InputError:
        return reader
    return again if (again.records or again.inner) else reader


_LAUNCH_WORDS = re.compile(r"torchrun|torch\.distributed\.(?:run|launch)|pretrain_\w*\.py|run_recipe\.py")


def _inner_launch(reader: Reader) -> LaunchText:
    """The launch of the first ``bash -c`` string that runs one, placed in the file: srun's task count (its
    words before the shell, and the script's ``#SBATCH``) is the world size of a launch without torchrun."""
    from overlap_cli.config.launchers import srun_world_size
    from overlap_cli.config.shell_launch import launch_text

    node, st, fields, at, inner = reader.inner[0]
    found = launch_text(inner) if inner.records else _inner_launch(inner)
    found.text = reader.text
    found.insert_at = None
    for t in found.tokens:
        t.literal, t.span = False, None
    for p in found.paths:
        for t in p.tokens:
            t.literal, t.span = False, None
    if found.world_size is None and inner.records and not any(
            "torchrun" in (fld.text or "") or "torch.distributed" in (fld.text or "") for fld in inner.records[0][2]):
        found.unknowns[:] = [u for u in found.unknowns if "srun starts the training script" not in u]
        srun_world_size(reader, found, fields, at)
    what = "the here-document it is given" if at >= len(fields) else "the string bash -c runs"
    found.unknowns.insert(0, f"line {node.line}: the launch is {what}; read as the script built it")
    before = next((f for f in fields[:at] if f.unknown and f.multi), None)
    if before is not None:
        found.unknowns.insert(1, f"line {node.line}: {before.what} before the shell is not known statically; read as "
                                 "a command that runs it")
    if len(reader.inner) > 1:
        found.unknowns.append("line(s) " + ", ".join(str(r[0].line) for r in reader.inner[1:])
                              + f": more launches; only the first (line {node.line}) is checked")
    return found


def has_launch_line(text: str) -> bool:
    """Whether a script has a launch line (folder discovery: other shell scripts are skipped quietly)."""
    if not _LAUNCH_WORDS.search(text):
        return False
    try:
        reader = _read("<sniff>", text)
    except InputError:
        return True  # the check reports what is wrong with it
    return bool(reader.records or reader.inner)


def launch_summary(text: str) -> tuple:
    """For folder discovery: ("launch", the training script's file name or None), ("none", None) when no
    path reaches a launch line, or ("error", message) when bash could not read the script."""
    if not _LAUNCH_WORDS.search(text):
        return "none", None
    try:
        reader = _read("<sniff>", text)
    except InputError as exc:
        return "error", exc.problem.message
    while not reader.records and reader.inner:  # a bash -c string or here-document, within one perhaps
        reader = reader.inner[0][4]
    recs = reader.records
    if not recs:
        return "none", None
    node, st, fields, word_of, (kind, index), _added = min(recs, key=lambda r: r[0].start)
    if kind in ("python", "script"):
        return "launch", reader.script_name(fields[index], True)
    from overlap_cli.config.argv import LaunchText
    from overlap_cli.config.launchers import torchrun_options

    scratch = LaunchText(file="<sniff>", text=text, kind="shell", script=None, launch_line=None)
    try:
        at = torchrun_options(reader, scratch, fields, index + 1)
    except InputError:
        return "launch", None
    if at is None:
        return "launch", None
    # the training script's file name, or the module ``torchrun -m`` runs (examples.inference.offline_inference)
    return "launch", reader.script_name(fields[at], False) or fields[at].text
