"""A launch script's command tree, as bash's parser builds it (``config.shell`` evaluates it; nothing runs).

Tokens come from ``shell_lex`` words plus bash's operators. Redirections are dropped with their target
(``2>&1``, ``> log``, ``<<EOF`` whose body is skipped, ``<<< word``); a process substitution ``<(cmd)`` is
a word never evaluated; ``NAME=( ... )`` is one array-assignment token. ``((expr))`` in command position
is an arithmetic command and ``[[ ... ]]`` a conditional expression whose operators are words.

The grammar is bash's: a list is and-or lists separated by ``;``, ``&`` or newlines; an and-or list is
pipelines joined by ``&&`` / ``||``; a pipeline is commands joined by ``|`` (``!`` negates it); a command
is simple (assignments, then words) or compound: ``if``/``elif``/``else``, ``case`` (``;;``, ``;&``,
``;;&``), ``for NAME [in WORDS]``, ``for ((;;))``, ``while``/``until``, ``{ }``, ``( )``, ``((...))``,
``[[ ... ]]``, and function definitions (``name() { }``, ``function name { }``). A reserved word counts
only where a command starts, as in bash. What bash refuses to parse is one line with its place.
"""

from __future__ import annotations

TYPE_CHECKING = False  # the typing module costs ~2.5 ms of start-up; annotations here are strings (PEP 563)
if TYPE_CHECKING:
    from typing import Optional

from overlap_cli.config.shell_lex import Lexer, Word
from overlap_cli.config.shell_tree import Simple, Seq, AndOr, Pipeline, If, Case, For, Loop, Group, Function, Arith, Test

import re

# Reserved words that close or continue a compound command: where a command starts, bash refuses them
# ("syntax error near unexpected token `fi'"); a quoted one ("fi") is an ordinary word.
_CLOSING_WORDS = frozenset(("fi", "done", "esac", "then", "do", "else", "elif", "}"))
_ASSIGN = re.compile(r"([A-Za-z_][A-Za-z0-9_]*)(\[[^\]]*\])?(\+?=)")
_OPERATORS = (";;&", "&&", "||", ";;", ";&", "|&", ">>", "<<", "&>", ">&", "<&", "<>", ">|", ";", "&", "|", "<", ">",
              "(", ")")
_OPERATOR_STARTS = frozenset("".join(_OPERATORS))  # a word starts with none of these: no operator to look for
_REDIRECTIONS = frozenset(("<", ">", ">>", "&>", ">&", "<&", "<>", ">|"))
# Reserved words after which a command still starts (``then ((i++))``, ``! [[ ... ]]``).
_COMMAND_PREFIXES = frozenset(("if", "then", "else", "elif", "do", "while", "until", "{", "!", "time", "for"))
_TEST_OPERATORS = ("&&", "||", "(", ")", "<", ">", "!", ";", "&", "|")


# --- tokens and the parser --------------------------------------------------------------------------


