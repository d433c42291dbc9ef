"""Bash's lexical layer for launch scripts (``config.shell``): words, quotes, ``$``-expressions, positions.

A word is a list of parts, each keeping the file offset of every character it holds:
``("lit", text, offsets[, "q"])`` (``"q"``: written inside quotes), ``("var", NAME, start, end, quoted, None,
None)`` (NAME also ``1``, ``@``, ``*``, ``#``: the positional parameters), ``("brace", BODY, start, end, quoted)`` for ``${BODY}``, and ``("unknown", TEXT, start, end,
quoted)`` for what is never evaluated here, ``("arith", EXPR, start, end, quoted)`` for ``$((EXPR))`` (``$(...)``, backticks, ``$1``, ``$'...'`` with escapes).
Backslash-newline continuations vanish as bash removes them; comments and here-document bodies are
skipped by the command reader with ``end_of_line`` / ``heredoc`` / ``skip_heredocs``.
"""

from __future__ import annotations

import re
from bisect import bisect_right

TYPE_CHECKING = False  # the typing module costs ~2.5 ms of start-up; annotations here are strings (PEP 563)
if TYPE_CHECKING:
    from typing import Optional

from overlap_cli.problems import InputError, InputProblem

NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
# A word ends at a blank or at one of bash's operator characters.
WORD_END = " \t\r\n;&|<>()"


class Word:
    """A word as written: its parts, and where it starts and ends in the text."""

    __slots__ = ("parts", "start", "end", "origin")

    def __init__(self, parts: list, start: int, end: int):
        self.parts, self.start, self.end = parts, start, end
        # set on a word that stands for part of a variable's value (``$LAUNCHER``): where it was written
        self.origin = None

    def literal_text(self) -> Optional[str]:
        """The word's text when it has no expansion at all."""
        if all(p[0] == "lit" for p in self.parts):
            return "".join(p[1] for p in self.parts)
        return None


