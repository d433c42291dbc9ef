"""Parameter expansion and word splitting, as bash does them, over ``config.shell_lex`` words.

An expanded word is a ``Field``: its characters, each with the file offset it came from (None for a
character the script did not write, such as the blank ``${ARR[*]}`` joins with), and ``Hole`` entries
for what is not known statically. Splitting an unquoted expansion cuts at known blanks only: in
``OPTS="--num-layers 4 --save $CKPT"`` used as ``$OPTS``, three words are known and the fourth is a hole.
"""

from __future__ import annotations

import re

TYPE_CHECKING = False  # the typing module costs ~2.5 ms of start-up; annotations here are strings (PEP 563)
if TYPE_CHECKING:
    from typing import Optional

from overlap_cli.config.argv import variable_origin
from overlap_cli.config.shell_lex import Lexer, Word

class Hole:
    """A stretch of a word that is not known statically (``$CKPT``, ``$(nproc)``)."""

    __slots__ = ("what",)

    def __init__(self, what: str):
        self.what = what


class Field:
    """An expanded word: its characters (``Hole`` for an unknown stretch) and the file offset of each
    character (None where the script did not write it)."""

    __slots__ = ("chars", "offsets", "multi", "origin", "word", "whole")

    def __init__(self, origin: str):
        self.chars: list = []
        self.offsets: list = []
        self.multi = False  # only an unquoted unknown expansion: it may be any number of words
        self.origin = origin
        self.word: Optional[Word] = None  # the written word this field is exactly, if any
        self.whole = True  # still exactly one written word (nothing joined or split)

    @property
    def unknown(self) -> bool:
        return any(c.__class__ is Hole for c in self.chars)

    @property
    def what(self) -> str:
        return next((c.what for c in self.chars if c.__class__ is Hole), "")

    @property
    def text(self) -> Optional[str]:
        return None if self.unknown else "".join(self.chars)

    def hole(self, what: str) -> None:
        self.chars.append(Hole(what))
        self.offsets.append(None)
        self.whole = False
        self.word = None

    def extend(self, other: "Field") -> None:
        self.chars.extend(other.chars)
        self.offsets.extend(other.offsets)


class Var:
    __slots__ = ("name", "fields", "array", "line", "blocks", "exported", "export_line", "export_col", "span", "note")

    def __init__(self, name: str, fields: list, array: bool, line: int, blocks: tuple):
        self.name, self.fields, self.array, self.line, self.blocks = name, fields, array, line, blocks
        self.exported = False
        self.export_line = self.export_col = None
        self.span = None
        self.note = ""  # why the value is not known, when it is not


