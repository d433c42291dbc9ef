"""Simple commands as ``config.shell`` runs them, statically, on one path's ``State``.

``exec_simple`` expands a command's words and decides what it is: the launch line itself
(``launchers.find_program`` on the expanded words, recorded in ``rd.records``), ``bash -c STRING`` or a
job script in a here-document (``shell_inner``), assignments alone (``shell_assign``), or a command by name
(``builtin``): ``export`` / ``declare`` / ``local`` / ``readonly`` / ``unset``, ``source`` (``shell_source``:
a file at a path known statically is read in the same shell; any other: any variable may be what it sets),
``read``, ``exit`` / ``return`` / ``break`` / ``continue`` / ``shift``, ``test`` / ``[ ]``, ``let``, and calls of
the script's functions (``call``: their arguments as ``$1`` ..., ``local`` undone on return). ``[[ ]]``
(``exec_double_test``) and ``(( ))`` (``exec_arith``) are commands of their own in the tree. Any other
command is run by nobody: its exit status is not known, unless it is one that always succeeds (``echo``).
"""

from __future__ import annotations

TYPE_CHECKING = False  # the typing module costs ~2.5 ms of start-up; annotations here are strings (PEP 563)
if TYPE_CHECKING:
    from typing import Optional

    from overlap_cli.config.shell_values import State

import re

from overlap_cli.config import shell_assign as assigns
from overlap_cli.config.shell_expand import (
    arith_lookup, constant, expand, expand_joined, lookup, pattern_glob, set_unknown,
)
from overlap_cli.config.shell_lex import NAME, Word
from overlap_cli.config.shell_values import Field, field_signature

CALL_DEPTH = 16
# Builtins whose status is 0 whatever they are given (as scripts use them); cd and mkdir fail when the
# directory is not there.
_SUCCEED = frozenset(("true", ":", "echo", "printf", "sleep", "set", "shopt", "trap", "ulimit", "umask", "alias",
                      "wait", "hash", "type", "shift", "cd", "pushd", "popd", "mkdir", "export", "declare", "typeset",
                      "local", "readonly", "unset"))
_SUCCEED_MAYBE = frozenset(("cd", "pushd", "popd", "mkdir"))


def expand_command(rd, st: State, words: list) -> tuple:
    """(fields, the written word of each field, the sentences each written word added) of a simple
    command's words."""
    fields: list = []
    word_of: list = []
    added: dict = {}
    for w in words:
        if isinstance(w, tuple):  # declare X=( ... ): not a word of the command line
            continue
        mark = len(st.notes)
        for f in expand(rd, st, w, "launch line", split=True):
            fields.append(f)
            word_of.append(w)
        added[id(w)] = st.notes[mark:]
    return fields, word_of, added


# An expansion that changes the shell: ``${X:=v}`` assigns, ``${X:?msg}`` exits, ``$(( i++ ))`` assigns.
_CHANGES_SHELL = re.compile(r"\$\{[^}]*[=?]|\$\(\(|\$\[")


def _inert_echo(rd, node) -> bool:
    """``echo WORDS`` with nothing in its words that assigns or exits: bash prints them and goes on (status
    0), so they need no expanding (a script that logs its settings does it on every path)."""
    if node.prefix or node.heredocs or not isinstance(node.words[0], Word) or node.words[0].literal_text() != "echo":
        return False
    return _CHANGES_SHELL.search(rd.text, node.start, node.end) is None


def exec_simple(rd, node, st: State) -> list:
    words = node.words
    if not words:
        for p in node.prefix:
            assigns.assign(rd, st, p)
        st.status = True
        return [st]
    if _inert_echo(rd, node):
        st.status = True
        return [st]
    mark = len(st.notes)
    fields, word_of, added = expand_command(rd, st, words)
    found = rd.find_program(fields) if fields else None
    if found is not None:
        if st.launched:
            rd.extra_launches.append(node.line)
        else:
            st.launched = True
            rd.records.append((node, st.copy(), fields, word_of, found, added))
        st.status = None
        if (fields[0].text or "").rsplit("/", 1)[-1] == "exec":
            st.done = True
        return [st]
    if fields and not st.launched:
        from overlap_cli.config import shell_inner

        if fields[0].text == "eval" and shell_inner.read_eval(rd, node, st, fields):
            st.status = None
            return [st]
        at = rd.find_shell_c(fields)
        if at is not None and shell_inner.read_shell_c(rd, node, st, fields, at):
            st.status = None
            return [st]
        if node.heredocs and shell_inner.read_heredoc(rd, node, st, fields):
            st.status = None
            return [st]
    if not (fields and fields[0].text == ":"):  # `: ${X:=default}` is there for what its words assign
        del st.notes[mark:]
    if not fields:
        for p in node.prefix:  # nothing to run: the assignments stay (bash)
            assigns.assign(rd, st, p)
        st.status = True
        return [st]
    name = fields[0].text
    if name is None:
        st.status = None
        return [st]
    return builtin(rd, name, node, fields, st)


