"""Brace expansion, as bash does it before any other expansion (bash(1) "Brace Expansion"): ``pre{a,b}post``
is ``preapost prebpost``, ``{1..5}`` / ``{01..10..3}`` / ``{a..e}`` a sequence, nested braces expanded
inside out. Only unquoted, unescaped braces count; ``${...}`` is a parameter, ``{a}`` and ``{}`` stay as
written, as does a sequence whose ends are of different kinds (``{1..a}``).

``braced`` (called by ``shell_expand.expand``) expands the words ``brace_words`` makes of one written word,
or says it has no brace to expand. Bounded by ``shell_expand.MAX_EXPANSION`` characters over all the words:
``{1..1000000000}`` is counted, never built, and is one unknown field with the reason (``TooMany``).
"""

from __future__ import annotations

import re

from overlap_cli.config.shell_lex import Word

_SEQUENCE = re.compile(r"(-?\d+)\.\.(-?\d+)(?:\.\.(-?\d+))?\Z|([A-Za-z])\.\.([A-Za-z])(?:\.\.(-?\d+))?\Z")


class TooMany(Exception):
    """The words would hold more characters than the budget (``count``: how many words, as bash would make)."""

    def __init__(self, count: int):
        super().__init__(count)
        self.count = count


def braced(rd, st, word: Word, origin: str, expand_word, too_long, budget: int):
    """The fields of ``word`` brace-expanded then each expanded by ``expand_word``; None when no brace expands.
    Past the budget, ``too_long``'s one unknown field, which may be any number of words."""
    try:
        words = brace_words(word, rd.text, budget)
    except TooMany:
        out = too_long(rd, st, word, origin)
        out[0].multi = True
        return out
    if words is None:
        return None
    out = [f for w in words for f in expand_word(rd, st, w, origin, True, False)]
    for f in out:
        f.word, f.whole = None, False  # made by the expansion: no written word is exactly it
    return out


def brace_words(word: Word, text: str, budget: int):
    """The words ``word`` becomes (each a Word over the same script text), or None when nothing expands.
    TooMany when they would hold more than ``budget`` characters."""
    if not any(p[0] == "lit" and len(p) == 3 and "{" in p[1] for p in word.parts):
        return None
    atoms = _atoms(word, text)
    if not any(a[2] and a[0] == "{" for a in atoms):
        return None
    out = _expand(atoms, [budget])
    if len(out) == 1 and out[0] is atoms:
        return None
    return [_word(a, word) for a in out]


def _atoms(word: Word, text: str) -> list:
    """The word as (character or part, offset, active): ``active`` for an unquoted, unescaped character,
    the only kind brace syntax is made of; a non-literal part (``$X``, ``$(...)``) is one inactive atom."""
    atoms: list = []
    for p in word.parts:
        if p[0] != "lit":
            atoms.append((p, None, False))
            continue
        quoted = len(p) > 3
        escaped = not quoted and len(p[1]) == 1 and p[2] and p[2][0] > 0 and text[p[2][0] - 1] == "\\"
        for ch, off in zip(p[1], p[2]):
            atoms.append((ch, off, not (quoted or escaped)))
    return atoms


def _expand(atoms: list, budget: list) -> list:
    """The atom lists of the words ``atoms`` makes (``atoms`` itself, unchanged, when no brace expands)."""
    open_at, close_at = _first_brace(atoms)
    if open_at is None:
        return [atoms]
    inner, post = atoms[open_at + 1:close_at], atoms[close_at + 1:]
    if any(a[2] and a[0] == "," for a in inner):
        alternatives = [w for piece in _split(inner) for w in _expand(piece, budget)]
    else:
        alternatives = _sequence(inner, budget)
        if alternatives is None:  # {a..b..c}: as written, braces included; what follows still expands
            if not post:
                return [atoms]
            alternatives = [atoms[open_at:close_at + 1]]
    pre = atoms[:open_at]
    tails = _expand(post, budget) if post else [post]
    out = []
    for middle in alternatives:
        for tail in tails:
            made = pre + middle + tail
            budget[0] -= len(made) + 1
            if budget[0] < 0:
                raise TooMany(len(out) + 1)
            out.append(made)
    return out