class Expander(Lexer):
    def __init__(self, path: str, text: str):
        super().__init__(path, text)
        self.vars: dict = {}
        self.unknowns: list = []
        self.blocks: list = []  # stack of (keyword, id, line)

    def block_ids(self) -> tuple:
        return tuple(b[1] for b in self.blocks)

    def span(self, start: int, end: int) -> Optional[tuple]:
        l1, c1 = self.pos(start)
        l2, c2 = self.pos(end)
        return (l1, c1, c2) if l1 == l2 else None

    def set_unknown(self, name: str, offset: int, note: str) -> None:
        line = self.pos(offset)[0]
        f = Field(variable_origin(name, line))
        f.hole("$" + name)
        var = Var(name, [f], False, line, self.block_ids())
        var.note = note
        self.vars[name] = var

    def lookup(self, name: str, offset: int) -> Optional[Var]:
        return self.vars.get(name)

    def note_unknown_var(self, name: str, offset: int, expr: str) -> None:
        line = self.pos(offset)[0]
        var = self.vars.get(name)
        why = var.note if var is not None and var.note else f"${name} is not set in the script (it comes from the environment)"
        sentence = f"line {line}: {why}" if expr == "$" + name else f"line {line}: {expr}: {why}"
        if sentence not in self.unknowns:
            self.unknowns.append(sentence)

    def values_of(self, part, origin: str) -> tuple:
        """(fields, unknown expression or None, is_array_all) for a var/brace part."""
        kind = part[0]
        start = part[2]
        if kind == "var":
            name, index, op, default = part[1], None, None, None
            expr = "$" + name
        else:
            body = part[1]
            expr = "${" + body + "}"
            m = re.fullmatch(r"([A-Za-z_][A-Za-z0-9_]*)(?:\[([^\]]+)\])?(?:(:?[-=+])(.*))?", body, re.S)
            if not m:
                return None, expr, False
            name, index, op, default = m.group(1), m.group(2), m.group(3), m.group(4)
        var = self.vars.get(name)
        known = var is not None and not var.note
        if op:
            if op in (":-", "-", ":=", "="):
                empty = var is None or (op.startswith(":") and known and not var.array and var.fields and var.fields[0].text == "")
                if var is not None and not known:
                    self.note_unknown_var(name, start, expr)
                    return None, expr, False
                if not empty:
                    return list(var.fields if index in ("@", "*") else var.fields[:1]), None, index == "@"
                # the default: a word of its own, expanded in place (offsets inside the ${...})
                if var is None:
                    line = self.pos(start)[0]
                    sentence = f"line {line}: {expr} is {default!r} unless the environment sets {name}"
                    if sentence not in self.unknowns:
                        self.unknowns.append(sentence)
                offset = part[3] - 1 - len(default)
                word, _ = self.read_default(offset, part[3] - 1)
                fields = self.expand(word, origin, split=False, keep_empty=True)
                if op in (":=", "="):
                    line = self.pos(start)[0]
                    self.vars[name] = Var(name, [self.join(fields, variable_origin(name, line))], False, line, self.block_ids())
                return fields, None, False
            return None, expr, False  # ${VAR:+alt} and the like: not followed
        if var is None or not known:
            self.note_unknown_var(name, start, expr)
            return None, expr, False
        if index is None:
            return list(var.fields[:1]), None, False
        if index in ("@", "*"):
            return list(var.fields), None, index == "@"
        if index.isdigit():
            i = int(index)
            return (list(var.fields[i:i + 1]) if var.array else (list(var.fields) if i == 0 else [])), None, False
        return None, expr, False


    def arithmetic(self, expr: str) -> Optional[int]:
        """``$((expr))`` of integers and variables the script sets to integers, with + - * / % and
        parentheses (bash: integer division truncates toward zero); None for anything else."""
        tokens = re.findall(r"\s*(\d+|\$?\{?[A-Za-z_]\w*\}?|[-+*/%()])", expr)
        if "".join(tokens).replace(" ", "") != re.sub(r"\s+", "", expr):
            return None
        values: list = []
        for tok in (t.strip() for t in tokens):
            if tok[0].isdigit():
                values.append(tok)
            elif tok[0] in "$_" or tok[0].isalpha():
                var = self.vars.get(tok.strip("${}"))
                text = var.fields[0].text if var is not None and not var.note and not var.array and var.fields else None
                if text is None or not text.strip().lstrip("-").isdigit():
                    return None
                values.append(f"({int(text)})")
            else:
                values.append(tok)
        pos = 0

        def atom() -> int:
            nonlocal pos
            tok = values[pos] if pos < len(values) else None
            if tok in ("-", "+"):
                pos += 1
                return -atom() if tok == "-" else atom()
            if tok == "(" or (tok and tok.startswith("(")):
                if tok != "(":  # a variable's value, already an integer
                    pos += 1
                    return int(tok[1:-1])
                pos += 1
                v = add()
                if pos >= len(values) or values[pos] != ")":
                    raise ValueError
                pos += 1
                return v
            if tok is None or not tok.isdigit():
                raise ValueError
            pos += 1
            return int(tok)

        def mul() -> int:
            nonlocal pos
            v = atom()
            while pos < len(values) and values[pos] in ("*", "/", "%"):
                op = values[pos]
                pos += 1
                w = atom()
                if op == "*":
                    v *= w
                else:
                    if w == 0:
                        raise ValueError
                    q = abs(v) // abs(w) * (1 if (v >= 0) == (w >= 0) else -1)
                    v = q if op == "/" else v - q * w
            return v

        def add() -> int:
            nonlocal pos
            v = mul()
            while pos < len(values) and values[pos] in ("+", "-"):
                op = values[pos]
                pos += 1
                v = v + mul() if op == "+" else v - mul()
            return v

        try:
            result = add()
        except (ValueError, IndexError, RecursionError):  # RecursionError: parentheses nested thousands deep
            return None
        return result if pos == len(values) else None

    def join(self, fields: list, origin: str) -> Field:
        out = Field(origin)
        for f in fields:
            out.extend(f)
        if len(fields) == 1:
            out.word, out.whole, out.origin, out.multi = fields[0].word, fields[0].whole, fields[0].origin, fields[0].multi
        else:
            out.whole = False
        return out

    def expand(self, word: Word, origin: str, split: bool, keep_empty: bool = False) -> list:
        """The fields a word expands to (bash: parameter expansion, then word splitting of unquoted results).

        ``split``: as a command argument or array element (unquoted expansions split on blanks); else as
        the value of an assignment. ``keep_empty``: an empty result is one empty field, not none."""
        out: list = []
        cur = Field(origin)
        cur.word = word
        started = False  # the current field exists (it has text, a quoted part, or a hole)
        only_unquoted_unknown = True  # the word is nothing but unquoted unknown expansions
        pass_through = len(word.parts) == 1

        def new_field():
            nonlocal cur, started
            out.append(cur)
            cur = Field(origin)
            started = False

        for part in word.parts:
            kind = part[0]
            if kind == "lit":
                cur.chars.extend(part[1])
                cur.offsets.extend(part[2])
                started = started or bool(part[1]) or len(part) > 3
                only_unquoted_unknown = False
                continue
            quoted = part[4]
            if kind == "arith":
                value = self.arithmetic(part[1])
                if value is None:
                    kind = "unknown"
                    part = ("unknown", self.text[part[2]:part[3]], part[2], part[3], quoted)
                else:  # an integer the script states: a word of its own text, written nowhere
                    cur.chars.extend(str(value))
                    cur.offsets.extend([part[2]] * len(str(value)))
                    cur.whole, cur.word = False, None
                    started = True
                    only_unquoted_unknown = False
                    continue
            if kind == "unknown":
                cur.hole(part[1])
                started = True
                only_unquoted_unknown = only_unquoted_unknown and not quoted
                sentence = f"line {self.pos(part[2])[0]}: {part[1]} is not known statically"
                if sentence not in self.unknowns:
                    self.unknowns.append(sentence)
                continue
            values, expr, array_all = self.values_of(part, origin)
            if values is None:
                cur.hole(expr)
                started = True
                only_unquoted_unknown = only_unquoted_unknown and not quoted
                continue
            only_unquoted_unknown = False
            if quoted:
                if array_all:  # "${ARR[@]}": one field per element
                    for idx, v in enumerate(values):
                        if idx:
                            new_field()
                        self.append_field(cur, v, pass_through)
                        started = True
                else:  # "$X", "${ARR[*]}" (elements joined with a blank)
                    joined = values[0] if len(values) == 1 else self.join_with_space(values, origin)
                    if values:
                        self.append_field(cur, joined, pass_through)
                    started = True
                continue
            if not split:
                for v in values:
                    self.append_field(cur, v, pass_through and len(values) == 1)
                    started = True
                continue
            # unquoted: each value splits at its known blanks; a blank at either end ends the field
            for idx, v in enumerate(values):
                if idx and started:
                    new_field()
                chars = v.chars
                if chars and chars[0] in (" ", "\t", "\n") and started:
                    new_field()
                pieces = self.split_field(v)
                for pidx, piece in enumerate(pieces):
                    if pidx:
                        new_field()
                    self.append_field(cur, piece, pass_through and len(pieces) == 1)
                    started = True
                if chars and chars[-1] in (" ", "\t", "\n") and started:
                    new_field()
        if started or keep_empty:
            out.append(cur)
        if split and len(out) == 1 and only_unquoted_unknown and out[0].unknown:
            out[0].multi = True
        if not out and not split:
            out.append(Field(origin))
        for f in out:
            if f.word is word and not all(p[0] == "lit" for p in word.parts):
                f.word = None
            if word.origin is not None:  # a word made from a variable's value: not literal where it is used
                f.word, f.whole, f.origin = None, False, word.origin
        return out

    def append_field(self, cur: Field, v: Field, pass_through: bool) -> None:
        """Append v's characters to cur; cur stays v's written word when it is nothing but v."""
        empty = not cur.chars
        if pass_through and empty:
            cur.word, cur.whole = v.word, v.whole
        else:
            cur.whole, cur.word = False, None
        if empty:  # the field starts with v's text: it comes from where v does
            cur.origin, cur.multi = v.origin, v.multi
        else:
            cur.multi = False
        cur.extend(v)

    def join_with_space(self, values: list, origin: str) -> Field:
        out = Field(origin)
        for idx, v in enumerate(values):
            if idx:
                out.chars.append(" ")
                out.offsets.append(None)
            out.extend(v)
        out.whole = False
        return out

    def split_field(self, v: Field) -> list:
        """v cut at its known blanks (IFS's default); a piece that is a single hole is ``multi`` (the unknown
        text may hold blanks too)."""
        if not any(c in (" ", "\t", "\n") for c in v.chars if c.__class__ is str):
            if not v.chars:
                return []
            if len(v.chars) == 1 and v.chars[0].__class__ is Hole:
                alone = Field(v.origin)
                alone.extend(v)
                alone.whole, alone.multi = False, True
                return [alone]
            return [v]
        pieces: list = []
        cur: Optional[Field] = None
        for ch, off in zip(v.chars, v.offsets):
            if ch.__class__ is str and ch in " \t\n":
                if cur is not None:
                    pieces.append(cur)
                    cur = None
                continue
            if cur is None:
                cur = Field(v.origin)
                cur.whole = False
            cur.chars.append(ch)
            cur.offsets.append(off)
        if cur is not None:
            pieces.append(cur)
        for piece in pieces:
            if len(piece.chars) == 1 and piece.chars[0].__class__ is Hole:
                piece.multi = True
        return pieces
