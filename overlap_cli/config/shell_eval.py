"""The evaluator: runs the command tree (``shell_tree``, built by ``shell_parse``) as bash would, over paths.

``Reader`` is one reading of one text (the script, a sourced file, a ``bash -c`` string): it knows the
text (``shell_lex.Lexer``: positions, ``read_default``), the options of the reading and what the reading
found (``records``: each path's launch; ``forks``: the decisions; ``inner``: launches in ``bash -c``
strings). ``exec(node, st)`` runs one node on one path (``shell_values.State``) and returns the paths after
it. Each kind of node is handled by one function, named in ``HANDLERS``:

    Seq, Group, If, AndOr, Pipeline, Case     here (control flow)
    Simple (a command), Test ([[ ]]), Arith   shell_commands (assignments: shell_assign; source:
                                              shell_source; bash -c / sbatch <<EOF: shell_inner)
    For, Loop (while / until)                 shell_loops
    Function (a definition)                   here: stored on the path

Expansion of words is ``shell_expand``'s; splitting and joining paths is ``shell_paths``'s.
"""

from __future__ import annotations

import re

TYPE_CHECKING = False  # the typing module costs ~2.5 ms of start-up; annotations here are strings (PEP 563)
if TYPE_CHECKING:
    from typing import Optional

from overlap_cli.config import shell_tree as tree
from overlap_cli.config.launchers import LaunchFinder
from overlap_cli.config import shell_budget
from overlap_cli.config.shell_budget import OverBudget, abandon, next_allowance, skim, skimming
from overlap_cli.config.shell_commands import exec_arith_node, exec_double_test, exec_simple
from overlap_cli.config.shell_expand import constant, expand_joined, match_any
from overlap_cli.config.shell_lex import Lexer
from overlap_cli.config.shell_loops import exec_for, exec_loop
from overlap_cli.config.shell_parse import parse_script
from overlap_cli.config.shell_paths import MAX_PATHS, fork, settle
from overlap_cli.config.shell_values import State, field_signature

_FINDER = LaunchFinder()


class Reader(Lexer):
    """One reading of a text: its options, what it found, and ``exec``."""

    # launchers' functions take the reader for these (launch-line recognition has no state of its own)
    static_text = staticmethod(LaunchFinder.static_text)
    known_prefix = staticmethod(LaunchFinder.known_prefix)
    script_name = staticmethod(LaunchFinder.script_name)
    find_program = _FINDER.find_program
    find_shell_c = _FINDER.find_shell_c

    def __init__(self, path: str, text: str):
        super().__init__(path, text)
        # ${VAR:-default} of a variable the script never sets: the default (with a sentence), or, False, not
        # known (the second reading that finds which printed values the caller's environment can change)
        self.take_defaults = True
        self.defaults_taken = 0
        self.empty_placeholders = False  # NAME="" read as a value to fill in (a second reading of a template)
        self.placeholders: list = []  # the sentences of the placeholders met (shell_assign.placeholder)
        self.records: list = []  # (Simple node, State, fields, word_of, kind, index) at each launch
        self.forks: dict = {}  # fork id -> its description
        self.extra_launches: list = []  # lines of further launches
        self.merged_note: Optional[str] = None
        self.depth = 0
        self.steps = 0
        # the step budget (shell_budget): exec past ``limit`` gives the top-level command in progress up
        self.allowance = self.limit = shell_budget.STEP_LIMIT
        self.program = None  # the script's own top-level list (a sourced file's or a string's is not)
        self.given_up: list = []  # the lines of the top-level commands given up
        # ``bash -c STRING`` commands whose string holds a launch: (command, path state, words, index of the
        # string, the reader of the string) — the launch when the script runs none itself (shell_inner)
        self.inner: list = []
        self.file = path  # the file whose commands run now (a sourced file's, inside it): ${BASH_SOURCE[0]}
        self.sourcing: tuple = ()  # the real paths of the files being sourced, outermost first
        self.sourced_files: list = []  # sentences: the files read where the script sources them
        # [True] once the reading looked for a file by the script's path (``source``): the reading then
        # depends on where the script is, not only on its text (config.shell's cache); shared with children
        self.path_read: list = [False]

    def span(self, start: int, end: int) -> Optional[tuple]:
        """(line, first column, end column) of text a fix may edit in place, when it is on one line."""
        l1, c1 = self.pos(start)
        l2, c2 = self.pos(end)
        return (l1, c1, c2) if l1 == l2 else None

    def child(self, text: str, place) -> "Reader":
        """The reader of another text run from this one (a sourced file, a ``bash -c`` string): ``place``
        maps its offsets to (line, column) in this file; its words are not text a fix could edit in place."""
        r = Reader(self.path, text)
        r.pos = place
        r.span = _nowhere
        r.take_defaults, r.empty_placeholders = self.take_defaults, self.empty_placeholders
        r.depth = self.depth + 1
        r.path_read = self.path_read
        r.steps, r.limit = self.steps, self.limit  # one budget: the caller takes the steps back (take_steps)
        return r

    def take_steps(self, child: "Reader") -> None:
        self.steps = child.steps

    def run_script(self, start: Optional[State] = None) -> None:
        try:
            program, _parser = parse_script(self.path, self.text)
            self.program = program
            self.exec(program, start if start is not None else State())
        except RecursionError:
            raise self.fail("commands nested too deeply to read") from None

    def exec(self, node, st: State) -> list:
        """The states after ``node`` runs in ``st`` (``st`` itself may be one of them, changed)."""
        self.steps += 1
        if self.steps > self.limit:
            raise OverBudget
        st.key = None
        return HANDLERS[node.__class__](self, node, st)

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


