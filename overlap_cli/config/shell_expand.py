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

# $(cat <<'EOF' \n BODY \n EOF): a quoted delimiter (nothing in BODY expands), the delimiter alone on its line
_CAT_HEREDOC = re.compile(r"\$\(\s*cat\s*<<\s*(['\"])(\w+)\1[ \t]*\n(.*?\n)\2[ \t]*\n?\s*\)\Z", re.DOTALL)


class Hole:
    """A stretch of a word that is not known statically (``$CKPT``, ``$(nproc)``). ``constant``: it is a
    variable the script never sets (the caller's environment, or the script's own arguments), which has
    the same value wherever the script reads it; ``$(...)`` and script-assigned unknowns are not."""

    __slots__ = ("what", "constant")

    def __init__(self, what: str, constant: bool = False):
        self.what, self.constant = what, constant


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

    def hole(self, what: str, constant: bool = False) -> None:
        self.chars.append(Hole(what, constant))
        self.offsets.append(None)
        self.whole = False
        self.word = None

    def extend(self, other: "Field") -> None:
        self.chars.extend(other.chars)
        self.offsets.extend(other.offsets)


class Var:
    """A variable the script sets. Treated as immutable once stored: the evaluator's paths share them."""

    __slots__ = ("name", "fields", "array", "line", "exported", "export_line", "export_col", "span", "note", "unset",
                 "_signature")

    def __init__(self, name: str, fields: list, array: bool, line: int):
        self.name, self.fields, self.array, self.line = name, fields, array, line
        self.exported = False
        self.export_line = self.export_col = None
        self.span = None
        self.note = ""  # why the value is not known, when it is not
        self.unset = False  # ``unset NAME``: known to be unset (not the caller's value)
        self._signature: Optional[tuple] = None

    def copy(self) -> "Var":
        v = Var(self.name, self.fields, self.array, self.line)
        v.exported, v.export_line, v.export_col = self.exported, self.export_line, self.export_col
        v.span, v.note, v.unset = self.span, self.note, self.unset
        return v

    def signature(self) -> tuple:
        """What the value is, wherever it was written (two paths that set the same value agree). Computed
        once: a Var is not changed after it is stored."""
        if self._signature is None:
            self._signature = (self.array, self.exported, self.note, self.unset,
                               tuple(field_signature(f) for f in self.fields))
        return self._signature


def field_signature(f: Field) -> tuple:
    return tuple(c if c.__class__ is str else ("?", c.what) for c in f.chars)


