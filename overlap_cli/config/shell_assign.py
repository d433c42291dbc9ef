"""Assignments as bash makes them, on one path's ``State``: ``NAME=value``, ``NAME+=value``, arrays
(``NAME=( ... )``, ``NAME+=( ... )``), ``export`` / ``declare`` / ``typeset`` / ``local`` / ``readonly``
(with ``-x``, ``-n``, ``-g``), ``local`` undone when the function returns (``remember_local``), integers
computed by ``(( ))`` / ``let``, ``read -r -d '' NAME <<'EOF'``, and a template's placeholder values
(``WORKSPACE="<some dir>"``), which stand for a value the script does not know.
"""

from __future__ import annotations

import re

TYPE_CHECKING = False  # the typing module costs ~2.5 ms of start-up; annotations here are strings (PEP 563)
if TYPE_CHECKING:
    from typing import Optional

    from overlap_cli.config.shell_values import State

from overlap_cli.config.argv import variable_origin
from overlap_cli.config.shell_expand import TOO_LONG, expand, expand_joined, join, over_budget, too_long
from overlap_cli.config.shell_lex import NAME, Word
from overlap_cli.config.shell_values import Field, Var, text_field

# A template's placeholder value: ``<some dir>``, ``<PATH_OF_VOCAB_FILE>``, ``<path to docker image>``.
_PLACEHOLDER = re.compile(r"<[A-Za-z][^<>\n]*>")
_ASSIGN = re.compile(r"([A-Za-z_][A-Za-z0-9_]*)(\[[^\]]*\])?(\+?=)")


def assignment(w) -> Optional[tuple]:
    """(name, ``=`` or ``+=``, the offset in the word's first part where the value starts) of a word that
    is an assignment, else None."""
    if not isinstance(w, Word) or not w.parts or w.parts[0][0] != "lit" or len(w.parts[0]) > 3:
        return None
    m = _ASSIGN.match(w.parts[0][1])
    if not m or m.group(2):
        return None
    return m.group(1), m.group(3), m.end()


def array_start(word: Word) -> Optional[tuple]:
    """(name, ``=`` or ``+=``) of the word before an array's ``(``."""
    text = word.literal_text()
    if text is None:
        return None
    m = _ASSIGN.fullmatch(text)
    return (m.group(1), m.group(3)) if m and not m.group(2) else None


def set_integer(st: State, name: str, value: int, line: int) -> None:
    """``(( NAME = ... ))`` / ``let``: NAME is an integer the script computed."""
    st.vars[name] = Var(name, [text_field(variable_origin(name, line), str(value))], False, line).keep_export(
        st.vars.get(name))


def assign(rd, st: State, item, exported: bool = False, export_word=None) -> Var:
    """Run one assignment word (or ``("array", word, elements, end)``) on the path; the new variable."""
    line = rd.pos(item[1].start if isinstance(item, tuple) else item.start)[0]
    if isinstance(item, tuple):
        var, old = _assign_array(rd, st, item, line)
    else:
        var, old = _assign_value(rd, st, item, line)
    if over_budget(var.fields):  # A+=$A doubling past the budget (A=$A$A is cut while expanding)
        word = item[1] if isinstance(item, tuple) else item
        var.fields, var.array = too_long(rd, st, word, variable_origin(var.name, line)), False
    if len(var.fields) == 1 and var.fields[0].what.startswith(TOO_LONG):
        var.note = var.fields[0].what  # the reason the value is not known, wherever it is used
    var.keep_export(old)
    if exported:
        var.exported = True
        var.export_line, var.export_col = rd.pos(export_word.start)
    st.vars[var.name] = var
    return var


def _assign_array(rd, st: State, item: tuple, line: int) -> tuple:
    _, word, elements, end = item
    name, op = array_start(word)
    origin = variable_origin(name, line)
    fields: list = []
    for el in elements:
        fields.extend(expand(rd, st, el, origin, split=True))
    old = st.vars.get(name)
    if op == "+=" and old is not None and not old.unset:
        fields = list(old.fields) + fields
    var = Var(name, fields, True, line)
    var.span = rd.span(word.start, end)
    if op == "+=" and old is not None and old.note and not old.array:
        var.note = old.note
    return var, old


def _assign_value(rd, st: State, item: Word, line: int) -> tuple:
    name, op, cut = assignment(item)
    origin = variable_origin(name, line)
    first = item.parts[0]
    value_parts = ([("lit", first[1][cut:], first[2][cut:])] if len(first[1]) > cut else []) + item.parts[1:]
    value_word = Word(value_parts, item.start + cut, item.end)
    value = expand_joined(rd, st, value_word, origin)
    old = st.vars.get(name)
    array = False
    fields = [value]
    if op == "+=" and old is not None and old.fields and not old.unset:
        if old.array:  # ARR+=x appends to element 0
            fields = [join([old.fields[0], value], origin)] + list(old.fields[1:])
            array = True
        else:
            fields = [join([old.fields[0], value], origin)]
    var = Var(name, fields, array, line)
    var.span = rd.span(item.start, item.end)
    if op == "+=" and old is not None and old.note:
        var.note = old.note
    if op == "=" and not array:
        placeholder(rd, var, value, value_word, line)
    return var, old