class Lexer:
    def __init__(self, path: str, text: str):
        self.path, self.text = path, text
        self.n = len(text)
        self.line_starts = [0] + [m.end() for m in re.finditer("\n", text)]
        self.heredocs: list = []

    # --- positions ---------------------------------------------------------------------------------

    def pos(self, offset: int) -> tuple:
        line = bisect_right(self.line_starts, offset)
        return line, offset - self.line_starts[line - 1] + 1

    def fail(self, msg: str, offset: Optional[int] = None, key: Optional[str] = None) -> InputError:
        line, col = self.pos(offset) if offset is not None else (None, None)
        return InputError(InputProblem(self.path, msg, key=key, line=line, column=col))

    # --- lexing ------------------------------------------------------------------------------------

    def skip_blanks(self, i: int) -> int:
        text, n = self.text, self.n
        while i < n:
            c = text[i]
            if c in " \t\r":
                i += 1
            elif c == "\\" and i + 1 < n and text[i + 1] == "\n":
                i += 2
            else:
                break
        return i

    def read_word(self, i: int) -> tuple:
        """(Word, next offset) for the word starting at i (not blank, not an operator)."""
        text, n = self.text, self.n
        parts: list = []
        start = i
        while i < n:
            c = text[i]
            if c in " \t\r\n;&|<>()":
                if c in "<>(" and parts and parts[-1][0] == "lit" and False:
                    pass
                break
            if c == "\\":
                if i + 1 < n and text[i + 1] == "\n":
                    i += 2  # continuation: the two characters vanish, the word goes on
                    continue
                if i + 1 < n:
                    parts.append(("lit", text[i + 1], [i + 1]))
                    i += 2
                    continue
                i += 1
                continue
            if c == "'":
                end = text.find("'", i + 1)
                if end < 0:
                    raise self.fail("unterminated single quote", i)
                parts.append(("lit", text[i + 1:end], list(range(i + 1, end)), "q"))
                i = end + 1
                continue
            if c == "$" and i + 1 < n and text[i + 1] == "'":  # $'...' (ANSI-C): taken as written
                end = text.find("'", i + 2)
                if end < 0:
                    raise self.fail("unterminated $'...' quote", i)
                body = text[i + 2:end]
                if "\\" in body:
                    parts.append(("unknown", "$'" + body + "'", i, end + 1, True))
                else:
                    parts.append(("lit", body, list(range(i + 2, end)), "q"))
                i = end + 1
                continue
            if c == '"':
                i = self.read_double(i + 1, parts)
                continue
            if c == "$":
                i = self.read_dollar(i, parts, quoted=False)
                continue
            if c == "`":
                end = self.find_backtick(i)
                parts.append(("unknown", text[i:end], i, end, False))
                i = end
                continue
            # an ordinary character; literal runs are kept as one part
            j = i + 1
            while j < n and text[j] not in " \t\r\n;&|<>()\\'\"$`":
                j += 1
            parts.append(("lit", text[i:j], list(range(i, j))))
            i = j
        return Word(parts, start, i), i

    def find_backtick(self, i: int) -> int:
        j = i + 1
        while j < self.n:
            if self.text[j] == "\\":
                j += 2
                continue
            if self.text[j] == "`":
                return j + 1
            j += 1
        raise self.fail("unterminated backtick command substitution", i)

    def read_double(self, i: int, parts: list) -> int:
        """Parts of a double-quoted string from i (after the quote); returns the offset after the closing quote."""
        text, n = self.text, self.n
        opening = i - 1
        buf, offs = [], []
        count = len(parts)

        def flush():
            if buf:
                parts.append(("lit", "".join(buf), list(offs), "q"))
            buf.clear()
            offs.clear()

        while i < n:
            c = text[i]
            if c == '"':
                flush()
                if len(parts) == count:  # "": an empty word still is a word
                    parts.append(("lit", "", [], "q"))
                return i + 1
            if c == "\\" and i + 1 < n:
                nxt = text[i + 1]
                if nxt == "\n":
                    i += 2
                    continue
                if nxt in '$`"\\':
                    buf.append(nxt)
                    offs.append(i + 1)
                    i += 2
                    continue
                buf.append(c)
                offs.append(i)
                i += 1
                continue
            if c == "$":
                flush()
                i = self.read_dollar(i, parts, quoted=True)
                continue
            if c == "`":
                flush()
                end = self.find_backtick(i)
                parts.append(("unknown", text[i:end], i, end, True))
                i = end
                continue
            buf.append(c)
            offs.append(i)
            i += 1
        raise self.fail("unterminated double quote", opening)

    def matching(self, i: int, open_c: str, close_c: str) -> int:
        """Offset after the bracket closing the one at i, skipping quoted text."""
        text, n = self.text, self.n
        depth, j = 0, i
        while j < n:
            c = text[j]
            if c == "\\":
                j += 2
                continue
            if c == "'" :
                k = text.find("'", j + 1)
                j = (k + 1) if k >= 0 else n
                continue
            if c == '"':
                k = j + 1
                while k < n and text[k] != '"':
                    k += 2 if text[k] == "\\" else 1
                j = k + 1
                continue
            if c == open_c:
                depth += 1
            elif c == close_c:
                depth -= 1
                if depth == 0:
                    return j + 1
            j += 1
        raise self.fail(f"unterminated {open_c}", i)

    def read_dollar(self, i: int, parts: list, quoted: bool) -> int:
        text, n = self.text, self.n
        nxt = text[i + 1] if i + 1 < n else ""
        if nxt == "(":
            end = self.matching(i + 1, "(", ")")
            if text.startswith("((", i + 1) and text.endswith("))", 0, end):  # $(( arithmetic ))
                parts.append(("arith", text[i + 3:end - 2], i, end, quoted))
            else:
                parts.append(("unknown", text[i:end], i, end, quoted))
            return end
        if nxt == "{":
            end = self.matching(i + 1, "{", "}")
            parts.append(("brace", text[i + 2:end - 1], i, end, quoted))
            return end
        m = NAME.match(text, i + 1)
        if m:
            parts.append(("var", m.group(0), i, m.end(), quoted, None, None))
            return m.end()
        if nxt and (nxt.isdigit() or nxt in "@*#"):  # $1, "$@", $#: the positional parameters
            parts.append(("var", nxt, i, i + 2, quoted, None, None))
            return i + 2
        if nxt and nxt in "?$!-":
            parts.append(("unknown", text[i:i + 2], i, i + 2, quoted))
            return i + 2
        parts.append(("lit", "$", [i]) + (("q",) if quoted else ()))
        return i + 1

    # --- commands ----------------------------------------------------------------------------------

    def end_of_line(self, i: int) -> int:
        j = self.text.find("\n", i)
        return self.n if j < 0 else j

    def heredoc(self, i: int) -> tuple:
        """(the offset after ``<<[-]WORD``, the list its body's Word is put in when the body is read)."""
        strip = i < self.n and self.text[i] == "-"
        if strip:
            i += 1
        i = self.skip_blanks(i)
        word, j = self.read_word(i)
        delim = "".join(p[1] for p in word.parts if p[0] == "lit")
        # any quoting of the delimiter: the body is taken as written, nothing expanded (bash)
        quoted = any(len(p) > 3 for p in word.parts if p[0] == "lit") or "\\" in self.text[i:j]
        holder: list = []
        self.heredocs.append((delim, strip, quoted, holder))
        return j, holder

    def skip_heredocs(self, i: int) -> int:
        while self.heredocs:
            delim, strip, quoted, holder = self.heredocs.pop(0)
            parts: list = []
            while i < self.n:
                end = self.end_of_line(i)
                line = self.text[i:end]
                if (line.lstrip("\t") if strip else line) == delim:
                    i = end + 1
                    break
                start = i
                while strip and start < end and self.text[start] == "\t":
                    start += 1
                stop = min(end + 1, self.n)
                if quoted:
                    parts.append(("lit", self.text[start:stop], list(range(start, stop)), "q"))
                else:
                    mark = len(parts)
                    try:
                        self.read_heredoc_line(start, stop, parts)
                    except InputError:  # an expansion that goes on past the line: the line is not known
                        del parts[mark:]
                        parts.append(("unknown", self.text[start:stop], start, stop, True))
                i = end + 1
            holder.append(Word(parts or [("lit", "", [], "q")], i, i))
        return i

    def read_heredoc_line(self, i: int, end: int, parts: list) -> None:
        """A line of a here-document whose delimiter is not quoted: expansions as in a double-quoted string,
        but a quote is a character, and a backslash escapes only ``$``, `````, ``\\`` and the newline."""
        text = self.text
        buf, offs = [], []

        def flush():
            if buf:
                parts.append(("lit", "".join(buf), list(offs), "q"))
            buf.clear()
            offs.clear()

        saved = self.n
        self.n = end
        try:
            while i < end:
                c = text[i]
                if c == "\\" and i + 1 < end and text[i + 1] in "$`\\\n":
                    if text[i + 1] != "\n":
                        buf.append(text[i + 1])
                        offs.append(i + 1)
                    i += 2
                    continue
                if c == "$":
                    flush()
                    i = self.read_dollar(i, parts, quoted=True)
                    continue
                if c == "`":
                    flush()
                    close = self.find_backtick(i)
                    parts.append(("unknown", text[i:close], i, close, True))
                    i = close
                    continue
                buf.append(c)
                offs.append(i)
                i += 1
            flush()
        finally:
            self.n = saved

    def read_default(self, start: int, end: int) -> tuple:
        """The default word of ${VAR:-word}: text between start and end, read as a double-quoted-like word."""
        saved = self.n
        self.n = end
        try:
            parts: list = []
            i = start
            while i < end:
                c = self.text[i]
                if c == "$":
                    i = self.read_dollar(i, parts, quoted=False)
                elif c == '"':
                    i = self.read_double(i + 1, parts)
                elif c == "'":
                    j = self.text.find("'", i + 1, end)
                    j = end if j < 0 else j
                    parts.append(("lit", self.text[i + 1:j], list(range(i + 1, j)), "q"))
                    i = j + 1
                else:
                    j = i + 1
                    while j < end and self.text[j] not in "$\"'":
                        j += 1
                    parts.append(("lit", self.text[i:j], list(range(i, j))))
                    i = j
            return Word(parts, start, end), end
        finally:
            self.n = saved

