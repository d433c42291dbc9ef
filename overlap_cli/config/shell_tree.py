"""The nodes of a launch script's command tree (``shell_parse`` builds them, ``shell_eval`` runs them).

A node knows where it starts (file offset) and its line. ``Seq``: a list (``a; b & c``, each item with
whether it runs in the background); ``AndOr``: pipelines joined by ``&&`` / ``||``; ``Pipeline``: commands
joined by ``|``; ``Simple``: assignments then words (an array assignment is a tuple, here-documents kept);
``If`` / ``Case`` / ``For`` / ``Loop`` (``while`` / ``until``) / ``Group`` (``{ }``, or ``( )`` a subshell) /
``Function`` (a definition); ``Arith``: ``(( ))``; ``Test``: ``[[ ]]`` with its words.
"""

from __future__ import annotations

TYPE_CHECKING = False  # the typing module costs ~2.5 ms of start-up; annotations here are strings (PEP 563)
if TYPE_CHECKING:
    from overlap_cli.config.shell_lex import Word


class Node:
    __slots__ = ("start", "line")


class Simple(Node):
    """Assignments (Word, or ("array", Word, elements, the offset after its closing parenthesis)) then the
    command's words."""

    __slots__ = ("prefix", "words", "end", "heredocs")

    def __init__(self, prefix: list, words: list, start: int, line: int, end: int):
        self.prefix, self.words, self.start, self.line, self.end = prefix, words, start, line, end
        self.heredocs: list = []  # per here-document, a list holding its body's Word once read


class Seq(Node):
    """Commands run one after the other: (node, in the background)."""

    __slots__ = ("items",)

    def __init__(self, items: list, start: int, line: int):
        self.items, self.start, self.line = items, start, line


class AndOr(Node):
    __slots__ = ("first", "rest")  # rest: [(op, pipeline)]

    def __init__(self, first, rest: list, start: int, line: int):
        self.first, self.rest, self.start, self.line = first, rest, start, line


class Pipeline(Node):
    __slots__ = ("commands", "negate")

    def __init__(self, commands: list, negate: bool, start: int, line: int):
        self.commands, self.negate, self.start, self.line = commands, negate, start, line


class If(Node):
    __slots__ = ("clauses", "otherwise")  # clauses: [(condition Seq, body Seq, line)]

    def __init__(self, clauses: list, otherwise, start: int, line: int):
        self.clauses, self.otherwise, self.start, self.line = clauses, otherwise, start, line


class Case(Node):
    __slots__ = ("subject", "items")  # items: [(pattern words, body Seq, terminator, line)]

    def __init__(self, subject: Word, items: list, start: int, line: int):
        self.subject, self.items, self.start, self.line = subject, items, start, line


class For(Node):
    __slots__ = ("name", "words", "body", "arith")  # words None: "$@"; arith: (init, cond, step) of for ((;;))

    def __init__(self, name, words, body, arith, start: int, line: int):
        self.name, self.words, self.body, self.arith, self.start, self.line = name, words, body, arith, start, line


class Loop(Node):
    __slots__ = ("condition", "body", "until")

    def __init__(self, condition, body, until: bool, start: int, line: int):
        self.condition, self.body, self.until, self.start, self.line = condition, body, until, start, line


class Group(Node):
    __slots__ = ("body", "subshell")

    def __init__(self, body, subshell: bool, start: int, line: int):
        self.body, self.subshell, self.start, self.line = body, subshell, start, line


class Function(Node):
    __slots__ = ("name", "body")

    def __init__(self, name: str, body, start: int, line: int):
        self.name, self.body, self.start, self.line = name, body, start, line


class Arith(Node):
    """``((expr))`` (also ``let``): its status is the expression's value being non-zero."""

    __slots__ = ("expr",)

    def __init__(self, expr: str, start: int, line: int):
        self.expr, self.start, self.line = expr, start, line


class Test(Node):
    """``[[ ... ]]``: its words (operators included)."""

    __slots__ = ("words", "end")

    def __init__(self, words: list, start: int, line: int, end: int):
        self.words, self.start, self.line, self.end = words, start, line, end