def _first_brace(atoms: list) -> tuple:
    """(the first ``{`` that opens a brace expression, the ``}`` that closes it), or (None, None). A brace
    closes at a ``}`` outside inner braces once a ``,`` or ``..`` (not right before the ``}``) was met
    outside them; a ``{`` that starts the text and is followed by ``}`` opens nothing."""
    for i, (ch, _off, active) in enumerate(atoms):
        if not active or ch != "{":
            continue
        if i == 0 and len(atoms) > 1 and atoms[1][2] and atoms[1][0] == "}":
            continue
        close = _closing(atoms, i)
        if close is not None:
            return i, close
    return None, None


def _closing(atoms: list, open_at: int):
    depth, separators = 0, 0
    n = len(atoms)
    for i in range(open_at + 1, n):
        ch, _off, active = atoms[i]
        if not active:
            continue
        if ch == "}" and depth == 0 and separators:
            return i
        if ch == "{":
            depth += 1
        elif ch == "}":
            depth = max(depth - 1, 0)
        elif depth == 0 and (ch == "," or (ch == "." and i + 2 < n and _is(atoms[i + 1], ".")
                                           and not _is(atoms[i + 2], "}"))):
            separators += 1
    return None


def _is(atom: tuple, ch: str) -> bool:
    return atom[2] and atom[0] == ch


def _split(inner: list) -> list:
    """The text between braces cut at its commas outside inner braces."""
    out, piece, depth = [], [], 0
    for a in inner:
        if a[2]:
            if a[0] == "{":
                depth += 1
            elif a[0] == "}" and depth:
                depth -= 1
            elif a[0] == "," and depth == 0:
                out.append(piece)
                piece = []
                continue
        piece.append(a)
    out.append(piece)
    return out


def _sequence(inner: list, budget: list):
    """The items of ``{x..y[..step]}`` as atom lists (their characters written nowhere), or None when it is not
    a sequence. TooMany before building one past the budget."""
    if not all(a[2] for a in inner):
        return None
    m = _SEQUENCE.match("".join(a[0] for a in inner))
    if m is None:
        return None
    step = abs(int(m.group(3) or m.group(6) or 1)) or 1
    if m.group(1) is not None:
        first, last = int(m.group(1)), int(m.group(2))
        width = max(len(m.group(1)), len(m.group(2))) if _padded(m.group(1)) or _padded(m.group(2)) else 0
    else:
        first, last, width = ord(m.group(4)), ord(m.group(5)), -1
    count = abs(last - first) // step + 1
    widest = max(len(str(first)), len(str(last)), width, 1)
    if count * (widest + 1) > budget[0]:
        raise TooMany(count)
    values = range(first, last + 1, step) if first <= last else range(first, last - 1, -step)
    if width < 0:
        return [[(chr(v), None, False)] for v in values]
    return [[(ch, None, False) for ch in _number(v, width)] for v in values]


def _padded(number: str) -> bool:
    digits = number.lstrip("-")
    return len(digits) > 1 and digits.startswith("0")


def _number(value: int, width: int) -> str:
    if not width:
        return str(value)
    return ("-" + str(-value).zfill(width - 1)) if value < 0 else str(value).zfill(width)


def _word(atoms: list, written: Word) -> Word:
    """A Word of ``atoms``: consecutive characters as literal parts (quoted ones marked), parts as they were."""
    parts: list = []
    text: list = []
    offsets: list = []
    quoted = None
    for item, off, active in atoms:
        if item.__class__ is not str:
            _flush(parts, text, offsets, quoted)
            text, offsets, quoted = [], [], None
            parts.append(item)
            continue
        q = not active and off is not None
        if quoted is not None and q != quoted:
            _flush(parts, text, offsets, quoted)
            text, offsets = [], []
        quoted = q
        text.append(item)
        offsets.append(off)
    _flush(parts, text, offsets, quoted)
    made = Word(parts or [("lit", "", [], "q")], written.start, written.end)
    made.origin = written.origin
    return made


def _flush(parts: list, text: list, offsets: list, quoted) -> None:
    if text:
        parts.append(("lit", "".join(text), list(offsets)) + (("q",) if quoted else ()))
