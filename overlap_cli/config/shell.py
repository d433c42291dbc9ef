"""A Megatron-LM launch script, read as bash would read it up to the launch line — parsed, never run.

What is understood: comments, backslash-newline continuations, single and double quotes, backslash
escapes, ``VAR=...`` / ``VAR+=...`` / ``ARR=(...)`` / ``ARR+=(...)`` assignments and ``export`` /
``declare -x`` / ``unset`` in the same script, and the expansions ``$VAR``, ``${VAR}``, ``${ARR[@]}``,
``${ARR[*]}``, ``${ARR[N]}``, ``${VAR:-default}`` / ``${VAR-default}`` / ``${VAR:=default}`` with bash's
word splitting (an unquoted expansion splits on blanks; ``"${ARR[@]}"`` gives one word per element), and
``$((...))`` over integers the script states. Everything else is *unknown*, never guessed: ``$(...)``,
backticks, ``<(...)``, ``$1``/``$@``, other
``${...}`` operators, variables the script does not set (they come from the caller's environment), and
variables set inside an ``if``/``case``/loop/function body once that block is closed (whether it ran is
not known statically). A ``${VAR:-default}`` of a variable the script never sets takes the default, with
a sentence in ``unknowns`` saying the environment may set it.

The launch line is the first simple command that runs ``torchrun``, ``python -m torch.distributed.run``
(or ``.launch``), or ``python[3] ... pretrain_*.py`` — possibly after ``srun [options]``, ``exec``,
``env [NAME=value...]``, ``nohup``, ``time``, ``numactl [options]`` or ``uv run``, or held in a variable
(``$LAUNCHER pretrain_gpt.py``). Its environment is what the script
exports before it plus its ``NAME=value`` prefixes. The world size is torchrun's ``--nproc-per-node`` ×
``--nnodes`` when both are known integers (elastic ``MIN:MAX`` and ``gpu``/``auto`` are unknown), or,
when ``srun`` starts the script itself, its task count (``launchers.srun_world_size``).

Every word keeps the offset of each character in the file, so a flag reached through ``"${ARGS[@]}"`` is
reported at its line in the array, and a word written literally on the launch line can be edited there.
"""

from __future__ import annotations

import re

TYPE_CHECKING = False  # the typing module costs ~2.5 ms of start-up; annotations here are strings (PEP 563)
if TYPE_CHECKING:
    from typing import Optional

from overlap_cli.check.results import InputError, InputProblem
from overlap_cli.config.argv import LAUNCH_LINE, UNKNOWN, EnvVar, LaunchText, Token, variable_origin
from overlap_cli.config.launchers import LaunchFinder, srun_world_size, torchrun_options
from overlap_cli.config.shell_expand import Expander, Field, Var
from overlap_cli.config.shell_lex import NAME, Word

SHELL_SUFFIXES = (".sh", ".bash", ".slurm", ".sbatch")

_ASSIGN = re.compile(r"([A-Za-z_][A-Za-z0-9_]*)(\[[^\]]*\])?(\+?=)")
_OPERATORS = ("&&", "||", ";;", "|&", ">>", "<<", "&>", ">&", "<&", "<>", ">|", ";", "&", "|", "<", ">", "(", ")")
_OPEN_BLOCK = frozenset(("if", "for", "while", "until", "case", "select", "{", "function"))
_CLOSE_BLOCK = frozenset(("fi", "done", "esac", "}"))
_KEYWORDS = frozenset(("then", "else", "elif", "do", "in", "!", "[[", "]]", "time", "coproc"))