def _nowhere(start: int, end: int) -> None:
    return None


# --- control flow ---------------------------------------------------------------------------------------

def exec_seq(rd: Reader, node, st: State) -> list:
    """``a; b; c &``: each item on every path the one before left running. At the script's top level, an
    item past the step budget is given up (shell_budget)."""
    if node is rd.program:
        return _exec_top(rd, node, st)
    states = [st]
    for item, background in node.items:
        states = settle(rd, _exec_item(rd, item, background, states), item.line)
    return states


def _exec_item(rd: Reader, item, background: bool, states: list) -> list:
    out: list = []
    for s in states:
        if s.flow is not None:
            out.append(s)
        elif background:  # a subshell of its own: its launches count, its assignments vanish
            keep = subshell(rd, item, s)
            keep.status = True
            out.append(keep)
        else:
            out.extend(rd.exec(item, s))
    return out


def _exec_top(rd: Reader, node, st: State) -> list:
    states = [st]
    for k, (item, background) in enumerate(node.items):
        if skimming(rd):
            end = node.items[k + 1][0].start if k + 1 < len(node.items) else len(rd.text)
            states = settle(rd, [r for s in states if s.flow is None for r in skim(rd, item, end, s)]
                            + [s for s in states if s.flow is not None], item.line)
            continue
        entering = [(s, s.positional, len(s.frames)) for s in states if s.flow is None]
        try:
            out = _exec_item(rd, item, background, states)
        except OverBudget:
            out = [s for s in states if all(s is not e[0] for e in entering)]
            if entering:
                out.append(abandon(rd, item, entering))
            next_allowance(rd)
        states = settle(rd, out, item.line)
    return states


def subshell(rd: Reader, node, st: State) -> State:
    """Run ``node`` in a copy of ``st``: ``st`` comes back unchanged, with the subshell's status."""
    outs = rd.exec(node, st.copy())
    statuses = {s.status for s in outs if not s.done}
    st.status = statuses.pop() if len(statuses) == 1 and not any(s.done for s in outs) else None
    st.key = None
    return st


def exec_group(rd: Reader, node, st: State) -> list:
    """``{ ...; }`` runs in this shell, ``( ... )`` in a subshell."""
    if node.subshell:
        return [subshell(rd, node.body, st)]
    return rd.exec(node.body, st)


def define_function(rd: Reader, node, st: State) -> list:
    st.funcs[node.name] = node
    st.status = True
    return [st]


