"""Bash's conditions over what a script states: ``test`` / ``[ ... ]``, ``[[ ... ]]`` and pattern matching
(``case``, ``[[ x == pat ]]``). Each answer is True, False, or None when it depends on something not known
statically (a variable from the caller's environment, a file on the launch machine, ``$(...)``).

``test`` follows bash's builtin (bash(1) CONDITIONAL EXPRESSIONS and the ``test`` argument-count rules): with
1 argument, true when it is not empty; 2, a unary operator or ``!``; 3, a binary operator, ``! x y`` or
``( x )``; more, ``!``, ``( )``, ``-a`` and ``-o`` by precedence. ``[[ ]]`` has ``&&``, ``||``, ``!`` and
parentheses, does no word splitting, treats the right side of ``==`` / ``!=`` as a pattern unless it is
quoted, and evaluates the operands of ``-eq`` etc. arithmetically. File tests (``-f``, ``-d``, ...) and
``=~`` are None: they depend on the launch machine, or on regular-expression dialects this reader does not
model.
"""

from __future__ import annotations

import re

TYPE_CHECKING = False  # the typing module costs ~2.5 ms of start-up; annotations here are strings (PEP 563)
if TYPE_CHECKING:
    from typing import Callable, Optional

_FILE_TESTS = frozenset("-a -b -c -d -e -f -g -h -k -p -r -s -t -u -w -x -G -L -N -O -S".split())
_INT_OPS = frozenset(("-eq", "-ne", "-lt", "-le", "-gt", "-ge"))
_STRING_OPS = frozenset(("=", "==", "!=", "<", ">"))
_OTHER_BINARY = frozenset(("-nt", "-ot", "-ef", "=~"))


class Operand:
    """A word of a condition: its text (None where not known statically), whether it has known
    characters (``-n "$X-suffix"`` is true whatever X is), and its pattern (a ``Glob``) when it is one."""

    __slots__ = ("text", "nonempty", "pattern")

    def __init__(self, text: Optional[str], nonempty: bool = False, pattern: Optional[Glob] = None):
        self.text, self.nonempty, self.pattern = text, nonempty or bool(text), pattern


def _and(a, b):
    if a is False or b is False:
        return False
    return None if a is None or b is None else True


def _or(a, b):
    if a is True or b is True:
        return True
    return None if a is None or b is None else False


def _not(a):
    return None if a is None else not a


def _integer(text: Optional[str]) -> Optional[int]:
    if text is None:
        return None
    t = text.strip()
    return int(t) if re.fullmatch(r"[-+]?\d+", t) else None


def _unary(op: str, x: Operand, is_set: Callable):
    if op == "-z":
        return False if x.nonempty else (None if x.text is None else x.text == "")
    if op == "-n":
        return True if x.nonempty else (None if x.text is None else x.text != "")
    if op == "-v":
        return None if x.text is None else is_set(x.text)
    return None  # files, -o OPTION, -t FD: the launch machine's


def _binary(op: str, a: Operand, b: Operand, arith: Optional[Callable] = None):
    if op in _STRING_OPS:
        if op in ("=", "==", "!=") and b.pattern is not None:
            if a.text is None:
                return None
            hit = b.pattern.matches(a.text)
            return hit if op != "!=" else not hit
        if a.text is None or b.text is None:
            return None
        if op in ("=", "=="):
            return a.text == b.text
        if op == "!=":
            return a.text != b.text
        return a.text < b.text if op == "<" else a.text > b.text  # bash compares in the locale; ASCII here
    if op in _INT_OPS:
        x = arith(a.text) if arith else _integer(a.text)
        y = arith(b.text) if arith else _integer(b.text)
        if x is None or y is None:
            return None
        return {"-eq": x == y, "-ne": x != y, "-lt": x < y, "-le": x <= y, "-gt": x > y, "-ge": x >= y}[op]
    return None