class Reader(Expander, LaunchFinder):
    def __init__(self, path: str, text: str):
        super().__init__(path, text)
        self.next_block = 0
        self.case_depth = 0
        self.launch: Optional[dict] = None
        self.extra_launches: list = []

    # --- commands ----------------------------------------------------------------------------------

    def run(self) -> None:
        i = 0
        text, n = self.text, self.n
        words: list = []
        while i < n:
            i = self.skip_blanks(i)
            if i >= n:
                break
            c = text[i]
            if c == "#" and not words:
                i = self.end_of_line(i)
                continue
            if c == "#" and text[i - 1] in " \t\n;":
                i = self.end_of_line(i)
                continue
            if c == "\n":
                self.command(words)
                words = []
                i = self.skip_heredocs(i + 1)
                continue
            op = next((o for o in _OPERATORS if text.startswith(o, i)), None)
            if op is not None and c in "()<>" and self.in_test(words):
                i += 1  # inside [[ ... ]]: grouping and comparison, not a subshell or a redirection
                continue
            if op is not None:
                if op in ("<", ">") and text.startswith("(", i + 1):  # <(cmd): process substitution, a word never run
                    end = self.matching(i + 1, "(", ")")
                    words.append(Word([("unknown", text[i:end], i, end, False)], i, end))
                    i = end
                    continue
                if op in ("<<",):
                    i = self.heredoc(i + 2)
                    continue
                if op in ("<", ">", ">>", "&>", ">&", "<&", "<>", ">|"):
                    # a redirection: drop it and its target (a preceding fd number was read as a word)
                    if words and isinstance(words[-1], Word) and (words[-1].literal_text() or "").isdigit() and words[-1].end == i:
                        words.pop()
                    j = self.skip_blanks(i + len(op))
                    if text.startswith(("<(", ">("), j):
                        j = self.matching(j + 1, "(", ")")
                    elif j < n and text[j] not in "\n;&|":
                        _, j = self.read_word(j)
                    i = j
                    continue
                if op == "(" and words and isinstance(words[-1], Word) and words[-1].end == i:
                    assign = self.array_start(words[-1])
                    if assign:
                        i = self.read_array(i + 1, words.pop(), words)
                        continue
                if op == "(" and len(words) >= 1 and text.startswith("()", i):
                    i += 2  # name() { ... }: a function definition
                    words = []
                    continue
                if op == "(" and words and not (self.case_depth and self.blocks and self.blocks[-1][0] == "case"):
                    raise self.fail("syntax error near unexpected token '(' (bash would not run this line; quote the word)", i)
                self.command(words)
                words = []
                if op == "(":
                    self.open_block("(", i)
                elif op == ")":
                    if self.case_depth and self.blocks and self.blocks[-1][0] == "case":
                        pass  # a case pattern's closing parenthesis
                    else:
                        self.close_block(")")
                i += len(op)
                continue
            word, i = self.read_word(i)
            words.append(word)
        self.command(words)

    @staticmethod
    def in_test(words: list) -> bool:
        """The command so far opens a [[ ... ]] test that is not closed yet."""
        state = False
        for w in words:
            t = w.literal_text() if isinstance(w, Word) else None
            if t == "[[":
                state = True
            elif t == "]]":
                state = False
        return state

    def array_start(self, word: Word) -> Optional[tuple]:
        text = word.literal_text()
        if text is None:
            return None
        m = _ASSIGN.fullmatch(text)
        return (m.group(1), m.group(3)) if m and not m.group(2) else None

    def read_array(self, i: int, word: Word, words: list) -> int:
        """Elements of NAME=( ... ) from i (after the parenthesis); the assignment joins the command's words."""
        text, n = self.text, self.n
        elements: list = []
        while True:
            while i < n and (text[i] in " \t\r\n" or text.startswith("\\\n", i)):
                i += 2 if text[i] == "\\" else 1
            if i >= n:
                raise self.fail("unterminated array (no closing parenthesis)", word.start)
            c = text[i]
            if c == ")":
                i += 1
                break
            if c == "#":
                i = self.end_of_line(i)
                continue
            if c in ";&|<>(":
                raise self.fail(f"unexpected {c!r} inside an array assignment", i)
            element, i = self.read_word(i)
            elements.append(element)
        words.append(("array", word, elements))
        return i

    def open_block(self, keyword: str, offset: int) -> None:
        self.next_block += 1
        self.blocks.append((keyword, self.next_block, self.pos(offset)[0]))
        if keyword == "case":
            self.case_depth += 1

    def close_block(self, keyword: str) -> None:
        if not self.blocks:
            return
        kind, block_id, line = self.blocks.pop()
        if kind == "case":
            self.case_depth -= 1
        what = {"if": "an if block", "case": "a case block", "for": "a for loop", "while": "a while loop",
                "until": "an until loop", "{": "a { } group or function", "(": "a subshell", "function": "a function",
                "select": "a select loop"}.get(kind, "a block")
        for var in self.vars.values():
            if block_id in var.blocks and var.note == "":
                var.note = f"${var.name} is set inside {what} (line {line}), which may not run"

    def command(self, words: list) -> None:
        if not words:
            return
        first = words[0]
        head = first.literal_text() if isinstance(first, Word) else None
        if head in _OPEN_BLOCK:
            if head == "function":
                self.open_block("function", first.start)
                return
            self.open_block(head, first.start)
            if head in ("for", "select") and len(words) > 1 and isinstance(words[1], Word):
                name = words[1].literal_text()
                if name:
                    self.set_unknown(name, words[1].start, f"${name} is a loop variable")
            return
        if head in _CLOSE_BLOCK:
            self.close_block(head)
            rest = words[1:]
            if rest:
                self.command(rest)
            return
        if head in ("else", "elif"):
            kind = self.blocks[-1][0] if self.blocks else "if"
            self.close_block(kind)
            self.open_block("if", first.start)
            rest = words[1:]
            if rest:
                self.command(rest)
            return
        if head in _KEYWORDS:
            rest = words[1:]
            if rest:
                self.command(rest)
            return
        # NAME=value prefixes
        prefixes: list = []
        k = 0
        while k < len(words):
            w = words[k]
            if isinstance(w, tuple):  # ARR=( ... )
                prefixes.append(w)
                k += 1
                continue
            m = self.assignment(w)
            if m is None:
                break
            prefixes.append(w)
            k += 1
        rest = words[k:]
        if not rest:
            for p in prefixes:
                self.assign(p)
            return
        rest = self.launcher_from_variable(rest)
        if self.launch is not None:
            if self.is_launch(rest):
                self.extra_launches.append(self.pos(rest[0].start)[0])
            return
        name = rest[0].literal_text() if isinstance(rest[0], Word) else None
        if name in ("export", "declare", "typeset", "local", "readonly"):
            self.declare(name, rest[1:])
            return
        if name == "unset":
            for w in rest[1:]:
                t = w.literal_text() if isinstance(w, Word) else None
                if t and not t.startswith("-"):
                    self.vars.pop(t, None)
            return
        if name in ("source", "."):
            self.unknowns.append(f"line {self.pos(rest[0].start)[0]}: {name} runs another file; what it sets is not known statically")
            return
        if name == "read":
            for w in rest[1:]:
                t = w.literal_text() if isinstance(w, Word) else None
                if t and NAME.fullmatch(t):
                    self.set_unknown(t, w.start, f"${t} is read at run time")
            return
        if self.is_launch(rest):
            self.launch = {"prefixes": prefixes, "words": rest, "blocks": self.block_ids()}
            self.note_broken_continuation(rest[-1].end)

    def note_broken_continuation(self, end: int) -> None:
        """A launch whose last word ends in a backslash and a blank (``--bf16 \\ `` + newline): the blank is
        escaped, so the line does not continue, and the flags on the next lines never reach the launch."""
        text = self.text
        line_end = self.end_of_line(end)
        if not (end >= 2 and text[end - 2] == "\\" and text[end - 1] in " \t" and not text[end:line_end].strip()):
            return
        following = text[line_end + 1:self.end_of_line(line_end + 1)].lstrip()
        if following.startswith("-"):
            line = self.pos(end - 2)[0]
            self.unknowns.append(
                f"line {line}: the backslash is followed by a blank, so the line does not continue: the launch ends "
                f"here and the flags from line {line + 1} on are not passed (bash then runs them as a command)")

    def launcher_from_variable(self, words: list) -> list:
        """``$LAUNCHER pretrain_gpt.py ...`` with LAUNCHER="torchrun --nproc_per_node 8" set in the script:
        the command's first word expanded into the words it stands for (each keeps the offsets of its
        characters in the assignment; none is literal text of the launch line)."""
        first = words[0] if words else None
        if not isinstance(first, Word) or first.literal_text() is not None or self.is_launch(words):
            return words
        noted = len(self.unknowns)
        fields = self.expand(first, "", split=True)
        if not fields or any(f.unknown for f in fields):
            del self.unknowns[noted:]  # not a launch we can see: what it could not expand is no launch's unknown
            return words
        made = []
        for f in fields:
            w = Word([("lit", f.text, list(f.offsets))], first.start, first.end)
            w.origin = f.origin
            made.append(w)
        return made + words[1:] if self.is_launch(made + words[1:]) else words

    def block_ids(self) -> tuple:
        return tuple(b[1] for b in self.blocks)

    def assignment(self, w) -> Optional[tuple]:
        if not isinstance(w, Word) or not w.parts or w.parts[0][0] != "lit" or len(w.parts[0]) > 3:
            return None
        m = _ASSIGN.match(w.parts[0][1])
        if not m or m.group(2):
            return None
        return m.group(1), m.group(3), m.end()

    def assign(self, item, exported: bool = False, export_word=None) -> Optional[Var]:
        line = self.pos(item[1].start if isinstance(item, tuple) else item.start)[0]
        if isinstance(item, tuple):  # ("array", word, elements)
            _, word, elements = item
            name, op = self.array_start(word)
            origin = variable_origin(name, line)
            fields: list = []
            for el in elements:
                fields.extend(self.expand(el, origin, split=True))
            old = self.vars.get(name)
            if op == "+=" and old is not None:
                fields = (old.fields if old.array else old.fields) + fields
            var = Var(name, fields, True, line, self.block_ids())
            var.span = self.span(word.start, self.end_of_array(word))
        else:
            name, op, cut = self.assignment(item)
            origin = variable_origin(name, line)
            first = item.parts[0]
            value_parts = ([("lit", first[1][cut:], first[2][cut:])] if len(first[1]) > cut else []) + item.parts[1:]
            value_word = Word(value_parts, item.start + cut, item.end)
            value = self.join(self.expand(value_word, origin, split=False, keep_empty=True), origin)
            old = self.vars.get(name)
            if op == "+=" and old is not None and old.fields:
                prev = old.fields[-1] if not old.array else old.fields[0]
                value = self.join([prev, value], origin)
            var = Var(name, [value], False, line, self.block_ids())
            var.span = self.span(item.start, item.end)
        if old is not None and old.exported:
            var.exported, var.export_line, var.export_col = True, old.export_line, old.export_col
        if exported:
            var.exported = True
            var.export_line, var.export_col = self.pos(export_word.start)
        self.vars[name] = var
        return var

    def end_of_array(self, word: Word) -> int:
        return self.matching(word.end, "(", ")")

    def declare(self, builtin: str, words: list) -> None:
        exporting = builtin == "export"
        for w in words:
            if isinstance(w, tuple):
                self.assign(w, exported=exporting, export_word=w[1])
                continue
            t = w.literal_text()
            if t is not None and t.startswith("-"):
                if "x" in t and builtin != "export":
                    exporting = True
                if builtin == "export" and "n" in t:
                    exporting = False
                continue
            if self.assignment(w):
                self.assign(w, exported=exporting, export_word=w)
            elif t and NAME.fullmatch(t) and exporting:
                var = self.vars.get(t)
                if var is None:
                    continue  # export NAME of a variable from the caller's environment: it stays what it was
                var.exported = True
                var.export_line, var.export_col = self.pos(w.start)

    # --- expansion ---------------------------------------------------------------------------------