class Expander(Lexer):
    def __init__(self, path: str, text: str):
        super().__init__(path, text)
        self.vars: dict = {}  # the current path's variables (config.shell binds each path's in turn)
        self.unknowns: list = []  # the current path's sentences
        self.positional: Optional[list] = None  # $1 ... inside a function call; None: the script's own
        # ${VAR:-default} of a variable the script never sets: the default (with a sentence), or, False, not
        # known (the second reading that finds which printed values the caller's environment can change)
        self.take_defaults = True
        self.defaults_taken = 0
        self.empty_placeholders = False  # NAME="" read as a value to fill in (a second reading of a template)
        self.placeholders: list = []  # the sentences of the placeholders met (shell_commands.placeholder)
        # the line of a ``source`` whose file is not read: any variable the script has not set since may
        # come from it (not the caller's environment, not a default)
        self.sourced: Optional[int] = None

    def span(self, start: int, end: int) -> Optional[tuple]:
        l1, c1 = self.pos(start)
        l2, c2 = self.pos(end)
        return (l1, c1, c2) if l1 == l2 else None

    def set_unknown(self, name: str, offset: int, note: str) -> None:
        line = self.pos(offset)[0]
        f = Field(variable_origin(name, line))
        f.hole("$" + name)
        var = Var(name, [f], False, line)
        var.note = note
        self.vars[name] = var

    def lookup(self, name: str) -> Optional[Var]:
        """The variable NAME, a positional parameter of the function being called, or None (not set by the
        script: the caller's environment, or the script's own arguments)."""
        if name.isdigit() or name in ("@", "*", "#"):
            args = self.positional
            if args is None:
                return None
            if name in ("@", "*"):
                return Var(name, list(args), True, 0)
            if name == "#":
                f = Field("")
                f.chars, f.offsets = list(str(len(args))), [None] * len(str(len(args)))
                return Var(name, [f], False, 0)
            i = int(name)
            if i == 0:
                return None
            if i > len(args):
                v = Var(name, [], False, 0)
                v.unset = True
                return v
            return Var(name, [args[i - 1]], False, 0)
        return self.vars.get(name)

    def note_unknown_var(self, name: str, offset: int, expr: str) -> None:
        line = self.pos(offset)[0]
        var = self.lookup(name)
        if var is not None and var.note:
            why = var.note
        elif name.isdigit() or name in ("@", "*", "#"):
            why = f"${name} is {'an argument' if name.isdigit() else 'the arguments'} the script is run with, not known statically"
        else:
            why = f"${name} is not set in the script (it comes from the environment)"
        sentence = f"line {line}: {why}" if expr == "$" + name else f"line {line}: {expr}: {why}"
        if sentence not in self.unknowns:
            self.unknowns.append(sentence)

    def values_of(self, part, origin: str) -> tuple:
        """(fields, unknown expression or None, is_array_all, the unknown is a constant) for a var/brace part."""
        kind = part[0]
        start = part[2]
        if kind == "var":
            name, index, op, default = part[1], None, None, None
            expr = "$" + name
        else:
            body = part[1]
            expr = "${" + body + "}"
            m = re.fullmatch(r"([A-Za-z_][A-Za-z0-9_]*|\d+|[@*#])(?:\[([^\]]+)\])?(?:(:?[-=+])(.*))?", body, re.S)
            if not m:
                return None, expr, False, False
            name, index, op, default = m.group(1), m.group(2), m.group(3), m.group(4)
        var = self.lookup(name)
        if var is None and self.sourced is not None and not (name.isdigit() or name in ("@", "*", "#")):
            line = self.pos(start)[0]
            sentence = f"line {line}: {expr}: ${name} may be set by the file sourced on line {self.sourced}"
            if sentence not in self.unknowns:
                self.unknowns.append(sentence)
            return None, expr, False, False
        every = name in ("@", "*")  # the parameters: all of them
        if every:
            index = name
        constant = var is None  # the caller's environment or the script's arguments: one value throughout
        known = var is not None and not var.note
        unset = var is not None and var.unset
        if op:
            if op in (":-", "-", ":=", "="):
                empty = var is None or unset or (op.startswith(":") and known and (
                    not var.fields or (not var.array and var.fields[0].text == "")))
                if var is not None and not known:
                    self.note_unknown_var(name, start, expr)
                    return None, expr, False, False
                if var is None and not self.take_defaults:
                    self.note_unknown_var(name, start, expr)
                    return None, expr, False, True
                if not empty:
                    return list(var.fields if index in ("@", "*") else var.fields[:1]), None, index == "@", False
                # the default: a word of its own, expanded in place (offsets inside the ${...})
                if var is None:
                    line = self.pos(start)[0]
                    who = f"the script is run with argument {name}" if name.isdigit() else f"the environment sets {name}"
                    sentence = f"line {line}: {expr} is {self.default_text(part, default)!r} unless {who}"
                    if sentence not in self.unknowns:
                        self.unknowns.append(sentence)
                    self.defaults_taken += 1
                offset = part[3] - 1 - len(default)
                word, _ = self.read_default(offset, part[3] - 1)
                fields = self.expand(word, origin, split=False, keep_empty=True)
                if op in (":=", "=") and not name.isdigit():
                    line = self.pos(start)[0]
                    self.vars[name] = Var(name, [self.join(fields, variable_origin(name, line))], False, line)
                return fields, None, False, False
            return None, expr, False, False  # ${VAR:+alt} and the like: not followed
        if unset:
            return [], None, False, False
        if var is None or not known:
            self.note_unknown_var(name, start, expr)
            return None, expr, False, constant
        if index is None:
            return list(var.fields[:1]), None, False, False
        if index in ("@", "*"):
            return list(var.fields), None, index == "@", False
        if index.isdigit():
            i = int(index)
            return (list(var.fields[i:i + 1]) if var.array else (list(var.fields) if i == 0 else [])), None, False, False
        return None, expr, False, False

    def default_text(self, part, default: str) -> str:
        """The default of ``${VAR:-default}`` as bash gives it (quotes removed), for a sentence."""
        offset = part[3] - 1 - len(default)
        word, _ = self.read_default(offset, part[3] - 1)
        saved = self.unknowns
        self.unknowns = []
        try:
            f = self.join(self.expand(word, "", split=False, keep_empty=True), "")
        finally:
            self.unknowns = saved
        return f.text if f.text is not None else default


    def arithmetic(self, expr: str) -> Optional[int]:
        """``$((expr))`` with bash's operators (config.shell_arith) over the integers the script states;
        None when a variable is not known statically, for an error, or when it assigns a variable."""
        from overlap_cli.config.shell_arith import evaluate

        value, assigned, _ok = evaluate(expr, self.arith_lookup)
        if assigned:  # $((i++)) inside a word: not followed (the variable is unknown from here on)
            for name in assigned:
                self.set_unknown(name, 0, f"${name} is assigned inside a $((...)) expansion")
            return None
        return value

    def arith_lookup(self, name: str) -> Optional[str]:
        """A variable's text for arithmetic: None when not known statically (or not set by the script)."""
        var = self.lookup(name)
        if var is None or var.note:
            return None
        if var.unset or not var.fields:
            return ""
        return var.fields[0].text

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
        all_words = False  # an unknown "$@" / "${ARR[@]}": any number of words even when quoted
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
            body = self.cat_heredoc(part) if kind == "unknown" else None
            if body is not None:  # $(cat <<'EOF' ... EOF): the here-document's text, as written
                values, expr, array_all, constant = [body], part[1], False, False
            elif kind == "unknown":
                cur.hole(part[1])
                started = True
                # $((...)) is one integer: never more than one word
                only_unquoted_unknown = only_unquoted_unknown and not quoted and part[1][:3] != "$(("
                sentence = f"line {self.pos(part[2])[0]}: {part[1]} is not known statically"
                if sentence not in self.unknowns:
                    self.unknowns.append(sentence)
                continue
            else:
                values, expr, array_all, constant = self.values_of(part, origin)
            if values is None:
                cur.hole(expr, constant)
                if part[1] in ("@", "*") or (part[0] == "brace" and re.search(r"\[[@*]\]$", part[1])):
                    all_words = True  # "$@", "${ARR[@]}": any number of words, quoted or not
                started = True
                only_unquoted_unknown = only_unquoted_unknown and not quoted
                continue
            only_unquoted_unknown = False
            if not split and len(values) > 1:  # an assignment's value: bash joins the elements with a blank
                self.append_field(cur, self.join_with_space(values, origin), False)
                started = True
                continue
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
        if split and len(out) == 1 and out[0].unknown and (only_unquoted_unknown or (all_words and len(word.parts) == 1)):
            out[0].multi = True
        if not out and not split:
            out.append(Field(origin))
        for f in out:
            if f.word is word and not all(p[0] == "lit" for p in word.parts):
                f.word = None
            if word.origin is not None:  # a word made from a variable's value: not literal where it is used
                f.word, f.whole, f.origin = None, False, word.origin
        return out

    def cat_heredoc(self, part: tuple) -> Optional[Field]:
        """``$(cat <<'EOF' ... EOF)`` with a quoted delimiter: cat prints the here-document as written, and the
        command substitution drops its trailing newlines. Any other command substitution: None."""
        m = _CAT_HEREDOC.match(part[1])
        if m is None or len(part) < 4 or part[2] is None:
            return None
        body = m.group(3)
        start = part[2] + m.start(3)
        stripped = body.rstrip("\n")
        f = Field("here-document")
        f.chars = list(stripped)
        f.offsets = list(range(start, start + len(stripped)))
        f.whole = False
        return f

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
