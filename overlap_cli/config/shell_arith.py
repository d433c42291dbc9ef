"""Bash's shell arithmetic (``$((expr))``, ``((expr))``, ``let``) over the integers a script states.

Bash's operators and precedence (bash(1) ARITHMETIC EVALUATION): ``,`` < assignment (``= *= /= %= += -= <<=
>>= &= ^= |=``, right to left) < ``?:`` < ``||`` < ``&&`` < ``|`` < ``^`` < ``&`` < ``== !=`` < ``< <= > >=``
< ``<< >>`` < ``+ -`` < ``* / %`` < ``**`` (right to left) < unary ``- + ! ~`` < ``++ --``. A variable
that is unset or empty is 0; one holding a number is that number; one holding a name is that name's value.
Division truncates toward zero; division by zero, a negative exponent or bad syntax is an error (bash
prints it and the command fails), here None. A variable whose value is not known statically makes the
result unknown (None) — never 0.
"""

from __future__ import annotations

import re

TYPE_CHECKING = False  # the typing module costs ~2.5 ms of start-up; annotations here are strings (PEP 563)
if TYPE_CHECKING:
    from typing import Callable, Optional

_TOKEN = re.compile(r"\s*(0[xX][0-9a-fA-F]+|\d+#[0-9a-zA-Z@_]+|\d+|\$\{[A-Za-z_]\w*\}|\$?[A-Za-z_]\w*|"
                    r"\+\+|--|\*\*=?|<<=|>>=|<<|>>|<=|>=|==|!=|&&|\|\||[-+*/%&^|]=|[-+*/%<>=!~&^|?:,()])")
_ASSIGN_OPS = ("=", "*=", "/=", "%=", "+=", "-=", "<<=", ">>=", "&=", "^=", "|=")


class _Error(Exception):
    pass


class _Unknown(Exception):
    pass


def _number(tok: str) -> int:
    if tok[:2] in ("0x", "0X"):
        return int(tok[2:], 16)
    if "#" in tok:
        base, _, digits = tok.partition("#")
        b = int(base)
        if not 2 <= b <= 36 or not all(c.isalnum() for c in digits):
            raise _Error
        return int(digits, b)
    if len(tok) > 1 and tok[0] == "0":
        if any(c in "89" for c in tok):
            raise _Error  # bash: value too great for base
        return int(tok, 8)
    return int(tok)


def _c_div(a: int, b: int) -> int:
    q = abs(a) // abs(b)
    return q if (a >= 0) == (b >= 0) else -q