class Parser(Lexer):
    def __init__(self, path: str, text: str):
        super().__init__(path, text)
        self.i = 0
        self.at_start = True  # the next token is where a command starts
        self.in_test = False  # inside [[ ... ]]
        self.ahead: Optional[tuple] = None
        self.depth = 0
        self.heredoc_holders: list = []  # per ``<<`` met, the list its body's Word goes in (Lexer.heredoc)

    # tokens: ("w", Word) | ("a", ("array", Word, elements, end)) | ("op", OP, offset) | ("arith", EXPR, start, end)
    # | ("eof", offset)

    def peek(self) -> tuple:
        if self.ahead is None:
            self.ahead = self.read_token()
        return self.ahead

    def take(self) -> tuple:
        tok = self.peek()
        self.ahead = None
        return tok

    def read_token(self) -> tuple:
        text, n = self.text, self.n
        while True:
            i = self.skip_blanks(self.i)
            if i >= n:
                self.i = n
                return ("eof", n)
            c = text[i]
            if c == "#":
                self.i = self.end_of_line(i)
                continue
            if c == "\n":
                self.i = self.skip_heredocs(i + 1)
                if self.in_test:
                    continue
                self.at_start = True
                return ("op", "\n", i)
            if self.in_test:
                return self.test_token(i)
            if c == "(" and self.at_start and text.startswith("((", i):
                end = self.arith_end(i)
                if end is not None:
                    self.i, self.at_start = end, False
                    return ("arith", text[i + 2:end - 2], i, end)
            op = next((o for o in _OPERATORS if text.startswith(o, i)), None) if c in _OPERATOR_STARTS else None
            if op in ("<", ">") and text.startswith("(", i + 1):  # <(cmd): a word, never run
                end = self.matching(i + 1, "(", ")")
                self.i, self.at_start = end, False
                return ("w", Word([("unknown", text[i:end], i, end, False)], i, end))
            if op == "<<" and text.startswith("<<<", i):  # a here-string: it and its word are dropped
                self.i = self.after_target(i + 3)
                continue
            if op == "<<":
                self.i, holder = self.heredoc(i + 2)
                self.heredoc_holders.append(holder)
                continue
            if op in _REDIRECTIONS:
                self.i = self.after_target(i + len(op))
                continue
            if op is not None:
                self.i = i + len(op)
                self.at_start = True
                return ("op", op, i)
            word, j = self.read_word(i)
            if j < n and text[j] in "<>" and (word.literal_text() or "").isdigit():
                self.i = j  # 2>&1: the fd number belongs to the redirection
                continue
            if j < n and text[j] == "(":
                lit = word.literal_text()
                m = _ASSIGN.fullmatch(lit) if lit is not None else None
                if m and not m.group(2):
                    elements, j = self.read_array(j + 1, word)
                    self.i, self.at_start = j, False
                    return ("a", ("array", word, elements, j))
            self.i = j
            lit = word.literal_text()
            if self.at_start and lit == "[[":
                self.in_test = True
            self.at_start = self.at_start and lit in _COMMAND_PREFIXES
            return ("w", word)

    def after_target(self, j: int) -> int:
        text, n = self.text, self.n
        j = self.skip_blanks(j)
        if text.startswith(("<(", ">("), j):
            return self.matching(j + 1, "(", ")")
        if j < n and text[j] not in "\n;&|()<>":
            _, j = self.read_word(j)
        return j

    def arith_end(self, i: int) -> Optional[int]:
        """The offset after the ``))`` closing ``((`` at i, when the two parentheses close together."""
        try:
            end = self.matching(i, "(", ")")
        except Exception:
            return None
        inner = self.matching(i + 1, "(", ")") if i + 1 < end else end
        return end if inner == end - 1 else None

    def test_token(self, i: int) -> tuple:
        text = self.text
        op = next((o for o in _TEST_OPERATORS if text.startswith(o, i)), None)
        if op is not None:
            self.i = i + len(op)
            return ("w", Word([("lit", op, list(range(i, i + len(op))))], i, i + len(op)))
        word, j = self.read_word(i)
        self.i = j
        if word.literal_text() == "]]":
            self.in_test = False
            self.at_start = False
        return ("w", word)

    def read_array(self, i: int, word: Word) -> tuple:
        """Elements of NAME=( ... ) from i (after the parenthesis) and the offset after it."""
        text, n = self.text, self.n
        elements: list = []
        while True:
            while i < n and (text[i] in " \t\r\n" or text.startswith("\\\n", i)):
                i += 2 if text[i] == "\\" else 1
            if i >= n:
                raise self.fail("unterminated array (no closing parenthesis)", word.start)
            c = text[i]
            if c == ")":
                return elements, i + 1
            if c == "#":
                i = self.end_of_line(i)
                continue
            if c in ";&|<>(":
                raise self.fail(f"unexpected {c!r} inside an array assignment", i)
            element, i = self.read_word(i)
            elements.append(element)

    # --- the grammar ----------------------------------------------------------------------------

    def parse(self) -> Seq:
        seq = self.parse_list(frozenset(), frozenset())
        tok = self.peek()
        if tok[0] != "eof":
            raise self.unexpected(tok)
        return seq

    def unexpected(self, tok: tuple, wanted: str = ""):
        if tok[0] == "eof":
            return self.fail("syntax error: unexpected end of file" + (f" ({wanted})" if wanted else ""), max(self.n - 1, 0))
        what, at = self.describe(tok)
        return self.fail(f"syntax error near unexpected token {what!r}" + (f" ({wanted})" if wanted else ""), at)

    @staticmethod
    def describe(tok: tuple) -> tuple:
        if tok[0] == "op":
            return ("newline" if tok[1] == "\n" else tok[1]), tok[2]
        if tok[0] == "arith":
            return "((", tok[2]
        word = tok[1] if tok[0] == "w" else tok[1][1]
        return (word.literal_text() or "word"), word.start

    def keyword(self, tok: tuple) -> Optional[str]:
        return tok[1].literal_text() if tok[0] == "w" else None

    def skip_newlines(self) -> None:
        while self.peek()[0] == "op" and self.peek()[1] == "\n":
            self.take()

    def expect_word(self, text: str, opened: str, at: int) -> None:
        self.skip_newlines()
        tok = self.peek()
        if self.keyword(tok) != text:
            raise self.unexpected(tok, f"'{text}' expected for the {opened} on line {self.pos(at)[0]}")
        self.take()

    def start_of(self, tok: tuple) -> int:
        if tok[0] == "w":
            return tok[1].start
        if tok[0] == "a":
            return tok[1][1].start
        return tok[2] if tok[0] in ("op", "arith") else tok[1]

    def parse_list(self, stop_words: frozenset, stop_ops: frozenset) -> Seq:
        self.depth += 1
        if self.depth > 100:
            raise self.fail("commands nested too deeply to read", self.i)
        items: list = []
        start = self.start_of(self.peek())
        while True:
            tok = self.peek()
            while tok[0] == "op" and tok[1] in ("\n", ";"):
                self.take()
                tok = self.peek()
            if tok[0] == "eof" or (tok[0] == "op" and tok[1] in stop_ops) or self.keyword(tok) in stop_words:
                break
            node = self.parse_and_or()
            tok = self.peek()
            background = tok[0] == "op" and tok[1] == "&"
            items.append((node, background))
            if tok[0] == "op" and tok[1] in ("\n", ";", "&"):
                self.take()
                continue
            if tok[0] == "eof" or (tok[0] == "op" and tok[1] in stop_ops) or self.keyword(tok) in stop_words:
                break
            raise self.unexpected(tok)
        self.depth -= 1
        return Seq(items, start, self.pos(start)[0])

    def parse_and_or(self):
        first = self.parse_pipeline()
        rest: list = []
        while self.peek()[0] == "op" and self.peek()[1] in ("&&", "||"):
            op = self.take()[1]
            self.skip_newlines()
            rest.append((op, self.parse_pipeline()))
        return first if not rest else AndOr(first, rest, first.start, first.line)

    def parse_pipeline(self):
        tok = self.peek()
        start = self.start_of(tok)
        negate = False
        while self.keyword(tok) in ("!", "time"):
            negate = negate != (self.keyword(tok) == "!")
            self.take()
            tok = self.peek()
            while self.keyword(tok) in ("-p", "--"):
                self.take()
                tok = self.peek()
        commands = [self.parse_command()]
        while self.peek()[0] == "op" and self.peek()[1] in ("|", "|&"):
            self.take()
            self.skip_newlines()
            commands.append(self.parse_command())
        if len(commands) == 1 and not negate:
            return commands[0]
        return Pipeline(commands, negate, start, self.pos(start)[0])

    def parse_command(self):
        tok = self.peek()
        start = self.start_of(tok)
        line = self.pos(start)[0]
        if tok[0] == "op" and tok[1] == "(":
            self.take()
            body = self.parse_list(frozenset(), frozenset((")",)))
            end = self.take()
            if end[0] != "op" or end[1] != ")":
                raise self.unexpected(end, f"')' expected for the subshell on line {line}")
            return Group(body, True, start, line)
        if tok[0] == "arith":
            self.take()
            return Arith(tok[1], start, line)
        word = self.keyword(tok)
        if word == "if":
            return self.parse_if(start, line)
        if word == "case":
            return self.parse_case(start, line)
        if word in ("for", "select"):
            return self.parse_for(start, line)
        if word in ("while", "until"):
            self.take()
            condition = self.parse_list(frozenset(("do",)), frozenset())
            self.expect_word("do", f"{word} loop", start)
            body = self.parse_list(frozenset(("done",)), frozenset())
            self.expect_word("done", f"{word} loop", start)
            return Loop(condition, body, word == "until", start, line)
        if word == "{":
            self.take()
            body = self.parse_list(frozenset(("}",)), frozenset())
            self.expect_word("}", "{ group", start)
            return Group(body, False, start, line)
        if word == "function":
            self.take()
            name = self.take()
            if name[0] != "w" or not name[1].literal_text():
                raise self.unexpected(name, "a function name expected")
            if self.peek()[0] == "op" and self.peek()[1] == "(":
                self.take()
                close = self.take()
                if close[0] != "op" or close[1] != ")":
                    raise self.unexpected(close)
            self.skip_newlines()
            return Function(name[1].literal_text(), self.parse_command(), start, line)
        if word == "[[":
            self.take()
            words: list = []
            while True:
                t = self.take()
                if t[0] == "eof":
                    raise self.unexpected(t, f"']]' expected for the [[ on line {line}")
                if self.keyword(t) == "]]":
                    return Test(words, start, line, t[1].end)
                words.append(t[1])
        if word in _CLOSING_WORDS and all(len(p) == 3 for p in tok[1].parts):
            raise self.unexpected(tok)  # a stray `fi` / `done` / `esac`: bash's syntax error, the script never runs
        if tok[0] not in ("w", "a"):
            raise self.unexpected(tok)
        return self.parse_simple(start, line)

    def parse_simple(self, start: int, line: int):
        prefix: list = []
        words: list = []
        end = start
        mark = len(self.heredoc_holders)
        while True:
            tok = self.peek()
            if tok[0] == "a":
                self.take()
                (words if words else prefix).append(tok[1])
                end = tok[1][3]
                continue
            if tok[0] != "w":
                break
            self.take()
            w = tok[1]
            end = w.end
            if not words and self.is_assignment(w):
                prefix.append(w)
            else:
                words.append(w)
            nxt = self.peek()
            if nxt[0] == "op" and nxt[1] == "(" and len(words) == 1 and not prefix:
                self.take()
                close = self.take()
                if close[0] != "op" or close[1] != ")":
                    raise self.fail("syntax error near unexpected token '(' (bash would not run this line; quote the "
                                    "word)", nxt[2])
                self.skip_newlines()
                return Function(words[0].literal_text() or "", self.parse_command(), start, line)
        tok = self.peek()
        if tok[0] == "op" and tok[1] == "(":
            raise self.fail("syntax error near unexpected token '(' (bash would not run this line; quote the word)", tok[2])
        if tok[0] == "arith":
            raise self.unexpected(tok)
        node = Simple(prefix, words, start, line, end)
        node.heredocs = self.heredoc_holders[mark:]
        return node

    @staticmethod
    def is_assignment(w: Word) -> bool:
        if not w.parts or w.parts[0][0] != "lit" or len(w.parts[0]) > 3:
            return False
        m = _ASSIGN.match(w.parts[0][1])
        return bool(m) and not m.group(2)

    def parse_if(self, start: int, line: int) -> If:
        self.take()
        clauses: list = []
        otherwise = None
        clause_line = line
        while True:
            condition = self.parse_list(frozenset(("then",)), frozenset())
            self.expect_word("then", "if", start)
            body = self.parse_list(frozenset(("elif", "else", "fi")), frozenset())
            clauses.append((condition, body, clause_line))
            tok = self.peek()
            kw = self.keyword(tok)
            if kw == "elif":
                clause_line = self.pos(tok[1].start)[0]
                self.take()
                continue
            if kw == "else":
                self.take()
                otherwise = self.parse_list(frozenset(("fi",)), frozenset())
            self.expect_word("fi", "if", start)
            return If(clauses, otherwise, start, line)

    def parse_case(self, start: int, line: int) -> Case:
        self.take()
        subject = self.take()
        if subject[0] != "w":
            raise self.unexpected(subject, "a word expected after case")
        self.skip_newlines()
        self.expect_word("in", "case", start)
        items: list = []
        while True:
            tok = self.peek()
            while tok[0] == "op" and tok[1] in ("\n", ";"):
                self.take()
                tok = self.peek()
            if self.keyword(tok) == "esac":
                self.take()
                return Case(subject[1], items, start, line)
            if tok[0] == "op" and tok[1] == "(":
                self.take()
                tok = self.peek()
            item_line = self.pos(self.start_of(tok))[0]
            patterns: list = []
            while True:
                t = self.take()
                if t[0] != "w":
                    raise self.unexpected(t, f"a pattern expected in the case on line {line}")
                patterns.append(t[1])
                sep = self.take()
                if sep[0] == "op" and sep[1] == "|":
                    continue
                if sep[0] == "op" and sep[1] == ")":
                    break
                raise self.unexpected(sep, f"')' expected after a pattern of the case on line {line}")
            body = self.parse_list(frozenset(("esac",)), frozenset((";;", ";&", ";;&")))
            tok = self.peek()
            terminator = ";;"
            if tok[0] == "op" and tok[1] in (";;", ";&", ";;&"):
                terminator = self.take()[1]
            elif self.keyword(tok) != "esac":
                raise self.unexpected(tok, f"'esac' expected for the case on line {line}")
            items.append((patterns, body, terminator, item_line))

    def parse_for(self, start: int, line: int) -> For:
        self.take()
        tok = self.take()
        if tok[0] == "arith":  # for ((init; cond; step))
            parts = tok[1].split(";")
            if len(parts) != 3:
                raise self.fail("syntax error: for (( )) needs three expressions", tok[2])
            self.skip_separator()
            body = self.loop_body(start)
            return For(None, None, body, tuple(p.strip() for p in parts), start, line)
        if tok[0] != "w" or not tok[1].literal_text():
            raise self.unexpected(tok, "a variable name expected after for")
        name = tok[1].literal_text()
        self.skip_newlines()
        words = None
        if self.keyword(self.peek()) == "in":
            self.take()
            words = []
            while self.peek()[0] == "w":
                words.append(self.take()[1])
        self.skip_separator()
        return For(name, words, self.loop_body(start), None, start, line)

    def skip_separator(self) -> None:
        while self.peek()[0] == "op" and self.peek()[1] in ("\n", ";"):
            self.take()

    def loop_body(self, start: int):
        self.skip_newlines()
        if self.keyword(self.peek()) == "{":  # for x in ...; { ...; } (bash accepts a group for do ... done)
            return self.parse_command()
        self.expect_word("do", "for loop", start)
        body = self.parse_list(frozenset(("done",)), frozenset())
        self.expect_word("done", "for loop", start)
        return body


def parse_script(path: str, text: str) -> tuple:
    """(the command tree, the parser, whose positions and lexing the evaluator shares)."""
    parser = Parser(path, text)
    return parser.parse(), parser