def evaluate_test(args: list, is_set: Callable) -> Optional[bool]:
    """``test ARGS`` / ``[ ARGS ]`` (without the ``]``): True, False, or None."""
    texts = [a.text for a in args]
    n = len(args)
    if n == 0:
        return False
    if n == 1:
        return _unary("-n", args[0], is_set)
    if n == 2:
        if texts[0] == "!":
            return _not(_unary("-n", args[1], is_set))
        if texts[0] in _FILE_TESTS or texts[0] in ("-z", "-n", "-v", "-o"):
            return _unary(texts[0], args[1], is_set)
        return None  # bash: unary operator expected (status 2)
    if n == 3:
        if texts[1] in _STRING_OPS or texts[1] in _INT_OPS or texts[1] in _OTHER_BINARY:
            return _binary(texts[1], args[0], args[2])
        if texts[1] in ("-a", "-o"):
            a, b = _unary("-n", args[0], is_set), _unary("-n", args[2], is_set)
            return _and(a, b) if texts[1] == "-a" else _or(a, b)
        if texts[0] == "!":
            return _not(evaluate_test(args[1:], is_set))
        if texts[0] == "(" and texts[2] == ")":
            return _unary("-n", args[1], is_set)
        return None
    if n == 4 and texts[0] == "!":
        return _not(evaluate_test(args[1:], is_set))
    if n == 4 and texts[0] == "(" and texts[3] == ")":
        return evaluate_test(args[1:3], is_set)
    parser = _Expression(args, is_set, double=False)
    return parser.run()


def evaluate_double(args: list, is_set: Callable, arith: Callable) -> Optional[bool]:
    """``[[ ARGS ]]``: True, False, or None."""
    return _Expression(args, is_set, double=True, arith=arith).run()


class _Expression:
    def __init__(self, args: list, is_set: Callable, double: bool, arith: Optional[Callable] = None):
        self.args, self.is_set, self.double, self.arith = args, is_set, double, arith
        self.i = 0
        self.or_op, self.and_op = ("||", "&&") if double else ("-o", "-a")

    def text(self, k: int) -> Optional[str]:
        return self.args[k].text if k < len(self.args) else None

    def run(self):
        try:
            value = self.disjunction()
        except (IndexError, ValueError, RecursionError):
            return None
        return value if self.i == len(self.args) else None

    def disjunction(self):
        v = self.conjunction()
        while self.text(self.i) == self.or_op:
            self.i += 1
            v = _or(v, self.conjunction())
        return v

    def conjunction(self):
        v = self.negation()
        while self.text(self.i) == self.and_op:
            self.i += 1
            v = _and(v, self.negation())
        return v

    def negation(self):
        if self.text(self.i) == "!":
            self.i += 1
            return _not(self.negation())
        return self.primary()

    def primary(self):
        t = self.text(self.i)
        if t == "(":
            self.i += 1
            v = self.disjunction()
            if self.text(self.i) != ")":
                raise ValueError
            self.i += 1
            return v
        nxt = self.text(self.i + 1)
        if self.i + 2 < len(self.args) + 0 and nxt in (_STRING_OPS | _INT_OPS | _OTHER_BINARY):
            a, b = self.args[self.i], self.args[self.i + 2]
            self.i += 3
            return _binary(nxt, a, b, self.arith if self.double else None)
        if t in _FILE_TESTS or t in ("-z", "-n", "-v", "-o"):
            if self.i + 1 >= len(self.args):
                raise ValueError
            x = self.args[self.i + 1]
            self.i += 2
            return _unary(t, x, self.is_set)
        x = self.args[self.i]
        self.i += 1
        return _unary("-n", x, self.is_set)


# --- patterns --------------------------------------------------------------------------------------


_CLASSES = {
    "alpha": str.isalpha, "digit": str.isdigit, "alnum": str.isalnum, "upper": str.isupper, "lower": str.islower,
    "space": str.isspace, "blank": lambda c: c in " \t", "xdigit": lambda c: c in "0123456789abcdefABCDEF",
    "punct": lambda c: c.isprintable() and not c.isalnum() and not c.isspace(),
    "print": str.isprintable, "graph": lambda c: c.isprintable() and not c.isspace(),
    "cntrl": lambda c: not c.isprintable(), "word": lambda c: c.isalnum() or c == "_",
}
_STAR = object()


class _CharSet:
    """A bracket expression: ``[abc]``, ``[!a-z]``, ``[[:digit:]_]``. A reversed range (``[z-a]``) matches
    nothing, as in bash's glob matcher; an unknown class name matches nothing."""

    __slots__ = ("negate", "chars", "ranges", "classes")

    def __init__(self, negate: bool):
        self.negate = negate
        self.chars: set = set()
        self.ranges: list = []
        self.classes: list = []

    def has(self, c: str) -> bool:
        hit = (c in self.chars or any(lo <= c <= hi for lo, hi in self.ranges)
               or any(test(c) for test in self.classes))
        return hit != self.negate