def read_launch_script(path: str, text: str) -> LaunchText:
    reader = Reader(path, text)
    reader.run()
    if reader.launch is None:
        raise InputError(InputProblem(
            path, "no Megatron-LM launch line found (torchrun, python -m torch.distributed.run, or python pretrain_*.py)"))
    return _launch(reader)


def has_launch_line(text: str) -> bool:
    """Whether a script has a launch line (folder discovery: other shell scripts are skipped quietly)."""
    if not re.search(r"torchrun|torch\.distributed\.(?:run|launch)|pretrain_\w*\.py", text):
        return False
    try:
        reader = Reader("<sniff>", text)
        reader.run()
    except InputError:
        return True  # the check reports what is wrong with it
    return reader.launch is not None


def _launch(reader: Reader) -> LaunchText:
    launch = reader.launch
    words = launch["words"]
    kind, index = reader.find_program(words)
    first_offset = words[0].start
    launch_line = reader.pos(first_offset)[0]
    found = LaunchText(file=reader.path, text=reader.text, kind="shell", script=None, launch_line=launch_line)
    # the launch environment: exported variables, then the command's own prefixes
    for var in reader.vars.values():
        value: object = UNKNOWN if var.note or var.array or var.fields[0].unknown else var.fields[0].text
        line = var.export_line if var.exported else var.line
        how = "export" if var.exported else "assignment"
        if var.array:
            continue
        found.env[var.name] = EnvVar(var.name, value, line, var.export_col if var.exported else 1, how, span=var.span)
    for p in launch["prefixes"]:
        if isinstance(p, tuple):
            continue
        name, _op, cut = reader.assignment(p)
        origin = variable_origin(name, reader.pos(p.start)[0])
        first = p.parts[0]
        parts = ([("lit", first[1][cut:], first[2][cut:])] if len(first[1]) > cut else []) + p.parts[1:]
        field_ = reader.join(reader.expand(Word(parts, p.start + cut, p.end), origin, split=False, keep_empty=True), origin)
        line, col = reader.pos(p.start)
        found.env[name] = EnvVar(name, UNKNOWN if field_.unknown else field_.text, line, col, "prefix", span=reader.span(p.start, p.end))
    if reader.extra_launches:
        found.unknowns.append(
            "line(s) " + ", ".join(map(str, reader.extra_launches)) + f": more launch lines; only the first (line {launch_line}) is checked")
    # expand the launch words
    fields: list = []
    word_of: list = []
    for w in words:
        for f in reader.expand(w, LAUNCH_LINE, split=True):
            fields.append(f)
            word_of.append(w)
    # locate the program and the script among the expanded fields
    prog_word = words[index]
    start = next(k for k, w in enumerate(word_of) if w is prog_word)
    script_pos = None
    if kind == "python":
        script_pos = start  # find_program gave the script word itself
        found.script = reader.script_name(prog_word, True)
        srun_world_size(reader, found, words, index)
    else:
        script_pos = torchrun_options(reader, found, fields, start + 1)
        if script_pos is not None and script_pos < len(fields):
            found.script = reader.script_name(word_of[script_pos], False) if fields[script_pos].text is not None or True else None
            if found.script is None:
                f = fields[script_pos]
                if f.text is not None and f.text.rsplit("/", 1)[-1].endswith(".py"):
                    found.script = f.text.rsplit("/", 1)[-1]
                else:
                    found.unknowns.append(f"line {reader.pos(word_of[script_pos].start)[0]}: the training script "
                                          f"{f.text or f.what or 'word'} is not known statically")
    found.unknowns[:0] = reader.unknowns
    if script_pos is None:
        return found
    end_word = word_of[script_pos]
    found.insert_at = reader.pos(end_word.end)
    for f, w in zip(fields[script_pos + 1:], word_of[script_pos + 1:]):
        found.tokens.append(_token(reader, f, w))
    return found


def _token(reader: Reader, f: Field, written: Word) -> Token:
    # a whole written word is placed where it starts (its opening quote); a piece of one, at its first character
    first = f.word.start if (f.whole and f.word is not None) else next((o for o in f.offsets if o is not None), None)
    if first is None:
        first = written.start
    line, col = reader.pos(first) if first is not None else (None, None)
    if f.unknown:
        return Token(None, line, col, f.origin, multi=f.multi, what=f.what)
    literal = f.whole and f.word is not None
    span = reader.span(f.word.start, f.word.end) if literal else None
    return Token(f.text, line, col, f.origin, literal=literal and span is not None, span=span)