def exec_if(rd: Reader, node, st: State) -> list:
    out: list = []
    pending = [st]
    for idx, (condition, body, line) in enumerate(node.clauses):
        waiting: list = []
        for s in pending:
            for c in rd.exec(condition, s):
                if c.flow is not None:
                    out.append(c)
                    continue
                if c.status is None:
                    where = "if" if idx == 0 else "elif"
                    label = f"the {where} on line {line} ({rd.source_text(condition.start, 'then')})"
                    c, other = fork(rd, c, ("if", node.start, idx), label, "holds", "does not hold")
                else:
                    c, other = (c, None) if c.status else (None, c)
                if c is not None:
                    out.extend(rd.exec(body, c))
                if other is not None:
                    waiting.append(other)
        pending = settle(rd, waiting, line)
    for s in pending:
        if node.otherwise is not None:
            out.extend(rd.exec(node.otherwise, s))
        else:
            s.status = True
            out.append(s)
    return settle(rd, out, node.line)


def exec_and_or(rd: Reader, node, st: State) -> list:
    states = rd.exec(node.first, st)
    prev = node.first
    for op, pipeline in node.rest:
        out: list = []
        for s in states:
            if s.flow is not None:
                out.append(s)
                continue
            if s.status is None:
                label = f"whether `{rd.source_text(prev.start, re.escape(op))}` on line {prev.line} succeeds"
                s, other = fork(rd, s, ("andor", pipeline.start), label, "succeeds", "fails")
                run, skip = (s, other) if op == "&&" else (other, s)
            else:
                run, skip = (s, None) if s.status == (op == "&&") else (None, s)
            if skip is not None:
                out.append(skip)
            if run is not None:
                out.extend(rd.exec(pipeline, run))
        states = settle(rd, out, pipeline.line)
        prev = pipeline
    return states


def exec_pipeline(rd: Reader, node, st: State) -> list:
    # bash runs each command of a pipeline in a subshell: launches count, assignments vanish
    if len(node.commands) == 1:
        outs = rd.exec(node.commands[0], st)
    else:
        for cmd in node.commands[:-1]:
            subshell(rd, cmd, st.copy())
        outs = [subshell(rd, node.commands[-1], st)]
    if node.negate:
        for s in outs:
            s.status = None if s.status is None else not s.status
    return outs


def exec_case(rd: Reader, node, st: State) -> list:
    """``case WORD in PATTERN) ...;; esac`` with ``;&`` (fall through) and ``;;&`` (test the next)."""
    mark = len(st.notes)
    subject = expand_joined(rd, st, node.subject, "")
    del st.notes[mark:]
    key = ("case", field_signature(subject)) if constant(subject) else None
    out: list = []
    pending = [st]
    falling: list = []  # paths that run the next body without testing (;&)
    label = f"the case on line {node.line} ({rd.source_text(node.start, 'in')})"
    for idx, (patterns, body, terminator, line) in enumerate(node.items):
        waiting: list = []
        run: list = list(falling)
        for s in pending:
            hit = match_any(rd, s, subject, patterns)
            if hit is None:
                s.key = None if key is None else key + (idx,)
                pattern = rd.source_text(patterns[0].start).split(")")[0] + ")"
                s, other = fork(rd, s, ("case", node.start, idx), label, f"matches {pattern}", f"does not match {pattern}")
            else:
                s, other = (s, None) if hit else (None, s)
            if s is not None:
                run.append(s)
            if other is not None:
                waiting.append(other)
        falling = []
        for s in run:
            for r in rd.exec(body, s):
                if r.flow is not None:
                    out.append(r)
                elif terminator == ";&":
                    falling.append(r)
                elif terminator == ";;&":
                    waiting.append(r)
                else:
                    out.append(r)
        if len(out) > MAX_PATHS:  # 5,000 patterns on an unknown subject: merge as they come, not all at the end
            out = settle(rd, out, line)
        pending = settle(rd, waiting, line)
    for s in pending + falling:
        s.status = True
        out.append(s)
    return settle(rd, out, node.line)


HANDLERS = {
    tree.Seq: exec_seq,
    tree.Simple: exec_simple,
    tree.AndOr: exec_and_or,
    tree.Pipeline: exec_pipeline,
    tree.If: exec_if,
    tree.Case: exec_case,
    tree.For: exec_for,
    tree.Loop: exec_loop,
    tree.Group: exec_group,
    tree.Function: define_function,
    tree.Arith: exec_arith_node,
    tree.Test: exec_double_test,
}