def _bracket(chars: list, i: int):
    """The bracket expression starting at ``chars[i]`` (an active ``[``) and the index after it; None when
    it is not closed (the ``[`` then matches itself)."""
    n = len(chars)
    j = i + 1
    negate = j < n and chars[j][1] and chars[j][0] in "!^"
    if negate:
        j += 1
    cs = _CharSet(negate)
    first = True
    while j < n:
        c, active = chars[j]
        if c == "]" and active and not first:
            return cs, j + 1
        first = False
        if c == "[" and active and j + 1 < n and chars[j + 1] == (":", True):
            end = _class_end(chars, j + 2)
            if end is not None:
                name = "".join(ch for ch, _ in chars[j + 2:end])
                cs.classes.append(_CLASSES.get(name, lambda ch: False))
                j = end + 2
                continue
        if j + 2 < n and chars[j + 1] == ("-", True) and not (chars[j + 2] == ("]", True)):
            cs.ranges.append((c, chars[j + 2][0]))  # (z, a): lo <= ch <= hi never holds, as bash
            j += 3
            continue
        cs.chars.add(c)
        j += 1
    return None


def _class_end(chars: list, k: int):
    while k + 1 < len(chars):
        if chars[k] == (":", True) and chars[k + 1] == ("]", True):
            return k
        k += 1
    return None


class Glob:
    """A bash pattern, matched without backtracking: the pattern is cut at its ``*`` into segments of fixed
    length; the first must match at the start, the last at the end, and each one between at its leftmost
    place after the one before (leftmost is always right when a ``*`` separates segments). At most
    len(text) x len(pattern) character tests, whatever the pattern (``*a*a*a*a*a*a*b`` included)."""

    __slots__ = ("segments",)

    def __init__(self, tokens: list):
        self.segments: list = [[]]
        for tok in tokens:
            if tok is _STAR:
                if self.segments[-1] or len(self.segments) == 1:
                    self.segments.append([])
            else:
                self.segments[-1].append(tok)

    @property
    def matches_everything(self) -> bool:
        return len(self.segments) == 2 and not self.segments[0] and not self.segments[1]

    def matches(self, text: str) -> bool:
        segs = self.segments
        if len(segs) == 1:
            return len(text) == len(segs[0]) and _at(segs[0], text, 0)
        first, last, middle = segs[0], segs[-1], segs[1:-1]
        lo, hi = len(first), len(text) - len(last)
        if hi < lo or not _at(first, text, 0) or not _at(last, text, hi):
            return False
        for seg in middle:
            k = _find(seg, text, lo, hi)
            if k < 0:
                return False
            lo = k + len(seg)
        return True


def _one(tok, c: str) -> bool:
    if tok is None:
        return True
    if tok.__class__ is str:
        return tok == c
    return tok.has(c)


def _at(seg: list, text: str, i: int) -> bool:
    return all(_one(tok, text[i + k]) for k, tok in enumerate(seg))


def _find(seg: list, text: str, lo: int, hi: int) -> int:
    """The leftmost index in [lo, hi - len(seg)] where ``seg`` matches; -1 if none."""
    if all(tok.__class__ is str for tok in seg):
        return text.find("".join(seg), lo, hi)
    for i in range(lo, hi - len(seg) + 1):
        if _at(seg, text, i):
            return i
    return -1


def glob_pattern(pieces: list) -> Optional[Glob]:
    """The bash pattern given as (text, active) pieces: an active piece's ``*``, ``?`` and ``[...]`` match
    as in bash; an inactive (quoted) one matches itself. None for an extended pattern (``@(...)``,
    ``!(...)``, ...)."""
    tokens: list = []
    chars = [(c, active) for text, active in pieces for c in text]
    i, n = 0, len(chars)
    while i < n:
        c, active = chars[i]
        if not active:
            tokens.append(c)
            i += 1
            continue
        if c in "@!+?*" and i + 1 < n and chars[i + 1] == ("(", True):
            return None
        if c == "*":
            tokens.append(_STAR)
        elif c == "?":
            tokens.append(None)
        elif c == "[":
            found = _bracket(chars, i)
            if found is not None:
                tokens.append(found[0])
                i = found[1]
                continue
            tokens.append(c)
        else:
            tokens.append(c)
        i += 1
    return Glob(tokens)