class Arithmetic:
    """One evaluation. ``lookup(name)`` gives a variable's text, "" when unset, or None when it is not known
    statically. ``assigned`` holds the variables the expression sets (None: set to an unknown value)."""

    def __init__(self, expr: str, lookup: Callable):
        self.lookup = lookup
        self.assigned: dict = {}
        tokens = []
        pos = 0
        text = expr.replace("\\\n", " ")
        while pos < len(text):
            if text[pos:].strip() == "":
                break
            m = _TOKEN.match(text, pos)
            if not m:
                raise _Error
            tokens.append(m.group(1))
            pos = m.end()
        self.tokens = tokens
        self.i = 0
        self.depth = 0

    # --- variables ---

    def value_of(self, name: str, depth: int = 0) -> int:
        if name in self.assigned:
            v = self.assigned[name]
            if v is None:
                raise _Unknown
            return v
        text = self.lookup(name)
        if text is None:
            raise _Unknown
        text = text.strip()
        if text == "":
            return 0
        if re.fullmatch(r"-?\d+", text):
            return int(text)
        if depth < 8 and re.fullmatch(r"[A-Za-z_]\w*", text):
            return self.value_of(text, depth + 1)
        if depth < 8:
            inner = Arithmetic(text, self.lookup)
            inner.assigned = self.assigned
            v = inner.evaluate()
            if v is None:
                raise _Unknown
            return v
        raise _Error

    # --- the grammar ---

    def peek(self) -> Optional[str]:
        return self.tokens[self.i] if self.i < len(self.tokens) else None

    def take(self) -> str:
        tok = self.peek()
        if tok is None:
            raise _Error
        self.i += 1
        return tok

    def evaluate(self) -> Optional[int]:
        """The value; None when not known statically or an error (``ok`` tells which)."""
        self.ok = True
        if not self.tokens:
            return 0
        try:
            value = self.comma(True)
            if self.peek() is not None:
                raise _Error
            return value
        except _Unknown:
            return None
        except (_Error, ValueError, ZeroDivisionError, RecursionError, OverflowError):
            self.ok = False
            return None

    def comma(self, live: bool):
        v = self.assignment(live)
        while self.peek() == ",":
            self.take()
            v = self.assignment(live)
        return v

    def assignment(self, live: bool):
        tok = self.peek()
        nxt = self.tokens[self.i + 1] if self.i + 1 < len(self.tokens) else None
        if tok is not None and re.fullmatch(r"[A-Za-z_]\w*", tok) and nxt in _ASSIGN_OPS:
            self.i += 2
            try:
                rhs = self.assignment(live)
                if nxt != "=":
                    rhs = self.binary(nxt[:-1], self.value_of(tok), rhs)
            except _Unknown:
                if live:
                    self.assigned[tok] = None
                raise
            if live:
                self.assigned[tok] = rhs
            return rhs
        return self.conditional(live)

    def conditional(self, live: bool):
        cond = self.logical_or(live)
        if self.peek() != "?":
            return cond
        self.take()
        yes = self.comma(live and cond != 0)
        if self.take() != ":":
            raise _Error
        no = self.conditional(live and cond == 0)
        return yes if cond else no

    def logical_or(self, live: bool):
        v = self.logical_and(live)
        while self.peek() == "||":
            self.take()
            w = self.logical_and(live and not v)
            v = 1 if (v or w) else 0
        return v

    def logical_and(self, live: bool):
        v = self.binary_level(0, live)
        while self.peek() == "&&":
            self.take()
            w = self.binary_level(0, live and bool(v))
            v = 1 if (v and w) else 0
        return v

    _LEVELS = (("|",), ("^",), ("&",), ("==", "!="), ("<", "<=", ">", ">="), ("<<", ">>"), ("+", "-"), ("*", "/", "%"))

    def binary_level(self, level: int, live: bool):
        if level == len(self._LEVELS):
            return self.power(live)
        v = self.binary_level(level + 1, live)
        while self.peek() in self._LEVELS[level]:
            op = self.take()
            v = self.binary(op, v, self.binary_level(level + 1, live))
        return v

    @staticmethod
    def binary(op: str, a: int, b: int) -> int:
        if op in ("/", "%"):
            if b == 0:
                raise _Error  # bash: division by 0
            q = _c_div(a, b)
            return q if op == "/" else a - q * b
        if op == "**":
            if b < 0 or b > 64 and abs(a) > 1:
                raise _Error
            return a ** b
        if op in ("<<", ">>"):
            if b < 0 or b > 63:
                raise _Error
            return a << b if op == "<<" else a >> b
        return {"+": lambda: a + b, "-": lambda: a - b, "*": lambda: a * b, "&": lambda: a & b, "|": lambda: a | b,
                "^": lambda: a ^ b, "==": lambda: int(a == b), "!=": lambda: int(a != b), "<": lambda: int(a < b),
                "<=": lambda: int(a <= b), ">": lambda: int(a > b), ">=": lambda: int(a >= b)}[op]()

    def power(self, live: bool):
        base = self.unary(live)
        if self.peek() == "**":
            self.take()
            return self.binary("**", base, self.power(live))
        return base

    def unary(self, live: bool):
        self.depth += 1
        if self.depth > 500:
            raise _Error
        try:
            tok = self.peek()
            if tok in ("-", "+", "!", "~"):
                self.take()
                v = self.unary(live)
                return {"-": -v, "+": v, "!": int(not v), "~": ~v}[tok]
            if tok in ("++", "--"):
                self.take()
                name = self.take()
                if not re.fullmatch(r"[A-Za-z_]\w*", name):
                    raise _Error
                v = self.value_of(name) + (1 if tok == "++" else -1)
                if live:
                    self.assigned[name] = v
                return v
            return self.postfix(live)
        finally:
            self.depth -= 1

    def postfix(self, live: bool):
        tok = self.take()
        if tok == "(":
            v = self.comma(live)
            if self.take() != ")":
                raise _Error
            return v
        if tok[0].isdigit():
            return _number(tok)
        if tok[0] == "$" or tok[0].isalpha() or tok[0] == "_":
            name = tok.strip("${}")
            if tok[0] != "$" and self.peek() in ("++", "--"):
                op = self.take()
                try:
                    v = self.value_of(name)
                except _Unknown:
                    if live:
                        self.assigned[name] = None
                    raise
                if live:
                    self.assigned[name] = v + (1 if op == "++" else -1)
                return v
            return self.value_of(name)
        raise _Error


def evaluate(expr: str, lookup: Callable) -> tuple:
    """(value or None, the variables it assigns, whether it is valid arithmetic)."""
    try:
        a = Arithmetic(expr, lookup)
    except _Error:
        return None, {}, False
    value = a.evaluate()
    return value, a.assigned, a.ok