def placeholder(rd, var: Var, value: Field, written: Word, line: int) -> None:
    """A template's placeholder (``WORKSPACE="<some dir>"``; with ``empty_placeholders``, a value left
    empty for the user to fill in, ``CONTAINER_IMAGE=""``) is a value the script does not know: only
    what uses it is unknown."""
    text = value.text
    if text is None:
        return
    if _PLACEHOLDER.fullmatch(text.strip()):
        why = f"${var.name} is a placeholder to fill in ({text.strip()!r}, line {line})"
    elif rd.empty_placeholders and text == "" and written.end > written.start:
        why = f"${var.name} is left empty for the user to fill in (line {line})"
    else:
        return
    f = Field(variable_origin(var.name, line))
    f.hole("$" + var.name)
    var.fields = [f]
    var.note = why
    rd.placeholders.append(why)


def remember_local(st: State, name: str) -> None:
    """Inside a function, ``local NAME``: the value before it comes back when the function returns."""
    if st.frames and name not in st.frames[-1]:
        st.frames[-1][name] = st.vars.get(name)


def declare(rd, st: State, builtin: str, words: list) -> None:
    """``export`` / ``declare`` / ``typeset`` / ``local`` / ``readonly`` and their words."""
    exporting = builtin == "export"
    local = builtin == "local" or (builtin in ("declare", "typeset") and bool(st.frames))
    for w in words:
        if isinstance(w, tuple):
            if local:
                remember_local(st, array_start(w[1])[0])
            assign(rd, st, w, exported=exporting, export_word=w[1])
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
        m = assignment(w)
        if m:
            if local:
                remember_local(st, m[0])
            assign(rd, st, w, exported=exporting, export_word=w)
        elif t and NAME.fullmatch(t):
            if local and st.frames:  # declared in the function, empty
                remember_local(st, t)
                line = rd.pos(w.start)[0]
                st.vars[t] = Var(t, [Field(variable_origin(t, line))], False, line)
            if exporting:
                var = st.vars.get(t)
                if var is None:
                    continue  # export NAME of a variable from the caller's environment: it stays what it was
                var = var.copy()
                var.exported = True
                var.export_line, var.export_col = rd.pos(w.start)
                st.vars[t] = var


def unset(st: State, fields: list, line: int) -> None:
    """``unset NAME ...``: each known to be unset (not the caller's value)."""
    for f in fields:
        t = f.text
        if t and NAME.fullmatch(t):
            var = Var(t, [], False, line)
            var.unset = True
            remember_local(st, t)
            st.vars[t] = var


def read_heredoc_into(rd, st: State, node, fields: list) -> bool:
    """``read -r -d '' NAME <<'EOF'``: NAME is the whole here-document (``-d ''`` reads to the end; ``-r``
    keeps backslashes), blanks and newlines at its ends trimmed unless ``IFS=`` precedes it. True when
    the command is exactly that form; else the variables are read at run time (not known)."""
    words = [None if f is None else f.text for f in fields[1:]]
    if not node.heredocs or not node.heredocs[0] or None in words:
        return False
    names = [w for w in words if not w.startswith("-")]
    opts = [w for w in words if w.startswith("-")]
    # the empty word after -d is its argument: -r -d '' NAME, -rd '' NAME
    if len(names) != 2 or names[0] != "" or words.index("") == 0 or not words[words.index("") - 1].endswith("d"):
        return False
    if not all(set(o[1:]) <= {"r", "d"} for o in opts) or not any("r" in o for o in opts) or not NAME.fullmatch(names[1]):
        return False
    body = expand_joined(rd, st, node.heredocs[0][0], "here-document")
    ifs_empty = any((assignment(p) or (None,))[0] == "IFS" and p.literal_text() in ("IFS=", "IFS=''", 'IFS=""')
                    for p in node.prefix if isinstance(p, Word))
    chars, offsets = list(body.chars), list(body.offsets)
    if not ifs_empty:
        while chars and chars[0].__class__ is str and chars[0] in " \t\n":
            chars.pop(0)
            offsets.pop(0)
        while chars and chars[-1].__class__ is str and chars[-1] in " \t\n":
            chars.pop()
            offsets.pop()
    f = Field(variable_origin(names[1], node.line))
    f.chars, f.offsets, f.whole = chars, offsets, False
    st.vars[names[1]] = Var(names[1], [f], False, node.line).keep_export(st.vars.get(names[1]))
    return True