def builtin(rd, name: str, node, fields: list, st: State) -> list:
    """A command by its name: a builtin bash runs in the script's shell, a function, or another program."""
    before, st.status = st.status, None
    if name in ("export", "declare", "typeset", "local", "readonly"):
        assigns.declare(rd, st, name, node.words[1:])
        st.status = True
    elif name == "unset":
        assigns.unset(st, fields[1:], node.line)
        st.status = True
    elif name in ("source", "."):
        return source(rd, name, node, fields, st)
    elif name == "read" and assigns.read_heredoc_into(rd, st, node, fields):
        st.status = None  # read -d '' reaches the end of its input without a NUL: status 1 (bash)
    elif name == "read":
        for f in fields[1:]:
            t = f.text
            if t and NAME.fullmatch(t):
                set_unknown(rd, st, t, node.start, f"${t} is read at run time")
    elif name == "exit" or (name == "exec" and len(fields) > 1):
        st.done = True
    elif name == "return":
        if rd.depth:
            st.flow = ("return",)
            st.status = return_status(fields, before)
        else:
            st.done = True
    elif name in ("break", "continue"):
        n = fields[1].text if len(fields) > 1 else "1"
        st.flow = (name, int(n) if n and n.isdigit() and int(n) > 0 else 1)
    elif name in ("[", "test"):
        exec_test(name, fields[1:], st)
    elif name == "let":
        for f in fields[1:]:
            if f.text is None:
                st.status = None
                break
            exec_arith(rd, f.text, node.start, st)
    elif name == "false":
        st.status = False
    elif name == "shift":
        n = fields[1].text if len(fields) > 1 else "1"
        if st.positional is not None and n and n.isdigit():
            st.positional = st.positional[int(n):]
        st.status = True
    elif name in st.funcs:
        return call(rd, st.funcs[name], fields, st)
    elif name in _SUCCEED:
        st.status = None if name in _SUCCEED_MAYBE else True
    return [st]


def source(rd, name: str, node, fields: list, st: State) -> list:
    """``source FILE`` / ``. FILE``: the file read in this shell when its path is known (``shell_source``);
    else every variable may be what it sets, from here on."""
    from overlap_cli.config.shell_source import read_sourced

    outs = read_sourced(rd, node, fields, st)
    if outs is not None:
        return outs
    st.notes.append(f"line {node.line}: {name} runs another file; what it sets is not known statically")
    why = f"may be set by the file sourced on line {node.line}"
    for var_name, var in list(st.vars.items()):
        set_unknown(rd, st, var_name, node.start, f"${var_name} {why}")
        if var.exported:
            new = st.vars[var_name]
            new.exported, new.export_line, new.export_col = True, var.export_line, var.export_col
    st.sourced = why
    st.memo = {}
    return [st]


def return_status(fields: list, before) -> Optional[bool]:
    """The status ``return [N]`` gives the call: N's (0 succeeds, any other fails, taken modulo 256), or
    without N the last command's (bash's builtin return). Known, a caller's ``if ! f; then exit`` ends
    the path that failed instead of carrying it on as a path that may have failed."""
    if len(fields) < 2:
        return before
    n = fields[1].text
    if n is None or not n.lstrip("-").isdigit():
        return None
    return int(n) % 256 == 0


def call(rd, func, fields: list, st: State) -> list:
    """A function of the script called with ``fields[1:]`` as its arguments."""
    if rd.depth >= CALL_DEPTH:
        st.status = None
        return [st]
    saved = st.positional
    st.positional = list(fields[1:])
    st.frames.append({})
    rd.depth += 1
    try:
        outs = rd.exec(func.body, st)
    finally:
        rd.depth -= 1
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


# --- conditions and arithmetic --------------------------------------------------------------------------

def exec_arith(rd, expr: str, start: int, st: State) -> State:
    """``(( expr ))`` (and each ``let`` word): its assignments, and a status from its value."""
    from overlap_cli.config.shell_arith import evaluate

    value, assigned, ok = evaluate(expr, lambda name: arith_lookup(st, name))
    line = rd.pos(start)[0]
    for name, v in assigned.items():
        if v is None:
            set_unknown(rd, st, name, start, f"${name} is computed from values not known statically (line {line})")
        else:
            assigns.set_integer(st, name, v, line)
    st.status = None if value is None and ok else (value != 0 if ok else False)
    return st


def exec_arith_node(rd, node, st: State) -> list:
    return [exec_arith(rd, node.expr, node.start, st)]


def exec_test(name: str, args: list, st: State) -> None:
    """``test ...`` / ``[ ... ]`` on expanded words (config.shell_cond)."""
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
    st.status = evaluate_test(operands, lambda name: is_set(st, name))
    if st.status is None and all(constant(f) for f in args):
        st.key = ("test", tuple(field_signature(f) for f in args))


def exec_double_test(rd, node, st: State) -> list:
    """``[[ ... ]]``: its words expanded without splitting, the right of ``==`` / ``!=`` a pattern."""
    from overlap_cli.config.shell_cond import Operand, evaluate_double

    mark = len(st.notes)
    operands = []
    fields = []
    words = node.words
    for k, w in enumerate(words):
        f = expand_joined(rd, st, w, "")
        fields.append(f)
        pattern = None
        prev = words[k - 1].literal_text() if k else None
        if prev in ("==", "=", "!=") and k >= 2:
            pattern = pattern_glob(rd, st, w)
            if pattern is None:
                f = Field("")
                f.hole("pattern")
        operands.append(Operand(f.text, any(c.__class__ is str for c in f.chars), pattern))
    del st.notes[mark:]
    st.status = evaluate_double(operands, lambda name: is_set(st, name), lambda text: arith_value(st, text))
    if st.status is None and all(constant(f) for f in fields):
        st.key = ("[[", tuple(field_signature(f) for f in fields))
    return [st]


def arith_value(st: State, text: Optional[str]) -> Optional[int]:
    from overlap_cli.config.shell_arith import evaluate

    if text is None:
        return None
    value, _, _ = evaluate(text, lambda name: arith_lookup(st, name))
    return value


def is_set(st: State, name: str) -> Optional[bool]:
    var = lookup(st, name)
    if var is None:
        return None
    return not var.unset
